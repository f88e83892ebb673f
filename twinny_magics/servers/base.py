"""What the loop hands a model server and what it gets back: one request, a stream of events.

Pure data and one protocol; the adapters (``openai``, ``ollama``) do the I/O. A reply streams as::

    TextDelta* , ToolCallDelta* , [ToolCalls] , [Usage] , Finish

``Finish`` is always last and only sent when the server finished the reply; a stream that stops before
that raises ``StreamCut`` instead, so "no Finish" never has to be checked by the caller.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from twinny_magics.conversation import ToolCall
from twinny_magics.servers.numbers import json_int


@dataclass(frozen=True)
class ChatRequest:
    """One request: messages already rendered by ``conversation.render``, and what goes with them.

    ``tools`` are OpenAI-style definitions (None offers none). ``extra`` is merged into the request body
    as is (e.g. llama.cpp's ``grammar``, ``seed``). ``num_ctx`` asks Ollama for a window (it then goes
    through Ollama's own ``/api/chat``, the only route that honours it).
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    num_ctx: int | None = None

    @property
    def has_tool_history(self) -> bool:
        """Whether any message carries native tool calls or results (some servers refuse those)."""
        return any(m.get("role") == "tool" or m.get("tool_calls") for m in self.messages)


@dataclass(frozen=True)
class TextDelta:
    """A piece of the reply's text."""

    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of a native tool call as it streams: ``name`` on the first piece, then argument text."""

    index: int
    arguments: str = ""
    name: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class ToolCalls:
    """Every native tool call of the reply, sent once when they are complete.

    ``errors[i]`` is None when ``calls[i].arguments`` was read, else why not; an unreadable call keeps
    ``arguments={}`` and its text in ``arguments_text[i]``, so the loop can show the model what it wrote.
    """

    calls: list[ToolCall]
    arguments_text: list[str]
    errors: list[str | None]

    @property
    def readable(self) -> list[ToolCall]:
        """The calls whose arguments could be read."""
        return [c for c, e in zip(self.calls, self.errors, strict=True) if e is None]


@dataclass(frozen=True)
class Usage:
    """The server's own token counts for the request (``cached_tokens``: prompt prefix it reused)."""

    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None = None


@dataclass(frozen=True)
class Finish:
    """The reply is complete; ``reason`` is the server's (``stop``, ``length``, ``tool_calls``…)."""

    reason: str | None


ChatEvent = TextDelta | ToolCallDelta | ToolCalls | Usage | Finish


@runtime_checkable
class ChatServer(Protocol):
    """A model server the loop can stream a reply from."""

    def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        """The reply to ``request`` as events; raises a ``ServerError`` subclass when it cannot."""
        ...

    async def tokenize(self, text: str) -> int | None:
        """The exact token count of ``text`` where the server can say, else None."""
        ...

    async def count_prompt_tokens(self, request: ChatRequest) -> int | None:
        """The exact prompt tokens ``request`` will take (template included) where the server can say."""
        ...


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
