"""Edits that finish: a fenced block written as the changed version of a file, read as the edit it proposes.

Asked for a change, a small model often prints the changed code (a function, or the whole updated file) in
a ```` ```python ```` fence instead of calling the edit tool, and prints it again when nudged. When a reply
to a request for a change makes no call and no edit was made yet, each fence is compared, line by line,
with the files the reply could mean (paths named in the reply, the question, the calls and results of this
reply, the head start): where most of the fence's lines are found in one file, in order and close
together, the lines that differ are the change, and it becomes one find/replace call of the edit tool —
the call the edit nudge asks for, run through the same tool, checks and approval as a call the model
writes (a made-up fence can propose only what the model could have called; it approves nothing).

The fence and the paths are model text: the files are read through the toolset's own path checks and deny
list (:class:`~.citations.ReadsCitedLines`; a path outside the workspace or a denied file is never read),
a fence over :data:`MAX_FENCE_CHARS` or a file over :data:`MAX_FILE_LINES` is not compared, and a fence
that would delete much more than it writes (an abbreviated copy: ``# ... rest unchanged``) proposes
nothing. Pure but for the reads.
"""

from __future__ import annotations

import ast
import asyncio
import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import Match, SequenceMatcher

from twinny_magics import protocol
from twinny_magics.contracts import ProposesEdits
from twinny_magics.conversation import Message, ToolCall
from twinny_magics.errors import WorkspaceError
from twinny_magics.notes import edit_first_prompt

from .citations import ReadsCitedLines

#: Fences compared in one reply, and the longest one compared.
MAX_FENCES = 4
MAX_FENCE_CHARS = 20_000
#: Files a reply's fences are compared with, and the longest file read for it.
MAX_CANDIDATES = 8
MAX_FILE_LINES = 3_000
#: Lines of a fence (not blank) that must be found unchanged in the file, and the share of them.
MIN_ANCHORS = 2
MIN_SHARE = 0.5
#: Lines (not blank) missing from a copy in one run: taken as left out, not as deleted.
LEFT_OUT = 4

_OPEN = re.compile(r"^[ \t]*```[ \t]*([\w+.-]*)[^\n`]*$", re.M)
#: A path as a reply or a result names one (cut out by a token first, so the scan stays linear).
_TOKEN = re.compile(r"(?<![\w./-])[\w-]{0,200}[./][\w./-]{0,300}(?![\w./-])")
_PATH = re.compile(r"(?:[\w.-]+/)*[\w.-]*\w\.[A-Za-z]\w{1,7}")
#: A line that stands for lines left out ("...", "# ... unchanged", "# rest of the file").
_ELISION = re.compile(
    r"^\s*(?:#|//)?\s*(?:\.\.\.|…)\s*$|^\s*(?:#|//).*(?:\.\.\.|…|unchanged|rest of|existing code|same as)",
    re.I,
)
#: A note on the change at a changed line's end (``  # changed from 128``, ``// updated``).
_CHANGE_NOTE = re.compile(
    r"[ \t]+(?:#|//)[ \t]*(?:changed|updated|added|modified|fixed|new|was|now|from)\b[^'\"\n]*$", re.I
)
#: A line as a read shows it, with its number (``13: def fold(``, ``14:     """``).
_NUMBERED = re.compile(r"^[ \t]*\d{1,6}: ?")
#: A replacement described in inline code: a verb of change, `old`, then with/to/by/into, `new`.
_DESCRIBED = re.compile(
    r"\b(?:replac|chang|updat|modif|edit)\w*\b[^`\n]{0,60}?`([^`\n]{1,300})`"
    r"[^`\n]{0,40}?\b(?:with|to|by|into)[ \t]+(?:the[ \t]+(?:line|text|value)[ \t]+)?`([^`\n]{0,300})`",
    re.I,
)
#: The edit tool's arguments described in prose: "the `find` argument is … `old`. The `replace` argument is
#: … `new`" (a 1.5B model nudged to edit said so, and called nothing).
_ARGUMENTS = re.compile(
    r"\bfind`?[^`\n]{0,80}?`([^`\n]{1,300})`[^`\n]{0,80}?`?\breplace`?[^`\n]{0,80}?`([^`\n]{0,300})`",
    re.I,
)
#: Fences in a language that is not a file's text (a shell session, a tool call of the protocol's).
_NOT_FILE_TEXT = frozenset({"tool", "bash", "sh", "shell", "console", "json-tool", "diff", "patch", "text"})


@dataclass(frozen=True)
class Proposal:
    """One find/replace the fence proposes for ``path`` (``anchors``: its lines found unchanged)."""

    path: str
    find: str
    replace: str
    anchors: int


def fences(text: str) -> list[str]:
    """The bodies of the reply's fenced blocks in a file's language, at most :data:`MAX_FENCES`; a fence
    longer than :data:`MAX_FENCE_CHARS` is skipped (never compared)."""
    out: list[str] = []
    pos = 0
    while len(out) < MAX_FENCES:
        match = _OPEN.search(text, pos)
        if match is None:
            break
        start = match.end() + 1
        end = text.find("```", start)
        if end < 0:
            break
        pos = end + 3
        body = text[start:end]
        if match.group(1).lower() in _NOT_FILE_TEXT or len(body) > MAX_FENCE_CHARS:
            continue
        out.append(_unnumbered(body))
    return out


def _unnumbered(body: str) -> str:
    """A fence copied from a read with its line numbers (``13: def fold(…``) without them: when most of
    its lines (not blank) carry one, each number and its separator goes."""
    lines = body.splitlines()
    written = [line for line in lines if line.strip()]
    numbered = [line for line in written if _NUMBERED.match(line)]
    if not written or len(numbered) < 0.6 * len(written):
        return body
    return "\n".join(_NUMBERED.sub("", line, count=1) for line in lines) + "\n"


def named_paths(texts: Sequence[str]) -> list[str]:
    """Paths named in ``texts``, in order, without repeats (model text: checked only when read)."""
    found: list[str] = []
    for text in texts:
        for token in _TOKEN.findall(text):
            path = token.strip("./") if token.startswith("./") else token.rstrip(".")
            if _PATH.fullmatch(path) and path not in found:
                found.append(path)
    return found


def propose(fence: str, lines: Sequence[str]) -> tuple[str, str, int] | None:
    """The find/replace that makes ``lines`` (a file) what ``fence`` shows, and its anchors; None when
    the fence is not a changed version of a part of the file (too few of its lines there, scattered,
    no change, several parts changed between left-out lines, or mostly deletion)."""
    segments = _segments(fence.splitlines())
    found = [p for p in (_one(segment, lines) for segment in segments) if p is not None]
    changed = [p for p in found if p[0] != p[1]]
    if len(changed) != 1:
        return None
    return changed[0]


def _segments(fence: list[str]) -> list[list[str]]:
    """The parts of a fence: split where lines are left out (``# ...``) and where a comment names a file
    again (``# app.py`` over each of two excerpts, far apart in the file)."""
    out: list[list[str]] = [[]]
    for line in fence:
        if _ELISION.search(line):
            out.append([])
        elif (
            out[-1]
            and any(x.strip() for x in out[-1])
            and line.lstrip().startswith(("#", "//"))
            and _names_a_file(line)
        ):
            out.append([line.rstrip()])
        else:
            out[-1].append(line.rstrip())
    return [s for s in out if any(line.strip() for line in s)]


def _one(new: list[str], lines: Sequence[str]) -> tuple[str, str, int] | None:
    old = [line.rstrip() for line in lines]
    # Lines are compared without their indentation (a model often shifts a copy by a space or a level);
    # the file keeps its own lines where they match, and changed lines are shifted back as the copy was.
    old_keys, new_keys = [line.strip() for line in old], [line.strip() for line in new]
    matcher = SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    anchors = sum(1 for b in blocks for key in new_keys[b.b : b.b + b.size] if key)
    written = sum(1 for key in new_keys if key)
    if anchors < MIN_ANCHORS or anchors < MIN_SHARE * written:
        return None
    first, last = blocks[0], blocks[-1]
    if last.a + last.size - first.a > 2 * len(new) + 10:  # scattered over the file: not one part of it
        return None
    # The part of the file the fence covers: from its first matched line to its last, widened by the
    # fence's own unmatched first and last lines where they are the file's lines changed (alike).
    a0, b0 = first.a, first.b
    while b0 > 0 and a0 > 0 and _alike(old_keys[a0 - 1], new_keys[b0 - 1]):
        a0, b0 = a0 - 1, b0 - 1
    if b0 > 0 and first.a == 0 and not any(_names_a_file(line) for line in new[:b0]):
        b0 = 0  # lines before the file's first: added at its top (not a comment naming the file)
    a1, b1 = last.a + last.size, last.b + last.size
    while b1 < len(new) and a1 < len(old) and _alike(old_keys[a1], new_keys[b1]):
        a1, b1 = a1 + 1, b1 + 1
    if b1 < len(new) and a1 == len(old):  # lines after the file's last: added at its end
        b1 = len(new)
    shift = _shift(old, new, blocks)
    merged: list[str] = []
    region = SequenceMatcher(None, old_keys[a0:a1], new_keys[b0:b1], autojunk=False)
    for tag, i1, i2, j1, j2 in region.get_opcodes():
        gone, come = old_keys[a0 + i1 : a0 + i2], new_keys[b0 + j1 : b0 + j2]
        dropped = sum(1 for key in gone if key) - sum(1 for key in come if key)
        if tag == "equal" or (not any(gone) and not any(come)) or (tag == "delete" and dropped >= LEFT_OUT):
            merged.extend(old[a0 + i1 : a0 + i2])  # the same, only blank lines differ, or lines left out
        elif dropped >= LEFT_OUT and all(_alike(g, c) for g, c in zip(gone, come, strict=False)):
            # The first lines changed, the rest left out of the copy.
            merged.extend(_indented(line, shift) for line in new[b0 + j1 : b0 + j2])
            merged.extend(old[a0 + i1 + len(come) : a0 + i2])
        elif dropped > max(LEFT_OUT, 2 * len(come)):  # a long part rewritten short: not clear what
            return None
        else:
            merged.extend(_indented(line, shift) for line in new[b0 + j1 : b0 + j2])
    find = old[a0:a1]
    if find == merged:
        return ("", "", anchors)
    # Only the changed lines, then a line of context each side while the find is blank or not unique.
    head = 0
    while head < min(len(find), len(merged)) and find[head] == merged[head]:
        head += 1
    tail = 0
    while tail < min(len(find), len(merged)) - head and find[-1 - tail] == merged[-1 - tail]:
        tail += 1
    core_old, core_new = find[head : len(find) - tail], merged[head : len(merged) - tail]
    if len(core_old) - len(core_new) > max(5, len(core_new)):  # mostly deletion: an abbreviated copy
        return None
    lo, hi = a0 + head, a1 - tail
    whole = "\n".join(old)
    while not ("\n".join(old[lo:hi]).strip() and whole.count("\n".join(old[lo:hi])) == 1):
        if lo > 0:
            lo -= 1
        elif hi < len(old):
            hi += 1
        else:
            return None
    before, after = old[lo : a0 + head], old[a1 - tail : hi]
    return "\n".join(old[lo:hi]), "\n".join([*before, *core_new, *after]), anchors


def _shift(old: list[str], new: list[str], blocks: Sequence[Match]) -> int:
    """How far the copy's lines are indented past the file's (the most common difference)."""
    shifts = Counter(
        _indent(new[b.b + k]) - _indent(old[b.a + k]) for b in blocks for k in range(b.size) if new[b.b + k]
    )
    return shifts.most_common(1)[0][0] if shifts else 0


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _indented(line: str, shift: int) -> str:
    """A changed line of the copy at the file's indentation, without a note on the change the model put
    after it (``  # Changed from 3.8``: said to the reader of the reply, not part of the file)."""
    line = _CHANGE_NOTE.sub("", line)
    if shift > 0 and line[:shift].strip() == "":
        return line[shift:]
    if shift < 0 and line.strip():
        return " " * -shift + line
    return line


def _names_a_file(line: str) -> bool:
    """A label the model put on the fence: a comment naming a file (``# toolz/utils.py``), or a line that
    starts with a file's path and ends with a colon (``app.py:``, ``toolz/parallel.py (fold):``)."""
    text = line.strip()
    named = any(_PATH.fullmatch(t) for t in _TOKEN.findall(text))
    if text.startswith(("#", "//")):
        return named
    first = _TOKEN.match(text)
    return named and text.endswith(":") and first is not None and _PATH.fullmatch(first.group(0)) is not None


def _alike(old: str, new: str) -> bool:
    """Whether ``new`` reads as ``old`` changed (not a line of its own): most of it the same."""
    if not old or not new:
        return False
    return SequenceMatcher(None, old, new).ratio() >= 0.6


async def proposal(text: str, context: Sequence[str], tools: object) -> Proposal | None:
    """The edit the reply proposes to one of the files named in it or in ``context`` (the question, this
    reply's calls and results), read through ``tools``: the first replacement it describes in inline code
    (see :func:`described`) whose old text is once in exactly one of them — what the model said it
    changes, where a fence beside it may also rewrite lines nobody asked about — else the change its
    fences show; None when there is none, or when two files fit equally well."""
    bodies = fences(text)
    pairs = [*described(text), *before_and_after(bodies)]
    if not (bodies or pairs) or not isinstance(tools, ReadsCitedLines):
        return None
    read: list[tuple[str, list[str]]] = []
    for path in named_paths([text, *context])[:MAX_CANDIDATES]:
        lines = await _read(tools, path)
        if lines is not None:
            read.append((path, lines))
    for old, new in pairs:
        where = [path for path, lines in read if "\n".join(lines).count(old) == 1]
        if len(where) == 1:
            return Proposal(where[0], old, new, 0)
    asked = [(path, lines) for path, lines in read if path in named_paths(context[:1])]
    if (
        pairs
        and len(asked) == 1
        and not any(old in "\n".join(lines) for _, lines in read for old, _ in pairs)
    ):
        # In no file as written, and the question names one file: the edit tool matches it loosely or
        # says where the closest lines are (``self.max_len_prompt = 45`` for ``max_len_prompt = 45``).
        return Proposal(asked[0][0], pairs[0][0], pairs[0][1], 0)
    # A script's replace names its file by what it opens: the edit tool matches its old text (loosely,
    # as for a call: the script's 'hinge = 1.5' finds hinge=1.5) or says where the closest lines are.
    for opened, old, new in scripted(text):
        where = [path for path, lines in read if (path == opened or "\n".join(lines).count(old) == 1)]
        if len(where) == 1:
            return Proposal(where[0], old, new, 0)
    best: Proposal | None = None
    tied = False
    for path, lines in read:
        for body in bodies:
            found = propose(body, lines)
            if found is None:
                continue
            find, replace, anchors = found
            if best is None or anchors > best.anchors:
                best, tied = Proposal(path, find, replace, anchors), False
            elif anchors == best.anchors and path != best.path:
                tied = True
    return None if tied else best


def scripted(text: str) -> list[tuple[str | None, str, str]]:
    """The replacements a reply's fenced Python script would make instead of calling the edit tool
    (``line.replace('hinge = 1.5', 'hinge = 3.0')`` between an ``open(path)`` and a write), in order:
    the path the script opens (its first ``open`` of a literal path, or None), old text (3 characters or
    more) and new, which must read as the old one changed. The script is read by ``ast``, never run."""
    out: list[tuple[str | None, str, str]] = []
    for body in fences(text):
        try:
            tree = ast.parse(body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        path: str | None = None
        found: list[tuple[str, str]] = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            strings = [_string(arg) for arg in node.args[:2]]
            if path is None and _named(node.func, "open") and strings and strings[0] is not None:
                path = strings[0]
            elif _named(node.func, "replace") and len(strings) == 2:
                old, new = strings
                if old is None or new is None or old == new or len(old.strip()) < 3:
                    continue
                if _alike(old.strip(), new.strip()):
                    found.append((old, new))
        out += [(path, old, new) for old, new in found]
    return list(dict.fromkeys(out))[:MAX_FENCES]


def _named(func: ast.expr, name: str) -> bool:
    """Whether a call's function is ``name`` or ``….name``."""
    return (isinstance(func, ast.Name) and func.id == name) or (
        isinstance(func, ast.Attribute) and func.attr == name
    )


def _string(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def described(text: str) -> list[tuple[str, str]]:
    """The replacements a reply describes in inline code instead of making them ("replace the line
    `a = 1` with `a = 2`", "change `>=3.8` to `>=3.9`", "the `find` argument is `a = 1`, the `replace`
    argument `a = 2`"), in order: old text (3 characters or more) and
    new, at most :data:`MAX_FENCES`. The new text must read as the old one changed (mostly the same): "change
    `python_requires` to `>=3.9`" names what changes, not the text to replace."""
    out: list[tuple[str, str]] = []
    matches = sorted([*_DESCRIBED.finditer(text), *_ARGUMENTS.finditer(text)], key=lambda m: m.start())
    for match in matches:
        old, new = match.group(1), match.group(2)
        if (
            len(old.strip()) >= 3
            and old != new
            and (old, new) not in out
            and _alike(old.strip(), new.strip())
        ):
            out.append((old, new))
        if len(out) == MAX_FENCES:
            break
    return out


#: Lines of a fence that may be the "before" or the "after" of a pair (a line or a few, not a file).
PAIR_LINES = 6


def before_and_after(bodies: Sequence[str]) -> list[tuple[str, str]]:
    """The replacements told as two fences in a row, the lines as they are and as they should be ("if the
    line is: ```max_len_prompt = 45``` change it to: ```max_len_prompt = 60```"): each pair of
    consecutive short fences (:data:`PAIR_LINES` lines at most) whose second reads as the first changed.
    Like a replacement told in inline code, it is made only where the first is once in one file."""
    out: list[tuple[str, str]] = []
    for first, second in itertools.pairwise(bodies):
        old, new = first.strip(), second.strip()
        lines = max(len(old.splitlines()), len(new.splitlines()))
        if old == new or len(old) < 3 or lines > PAIR_LINES or (old, new) in out:
            continue
        if _alike(old, new):
            out.append((old, new))
    return out


async def _read(tools: ReadsCitedLines, path: str) -> list[str] | None:
    """The file's lines (the toolset's checks: outside the workspace, denied, binary: None)."""
    if path.endswith(".ipynb"):
        return None
    try:
        numbered = await asyncio.to_thread(tools.cited_lines, path, 1, MAX_FILE_LINES + 1)
    except WorkspaceError:
        return None
    if len(numbered) > MAX_FILE_LINES:
        return None
    return [line for _, line in numbered]


def as_call(found: Proposal, template: ToolCall, call_id: str = "call_fenced_edit") -> ToolCall:
    """``found`` as a call of the edit tool, with the argument names ``template`` (the nudge's call)
    uses: path, find, replace, in that order."""
    names = list(template.arguments)
    values = [found.path, found.find, found.replace]
    return ToolCall(template.name, dict(zip(names, values, strict=False)), id=call_id)


def context_of(question: str, messages: Sequence[Message]) -> list[str]:
    """Where a reply's fence may have come from, most likely first: the question, the paths of the calls
    made (latest first), then the texts of the messages (results, the head start; latest first)."""
    calls = [c.arguments_json() for m in reversed(messages) for c in m.calls]
    texts = [m.text for m in reversed(messages) if m.role != "system"]
    return [question, *calls, *texts]


async def fenced_edit(
    text: str, question: str, messages: Sequence[Message], tools: object
) -> ToolCall | None:
    """The call of the edit tool the reply's fences propose (see the module), or None."""
    found = await proposal(text, context_of(question, messages), tools)
    if found is None:
        return None
    return as_call(found, _template())


def _template() -> ToolCall:
    """The edit nudge's own call: the tool and argument names a fence's edit is called with (the engine
    names no tool)."""
    return protocol.parse_reply(edit_first_prompt("text")).calls[0]


#: The id of a call made from the request itself (not from what the model wrote).
REQUESTED_EDIT_ID = "call_requested_edit"


async def requested_edit(question: str, tools: object) -> ToolCall | None:
    """The call of the edit tool for the edit the request itself pins down in a file it names (the
    nudge offered it; see ``tools/proposal.py``), for a reply that, nudged, still made no edit: run
    through the same tool and approval as any call. None when the toolset cannot say, or there is none."""
    if not isinstance(tools, ProposesEdits):
        return None
    found = await asyncio.to_thread(tools.proposed_edit, question)
    if not found:
        return None
    edit = Proposal(found["path"], found["find"], found["replace"], anchors=0)
    return as_call(edit, _template(), REQUESTED_EDIT_ID)


def fallback_notice(call: ToolCall) -> str:
    """What the reply's notices say of an edit the loop read from the reply, or from the request."""
    path = call.arguments.get("path", "?")
    if call.id == REQUESTED_EDIT_ID:
        return (
            f"The model described the change instead of calling {call.name}, twice: the edit the request "
            f"names in {path} was made as that call (the same review)."
        )
    return (
        "The model wrote the change (changed code in a fence, a script that replaces, or a replacement "
        f"in inline code) instead of calling {call.name}: read as that edit of {path}."
    )
