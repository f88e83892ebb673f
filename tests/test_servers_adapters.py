"""The streaming adapters against fakes of the servers that cannot be installed here.

The fakes given ``backend=`` pass generation through to the real llama.cpp server, so those tests are
marked ``server``; the others answer with scripted bodies.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator

import httpx
import pytest
from fakes import Chunks, FakeOllama, FakeOpenWebUI, FakeServer, FakeVLLM, ScriptedStream, scripted_chat, sse
from fixtures_servers import GREP_TOOL, RunningServer, tool_call_messages

from twinny_magics.errors import (
    AuthRefused,
    MalformedStream,
    ModelNotFound,
    PromptTooLong,
    ServerError,
    StreamCut,
    ToolsRefused,
)
from twinny_magics.servers import (
    ChatEvent,
    ChatRequest,
    ConnectedServer,
    Finish,
    OllamaChatServer,
    OpenAIChatServer,
    ProbeCache,
    ServerInfo,
    TextChunk,
    ToolCalls,
    Usage,
    connect,
    discover,
)
from twinny_magics.servers.openai import CACHE_REUSE_CHUNK

HELLO = [{"role": "user", "content": "Say hello in three words."}]


async def collect(events: AsyncIterator[ChatEvent]) -> list[ChatEvent]:
    return [event async for event in events]


def client_for(fake: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(fake))  # type: ignore[arg-type]


def text_of(events: list[ChatEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


# --- the OpenAI-compatible route -----------------------------------------------------------------------


async def test_the_request_body_carries_model_tools_limits_extra_and_asks_for_usage() -> None:
    fake = FakeServer()
    info = ServerInfo("http://127.0.0.1:9999", "compatible", "m")
    request = ChatRequest(
        HELLO, tools=[GREP_TOOL], max_tokens=64, temperature=0.2, extra={"grammar": "root ::= x"}
    )
    async with client_for(fake) as client:
        events = await collect(OpenAIChatServer(info, client).stream(request))
    assert text_of(events) == "Hello there."
    body = fake.bodies("/v1/chat/completions")[0]
    assert body == {
        "messages": HELLO,
        "stream": True,
        "model": "m",
        "tools": [GREP_TOOL],
        "max_tokens": 64,
        "temperature": 0.2,
        "stream_options": {"include_usage": True},
        "grammar": "root ::= x",
    }


def test_only_llama_cpp_is_asked_to_reuse_its_cache_past_a_trim_and_extra_can_turn_it_off() -> None:
    client = httpx.AsyncClient()
    llama = OpenAIChatServer(ServerInfo("http://127.0.0.1:8080", "llamacpp", "m"), client)
    assert llama.body(ChatRequest(HELLO))["n_cache_reuse"] == CACHE_REUSE_CHUNK
    assert llama.body(ChatRequest(HELLO, extra={"n_cache_reuse": 0}))["n_cache_reuse"] == 0
    for kind in ("compatible", "vllm", "lmstudio", "gateway"):
        other = OpenAIChatServer(ServerInfo("http://127.0.0.1:8080", kind, "m"), client)  # type: ignore[arg-type]
        assert "n_cache_reuse" not in other.body(ChatRequest(HELLO))  # a hosted API may refuse the field
    assert ConnectedServer(ServerInfo("http://127.0.0.1:8080", "llamacpp", "m")).reuses_cache
    assert not ConnectedServer(ServerInfo("http://127.0.0.1:11434", "ollama", "m")).reuses_cache


async def test_stream_options_are_dropped_and_not_asked_again_when_a_server_refuses_them() -> None:
    fake = FakeVLLM(refuse_stream_options=True)
    info = ServerInfo("http://127.0.0.1:8000", "vllm", "Qwen/Qwen2.5-Coder-7B-Instruct")
    async with client_for(fake) as client:
        server = OpenAIChatServer(info, client)
        first = await collect(server.stream(ChatRequest(HELLO)))
        second = await collect(server.stream(ChatRequest(HELLO)))
    assert text_of(first) == text_of(second) == "Hello there."
    assert ["stream_options" in body for body in fake.bodies("/v1/chat/completions")] == [True, False, False]
    assert server.include_usage is False


async def test_a_connected_server_remembers_the_refusal_across_replies() -> None:
    fake = FakeVLLM(refuse_stream_options=True)
    info = ServerInfo("http://127.0.0.1:8000", "vllm", "Qwen/Qwen2.5-Coder-7B-Instruct")
    server = ConnectedServer(info, client_factory=lambda _: client_for(fake), cache=ProbeCache())
    await collect(server.stream(ChatRequest(HELLO)))
    await collect(server.stream(ChatRequest(HELLO)))
    assert fake.count("/v1/chat/completions") == 3


async def test_a_missing_model_on_vllm_is_model_not_found() -> None:
    info = ServerInfo("http://127.0.0.1:8000", "vllm", "no-such-model")
    async with client_for(FakeVLLM()) as client:
        with pytest.raises(ModelNotFound, match="no-such-model"):
            await collect(OpenAIChatServer(info, client).stream(ChatRequest(HELLO)))


async def test_a_wrong_key_is_auth_refused() -> None:
    fake = FakeOpenWebUI(api_key="sk-right")
    async with client_for(fake) as client:
        wrong = OpenAIChatServer(ServerInfo("http://127.0.0.1:3000", "openwebui", "m", "sk-wrong"), client)
        with pytest.raises(AuthRefused):
            await collect(wrong.stream(ChatRequest(HELLO)))
        right = OpenAIChatServer(ServerInfo("http://127.0.0.1:3000", "openwebui", "m", "sk-right"), client)
        assert text_of(await collect(right.stream(ChatRequest(HELLO)))) == "Hello there."
    assert fake.requests[-1].url.path == "/api/chat/completions"


@pytest.mark.parametrize(
    ("pieces", "error"),
    [
        ([b"<html><body>502 Bad Gateway</body></html>"], MalformedStream),
        ([b"data: {not json}\n\n"], MalformedStream),
        ([sse({"choices": [{"index": 0, "delta": {"content": "Hal"}}]})], StreamCut),
        ([b'data: {"error": {"message": "out of memory", "code": 500}}\n\n'], ServerError),
        ([b'error: {"code": 500, "message": "slot unavailable"}\n\n'], ServerError),
    ],
)
async def test_a_broken_stream_is_one_of_our_errors(pieces: list[bytes], error: type[ServerError]) -> None:
    info = ServerInfo("http://127.0.0.1:9999", "compatible", "m")
    async with client_for(ScriptedStream(pieces)) as client:
        with pytest.raises(error):
            await collect(OpenAIChatServer(info, client).stream(ChatRequest(HELLO)))


async def test_a_stream_in_one_byte_pieces_reads_the_same() -> None:
    body = scripted_chat("One byte at a time.")
    info = ServerInfo("http://127.0.0.1:9999", "compatible", "m")
    async with client_for(ScriptedStream([body[i : i + 1] for i in range(len(body))])) as client:
        events = await collect(OpenAIChatServer(info, client).stream(ChatRequest(HELLO)))
    assert text_of(events) == "One byte at a time."
    assert events[-2:] == [Usage(11, 5, None), Finish("stop")]


async def test_a_server_that_ignores_stream_and_answers_json_is_read() -> None:
    whole = {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Whole."}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2},
    }
    fake = ScriptedStream([json.dumps(whole).encode()], content_type="application/json")
    async with client_for(fake) as client:
        events = await collect(
            OpenAIChatServer(ServerInfo("http://h:1", "compatible"), client).stream(ChatRequest(HELLO))
        )
    assert events == [TextChunk("Whole."), Usage(7, 2, None), Finish("stop")]


async def test_a_refusal_mid_stream_from_litellm_is_prompt_too_long() -> None:
    error = {
        "error": {
            "message": "litellm.ContextWindowExceededError: request (3031 tokens) exceeds the available "
            "context size (2048 tokens)",
            "code": "400",
        }
    }
    async with client_for(ScriptedStream([sse(error)])) as client:
        with pytest.raises(PromptTooLong) as caught:
            await collect(
                OpenAIChatServer(ServerInfo("http://h:1", "litellm"), client).stream(ChatRequest(HELLO))
            )
    assert (caught.value.prompt_tokens, caught.value.window) == (3031, 2048)


async def test_tokenize_is_none_where_the_server_has_no_such_route() -> None:
    fake = FakeVLLM()
    async with client_for(fake) as client:
        assert await OpenAIChatServer(ServerInfo("http://h:1", "vllm"), client).tokenize("hi") is None
        compatible = OpenAIChatServer(ServerInfo("http://h:1", "compatible"), client)
        assert await compatible.tokenize("hi") is None
        assert await compatible.tokenize("hi") is None
    assert fake.count("/tokenize") == 1  # asked once, then remembered


def test_text_generation_webui_is_offered_no_native_tools() -> None:
    assert ConnectedServer(ServerInfo("http://127.0.0.1:5000", "textgen", "m")).takes_tools is False
    assert ConnectedServer(ServerInfo("http://127.0.0.1:8080", "llamacpp", "m")).takes_tools is True


# --- Ollama -----------------------------------------------------------------------------------------------

OLLAMA = ServerInfo("http://127.0.0.1:11434", "ollama", "llama3")


async def test_ollama_without_a_window_asked_uses_the_openai_route() -> None:
    fake = FakeOllama(loaded={"llama3:latest": 4096})
    async with client_for(fake) as client:
        events = await collect(OllamaChatServer(OLLAMA, client).stream(ChatRequest(HELLO)))
    assert text_of(events) == "Hello there."
    assert fake.count("/v1/chat/completions") == 1
    assert fake.count("/api/chat") == 0


async def test_ollama_with_a_window_asked_uses_api_chat_with_num_ctx() -> None:
    fake = FakeOllama(loaded={"llama3:latest": 4096})
    request = ChatRequest(HELLO, max_tokens=30, temperature=0, num_ctx=8192, extra={"keep_alive": "5m"})
    async with client_for(fake) as client:
        events = await collect(OllamaChatServer(OLLAMA, client).stream(request))
    assert events == [TextChunk("Hi"), Usage(12, 1, None), Finish("stop")]
    body = fake.bodies("/api/chat")[0]
    assert body["options"] == {"num_ctx": 8192, "num_predict": 30, "temperature": 0}
    assert body["keep_alive"] == "5m"
    assert body["model"] == "llama3"


async def test_a_connected_ollama_sends_the_asked_window_and_plans_with_it() -> None:
    fake = FakeOllama(loaded={"llama3:latest": 4096})
    server = ConnectedServer(
        OLLAMA, window=8192, client_factory=lambda _: client_for(fake), cache=ProbeCache()
    )
    assert await server.context_window() == 8192
    await collect(server.stream(ChatRequest(HELLO)))
    assert fake.bodies("/api/chat")[0]["options"]["num_ctx"] == 8192
    plain = ConnectedServer(OLLAMA, client_factory=lambda _: client_for(fake), cache=ProbeCache())
    assert await plain.context_window() == 4096


async def test_ollama_tool_history_is_sent_with_arguments_as_objects() -> None:
    fake = FakeOllama(loaded={"llama3:latest": 4096})
    messages = [*tool_call_messages("x")[-3:], {"role": "tool", "name": "grep", "content": "a.py:1: x"}]
    async with client_for(fake) as client:
        await collect(OllamaChatServer(OLLAMA, client).stream(ChatRequest(messages, num_ctx=4096)))
    sent = fake.bodies("/api/chat")[0]["messages"]
    assert sent[1]["tool_calls"] == [{"function": {"name": "grep", "arguments": {"pattern": "qux"}}}]
    assert sent[1]["content"] == ""
    assert sent[-1] == {"role": "tool", "content": "a.py:1: x", "tool_name": "grep"}


@pytest.mark.parametrize("num_ctx", [None, 8192])
async def test_an_ollama_model_without_tool_support_is_tools_refused(num_ctx: int | None) -> None:
    fake = FakeOllama(loaded={"gemma:2b": 4096}, tools=False)
    info = ServerInfo("http://127.0.0.1:11434", "ollama", "gemma:2b")
    async with client_for(fake) as client:
        with pytest.raises(ToolsRefused, match="does not support tools"):
            await collect(
                OllamaChatServer(info, client).stream(ChatRequest(HELLO, tools=[GREP_TOOL], num_ctx=num_ctx))
            )


@pytest.mark.parametrize("num_ctx", [None, 8192])
async def test_an_ollama_model_not_pulled_is_model_not_found(num_ctx: int | None) -> None:
    info = ServerInfo("http://127.0.0.1:11434", "ollama", "mistral")
    async with client_for(FakeOllama(loaded={"llama3:latest": 4096})) as client:
        with pytest.raises(ModelNotFound, match="mistral"):
            await collect(OllamaChatServer(info, client).stream(ChatRequest(HELLO, num_ctx=num_ctx)))


async def test_an_ollama_stream_cut_before_done_is_a_stream_cut() -> None:
    line = json.dumps({"model": "llama3", "message": {"role": "assistant", "content": "Hal"}, "done": False})
    fake = ScriptedStream([line.encode() + b"\n"], content_type="application/x-ndjson")
    async with client_for(fake) as client:
        with pytest.raises(StreamCut):
            await collect(OllamaChatServer(OLLAMA, client).stream(ChatRequest(HELLO, num_ctx=4096)))


# --- fakes passing generation through to the real llama.cpp server --------------------------------------


@pytest.mark.server
async def test_ollama_api_chat_streams_a_real_reply_through_the_fake(llama_server: RunningServer) -> None:
    fake = FakeOllama(llama_server.base_url, loaded={"smollm2:latest": 2048})
    info = ServerInfo("http://127.0.0.1:11434", "ollama", "smollm2")
    async with client_for(fake) as client:
        events = await collect(
            OllamaChatServer(info, client).stream(ChatRequest(HELLO, max_tokens=8, num_ctx=2048))
        )
    assert text_of(events).strip()
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.prompt_tokens is not None
    assert usage.prompt_tokens > 10
    assert usage.completion_tokens is not None
    assert 0 < usage.completion_tokens <= 8
    assert isinstance(events[-1], Finish)


@pytest.mark.server
async def test_ollama_api_chat_gives_a_real_tool_call_with_object_arguments(
    tool_server: RunningServer,
) -> None:
    fake = FakeOllama(tool_server.base_url, loaded={"smollm2:latest": 2048})
    info = ServerInfo("http://127.0.0.1:11434", "ollama", "smollm2")
    request = ChatRequest(
        tool_call_messages("createServer"), tools=[GREP_TOOL], temperature=0, max_tokens=40, num_ctx=2048
    )
    async with client_for(fake) as client:
        events = await collect(OllamaChatServer(info, client).stream(request))
    calls = next(e for e in events if isinstance(e, ToolCalls))
    assert [(c.name, c.arguments) for c in calls.calls] == [("grep", {"pattern": "createServer"})]


@pytest.mark.server
async def test_a_vllm_fake_refusing_stream_options_still_streams_real_text(
    llama_server: RunningServer,
) -> None:
    fake = FakeVLLM(llama_server.base_url, models={"smollm2": 2048}, refuse_stream_options=True)
    info = ServerInfo("http://127.0.0.1:8000", "vllm", "smollm2")
    async with client_for(fake) as client:
        events = await collect(OpenAIChatServer(info, client).stream(ChatRequest(HELLO, max_tokens=6)))
    assert text_of(events).strip()
    assert not any(isinstance(e, Usage) for e in events)  # asked without include_usage: none sent
    assert isinstance(events[-1], Finish)


@pytest.mark.server
async def test_a_real_refusal_passes_through_a_fake_as_prompt_too_long(llama_server: RunningServer) -> None:
    fake = FakeVLLM(llama_server.base_url, models={"smollm2": 2048})
    info = ServerInfo("http://127.0.0.1:8000", "vllm", "smollm2")
    async with client_for(fake) as client:
        with pytest.raises(PromptTooLong) as caught:
            await collect(
                OpenAIChatServer(info, client).stream(
                    ChatRequest([{"role": "user", "content": "word " * 3000}])
                )
            )
    assert caught.value.window == 2048


@pytest.mark.server
def test_connect_with_nothing_configured_falls_back_to_the_embedded_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OLLAMA_HOST", "OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    if discover(os.environ) is not None:
        pytest.skip("a model server runs on one of the usual local ports here")
    server = connect(window=1024, cache=ProbeCache())
    try:
        assert server.embedded is not None
        assert (server.kind, server.model) == ("llamacpp", "smollm2")
        assert server.info.base_url == server.embedded.base_url
    finally:
        assert server.embedded is not None
        server.embedded.stop()


async def test_stopping_a_reply_closes_the_fakes_stream() -> None:
    closed: list[bool] = []

    class Tracked(Chunks):
        async def aclose(self) -> None:
            closed.append(True)

    body = scripted_chat("a b c d e f g h")

    def answer(request: httpx.Request) -> httpx.Response:
        pieces = [body[i : i + 20] for i in range(0, len(body), 20)]
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Tracked(pieces))

    async with client_for(answer) as client:
        stream = OpenAIChatServer(ServerInfo("http://h:1", "compatible"), client).stream(ChatRequest(HELLO))
        assert isinstance(await anext(stream), TextChunk)
        await stream.aclose()
    assert closed == [True]


@pytest.mark.parametrize(
    ("model", "architecture", "family", "shown"),
    [
        ("team-coder", "qwen2", ("qwen2", "the server's description of the model"), 1),  # an alias
        ("qwen2.5-coder:1.5b", "qwen2", ("qwen2", "the model's name"), 0),  # the name tells: not asked
        ("team-coder", "bert", None, 1),  # asked, not a family we weigh: SmolLM2's, learned from counts
    ],
)
async def test_the_text_weights_follow_the_model_the_server_describes(
    tmp_path: object, model: str, architecture: str, family: tuple[str, str] | None, shown: int
) -> None:
    from twinny_magics import Agent
    from twinny_magics.text_tokens import FAMILY_WEIGHTS, SMOLLM2_WEIGHTS, TextTokens

    name = model if ":" in model else model + ":latest"
    fake = FakeOllama(loaded={name: 4096}, architectures={name: architecture})
    server = ConnectedServer(
        ServerInfo("http://127.0.0.1:11434", "ollama", model),
        client_factory=lambda _: client_for(fake),
        cache=ProbeCache(),
    )
    agent = Agent(server=server, workspace=str(tmp_path))
    reply = await agent.arun("Hello?")
    assert reply.text
    loop = agent._loop
    assert loop is not None
    assert loop.family == family
    weights = FAMILY_WEIGHTS[family[0]] if family else SMOLLM2_WEIGHTS
    assert loop.counter.text.weights == TextTokens(weights).weights
    assert fake.count("/api/show") == shown
