"""Running up to N runs at once: one event loop on a worker thread, the caller's thread waiting.

The runs are started in the order they were given (a FIFO semaphore), each as its own task, and their
records are kept by that order, not by when they finished, so the results read the same as a sequential
run's. The loop lives on a thread of its own because the caller may already be inside one (a notebook
cell); the caller's thread only waits, shows progress (``tick``) and takes the stop button: a
KeyboardInterrupt there cancels the runs under way (dropped, as a sequential run under way is) and keeps
what finished. A run that raises is that run's problem: ``run_one`` turns failures into error records,
and a KeyboardInterrupt raised inside a run stops the whole experiment the same way the button does.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from twinny_magics.experiment.records import Run

T = TypeVar("T")

#: How long the runs under way may take to wind down after a stop before the caller stops waiting.
STOP_GRACE_SECONDS = 5.0
#: How often the waiting thread calls ``tick`` (progress, saving).
TICK_SECONDS = 0.2


@dataclass
class Progress:
    """What the waiting thread sees: the records so far by position, runs under way, why it stopped."""

    done: dict[int, Run] = field(default_factory=dict)
    #: Positions in the order the runs finished (the progress line prints them as they come).
    finished: list[int] = field(default_factory=list)
    running: int = 0
    most_running: int = 0
    stopped: str | None = None


class Pool(Generic[T]):
    """Runs ``run_one(item, seat)`` over ``items``, at most ``limit`` at once (see the module's doc).

    ``seat`` is which of the ``limit`` places the run holds (no two runs under way share one), so a run
    can be pinned to one of the server's slots. ``max_errors`` errors in a row (by finishing order) stop
    the pool (0: never).
    """

    def __init__(
        self,
        items: Sequence[T],
        run_one: Callable[[T, int], Awaitable[Run]],
        *,
        limit: int,
        max_errors: int = 0,
    ) -> None:
        if limit < 1:
            raise ValueError(f"limit={limit}: run at least one at a time.")
        self.items = list(items)
        self.run_one = run_one
        self.limit = limit
        self.max_errors = max_errors
        self.progress = Progress()
        self._lock = threading.Lock()
        self._errors_in_a_row = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._started = threading.Event()
        self._done = threading.Event()

    def snapshot(self) -> Progress:
        """A copy of the progress, safe to read on the waiting thread."""
        with self._lock:
            p = self.progress
            return Progress(dict(p.done), list(p.finished), p.running, p.most_running, p.stopped)

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

    async def _all(self) -> None:
        # Waiters are woken first come, first served: the runs start in the order given.
        # (No more seats than runs: a limit of a billion is the same as one of len(items).)
        gate = asyncio.Semaphore(min(self.limit, len(self.items)) or 1)
        seats = list(range(min(self.limit, len(self.items))))
        self._tasks = [
            asyncio.create_task(self._lane(position, item, gate, seats))
            for position, item in enumerate(self.items)
        ]
        if self.progress.stopped is not None:  # stopped before the tasks were there to cancel
            self._cancel_all()
        if self._tasks:
            await asyncio.wait(self._tasks)

    async def _lane(self, position: int, item: T, gate: asyncio.Semaphore, seats: list[int]) -> None:
        try:
            async with gate:
                if self.progress.stopped is not None:
                    return
                seat = seats.pop(0)
                with self._lock:
                    self.progress.running += 1
                    self.progress.most_running = max(self.progress.most_running, self.progress.running)
                try:
                    record = await self.run_one(item, seat)
                finally:
                    seats.append(seat)
                    with self._lock:
                        self.progress.running -= 1
                self._finished(position, record)
        except asyncio.CancelledError:
            return  # a run stopped under way is dropped; the experiment keeps what finished
        except KeyboardInterrupt:
            # Raised inside a run (a tool, a server in a test): the stop button, pressed from in there.
            self.stop("interrupted")

    def _finished(self, position: int, record: Run) -> None:
        with self._lock:
            if self.progress.stopped is not None and record.outcome == "error":
                return  # ended by the stop itself, not a result
            self.progress.done[position] = record
            self.progress.finished.append(position)
            self._errors_in_a_row = self._errors_in_a_row + 1 if record.outcome == "error" else 0
            errors = self._errors_in_a_row
        if self.max_errors and errors >= self.max_errors:
            self.stop(f"{errors} server errors in a row")
