"""The I/O layer between the agent loop and model servers.

- ``kinds``: server kinds, ports, default windows, ``ServerInfo``, ``small_window_warning``.
- ``probe``: the window (``probe_context_window``/``context_window``), cached (``asking.ProbeCache``).
- ``recognise``: the kind, the model, discovery (``discover``); ``asking``: the sans-IO ask drivers.
- ``base``: ``ChatRequest`` and the events a reply streams as (defined in ``twinny_magics.contracts``,
  with the ``ModelServer`` protocol every server here fits), and reading a server's JSON.
- ``openai`` / ``ollama``: the streaming adapters on an injected ``httpx.AsyncClient``.
- ``sse``: the incremental SSE decoder; ``refusals``: server refusals as our error types.
- ``embedded``: llama.cpp in-process (``xllamacpp``) with SmolLM2, the default server.
- ``connect``: one server for a session (``connect()`` → ``ConnectedServer``).
- ``scripted``: a model that answers from a queue (``ScriptedServer``), for tests and replays; not
  imported here.
"""

from __future__ import annotations

from twinny_magics.servers.asking import ProbeCache
from twinny_magics.servers.base import (
    ChatEvent,
    ChatRequest,
    Finish,
    TextChunk,
    ToolCallDelta,
    ToolCalls,
    Usage,
)
from twinny_magics.servers.connect import ConnectedServer, chat_server, connect
from twinny_magics.servers.embedded import EmbeddedServer, start_embedded, stop_embedded
from twinny_magics.servers.kinds import (
    HOSTED_WINDOW,
    LOCAL_UNKNOWN_WINDOW,
    SMALL_WINDOW,
    Kind,
    ServerInfo,
    default_window,
    kind_from_url,
    normalize_url,
    small_window_warning,
)
from twinny_magics.servers.ollama import OllamaChatServer, OllamaStreamParser
from twinny_magics.servers.openai import OpenAIChatServer, OpenAIStreamParser
from twinny_magics.servers.probe import (
    acontext_window,
    aprobe_context_window,
    context_window,
    probe_context_window,
)
from twinny_magics.servers.recognise import (
    adiscover,
    arecognise_kind,
    discover,
    recognise_kind,
    resolve_server,
)
from twinny_magics.servers.sse import SSEDecoder, SSEEvent
from twinny_magics.servers.wire import make_client

__all__ = [
    "HOSTED_WINDOW",
    "LOCAL_UNKNOWN_WINDOW",
    "SMALL_WINDOW",
    "ChatEvent",
    "ChatRequest",
    "ConnectedServer",
    "EmbeddedServer",
    "Finish",
    "Kind",
    "OllamaChatServer",
    "OllamaStreamParser",
    "OpenAIChatServer",
    "OpenAIStreamParser",
    "ProbeCache",
    "SSEDecoder",
    "SSEEvent",
    "ServerInfo",
    "TextChunk",
    "ToolCallDelta",
    "ToolCalls",
    "Usage",
    "acontext_window",
    "adiscover",
    "aprobe_context_window",
    "arecognise_kind",
    "chat_server",
    "connect",
    "context_window",
    "default_window",
    "discover",
    "kind_from_url",
    "make_client",
    "normalize_url",
    "probe_context_window",
    "recognise_kind",
    "resolve_server",
    "small_window_warning",
    "start_embedded",
    "stop_embedded",
]
