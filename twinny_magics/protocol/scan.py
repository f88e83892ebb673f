"""Linear scanning of model text: where a bracket closes, JSON and Python literals, a work budget.

Pure: no I/O. Model replies can be hostile or merely odd (a thousand objects opened and none closed), and
the parser runs on every reply, so nothing here may go quadratic. A scan from one bracket records where
every bracket it passes closes, so a later question about a bracket inside an already scanned stretch
costs nothing; and all scanning draws on one budget proportional to the text, so even text built to
defeat that cache costs a bounded multiple of its length. Scans jump between interesting characters
with simple one-character regexes (no alternation that can backtrack).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

UNCLOSED = -1  # the text ended before the bracket closed
BROKEN = -2  # a closer of the wrong kind, or the work budget ran out

_JSON_TOKENS = re.compile(r'[\[\]{}"]')
_PY_TOKENS = re.compile(r"[\[\](){}\"']")
_JSON_STRING_STOP = re.compile(r'["\\]')
_PY_STRING_STOP = {
    '"': re.compile(r'["\\\n]'),
    "'": re.compile(r"['\\\n]"),
    '"""': re.compile(r'\\|"""'),
    "'''": re.compile(r"\\|'''"),
}
_PAIRS = {"}": "{", "]": "[", ")": "("}
_WS = re.compile(r"\s*")
_DECODER = json.JSONDecoder(strict=False)  # strict=False: small models put raw newlines in strings
_PY_NAMES = {"true": True, "True": True, "false": False, "False": False, "null": None, "None": None}
_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, TypeError, OverflowError)


def skip_ws(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not whitespace."""
    match = _WS.match(text, pos)
    return match.end() if match else pos


class TextScan:
    """One text, the closing positions found so far, and the scanning work it may still spend."""

    def __init__(self, text: str, budget: int | None = None) -> None:
        self.text = text
        self.budget = 16 * len(text) + 65_536 if budget is None else budget
        self.spent = 0
        self._closes: dict[tuple[bool, int], int] = {}
        self._found: dict[str, tuple[int, int]] = {}

    def spend(self, chars: int) -> bool:
        """Charge ``chars`` of work; False once the budget is gone."""
        self.spent += chars
        return self.spent <= self.budget

    @property
    def exhausted(self) -> bool:
        """Whether the work budget is spent."""
        return self.spent > self.budget

    def find(self, needle: str, start: int) -> int:
        """``text.find(needle, start)``, remembered so repeated searches for one closer stay linear."""
        searched, found = self._found.get(needle, (-1, -1))
        if searched != -1 and searched <= start and (found == -1 or start <= found):
            return found
        found = self.text.find(needle, start)
        self.spend((found if found != -1 else len(self.text)) - start)
        self._found[needle] = (start, found)
        return found

    def close_of(self, start: int, *, python: bool = False) -> int:
        """Where the bracket at ``start`` closes (honouring strings), or UNCLOSED / BROKEN."""
        key = (python, start)
        if key not in self._closes:
            if self.exhausted:
                return BROKEN
            self._scan(start, python)
        return self._closes.get(key, BROKEN)

    def _scan(self, start: int, python: bool) -> None:
        text, closes = self.text, self._closes
        tokens = _PY_TOKENS if python else _JSON_TOKENS
        stack: list[int] = []
        pos, end = start, len(text)
        while True:
            match = tokens.search(text, pos)
            if match is None:
                break
            i = match.start()
            char = text[i]
            if char in "\"'":
                after = self._string_end(i, python)
                if after < 0:
                    break
                pos = after
                continue
            if char in "([{":
                stack.append(i)
            else:
                if not stack:
                    break
                opener = stack.pop()
                if text[opener] != _PAIRS[char]:
                    closes[(python, opener)] = BROKEN
                    for other in stack:
                        closes[(python, other)] = BROKEN
                    stack.clear()
                    end = i
                    break
                closes[(python, opener)] = i
                if not stack:
                    end = i + 1
                    break
            pos = i + 1
        for other in stack:
            closes.setdefault((python, other), UNCLOSED)
        self.spend(end - start)

    def _string_end(self, quote_at: int, python: bool) -> int:
        text = self.text
        quote = text[quote_at]
        if not python:
            stop, pos = _JSON_STRING_STOP, quote_at + 1
        elif text.startswith(quote * 3, quote_at):
            quote *= 3
            stop, pos = _PY_STRING_STOP[quote], quote_at + 3
        else:
            stop, pos = _PY_STRING_STOP[quote], quote_at + 1
        while True:
            match = stop.search(text, pos)
            if match is None:
                return -1
            i = match.start()
            if text[i] == "\\":
                pos = i + 2
            elif text[i] == "\n":
                return -1  # a one-line Python string cannot hold a newline
            else:
                return i + len(quote)


def decode_json(text: str) -> tuple[Any, str | None]:
    """The JSON value in ``text``, or None and what is wrong with it."""
    try:
        return _DECODER.decode(text), None
    except json.JSONDecodeError as error:
        return None, f"{error.msg} (line {error.lineno}, column {error.colno})"
    except _PARSE_ERRORS:
        return None, "it is nested too deeply or too large to read"


def decode_lenient(text: str) -> tuple[Any, str | None]:
    """JSON, or else a Python literal (single quotes, True, trailing commas), as small models write."""
    value, error = decode_json(text)
    if error is None:
        return value, None
    value, py_error = python_literal(text)
    return (value, None) if py_error is None else (None, error)


class NotLiteral(ValueError):
    """A Python expression that is not a plain literal value."""


def python_literal(text: str) -> tuple[Any, str | None]:
    """The Python literal in ``text`` as a JSON-like value, or None and what is wrong with it."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return literal(tree.body), None
    except NotLiteral as error:
        return None, str(error)
    except _PARSE_ERRORS:
        return None, "it is not a literal value"


def literal(node: ast.expr) -> Any:
    """A literal expression node as a JSON-like value (JSON's true/false/null are accepted too)."""
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, str | bool | int | float):
            return value
        raise NotLiteral(f"{type(value).__name__} values cannot be tool arguments")
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [literal(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        result: dict[str, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                raise NotLiteral("** cannot be used in tool arguments")
            key = literal(key_node)
            result[key if isinstance(key, str) else json.dumps(key)] = literal(value_node)
        return result
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float)
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    if isinstance(node, ast.Name) and node.id in _PY_NAMES:
        return _PY_NAMES[node.id]
    raise NotLiteral("an argument is an expression, not a plain value")


def call_arguments(span: str) -> tuple[list[Any], dict[str, Any]] | str:
    """The positional and keyword arguments of ``(…)`` written Python-style, or what is wrong."""
    try:
        tree = ast.parse("_" + span, mode="eval")
    except SyntaxError as error:
        return f"the call is not valid Python-style syntax ({error.msg})"
    except _PARSE_ERRORS:
        return "the call could not be read"
    body = tree.body
    if not (isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id == "_"):
        return "the call could not be read"
    try:
        positional = [literal(arg) for arg in body.args]
        keywords: dict[str, Any] = {}
        for keyword in body.keywords:
            if keyword.arg is None:
                return "** cannot be used in a tool call"
            keywords[keyword.arg] = literal(keyword.value)
    except NotLiteral as error:
        return str(error)
    except RecursionError:
        return "an argument is nested too deeply"
    return positional, keywords
