"""One server for a session: found or named, then asked for its window and streamed from.

``connect`` is what the agent calls: with no URL it looks for a server (environment, usual local ports)
and falls back to the embedded one. The ``ConnectedServer`` it returns is what the loop talks to.
It opens a fresh ``httpx.AsyncClient`` for each reply (closed when the reply ends), since every reply may
run on its own event loop (Jupyter: a worker thread) and a client must not outlive its loop.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncGenerator, Callable
from dataclasses import replace
from typing import TypeVar

import httpx

from twinny_magics.errors import ModelNotFound, ServerError
from twinny_magics.servers.asking import DEFAULT_CACHE, ProbeCache, Steps, run_async
from twinny_magics.servers.base import ChatEvent, ChatRequest
from twinny_magics.servers.embedded import DEFAULT_N_CTX, EmbeddedServer, start_embedded
from twinny_magics.servers.kinds import (
    NEVER_ASKED,
    Kind,
    ServerInfo,
    plaintext_key_warning,
)
from twinny_magics.servers.ollama import OllamaChatServer
from twinny_magics.servers.openai import OpenAIChatServer
from twinny_magics.servers.probe import model_metadata_steps, planned_window_steps
from twinny_magics.servers.recognise import discover, resolve_server
from twinny_magics.servers.refusals import hide_secret
from twinny_magics.servers.wire import CHAT_TIMEOUT, make_client

ClientFactory = Callable[[ServerInfo], httpx.AsyncClient]
LocalModel = Callable[[], "tuple[os.PathLike[str] | str, int | None] | None"]
"""What the embedded server should load when no server answers: a GGUF file and its window, or None."""
_T = TypeVar("_T")


def chat_server(
    info: ServerInfo, client: httpx.AsyncClient, timeout: httpx.Timeout = CHAT_TIMEOUT
) -> OpenAIChatServer | OllamaChatServer:
    """The adapter for ``info``'s kind on ``client``."""
    if info.kind == "ollama":
        return OllamaChatServer(info, client, timeout=timeout)
    return OpenAIChatServer(info, client, timeout=timeout)


def chat_timeout(seconds: float | None) -> httpx.Timeout:
    """How long a reply may go silent before it is given up (``None``: the default, 300 s)."""
    if seconds is None:
        return CHAT_TIMEOUT
    return httpx.Timeout(connect=min(5.0, seconds), read=seconds, write=min(30.0, seconds), pool=10.0)


class ConnectedServer:
    """A model server as the loop uses it: ``kind``, ``model``, ``context_window()``, ``stream()``.

    ``window`` (asked by the user) is sent to Ollama as ``num_ctx`` and then is the window; other
    servers decide their window when they load the model, so for them it is only a cap on what is
    planned for.
    """

    def __init__(
        self,
        info: ServerInfo,
        *,
        window: int | None = None,
        client_factory: ClientFactory = make_client,
        cache: ProbeCache | None = None,
        embedded: EmbeddedServer | None = None,
        timeout: float | None = None,
    ) -> None:
        self.info = info
        self.timeout = chat_timeout(timeout)
        self.requested_window = window
        self.embedded = embedded
        self._client_factory = client_factory
        self._cache = cache or DEFAULT_CACHE
        self._include_usage = True

    @property
    def kind(self) -> Kind:
        """The server's kind."""
        return self.info.kind

    @property
    def model(self) -> str | None:
        """The model requests name."""
        return self.info.model

    @property
    def continues_prefill(self) -> bool:
        """Whether a request ending in an assistant message continues that message (llama.cpp appends it
        to the prompt: an assistant prefill), so a reply can be finished under a grammar."""
        return self.info.kind == "llamacpp"

    @property
    def reuses_cache(self) -> bool:
        """Whether the server reuses its cache past a trim (llama.cpp: every request asks it to)."""
        return self.info.reuses_cache

    @property
    def takes_tools(self) -> bool:
        """Whether tools may be offered natively (text-generation-webui's chat route has no tools)."""
        return self.info.kind != "textgen"

    async def context_window(self) -> int:
        """The window to plan with: asked of the server (cached), else the kind's default."""
        if self.requested_window is not None and self.kind == "ollama":
            return self.requested_window
        window = await self._asked(planned_window_steps)
        return min(window, self.requested_window) if self.requested_window else window

    async def model_metadata(self) -> dict[str, str]:
        """What the server says of the model that tells its tokenizer (Ollama, LM Studio, LiteLLM), or {}."""
        return await self._asked(model_metadata_steps)

    async def _asked(
        self, steps: Callable[[str, str | None, str | None, str | None, ProbeCache], Steps[_T]]
    ) -> _T:
        """Ask the server what ``steps`` ask (the probe's questions, cached in this server's cache)."""
        async with self._client_factory(self.info) as client:
            return await run_async(
                steps(self.info.base_url, self.model, self.kind, self.info.api_key, self._cache), client
            )

    @property
    def key_warning(self) -> str | None:
        """A warning when the API key goes over plain http to a host that is not this machine, else None."""
        for url in (self.info.base_url, self.info.api_base):
            warning = plaintext_key_warning(url, self.info.api_key)
            if warning:
                return warning
        return None

    def _adapter(self, client: httpx.AsyncClient) -> OpenAIChatServer | OllamaChatServer:
        adapter = chat_server(self.info, client, self.timeout)
        compatible = adapter.compatible if isinstance(adapter, OllamaChatServer) else adapter
        compatible.include_usage = self._include_usage
        return adapter

    def _remember(self, adapter: OpenAIChatServer | OllamaChatServer) -> None:
        compatible = adapter.compatible if isinstance(adapter, OllamaChatServer) else adapter
        self._include_usage = compatible.include_usage

    async def stream(self, request: ChatRequest) -> AsyncGenerator[ChatEvent, None]:
        """The reply to ``request`` as events (see ``servers.base``)."""
        if self.requested_window is not None and self.kind == "ollama" and request.num_ctx is None:
            request = replace(request, num_ctx=self.requested_window)
        async with self._client_factory(self.info) as client:
            adapter = self._adapter(client)
            try:
                # Closed here, not when collected: a reply stopped early (the loop's reply cap, the stop
                # button) closes its stream before the client goes.
                async with contextlib.aclosing(adapter.stream(request)) as events:
                    async for event in events:
                        yield event
            except ServerError as error:
                hide_secret(error, self.info.api_key)
                raise
            finally:
                self._remember(adapter)

    async def tokenize(self, text: str) -> int | None:
        """Exact tokens in ``text`` where the server can count them (llama.cpp), else None."""
        async with self._client_factory(self.info) as client:
            return await self._adapter(client).tokenize(text)

    async def count_prompt_tokens(self, request: ChatRequest) -> int | None:
        """Exact prompt tokens of ``request`` where the server can count them (llama.cpp), else None."""
        async with self._client_factory(self.info) as client:
            return await self._adapter(client).count_prompt_tokens(request)

    def __repr__(self) -> str:
        return f"<ConnectedServer {self.kind} {self.model or '(no model)'} at {self.info.base_url}>"


def is_gguf_path(model: str | None) -> bool:
    """Whether a ``model`` value names a GGUF file (which only the embedded server can load)."""
    return model is not None and (model.lower().endswith(".gguf") or os.path.isfile(model))


def connect(
    base_url: str | None = None,
    model: str | None = None,
    kind: str | None = None,
    *,
    api_key: str | None = None,
    window: int | None = None,
    client_factory: ClientFactory = make_client,
    cache: ProbeCache | None = None,
    embedded_n_ctx: int = DEFAULT_N_CTX,
    timeout: float | None = None,
    local: LocalModel | None = None,
) -> ConnectedServer:
    """The server for a session: the one named, else one found, else the embedded llama.cpp server.

    ``local`` is asked only when no server is named or found: the GGUF file (and the window it is
    measured at, or None) for the embedded server to load, or None for its default model. A ``model``
    that is a GGUF path is never looked for on other servers: it goes to the embedded one.
    """
    embedded: EmbeddedServer | None = None
    if base_url is None:
        found = None if is_gguf_path(model) else discover()
        if found is None:
            if local is not None:
                chosen = local()
            else:
                chosen = (model, None) if model is not None and is_gguf_path(model) else None
            if chosen is None:
                embedded = start_embedded(n_ctx=window or embedded_n_ctx)
            else:
                path, measured = chosen
                embedded = start_embedded(path, n_ctx=window or measured or embedded_n_ctx)
            # The embedded server's name for its model stays: a catalog name or a path is not what it serves.
            info = embedded.info
        elif model is not None or api_key is not None:
            info = replace(found, model=model or found.model, api_key=api_key or found.api_key)
        else:
            info = found
    else:
        info = resolve_server(base_url, model, kind, api_key=api_key, cache=cache)
    if info.model is None and info.kind in NEVER_ASKED:
        # A hosted API serves many models and none is "loaded": the user has to name one.
        raise ModelNotFound(
            f"Name the model to use at {info.base_url}: `model=` (or `--model` on the magic line).",
        )
    return ConnectedServer(
        info, window=window, client_factory=client_factory, cache=cache, embedded=embedded, timeout=timeout
    )
