"""GBNF grammars that hold a llama.cpp reply to the text protocol: a plain answer, or one good call.

Pure: no I/O. llama.cpp takes a grammar per request (the ``grammar`` field of the body) and samples only
tokens that keep the reply inside it. ``tool_call_grammar(tools)`` allows exactly two shapes of reply:

- an answer: prose with none of the characters any call dialect starts with (see ``ANSWER_EXCLUDED``),
  so ``protocol.parse_reply`` finds in it neither a call nor a broken one;
- a call, alone: a ``tool`` fence holding ``{"name": "<offered>", "arguments": {…}}``, the arguments
  those of that tool's schema (required keys in schema order, then any subset of the optional ones in
  order, no other keys), and nothing after the closing fence.

Why these choices:

- The call stands alone: prose before it is room for a small model to wander off before the fence, and
  text after it only invites a second call (text mode runs one call per reply).
- Whitespace is bounded everywhere (at most one space between JSON tokens, a few between words): with
  unbounded whitespace a small model can loop on spaces until the reply runs out.
- Strings and numbers are bounded too (``string_chars``, 200 by default, enough for a path, a pattern or a
  command), so a model that never closes a string still ends.
- Answers may hold inline code (```` `x` ````) but no fenced block, no ``{ [ ( <``: those are where JSON,
  Python-style, tag and fence calls begin. What is lost is code in answers, which a small model that
  needs the grammar rarely writes well anyway.
- ``\\uXXXX`` escapes are left out of strings: every character can be written as itself, and a lone
  surrogate written as an escape would reach the tools as text that cannot be encoded.

``require_call=True`` drops the answer; with no tools offered the grammar is the answer alone (use it on
the last request, which offers none). Rule names use letters, digits and ``-`` only, as every llama.cpp
version reads them.

The lazy grammar. ``tool_call_rest_grammar(tools, opener)`` is only the rest of a call after its opener
(``CALL_OPENERS``, the markers the table in ``markers`` lets a grammar take over at: the protocol's
```` ```tool ```` fence and the ``<tool_call>`` tag), the same call
object and then the opener's closer. llama.cpp's chat route ignores a request's own ``grammar_lazy``
and ``grammar_triggers``, so the loop makes the laziness itself: it streams a reply with no grammar, and
when the reply writes an opener it closes that stream and asks the server to continue the reply from
the opener (an assistant prefill) under this grammar. Answers keep fences and brackets; calls come out
whole.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from twinny_magics.protocol.markers import FENCE, Marker, grammar_openers
from twinny_magics.protocol.schema import schema_type, tool_specs

__all__ = [
    "ANSWER_EXCLUDED",
    "CALL_OPENERS",
    "DEFAULT_ARRAY_ITEMS",
    "DEFAULT_STRING_CHARS",
    "FENCE_OPENER",
    "call_opener",
    "may_open_call",
    "tool_call_grammar",
    "tool_call_rest_grammar",
]

DEFAULT_STRING_CHARS = 200
DEFAULT_ARRAY_ITEMS = 8
#: Characters an answer may not hold: each starts some call dialect the parser reads (a fence, JSON,
#: a Python-style call, a call tag or ``[TOOL_CALLS]``). A backtick is allowed only as inline code.
ANSWER_EXCLUDED = "`{[(<"
_WORD_CHARS = 100  # a word (no spaces) longer than this is a loop, not prose
_CODE_CHARS = 80  # inline code longer than this is a block that lost its fence
_DIGITS = 10
_FRACTION_DIGITS = 6


def literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def tool_call_grammar(
    tools: list[dict[str, Any]] | None,
    *,
    require_call: bool = False,
    string_chars: int = DEFAULT_STRING_CHARS,
    array_items: int = DEFAULT_ARRAY_ITEMS,
) -> str:
    """GBNF for a reply that is a plain answer or exactly one well-formed call of an offered tool."""
    specs = tool_specs(tools)
    if require_call and not specs:
        raise ValueError("require_call needs at least one offered tool")
    builder = _Builder(string_chars=string_chars, array_items=array_items)
    branches: list[str] = []
    if not require_call:
        branches.append(builder.answer())
    if specs:
        branches.append(builder.call(specs))
    builder.rules["root"] = " | ".join(branches)
    return builder.text()


def _around(marker: Marker) -> tuple[str, str]:
    """The GBNF between a marker's opener and the call object, and from the object to the closer: a
    fence's lines are required, a tag's line breaks optional."""
    if marker.closer is None:
        raise ValueError(f"a lazy grammar cannot finish {marker.opener}: it has no closer")
    if marker.dialect == FENCE:
        return '"\\n"', literal("\n" + marker.closer)
    return '"\\n"?', f'"\\n"? {literal(marker.closer)}'


#: The protocol's own call opener: what the text-mode prompt asks for, and where a lazy grammar wakes.
FENCE_OPENER = next(m.opener for m in grammar_openers() if m.dialect == FENCE)
#: The call openers a lazy grammar takes over at (the markers the table marks ``grammar``), with the GBNF
#: of what follows each opener before the call object and after it. ``<tool_call>`` is there because
#: models trained on Hermes-style templates (Qwen2.5 among them) drift to it. ```` ```json ```` is not: an
#: answer may hold a JSON block that is data, and a grammar that took over there would force a call into it.
CALL_OPENERS: dict[str, tuple[str, str]] = {m.opener: _around(m) for m in grammar_openers()}


def call_opener(marker: str) -> str | None:
    """The opener ``marker`` (a reply from its call marker on) starts with, where a lazy grammar can
    finish the call; None when it starts with none (yet: see ``may_open_call``)."""
    return next((opener for opener in CALL_OPENERS if marker.startswith(opener)), None)


def may_open_call(marker: str) -> bool:
    """Whether more text could still make ``marker`` start with an opener in ``CALL_OPENERS``."""
    return any(opener.startswith(marker) for opener in CALL_OPENERS)


def tool_call_rest_grammar(
    tools: list[dict[str, Any]] | None,
    opener: str = FENCE_OPENER,
    *,
    string_chars: int = DEFAULT_STRING_CHARS,
    array_items: int = DEFAULT_ARRAY_ITEMS,
) -> str:
    """GBNF for the rest of one well-formed call of an offered tool, after ``opener`` was written.

    The lazy grammar: the reply streams free until the model writes a call opener; then a request that
    continues the reply from it (an assistant prefill ending in the opener) is held to this grammar, so
    the call comes out whole and nothing follows it. The call object's rules are the call branch's.
    """
    specs = tool_specs(tools)
    if not specs:
        raise ValueError("a call needs at least one offered tool")
    opening, closing = CALL_OPENERS[opener]  # KeyError: not an opener this grammar can finish
    builder = _Builder(string_chars=string_chars, array_items=array_items)
    builder.rules["root"] = f"{opening} {builder.call_object(specs)} {closing}"
    return builder.text()


# --- GBNF text ------------------------------------------------------------------------------------------


def _class_char(char: str) -> str:
    # Inside [...] only letters, digits and a few plain marks are written as themselves: the rest as
    # escapes, so no character can close the class, negate it or make a range by accident.
    if char.isascii() and (char.isalnum() or char in " _.,:;!?'\"@#$%&*+=/|~"):
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02X}"
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


def char_class(chars: str, *, negate: bool = False, ranges: tuple[tuple[str, str], ...] = ()) -> str:
    """A GBNF character class of ``chars`` and ``ranges`` (or of everything else, with ``negate``)."""
    body = "".join(_class_char(c) for c in chars)
    body += "".join(f"{_class_char(a)}-{_class_char(b)}" for a, b in ranges)
    return "[" + ("^" if negate else "") + body + "]"


_CONTROL = (("\x00", "\x1f"),)


def _rule_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"


@dataclass
class _Builder:
    """Rules in the order they were made; names kept unique; shared rules made once."""

    string_chars: int
    array_items: int
    rules: dict[str, str] = field(default_factory=dict)

    def fresh(self, base: str) -> str:
        name = _rule_name(base)
        if name not in self.rules and name != "root":
            return name
        n = 2
        while f"{name}-{n}" in self.rules:
            n += 1
        return f"{name}-{n}"

    def shared(self, name: str, body: str) -> str:
        """A rule every user refers to by name (whitespace, strings, numbers)."""
        existing = self.rules.get(name)
        assert existing is None or existing == body, name
        self.rules[name] = body
        return name

    def add(self, base: str, body: str) -> str:
        name = self.fresh(base)
        self.rules[name] = body
        return name

    def text(self) -> str:
        ordered = {"root": self.rules.pop("root"), **self.rules}
        return "".join(f"{name} ::= {body}\n" for name, body in ordered.items())

    # --- the two branches ---------------------------------------------------------------------------

    def answer(self) -> str:
        excluded = ANSWER_EXCLUDED + " \t\n\x7f"
        text_char = self.shared("answer-char", char_class(excluded, negate=True, ranges=_CONTROL))
        code = self.shared(
            "answer-code",
            f'"`" {char_class(ANSWER_EXCLUDED + chr(10) + chr(0x7F), negate=True, ranges=_CONTROL)}'
            f'{{1,{_CODE_CHARS}}} "`"',
        )
        word = self.shared("answer-word", f"({text_char} | {code}){{1,{_WORD_CHARS}}}")
        # A gap is a few spaces, or a line break or two (a paragraph) with a little indentation.
        gap = self.shared("answer-gap", r'[ \t]{1,4} | [ \t]{0,2} "\n" "\n"? [ \t]{0,8}')
        return self.shared("answer", f"{word} ({gap} {word})* {gap}?")

    def call(self, specs: dict[str, Any]) -> str:
        opening, closing = CALL_OPENERS[FENCE_OPENER]
        return self.shared("call", f"{literal(FENCE_OPENER)} {opening} {self.call_object(specs)} {closing}")

    def call_object(self, specs: dict[str, Any]) -> str:
        """``{"name": "<offered>", "arguments": {…}}``, the arguments per that tool's schema (inline)."""
        sp = self.space()
        choices = []
        for spec in specs.values():
            arguments = self.object_rule(spec.name + "-args", spec.schemas, spec.required)
            head = literal(json.dumps(spec.name) + ",")
            choices.append(self.add("call-" + spec.name, f'{head} {sp} "\\"arguments\\":" {sp} {arguments}'))
        named = self.add("call-named", " | ".join(choices))
        return f'"{{" {sp} "\\"name\\":" {sp} {named} {sp} "}}"'

    # --- JSON values from a schema ------------------------------------------------------------------

    def space(self) -> str:
        return self.shared("sp", '" "?')

    def object_rule(self, base: str, properties: dict[str, Any], required: frozenset[str] | set[str]) -> str:
        """An object with these properties: required in order, then any in-order subset of the others."""
        sp = self.space()
        pairs: dict[str, str] = {}
        for key, schema in properties.items():
            value = self.value(f"{base}-{key}", schema if isinstance(schema, dict) else {})
            pairs[key] = self.add(f"{base}-{key}-kv", f"{literal(json.dumps(key) + ':')} {sp} {value}")
        must = [pairs[k] for k in properties if k in required]
        may = [pairs[k] for k in properties if k not in required]
        comma = f'"," {sp}'
        parts = [f" {comma} ".join(must)] if must else []
        if may:
            # Any subset in order: pick the first optional key present, then each later one may follow.
            subsets = " | ".join(
                " ".join([may[i], *(f"({comma} {later})?" for later in may[i + 1 :])])
                for i in range(len(may))
            )
            parts.append(f"({comma} ({subsets}))?" if must else f"({subsets})?")
        inside = " ".join(parts)
        return self.add(base, f'"{{" {sp} {inside} {sp} "}}"' if inside else f'"{{" {sp} "}}"')

    def value(self, base: str, schema: dict[str, Any]) -> str:
        """The rule for one value of ``schema`` (any JSON value when the schema says too little)."""
        if "const" in schema:
            return self.add(base, literal(json.dumps(schema["const"], ensure_ascii=False)))
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return self.add(base, " | ".join(literal(json.dumps(v, ensure_ascii=False)) for v in enum))
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                alternatives = [
                    self.value(f"{base}-{n}", option if isinstance(option, dict) else {})
                    for n, option in enumerate(options)
                ]
                return self.add(base, " | ".join(alternatives))
        written = schema.get("type")
        if isinstance(written, list):
            alternatives = [
                self.value(f"{base}-{k}", {**schema, "type": k}) for k in written if isinstance(k, str)
            ]
            return self.add(base, " | ".join(alternatives)) if alternatives else self.any_value()
        # The aliases models and schema generators use ("int", "float"…) mean the JSON types.
        kind = schema_type({"type": written}) if isinstance(written, str) else None
        if kind == "string":
            return self.string(schema)
        if kind == "integer":
            return self.integer(schema)
        if kind == "number":
            return self.number()
        if kind == "boolean":
            return self.shared("boolean", '"true" | "false"')
        if kind == "null":
            return self.shared("null", '"null"')
        if kind == "array":
            return self.array(base, schema)
        if kind == "object" and isinstance(schema.get("properties"), dict):
            required = schema.get("required")
            keys = {k for k in required if isinstance(k, str)} if isinstance(required, list) else set()
            return self.object_rule(base, schema["properties"], keys)
        if kind == "object":
            self.any_value()
            return "object"
        return self.any_value()

    def string(self, schema: dict[str, Any]) -> str:
        char = self.shared("char", r'[^"\\\x00-\x1F\x7F] | "\\" ["\\/bfnrt]')
        low = _whole(schema.get("minLength"), 1)
        high = min(_whole(schema.get("maxLength"), self.string_chars), self.string_chars)
        low = min(low, high)
        # An empty string is never a useful argument for a tool (a path, a pattern, a command); an
        # optional one is left out instead.
        name = "string" if (low, high) == (1, self.string_chars) else f"string-{low}-{high}"
        return self.shared(name, f'"\\"" {char}{{{low},{high}}} "\\""')

    def integer(self, schema: dict[str, Any]) -> str:
        minimum = schema.get("minimum")
        digits = f"[0-9]{{0,{_DIGITS - 1}}}"
        if isinstance(minimum, int | float) and minimum >= 1:
            return self.shared("positive", f"[1-9] {digits}")
        natural = self.shared("natural", f'"0" | [1-9] {digits}')
        if isinstance(minimum, int | float) and minimum >= 0:
            return natural
        return self.shared("integer", f'"-"? ({natural})')

    def number(self) -> str:
        integer = self.integer({})
        fraction = f'("." [0-9]{{1,{_FRACTION_DIGITS}}})?'
        return self.shared("number", f"{integer} {fraction} ([eE] [-+]? [0-9]{{1,3}})?")

    def array(self, base: str, schema: dict[str, Any]) -> str:
        sp = self.space()
        items = schema.get("items")
        item = self.value(base + "-item", items if isinstance(items, dict) else {})
        high = min(_whole(schema.get("maxItems"), self.array_items), self.array_items)
        low = min(_whole(schema.get("minItems"), 0), high)
        if high == 0:
            return self.add(base, f'"[" {sp} "]"')
        more = f'("," {sp} {item}){{{max(low - 1, 0)},{high - 1}}}'
        listed = f"{item} {more}" if low >= 1 else f"({item} {more})?"
        return self.add(base, f'"[" {sp} {listed} {sp} "]"')

    def any_value(self) -> str:
        """Any JSON value, strings bounded as ever; objects and arrays nest (rules may recurse)."""
        if "value" in self.rules:
            return "value"
        sp = self.space()
        string = self.string({})
        number = self.number()
        boolean = self.shared("boolean", '"true" | "false"')
        null = self.shared("null", '"null"')
        self.rules["value"] = f"object | array | {string} | {number} | {boolean} | {null}"
        pair = f'{string} ":" {sp} value'
        self.shared("object", f'"{{" {sp} ({pair} ("," {sp} {pair})*)? {sp} "}}"')
        self.shared("array", f'"[" {sp} (value ("," {sp} value)*)? {sp} "]"')
        return "value"


def _whole(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default
