"""What the loop hands a model server and what it gets back, and reading what a server sends.

The request and the events a reply streams as are defined with the server's contract in
``twinny_magics.contracts`` (light: the loop imports them from there) and re-exported here for the
adapters (``openai``, ``ollama``), which do the I/O. Here: reading a server's JSON and its native calls.
"""

from __future__ import annotations

import json
from typing import Any

from twinny_magics.contracts import ChatEvent, ChatRequest, Finish, TextChunk, ToolCallDelta, ToolCalls, Usage
from twinny_magics.conversation import ToolCall
from twinny_magics.servers.numbers import json_int

__all__ = [
    "ChatEvent",
    "ChatRequest",
    "Finish",
    "TextChunk",
    "ToolCallDelta",
    "ToolCalls",
    "Usage",
    "build_tool_calls",
    "read_arguments",
    "read_json",
]


#: One decoder made once (``json.loads`` with ``parse_int`` would make a new one on every call).
_DECODER = json.JSONDecoder(parse_int=json_int)


def read_json(text: str | bytes) -> Any:
    """``json.loads`` for what a server sends: JSON nested too deeply to read is a ``ValueError`` too.

    The parser refuses deep nesting (``[[[[…``) with ``RecursionError``, which no reader of a server's
    words expects; as a ``ValueError`` it becomes the same clear message as any other unreadable JSON.
    An integer of thousands of digits (which ``int()`` refuses) is read as an infinity instead of failing
    the whole document (``numbers.json_int``): every number read from it is checked anyway.
    """
    if isinstance(text, bytes | bytearray):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    try:
        return _DECODER.decode(text)
    except RecursionError:
        raise ValueError("it is nested too deeply to read") from None


def read_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Native call arguments as a dict, and None — or ``{}`` and why they could not be read."""
    stripped = text.strip()
    if not stripped:
        return {}, None  # a call of a tool without parameters
    try:
        value: Any = read_json(stripped)
    except json.JSONDecodeError as exc:
        return {}, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}): {text[:500]}"
    except ValueError as exc:
        return {}, f"the arguments are not valid JSON ({exc}): {text[:500]}"
    if isinstance(value, str):
        # Some servers encode the arguments twice; the inner text is what the model wrote.
        return (
            read_arguments(value)
            if value.strip()[:1] == "{"
            else ({}, f"the arguments are a string: {text[:500]}")
        )
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return {}, f"the arguments are not a JSON object: {text[:500]}"
    return value, None


def build_tool_calls(parts: list[tuple[str | None, str, str]]) -> ToolCalls:
    """The ``ToolCalls`` event from assembled ``(id, name, arguments text)`` parts, in order."""
    calls: list[ToolCall] = []
    texts: list[str] = []
    errors: list[str | None] = []
    for call_id, name, text in parts:
        arguments, error = read_arguments(text)
        if not name:
            error = error or "the call has no tool name"
        calls.append(ToolCall(name=name, arguments=arguments, id=call_id))
        texts.append(text)
        errors.append(error)
    return ToolCalls(calls, texts, errors)
