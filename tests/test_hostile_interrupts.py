"""The stop button at random moments: during a request, a tool's write, a command.

The kernel's stop button is SIGINT to the kernel's main thread, which is blocked in ``Agent.run`` while
the reply runs on its worker thread (a Jupyter cell runs inside an event loop). Here the same happens:
``Agent.run`` is called inside a running loop, and a timer thread sends SIGINT to the main thread at a
seeded random moment. Each stop must return control within a second, leave no ``twinny-*`` thread, no
process of the command (a zombie counts as dead) and no half-written file, and the next reply of the same
session must answer.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hostile_server import (
    HEALTHY,
    MODEL,
    Answer,
    HostileServer,
    agent_shell,
    call_pieces,
    text_pieces,
    tool_call,
)
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from twinny_magics.agent import Agent
from twinny_magics.events import CallFinished, CallStarted, Event, Reply, ReplyFinished

SEED = 6
STOPS = 20
#: How soon after the stop ``run`` must give control back.
RETURN_WITHIN = 1.0
#: A reply slow enough that every stop lands inside it: about 2 s of streamed words.
SLOW_WORDS = " ".join(f"w{n}" for n in range(100))
BIG = "0123456789abcdef\n" * 240_000  # about 4 MB for create_file in apply mode


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with HostileServer(window=8192) as running:
        yield running


@dataclass
class Stop:
    """A timer that sends SIGINT to the main thread, as the kernel's stop button does."""

    delay: float
    sent_at: float | None = None

    def __post_init__(self) -> None:
        self._timer = threading.Timer(self.delay, self._send)

    def _send(self) -> None:
        self.sent_at = time.monotonic()
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    def __enter__(self) -> Stop:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        self._timer.join()


def run_as_a_cell(
    agent: Agent, question: str, events: list[Event] | None = None
) -> tuple[Reply | KeyboardInterrupt, float]:
    """``agent.run`` as a Jupyter cell calls it (inside a running loop); what it gave, and when."""

    async def cell() -> Reply | KeyboardInterrupt:
        try:
            return agent.run(question, None if events is None else events.append)
        except KeyboardInterrupt as stopped:
            return stopped

    loop = asyncio.new_event_loop()
    try:
        outcome = loop.run_until_complete(cell())
    finally:
        loop.close()
    return outcome, time.monotonic()


def wait_for(condition: Any, seconds: float = 1.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


def twinny_threads() -> list[str]:
    # Not is_alive(): before Python 3.13 a join interrupted by Ctrl-C marks a thread stopped while it runs.
    return [t.name for t in threading.enumerate() if t.name.startswith("twinny")]


def live_processes(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` and that are not zombies."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone meanwhile
        if marker in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


def half_written(workspace: Path) -> list[str]:
    """Temporary files of an atomic write left behind."""
    return [p.name for p in workspace.rglob("*.tmp")]


@dataclass(frozen=True)
class Moment:
    """Where a stop lands: in a request, in a tool's write, or in a command."""

    kind: str
    delay: float
    number: int

    @property
    def marker(self) -> str:
        return f"29.{self.number:03d}7"  # a sleep this long is this stop's command and nothing else


def moments() -> list[Moment]:
    rng = random.Random(SEED)
    kinds = ("request", "tool", "command")
    return [Moment(kinds[n % 3], round(rng.uniform(0.02, 0.9), 3), n) for n in range(STOPS)]


def queue_for(server: HostileServer, moment: Moment) -> None:
    """What the server answers in the reply this stop interrupts."""
    slow = Answer(pieces=text_pieces(SLOW_WORDS), delay=0.02)
    if moment.kind == "request":
        server.queue(slow)
    elif moment.kind == "tool":
        # The content streams in 40 pieces over ~0.4 s, is written (atomically), then a slow answer.
        content = BIG.replace("0123", f"{moment.number:04d}", 1)
        fragments = [f'{{"path": "made{moment.number}.txt", "content": ', *_json_pieces(content, 40), "}"]
        server.queue(Answer(pieces=call_pieces("create_file", fragments), delay=0.01), slow)
    else:
        command = f"sleep {moment.marker} & sleep {moment.marker}; echo never"
        server.queue(tool_call("run_command", {"command": command}), slow)


def _json_pieces(text: str, parts: int) -> list[str]:
    import json

    encoded = json.dumps(text)
    size = len(encoded) // parts + 1
    return [encoded[i : i + size] for i in range(0, len(encoded), size)]


def test_twenty_stops_at_random_moments_each_stop_at_once_and_leave_nothing_behind(
    server: HostileServer, tmp_path: Path
) -> None:
    agent = Agent(
        server.url, model=MODEL, kind="llamacpp", workspace=tmp_path, edits="apply", commands="allow"
    )
    assert run_as_a_cell(agent, "Warm up.")[0].text == HEALTHY  # type: ignore[union-attr]
    landed: dict[str, int] = {}
    for moment in moments():
        queue_for(server, moment)
        events: list[Event] = []
        with Stop(moment.delay) as stop:
            outcome, returned = run_as_a_cell(agent, f"Stop {moment.number}.", events)
        assert isinstance(outcome, KeyboardInterrupt), (moment, outcome)
        assert stop.sent_at is not None
        assert returned - stop.sent_at < RETURN_WITHIN, (moment, returned - stop.sent_at)
        # When run gives control back, the stopped reply is already recorded: its worker has wound down.
        reply = agent.replies[-1]
        assert reply.question == f"Stop {moment.number}.", (moment, reply.question)
        assert reply.stopped == "stopped", (moment, reply)
        phase = _phase(events)
        landed[f"{moment.kind} {phase}"] = landed.get(f"{moment.kind} {phase}", 0) + 1
        assert wait_for(lambda: not twinny_threads()), (moment, twinny_threads())
        assert wait_for(lambda m=moment: not live_processes(m.marker)), (
            moment,
            live_processes(moment.marker),
        )
        assert half_written(tmp_path) == [], moment
        made = tmp_path / f"made{moment.number}.txt"
        if made.exists():
            assert made.stat().st_size == len(BIG), moment
        server.clear()  # whatever the stopped reply did not ask for
        answered, _ = run_as_a_cell(agent, "Still there?")
        assert isinstance(answered, Reply), (moment, answered)
        assert answered.text == HEALTHY, (moment, answered)
    assert len(agent.replies) == 2 * STOPS + 1
    # The seeded moments land in every phase: the request, the command while it runs, around the write.
    assert {"request before any call", "command during the call", "tool after the call"} <= set(landed), (
        landed
    )


class _StoppedAtStart(threading.Thread):
    """The reply's thread, with the stop landing at a chosen point of its start (set ``when``)."""

    when = "before"

    def start(self) -> None:
        if self.name != "twinny-reply":  # the patch reaches every thread started meanwhile
            super().start()
            return
        if self.when == "before":
            raise KeyboardInterrupt  # before the thread exists: nothing of the reply ran
        super().start()
        if self.when == "running":  # once the reply's loop runs (past the start, its first steps taken)
            wait_for(lambda: any(t.name == "twinny-reply" for t in threading.enumerate()), 2.0)
            time.sleep(0.05)
        raise KeyboardInterrupt  # "as": while start() waits for the new thread to say it began


@pytest.mark.parametrize("when", ["before", "as", "running"])
def test_a_stop_as_the_reply_thread_starts_still_records_a_stopped_reply(
    server: HostileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    # A stop pressed in a cell's first milliseconds lands while the reply's thread is being started (it
    # once landed before the handler that cancels the reply: the reply ran on, unrecorded, after `run`
    # gave control back).
    import twinny_magics.agent as agent_module

    agent = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path)
    assert run_as_a_cell(agent, "Warm up.")[0].text == HEALTHY  # type: ignore[union-attr]
    asked = len(server.bodies)
    server.queue(Answer(pieces=text_pieces(SLOW_WORDS), delay=0.02))
    monkeypatch.setattr(_StoppedAtStart, "when", when)
    monkeypatch.setattr(agent_module.threading, "Thread", _StoppedAtStart)
    events: list[Event] = []
    outcome, _ = run_as_a_cell(agent, "Stopped early.", events)
    monkeypatch.undo()
    assert isinstance(outcome, KeyboardInterrupt)
    reply = agent.replies[-1]
    assert (reply.question, reply.stopped) == ("Stopped early.", "stopped")
    assert [n.text for n in reply.notices].count("Stopped.") == 1
    assert sum(isinstance(e, ReplyFinished) for e in events) == 1
    assert wait_for(lambda: not twinny_threads()), twinny_threads()
    if when == "before":
        assert len(server.bodies) == asked  # nothing was sent
    assert len(agent.replies) == 2  # recorded once, by one thread or the other
    server.clear()
    answered, _ = run_as_a_cell(agent, "Still there?")
    assert isinstance(answered, Reply), answered
    assert answered.text == HEALTHY, answered
    assert len(agent.replies) == 3


def _phase(events: list[Event]) -> str:
    started = any(isinstance(e, CallStarted) for e in events)
    finished = any(isinstance(e, CallFinished) for e in events)
    return "after the call" if finished else "during the call" if started else "before any call"


def test_a_stop_while_the_server_is_silent_returns_at_once_and_the_next_reply_answers(
    server: HostileServer, tmp_path: Path
) -> None:
    agent = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path)
    server.window_answer = Answer(silent=True)  # the window probe waits on it (at most 1.5 s)
    for delay in (0.3, 1.0):
        server.queue(Answer(silent=True))
        with Stop(delay) as stop:
            outcome, returned = run_as_a_cell(agent, "Anyone?")
        assert isinstance(outcome, KeyboardInterrupt)
        assert stop.sent_at is not None
        assert returned - stop.sent_at < RETURN_WITHIN
        assert wait_for(lambda: not twinny_threads())
    server.window_answer = None
    server.clear()
    answered, _ = run_as_a_cell(agent, "Now?")
    assert isinstance(answered, Reply)
    assert answered.text == HEALTHY


def test_a_stop_in_review_mode_writes_nothing(server: HostileServer, tmp_path: Path) -> None:
    agent = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path, edits="review")
    fragments = ['{"path": "never.txt", "content": ', *_json_pieces(BIG, 40), "}"]
    slow = Answer(pieces=text_pieces(SLOW_WORDS), delay=0.02)
    for delay in (0.2, 0.7):
        server.queue(Answer(pieces=call_pieces("create_file", fragments), delay=0.01), slow)
        with Stop(delay):
            outcome, _ = run_as_a_cell(agent, "Make it.")
        assert isinstance(outcome, KeyboardInterrupt)
        assert sorted(p.name for p in tmp_path.iterdir()) == []
        server.clear()


# --- through %%agent on a real shell ------------------------------------------------------------------


@pytest.fixture
def ip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    with agent_shell(tmp_path, monkeypatch, output="text") as shell:
        yield shell


@pytest.mark.parametrize("kind", ["request", "command"])
def test_the_stop_button_in_a_cell_says_stopped_and_the_next_cell_answers(
    ip: InteractiveShell, server: HostileServer, kind: str
) -> None:
    moment = Moment(kind, 0.5, 900 + len(kind))
    queue_for(server, moment)
    line = f"--server {server.url} --kind llamacpp --model {MODEL} --commands allow"
    with Stop(moment.delay) as stop, capture_output() as captured:
        result = ip.run_cell(f"%%agent {line}\nStop me.\n")
    returned = time.monotonic()
    assert result.success
    assert stop.sent_at is not None
    assert returned - stop.sent_at < RETURN_WITHIN
    assert captured.stdout.rstrip().splitlines()[-1].startswith("Stopped"), captured.stdout
    assert "Traceback" not in captured.stdout + captured.stderr
    assert wait_for(lambda: not live_processes(moment.marker))
    server.clear()
    with capture_output() as captured:
        ip.run_cell(f"%%agent {line}\nStill there?\n")
    assert HEALTHY in captured.stdout


def test_the_reply_runs_in_the_context_of_the_cell_that_asked(server: HostileServer, tmp_path: Path) -> None:
    # ipykernel keeps in context variables which cell an output belongs to; the reply's own thread starts
    # with none, so without the cell's context a reply's outputs reach no cell (found in the browser).
    cell_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("cell", default=None)
    seen: list[str | None] = []
    agent = Agent(server.url, model=MODEL, kind="llamacpp", workspace=tmp_path)

    async def cell() -> Reply:
        cell_var.set("cell 7")
        return agent.run("Hello?", lambda event: seen.append(cell_var.get()))

    loop = asyncio.new_event_loop()
    try:
        reply = loop.run_until_complete(cell())
    finally:
        loop.close()
    assert reply.text == HEALTHY
    assert seen
    assert set(seen) == {"cell 7"}
