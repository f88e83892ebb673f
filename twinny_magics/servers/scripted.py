"""A scripted model server: replies queued in advance, requests recorded.

It ships with the package (not only the tests) because it is how a teacher replays a session without a
model, and how the loop is tested without mocks: it implements the loop's ``ModelServer`` protocol, as
the HTTP adapters do. ``ScriptedServer`` is also a top-level name (``twinny_magics.ScriptedServer``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from twinny_magics.conversation import ToolCall
from twinny_magics.errors import PromptTooLong, ServerError, ToolHistoryRefused, ToolsRefused
from twinny_magics.servers.base import ChatEvent, ChatRequest, Finish, TextChunk, Usage, build_tool_calls


@dataclass(frozen=True)
class Scripted:
    """One queued reply: its text (streamed in pieces) and, for native mode, its tool calls."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    #: Native calls as ``(id, name, arguments text)``, for arguments that are not valid JSON.
    raw_calls: tuple[tuple[str | None, str, str], ...] = ()
    finish: str = "stop"
    delay: float = 0.0


@dataclass
class ScriptedServer:
    """A model server that answers each request with the next queued reply.

    A queued :class:`ServerError` is raised instead of answering (to script refusals). The prompt is
    "counted" at ``chars_per_token`` characters a token over the request's message text, so the estimator
    has something to learn from; with ``window`` set, a longer prompt is refused as llama.cpp would.
    ``refuse_tools=True`` refuses any request that carries tools (as a server without tool support
    does); ``refuse_tool_history=True`` refuses tool messages in a request that offers no tools.
    """

    replies: list[Scripted | ServerError | str] = field(default_factory=list)
    window: int = 8192
    chars_per_token: float = 3.0
    kind: str = "scripted"
    model: str | None = "scripted"
    refuse_tools: bool = False
    refuse_tool_history: bool = False
    #: Whether it counts text exactly on request (as llama.cpp's /tokenize does).
    tokenizes: bool = True
    chunk_size: int = 7
    requests: list[ChatRequest] = field(default_factory=list)

    def queue(self, *replies: Scripted | ServerError | str) -> None:
        """Add replies to the end of the queue."""
        self.replies.extend(replies)

    def prompt_tokens(self, request: ChatRequest) -> int:
        """The scripted server's own count of a request's prompt."""
        chars = sum(len(str(m.get("content") or "")) + 16 for m in request.messages)
        for message in request.messages:
            for call in message.get("tool_calls") or ():
                chars += len(str(call))
        if request.tools:
            chars += len(str(request.tools))
        return math.ceil(chars / self.chars_per_token)

    async def context_window(self) -> int:
        """The scripted window."""
        return self.window

    async def tokenize(self, text: str) -> int | None:
        """Exact tokens as this server counts them (None when it does not tokenize)."""
        return math.ceil(len(text) / self.chars_per_token) if self.tokenizes else None

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        """Answer ``request`` with the next queued reply."""
        self.requests.append(request)
        if request.tools and self.refuse_tools:
            raise ToolsRefused("This server does not support tools.", status=400)
        if not request.tools and self.refuse_tool_history and request.has_tool_history:
            raise ToolHistoryRefused("Tool messages need tools in the request.", status=400)
        tokens = self.prompt_tokens(request)
        if tokens > self.window:
            raise PromptTooLong(
                f"request ({tokens} tokens) exceeds the available context size ({self.window} tokens)",
                prompt_tokens=tokens,
                window=self.window,
                status=400,
            )
        if not self.replies:
            raise ServerError("The scripted server has no reply left to give.")
        reply = self.replies.pop(0)
        if isinstance(reply, ServerError):
            raise reply
        if isinstance(reply, str):
            reply = Scripted(reply)
        for piece in _pieces(reply.text, self.chunk_size):
            if reply.delay:
                await asyncio.sleep(reply.delay)
            yield TextChunk(piece)
        if reply.calls or reply.raw_calls:
            parts = [(c.id, c.name, c.arguments_json()) for c in reply.calls]
            yield build_tool_calls(parts + list(reply.raw_calls))
        yield Usage(tokens, math.ceil(len(reply.text) / self.chars_per_token))
        yield Finish("tool_calls" if reply.calls else reply.finish)


def _pieces(text: str, size: int) -> Iterable[str]:
    return (text[i : i + size] for i in range(0, len(text), size))


@dataclass
class ReplayServer:
    """Scripted replies with real token counts: each request also goes to a real server.

    The real server reads the whole prompt (so its usage, its prompt cache and its too-long refusals are
    real) and generates one token, which is thrown away; the reply given to the loop is the next scripted
    one. This is how a long tool trajectory is replayed at a small window with the server's own counts.
    """

    server: Any
    replies: list[Scripted | str] = field(default_factory=list)
    requests: list[ChatRequest] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """The real server's kind."""
        return str(self.server.kind)

    @property
    def model(self) -> str | None:
        """The real server's model."""
        model: str | None = self.server.model
        return model

    async def context_window(self) -> int:
        """The real server's window."""
        window: int = await self.server.context_window()
        return window

    async def tokenize(self, text: str) -> int | None:
        """The real server's count of ``text``."""
        count: int | None = await self.server.tokenize(text)
        return count

    async def count_prompt_tokens(self, request: ChatRequest) -> int | None:
        """The real server's count of a whole request, where it can say."""
        count: int | None = await self.server.count_prompt_tokens(request)
        return count

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        """Send ``request`` to the real server for its count, then answer with the next scripted reply."""
        self.requests.append(request)
        usage: Usage | None = None
        async for event in self.server.stream(replace(request, max_tokens=1)):
            if isinstance(event, Usage):
                usage = event
        if not self.replies:
            raise ServerError("The replay has no reply left to give.")
        reply = self.replies.pop(0)
        if isinstance(reply, str):
            reply = Scripted(reply)
        if reply.text:
            yield TextChunk(reply.text)
        if reply.calls:
            yield build_tool_calls([(c.id, c.name, c.arguments_json()) for c in reply.calls])
        yield usage or Usage(None, None)
        yield Finish("tool_calls" if reply.calls else reply.finish)
