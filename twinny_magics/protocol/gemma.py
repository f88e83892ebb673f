"""FunctionGemma's call body: ``call:NAME{key:value,...}``, strings between ``<escape>`` tokens.

Pure: no I/O. Google's FunctionGemma (Gemma 3 270M tuned for calls) writes a call as::

    <start_function_call>call:get_weather{location:<escape>Tokyo<escape>,days:3}<end_function_call>

Keys are bare; a string is the text between two ``<escape>`` tokens, taken as written (commas, braces
and newlines included); numbers, ``true``/``false`` and ``null`` are bare; lists are ``[v,v]`` and
objects ``{k:v}``, nested. ``<end_function_call>`` is a stop word on some servers, so it may be missing;
the closing brace may not (a body the reply ends inside was cut off, and is not repaired).

Read leniently, as small models drift: a comma left out between two arguments (seen in vLLM's tests), a
quoted ``"key"`` or ``"string"``, and a bare word where a string belongs (``city:Paris``, which Ollama's
parser reads as the string) are all taken. ``<escape>42<escape>`` stays the string ``"42"``: the token
says it is text, and the schema, when there is one, converts it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from twinny_magics.protocol.markers import GEMMA, MARKERS
from twinny_magics.protocol.scan import TextScan

_CALL = next(m for m in MARKERS if m.dialect == GEMMA)
assert _CALL.closer is not None
GEMMA_OPEN, GEMMA_CLOSE = _CALL.opener, _CALL.closer
#: The template's cue for the tool's answer; a server that does not stop on it leaves it after the calls.
GEMMA_RESPONSE = "<start_function_response>"
ESCAPE = "<escape>"
_MAX_DEPTH = 32
_MAX_DIGITS = 100  # a longer "number" is kept as text: int() refuses thousands of digits, float() overflows
_WS = re.compile(r"\s*")
_KEY = re.compile(r"[A-Za-z_$][\w.\-$]*")
_BARE = re.compile(r"[^,{}\[\]<\n]*")
_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_WORDS: dict[str, Any] = {"true": True, "True": True, "false": False, "False": False}
_NULLS = frozenset({"null", "None"})
_DECODER = json.JSONDecoder(strict=False)


class GemmaSyntaxError(ValueError):
    """What is wrong with a FunctionGemma call body, and where reading stopped."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


def read_arguments(text: str, pos: int, scan: TextScan) -> tuple[dict[str, Any], int]:
    """The arguments object opening at ``text[pos] == "{"`` and the position after its ``}``.

    Raises ``GemmaSyntaxError`` for a body that cannot be read. Each character is read once (a string's
    closing ``<escape>`` is found with ``scan``), and the work is charged to ``scan``'s budget.
    """
    return _Body(text, scan).object(pos, 0)


class _Body:
    def __init__(self, text: str, scan: TextScan) -> None:
        self.text = text
        self.n = len(text)
        self.scan = scan

    def ws(self, pos: int) -> int:
        match = _WS.match(self.text, pos)
        return match.end() if match else pos

    def at_end(self, pos: int) -> GemmaSyntaxError:
        return GemmaSyntaxError("the call ends before its closing } (the reply was cut off)", pos)

    def object(self, pos: int, depth: int) -> tuple[dict[str, Any], int]:
        if depth > _MAX_DEPTH:
            raise GemmaSyntaxError("its arguments are nested too deeply", pos)
        text, result = self.text, dict[str, Any]()
        p = self.ws(pos + 1)
        if p < self.n and text[p] == "}":
            return result, p + 1
        while True:
            key, p = self.key(p)
            p = self.ws(p)
            if p >= self.n:
                raise self.at_end(p)
            if text[p] != ":":
                raise GemmaSyntaxError(f"the argument {key[:40]!r} needs a : before its value", p)
            result[key], p = self.value(self.ws(p + 1), depth)
            p = self.ws(p)
            if p >= self.n:
                raise self.at_end(p)
            if text[p] == "}":
                return result, p + 1
            if depth == 0 and text.startswith(GEMMA_CLOSE, p):
                return result, p  # the closing brace left out, the closer says where the call ends
            if text[p] == ",":
                p = self.ws(p + 1)
            elif not self.key_starts(p):
                raise GemmaSyntaxError("expected , or } after an argument", p)

    def key_starts(self, pos: int) -> bool:
        return self.text.startswith(ESCAPE, pos) or self.text[pos] == '"' or bool(_KEY.match(self.text, pos))

    def key(self, pos: int) -> tuple[str, int]:
        text = self.text
        if pos >= self.n:
            raise self.at_end(pos)
        if text.startswith(ESCAPE, pos) or text[pos] == '"':
            value, end = self.string(pos)
            return value.strip(), end
        match = _KEY.match(text, pos)
        if match is None:
            raise GemmaSyntaxError("expected an argument name", pos)
        return match.group(), match.end()

    def string(self, pos: int) -> tuple[str, int]:
        """``<escape>text<escape>`` (the text as written) or a JSON string."""
        text = self.text
        if text.startswith(ESCAPE, pos):
            close = self.scan.find(ESCAPE, pos + len(ESCAPE))
            if close == -1:
                raise GemmaSyntaxError("an <escape> string never closes (the reply was cut off)", pos)
            return text[pos + len(ESCAPE) : close], close + len(ESCAPE)
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as error:
            raise GemmaSyntaxError(f"a quoted string is not valid: {error.msg}", pos) from None
        self.scan.spend(end - pos)
        if not isinstance(value, str):
            raise GemmaSyntaxError("expected a string", pos)
        return value, end

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        text = self.text
        if pos >= self.n:
            raise self.at_end(pos)
        char = text[pos]
        if char == "{":
            return self.object(pos, depth + 1)
        if char == "[":
            return self.array(pos, depth + 1)
        if char == '"' or text.startswith(ESCAPE, pos):
            return self.string(pos)
        match = _BARE.match(text, pos)
        end = match.end() if match else pos
        self.scan.spend(end - pos)
        word = text[pos:end].strip()
        if not word:
            raise GemmaSyntaxError("a value is missing", pos)
        return _bare_value(word), end

    def array(self, pos: int, depth: int) -> tuple[list[Any], int]:
        if depth > _MAX_DEPTH:
            raise GemmaSyntaxError("its arguments are nested too deeply", pos)
        text, items = self.text, list[Any]()
        p = self.ws(pos + 1)
        if p < self.n and text[p] == "]":
            return items, p + 1
        while True:
            item, p = self.value(self.ws(p), depth)
            items.append(item)
            p = self.ws(p)
            if p >= self.n:
                raise self.at_end(p)
            if text[p] == "]":
                return items, p + 1
            if text[p] != ",":
                raise GemmaSyntaxError("expected , or ] in a list", p)
            p += 1


def _bare_value(word: str) -> Any:
    """A value written without ``<escape>``: a number, a boolean, null, or else a word taken as text."""
    if len(word) <= _MAX_DIGITS and _INTEGER.fullmatch(word):
        return int(word)
    if len(word) <= _MAX_DIGITS and _NUMBER.fullmatch(word):
        return float(word)
    if word in _WORDS:
        return _WORDS[word]
    return None if word in _NULLS else word
