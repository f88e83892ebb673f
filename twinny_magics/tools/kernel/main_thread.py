"""The kernel's main thread, serving the code the agent runs while the reply waits on a worker.

matplotlib and most GUI-bound libraries are not thread-safe, and the reply's loop runs on a worker (see
``Agent.run``): the worker hands the code to `MAIN`, which the waiting main thread serves.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class Stopped(Exception):
    """The stop button interrupted code the agent ran: the reply ends."""


@dataclass
class _Job:
    call: Callable[[], Any]
    future: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future)
    #: What runs, as a notice names it ("agent run 3").
    label: str = ""


class MainThread:
    """Runs callables on the main thread while it waits for a reply on a worker (``Agent.run``)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._serving = 0
        #: The job the main thread runs now (a run the reply stopped waiting for stays here until it ends).
        self.running: _Job | None = None

    def submit(self, call: Callable[[], Any], label: str = "") -> concurrent.futures.Future[Any]:
        """``call`` run on the main thread: now when this is it, else by the thread serving `serve`."""
        job = _Job(call, label=label)
        if threading.current_thread() is threading.main_thread():
            self._run(job)
        elif self._serving:
            self._jobs.put(job)
        else:
            job.future.set_exception(
                RuntimeError("nothing serves the kernel's main thread (the reply runs outside a cell)")
            )
        return job.future

    def serve(self, done: threading.Event, poll: float = 0.05) -> None:
        """Run submitted calls until ``done`` is set (a KeyboardInterrupt travels on)."""
        self._serving += 1
        try:
            while not done.is_set():
                try:
                    job = self._jobs.get(timeout=poll)
                except queue.Empty:
                    continue
                self._run(job)
        finally:
            self._serving -= 1

    def _run(self, job: _Job) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        self.running = job
        try:
            job.future.set_result(job.call())
        except Stopped as stop:
            job.future.set_exception(stop)
            raise KeyboardInterrupt from None  # the stop button: the waiting cell ends the reply
        except BaseException as exc:
            job.future.set_exception(exc)
        finally:
            self.running = None


#: The one main thread of this process.
MAIN = MainThread()
