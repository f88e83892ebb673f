"""The OpenAI-compatible chat route (``POST …/v1/chat/completions``, streamed as SSE).

Every local server and gateway speaks it (llama.cpp, Ollama's ``/v1``, LM Studio, vLLM, LiteLLM, Open
WebUI's ``/api``). ``OpenAIStreamParser`` turns the streamed bytes into events and is pure, so the odd
shapes are tested without a server: the usage chunk (llama.cpp: ``choices: []``; LiteLLM sometimes
``choices: [{"index": 0, "delta": {}}]``), tool calls assembled from deltas keyed by ``index``, an
``error`` sent after the headers, a server that ignored ``stream`` and answered one JSON document.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from twinny_magics.errors import MalformedStream, ServerError, StreamCut
from twinny_magics.servers import wire
from twinny_magics.servers.base import (
    ChatEvent,
    ChatRequest,
    Finish,
    TextChunk,
    ToolCallDelta,
    Usage,
    build_tool_calls,
    read_json,
)
from twinny_magics.servers.kinds import ServerInfo
from twinny_magics.servers.numbers import checked_int, token_count
from twinny_magics.servers.refusals import error_from_response, hide_secret, shorten
from twinny_magics.servers.sse import SSEDecoder

ErrorMapper = Callable[[int, str], ServerError]


#: llama.cpp's ``n_cache_reuse``: the fewest tokens a run of cached prompt must match to be shifted into
#: place and reused rather than read again. Between two trimmed results lie at least the rest of a turn,
#: a call and the next result's first line — about 50 tokens —, and a run shorter than this stops the
#: reuse of everything after it; a few tokens would also match by chance.
CACHE_REUSE_CHUNK = 16
#: The most native calls one reply is believed to make (a larger ``index`` is a position instead).
MAX_CALL_INDEX = 1000


def read_usage(usage: Any) -> Usage | None:
    """A ``Usage`` from an OpenAI-style ``usage`` object, None when there is none.

    Each count is checked (``numbers.token_count``): one that is not a sane count is not said.
    """
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = token_count(details.get("cached_tokens")) if isinstance(details, dict) else None
    prompt, completion = token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens"))
    if prompt is None and completion is None:
        return None
    return Usage(prompt, completion, cached)


@dataclass
class _CallParts:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAIStreamParser:
    """Streamed chat-completion bytes in, ``ChatEvent``s out. Pure; raises only our errors.

    ``feed`` returns the events a chunk completed; ``finish`` those left at the end of the body, and
    raises ``StreamCut`` when the reply never finished (no ``[DONE]`` and no ``finish_reason``).
    A ``data:`` line that is not a JSON object raises ``MalformedStream`` naming the line; other lines
    that are not SSE are skipped and counted (see ``sse``), unless nothing else came at all.
    """

    def __init__(self, on_error: ErrorMapper | None = None) -> None:
        self._sse = SSEDecoder()
        self._on_error: ErrorMapper = on_error or error_from_response
        self._calls: dict[int, _CallParts] = {}
        self._usage: Usage | None = None
        self._reason: str | None = None
        self._events = 0
        self._finished = False

    @property
    def skipped(self) -> int:
        """How many lines were not SSE and were skipped."""
        return self._sse.skipped

    @property
    def done(self) -> bool:
        """Whether ``[DONE]`` came: the reply is complete and nothing after it counts."""
        return self._finished

    def feed(self, chunk: bytes) -> list[ChatEvent]:
        """The events ``chunk`` completed."""
        out: list[ChatEvent] = []
        for event in self._sse.feed(chunk):
            self._event(event.event, event.data, out)
        return out

    def finish(self) -> list[ChatEvent]:
        """The events left at the end of the body; raises if the reply did not finish."""
        out: list[ChatEvent] = []
        for event in self._sse.close():
            self._event(event.event, event.data, out)
        if self._finished:
            return out
        if self._events == 0 and self._sse.first_skipped is not None:
            raise MalformedStream(
                f"The server's answer was not an event stream; it began: {self._sse.first_skipped!r}"
            )
        if self._reason is None:
            raise StreamCut("The stream ended before the reply was finished (no finish_reason, no [DONE]).")
        self._close(out)
        return out

    def completion(self, text: str) -> list[ChatEvent]:
        """The events of a whole (not streamed) chat completion, for a server that ignored ``stream``."""
        out: list[ChatEvent] = []
        try:
            body: Any = read_json(text)
        except ValueError:
            raise MalformedStream(f"The server's answer was not JSON: {shorten(text, 200)!r}") from None
        if not isinstance(body, dict):
            raise MalformedStream(f"The server's answer was not a JSON object: {shorten(text, 200)!r}")
        if "error" in body:
            raise self._on_error(200, text)
        choices = body.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = choice.get("message")
        if isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, str) and content:
                out.append(TextChunk(content))
            self._tool_call_pieces(message.get("tool_calls"), out)
        reason = choice.get("finish_reason")
        self._reason = reason if isinstance(reason, str) else "stop"
        self._usage = read_usage(body.get("usage"))
        self._events += 1
        self._close(out)
        return out

    def _event(self, kind: str, data: str, out: list[ChatEvent]) -> None:
        if self._finished:
            return  # nothing after [DONE] counts
        self._events += 1
        if kind == "error":
            raise self._on_error(200, data)
        if data.strip() == "[DONE]":
            if self._reason is None:
                self._reason = "stop"
            self._close(out)
            return
        try:
            chunk: Any = read_json(data)
        except ValueError:
            raise MalformedStream(f"A line of the stream is not JSON: {shorten(data, 200)!r}") from None
        if not isinstance(chunk, dict):
            raise MalformedStream(f"A line of the stream is not a JSON object: {shorten(data, 200)!r}")
        if "error" in chunk:
            raise self._on_error(200, data)
        usage = read_usage(chunk.get("usage"))
        if usage is not None:
            self._usage = usage  # the last one wins: some servers send running totals
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return
        for choice in choices:
            # Only the first choice is asked for; a server that sends others is not listened to.
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                content = delta.get("content")
                if isinstance(content, str) and content:
                    out.append(TextChunk(content))
                self._tool_call_pieces(delta.get("tool_calls"), out)
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self._reason = reason

    def _tool_call_pieces(self, pieces: Any, out: list[ChatEvent]) -> None:
        if not isinstance(pieces, list):
            return
        for position, piece in enumerate(pieces):
            if not isinstance(piece, dict):
                continue
            index = checked_int(piece.get("index"), 0, MAX_CALL_INDEX)
            if index is None:
                index = position
            parts = self._calls.setdefault(index, _CallParts())
            call_id = piece.get("id")
            if isinstance(call_id, str) and call_id and parts.id is None:
                parts.id = call_id
            function = piece.get("function")
            if not isinstance(function, dict):
                continue
            name = function.get("name")
            new_name: str | None = None
            # A name normally comes whole in the first piece; some servers repeat it in every piece,
            # a few split it. Repeats are ignored, pieces joined.
            if isinstance(name, str) and name and name != parts.name:
                parts.name += name
                new_name = parts.name
            arguments = function.get("arguments")
            if isinstance(arguments, dict | list):
                arguments = json.dumps(arguments, ensure_ascii=False)
            text = arguments if isinstance(arguments, str) else ""
            if text:
                parts.arguments.append(text)
            if new_name is not None or text:
                out.append(ToolCallDelta(index=index, arguments=text, name=new_name, id=parts.id))

    def _close(self, out: list[ChatEvent]) -> None:
        if self._calls:
            ordered = [self._calls[i] for i in sorted(self._calls)]
            out.append(build_tool_calls([(p.id, p.name, "".join(p.arguments)) for p in ordered]))
        if self._usage is not None:
            out.append(self._usage)
        out.append(Finish(self._reason))
        self._finished = True


def refuses_stream_options(status: int, text: str) -> bool:
    """Whether a refusal is about ``stream_options`` (servers that do not know the field)."""
    return status in (400, 422) and "stream_options" in text


class OpenAIChatServer:
    """A server on the OpenAI-compatible route, over an injected ``httpx.AsyncClient``.

    Asks for ``stream_options.include_usage`` and stops asking (for this adapter) once the server refuses
    it. ``tokenize``/``count_prompt_tokens`` answer exactly on llama.cpp (``/tokenize``,
    ``/apply-template``) and return None elsewhere.
    """

    def __init__(
        self,
        info: ServerInfo,
        client: httpx.AsyncClient,
        *,
        timeout: httpx.Timeout = wire.CHAT_TIMEOUT,
    ) -> None:
        self.info = info
        self.include_usage = True
        self._client = client
        self._timeout = timeout
        self._tokenize_works: bool | None = True if info.kind == "llamacpp" else None

    @property
    def chat_url(self) -> str:
        """Where chat requests go."""
        return self.info.api_base + "/chat/completions"

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body for ``request``."""
        body: dict[str, Any] = {"messages": request.messages, "stream": True}
        model = request.model or self.info.model
        if model:
            body["model"] = model
        if request.tools:
            body["tools"] = request.tools
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if self.include_usage:
            body["stream_options"] = {"include_usage": True}
        if self.info.reuses_cache:
            # Reuse the cached prompt past a trim: the trims are deletions (see budget.trimmed_stub), so
            # the server shifts the cached tokens after one instead of reading them all again.
            body["n_cache_reuse"] = CACHE_REUSE_CHUNK
        body.update(request.extra)
        return body

    def _error(self, request: ChatRequest) -> ErrorMapper:
        def mapper(status: int, text: str) -> ServerError:
            return error_from_response(
                status,
                text,
                url=self.chat_url,
                model=request.model or self.info.model,
                had_tools=bool(request.tools),
                had_tool_history=request.has_tool_history,
                secret=self.info.api_key,
            )

        return mapper

    async def stream(self, request: ChatRequest) -> AsyncGenerator[ChatEvent, None]:
        """The reply to ``request`` as events (see ``base``).

        Every error it raises has the API key and credential shapes masked; a stream that runs past
        ``wire.stream_byte_limit`` bytes for its ``max_tokens`` is closed with a ``StreamCut``.
        """
        async with contextlib.aclosing(self._stream(request)) as events:
            try:
                async for event in events:
                    yield event
            except ServerError as error:
                hide_secret(error, self.info.api_key)
                raise

    async def _stream(self, request: ChatRequest) -> AsyncGenerator[ChatEvent, None]:
        url = self.chat_url
        on_error = self._error(request)
        body = self.body(request)
        headers = wire.bearer(self.info.api_key)
        for attempt in (1, 2):
            async with wire.post_stream(
                self._client, url, body, headers=headers, timeout=self._timeout
            ) as response:
                if response.status_code >= 400:
                    text = await wire.read_body(response, url, self._timeout)
                    if (
                        attempt == 1
                        and "stream_options" in body
                        and refuses_stream_options(response.status_code, text)
                    ):
                        self.include_usage = False
                        body = {k: v for k, v in body.items() if k != "stream_options"}
                        continue
                    raise on_error(response.status_code, text)
                parser = OpenAIStreamParser(on_error)
                if not wire.is_event_stream(response):
                    for event in parser.completion(await wire.read_body(response, url, self._timeout)):
                        yield event
                    return
                chunks = response.aiter_bytes()
                budget = wire.StreamBudget(url, request.max_tokens)
                # Not read past [DONE]: a server that then keeps the stream open (or drops it) has lost
                # nothing, and waiting for the body's end would cost the whole read timeout.
                while (
                    not parser.done
                    and (chunk := await wire.next_chunk(chunks, url, self._timeout)) is not None
                ):
                    budget.spend(chunk)
                    for event in parser.feed(chunk):
                        yield event
                for event in parser.finish():
                    yield event
                return

    async def tokenize(self, text: str) -> int | None:
        """Exact tokens in ``text`` (llama.cpp's ``/tokenize``); None where the server cannot say."""
        tokens = await self._llamacpp_post("/tokenize", {"content": text, "add_special": False})
        found = tokens.get("tokens") if tokens else None
        return len(found) if isinstance(found, list) else None

    async def count_prompt_tokens(self, request: ChatRequest) -> int | None:
        """Exact prompt tokens of ``request`` (chat template and tools included) on llama.cpp, else None."""
        payload: dict[str, Any] = {"messages": request.messages}
        if request.tools:
            payload["tools"] = request.tools
        applied = await self._llamacpp_post("/apply-template", payload)
        prompt = applied.get("prompt") if applied else None
        if not isinstance(prompt, str):
            return None
        # The same flags llama.cpp uses for a chat prompt: its template's special tokens are tokens.
        tokens = await self._llamacpp_post(
            "/tokenize", {"content": prompt, "add_special": True, "parse_special": True}
        )
        found = tokens.get("tokens") if tokens else None
        return len(found) if isinstance(found, list) else None

    async def _llamacpp_post(self, path: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        # Only llama.cpp has these routes; another kind is asked once ("compatible" may be llama.cpp).
        if self._tokenize_works is False or self.info.kind not in ("llamacpp", "compatible"):
            return None
        try:
            request = wire.json_request(
                self._client,
                self.info.base_url + path,
                payload,
                headers=wire.bearer(self.info.api_key),
                # Counting is quick; a server slow to count is treated as one that cannot.
                timeout=httpx.Timeout(10.0, connect=5.0),
            )
            response = await wire.send(self._client, request)
        except httpx.HTTPError:
            return None
        if response.status_code == 404:
            self._tokenize_works = False
        if response.status_code != 200:
            return None
        try:
            answer: Any = read_json(response.content)
        except ValueError:
            return None
        self._tokenize_works = True
        return answer if isinstance(answer, dict) else None
