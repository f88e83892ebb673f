"""Server-sent events, decoded incrementally: bytes in (in any chunking), events out. Pure.

Follows the WHATWG rules: lines end in CRLF, LF or CR (a CRLF split across two chunks is one line end);
``data:`` lines of one event are joined with ``\\n``; a blank line ends an event; ``:`` starts a comment;
one space after the colon is dropped; a leading BOM is skipped. Two choices of ours:

- llama.cpp reports an error that happens after the headers as a non-standard ``error: {…}`` line; it is
  decoded as an event of type ``error``.
- A line with any other field name (garbage, a stray JSON line, an HTML error page) is *skipped and
  counted* (``skipped``, ``first_skipped``), as the standard says to ignore unknown fields. Deciding
  whether a stream that was all garbage is malformed is the caller's job (it knows whether any event
  came); the JSON inside ``data`` is the caller's to read too. The decoder itself only raises
  ``MalformedStream`` for a line longer than ``max_line`` characters, so a server that never sends a
  newline cannot fill memory.

Invalid UTF-8 is replaced (U+FFFD) rather than refused: one bad byte should not lose a reply.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from twinny_magics.errors import MalformedStream

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event: its ``data`` (lines joined by ``\\n``), type and id."""

    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    """Incremental SSE decoder: ``feed(bytes)`` → events so far; ``close()`` → the rest."""

    def __init__(self, max_line: int = 8 * 1024 * 1024) -> None:
        self.max_line = max_line
        self.skipped = 0
        self.first_skipped: str | None = None
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._line_so_far = _Unfinished(max_line)
        self._after_cr = False
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode ``chunk`` and return the events it completed."""
        return self._feed_text(self._utf8.decode(chunk))

    def close(self) -> list[SSEEvent]:
        """End of the stream: the events still pending.

        An event not followed by a blank line is still dispatched: servers that close right after
        ``data: [DONE]`` without the final blank line are common, and losing their last event helps no one.
        """
        events = self._feed_text(self._utf8.decode(b"", final=True))
        if self._line_so_far:
            self._line(self._line_so_far.end(""), events)
        self._dispatch(events)
        return events

    def _feed_text(self, text: str) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if not text:
            return events
        if self._after_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF whose CR ended the previous chunk
        self._after_cr = False
        if not self._started:
            self._started = True
            text = text.removeprefix("\ufeff")
        # Only the new text is searched for line ends: what came before holds none.
        start = 0
        for match in _LINE_END.finditer(text):
            self._line(self._line_so_far.end(text[start : match.start()]), events)
            start = match.end()
            self._after_cr = match.group() == "\r" and start == len(text)
        self._line_so_far.add(text[start:])
        return events

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line.startswith(":"):
            return  # a comment (servers send these as keep-alives)
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry":
            pass
        elif name == "error":
            self._event = "error"
            self._data.append(value)
        else:
            self.skipped += 1
            if self.first_skipped is None:
                self.first_skipped = line[:200]

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._data:
            events.append(SSEEvent("\n".join(self._data), self._event or "message", self._last_id))
        self._data = []
        self._event = ""


class LineDecoder:
    """Incremental newline-delimited text (Ollama's NDJSON): bytes in, complete lines out."""

    def __init__(self, max_line: int = 8 * 1024 * 1024) -> None:
        self.max_line = max_line
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._line_so_far = _Unfinished(max_line)

    def feed(self, chunk: bytes) -> list[str]:
        """Decode ``chunk`` and return the lines it completed (without their line ends)."""
        *lines, rest = self._utf8.decode(chunk).split("\n")
        if lines:
            lines[0] = self._line_so_far.end(lines[0])
        self._line_so_far.add(rest)
        return [line.removesuffix("\r") for line in lines]

    def close(self) -> list[str]:
        """End of the stream: the last line if it had no newline."""
        rest = self._line_so_far.end(self._utf8.decode(b"", final=True))
        return [rest.removesuffix("\r")] if rest else []


class _Unfinished:
    """The start of a line whose end has not come yet, kept in pieces.

    Joined once, when the line ends: a long line sent a little at a time (a server that never sends a
    newline) then costs time in proportion to its length, not to its square. Past ``max_line`` characters
    it is refused, so such a server cannot fill memory either.
    """

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self._pieces: list[str] = []
        self._chars = 0

    def __bool__(self) -> bool:
        return self._chars > 0

    def add(self, text: str) -> None:
        """More of the line; a ``MalformedStream`` once it is too long."""
        if not text:
            return
        self._pieces.append(text)
        self._chars += len(text)
        if self._chars > self.max_line:
            shown = "".join(self._pieces)[:200]
            self._pieces, self._chars = [], 0
            raise MalformedStream(
                f"A line of the stream ran past {self.max_line:,} characters without ending: {shown!r}…"
            )

    def end(self, text: str) -> str:
        """The whole line, ``text`` being its last piece; the next line starts empty."""
        if not self._pieces:
            return text
        line = "".join([*self._pieces, text])
        self._pieces, self._chars = [], 0
        return line
