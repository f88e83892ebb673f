"""The model server as one run sees it: its seed, its refusals, a start off the prompt cache, and whether
it failed (a server that failed is not a run that failed)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx

from twinny_magics.contracts import (
    Addressed,
    Closes,
    CountsPrompts,
    MaybeEmbedded,
    TakesTools,
    Tokenizes,
    WarnsOfKey,
)
from twinny_magics.errors import PromptTooLong, ServerError, ServerUnreachable, StreamCut

if TYPE_CHECKING:
    from twinny_magics.contracts import ChatEvent, ChatRequest, ModelServer, ServerAddress


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


def server_failed(error: BaseException) -> bool:
    """Whether ``error`` is the server's failure, not the run's: unreachable, cut mid-reply, or a 5xx."""
    if isinstance(error, ServerUnreachable | StreamCut | httpx.TransportError):
        return not isinstance(error, httpx.TimeoutException)
    return isinstance(error, ServerError) and isinstance(error.status, int) and 500 <= error.status < 600


class RunServer:
    """The model server as one run sees it: counts refusals, and starts the run off the prompt cache.

    A thin wrapper with the loop's ``ModelServer`` shape and every optional capability of
    ``contracts``, each answered as the inner server does (or as a server without it would).
    """

    def __init__(self, inner: ModelServer, *, cold_first: bool = True, slot: int | None = None) -> None:
        self.inner = inner
        self.cold_first = cold_first
        #: The llama.cpp slot every request of the run goes to (runs at once each hold their own), so a
        #: later request finds the cache its own run filled, never another run's.
        self.slot = slot
        self.requests = 0
        #: Requests the server refused as longer than its window.
        self.refused = 0
        #: The server's own failure during the run (nothing answered, the reply cut, a 5xx), if any: the
        #: run is then not the run's failure, and on a fleet it is run again elsewhere.
        self.lost: str | None = None
        #: The server turned the run away as busy (HTTP 429): the run may start again later.
        self.busy = False

    def _note(self, error: BaseException) -> None:
        if self.lost is None and server_failed(error):
            self.lost = f"{type(error).__name__}: {error}"
        self.busy = self.busy or (isinstance(error, ServerError) and error.status == 429)

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
        return self.inner.embedded if isinstance(self.inner, MaybeEmbedded) else None

    @property
    def info(self) -> ServerAddress | None:
        """The server's info (the loop masks its API key in what it keeps)."""
        return self.inner.info if isinstance(self.inner, Addressed) else None

    @property
    def takes_tools(self) -> bool:
        """Whether tools may be offered natively."""
        return self.inner.takes_tools if isinstance(self.inner, TakesTools) else True

    @property
    def key_warning(self) -> str | None:
        """The inner server's warning about a key over plain http, if any."""
        return self.inner.key_warning if isinstance(self.inner, WarnsOfKey) else None

    async def context_window(self) -> int:
        """The server's window."""
        try:
            return await self.inner.context_window()
        except Exception as error:
            self._note(error)
            raise

    async def tokenize(self, text: str) -> int | None:
        """Exact tokens where the server counts them, else None."""
        return await self.inner.tokenize(text) if isinstance(self.inner, Tokenizes) else None

    async def count_prompt_tokens(self, request: ChatRequest) -> int | None:
        """A whole prompt's tokens where the server counts them, else None."""
        if not isinstance(self.inner, CountsPrompts):
            return None
        return await self.inner.count_prompt_tokens(request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        """The inner server's reply; the run's first request on llama.cpp skips the prompt cache."""
        self.requests += 1
        if self.inner.kind == "llamacpp":
            pinned = {"id_slot": self.slot} if self.slot is not None else {}
            cold = {"cache_prompt": False} if self.cold_first and self.requests == 1 else {}
            if pinned or cold:
                request = replace(request, extra={**request.extra, **pinned, **cold})
        events = self.inner.stream(request)
        try:
            async for event in events:
                yield event
        except PromptTooLong:
            self.refused += 1
            raise
        except Exception as error:
            self._note(error)
            raise
        finally:
            if isinstance(events, Closes):
                await events.aclose()
