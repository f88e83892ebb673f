"""Faults from a real server on 127.0.0.1 (``hostile_server``), through ``%%agent`` on a real IPython shell.

Each fault must end in a clear message in the cell (a sentence naming the problem, never a Python
traceback), leave the shell alive, and the next ``%%agent`` cell against a healthy answer of the same
server must answer. The stream cut is also swept at every byte through ``Agent`` (the same path without
the display), where it is cheap.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hostile_server import (
    HEALTHY,
    MODEL,
    TRACEBACK,
    Answer,
    Cell,
    HostileServer,
    agent_shell,
    call_pieces,
    delta,
    event,
    json_answer,
    run_cell,
    text,
    text_pieces,
    tool_call,
)
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from twinny_magics.agent import Agent
from twinny_magics.errors import ServerError
from twinny_magics.servers.base import ChatRequest
from twinny_magics.servers.kinds import ServerInfo
from twinny_magics.servers.openai import OpenAIChatServer

# The module, not the function of the same name that twinny_magics.servers exports.
connect_module = importlib.import_module("twinny_magics.servers.connect")


@pytest.fixture
def server() -> Iterator[HostileServer]:
    """The fault server, healthy until a test queues a fault, window 8,192."""
    with HostileServer(window=8192) as running:
        yield running


@pytest.fixture
def ip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    """The test shell with the extension loaded, rich output (as in a notebook), a small workspace."""
    (tmp_path / "a.py").write_text("x = 1\n")
    with agent_shell(tmp_path, monkeypatch) as shell:
        yield shell


def assert_clear(cell: Cell, *phrases: str) -> None:
    """The cell failed gracefully: no exception, no traceback, a message with each of ``phrases``."""
    assert cell.success, cell.text
    assert TRACEBACK not in cell.text, cell.text
    assert "Failed" in cell.text, cell.text
    for phrase in phrases:
        assert phrase in cell.text, cell.text


def assert_next_cell_answers(ip: InteractiveShell, server: HostileServer) -> None:
    """The shell is alive and the next cell, answered healthily by the same server, answers."""
    with capture_output():
        assert ip.run_cell("1 + 1").result == 2
    cell = run_cell(ip, server, "And now?")
    assert cell.success, cell.text
    assert HEALTHY in cell.text, cell.text
    assert "Answered" in cell.text, cell.text
    assert TRACEBACK not in cell.text


# --- nothing there, silence -------------------------------------------------------------------------


def test_nothing_listening_is_a_clear_message_and_the_cell_after_the_server_is_back_answers(
    ip: InteractiveShell, server: HostileServer
) -> None:
    server.stop()
    assert_clear(
        run_cell(ip, server, "Hello?"), f"Nothing answered at {server.url}", "Is the server running?"
    )
    server.start()
    assert_next_cell_answers(ip, server)


SHORT = httpx.Timeout(connect=1.0, read=0.5, write=1.0, pool=1.0)


@pytest.fixture
def short_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replies read with a 0.5 s read timeout instead of ``wire.CHAT_TIMEOUT``'s 300 s.

    ``Agent(timeout=)`` and ``%%agent --timeout`` take whole seconds of read timeout; the tests want a
    shorter connect timeout too, so the seam that turns the option into an ``httpx.Timeout`` is used.
    """
    monkeypatch.setattr(connect_module, "chat_timeout", lambda seconds: SHORT)


def test_a_server_that_accepts_and_never_answers_ends_in_a_timeout_message(
    ip: InteractiveShell, server: HostileServer, short_reads: None
) -> None:
    """Accept-then-silence ends when the read timeout runs out, and the message names that timeout."""
    server.queue(Answer(silent=True))
    started = time.monotonic()
    cell = run_cell(ip, server, "Hello?")
    assert time.monotonic() - started < 3
    assert_clear(cell, "did not answer within 0.5 s")
    assert_next_cell_answers(ip, server)


def test_the_session_timeout_option_bounds_a_silent_server(server: HostileServer, tmp_path: Path) -> None:
    server.queue(Answer(silent=True))
    started = time.monotonic()
    reply = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path, timeout=1.0).run("Hello?")
    assert time.monotonic() - started < 4
    assert "did not answer within 1 s" in (reply.error or "")


def test_a_server_that_goes_silent_mid_stream_ends_in_a_timeout_message(
    ip: InteractiveShell, server: HostileServer, short_reads: None
) -> None:
    pieces = text_pieces("one two three")
    server.queue(Answer(pieces=pieces, delay=0.2))  # slow, but never silent for as long as the timeout
    assert "one two three" in run_cell(ip, server, "Count slowly.").text
    server.queue(Answer(pieces=pieces[:3], then_silent=True))
    assert_clear(run_cell(ip, server, "Count again."), "stopped sending the reply: nothing came within 0.5 s")
    assert_next_cell_answers(ip, server)


def test_a_server_that_sends_done_and_keeps_the_stream_open_answers_at_once(
    ip: InteractiveShell, server: HostileServer, short_reads: None
) -> None:
    """Nothing after ``[DONE]`` counts, so nothing after it is waited for (by default: 300 s)."""
    server.queue(Answer(pieces=text_pieces("Complete."), then_silent=True))
    cell = run_cell(ip, server, "Hello?")
    assert "Complete." in cell.text, cell.text
    assert "Answered" in cell.text, cell.text
    assert_next_cell_answers(ip, server)


def test_a_silent_window_probe_costs_at_most_its_timeout_and_the_reply_goes_on(
    ip: InteractiveShell, server: HostileServer
) -> None:
    server.window_answer = Answer(silent=True)
    started = time.monotonic()
    cell = run_cell(ip, server, "Hello?")
    assert time.monotonic() - started < 3
    assert HEALTHY in cell.text, cell.text
    assert "32,768" in cell.text  # a local server that will not say counts as 32,768


# --- refusals ---------------------------------------------------------------------------------------

NESTED = "[" * 100_000


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        (Answer(500, [b"Internal Server Error"], "text/plain", "length"), "refused the request (HTTP 500)"),
        (json_answer(500, {"error": {"code": 500, "message": "CUDA error: out of memory"}}), "out of memory"),
        (Answer(502, [b"<html><body><h1>502 Bad Gateway</h1></body></html>"], "text/html"), "(HTTP 502)"),
        (json_answer(503, {"error": {"message": "Loading model", "code": 503}}), "Loading model"),
        (json_answer(404, {"error": {"code": 404, "message": "File Not Found"}}), "Is the base URL right?"),
        (Answer(500, [b"x" * 1_000_000], "text/plain", "close"), "refused the request (HTTP 500)"),
        (Answer(500, [NESTED.encode()], "application/json", "length"), "refused the request (HTTP 500)"),
        (Answer(500, [b"half of an err"], "text/plain", "length", cut_at=7), "dropped in the middle"),
    ],
    ids=["text", "json", "html-502", "loading-503", "404", "huge", "deeply-nested-json", "cut-body"],
)
def test_an_http_error_is_a_clear_message_and_the_next_cell_answers(
    ip: InteractiveShell, server: HostileServer, answer: Answer, phrase: str
) -> None:
    server.queue(answer)
    assert_clear(run_cell(ip, server, "Hello?"), phrase)
    assert_next_cell_answers(ip, server)


@pytest.mark.parametrize(
    "answer",
    [
        json_answer(500, {"error": "boom"}),
        Answer(200, [b"<html>not json</html>"], "text/html", "length"),
        json_answer(200, {"default_generation_settings": {"n_ctx": "lots"}}),
        json_answer(200, {"default_generation_settings": {"n_ctx": -5}}),
        json_answer(200, {"default_generation_settings": {"n_ctx": "\u00b2"}}),
        json_answer(200, {"default_generation_settings": {"n_ctx": "9" * 5000}}),
        Answer(200, [NESTED.encode()], "application/json", "length"),
        Answer(
            200, [b'{"default_generation_settings": {"n_ctx": 81'], "application/json", "length", cut_at=30
        ),
    ],
    ids=["500", "html", "word", "negative", "superscript-digit", "5000-digits", "deeply-nested", "cut"],
)
def test_a_window_probe_answered_with_garbage_plans_with_the_default_and_the_reply_goes_on(
    ip: InteractiveShell, server: HostileServer, answer: Answer
) -> None:
    server.window_answer = answer
    cell = run_cell(ip, server, "Hello?")
    assert cell.success, cell.text
    assert TRACEBACK not in cell.text, cell.text
    assert HEALTHY in cell.text, cell.text


# --- the stream ---------------------------------------------------------------------------------------

GARBAGE = [
    pytest.param([b"garbage\n", b"<html>\n", *text_pieces(HEALTHY)], HEALTHY, id="garbage-lines-skipped"),
    pytest.param([b"\xff\xfe\x00\x01junk\n", *text_pieces(HEALTHY)], HEALTHY, id="binary-junk-skipped"),
    pytest.param([*text_pieces(HEALTHY), b"data: {broken\n\n", b"\x00\xff"], HEALTHY, id="junk-after-done"),
    pytest.param(
        [event(delta("Hi")), b"data: {not json\n\n"], "A line of the stream is not JSON", id="bad-json"
    ),
    pytest.param([event(delta("Hi")), b"data: 42\n\n"], "not a JSON object", id="not-an-object"),
    pytest.param([b"<html><body>Bad gateway</body></html>\n"], "not an event stream", id="html-page"),
    pytest.param([], "ended before the reply was finished", id="empty-body"),
    pytest.param(
        [event(delta("Hi")), b'error: {"code": 500, "message": "slot unavailable"}\n\n'],
        "slot unavailable",
        id="llamacpp-error-line",
    ),
    pytest.param(
        [event(delta("Hi")), event({"error": {"message": "upstream hung up", "code": 502}})],
        "upstream hung up",
        id="error-chunk",
    ),
    pytest.param(
        [b"data: " + b"x" * (8 * 1024 * 1024 + 10)], "ran past 8,388,608 characters", id="endless-line"
    ),
    pytest.param([b"data: " + NESTED.encode() + b"\n\n"], "not JSON", id="deeply-nested-json"),
    pytest.param(
        [event(delta("Hi")), b'error: {"code": "\\u00b2", "message": "odd code"}\n\n'],
        "odd code",
        id="error-code-not-a-number",
    ),
    pytest.param(
        [event(delta("Hi")), event({"error": {"code": "1" * 5000, "message": "huge code"}})],
        "huge code",
        id="error-code-5000-digits",
    ),
]


@pytest.mark.parametrize(("pieces", "phrase"), GARBAGE)
def test_garbage_in_the_stream_is_skipped_or_a_clear_message_and_the_next_cell_answers(
    ip: InteractiveShell, server: HostileServer, pieces: list[bytes], phrase: str
) -> None:
    server.queue(Answer(pieces=pieces))
    cell = run_cell(ip, server, "Hello?")
    assert cell.success, cell.text
    assert TRACEBACK not in cell.text, cell.text
    assert phrase in cell.text, cell.text
    if phrase != HEALTHY:
        assert "Failed" in cell.text
    assert_next_cell_answers(ip, server)


def test_a_whole_json_completion_instead_of_a_stream_is_read(
    ip: InteractiveShell, server: HostileServer
) -> None:
    completion = {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "One piece."}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 2},
    }
    server.queue(json_answer(200, completion))
    assert "One piece." in run_cell(ip, server, "Hello?").text


def test_a_reply_with_a_lone_surrogate_escape_leaves_the_session_usable(
    ip: InteractiveShell, server: HostileServer
) -> None:
    """``"\\ud800"`` is valid JSON but no UTF-8: the answer is kept for the next turn's request."""
    server.queue(
        Answer(
            pieces=[
                b'data: {"choices": [{"delta": {"content": "bad \\ud800 char"}}]}\n\n',
                *text_pieces("")[-3:],
            ]
        )
    )
    cell = run_cell(ip, server, "Hello?")
    assert cell.success, cell.text
    assert "bad" in cell.text
    assert_next_cell_answers(ip, server)


def test_a_lone_surrogate_reaches_the_notebook_as_outputs_the_kernel_can_send(
    ip: InteractiveShell, server: HostileServer
) -> None:
    """The kernel sends every output as UTF-8 JSON (``json_packer``); a lone surrogate would lose it."""
    from jupyter_client.session import json_packer

    server.queue(
        Answer(
            pieces=[
                b'data: {"choices": [{"delta": {"content": "odd \\udc80\\ud800 text"}}]}\n\n',
                *text_pieces("")[-3:],
            ]
        )
    )
    source = f"%%agent --server {server.url} --kind llamacpp --model {MODEL}\nHello?\n"
    with capture_output() as captured:
        assert ip.run_cell(source).success
        assert ip.run_cell("%agent").success  # the session's own repr, with the reply in it
    assert captured.outputs
    for output in captured.outputs:
        json_packer(output.data)  # raises on text UTF-8 cannot carry
    assert any("odd ??" in output.data.get("text/plain", "") for output in captured.outputs)
    session = ip.run_line_magic("agent", "")
    assert "\ud800" in session.replies[-1].text  # the session keeps what came; only the display is mended


def test_a_missing_usage_chunk_still_answers_and_teaches_the_estimator_nothing(
    ip: InteractiveShell, server: HostileServer
) -> None:
    server.queue(Answer(pieces=text_pieces("No counts today.", usage=False)))
    cell = run_cell(ip, server, "Hello?")
    assert "No counts today." in cell.text
    assert "Answered" in cell.text
    session = ip.run_line_magic("agent", "")
    assert session.replies[-1].requests[0].prompt_tokens is None
    assert session.estimator.ratio == 3.3
    assert_next_cell_answers(ip, server)


@pytest.mark.parametrize(
    "arguments",
    ['{"pattern": "x"', '["x"]', '"just words"', "{'pattern': 'x'}", '{"pattern": ' + "[" * 100_000],
    ids=["unclosed", "array", "string", "single-quotes", "deeply-nested"],
)
def test_a_tool_call_with_broken_json_arguments_is_sent_back_to_the_model_and_the_reply_goes_on(
    ip: InteractiveShell, server: HostileServer, arguments: str
) -> None:
    server.queue(tool_call("grep", arguments), text("I will ask properly next time."))
    cell = run_cell(ip, server, "Find x.")
    assert cell.success, cell.text
    assert TRACEBACK not in cell.text, cell.text
    assert "I will ask properly next time." in cell.text
    told = json.dumps(server.bodies[-1]["messages"])
    assert "could not be read" in told
    assert_next_cell_answers(ip, server)


def test_a_tool_call_whose_arguments_stream_in_broken_fragments_is_read_when_they_join(
    ip: InteractiveShell, server: HostileServer
) -> None:
    server.queue(
        Answer(pieces=call_pieces("read_file", ['{"pa', 'th": "a.', 'py"', "}"])),
        text("x is 1."),
    )
    cell = run_cell(ip, server, "What is x?")
    assert "1: x = 1" in cell.text
    assert "x is 1." in cell.text


# --- a stream cut at every point ------------------------------------------------------------------------

CUT_BODY = text_pieces("All good.", usage=1100)
CUT_LENGTH = len(b"".join(CUT_BODY))


@pytest.mark.parametrize("framing", ["chunked", "length", "close"])
def test_a_stream_cut_at_every_byte_ends_each_reply_cleanly_and_the_session_goes_on(
    server: HostileServer, tmp_path: Path, framing: Any
) -> None:
    """Every cut is an answer (the reply was complete) or a reply that failed with a clear error."""
    agent = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path)
    outcomes: dict[str, int] = {}
    for cut in range(CUT_LENGTH + 1):
        server.queue(Answer(pieces=CUT_BODY, framing=framing, cut_at=cut))
        reply = agent.run(f"Cut at {cut}?")
        if reply.stopped == "answer":
            assert reply.text == "All good.", (cut, reply.text)
            outcomes["answer"] = outcomes.get("answer", 0) + 1
            continue
        assert reply.stopped == "error", (cut, reply)
        assert reply.error is not None
        assert any(
            words in reply.error
            for words in (
                "dropped in the middle of the reply",
                "ended before the reply was finished",
                "not JSON",
                "not an event stream",
            )
        ), (cut, reply.error)
        outcomes["error"] = outcomes.get("error", 0) + 1
    assert outcomes["error"] > CUT_LENGTH // 2
    assert agent.run("Whole?").text == HEALTHY
    assert len(agent.replies) == CUT_LENGTH + 2


@pytest.mark.parametrize("cut", [0, 40, CUT_LENGTH // 2, CUT_LENGTH - 20, CUT_LENGTH])
def test_a_stream_cut_shows_a_clear_message_in_the_cell_and_the_next_cell_answers(
    ip: InteractiveShell, server: HostileServer, cut: int
) -> None:
    server.queue(Answer(pieces=CUT_BODY, cut_at=cut))
    cell = run_cell(ip, server, "Hello?")
    assert cell.success, cell.text
    assert TRACEBACK not in cell.text
    assert "dropped in the middle of the reply" in cell.text or "All good." in cell.text, cell.text
    assert_next_cell_answers(ip, server)


def test_a_connection_dropped_after_done_loses_nothing(server: HostileServer, tmp_path: Path) -> None:
    server.queue(Answer(pieces=CUT_BODY, cut_at=CUT_LENGTH))
    reply = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path).run("Hello?")
    assert reply.stopped == "answer", reply.error


# --- a restart with another window ----------------------------------------------------------------------

BIG = "".join(f"line {n}: {'word ' * 12}\n" for n in range(400))


def test_a_server_restarted_with_a_smaller_window_between_two_cells_is_a_clear_message_and_the_next_answers(
    ip: InteractiveShell, server: HostileServer
) -> None:
    Path("big.txt").write_text(BIG)
    server.queue(tool_call("read_file", {"path": "big.txt"}), text("It is a long file."))
    assert "It is a long file." in run_cell(ip, server, "What is in big.txt?").text
    server.strict = True
    server.restart(window=2048)
    cell = run_cell(ip, server, "And the rest?")
    assert cell.success, cell.text
    assert TRACEBACK not in cell.text
    assert HEALTHY in cell.text or "longer than the model's window" in cell.text, cell.text
    assert_next_cell_answers(ip, server)


def test_a_server_restarted_with_a_smaller_window_mid_reply_is_a_clear_message_and_the_next_cell_answers(
    ip: InteractiveShell, server: HostileServer
) -> None:
    Path("big.txt").write_text(BIG)
    server.strict = True
    server.queue(tool_call("read_file", {"path": "big.txt"}, then_window=2048), text("It is a long file."))
    cell = run_cell(ip, server, "What is in big.txt?")
    assert cell.success, cell.text
    assert TRACEBACK not in cell.text
    assert "It is a long file." in cell.text or "the window holds 2,048" in cell.text, cell.text
    assert_next_cell_answers(ip, server)


def test_a_too_long_refusal_that_names_a_smaller_window_trims_the_retry_to_fit_it(
    server: HostileServer, tmp_path: Path
) -> None:
    (tmp_path / "big.txt").write_text(BIG)
    server.strict = True
    server.queue(tool_call("read_file", {"path": "big.txt"}, then_window=2048), text("It is a long file."))
    reply = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path).run("What is in big.txt?")
    assert reply.text == "It is a long file.", reply.error


def test_a_server_restarted_with_a_larger_window_between_two_cells_still_answers(
    ip: InteractiveShell, server: HostileServer
) -> None:
    server.window = 4096
    assert HEALTHY in run_cell(ip, server, "One?").text
    server.restart(window=16384)
    assert HEALTHY in run_cell(ip, server, "Two?").text
    assert ip.run_line_magic("agent", "").window in (4096, 16384)  # the window is cached for 30 s


def test_a_usage_count_far_below_the_prompt_does_not_make_the_next_estimate_absurd(
    server: HostileServer, tmp_path: Path
) -> None:
    """A server (or a proxy) that says 1 token for a prompt of thousands of characters is not believed."""
    server.queue(Answer(pieces=text_pieces("ok", usage=1)))
    agent = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path)
    agent.run("One?")
    [record] = agent.run("Two?").requests
    assert record.estimated_tokens >= record.chars / 6  # the estimator's own bound: 6 characters a token


# --- the adapter on its own ---------------------------------------------------------------------------


async def test_the_adapter_raises_only_server_errors_for_every_fault(server: HostileServer) -> None:
    """The OpenAI adapter on a real socket: each fault is one of our ServerError types, nothing else."""
    info = ServerInfo(server.url, "llamacpp", MODEL)
    faults = [
        Answer(silent=True),
        Answer(500, [b"no"], "text/plain", "length"),
        Answer(pieces=CUT_BODY, cut_at=100),
        Answer(pieces=[b"data: {oops\n\n"]),
        Answer(pieces=[b"<html>\n"], content_type="text/html"),
    ]
    async with httpx.AsyncClient(trust_env=False) as client:
        adapter = OpenAIChatServer(info, client, timeout=SHORT)
        for fault in faults:
            server.queue(fault)
            with pytest.raises(ServerError):
                async for _ in adapter.stream(ChatRequest(messages=[{"role": "user", "content": "hi"}])):
                    pass
