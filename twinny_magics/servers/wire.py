"""The HTTP plumbing the adapters share: one streamed POST whose failures come out as our errors."""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from twinny_magics.errors import MalformedStream, StreamCut
from twinny_magics.servers.kinds import ServerInfo, is_local_host
from twinny_magics.servers.refusals import error_from_exception

# Connecting is quick or never; a reply may take long to start (a big prompt is read first, ~500
# tokens/s on a small CPU) and may pause between tokens, so reading gets minutes, not seconds.
CHAT_TIMEOUT = httpx.Timeout(connect=5.0, read=300.0, write=30.0, pool=10.0)

#: The most a whole answer read at once may be (an error body, a server that ignored ``stream``).
BODY_LIMIT = 16 * 1024 * 1024
#: Bytes a streamed reply may take per token asked for (an SSE chunk is 150-400 bytes; with log
#: probabilities a few KB), and over that whatever the size. Past it the server is sending something
#: other than the reply (keep-alives for ever, padding) and the stream is closed.
STREAM_BYTES_PER_TOKEN = 4096
STREAM_BYTES_BASE = 16 * 1024 * 1024
#: The bound on a streamed reply when the request sets no ``max_tokens``.
STREAM_BYTES_UNBOUNDED = 256 * 1024 * 1024


def stream_byte_limit(max_tokens: int | None) -> int:
    """The most bytes a streamed reply of at most ``max_tokens`` tokens is read for."""
    if max_tokens is None:
        return STREAM_BYTES_UNBOUNDED
    return STREAM_BYTES_BASE + STREAM_BYTES_PER_TOKEN * max(0, max_tokens)


class StreamBudget:
    """Counts a streamed reply's bytes; past ``limit`` it is a ``StreamCut`` (the caller then closes it)."""

    def __init__(self, url: str, max_tokens: int | None) -> None:
        self.url = url
        self.max_tokens = max_tokens
        self.limit = stream_byte_limit(max_tokens)
        self.received = 0

    def spend(self, chunk: bytes) -> None:
        """Count ``chunk``; raise once the reply has taken more than its bytes."""
        self.received += len(chunk)
        if self.received > self.limit:
            tokens = f"{self.max_tokens:,}" if self.max_tokens is not None else "an unbounded number of"
            raise StreamCut(
                f"The server at {self.url} sent {self.received:,} bytes without finishing a reply of at most "
                f"{tokens} tokens; the stream was closed."
            )


def json_content(body: Any) -> bytes:
    """``body`` as UTF-8 JSON, with any text UTF-8 cannot carry replaced rather than refused.

    A lone surrogate is such text: a server may stream ``"\\ud800"`` (valid JSON, no character), and a
    file name that is not UTF-8 comes out of ``os.scandir`` as one. httpx's own ``json=`` refuses it with
    a ``UnicodeEncodeError``, and since the text stays in the conversation and the notes, every later
    request of the session would fail the same way.
    """
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", errors="replace")


def json_request(
    client: httpx.AsyncClient, url: str, body: Any, *, headers: dict[str, str], timeout: httpx.Timeout
) -> httpx.Request:
    """A POST of ``body`` as JSON (see ``json_content``)."""
    headers = {**headers, "Content-Type": "application/json"}
    return client.build_request("POST", url, content=json_content(body), headers=headers, timeout=timeout)


def bearer(api_key: str | None) -> dict[str, str]:
    """The Authorization header for ``api_key`` (none without one)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One TLS context for every client: building one (loading the CA bundle) costs ~15 ms a client."""
    return httpx.create_ssl_context()  # honours SSL_CERT_FILE / SSL_CERT_DIR, as httpx's clients do


def _trust_env(base: str) -> bool:
    # A server on this machine or network is never reached through a proxy from the environment.
    return not is_local_host(httpx.URL(base if "://" in base else "http://" + base).host)


def make_client(info: ServerInfo | str, **options: Any) -> httpx.AsyncClient:
    """An AsyncClient suited to the server: no proxy from the environment for a server on this network."""
    base = info.base_url if isinstance(info, ServerInfo) else info
    options.setdefault("trust_env", _trust_env(base))
    options.setdefault("timeout", CHAT_TIMEOUT)
    options.setdefault("verify", shared_ssl_context())
    return httpx.AsyncClient(**options)


def make_sync_client(**options: Any) -> httpx.Client:
    """A sync client for probes (no proxy from the environment: probes go to the user's own servers)."""
    options.setdefault("trust_env", False)
    options.setdefault("verify", shared_ssl_context())
    return httpx.Client(**options)


# A kept-alive connection the server has closed meanwhile fails before any answer: llama.cpp closes the
# connection after a streamed reply, so about a third of requests that reuse it meet this. The server
# never read such a request, so it is sent once more on a fresh connection.
STALE_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


async def send(client: httpx.AsyncClient, request: httpx.Request, *, stream: bool = False) -> httpx.Response:
    """``client.send``, sent once more when a reused connection turns out to be closed."""
    try:
        return await client.send(request, stream=stream)
    except STALE_CONNECTION:
        return await client.send(request, stream=stream)


def send_sync(client: httpx.Client, request: httpx.Request) -> httpx.Response:
    """``client.send`` (sync), sent once more when a reused connection turns out to be closed."""
    try:
        return client.send(request)
    except STALE_CONNECTION:
        return client.send(request)


@asynccontextmanager
async def post_stream(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    *,
    headers: dict[str, str],
    timeout: httpx.Timeout,
) -> AsyncIterator[httpx.Response]:
    """POST ``body`` and hold the response open for streaming; a failure to connect is a ServerError."""
    request = json_request(client, url, body, headers=headers, timeout=timeout)
    try:
        response = await send(client, request, stream=True)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        # Connected, but no answer came: the wait that ran out was the read timeout, not the connect one.
        waited = timeout.read if isinstance(exc, httpx.ReadTimeout) else timeout.connect
        raise error_from_exception(exc, url=url, started=False, timeout=waited) from exc
    try:
        yield response
    finally:
        await response.aclose()


async def read_body(
    response: httpx.Response, url: str, timeout: httpx.Timeout, limit: int = BODY_LIMIT
) -> str:
    """The whole body of a (streamed) response as text; a failure while reading is a ServerError.

    A body past ``limit`` bytes is not held: reading stops there with a ``MalformedStream``.
    """
    pieces: list[bytes] = []
    size = 0
    try:
        async for piece in response.aiter_bytes():
            size += len(piece)
            if size > limit:
                raise MalformedStream(
                    f"The answer from {url} ran past {limit:,} bytes; it was not read further."
                )
            pieces.append(piece)
    except httpx.HTTPError as exc:
        raise error_from_exception(exc, url=url, started=True, timeout=timeout.read) from exc
    return b"".join(pieces).decode(response.encoding or "utf-8", errors="replace")


async def next_chunk(chunks: AsyncIterator[bytes], url: str, timeout: httpx.Timeout) -> bytes | None:
    """The next piece of a streamed body, None at its end; a dropped connection is a ServerError.

    A function rather than a wrapping generator, so an error the *caller* throws into its own
    generator (the user stopped the reply) is never mistaken for the server's.
    """
    try:
        return await anext(chunks)
    except StopAsyncIteration:
        return None
    except httpx.HTTPError as exc:
        raise error_from_exception(exc, url=url, started=True, timeout=timeout.read) from exc


def is_event_stream(response: httpx.Response) -> bool:
    """Whether the server answered a streamed request with a stream (some answer one JSON document)."""
    content_type = response.headers.get("content-type", "")
    return not ("json" in content_type and "event-stream" not in content_type)
