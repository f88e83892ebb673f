"""Running up to N runs at once over one or several servers: one event loop on a worker thread.

Each server has seats (how many of its runs may be under way at once). The runs are started in the order
they were given, each on a free seat of the server with the most free seats, as its own task, and their
records are kept by that order, not by when they finished, so the results read the same as a sequential
run's. The loop lives on a thread of its own because the caller may already be inside one (a notebook
cell); the caller's thread only waits, shows progress (``tick``) and takes the stop button: a
KeyboardInterrupt there cancels the runs under way (dropped, as a sequential run under way is) and keeps
what finished. A run that raises is that run's problem: ``run_one`` turns failures into error records,
and a KeyboardInterrupt raised inside a run stops the whole experiment the same way the button does.

A run whose *server* failed (``run_one`` raises :class:`ServerLost`: nothing answered, the connection
dropped mid-reply, a 5xx) is not that run's failure: while another server is up, the server is taken out
(its seats are not used again) and the run goes back to the queue in its place, to be run again on
another server, at most ``retries`` times. With no other server up, it is an error record, as a failure
on a single server always was. A run the server turned away as busy (HTTP 429: a LiteLLM deployment with
all its ``max_parallel_requests`` in use, a rate limit) raises :class:`ServerBusy`: the server stays in
use and the run goes back to the queue, to start again after a pause, at most ``BUSY_RETRIES`` times.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from twinny_magics.experiment.records import Run

T = TypeVar("T")

#: How long the runs under way may take to wind down after a stop before the caller stops waiting.
STOP_GRACE_SECONDS = 5.0
#: How often the waiting thread calls ``tick`` (progress, saving).
TICK_SECONDS = 0.2
#: How many times a run whose server failed is run again on another server.
RETRIES = 2
#: How many times a run turned away as busy is started again, and the pause before each (times the try).
BUSY_RETRIES = 5
BUSY_PAUSE_SECONDS = 0.5


@dataclass(frozen=True)
class Seat:
    """Where a run goes: which server (by position), and which of that server's seats (its slot)."""

    server: int
    slot: int


class ServerLost(Exception):
    """Raised by ``run_one`` when the run failed because its server did: ``record`` is its error record."""

    def __init__(self, record: Run) -> None:
        super().__init__(record.why)
        self.record = record


class ServerBusy(ServerLost):
    """Raised by ``run_one`` when the server turned the run away as busy (HTTP 429): run it again later."""


@dataclass
class ServerCount:
    """One server's share of the experiment so far."""

    done: int = 0
    running: int = 0
    #: Why the server was taken out (its first failure), or None while it is in use.
    down: str | None = None


@dataclass
class Progress:
    """What the waiting thread sees: the records so far by position, runs under way, why it stopped."""

    done: dict[int, Run] = field(default_factory=dict)
    #: Positions in the order the runs finished (the progress line prints them as they come).
    finished: list[int] = field(default_factory=list)
    running: int = 0
    most_running: int = 0
    stopped: str | None = None
    #: Per server, by position: runs done and under way there, and whether it was taken out.
    servers: list[ServerCount] = field(default_factory=list)
    #: Runs put back in the queue after their server failed.
    requeued: int = 0
    #: Runs started again after a server turned them away as busy.
    busy: int = 0
    #: Which server ran each finished run (by position).
    ran_on: dict[int, int] = field(default_factory=dict)


class Pool(Generic[T]):
    """Runs ``run_one(item, seat)`` over ``items`` (see the module's doc).

    ``limit`` is how many runs may be under way at once: one count (one server, or several variants'
    servers sharing the count), or one count per server of a fleet. No two runs under way share a seat, so
    a run can be pinned to the slot its seat names. ``max_errors`` errors in a row (by finishing order)
    stop the pool (0: never); ``retries``: how often a run whose server failed is run again elsewhere.
    """

    def __init__(
        self,
        items: Sequence[T],
        run_one: Callable[[T, Seat], Awaitable[Run]],
        *,
        limit: int | Sequence[int],
        max_errors: int = 0,
        retries: int = RETRIES,
    ) -> None:
        limits = [limit] if isinstance(limit, int) else list(limit)
        if not limits or any(n < 1 for n in limits):
            raise ValueError(f"limit={limit}: run at least one at a time on each server.")
        self.items = list(items)
        self.run_one = run_one
        self.limits = limits
        self.max_errors = max_errors
        self.retries = retries
        self.progress = Progress(servers=[ServerCount() for _ in limits])
        self._lock = threading.Lock()
        self._errors_in_a_row = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Run | ServerLost | None]] = set()
        self._started = threading.Event()
        self._done = threading.Event()

    def snapshot(self) -> Progress:
        """A copy of the progress, safe to read on the waiting thread."""
        with self._lock:
            p = self.progress
            return replace(
                p,
                done=dict(p.done),
                finished=list(p.finished),
                servers=[replace(s) for s in p.servers],
                ran_on=dict(p.ran_on),
            )

    def run(self, tick: Callable[[Progress], None] = lambda progress: None) -> Progress:
        """Run every item (or until stopped); ``tick`` is called on this thread while they run."""
        context = contextvars.copy_context()  # a notebook's output goes to the cell that ran this
        thread = threading.Thread(
            target=context.run, args=(self._work,), name="twinny-experiment", daemon=True
        )
        try:
            thread.start()
            while not self._done.wait(TICK_SECONDS):
                tick(self.snapshot())
        except KeyboardInterrupt:
            self.stop("interrupted")
            self._done.wait(STOP_GRACE_SECONDS)
        return self.snapshot()

    def stop(self, why: str) -> None:
        """Stop: no run starts after this, and the runs under way are cancelled (thread-safe)."""
        with self._lock:
            if self.progress.stopped is None:
                self.progress.stopped = why
        self._started.wait(STOP_GRACE_SECONDS)
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing is under way
                loop.call_soon_threadsafe(self._cancel_all)

    def _cancel_all(self) -> None:
        for task in self._tasks:
            task.cancel()

    def _work(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            asyncio.set_event_loop(loop)
            self._loop = loop
            self._started.set()
            loop.run_until_complete(self._all())
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
            self._started.set()
            self._done.set()

    def _seat(self, free: list[list[int]]) -> Seat | None:
        """A free seat on the server (still in use) with the most free seats; the first such on a tie."""
        best = None
        for server, seats in enumerate(free):
            usable = seats and self.progress.servers[server].down is None
            if usable and (best is None or len(seats) > len(free[best])):
                best = server
        return None if best is None else Seat(best, free[best].pop(0))

    async def _all(self) -> None:
        # No more seats than runs: a limit of a billion is the same as one of len(items).
        free = [list(range(min(n, len(self.items)))) for n in self.limits]
        queue = list(range(len(self.items)))  # positions, kept sorted: the runs start in order
        tries = [0] * len(self.items)
        busy = [0] * len(self.items)
        where: dict[asyncio.Task[Run | ServerLost | None], tuple[int, Seat]] = {}
        while self.progress.stopped is None:
            while queue and self.progress.stopped is None and (seat := self._seat(free)) is not None:
                position = queue.pop(0)
                pause = BUSY_PAUSE_SECONDS * busy[position]
                task = asyncio.create_task(self._lane(self.items[position], seat, pause))
                where[task] = (position, seat)
                self._tasks.add(task)
            if not where:
                break  # every run done, or no server left to run the rest on
            finished, _ = await asyncio.wait(where, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(finished, key=lambda t: where[t][0]):
                position, seat = where.pop(task)
                self._tasks.discard(task)
                outcome = task.result()
                if isinstance(outcome, ServerBusy) and busy[position] < BUSY_RETRIES:
                    busy[position] += 1
                    bisect.insort(queue, position)
                    free[seat.server].append(seat.slot)
                    free[seat.server].sort()
                    with self._lock:
                        self.progress.busy += 1
                    continue
                if type(outcome) is ServerLost and self._take_out(seat.server, outcome.record.why):
                    if tries[position] < self.retries:
                        tries[position] += 1
                        bisect.insort(queue, position)
                        with self._lock:
                            self.progress.requeued += 1
                        continue
                    outcome.record.why += f" (its server failed {tries[position] + 1} times)"
                if self.progress.servers[seat.server].down is None:
                    free[seat.server].append(seat.slot)
                    free[seat.server].sort()
                if outcome is not None:
                    record = outcome.record if isinstance(outcome, ServerLost) else outcome
                    self._finished(position, record, seat.server)
        if queue and self.progress.stopped is None and not where:
            self.stop("no server left")
        if where:  # stopped: the runs under way were cancelled; wait for them to wind down
            await asyncio.wait(where)
            for task, (position, seat) in sorted(where.items(), key=lambda item: item[1][0]):
                outcome = task.result()
                if isinstance(outcome, Run):  # one that ended before the cancel reached it is kept
                    self._finished(position, outcome, seat.server)

    def _take_out(self, server: int, why: str) -> bool:
        """Take ``server`` out if another is still in use (its runs go elsewhere); False if none is."""
        counts = self.progress.servers
        if not any(c.down is None for i, c in enumerate(counts) if i != server):
            return False
        with self._lock:
            if counts[server].down is None:
                counts[server].down = why.splitlines()[0][:200] if why else "failed"
        return True

    async def _lane(self, item: T, seat: Seat, pause: float = 0.0) -> Run | ServerLost | None:
        count = self.progress.servers[seat.server]
        with self._lock:
            self.progress.running += 1
            count.running += 1
            self.progress.most_running = max(self.progress.most_running, self.progress.running)
        try:
            if pause:
                await asyncio.sleep(pause)
            return await self.run_one(item, seat)
        except ServerLost as lost:
            return lost
        except asyncio.CancelledError:
            return None  # a run stopped under way is dropped; the experiment keeps what finished
        except KeyboardInterrupt:
            # Raised inside a run (a tool, a server in a test): the stop button, pressed from in there.
            self.stop("interrupted")
            return None
        finally:
            with self._lock:
                self.progress.running -= 1
                count.running -= 1

    def _finished(self, position: int, record: Run, server: int) -> None:
        with self._lock:
            if self.progress.stopped is not None and record.outcome == "error":
                return  # ended by the stop itself, not a result
            self.progress.done[position] = record
            self.progress.finished.append(position)
            self.progress.ran_on[position] = server
            self.progress.servers[server].done += 1
            self._errors_in_a_row = self._errors_in_a_row + 1 if record.outcome == "error" else 0
            errors = self._errors_in_a_row
        if self.max_errors and errors >= self.max_errors:
            self.stop(f"{errors} server errors in a row")
