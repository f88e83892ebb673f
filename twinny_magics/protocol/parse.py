"""Reading the tool calls out of a finished reply, in every dialect small models drift to.

Pure: no I/O. One left-to-right pass finds the places where a call may start (a fence at a line start,
a call tag or token such as ``<start_function_call>``, ``<function=``, ``[TOOL_CALLS]``, a JSON object
or list, a Python-style call of an offered tool, ``<think>``), decides whether a call may stand there,
and hands it to the reader for its dialect (``dialects``). A reader returns the calls it read,
the problems it found and where it stopped; the pass goes on from there, so the whole reply is read
once. The decisions this module makes are listed in ``twinny_magics.protocol``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from twinny_magics.conversation import ToolCall
from twinny_magics.errors import CallFormatError, ModelFeedback, UnknownTool
from twinny_magics.protocol.dialects import HSPACE, DialectReader, Problem, Read
from twinny_magics.protocol.markers import fence_languages, function_pattern, tag_markers, tag_pattern
from twinny_magics.protocol.scan import skip_ws
from twinny_magics.protocol.schema import OfferedTool, tool_specs

_MASTER_PARTS = (
    r"(?P<fence>^[ \t]{0,3}`{3,})",
    r"(?P<think><think>)",
    r"(?P<unthink></think>)",
    rf"(?P<tag>{tag_pattern()})",
    rf"(?P<func>{function_pattern()})",
    r"(?P<json>\{(?=\s*\")|\[(?=\s*\{))",
    r"(?P<pylist>\[(?=[ \t]*[A-Za-z_][\w.\-]*[ \t]*\())",
)
_PLAIN_MASTER = re.compile("|".join(_MASTER_PARTS), re.MULTILINE)
_CLOSE_FENCE = re.compile(r"^[ \t]{0,3}`{3,}[ \t]*$", re.MULTILINE)
_SEPARATORS = re.compile(r"[\s,;]*")
_CALL_FENCE_LANGS = frozenset(fence_languages(strong=True))
_SPECIAL = frozenset(opener for opener, marker in tag_markers().items() if marker.special)
MAX_PROBLEMS = 5


@dataclass(frozen=True)
class ParsedReply:
    """A finished reply read for calls.

    ``content`` is the text outside the calls that were read (thinking is kept apart in ``thinking``);
    ``problems`` holds one message for the model per call-looking thing that could not be read or names a
    tool that was not offered; ``unknown_tools`` the names of those not-offered tools.
    """

    content: str
    calls: list[ToolCall]
    problems: list[str]
    thinking: str = ""
    unknown_tools: list[str] = field(default_factory=list)

    def feedback_error(self) -> ModelFeedback | None:
        """The problems as the error the loop hands back to the model, or None when there are none."""
        if not self.problems:
            return None
        feedback = "\n\n".join(self.problems)
        if len(self.unknown_tools) == len(self.problems):
            return UnknownTool(feedback)
        return CallFormatError(feedback)


def parse_reply(text: str, tools: list[dict[str, Any]] | None = None) -> ParsedReply:
    """Every call in a finished reply, the text around them, and a message for each unreadable call."""
    return _Reader(text, tool_specs(tools)).read()


def parse_tool_calls(text: str, tools: list[dict[str, Any]] | None = None) -> list[ToolCall]:
    """Every call in a finished reply, in order."""
    return parse_reply(text, tools).calls


def _master_pattern(specs: dict[str, OfferedTool]) -> re.Pattern[str]:
    if not specs:
        return _PLAIN_MASTER
    names = "|".join(re.escape(name) for name in sorted(specs, key=len, reverse=True))
    # An optional namespace ("functions.grep") as some fine-tunes write; the lookbehind keeps this linear.
    named = rf"(?P<name>(?<![\w.\-])(?:[A-Za-z_]\w*\.)?(?:{names})(?=[ \t]*[({{]))"
    return re.compile("|".join((*_MASTER_PARTS, named)), re.MULTILINE)


class _Reader(DialectReader):
    """One pass over a reply: where calls may start, which count there, and what is left as content."""

    def __init__(self, text: str, specs: dict[str, OfferedTool]) -> None:
        super().__init__(text, specs)
        self.calls: list[ToolCall] = []
        self.problems: dict[int, Problem] = {}
        # Spans of the reply that are calls or thinking, with the text that stands in their place.
        self.removed: list[tuple[int, int, str]] = []
        self.thinking: list[str] = []
        self.seen_think = False
        stripped = text.rstrip()
        # A bare call counts mid-line only when it ends the reply, which needs a closer there.
        self.ends_with_closer = bool(stripped) and stripped[-1] in ")]}"

    # --- the pass -----------------------------------------------------------------------------------

    def read(self) -> ParsedReply:
        pos = 0
        master = _master_pattern(self.specs)
        handlers = {
            "fence": self._fence,
            "think": self._think,
            "unthink": self._unthink,
            "tag": self._top_tag,
            "func": self._top_function,
            "json": self._top_json,
            "pylist": self._top_pylist,
            "name": self._top_named,
        }
        while pos < self.n:
            match = master.search(self.text, pos)
            if match is None:
                break
            kind = match.lastgroup or ""
            pos = max(handlers[kind](match), match.start() + 1)
        problems = list(self.problems.values())
        if len(problems) > MAX_PROBLEMS:
            # Every message goes back into a small window: a reply of garbage must not flood it.
            more = len(problems) - MAX_PROBLEMS + 1
            summary = f"{more} more tool calls could not be read. Write one call per message."
            problems = [*problems[: MAX_PROBLEMS - 1], Problem(self.n, summary)]
        return ParsedReply(
            content=self._content(),
            calls=self.calls,
            problems=[p.message for p in problems],
            thinking="\n\n".join(t for t in self.thinking if t),
            unknown_tools=[p.unknown for p in problems if p.unknown is not None],
        )

    def _record(self, start: int, read: Read) -> None:
        self.calls.extend(read.calls)
        for problem in read.problems:
            self.problems.setdefault(problem.pos, problem)
        if read.calls or read.said:
            self.removed.append((start, read.end, "\n\n".join(read.said)))

    def _unthink(self, match: re.Match[str]) -> int:
        # A closer with no opener: the template opened <think> in the prompt, so all before it was
        # reasoning, calls included. Only the first such closer counts; a closer inside a call's
        # arguments never gets here, since the call's reader consumed it.
        if self.seen_think:
            return match.end()
        self.seen_think = True
        self.calls.clear()
        self.problems.clear()
        self.thinking = [self.text[: match.start()].strip()]
        self.removed = [(0, match.end(), "")]
        return match.end()

    def _think(self, match: re.Match[str]) -> int:
        self.seen_think = True
        close = self.scan.find("</think>", match.end())
        end = self.n if close == -1 else close + 8
        self.thinking.append(self.text[match.end() : close if close != -1 else self.n].strip())
        self.removed.append((match.start(), end, ""))
        return end

    # --- top-level handlers: each decides whether what it found counts here ---------------------------

    def _fence(self, match: re.Match[str]) -> int:
        text, start = self.text, match.start()
        ticks = match.group("fence").strip()
        line_end = self.scan.find("\n", match.end())
        line_end = self.n if line_end == -1 else line_end
        info = text[match.end() : line_end].strip().lower()
        lang = info.split()[0] if info else ""
        body = min(line_end + 1, self.n)
        strong = lang in _CALL_FENCE_LANGS
        read = self._sequence(body, depth=1, strong=strong)
        if read is not None:
            after = skip_ws(text, read.end)
            whole = after >= self.n or text.startswith(ticks, after)
            if read.calls and (whole or strong):
                end = after + len(ticks) if text.startswith(ticks, after) else self._fence_end(read.end)
                self._record(start, Read(end, read.calls, read.problems, read.said))
                return end
            if read.problems and (strong or lang in ("", "json", "xml")):
                self._record(start, read)
                return self._fence_end(read.end)
        if strong:
            end = self._fence_end(body)
            why = f'the ```{lang} block must hold one JSON object with "name" and "arguments"'
            self._record(start, Read(end, problems=[self._format(start, why)]))
            return end
        # Any other fence is code: nothing inside it is a call.
        return self._fence_end(body)

    def _fence_end(self, pos: int) -> int:
        found = _CLOSE_FENCE.search(self.text, pos)
        return self.n if found is None else found.end()

    def _top_tag(self, match: re.Match[str]) -> int:
        opener = match.group()
        read = self._tag(match.start(), opener, depth=0)
        if read is None:
            return match.end()
        self._record(match.start(), read)
        if not read.calls and opener in _SPECIAL:
            # Special tokens are never meant for the reader, whether or not a call followed.
            self.removed.append((match.start(), match.end(), ""))
        return read.end

    def _top_function(self, match: re.Match[str]) -> int:
        read = self._function(match.start(), absorb_closer=True)
        if read is None:
            return match.end()
        self._record(match.start(), read)
        return read.end

    def _top_json(self, match: re.Match[str]) -> int:
        # Data that is not a call is skipped whole (the read ends after it), so no call is read out of data.
        read = self._json_value(match.start(), strong=False)
        if read is None:
            return match.start() + 1
        self._record(match.start(), read)
        return read.end

    def _top_pylist(self, match: re.Match[str]) -> int:
        start = match.start()
        if not (self._line_start(start) or self.ends_with_closer):
            return start + 1
        read = self._pylist(start)
        # A list counts when one of its elements really is a call and it stands where a call may.
        if read is None or not read.calls or not (self._line_start(start) or self._at_end(read.end)):
            return start + 1
        self._record(start, read)
        return read.end

    def _top_named(self, match: re.Match[str]) -> int:
        start = match.start()
        line_start = self._line_start(start)
        if not (line_start or self.ends_with_closer):
            return start + 1
        read = self._named(start, strong=False, mistral=False)
        if read is None:
            return start + 1
        own_line = line_start and self._rest_of_line_blank(read.end)
        if not (own_line or self._at_end(read.end)):
            return start + 1
        self._record(start, read)
        return read.end

    def _line_start(self, pos: int) -> bool:
        k = pos
        while k > 0 and self.text[k - 1] in " \t":
            k -= 1
        return k == 0 or self.text[k - 1] == "\n"

    def _rest_of_line_blank(self, pos: int) -> bool:
        k = HSPACE.match(self.text, pos)
        end = k.end() if k else pos
        return end >= self.n or self.text[end] in "\r\n"

    def _at_end(self, pos: int) -> bool:
        return skip_ws(self.text, pos) >= self.n

    # --- the text outside the calls -------------------------------------------------------------------------

    def _content(self) -> str:
        text = self.text
        pieces: list[str] = []
        last = 0
        for start, end, said in sorted(self.removed):
            if end <= last:
                continue
            pieces.append(text[last : max(start, last)])
            if said:
                # What the model said inside a call stands where the call was, set apart like a call.
                pieces.append(said)
            last = end
        pieces.append(text[last:])
        # Separators between calls ("; ", ",") belong to the calls, not the prose.
        for i in range(1, len(pieces) - 1):
            if _SEPARATORS.fullmatch(pieces[i]):
                pieces[i] = ""
        out = [pieces[0]]
        has_text = bool(pieces[0].strip())
        broke = False
        for raw in pieces[1:]:
            out[-1], piece, broke_here = _around_call(out[-1], raw)
            broke = broke or broke_here
            if not piece:
                continue
            if broke and has_text:
                out.append("\n\n")
            out.append(piece)
            has_text = has_text or bool(piece.strip())
            broke = False
        content = "".join(out)
        return content if content.strip() else ""


def _around_call(before: str, after: str) -> tuple[str, str, bool]:
    """The prose either side of a removed call: a line break that set the call apart goes with it."""
    broke = False
    tail = before.rstrip()
    if "\n" in before[len(tail) :]:
        before, broke = tail, True
    head = after.lstrip()
    if "\n" in after[: len(after) - len(head)]:
        after, broke = head, True
    return before, after, broke
