"""Security issue 17, the server side: what a hostile (or careless) model server can do to a session.

- A server that ignores ``max_tokens`` and streams for ever: the reply is cut near its limit, the stream
  closed, memory bounded, and the user told (the loop's reply cap); a server that sends bytes but no
  reply (keep-alives for ever) is closed by the adapters' byte limit.
- A refusal that echoes the API key (a 401 body, a ``Bearer`` header dump, an error inside a stream):
  the key is masked in every message, notice, ``Reply.error``, exception and body.
- A key sent over plain http to a host that is not this machine: one warning a session, never a block.
- Absurd numbers (``1e400``, ``10**400``, ``NaN``, ``-1``, booleans, 5,000 digits) where a window or a
  count belongs: the probe says None or a sane int, usage is None or a sane int, nothing raises.

On the real fault server of ``tests/hostile_server.py`` (a socket, HTTP/1.1 by hand), httpx's
``MockTransport`` seam, and the real llama.cpp server where honest behaviour matters.
"""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fixtures_servers import RunningServer
from hostile_server import (
    MODEL,
    TRACEBACK,
    Answer,
    HostileServer,
    agent_shell,
    delta,
    event,
    json_answer,
    run_cell,
    text,
    text_pieces,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.errors import AuthRefused, MalformedStream, PromptTooLong, ServerError, StreamCut
from twinny_magics.events import Event, Notice, Reply
from twinny_magics.loop import Loop, LoopSettings, reply_char_cap
from twinny_magics.redact import MASK
from twinny_magics.servers import (
    ChatRequest,
    ConnectedServer,
    OllamaChatServer,
    OllamaStreamParser,
    OpenAIChatServer,
    OpenAIStreamParser,
    ProbeCache,
    ServerInfo,
    Usage,
    probe_context_window,
)
from twinny_magics.servers.base import ChatEvent, Finish, TextChunk
from twinny_magics.servers.kinds import is_loopback_host, plaintext_key_warning
from twinny_magics.servers.numbers import MAX_COUNT, MAX_WINDOW, checked_int, token_count, window_size
from twinny_magics.servers.refusals import error_from_exception, error_from_response, too_long_numbers
from twinny_magics.servers.wire import stream_byte_limit

HELLO = [{"role": "user", "content": "Say hello."}]
CUT_NOTICE = "kept writing past the reply limit"


@pytest.fixture
def server() -> Iterator[HostileServer]:
    """The fault server, healthy until a test queues a fault, window 8,192."""
    with HostileServer(window=8192) as running:
        yield running


class Endless(list[bytes]):
    """An answer's pieces without end: ``head``, then ``piece`` for ever (counted in ``sent``).

    A list to the fault server (``Answer.pieces``), but iterating it never stops, and no ``USAGE``
    placeholder is ever found in it.
    """

    def __init__(self, head: list[bytes], piece: bytes) -> None:
        super().__init__(head)
        self.piece = piece
        self.sent = 0

    def __iter__(self) -> Iterator[bytes]:
        yield from list.__iter__(self)
        while True:
            self.sent += 1
            yield self.piece

    def __contains__(self, item: object) -> bool:
        return False


def endless_text() -> Endless:
    """A reply that never finishes: the server ignores ``max_tokens`` and writes "word " for ever."""
    return Endless([event(delta(role="assistant", content=""))], event(delta("word ")))


def notices(reply: Reply, kind: str | None = None) -> list[str]:
    return [n.text for n in reply.notices if kind is None or n.kind == kind]


# --- 1. the reply cap -------------------------------------------------------------------------------


def test_a_server_that_streams_for_ever_is_cut_near_the_reply_limit_with_a_notice(
    server: HostileServer, tmp_path: Path
) -> None:
    pieces = endless_text()
    server.queue(Answer(pieces=pieces))
    agent = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path)
    events: list[Event] = []
    tracemalloc.start()
    started = time.monotonic()
    try:
        reply = agent.run("Say something.", events.append)
        seconds = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [record] = reply.requests
    cap = reply_char_cap(record_reply_tokens(server))
    assert reply.stopped == "answer"
    assert reply.text.startswith("word word")
    assert len(reply.text) <= cap
    assert len(reply.text) > cap - 100  # kept what came, up to the cap
    assert record.finish_reason == "length"
    [notice] = notices(reply, "warning")
    assert notice == ("The server kept writing past the reply limit of 1,638 tokens; the reply was cut.")
    assert any(isinstance(e, Notice) and CUT_NOTICE in e.text for e in events)
    # Bounded: a fraction of a second and a few MB, against 24 MB of answer in 12 s before.
    assert seconds < 5, seconds
    assert peak < 24 * 1024 * 1024, peak
    # The stream was closed: the server stops being read, and the next reply is answered.
    assert agent.run("And now?").text == "All good here."
    print(
        f"cut at {len(reply.text):,} chars in {seconds:.2f} s, peak {peak / 1e6:.1f} MB, {pieces.sent:,} sent"
    )


def record_reply_tokens(server: HostileServer) -> int:
    """The ``max_tokens`` the loop asked of the fault server in its first chat request."""
    tokens: int = server.bodies[0]["max_tokens"]
    return tokens


def test_the_cut_notice_shows_in_the_cell_and_the_next_cell_answers(
    server: HostileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.queue(Answer(pieces=endless_text()))
    with agent_shell(tmp_path, monkeypatch) as ip:
        cell = run_cell(ip, server, "Say something.")
        assert cell.success, cell.text
        assert TRACEBACK not in cell.text
        assert "kept writing past the reply limit of 1,638 tokens; the reply was cut" in cell.text
        assert "All good here." in run_cell(ip, server, "Again?").text


class ForeverServer:
    """A model server object that streams text for ever, and records whether its stream was closed."""

    kind = "scripted"
    model = "forever"

    def __init__(self) -> None:
        self.closed = False
        self.pieces = 0

    async def context_window(self) -> int:
        return 2048

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        try:
            while True:
                self.pieces += 1
                yield TextChunk("abcdefghij" * 10)
                await asyncio.sleep(0)
        finally:
            self.closed = True


class NoTools:
    def definitions(self) -> list[dict[str, Any]]:
        return []

    async def run(self, call: ToolCall) -> Any:
        raise AssertionError("no tool runs")


def test_the_loop_closes_the_stream_it_cut_and_keeps_exactly_the_cap() -> None:
    server = ForeverServer()
    reply = asyncio.run(Loop(server, NoTools()).reply("Talk."))
    assert server.closed
    plan_reply = 409  # a 2,048-token window
    assert len(reply.text) == reply_char_cap(plan_reply) == 409 * 8 + 2000
    assert server.pieces == reply_char_cap(plan_reply) // 100 + 1
    assert reply.requests[0].finish_reason == "length"
    assert any(CUT_NOTICE in n for n in notices(reply))


def test_a_server_that_sends_bytes_but_never_a_reply_is_closed_at_the_byte_limit(
    server: HostileServer,
) -> None:
    # Keep-alive comments for ever: no text, so the reply cap never sees anything; the bytes are counted.
    keepalive = b": " + b"k" * 65_000 + b"\n"
    server.queue(Answer(pieces=Endless([event(delta(role="assistant", content=""))], keepalive)))
    info = ServerInfo(server.url, "llamacpp", MODEL)

    async def go() -> None:
        async with httpx.AsyncClient(trust_env=False) as client:
            adapter = OpenAIChatServer(info, client)
            async for _ in adapter.stream(ChatRequest(HELLO, max_tokens=16)):
                pass

    started = time.monotonic()
    with pytest.raises(StreamCut, match="without finishing a reply of at most 16 tokens") as caught:
        asyncio.run(go())
    assert time.monotonic() - started < 10
    assert f"{stream_byte_limit(16):,}"[:3] in str(caught.value)


def test_an_error_body_of_any_size_is_read_only_to_its_limit(server: HostileServer) -> None:
    server.queue(Answer(500, pieces=Endless([], b"x" * 65_000), content_type="text/plain"))
    info = ServerInfo(server.url, "llamacpp", MODEL)

    async def go() -> None:
        async with httpx.AsyncClient(trust_env=False) as client:
            async for _ in OpenAIChatServer(info, client).stream(ChatRequest(HELLO, max_tokens=16)):
                pass

    with pytest.raises(MalformedStream, match="ran past 16,777,216 bytes"):
        asyncio.run(go())


@pytest.mark.server
def test_an_honest_server_at_its_max_tokens_is_never_cut(llama_server: RunningServer) -> None:
    """SmolLM2 made to write to ``max_tokens`` (``ignore_eos``): the server ends it, not the cap."""
    loop = Loop(
        ConnectedServer(llama_server.info, cache=ProbeCache()),
        NoTools(),
        settings=LoopSettings(steps=1, temperature=0.0, extra={"ignore_eos": True, "seed": 7}),
    )
    reply = asyncio.run(loop.reply("Write a long story about a lighthouse keeper."))
    [record] = reply.requests
    assert record.finish_reason == "length"  # the server's own
    assert record.completion_tokens == 409  # the reply share of a 2,048-token window
    assert not [n for n in notices(reply) if CUT_NOTICE in n]
    ratio = len(reply.text) / 409
    cap = reply_char_cap(409)
    print(f"honest reply: {len(reply.text):,} chars for 409 tokens ({ratio:.2f} chars/token); cap {cap:,}")
    assert len(reply.text) < reply_char_cap(409) / 2


# --- 2. secrets in errors --------------------------------------------------------------------------

KEY = "hunter2-local-gateway-key-3141592653"  # not a known key shape: only the session's key finds it
SHAPED = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2  # an OpenAI-shaped key that is not the session's


def echoing_401(request: httpx.Request) -> httpx.Response:
    """A gateway whose 401 echoes the key it got and dumps the request's headers."""
    sent = request.headers.get("authorization", "")
    body = {
        "error": {
            "message": f"Invalid API key {sent.removeprefix('Bearer ')!r}; request headers: "
            f"Authorization: {sent}; other key seen {SHAPED}",
            "type": "auth_error",
            "code": 401,
        }
    }
    return httpx.Response(401, json=body)


def assert_hidden(*texts: str | None) -> None:
    for said in texts:
        if said is None:
            continue
        assert KEY not in said, said
        assert KEY[:12] not in said, said
        assert SHAPED[:16] not in said, said


def connected(handler: Any, url: str = "http://127.0.0.1:4000", key: str = KEY) -> ConnectedServer:
    info = ServerInfo(url, "litellm", "smollm2", key)

    def factory(_: ServerInfo) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(handler))

    return ConnectedServer(info, client_factory=factory, cache=ProbeCache())


def test_a_401_that_echoes_the_key_shows_and_keeps_it_nowhere() -> None:
    agent = Agent(server=connected(echoing_401), tools=NoTools())
    events: list[Event] = []
    reply = agent.run("Hello?", events.append)
    assert reply.stopped == "error"
    assert reply.error is not None
    assert "refused the API key (HTTP 401)" in reply.error
    assert MASK in reply.error
    assert_hidden(reply.error, *notices(reply), *(e.text for e in events if isinstance(e, Notice)))
    assert_hidden(repr(reply))


async def test_the_adapter_errors_themselves_carry_no_key() -> None:
    info = ServerInfo("http://127.0.0.1:4000", "litellm", "smollm2", KEY)
    async with httpx.AsyncClient(transport=httpx.MockTransport(echoing_401)) as client:
        for adapter in (OpenAIChatServer(info, client), OllamaChatServer(info, client)):
            for request in (ChatRequest(HELLO), ChatRequest(HELLO, num_ctx=4096)):
                with pytest.raises(AuthRefused) as caught:
                    async for _ in adapter.stream(request):
                        pass
                error = caught.value
                assert_hidden(str(error), error.body, repr(error), repr(error.args))
                assert error.status == 401


def echo_in_stream(request: httpx.Request) -> httpx.Response:
    """A stream that begins, then sends an error event echoing the key (LiteLLM-style, after the 200)."""
    sent = request.headers.get("authorization", "")
    body = event(delta("Hi")) + f'error: {{"message": "upstream refused {sent}", "code": 500}}\n\n'.encode()
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


def garbled_echo(request: httpx.Request) -> httpx.Response:
    """A stream line that is not JSON and holds the key (a proxy's debugging output)."""
    sent = request.headers.get("authorization", "")
    return httpx.Response(
        200, content=f"data: {{not json {sent}\n\n".encode(), headers={"content-type": "text/event-stream"}
    )


def long_body_echo(request: httpx.Request) -> httpx.Response:
    """A 500 whose key straddles the point where the shown body is cut (500 characters)."""
    return httpx.Response(500, content=("x" * 490 + KEY + " and " + SHAPED).encode())


@pytest.mark.parametrize("handler", [echo_in_stream, garbled_echo, long_body_echo])
def test_any_error_that_echoes_the_key_is_masked(handler: Any) -> None:
    reply = Agent(server=connected(handler), tools=NoTools()).run("Hello?")
    assert reply.stopped == "error"
    assert_hidden(reply.error, *notices(reply))


def test_refusal_messages_mask_the_session_key_before_they_are_cut() -> None:
    text = json.dumps({"error": {"message": "y" * 495 + KEY, "code": 401}})
    error = error_from_response(401, text, secret=KEY)
    assert_hidden(str(error), error.body)
    # Credential shapes are masked even when the key is not the session's (or there is none).
    error = error_from_response(403, f"Authorization: Bearer {SHAPED}")
    assert_hidden(str(error), error.body)
    assert MASK in str(error)


def test_a_connection_error_naming_a_url_with_a_password_hides_it() -> None:
    url = f"http://admin:{KEY}@10.0.0.7:8080/v1/chat/completions"
    error = error_from_exception(httpx.ConnectError(f"cannot reach {url}"), url=url, started=False)
    assert_hidden(str(error))
    assert "10.0.0.7" in str(error)


def test_a_server_error_made_anywhere_masks_key_shapes() -> None:
    error = ServerError(f"the server said: Bearer {SHAPED}", body=f'{{"key": "{SHAPED}"}}')
    assert_hidden(str(error), error.body)


def test_the_cell_of_a_401_echoing_the_key_shows_it_nowhere(
    server: HostileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.queue(
        json_answer(
            401,
            {"error": {"code": 401, "message": f"Invalid key {KEY}. Headers: Authorization: Bearer {KEY}"}},
        )
    )
    with agent_shell(tmp_path, monkeypatch) as ip:
        cell = run_cell(ip, server, "Hello?", f"--api-key {KEY}")
        assert cell.success, cell.text
        assert "refused the API key" in cell.text
        assert_hidden(cell.text)
        session = ip.run_line_magic("agent", "")
        assert_hidden(session.replies[-1].error, repr(session.replies[-1]))


@pytest.mark.server
@pytest.mark.timeout(120)
async def test_the_real_gateway_refusing_a_wrong_key_shows_none_of_it(gateway: RunningServer) -> None:
    wrong = "sk-" + "wrongkeywrongkey" * 3
    info = ServerInfo(gateway.base_url, "litellm", "smollm2", wrong)
    async with httpx.AsyncClient(trust_env=False) as client:
        with pytest.raises(AuthRefused) as caught:
            async for _ in OpenAIChatServer(info, client).stream(ChatRequest(HELLO, max_tokens=4)):
                pass
    said = f"{caught.value} {caught.value.body}"
    print(said)
    assert "wrongkey" not in said


# --- 3. a key over plain http ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "warned"),
    [
        ("http://127.0.0.1:8080", False),
        ("http://127.8.0.1:8080", False),
        ("http://localhost:11434", False),
        ("http://LOCALHOST.:11434", False),
        ("http://gpu.localhost:8000", False),
        ("http://[::1]:8000", False),
        ("https://api.example.com", False),
        ("https://10.0.0.5:8443", False),
        ("http://10.0.0.5:8080", True),  # a private LAN: still plaintext on a network
        ("http://192.168.1.20:4000", True),
        ("http://gpu-box.lan:8000", True),
        ("http://api.example.com/v1", True),
        ("http://[fd00::5]:8000", True),
        ("10.0.0.5:8080", True),  # no scheme is http
    ],
)
def test_a_key_over_plain_http_to_another_machine_is_warned_of(url: str, warned: bool) -> None:
    warning = plaintext_key_warning(url, "k" * 20)
    assert (warning is not None) == warned, warning
    assert plaintext_key_warning(url, None) is None
    if warning:
        assert "plain http" in warning
        assert "k" * 20 not in warning


def test_loopback_is_only_this_machine() -> None:
    assert is_loopback_host("127.0.0.1")
    assert is_loopback_host("::1")
    assert not is_loopback_host("10.0.0.1")
    assert not is_loopback_host("localhost.example.com")
    assert not is_loopback_host(None)


def healthy(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/model/info":
        return httpx.Response(200, json={"data": [{"model_name": "smollm2", "model_info": {}}]})
    body = b"".join(text_pieces("Fine.", usage=12))
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


def test_the_session_warns_once_and_still_answers() -> None:
    agent = Agent(server=connected(healthy, url="http://192.168.1.20:4000"), tools=NoTools())
    first, second = agent.run("One?"), agent.run("Two?")
    assert first.text == second.text == "Fine."
    [warning] = notices(first, "warning")
    assert "The API key goes to 192.168.1.20 over plain http" in warning
    assert notices(second, "warning") == []


@pytest.mark.parametrize(("url", "key"), [("http://127.0.0.1:4000", KEY), ("http://10.1.1.1:4000", None)])
def test_no_warning_on_this_machine_or_without_a_key(url: str, key: str | None) -> None:
    agent = Agent(server=connected(healthy, url=url, key=key), tools=NoTools())  # type: ignore[arg-type]
    assert notices(agent.run("One?"), "warning") == []


# --- 4. numbers from a server ----------------------------------------------------------------------

#: Raw JSON number texts (and things where a number belongs): Python reads 1e400 as inf, refuses 5,000
#: digits in int(), and takes NaN/Infinity.
HOSTILE_NUMBERS = [
    "1e400",
    "-1e400",
    "1e309",
    "NaN",
    "Infinity",
    "-Infinity",
    "9" * 5000,
    "-" + "9" * 5000,
    "1" + "0" * 400,
    "-1",
    "0",
    "-0",
    "true",
    "false",
    "null",
    "8192.5",
    "8192.0",
    "1E8",
    "100000001",
    "1e-400",
    '"8192"',
    '" 4096 "',
    '"\u00b2"',
    '"' + "9" * 5000 + '"',
    '"-5"',
    '"0x2000"',
    "[8192]",
    '{"n": 8192}',
]
number_texts = st.one_of(
    st.sampled_from(HOSTILE_NUMBERS),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)


def probe_answers(kind: str, number: str) -> dict[str, str]:
    """What each window route answers, ``number`` where the window belongs (raw JSON text)."""
    info = f'{{"max_input_tokens": {number}}}'
    return {
        "llamacpp": {"/props": f'{{"default_generation_settings": {{"n_ctx": {number}}}}}'},
        "ollama": {
            "/api/ps": f'{{"models": [{{"name": "m:latest", "context_length": {number}}}]}}',
            "/api/show": json.dumps({"parameters": f"num_ctx {number}\nstop x"}),
        },
        "lmstudio": {"/api/v0/models": f'{{"data": [{{"id": "m", "loaded_context_length": {number}}}]}}'},
        "litellm": {"/model/info": f'{{"data": [{{"model_name": "m", "model_info": {info}}}]}}'},
        "vllm": {"/v1/models": f'{{"data": [{{"id": "m", "max_model_len": {number}}}]}}'},
        "compatible": {
            "/v1/models": (
                f'{{"data": [{{"id": "m", "context_length": {number}, "meta": {{"n_ctx": {number}}}}}]}}'
            )
        },
    }[kind]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["llamacpp", "ollama", "lmstudio", "litellm", "vllm", "compatible"]),
    number_texts,
)
def test_the_window_probe_says_none_or_a_sane_int_whatever_number_it_is_sent(kind: str, number: str) -> None:
    routes = probe_answers(kind, number)

    def handler(request: httpx.Request) -> httpx.Response:
        body = routes.get(request.url.path)
        if body is None:
            return httpx.Response(404, json={"error": "not found"})
        return httpx.Response(200, content=body.encode(), headers={"content-type": "application/json"})

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        window = probe_context_window("http://127.0.0.1:9", "m", kind, client=client, cache=ProbeCache())
    assert window is None or (type(window) is int and 1 <= window <= MAX_WINDOW), window


@settings(max_examples=150, deadline=None)
@given(number_texts, number_texts, number_texts)
def test_usage_parsing_never_raises_and_gives_none_or_sane_counts(
    prompt: str, completion: str, cached: str
) -> None:
    chunk = (
        f'{{"choices": [], "usage": {{"prompt_tokens": {prompt}, "completion_tokens": {completion}, '
        f'"prompt_tokens_details": {{"cached_tokens": {cached}}}}}}}'
    )
    parser = OpenAIStreamParser()
    events = parser.feed(f"data: {chunk}\n\ndata: [DONE]\n\n".encode()) + parser.finish()
    usages = [e for e in events if isinstance(e, Usage)]
    assert isinstance(events[-1], Finish)
    ollama = OllamaStreamParser()
    line = (
        f'{{"message": {{"content": "x"}}, "done": true, "prompt_eval_count": {prompt}, '
        f'"eval_count": {completion}}}\n'
    )
    usages += [e for e in ollama.feed(line.encode()) + ollama.finish() if isinstance(e, Usage)]
    for usage in usages:
        for count in (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens):
            assert count is None or (type(count) is int and 0 <= count <= MAX_COUNT), usage


@settings(max_examples=100, deadline=None)
@given(number_texts)
def test_a_native_call_index_of_any_number_is_read(index: str) -> None:
    chunk = (
        '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": ' + index + ', "id": "c", '
        '"function": {"name": "grep", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]}'
    )
    parser = OpenAIStreamParser()
    parser.feed(f"data: {chunk}\n\ndata: [DONE]\n\n".encode())
    parser.finish()


@pytest.mark.parametrize("number", HOSTILE_NUMBERS)
def test_a_too_long_refusal_with_any_number_is_prompt_too_long_with_sane_or_no_numbers(number: str) -> None:
    body = (
        '{"error": {"code": 400, "type": "exceed_context_size_error", "message": "too long", '
        f'"n_prompt_tokens": {number}, "n_ctx": {number}}}}}'
    )
    error = error_from_response(400, body)
    assert isinstance(error, PromptTooLong)
    assert error.prompt_tokens is None or 0 <= error.prompt_tokens <= MAX_COUNT
    assert error.window is None or 1 <= error.window <= MAX_WINDOW
    digits = "9" * 5000
    worded = f"request ({digits} tokens) exceeds the available context size ({digits} tokens)"
    assert too_long_numbers(worded, {}) == (None, None)
    said = f"This model's maximum context length is {digits} tokens. However, you requested {digits} tokens"
    assert too_long_numbers(said, {}) == (None, None)


def test_checked_numbers() -> None:
    assert window_size(8192) == 8192
    assert window_size(8192.0) == 8192
    assert window_size("8192") == 8192
    for bad in (
        0,
        -1,
        True,
        8192.5,
        float("inf"),
        float("nan"),
        10**400,
        10**8 + 1,
        "1e3",
        "9" * 13,
        None,
        [1],
    ):
        assert window_size(bad) is None, bad
    assert token_count(0) == 0
    assert token_count(10**9) == 10**9
    assert token_count(10**9 + 1) is None
    assert checked_int(5, 1, 4) is None


def test_a_reply_whose_usage_says_1e400_is_answered(server: HostileServer, tmp_path: Path) -> None:
    """End to end: absurd usage in the stream, an absurd window from /props, and the reply still answers."""
    pieces = text_pieces("Still fine.", usage=False)
    usage = (
        b'data: {"choices": [], "usage": {"prompt_tokens": 1e400, "completion_tokens": '
        + b"9" * 5000
        + b"}}\n\n"
    )
    pieces.insert(-1, usage)
    server.queue(Answer(pieces=pieces))
    server.window_answer = Answer(
        pieces=[b'{"default_generation_settings": {"n_ctx": 1e400}}'],
        content_type="application/json",
        framing="length",
    )
    agent = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path)
    reply = agent.run("Hi?")
    assert reply.text == "Still fine."
    assert reply.requests[0].prompt_tokens is None
    assert reply.requests[0].completion_tokens is None
    assert agent.window == 32_768  # not said: the default for a local server
    server.window_answer = None
    server.queue(text("Good."))
    assert agent.run("Again?").text == "Good."
