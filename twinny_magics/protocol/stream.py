"""How much of a streaming reply may be shown, found incrementally.

Pure: no I/O. A display shows the reply as it streams but must never show part of a call, so it shows
everything before the first call marker (the held ones of the table in ``markers``, or the start of a
JSON call) and holds back up to ``HOLD`` trailing characters that could be the start of one. Whitespace
inside a marker is not counted (up to ``2 * HOLD`` characters in all): a call list indented the way
Hammer's prompt shows it puts its first key 13 characters in.
``displayable_length`` answers for a whole text; ``StreamDetector`` answers chunk by chunk with the same
scanner, keeping only the held-back tail between chunks, so a reply streamed in tiny chunks costs what
one scan of it costs rather than one scan per chunk.

The scanner skips the inside of ``<think>`` blocks (calls there are not read) and of fenced code in
other languages (a brace in a Python example is not a call), and decides from a bounded window at each
``` ` < [ { ```, so its answer for a prefix never depends on how the prefix arrived.
"""

from __future__ import annotations

import re
from typing import Any

from twinny_magics.protocol.markers import fence_languages, held_prefixes
from twinny_magics.protocol.parse import ParsedReply, parse_reply
from twinny_magics.protocol.results import held_result_prefixes

HOLD = 12

_NO, _MAYBE, _MATCH, _THINK_OPEN, _THINK_CLOSE, _CODE_OPEN, _CODE_CLOSE = range(7)
_TEXT, _THINK, _CODE = range(3)
# The window a decision reads: HOLD characters that are not whitespace, and at most twice HOLD in all.
_WINDOW = re.compile(rf"(?:\s*\S){{{HOLD}}}")
_SPACE = re.compile(r"\s")
# The markers held back (fences apart: those are decided at a line start, below), and the openers of a
# tool result the model imitates (never shown: see ``results``). Markers longer than HOLD count once
# their first HOLD characters are there: they are distinctive enough.
_LITERALS = (*held_prefixes(HOLD), *held_result_prefixes(HOLD))
_LITERALS_AT = {first: tuple(lit for lit in _LITERALS if lit[0] == first) for first in "<["}


def _starts(first: str, also: str) -> str:
    """``first`` followed by a character some marker (or ``also``) has next, or by the end of the text."""
    seconds = also + "".join(sorted({re.escape(lit[1]) for lit in _LITERALS_AT[first]}))
    return rf"{re.escape(first)}(?:[{seconds}]|\Z)"


# Only characters that can start a marker stop the regex (checked in C); the next character already rules
# out most brackets in code and prose, and one at the very end of the text must wait for more. ``<t`` may
# be ``<think>``; ``[`` and ``{`` followed by space, ``{`` or ``"`` may start a JSON call.
_TRIGGERS = {
    _TEXT: re.compile("|".join(("`", _starts("<", "t"), _starts("[", r"\s{"), r'\{(?:[\s"]|\Z)'))),
    _THINK: re.compile(r"<(?:/|\Z)"),
    _CODE: re.compile("`"),
}
# xLAM's first format opens with "thought" or "tool_calls"; the others are a call's own first key.
_JSON_KEYS = ('"name"', '"function"', '"tool_name"', '"tool_calls"', '"thought"')
# With the window full, this much of a key is enough to call it (a key longer than the window, or one
# after indentation); less than this could begin any key.
_KEY_PREFIX = 3
# The fence languages held back, as the start of an info string (``tool`` covers ``tool_call``…).
_FENCE_CALL_LANGS = fence_languages(held=True)


def _literal(window: str, literal: str, need_more: bool) -> int:
    if window.startswith(literal):
        return _MATCH
    if need_more and literal.startswith(window):
        return _MAYBE
    return _NO


def _window(buf: str, k: int) -> tuple[str, bool]:
    """The text a decision at ``k`` reads, and whether it is all there (False: the text ran out first)."""
    plain = buf[k : k + HOLD]
    if len(plain) == HOLD and _SPACE.search(plain) is None:
        return plain, True  # the common case, without the regex that skips whitespace
    stop = min(len(buf), k + 2 * HOLD)
    found = _WINDOW.match(buf, k, stop)
    if found is not None:
        return found.group(), True
    return buf[k:stop], stop == k + 2 * HOLD


def _json_start(window: str, need_more: bool, full: bool) -> int:
    """``{"name"`` (also after ``[`` and with whitespace between) starts a JSON call."""
    j = 0
    if window.startswith("["):
        j = len(window) - len(window[1:].lstrip())
    if j >= len(window):
        return _MAYBE if need_more else _NO
    if window[j] != "{":
        return _NO
    rest = window[j + 1 :].lstrip()
    maybe = False
    for key in _JSON_KEYS:
        if rest.startswith(key):
            return _MATCH
        maybe = maybe or key.startswith(rest)
    if maybe and need_more:
        return _MAYBE
    # ``full``: the window, not the end of the reply, cut the key short.
    return _MATCH if maybe and full and len(rest) >= _KEY_PREFIX else _NO


def _fence(window: str, need_more: bool, full: bool) -> tuple[int, int]:
    """A fence at a line start: a call when ``tool``/``json`` or a bare fence around a call, else code."""
    if not window.startswith("```"):
        return (_MAYBE, 0) if need_more and "```".startswith(window) else (_NO, 1)
    ticks = len(window) - len(window.lstrip("`"))
    info = window[ticks:]
    if info.startswith(_FENCE_CALL_LANGS):
        return _MATCH, 0
    if need_more and any(lang.startswith(info) for lang in _FENCE_CALL_LANGS):
        return _MAYBE, 0
    line = info.lstrip(" \t")
    if line.startswith("\n") or line.startswith("\r\n"):
        body = line.lstrip()
        if not body:
            return (_MAYBE, 0) if need_more else (_CODE_OPEN, ticks)
        states = [_json_start(body, need_more, full), *(_literal(body, lit, need_more) for lit in _LITERALS)]
        if _MATCH in states:
            return _MATCH, 0
        if _MAYBE in states:
            return _MAYBE, 0
        return _CODE_OPEN, ticks
    if not line and need_more:
        return _MAYBE, 0
    return _CODE_OPEN, ticks


def _classify(window: str, mode: int, line_start: bool, need_more: bool, full: bool) -> tuple[int, int]:
    """What the text at a trigger character is, and how many characters that decision consumes.

    ``need_more``: the window is not all there yet and the reply goes on; ``full``: it is all there.
    """
    if mode == _THINK:
        state = _literal(window, "</think>", need_more)
        return (_THINK_CLOSE, 8) if state == _MATCH else (state, 1)
    if mode == _CODE:
        if not line_start:
            return _NO, 1
        state = _literal(window, "```", need_more)
        return (_CODE_CLOSE, 3) if state == _MATCH else (state, 1)
    first = window[0]
    if first == "`":
        if line_start:
            return _fence(window, need_more, full)
        # Mid-line, a bare fence is inline code, but ```tool or ```json opens a call the parser will read.
        states = [_literal(window, "```" + lang, need_more) for lang in _FENCE_CALL_LANGS]
        if _MATCH in states:
            return _MATCH, 0
        return (_MAYBE, 0) if _MAYBE in states else (_NO, 1)
    states = []
    if first == "<":
        think = _literal(window, "<think>", need_more)
        if think == _MATCH:
            return _THINK_OPEN, 7
        states.append(think)
    states += [_literal(window, lit, need_more) for lit in _LITERALS_AT.get(first, ())]
    if first in "[{":
        states.append(_json_start(window, need_more, full))
    if _MATCH in states:
        return _MATCH, 0
    return (_MAYBE, 0) if _MAYBE in states else (_NO, 1)


def _line_start_after(line_start: bool, passed: str) -> bool:
    """Whether the position after ``passed`` is at a line start (only blanks since the last newline)."""
    content = passed.rstrip(" \t")
    return line_start if not content else content.endswith("\n")


class _MarkerScan:
    """The scanner's state between chunks: only the held-back tail and where the scan stands."""

    def __init__(self) -> None:
        self.shown = 0
        self.started = False
        self.scanned = 0
        self._pending = ""
        self._mode = _TEXT
        self._line_start = True

    def push(self, chunk: str, *, final: bool) -> str:
        """Scan ``chunk`` after what came before; return the text that became displayable."""
        if self.started:
            return ""
        buf = self._pending + chunk
        self.scanned += len(buf)
        i, line_start, mode = 0, self._line_start, self._mode
        while True:
            found = _TRIGGERS[mode].search(buf, i)
            if found is None:
                line_start = _line_start_after(line_start, buf[i:])
                i = len(buf)
                break
            k = found.start()
            at_k = _line_start_after(line_start, buf[i:k])
            window, full = _window(buf, k)
            state, consumed = _classify(window, mode, at_k, not (final or full), full)
            if state == _MATCH:
                self.started = True
                self._pending = ""
                self.shown += k
                return buf[:k]
            if state == _MAYBE:
                i, line_start = k, at_k
                break
            if state == _THINK_OPEN:
                mode = _THINK
            elif state == _CODE_OPEN:
                mode = _CODE
            elif state in (_THINK_CLOSE, _CODE_CLOSE):
                mode = _TEXT
            line_start = _line_start_after(at_k, buf[k : k + consumed])
            i = k + consumed
        self._pending, self._line_start, self._mode = buf[i:], line_start, mode
        self.shown += i
        return buf[:i]


def displayable_length(text: str, *, final: bool = False) -> int:
    """How much of a streaming reply may be shown now: all before the first call marker, less a held tail.

    ``final`` says the reply has ended, so a tail that could have become a marker is shown after all.
    """
    scan = _MarkerScan()
    scan.push(text, final=final)
    return scan.shown


class StreamDetector:
    """Reads a reply as it streams: what may be shown so far, whether a call has started, and at the end
    the parsed reply. Feeding costs the size of the chunk plus the held-back tail, never a rescan."""

    def __init__(self, tools: list[dict[str, Any]] | None = None) -> None:
        self._tools = tools
        self._chunks: list[str] = []
        self._scan = _MarkerScan()
        self._parsed: ParsedReply | None = None

    def feed(self, chunk: str) -> str:
        """Take the next piece of the reply; return the text that has newly become displayable."""
        self._chunks.append(chunk)
        self._parsed = None
        return self._scan.push(chunk, final=False)

    def flush(self) -> str:
        """The reply has ended: return the held-back tail when it turned out not to start a call."""
        return self._scan.push("", final=True)

    def finish(self) -> ParsedReply:
        """The whole reply, parsed once: its content, calls and problems."""
        if self._parsed is None:
            self._parsed = parse_reply(self.text, self._tools)
        return self._parsed

    @property
    def call_started(self) -> bool:
        """Whether a call marker has been seen (nothing after it is shown)."""
        return self._scan.started

    @property
    def shown(self) -> int:
        """How many characters of the reply have been returned as displayable."""
        return self._scan.shown

    @property
    def scanned(self) -> int:
        """How many characters the marker scan has examined, held-back ones counted each time."""
        return self._scan.scanned

    @property
    def text(self) -> str:
        """The reply so far."""
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""
