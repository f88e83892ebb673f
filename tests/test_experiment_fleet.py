"""Experiments over several servers (``run(..., servers=[...])``): spread, records, a server that dies.

The servers are llama.cpp-shaped fakes behind httpx's ``MockTransport`` (``/props``, ``/slots`` and a
streamed ``/v1/chat/completions``), reached through the real adapter (``ConnectedServer``), so a reset
mid-stream, a refused connection and a 5xx reach the runner exactly as from a real server. Each answers
a run by the question it holds, after a delay, and counts the requests in flight. The last tests run two
real llama.cpp servers (``pytest.mark.server``).
"""

from __future__ import annotations

import _thread
import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from twinny_magics.experiment import Question, Results, Variant, run
from twinny_magics.experiment.fleet import MAX_SERVERS
from twinny_magics.servers.connect import ConnectedServer
from twinny_magics.servers.kinds import ServerInfo
from twinny_magics.servers.scripted import ScriptedServer


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    folder = tmp_path / "shop"
    folder.mkdir()
    (folder / "app.py").write_text("PORT = 8000\n")
    return folder


def _sse(chunk: dict[str, Any] | str) -> bytes:
    return f"data: {chunk if isinstance(chunk, str) else json.dumps(chunk)}\n\n".encode()


class Reply(httpx.AsyncByteStream):
    """A streamed reply: a pause, the answer, then (``reset``) a dropped connection or the end."""

    def __init__(self, llama: Llama, text: str, *, reset: bool) -> None:
        self.llama, self.text, self.reset = llama, text, reset

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self.llama.in_flight += 1
        self.llama.most = max(self.llama.most, self.llama.in_flight)
        try:
            await asyncio.sleep(self.llama.delay)
            yield _sse({"choices": [{"index": 0, "delta": {"content": self.text}, "finish_reason": None}]})
            if self.reset:
                raise httpx.ReadError("Connection reset by peer")
            yield _sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            yield _sse({"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 4}})
            yield _sse("[DONE]")
        finally:
            self.llama.in_flight -= 1


class Llama:
    """A llama.cpp server: ``slots`` slots; answers ``The answer NN.`` to a question about item-NN-x.

    ``fail`` is how it fails once it has answered ``healthy`` chat requests: ``reset`` (the connection
    drops mid-reply), ``refused`` (nothing listens), ``503``; ``answers`` overrides a question's reply
    (an HTTP status and body, for a failure that is the run's own).
    """

    def __init__(
        self,
        name: str,
        *,
        slots: int = 1,
        fail: str | None = None,
        healthy: int = 0,
        delay: float = 0.2,
        answers: dict[str, tuple[int, dict[str, Any]]] | None = None,
    ) -> None:
        self.url = f"http://{name}.test:8080"
        self.slots, self.fail, self.healthy, self.delay = slots, fail, healthy, delay
        self.answers = answers or {}
        self.chats: list[str] = []
        self.in_flight = 0
        self.most = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if self.fail == "refused" and len(self.chats) >= self.healthy:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        if path == "/props":
            return httpx.Response(
                200, json={"default_generation_settings": {"n_ctx": 2048}, "total_slots": self.slots}
            )
        if path == "/slots":
            return httpx.Response(200, json=[{"id": i, "n_ctx": 2048} for i in range(self.slots)])
        if path != "/v1/chat/completions":
            return httpx.Response(404, json={"error": {"code": 404, "message": "File Not Found"}})
        body = json.loads(request.content)
        key = next(w for w in json.dumps(body["messages"]).split() if w.startswith("item-"))[:7]
        dying = self.fail is not None and len(self.chats) >= self.healthy
        self.chats.append(key)
        if dying and self.fail == "503":
            return httpx.Response(503, json={"error": {"code": 503, "message": "Loading model"}})
        if key in self.answers:
            status, answer = self.answers[key]
            return httpx.Response(status, json=answer)
        number = key.removeprefix("item-")
        reply = Reply(self, f"The answer {number}.", reset=dying)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=reply)

    def server(self) -> ConnectedServer:
        def client(info: ServerInfo) -> httpx.AsyncClient:
            return httpx.AsyncClient(transport=httpx.MockTransport(self))

        return ConnectedServer(ServerInfo(self.url, "llamacpp", "smol"), client_factory=client)


def questions(count: int) -> list[Question]:
    return [
        Question(f"What is item-{i:02d}-x ?", check=f"answer {i:02d}", name=f"q{i:02d}") for i in range(count)
    ]


def quiet(asked: Any, workspace: Path, servers: list[Any], **options: Any) -> Results:
    options.setdefault("progress", "off")
    return run(asked, [Variant("v", steps=1)], workspace=workspace, servers=servers, **options)


def summary(results: Results) -> list[tuple[str, int, str, str]]:
    return [(r.question, r.repeat, r.outcome, r.answer) for r in results.runs]


# -- spreading the runs ----------------------------------------------------------------------------------


def test_runs_are_spread_over_two_servers_each_record_names_its_server_and_the_order_is_sequential(
    shop: Path,
) -> None:
    a, b = Llama("a"), Llama("b")
    results = quiet(questions(6), shop, [a.server(), b.server()])
    one = Llama("one", delay=0.01)
    alone = quiet(questions(6), shop, [one.server()])
    assert summary(results) == summary(alone)
    assert [r.outcome for r in results.runs] == ["pass"] * 6
    assert len(a.chats) == 3
    assert len(b.chats) == 3
    assert a.most == 1
    assert b.most == 1
    assert {r.server for r in results.runs} == {a.url, b.url}
    assert sorted(a.chats + b.chats) == [f"item-{i:02d}" for i in range(6)]
    assert [s["label"] for s in results.settings["servers"]] == [a.url, b.url]
    assert results.settings["concurrency"] == 2
    assert results.settings["most_at_once"] == 2
    assert results.settings["down"] == {}
    assert results.settings["moved"] == 0


def test_each_server_runs_as_many_at_once_as_concurrency_says(shop: Path) -> None:
    a, b = Llama("a", delay=0.4), Llama("b", delay=0.4)
    results = quiet(questions(8), shop, [a.server(), b.server()], concurrency=2)
    assert a.most == 2
    assert b.most == 2
    assert results.settings["most_at_once"] == 4
    assert [r.question for r in results.runs] == [f"q{i:02d}" for i in range(8)]


def test_servers_given_by_address_are_connected_with_the_shared_options_and_a_refused_one_errs(
    shop: Path,
) -> None:
    from fixtures_servers import free_port

    urls = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]  # nothing listens
    results = quiet(questions(2), shop, urls, kind="llamacpp", model="m", max_errors=0)
    assert [(s["label"], s["kind"], s["model"]) for s in results.settings["servers"]] == [
        (url, "llamacpp", "m") for url in urls
    ]
    assert [r.outcome for r in results.runs] == ["error", "error"]
    assert all("Nothing answered" in r.why for r in results.runs)
    assert len(results.settings["down"]) == 1  # one taken out; the last one is kept


# -- a server that dies ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["reset", "refused", "503"])
def test_a_server_that_dies_gives_its_runs_back_to_the_queue_and_the_others_run_them(
    shop: Path, how: str
) -> None:
    dying = Llama("dying", fail=how, healthy=1)
    healthy = Llama("healthy")
    results = quiet(questions(6), shop, [dying.server(), healthy.server()])
    assert [r.outcome for r in results.runs] == ["pass"] * 6, [r.why for r in results.runs]
    assert [r.question for r in results.runs] == [f"q{i:02d}" for i in range(6)]
    ran_on = {r.question: r.server for r in results.runs}
    assert list(ran_on.values()).count(dying.url) == 1  # the one it answered before it died
    assert results.settings["moved"] == 1
    assert list(results.settings["down"]) == [dying.url]
    assert results.stopped is None


def test_a_run_whose_failure_is_its_own_stays_failed_and_its_server_stays_in_use(shop: Path) -> None:
    refused = {"item-01": (400, {"error": {"code": 400, "message": "invalid request: bad grammar"}})}
    a, b = Llama("a", answers=refused), Llama("b", answers=refused)
    asked = questions(4)
    asked[2] = Question("What is item-02-x ?", check="no such answer", name="q02")
    results = quiet(asked, shop, [a.server(), b.server()])
    assert [r.outcome for r in results.runs] == ["pass", "error", "fail", "pass"]
    assert "bad grammar" in results.runs[1].why
    assert results.settings["moved"] == 0
    assert results.settings["down"] == {}
    assert len(a.chats) + len(b.chats) == 4  # nothing ran twice


def test_when_every_server_dies_runs_are_retried_a_bounded_number_of_times_then_err(shop: Path) -> None:
    a, b = Llama("a", fail="503"), Llama("b", fail="503")
    results = quiet(questions(4), shop, [a.server(), b.server()], max_errors=0)
    assert [r.outcome for r in results.runs] == ["error"] * 4
    assert all("503" in r.why for r in results.runs)
    assert len(results.settings["down"]) == 1  # the last server is never taken out
    assert len(a.chats) + len(b.chats) <= 4 + 2 * 4  # each run at most 1 + 2 retries
    assert results.stopped is None


def test_errors_in_a_row_on_the_last_server_still_stop_the_experiment(shop: Path) -> None:
    a, b = Llama("a", fail="refused"), Llama("b", fail="refused", delay=0.01)
    results = quiet(questions(8), shop, [a.server(), b.server()], max_errors=3)
    assert results.stopped == "3 server errors in a row"
    assert len(results.runs) < 8


# -- stopping and resuming -------------------------------------------------------------------------------


def test_the_stop_button_keeps_what_finished_on_every_server_and_resume_runs_the_rest(
    shop: Path, tmp_path: Path
) -> None:
    a, b = Llama("a", delay=0.05), Llama("b", delay=0.05)
    slow = {f"item-{i:02d}": 30.0 for i in range(4, 8)}

    def stall(llama: Llama) -> Callable[[httpx.Request], httpx.Response]:
        def handler(request: httpx.Request) -> httpx.Response:
            body = request.content.decode(errors="replace")
            llama.delay = max((s for k, s in slow.items() if k in body), default=0.05)
            return llama(request)

        return handler

    servers = []
    for llama in (a, b):
        handler = stall(llama)
        servers.append(
            ConnectedServer(
                ServerInfo(llama.url, "llamacpp", "smol"),
                client_factory=lambda info, h=handler: httpx.AsyncClient(transport=httpx.MockTransport(h)),
            )
        )
    timer = threading.Timer(2.0, _thread.interrupt_main)
    timer.start()
    saved = tmp_path / "partial.json"
    results = quiet(questions(8), shop, servers, save=saved)
    timer.join()
    assert results.stopped == "interrupted"
    assert [r.question for r in results.runs] == [f"q{i:02d}" for i in range(4)]
    assert {r.server for r in results.runs} == {a.url, b.url}
    assert a.in_flight == 0
    assert b.in_flight == 0

    c, d = Llama("c"), Llama("d")
    resumed = quiet(questions(8), shop, [c.server(), d.server()], resume=saved)
    assert resumed.complete
    assert [r.question for r in resumed.runs] == [f"q{i:02d}" for i in range(8)]
    assert len(c.chats) + len(d.chats) == 4  # only the rest ran


# -- progress --------------------------------------------------------------------------------------------


def test_the_text_progress_names_each_runs_server_and_ends_with_each_servers_share(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dying, healthy = Llama("dying", fail="reset", healthy=1), Llama("healthy")
    quiet(questions(4), shop, [dying.server(), healthy.server()], progress="text")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 5
    assert all(" on http://" in line for line in lines[:4])
    end = lines[-1]
    assert end.startswith("Done: 4 runs in")
    assert "4/4 passed" in end
    assert "tok/s" in end
    assert f"{healthy.url}: 3 done, 0 running" in end
    assert f"{dying.url}: down (" in end
    assert "1 run moved" in end


def test_the_notebook_progress_line_counts_runs_per_server_pass_rate_and_tokens_a_second() -> None:
    from twinny_magics.experiment.fleet import fleet_status
    from twinny_magics.experiment.parallel import Progress, ServerCount
    from twinny_magics.experiment.records import Run

    done = {0: Run("q0", "v", 0, "pass"), 1: Run("q1", "v", 0, "fail")}
    progress = Progress(done=done, running=2, servers=[ServerCount(1, 1), ServerCount(1, 1, "gone")])
    text = fleet_status(progress, ["http://a", "http://b"], 2.0)
    assert text == "1/2 passed · http://a: 1 done, 1 running · http://b: down (gone)"


# -- refused before anything runs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("servers", "options", "message"),
    [
        ("http://a:8080", {}, "give a list"),
        ([], {}, "give 1 to"),
        (["http://a:8080"] * (MAX_SERVERS + 1), {}, "give 1 to"),
        (["http://a:8080", "http://a:8080/"], {}, "named twice"),
        (["http://a:8080", ""], {}, "empty address"),
        (["http://a:8080", 42], {}, "neither an address nor a server"),
        (["http://a:8080"], {"base_url": "http://b:8080"}, "servers= and base_url="),
    ],
)
def test_a_fleet_that_cannot_be_is_refused_before_anything_runs(
    shop: Path, servers: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        run(questions(1), workspace=shop, servers=servers, progress="off", **options)


def test_servers_of_different_models_are_refused_and_a_variant_cannot_name_its_own(shop: Path) -> None:
    one, other = ScriptedServer(["x"], model="smol"), ScriptedServer(["x"], model="qwen")
    with pytest.raises(ValueError, match="different models"):
        run(questions(1), workspace=shop, servers=[one, other], progress="off")
    with pytest.raises(ValueError, match="servers= and server="):
        run(questions(1), [Variant("v", server=one)], workspace=shop, servers=[other], progress="off")
    with pytest.raises(ValueError, match="own model, window would"):
        run(questions(1), [Variant("v", model="x", window=9)], workspace=shop, servers=[one], progress="off")
    assert one.requests == []
    assert other.requests == []


# -- real llama.cpp servers ------------------------------------------------------------------------------

REAL_QUESTIONS = [
    Question("Which port does app.py use?", name="port"),
    Question("What is in app.py?", name="what"),
    Question("Name the file here.", name="file"),
]


def _real(shop: Path, **where: Any) -> Results:
    variant = Variant("v", steps=1, extra={"n_predict": 24})
    return run(REAL_QUESTIONS, [variant], workspace=shop, progress="off", max_errors=0, **where)


@pytest.mark.server
def test_two_real_servers_share_the_runs_agree_with_one_and_a_killed_one_gives_its_runs_to_the_other(
    shop: Path, llama_server: Any, disposable_llama_server: Any
) -> None:
    a, b = llama_server, disposable_llama_server
    one = _real(shop, base_url=a.base_url)
    both = _real(shop, servers=[a.base_url, b.base_url], kind="llamacpp", model="smollm2")
    assert [r.outcome for r in both.runs] == ["ran"] * 3, [r.why for r in both.runs]
    assert {r.server for r in both.runs} == {a.base_url, b.base_url}
    assert [r.answer for r in both.runs] == [r.answer for r in one.runs]  # same model, seed, greedy

    b.kill()
    left = _real(shop, servers=[a.base_url, b.base_url], kind="llamacpp", model="smollm2")
    assert [r.outcome for r in left.runs] == ["ran"] * 3, [r.why for r in left.runs]
    assert {r.server for r in left.runs} == {a.base_url}
    assert list(left.settings["down"]) == [b.base_url]
    assert left.settings["moved"] >= 1
    assert [r.answer for r in left.runs] == [r.answer for r in one.runs]


def test_a_run_turned_away_as_busy_starts_again_later_on_a_server_that_stays_in_use(shop: Path) -> None:
    # A LiteLLM deployment with every max_parallel_requests slot in use answers 429 (seen on the real
    # proxy): the run is not failed, and neither is the server.
    full = {
        "error": {
            "message": "litellm.RateLimitError: Deployment has all max_parallel_requests slots in use.",
            "type": "throttling_error",
            "code": "429",
        }
    }
    busy = Llama("busy", answers={"item-01": (429, full)})
    results = quiet(questions(3), shop, [busy.server()], concurrency=2)
    assert [r.outcome for r in results.runs] == ["pass", "error", "pass"]  # always busy: given up
    assert "429" in results.runs[1].why
    assert busy.chats.count("item-01") == 1 + 5
    assert results.settings["busy"] == 5

    once = Llama("once", answers={"item-01": (429, full)})
    original = once.__call__

    def busy_once(request: httpx.Request) -> httpx.Response:
        response = original(request)
        if response.status_code == 429:
            once.answers.clear()  # free again
        return response

    server = ConnectedServer(
        ServerInfo(once.url, "llamacpp", "smol"),
        client_factory=lambda info: httpx.AsyncClient(transport=httpx.MockTransport(busy_once)),
    )
    results = quiet(questions(3), shop, [server], concurrency=2)
    assert [r.outcome for r in results.runs] == ["pass"] * 3
    assert results.settings["busy"] == 1
    assert results.settings["down"] == {}


# -- the compare line ------------------------------------------------------------------------------------


def test_the_compare_line_spreads_its_runs_over_the_servers_it_names(shop: Path) -> None:
    from fixtures_servers import free_port

    from twinny_magics.experiment.cells import compare, parse_line

    urls = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]  # nothing listens
    args = parse_line(f"--b 'steps=1' --servers {','.join(urls)} --kind llamacpp --model m --concurrency 2")
    assert args.servers == urls
    session = {"base_url": "http://127.0.0.1:1", "server": None, "workspace": str(shop)}
    results = compare(args, questions(1), base=session, namespace=None, progress="off")
    assert [s["label"] for s in results.settings["servers"]] == urls
    assert [s["at_once"] for s in results.settings["servers"]] == [2, 2]
    assert [r.outcome for r in results.runs] == ["error", "error"]  # nothing answered at either
    assert parse_line("--b 'steps=1'").servers is None
    with pytest.raises(ValueError, match="server addresses"):
        parse_line("--b 'steps=1' --servers ,")


def test_auto_on_a_fleet_asks_each_server_and_hostile_answers_stay_bounded() -> None:
    from twinny_magics.experiment.fleet import members
    from twinny_magics.experiment.slots import MAX_SLOTS

    answers = {
        "huge.test": ('{"total_slots": 1000000000}', "[]"),  # absurd: capped
        "garbage.test": ("{not json", "<html>"),  # says nothing: one
        "four.test": ('{"total_slots": 4}', json.dumps([{"id": i} for i in range(4)])),
    }

    def route(request: httpx.Request) -> httpx.Response:
        props, slots = answers[request.url.host]
        body = props if request.url.path == "/props" else slots
        return httpx.Response(200, content=body.encode())

    fleet = [ConnectedServer(ServerInfo(f"http://{host}:8080", "llamacpp", "smol")) for host in answers]
    with httpx.Client(transport=httpx.MockTransport(route)) as client:
        found = members(fleet, "auto", client)
        fixed = members(fleet, 2, client)
    assert [m.at_once for m in found] == [MAX_SLOTS, 1, 4]
    assert [m.pinned for m in found] == [True, False, True]  # 1 at once: nothing to pin
    assert [m.at_once for m in fixed] == [2, 2, 2]
    assert [m.pinned for m in fixed] == [True, False, True]
