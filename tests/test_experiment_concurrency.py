"""Experiments run N at once (``run(..., concurrency=N)``): overlap, order, stops, errors, ``auto``.

The model is a scripted server that answers each run by the question it was asked (so which run gets
which answer does not depend on which started first) after a delay, and counts the requests in flight.
The last test runs the real llama.cpp server with two slots (``pytest.mark.server``).
"""

from __future__ import annotations

import _thread
import asyncio
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from twinny_magics.errors import ServerError
from twinny_magics.experiment import Question, Results, Variant, run
from twinny_magics.experiment.cells import parse_line
from twinny_magics.experiment.serving import RunServer
from twinny_magics.experiment.slots import MAX_SLOTS, auto_concurrency, said_slots, server_slots
from twinny_magics.servers.base import ChatEvent, ChatRequest, Finish, TextChunk, Usage
from twinny_magics.servers.connect import ConnectedServer
from twinny_magics.servers.kinds import ServerInfo
from twinny_magics.servers.scripted import ScriptedServer


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    folder = tmp_path / "shop"
    folder.mkdir()
    (folder / "app.py").write_text("PORT = 8000\n")
    return folder


@dataclass
class ByQuestion(ScriptedServer):
    """Answers a request by the question in it (``answers[key]`` for the key its text holds), after
    ``delays[key]`` seconds (else ``delay``); counts the requests in flight and the most at once."""

    answers: dict[str, str | Exception | BaseException] = field(default_factory=dict)
    delays: dict[str, float] = field(default_factory=dict)
    # Long next to a run's own set-up (a copy, a session), which runs on the loop between requests: with a
    # shorter delay on a busy machine, one run's request could end before the next one's began.
    delay: float = 0.25
    in_flight: int = 0
    most: int = 0
    order: list[str] = field(default_factory=list)

    def _key(self, request: ChatRequest) -> str:
        text = json.dumps(request.messages)
        found = [key for key in self.answers if key in text]
        assert len(found) == 1, found
        return found[0]

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        self.requests.append(request)
        key = self._key(request)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(self.delays.get(key, self.delay))
            answer = self.answers[key]
            if isinstance(answer, BaseException):
                raise answer
            self.order.append(key)
            yield TextChunk(answer)
            yield Usage(self.prompt_tokens(request), 3)
            yield Finish("stop")
        finally:
            self.in_flight -= 1


def questions(count: int) -> list[Question]:
    return [
        Question(f"What is item-{i:02d}-x?", check=f"answer {i:02d}", name=f"q{i:02d}") for i in range(count)
    ]


def server_for(count: int, **options: Any) -> ByQuestion:
    return ByQuestion(answers={f"item-{i:02d}-x": f"The answer {i:02d}." for i in range(count)}, **options)


def quiet(asked: Any, variants: Any, workspace: Path, **options: Any) -> Results:
    return run(asked, variants, workspace=workspace, progress="off", **options)


def summary(results: Results) -> list[tuple[str, str, int, str, str]]:
    return [(r.question, r.variant, r.repeat, r.outcome, r.answer) for r in results.runs]


# -- overlap and order -----------------------------------------------------------------------------------


def test_two_at_once_overlap_never_more_and_the_results_read_as_a_sequential_runs(shop: Path) -> None:
    parallel = server_for(6, delay=0.3)
    at_once = quiet(questions(6), [Variant("v", server=parallel)], shop, concurrency=2)
    sequential = server_for(6, delay=0.01)
    one_by_one = quiet(questions(6), [Variant("v", server=sequential)], shop)
    assert parallel.most == 2
    assert sequential.most == 1
    assert summary(at_once) == summary(one_by_one)
    assert all(r.outcome == "pass" for r in at_once.runs)
    assert at_once.settings["concurrency"] == 2
    assert at_once.settings["most_at_once"] == 2


def test_the_order_is_the_sequential_one_whatever_finishes_first(shop: Path) -> None:
    # The first run is the slowest: it finishes last, and still comes first.
    slow_first = server_for(4, delays={"item-00-x": 1.5}, delay=0.01)
    results = quiet(questions(4), [Variant("v", server=slow_first)], shop, concurrency=3)
    assert slow_first.order[-1] == "item-00-x"
    assert [r.question for r in results.runs] == ["q00", "q01", "q02", "q03"]

    server = server_for(4, delays={"item-00-x": 0.3, "item-01-x": 0.2})
    variants = [Variant("a", server=server), Variant("b", server=server, steps=3)]
    results = quiet(questions(4), variants, shop, concurrency=3, repeat=2, seed=5)
    expected = [(f"q{i:02d}", v, r) for r in range(2) for i in range(4) for v in ("a", "b")]
    assert [r.key for r in results.runs] == expected
    assert [r.seed for r in results.runs] == [5 + r for _, _, r in expected]
    assert server.most == 3


def test_each_run_at_once_has_its_own_copy_of_the_workspace(shop: Path) -> None:
    seen: list[Path] = []

    def check(reply: Any, workspace: Path) -> bool:
        seen.append(workspace)
        (workspace / "app.py").write_text("changed by a run\n")  # another run's copy must not see this
        return (shop / "app.py").read_text() == "PORT = 8000\n"

    asked = [Question(f"What is item-{i:02d}-x?", check=check, name=f"q{i}") for i in range(4)]
    results = quiet(asked, [Variant("v", server=server_for(4))], shop, concurrency=4)
    assert [r.outcome for r in results.runs] == ["pass"] * 4
    assert len(set(seen)) == 4


def test_the_text_progress_prints_each_run_as_it_finishes_and_the_end(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = server_for(3, delays={"item-00-x": 1.0}, delay=0.01)
    run(questions(3), [Variant("v", server=server)], workspace=shop, progress="text", concurrency=2)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in lines[:3]] == [
        "[1/3] ✓ q01 · v",
        "[2/3] ✓ q02 · v",
        "[3/3] ✓ q00 · v",
    ]
    assert lines[-1].startswith("Done: 3 runs in")


def test_the_end_line_says_the_pass_rate_and_tokens_a_second_one_at_a_time_and_at_once(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = questions(3)
    asked[1] = Question("What is item-01-x?", check="no such answer", name="q01")
    for concurrency in (1, 2):
        run(
            asked,
            [Variant("v", server=server_for(3, delay=0.05))],
            workspace=shop,
            progress="text",
            concurrency=concurrency,
        )
        end = capsys.readouterr().err.splitlines()[-1]
        assert end.startswith("Done: 3 runs in"), end
        assert "2/3 passed · " in end, end
        assert end.endswith(" tok/s."), end


def test_runs_at_once_work_from_inside_a_running_event_loop_as_in_a_notebook(shop: Path) -> None:
    server = server_for(4)

    async def cell() -> Results:
        return quiet(questions(4), [Variant("v", server=server)], shop, concurrency=2)

    results = asyncio.run(cell())
    assert [r.outcome for r in results.runs] == ["pass"] * 4
    assert server.most == 2


def test_a_concurrency_over_the_runs_left_runs_them_all_at_once_without_a_seat_per_number(
    shop: Path,
) -> None:
    server = server_for(3)
    results = quiet(questions(3), [Variant("v", server=server)], shop, concurrency=10**9)
    assert [r.outcome for r in results.runs] == ["pass"] * 3
    assert server.most == 3


# -- errors and stops ------------------------------------------------------------------------------------


def test_a_run_that_errs_does_not_take_the_others_down(shop: Path) -> None:
    server = server_for(5)
    server.answers["item-02-x"] = ServerError("The model crashed.")
    results = quiet(questions(5), [Variant("v", server=server)], shop, concurrency=2)
    assert [r.outcome for r in results.runs] == ["pass", "pass", "error", "pass", "pass"]
    assert "crashed" in results.runs[2].why
    assert results.stopped is None


def test_a_session_that_raises_errs_alone_and_a_factory_with_only_run_runs_on_a_thread(shop: Path) -> None:
    class Broken:
        def __init__(self, **options: Any) -> None:
            self.options = options

        def run(self, question: str) -> Any:
            raise RuntimeError("no session today")

    variants = [Variant("broken", factory=Broken, server=server_for(3)), Variant("ok", server=server_for(3))]
    results = quiet(questions(3), variants, shop, concurrency=3, max_errors=0)
    assert [(r.variant, r.outcome) for r in results.runs] == [("broken", "error"), ("ok", "pass")] * 3
    assert results.runs[0].why == "RuntimeError: no session today"


def test_errors_in_a_row_stop_the_experiment_and_keep_what_finished(shop: Path) -> None:
    server = server_for(8, delay=0.02)
    for i in range(2, 8):
        server.answers[f"item-{i:02d}-x"] = ServerError("gone")
    results = quiet(questions(8), [Variant("v", server=server)], shop, concurrency=2, max_errors=3)
    assert results.stopped == "3 server errors in a row"
    assert [r.outcome for r in results.runs][:2] == ["pass", "pass"]
    assert len(results.runs) < 8


def test_the_stop_button_keeps_what_finished_and_resume_runs_the_rest(shop: Path, tmp_path: Path) -> None:
    delays = {f"item-{i:02d}-x": 0.05 for i in range(2)} | {f"item-{i:02d}-x": 30.0 for i in range(2, 6)}
    server = server_for(6, delays=delays)
    timer = threading.Timer(1.5, _thread.interrupt_main)
    timer.start()
    saved = tmp_path / "partial.json"
    results = quiet(questions(6), [Variant("v", server=server)], shop, concurrency=2, save=saved)
    timer.join()
    assert results.stopped == "interrupted"
    assert [r.question for r in results.runs] == ["q00", "q01"]
    assert server.in_flight == 0  # the runs under way were cancelled, their streams closed

    resumed = quiet(questions(6), [Variant("v", server=server_for(6))], shop, concurrency=3, resume=saved)
    assert resumed.complete
    assert [r.question for r in resumed.runs] == [f"q{i:02d}" for i in range(6)]


def test_an_interrupt_raised_inside_a_run_stops_the_experiment_like_the_button(shop: Path) -> None:
    server = server_for(6, delays={"item-00-x": 0.01, "item-01-x": 0.01, "item-03-x": 5.0})
    server.delays.update({f"item-{i:02d}-x": 5.0 for i in range(3, 6)})
    server.delays["item-02-x"] = 0.2
    server.answers["item-02-x"] = KeyboardInterrupt()
    results = quiet(questions(6), [Variant("v", server=server)], shop, concurrency=2)
    assert results.stopped == "interrupted"
    assert [r.question for r in results.runs] == ["q00", "q01"]


# -- the option ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "many", None])
def test_concurrency_other_than_a_positive_count_or_auto_is_refused_before_anything_runs(
    shop: Path, bad: Any
) -> None:
    server = server_for(1)
    with pytest.raises(ValueError, match="concurrency="):
        quiet(questions(1), [Variant("v", server=server)], shop, concurrency=bad)
    assert server.requests == []


def test_auto_on_a_server_that_says_no_slots_runs_one_at_a_time(shop: Path) -> None:
    server = server_for(4)
    results = quiet(questions(4), [Variant("v", server=server)], shop, concurrency="auto")
    assert server.most == 1
    assert results.settings["concurrency"] == 1


def test_agent_compare_runs_its_questions_at_once_with_concurrency(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    from twinny_magics.agent import Agent

    shell = start_ipython() or InteractiveShell.instance()
    shell.config.pop("TwinnyMagics", None)
    monkeypatch.chdir(shop)
    shell.extension_manager.load_extension("twinny_magics")
    server = server_for(2, delay=0.3)
    try:
        shell.user_ns["s"] = Agent(server=server, workspace=shop, steps=2)
        with capture_output():
            shell.run_line_magic("agent", "use s")
            results = shell.run_cell_magic(
                "agent",
                "compare --b 'closing_prompt=\"Be brief.\"' --concurrency 4",
                "What is item-00-x? :: answer 00\nWhat is item-01-x? :: answer 01\n",
            )
    finally:
        shell.extension_manager.unload_extension("twinny_magics")
        shell.config.pop("TwinnyMagics", None)
        shell.user_ns.pop("s", None)
    assert isinstance(results, Results)
    assert [r.outcome for r in results.runs] == ["pass"] * 4
    assert results.settings["concurrency"] == 4
    assert server.most == 4


def test_the_compare_line_takes_concurrency_as_a_count_or_auto() -> None:
    assert parse_line("--b 'steps=2' --concurrency 4").concurrency == 4
    assert parse_line("--b 'steps=2' --concurrency auto").concurrency == "auto"
    assert parse_line("--b 'steps=2'").concurrency == 1
    for bad in ("0", "-2", "two", "²", "9" * 40):
        with pytest.raises(ValueError, match="concurrency"):
            parse_line(f"--b 'steps=2' --concurrency {bad}")


# -- a run pinned to a slot ------------------------------------------------------------------------------


def test_a_pinned_run_sends_every_request_to_its_slot_and_only_the_first_off_the_cache() -> None:
    inner = ScriptedServer(["one", "two"], kind="llamacpp")
    server = RunServer(inner, slot=1)

    async def ask_twice() -> None:
        for _ in range(2):
            async for _event in server.stream(ChatRequest(messages=[{"role": "user", "content": "hi"}])):
                pass

    asyncio.run(ask_twice())
    assert [r.extra.get("id_slot") for r in inner.requests] == [1, 1]
    assert [r.extra.get("cache_prompt") for r in inner.requests] == [False, None]
    unpinned = ScriptedServer(["one"], kind="llamacpp")
    asyncio.run(_drain(RunServer(unpinned)))
    assert "id_slot" not in unpinned.requests[0].extra


async def _drain(server: RunServer) -> None:
    async for _event in server.stream(ChatRequest(messages=[{"role": "user", "content": "hi"}])):
        pass


# -- asking a server for its slots -----------------------------------------------------------------------


class FakeLlama:
    """llama.cpp's ``/props`` and ``/slots`` as given (raw JSON text, so hostile numbers stay hostile)."""

    def __init__(self, props: str | None, slots: str | None) -> None:
        self.props, self.slots = props, slots
        self.asked: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked.append(request.url.path)
        body = {"/props": self.props, "/slots": self.slots}.get(request.url.path)
        if body is None:
            return httpx.Response(501, json={"error": {"message": "This server does not support slots"}})
        return httpx.Response(200, content=body.encode(), headers={"content-type": "application/json"})


def props(total: str) -> str:
    return '{"default_generation_settings": {"n_ctx": 1024}, "total_slots": ' + total + "}"


def slots(count: int) -> str:
    return json.dumps([{"id": i, "n_ctx": 1024, "is_processing": False} for i in range(count)])


@pytest.mark.parametrize(
    ("props_json", "slots_json", "expected"),
    [
        (props("2"), slots(2), 2),
        (props("4"), None, 4),  # /slots off (--no-slots): 501
        (None, slots(3), 3),
        (props("4"), slots(2), 2),  # the two disagree: the fewer
        (props("-1"), None, 1),
        (props("0"), None, 1),
        (props("true"), None, 1),
        (props('"2"'), None, 2),  # a number as a string of digits counts, as elsewhere
        (props('"two"'), None, 1),
        (props("2.5"), None, 1),
        (props("NaN"), None, 1),
        (props("null"), None, 1),
        (props("[2]"), None, 1),
        (props("1000000"), None, MAX_SLOTS),  # huge: capped
        (props("1e400"), None, MAX_SLOTS),
        (props("9" * 5000), None, MAX_SLOTS),
        (props("-1e400"), None, 1),
        (None, json.dumps([1, 2, "three"]), 1),  # a list of no slots
        (None, json.dumps({"slots": 2}), 1),
        ('"not an object"', "[]", 1),
        ("{not json", "[", 1),
        (None, None, 1),
    ],
)
def test_auto_asks_llamacpp_for_its_slots_and_a_hostile_answer_is_one_or_a_cap(
    props_json: str | None, slots_json: str | None, expected: int
) -> None:
    fake = FakeLlama(props_json, slots_json)
    server = ConnectedServer(ServerInfo("http://llama.test:8080", "llamacpp", "m"))
    with httpx.Client(transport=httpx.MockTransport(fake)) as client:
        assert server_slots(server, client) == expected
    assert sorted(fake.asked) == ["/props", "/slots"]


def test_auto_never_goes_above_the_fewest_slots_and_asks_only_llamacpp() -> None:
    fake = FakeLlama(props("4"), slots(4))
    llama = ConnectedServer(ServerInfo("http://llama.test:8080", "llamacpp", "m"))
    ollama = ConnectedServer(ServerInfo("http://ollama.test:11434", "ollama", "m"))
    with httpx.Client(transport=httpx.MockTransport(fake)) as client:
        assert auto_concurrency([llama, llama], client) == 4
        assert len(fake.asked) == 2  # the same server is asked once
        assert auto_concurrency([llama, ollama], client) == 1
        assert auto_concurrency([ScriptedServer()], client) == 1
    assert said_slots({"total_slots": 3}, None) == 3


# -- the real llama.cpp server with two slots ------------------------------------------------------------


@pytest.mark.server
def test_two_runs_at_once_on_the_embedded_server_with_two_slots_plan_for_one_slots_window(
    shop: Path,
) -> None:
    from twinny_magics.servers.asking import ProbeCache
    from twinny_magics.servers.embedded import EmbeddedServer
    from twinny_magics.servers.probe import probe_context_window

    server = EmbeddedServer(n_ctx=2048, parallel=2, threads=1)
    try:
        assert server.slot_window == 1024
        assert probe_context_window(server.base_url, cache=ProbeCache()) == 1024
        asked = [
            Question("What is in app.py?", name="what"),
            Question("Which port?", check="8000", name="port"),
        ]
        results = quiet(
            asked,
            [Variant("v", steps=2, extra={"n_predict": 48})],
            shop,
            base_url=server.base_url,
            concurrency="auto",
        )
    finally:
        server.stop()
    assert results.settings["concurrency"] == 2
    assert results.settings["most_at_once"] == 2
    assert [r.question for r in results.runs] == ["what", "port"]
    assert results.runs[0].outcome == "ran"
    assert all(r.outcome != "error" for r in results.runs), [r.why for r in results.runs]
    for record in results.runs:
        assert record.reply is not None
        assert record.reply.requests
        assert {request.window for request in record.reply.requests} == {1024}


@pytest.mark.parametrize("bad", [0, -1, True, 4096, "2"])
def test_the_embedded_server_refuses_slots_it_cannot_have_before_loading_anything(bad: Any) -> None:
    from twinny_magics.servers.embedded import EmbeddedServer

    with pytest.raises(ValueError, match="parallel="):
        EmbeddedServer(n_ctx=2048, parallel=bad)
