"""Fakes of model servers that cannot be installed here, for ``httpx.MockTransport``.

Each fake is a small callable "server" class that answers its documented routes in the shapes their
own docs give and records every request it got (``requests``, ``count(path)``), as httpx's own tests
do — no mocking library. Given ``backend`` (the base URL of a real llama.cpp server), a fake passes
generation through to it, so the text and token counts stay real; without one, it answers chat with a
short scripted stream.

Use::

    fake = FakeOllama(loaded={"llama3:latest": 4096})
    client = httpx.Client(transport=httpx.MockTransport(fake))          # probes (sync)
    aclient = httpx.AsyncClient(transport=httpx.MockTransport(fake))    # probes and chat (async)

Routes the fake does not know answer 404 like a real server would.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

Handler = Callable[[httpx.Request], "httpx.Response | Awaitable[httpx.Response]"]


def _json_body(request: httpx.Request) -> Any:
    try:
        return json.loads(request.content or b"null")
    except ValueError:
        return None


class Relay(httpx.AsyncByteStream):
    """A response body streamed from a real upstream response, closed with it."""

    def __init__(
        self,
        upstream: httpx.Response,
        client: httpx.AsyncClient,
        transform: Callable[[httpx.Response], AsyncIterator[bytes]] | None = None,
    ) -> None:
        self.upstream = upstream
        self.client = client
        self.transform = transform

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.transform is None:
            async for chunk in self.upstream.aiter_raw():
                yield chunk
        else:
            async for chunk in self.transform(self.upstream):
                yield chunk

    async def aclose(self) -> None:
        await self.upstream.aclose()
        await self.client.aclose()


class Chunks(httpx.AsyncByteStream, httpx.SyncByteStream):
    """A body sent in the given pieces, optionally pausing ``delay`` seconds before each."""

    def __init__(self, pieces: list[bytes], delay: float = 0.0) -> None:
        self.pieces = pieces
        self.delay = delay

    def __iter__(self) -> Any:
        yield from self.pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import asyncio

        for piece in self.pieces:
            if self.delay:
                await asyncio.sleep(self.delay)
            yield piece


def sse(*chunks: dict[str, Any] | str) -> bytes:
    """An SSE body: each chunk as a ``data:`` event (a str is sent as is, e.g. ``[DONE]``)."""
    return b"".join(
        f"data: {chunk if isinstance(chunk, str) else json.dumps(chunk)}\n\n".encode() for chunk in chunks
    )


def scripted_chat(text: str = "Hello there.", *, usage: bool = True, model: str = "fake") -> bytes:
    """A short OpenAI-style streamed reply, with a usage chunk when ``usage``."""
    words = text.split(" ")
    chunks: list[dict[str, Any] | str] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    ]
    for number, word in enumerate(words):
        piece = word if number == 0 else " " + word
        chunks.append({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "model": model})
    if usage:
        chunks.append({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": len(words)}})
    chunks.append("[DONE]")
    return sse(*chunks)


class FakeServer:
    """The common part: route table, request log, and chat passed through to ``backend``."""

    def __init__(self, backend: str | None = None, *, api_key: str | None = None) -> None:
        self.backend = backend
        self.api_key = api_key
        self.requests: list[httpx.Request] = []
        self.paths: Counter[str] = Counter()

    def routes(self) -> dict[tuple[str, str], Handler]:
        """``(method, path) → handler``; subclasses add theirs."""
        return {("POST", "/v1/chat/completions"): self.chat}

    def count(self, path: str) -> int:
        """How many requests came for ``path``."""
        return self.paths[path]

    def bodies(self, path: str) -> list[Any]:
        """The JSON bodies of the requests for ``path``, in order."""
        return [_json_body(r) for r in self.requests if r.url.path == path]

    def __call__(self, request: httpx.Request) -> httpx.Response | Awaitable[httpx.Response]:
        self.requests.append(request)
        self.paths[request.url.path] += 1
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return httpx.Response(401, json={"error": {"message": "Invalid API key", "type": "auth_error"}})
        handler = self.routes().get((request.method, request.url.path))
        if handler is None:
            return httpx.Response(404, json={"error": "404 page not found"})
        return handler(request)

    def chat(self, request: httpx.Request) -> httpx.Response | Awaitable[httpx.Response]:
        """The OpenAI-compatible chat route: passed through to the backend, or a scripted reply."""
        if self.backend is None:
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=scripted_chat())
        return self.forward(request, "/v1/chat/completions", _json_body(request))

    async def forward(
        self,
        request: httpx.Request,
        path: str,
        body: Any,
        transform: Callable[[httpx.Response], AsyncIterator[bytes]] | None = None,
    ) -> httpx.Response:
        """Send ``body`` to the backend and stream its answer back (optionally reshaped)."""
        assert self.backend is not None
        client = httpx.AsyncClient(trust_env=False, timeout=httpx.Timeout(60.0, connect=5.0))
        try:
            upstream = await client.send(
                client.build_request("POST", self.backend + path, json=body), stream=True
            )
        except BaseException:
            await client.aclose()
            raise
        if transform is not None and upstream.status_code == 200:
            headers = {"content-type": "application/x-ndjson"}
        else:
            headers = {"content-type": upstream.headers.get("content-type", "application/json")}
            transform = None
        return httpx.Response(
            upstream.status_code, headers=headers, stream=Relay(upstream, client, transform)
        )


#: The pre-tokenizer a GGUF of each architecture names (``tokenizer.ggml.pre``).
_PRE = {"qwen2": "qwen2", "llama": "llama-bpe"}


class FakeOllama(FakeServer):
    """Ollama: ``/api/version``, ``/api/ps``, ``/api/show``, ``/api/tags``, ``/api/chat``, ``/v1/...``.

    ``loaded`` maps the running models to their ``context_length`` (None: an older server that does not
    report it); ``modelfiles`` maps models to the ``num_ctx`` their Modelfile sets (None: not set).
    ``tools=False`` answers a request with tools as a model without tool support does. ``architectures``
    maps models to the GGUF architecture ``/api/show`` reports (``model_info``, ``details.family``;
    default ``llama``).
    """

    def __init__(
        self,
        backend: str | None = None,
        *,
        loaded: dict[str, int | None] | None = None,
        modelfiles: dict[str, int | None] | None = None,
        tools: bool = True,
        api_key: str | None = None,
        architectures: dict[str, str] | None = None,
    ) -> None:
        super().__init__(backend, api_key=api_key)
        self.architectures = architectures if architectures is not None else {}
        self.loaded = loaded if loaded is not None else {}
        self.modelfiles = modelfiles if modelfiles is not None else {}
        self.tools = tools

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/api/version"): lambda r: httpx.Response(200, json={"version": "0.12.6"}),
            ("GET", "/api/ps"): self.ps,
            ("POST", "/api/show"): self.show,
            ("GET", "/api/tags"): self.tags,
            ("POST", "/api/chat"): self.native_chat,
            ("POST", "/v1/chat/completions"): self.compatible_chat,
            ("GET", "/v1/models"): self.models,
        }

    def _known(self) -> list[str]:
        return list(dict.fromkeys([*self.loaded, *self.modelfiles]))

    def ps(self, request: httpx.Request) -> httpx.Response:
        models = []
        for name, context in self.loaded.items():
            entry: dict[str, Any] = {
                "name": name,
                "model": name,
                "size": 5137025024,
                "digest": "2ae6f6dd7a3dd734790bbbf58b8909a606e0e7e97e94b7604e0aa7ae4490e6d8",
                "details": {"format": "gguf", "family": "llama", "parameter_size": "8.0B"},
                "expires_at": "2099-06-04T14:38:31.83753-07:00",
                "size_vram": 5137025024,
            }
            if context is not None:
                entry["context_length"] = context
            models.append(entry)
        return httpx.Response(200, json={"models": models})

    def show(self, request: httpx.Request) -> httpx.Response:
        name = str((_json_body(request) or {}).get("model", ""))
        match = next((m for m in self._known() if _same(m, name)), None)
        if match is None:
            return httpx.Response(404, json={"error": f"model '{name}' not found"})
        num_ctx = self.modelfiles.get(match)
        arch = self.architectures.get(match, "llama")
        parameters = 'stop                           "<|eot_id|>"'
        if num_ctx is not None:
            parameters = f"num_ctx                        {num_ctx}\n" + parameters
        return httpx.Response(
            200,
            json={
                "modelfile": f"FROM {match}\n",
                "parameters": parameters,
                "template": "{{ .Prompt }}",
                "details": {"format": "gguf", "family": arch},
                "model_info": {
                    "general.architecture": arch,
                    f"{arch}.context_length": 131072,
                    "tokenizer.ggml.model": "gpt2",
                    **({"tokenizer.ggml.pre": _PRE[arch]} if arch in _PRE else {}),
                },
                "capabilities": ["completion", "tools"] if self.tools else ["completion"],
            },
        )

    def tags(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"models": [{"name": m, "model": m} for m in self._known()]})

    def models(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json={"object": "list", "data": [{"id": m, "object": "model"} for m in self._known()]}
        )

    def _refuse_tools(self, body: Any) -> httpx.Response | None:
        if not self.tools and isinstance(body, dict) and body.get("tools"):
            model = body.get("model", "")
            return httpx.Response(
                400, json={"error": f"registry.ollama.ai/library/{model} does not support tools"}
            )
        return None

    def _model_missing(self, body: Any) -> httpx.Response | None:
        model = body.get("model") if isinstance(body, dict) else None
        if model and not any(_same(m, str(model)) for m in self._known()):
            return httpx.Response(404, json={"error": f'model "{model}" not found, try pulling it first'})
        return None

    def compatible_chat(self, request: httpx.Request) -> httpx.Response | Awaitable[httpx.Response]:
        body = _json_body(request)
        refusal = self._refuse_tools(body) or self._model_missing(body)
        if refusal is not None:
            if refusal.status_code == 400:
                message = refusal.json()["error"]
                return httpx.Response(400, json={"error": {"message": message, "type": "api_error"}})
            return refusal
        return self.chat(request)

    def native_chat(self, request: httpx.Request) -> httpx.Response | Awaitable[httpx.Response]:
        body = _json_body(request)
        refusal = self._refuse_tools(body) or self._model_missing(body)
        if refusal is not None:
            return refusal
        model = str(body.get("model"))
        if self.backend is None:
            lines = [
                {
                    "model": model,
                    "created_at": _now(),
                    "message": {"role": "assistant", "content": "Hi"},
                    "done": False,
                },
                {
                    "model": model,
                    "created_at": _now(),
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": "stop",
                    "prompt_eval_count": 12,
                    "eval_count": 1,
                },
            ]
            content = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
            return httpx.Response(200, headers={"content-type": "application/x-ndjson"}, content=content)
        options = body.get("options") or {}
        upstream: dict[str, Any] = {
            "messages": _openai_messages(body.get("messages") or []),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if "num_predict" in options:
            upstream["max_tokens"] = options["num_predict"]
        if "temperature" in options:
            upstream["temperature"] = options["temperature"]
        if body.get("tools"):
            upstream["tools"] = body["tools"]
        return self.forward(request, "/v1/chat/completions", upstream, transform=_ndjson_from_sse(model))


def _same(a: str, b: str) -> bool:
    def tagged(name: str) -> str:
        return name if ":" in name.rsplit("/", 1)[-1] else name + ":latest"

    return tagged(a) == tagged(b)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


def _openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ollama chat messages as the OpenAI route takes them (arguments as JSON text)."""
    out = []
    for message in messages:
        converted = {"role": message.get("role"), "content": message.get("content", "")}
        if message.get("tool_calls"):
            converted["tool_calls"] = [
                {
                    "id": f"call_{n}",
                    "type": "function",
                    "function": {
                        "name": c["function"]["name"],
                        "arguments": json.dumps(c["function"]["arguments"]),
                    },
                }
                for n, c in enumerate(message["tool_calls"])
            ]
        out.append(converted)
    return out


def _ndjson_from_sse(model: str) -> Callable[[httpx.Response], AsyncIterator[bytes]]:
    """Reshape llama.cpp's SSE into Ollama's NDJSON stream (what Ollama itself does with its runner)."""

    async def transform(upstream: httpx.Response) -> AsyncIterator[bytes]:
        prompt = completion = 0
        reason = "stop"
        calls: dict[int, dict[str, Any]] = {}
        async for line in upstream.aiter_lines():
            if not line.startswith("data: "):
                continue
            data = line[len("data: ") :]
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            usage = chunk.get("usage") or {}
            prompt = usage.get("prompt_tokens", prompt)
            completion = usage.get("completion_tokens", completion)
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    message = {"role": "assistant", "content": delta["content"]}
                    yield _line({"model": model, "created_at": _now(), "message": message, "done": False})
                for piece in delta.get("tool_calls") or []:
                    call = calls.setdefault(piece.get("index", 0), {"name": "", "arguments": ""})
                    function = piece.get("function") or {}
                    call["name"] += function.get("name") or ""
                    call["arguments"] += function.get("arguments") or ""
                if choice.get("finish_reason"):
                    reason = "stop" if choice["finish_reason"] == "tool_calls" else choice["finish_reason"]
        if calls:
            tool_calls = [
                {"function": {"name": c["name"], "arguments": json.loads(c["arguments"] or "{}")}}
                for _, c in sorted(calls.items())
            ]
            message = {"role": "assistant", "content": "", "tool_calls": tool_calls}
            yield _line({"model": model, "created_at": _now(), "message": message, "done": False})
        yield _line(
            {
                "model": model,
                "created_at": _now(),
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": reason,
                "total_duration": 1,
                "prompt_eval_count": prompt,
                "eval_count": completion,
            }
        )

    return transform


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode() + b"\n"


class FakeLMStudio(FakeServer):
    """LM Studio: ``/api/v0/models`` with ``state`` and ``loaded_context_length`` (loaded models only)."""

    def __init__(self, backend: str | None = None, *, models: dict[str, int | None] | None = None) -> None:
        super().__init__(backend)
        # name → loaded context length; None: downloaded, not loaded
        self.models = models if models is not None else {}

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {**super().routes(), ("GET", "/api/v0/models"): self.listing, ("GET", "/v1/models"): self.v1}

    def listing(self, request: httpx.Request) -> httpx.Response:
        data = []
        for name, loaded in self.models.items():
            entry: dict[str, Any] = {
                "id": name,
                "object": "model",
                "type": "llm",
                "publisher": "lmstudio-community",
                "arch": "qwen2",
                "compatibility_type": "gguf",
                "quantization": "Q4_K_M",
                "state": "loaded" if loaded is not None else "not-loaded",
                "max_context_length": 32768,
            }
            if loaded is not None:
                entry["loaded_context_length"] = loaded
            data.append(entry)
        data.append({"id": "text-embedding-nomic", "type": "embeddings", "state": "not-loaded"})
        return httpx.Response(200, json={"object": "list", "data": data})

    def v1(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json={"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]}
        )


class FakeVLLM(FakeServer):
    """vLLM: ``/v1/models`` with ``max_model_len``, ``/version``; its over-long prompt wording.

    ``refuse_stream_options=True`` answers a body with ``stream_options`` as a server that does not know
    the field does (HTTP 400), to see the adapter drop it.
    """

    def __init__(
        self,
        backend: str | None = None,
        *,
        models: dict[str, int] | None = None,
        refuse_stream_options: bool = False,
    ) -> None:
        super().__init__(backend)
        self.models = models if models is not None else {"Qwen/Qwen2.5-Coder-7B-Instruct": 16384}
        self.refuse_stream_options = refuse_stream_options

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {
            **super().routes(),
            ("GET", "/v1/models"): self.listing,
            ("GET", "/version"): lambda r: httpx.Response(200, json={"version": "0.11.0"}),
            ("GET", "/health"): lambda r: httpx.Response(200),
        }

    def listing(self, request: httpx.Request) -> httpx.Response:
        data = [
            {"id": name, "object": "model", "owned_by": "vllm", "root": name, "max_model_len": length}
            for name, length in self.models.items()
        ]
        return httpx.Response(200, json={"object": "list", "data": data})

    def chat(self, request: httpx.Request) -> httpx.Response | Awaitable[httpx.Response]:
        body = _json_body(request) or {}
        if self.refuse_stream_options and "stream_options" in body:
            return httpx.Response(
                400,
                json={
                    "object": "error",
                    "message": "[{'type': 'extra_forbidden', 'loc': ('body', 'stream_options'), "
                    "'msg': 'Extra inputs are not permitted'}]",
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                },
            )
        model = body.get("model")
        if model is not None and model not in self.models:
            return httpx.Response(
                404,
                json={
                    "object": "error",
                    "message": f"The model `{model}` does not exist.",
                    "type": "NotFoundError",
                    "param": None,
                    "code": 404,
                },
            )
        return super().chat(request)


class FakeOpenWebUI(FakeServer):
    """Open WebUI: ``/api/config`` (its name), ``/api/version``, ``/api/models``, its chat route."""

    def __init__(self, backend: str | None = None, *, api_key: str | None = None) -> None:
        super().__init__(backend, api_key=api_key)

    def __call__(self, request: httpx.Request) -> httpx.Response | Awaitable[httpx.Response]:
        if request.url.path == "/api/config":  # answered without a key, as Open WebUI does
            self.requests.append(request)
            self.paths[request.url.path] += 1
            return httpx.Response(200, json={"status": True, "name": "Open WebUI", "version": "0.6.5"})
        return super().__call__(request)

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/api/version"): lambda r: httpx.Response(200, json={"version": "0.6.5"}),
            ("GET", "/api/models"): lambda r: httpx.Response(
                200, json={"data": [{"id": "llama3.1:8b", "name": "llama3.1:8b", "object": "model"}]}
            ),
            ("POST", "/api/chat/completions"): self.chat,
        }


class FakeTextGen(FakeServer):
    """text-generation-webui: ``/v1/internal/model/info`` and ``/v1/models`` (no window reported)."""

    def routes(self) -> dict[tuple[str, str], Handler]:
        return {
            **super().routes(),
            ("GET", "/v1/internal/model/info"): lambda r: httpx.Response(
                200, json={"model_name": "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "lora_names": []}
            ),
            ("GET", "/v1/models"): lambda r: httpx.Response(
                200,
                json={
                    "object": "list",
                    "data": [{"id": "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "object": "model"}],
                },
            ),
        }


class ScriptedStream:
    """A server whose chat route answers exactly the given body, in the given pieces (e.g. garbage)."""

    def __init__(
        self,
        pieces: list[bytes],
        *,
        status: int = 200,
        content_type: str = "text/event-stream",
        delay: float = 0.0,
    ) -> None:
        self.pieces = pieces
        self.status = status
        self.content_type = content_type
        self.delay = delay
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(
            self.status, headers={"content-type": self.content_type}, stream=Chunks(self.pieces, self.delay)
        )


class Hosts:
    """One transport for several fake servers, chosen by ``host:port`` (for discovery across ports).

    A host with no fake refuses the connection, as a closed port does.
    """

    def __init__(self, servers: dict[str, Handler]) -> None:
        self.servers = servers
        self.refused: Counter[str] = Counter()

    def __call__(self, request: httpx.Request) -> httpx.Response | Awaitable[httpx.Response]:
        key = f"{request.url.host}:{request.url.port}"
        server = self.servers.get(key)
        if server is None:
            self.refused[key] += 1
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        return server(request)
