"""Ollama: its own ``/api/chat`` when a window is asked for, else the OpenAI-compatible route.

Ollama's ``/v1`` route ignores any window the client asks for (the model runs at its Modelfile's
``num_ctx`` or the server's default, 4,096), and cuts an over-long prompt from the front without an
error. Only ``/api/chat`` takes ``options.num_ctx``, so a request with ``num_ctx`` goes there: its stream
is newline-delimited JSON, tool-call arguments are objects, and the last chunk (``done: true``) carries
``prompt_eval_count``/``eval_count``/``done_reason``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator
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
from twinny_magics.servers.numbers import token_count
from twinny_magics.servers.openai import ErrorMapper, OpenAIChatServer
from twinny_magics.servers.refusals import error_from_response, hide_secret, shorten
from twinny_magics.servers.sse import LineDecoder


def ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-style messages as ``/api/chat`` takes them (call arguments as objects, no null content)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        converted: dict[str, Any] = {
            "role": message.get("role", "user"),
            "content": message.get("content") or "",
        }
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            converted["tool_calls"] = []
            for call in calls:
                function = call.get("function", {}) if isinstance(call, dict) else {}
                arguments = function.get("arguments", {})
                if isinstance(arguments, str):
                    try:
                        arguments = json.loads(arguments) if arguments.strip() else {}
                    except ValueError:
                        arguments = {}
                converted["tool_calls"].append(
                    {"function": {"name": function.get("name", ""), "arguments": arguments}}
                )
        if message.get("role") == "tool" and message.get("name"):
            converted["tool_name"] = message["name"]
        out.append(converted)
    return out


class OllamaStreamParser:
    """Ollama's NDJSON chat stream in, ``ChatEvent``s out. Pure; raises only our errors."""

    def __init__(self, on_error: ErrorMapper | None = None) -> None:
        self._lines = LineDecoder()
        self._on_error: ErrorMapper = on_error or error_from_response
        self._calls: list[tuple[str | None, str, str]] = []
        self._finished = False

    @property
    def done(self) -> bool:
        """Whether the chunk with ``done: true`` came: nothing after it counts."""
        return self._finished

    def feed(self, chunk: bytes) -> list[ChatEvent]:
        """The events ``chunk`` completed."""
        out: list[ChatEvent] = []
        for line in self._lines.feed(chunk):
            self._line(line, out)
        return out

    def finish(self) -> list[ChatEvent]:
        """The events left at the end of the body; raises ``StreamCut`` if ``done`` never came."""
        out: list[ChatEvent] = []
        for line in self._lines.close():
            self._line(line, out)
        if not self._finished:
            raise StreamCut("The stream ended before the reply was finished (no chunk with done: true).")
        return out

    def _line(self, line: str, out: list[ChatEvent]) -> None:
        if not line.strip() or self._finished:
            return
        try:
            chunk: Any = read_json(line)
        except ValueError:
            raise MalformedStream(f"A line of the stream is not JSON: {shorten(line, 200)!r}") from None
        if not isinstance(chunk, dict):
            raise MalformedStream(f"A line of the stream is not a JSON object: {shorten(line, 200)!r}")
        if "error" in chunk:
            raise self._on_error(200, line)
        message = chunk.get("message")
        if isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, str) and content:
                out.append(TextChunk(content))
            calls = message.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict):
                    continue
                name = function.get("name")
                arguments = function.get("arguments")
                text = (
                    arguments
                    if isinstance(arguments, str)
                    else json.dumps(arguments or {}, ensure_ascii=False)
                )
                call_id = call.get("id") if isinstance(call.get("id"), str) else None
                index = len(self._calls)
                self._calls.append((call_id, name if isinstance(name, str) else "", text))
                out.append(ToolCallDelta(index=index, arguments=text, name=self._calls[-1][1], id=call_id))
        if chunk.get("done") is True:
            if self._calls:
                out.append(build_tool_calls(self._calls))
            prompt, completion = (
                token_count(chunk.get("prompt_eval_count")),
                token_count(chunk.get("eval_count")),
            )
            if prompt is not None or completion is not None:
                out.append(Usage(prompt, completion, None))
            reason = chunk.get("done_reason")
            out.append(Finish(reason if isinstance(reason, str) else "stop"))
            self._finished = True


class OllamaChatServer:
    """Ollama: ``/api/chat`` for requests with ``num_ctx``, the OpenAI-compatible route otherwise."""

    def __init__(
        self,
        info: ServerInfo,
        client: httpx.AsyncClient,
        *,
        timeout: httpx.Timeout = wire.CHAT_TIMEOUT,
    ) -> None:
        self.info = info
        self._client = client
        self._timeout = timeout
        self.compatible = OpenAIChatServer(info, client, timeout=timeout)

    @property
    def chat_url(self) -> str:
        """Where native chat requests go."""
        return self.info.base_url + "/api/chat"

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The ``/api/chat`` body for ``request``."""
        options: dict[str, Any] = {}
        if request.num_ctx is not None:
            options["num_ctx"] = request.num_ctx
        if request.max_tokens is not None:
            options["num_predict"] = request.max_tokens
        if request.temperature is not None:
            options["temperature"] = request.temperature
        body: dict[str, Any] = {
            "model": request.model or self.info.model,
            "messages": ollama_messages(request.messages),
            "stream": True,
            "options": options,
        }
        if request.tools:
            body["tools"] = request.tools
        extra = dict(request.extra)
        if isinstance(extra.get("options"), dict):
            options.update(extra.pop("options"))
        body.update(extra)
        return body

    async def stream(self, request: ChatRequest) -> AsyncGenerator[ChatEvent, None]:
        """The reply to ``request`` as events (see ``base``; errors masked as ``OpenAIChatServer``'s)."""
        if request.num_ctx is None:
            async for event in self.compatible.stream(request):
                yield event
            return
        async with contextlib.aclosing(self._native_stream(request)) as events:
            try:
                async for event in events:
                    yield event
            except ServerError as error:
                hide_secret(error, self.info.api_key)
                raise

    async def _native_stream(self, request: ChatRequest) -> AsyncGenerator[ChatEvent, None]:
        url = self.chat_url

        def on_error(status: int, text: str) -> Any:
            return error_from_response(
                status,
                text,
                url=url,
                model=request.model or self.info.model,
                had_tools=bool(request.tools),
                had_tool_history=request.has_tool_history,
                secret=self.info.api_key,
            )

        headers = wire.bearer(self.info.api_key)
        body = self.body(request)
        async with wire.post_stream(
            self._client, url, body, headers=headers, timeout=self._timeout
        ) as response:
            if response.status_code >= 400:
                raise on_error(response.status_code, await wire.read_body(response, url, self._timeout))
            parser = OllamaStreamParser(on_error)
            chunks = response.aiter_bytes()
            budget = wire.StreamBudget(url, request.max_tokens)
            # Not read past the last chunk (see OpenAIChatServer.stream).
            while (
                not parser.done and (chunk := await wire.next_chunk(chunks, url, self._timeout)) is not None
            ):
                budget.spend(chunk)
                for event in parser.feed(chunk):
                    yield event
            for event in parser.finish():
                yield event

    async def tokenize(self, text: str) -> int | None:
        """Ollama has no tokenize route: None."""
        return None

    async def count_prompt_tokens(self, request: ChatRequest) -> int | None:
        """Ollama cannot count a prompt without running it: None."""
        return None
