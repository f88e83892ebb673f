"""The model server as one run sees it: its seed, its refusals, and a start off the prompt cache."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from twinny_magics.errors import PromptTooLong

if TYPE_CHECKING:
    from twinny_magics.loop import ModelServer
    from twinny_magics.servers.base import ChatEvent, ChatRequest


def seeded(extra: Mapping[str, Any] | None, seed: int | None, kind: str) -> dict[str, Any] | None:
    """The request's extra fields with the run's seed (Ollama's native route reads it from ``options``)."""
    if seed is None:
        return dict(extra) if extra is not None else None
    out: dict[str, Any] = {"seed": seed, **(extra or {})}
    if kind == "ollama":
        options = dict(out.get("options") or {})
        options.setdefault("seed", out["seed"])
        out["options"] = options
    return out


class RunServer:
    """The model server as one run sees it: counts refusals, and starts the run off the prompt cache.

    A thin wrapper with the loop's ``ModelServer`` shape; the optional capabilities (tokenize, whole
    prompt counts, the embedded server, the API key's warning) are passed through as the loop asks.
    """

    def __init__(self, inner: ModelServer, *, cold_first: bool = True) -> None:
        self.inner = inner
        self.cold_first = cold_first
        self.requests = 0
        #: Requests the server refused as longer than its window.
        self.refused = 0

    @property
    def kind(self) -> str:
        """The server's kind."""
        return self.inner.kind

    @property
    def model(self) -> str | None:
        """The model."""
        return self.inner.model

    @property
    def embedded(self) -> object | None:
        """The embedded server behind it, if any (the loop's grammar and mode defaults ask)."""
        return getattr(self.inner, "embedded", None)

    @property
    def info(self) -> object | None:
        """The server's info (the loop masks its API key in what it keeps)."""
        return getattr(self.inner, "info", None)

    @property
    def takes_tools(self) -> bool:
        """Whether tools may be offered natively."""
        return bool(getattr(self.inner, "takes_tools", True))

    @property
    def key_warning(self) -> str | None:
        """The inner server's warning about a key over plain http, if any."""
        warning = getattr(self.inner, "key_warning", None)
        return warning if isinstance(warning, str) else None

    async def context_window(self) -> int:
        """The server's window."""
        return await self.inner.context_window()

    async def tokenize(self, text: str) -> int | None:
        """Exact tokens where the server counts them, else None."""
        tokenize = getattr(self.inner, "tokenize", None)
        if tokenize is None:
            return None
        count: int | None = await tokenize(text)
        return count

    async def count_prompt_tokens(self, request: ChatRequest) -> int | None:
        """A whole prompt's tokens where the server counts them, else None."""
        count_prompt = getattr(self.inner, "count_prompt_tokens", None)
        if count_prompt is None:
            return None
        count: int | None = await count_prompt(request)
        return count

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        """The inner server's reply; the run's first request on llama.cpp skips the prompt cache."""
        self.requests += 1
        if self.cold_first and self.requests == 1 and self.inner.kind == "llamacpp":
            request = replace(request, extra={**request.extra, "cache_prompt": False})
        events = self.inner.stream(request)
        try:
            async for event in events:
                yield event
        except PromptTooLong:
            self.refused += 1
            raise
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
