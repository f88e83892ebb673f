"""The kernel as the agent's tools see it: the cells run so far, code run as a cell, cells proposed.

Three tools, offered only inside an IPython kernel:

- ``cell_history``: the cells the user ran, newest last — source, value, the tail of what they printed,
  rich outputs named, and an error as its exception line plus the frames in the user's own code
  (`CellLog` watches the shell's ``pre_run_cell``/``post_run_cell`` events from ``%load_ext`` on; cells
  run before it show their value from ``Out`` only). Read-only; ``%%agent`` cells are left out.
- ``run_python``: code run in the user's namespace, as a cell would run it (its names stay defined, the
  last expression is its value), on the kernel's *main* thread — matplotlib and most GUI-bound libraries
  are not thread-safe, and the reply's loop runs on a worker (see ``Agent.run``): the worker hands the
  code to `MAIN`, which the waiting main thread serves. Approved like a command (``kernel=ask``), or run
  (``allow``), or not offered (``off``). Output is captured, never shown raw in the cell: stdout and
  stderr keep a bounded tail, rich outputs are named, figures left open by an inline backend are
  flushed into the capture. A time limit sends the main thread an interrupt of its own; the kernel's stop
  button interrupts the code and ends the reply; ``raise KeyboardInterrupt`` in the code is only an
  error. The kernel stays usable after each.
- ``propose_cell``: a new code cell for the notebook, never run. Inserted below the ``%%agent`` cell when
  that cell ends, by IPython's next-input payload (what ``%load`` uses; JupyterLab and Notebook 7 put
  the text in a new cell below and do not run it) — after the user chose Insert, or at once under
  ``cells=insert``. Where nobody can insert (a terminal, a headless run) it is shown as code to copy.
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import contextlib
import difflib
import linecache
import logging
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from twinny_magics import cells
from twinny_magics.cell_log import CellLog, TailWriter, value_text
from twinny_magics.cells import CellRecord
from twinny_magics.options import DEFAULTS
from twinny_magics.tools import variables

log = logging.getLogger(__name__)

KernelMode = Literal["ask", "allow", "off"]
CellsMode = Literal["review", "insert"]
#: Seconds code run by the agent may take before it is interrupted.
KERNEL_SECONDS: float = DEFAULTS["kernel_seconds"]
_AGENT_FILE = "<agent run {n}>"


# --- the main thread ---------------------------------------------------------------------------------


class Stopped(Exception):
    """The stop button interrupted code the agent ran: the reply ends."""


@dataclass
class _Job:
    call: Callable[[], Any]
    future: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future)


class MainThread:
    """Runs callables on the main thread while it waits for a reply on a worker (``Agent.run``)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._serving = 0

    def submit(self, call: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """``call`` run on the main thread: now when this is it, else by the thread serving `serve`."""
        job = _Job(call)
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

    @staticmethod
    def _run(job: _Job) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        try:
            job.future.set_result(job.call())
        except Stopped as stop:
            job.future.set_exception(stop)
            raise KeyboardInterrupt from None  # the stop button: the waiting cell ends the reply
        except BaseException as exc:
            job.future.set_exception(exc)


#: The one main thread of this process.
MAIN = MainThread()


# --- running code --------------------------------------------------------------------------------------


@dataclass
class RunOutcome:
    """What code run by the agent did: its record, and whether it failed or was stopped."""

    record: CellRecord
    failed: bool = False
    timed_out: bool = False


class _Interrupts:
    """SIGINT while the agent's code runs: by our own timer (time limit) or from outside (stop button).

    Code that raises KeyboardInterrupt itself sets neither flag: that is an error of the code.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.timed_out = False
        self.signalled = False
        self._timer: threading.Timer | None = None
        self._previous: Any = None
        self._ident = threading.get_ident()

    def __enter__(self) -> _Interrupts:
        try:
            self._previous = signal.signal(signal.SIGINT, self._handler)
        except ValueError:  # not the main thread: the time limit cannot interrupt (and is not needed)
            self._previous = None
        self._timer = threading.Timer(self.seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handler(self, signum: int, frame: Any) -> None:
        if not self.timed_out:
            self.signalled = True
        raise KeyboardInterrupt

    def _fire(self) -> None:
        self.timed_out = True
        try:
            signal.pthread_kill(self._ident, signal.SIGINT)  # wakes a sleep, unlike interrupt_main
        except (OSError, AttributeError, ValueError):
            import _thread  # noqa: PLC0415

            _thread.interrupt_main()


@contextlib.contextmanager
def _captured(shell: Any, log_: CellLog | None, record: CellRecord) -> Iterator[tuple[TailWriter, Any]]:
    """stdout/stderr into one bounded tail, rich outputs named into ``record``, ``clear_output`` kept
    from clearing the reply."""
    streams = (sys.stdout, sys.stderr)
    tail = TailWriter(cells.PRINTED_CHARS, passthrough=streams[0])
    pub = getattr(shell, "display_pub", None)
    clear = getattr(pub, "clear_output", None) if pub is not None else None
    owner = threading.get_ident()
    if log_ is not None:
        log_.capturing = record
    if pub is not None and clear is not None:
        original_clear = clear

        def clear_output(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == owner:
                return None
            return original_clear(*args, **kwargs)

        pub.clear_output = clear_output
    sys.stdout = sys.stderr = tail
    try:
        yield tail, streams
    finally:
        sys.stdout, sys.stderr = streams
        if log_ is not None:
            log_.capturing = None
        if pub is not None and clear is not None:
            with contextlib.suppress(AttributeError):
                del pub.clear_output  # the instance attribute; the class's method shows again


def run_code(shell: Any, code: str, seconds: float, number: int) -> RunOutcome:
    """Run ``code`` in ``shell.user_ns`` as a cell would (on the calling thread: call it on the main one).

    Plain Python: ``%`` magics and ``!`` commands are not transformed. The last expression is the value.
    Raises `Stopped` when the stop button interrupted it (after recording what it did).
    """
    log_ = CellLog.of(shell)
    record = CellRecord(None, cells.clip(code, cells.SOURCE_CHARS))
    filename = _AGENT_FILE.format(n=number)
    try:
        tree = ast.parse(code, filename)
    except SyntaxError as exc:
        record.error = cells.error_text(exc, log_.where)
        hint = "Write plain Python: % magics and ! commands are not run here." if _looks_magic(code) else ""
        record.error += f"\n  {hint}" if hint else ""
        return RunOutcome(record, failed=True)
    last: ast.expr | None = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop().value  # type: ignore[attr-defined]
    lines = code.splitlines(keepends=True)
    linecache.cache[filename] = (len(code), None, lines, filename)
    namespace = shell.user_ns
    value: object = None
    outcome = RunOutcome(record)
    stopped_by_user = False
    with _captured(shell, log_, record) as (tail, _), _Interrupts(seconds) as interrupts:
        try:
            exec(compile(tree, filename, "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last), filename, "eval"), namespace)
            _flush_figures()
        except KeyboardInterrupt as exc:
            if interrupts.timed_out:
                record.stopped = f"the time limit ({seconds:g} s) interrupted it"
                outcome.timed_out = True
            elif interrupts.signalled:
                record.stopped = "the user pressed the stop button"
                stopped_by_user = True
            else:
                record.error = cells.error_text(exc, log_.where)
            outcome.failed = True
        except BaseException as exc:  # SystemExit too: the kernel goes on
            record.error = cells.error_text(exc, log_.where) + _close_names(exc, namespace)
            if isinstance(exc, SystemExit):
                record.error += "\n  (sys.exit was caught: the kernel goes on)"
            outcome.failed = True
        finally:
            record.printed, record.printed_chars = tail.text(), tail.total
    if value is not None and not outcome.failed:
        namespace["_"] = value
        record.value = value_text(value, variables.bounded_repr(value, chars=cells.VALUE_CHARS))
    if stopped_by_user:
        raise Stopped(cells.cell_text(record))
    return outcome


def _close_names(exc: BaseException, namespace: Any) -> str:
    """For a NameError, the kernel's names most like the missing one (a line), else ''."""
    name = getattr(exc, "name", None) if isinstance(exc, NameError) else None
    if not isinstance(name, str):
        return ""
    known = [n for n in list(namespace) if isinstance(n, str) and not n.startswith("_")]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    return f"\n  Names like it in the kernel: {', '.join(close)}" if close else ""


def _flush_figures() -> None:
    """Figures an inline backend would show at the end of a cell, shown now (into the capture)."""
    for name in ("matplotlib_inline.backend_inline", "ipykernel.pylab.backend_inline"):
        module = sys.modules.get(name)
        flush = getattr(module, "flush_figures", None)
        if callable(flush):
            flush()
            return


def _looks_magic(code: str) -> bool:
    return any(line.lstrip().startswith(("%", "!")) for line in code.splitlines())


# --- the kernel tools' state -------------------------------------------------------------------------


@dataclass
class Proposal:
    """A cell the model proposed; ``status``: pending, insert (chosen), inserted, discarded, shown."""

    code: str
    why: str
    status: str = "pending"


class Kernel:
    """One shell's tools: the history, code run on the main thread, proposed cells.

    ``can_insert``: whether a frontend will take a next-input payload (a live notebook; not a terminal
    or a headless run) — set by the magic for each cell.
    """

    def __init__(self, shell: Any, *, seconds: float = KERNEL_SECONDS, main: MainThread = MAIN) -> None:
        self.shell = shell
        self.log = CellLog.of(shell)
        self.seconds = seconds
        self.main = main
        self.runs = 0
        self.proposals: list[Proposal] = []
        self.can_insert = False

    @property
    def namespace(self) -> Any:
        return self.shell.user_ns

    def history_text(self, chars: int = cells.HISTORY_CHARS) -> str:
        return cells.history_text(self.log.history(), chars)

    async def run(self, code: str) -> RunOutcome:
        """Run ``code`` on the main thread; `Stopped` (the stop button) travels on as cancellation."""
        self.runs += 1
        number = self.runs
        future = self.main.submit(lambda: run_code(self.shell, code, self.seconds, number))
        try:
            outcome: RunOutcome = await asyncio.wrap_future(future)
        except Stopped:
            raise asyncio.CancelledError from None
        self.log.records.append(outcome.record)
        return outcome

    def to_insert(self) -> str | None:
        """The code of every proposal chosen for insertion, once (marked inserted); None when none is."""
        chosen = [p for p in self.proposals if p.status == "insert"]
        for proposal in chosen:
            proposal.status = "inserted"
        return "\n\n".join(p.code.rstrip("\n") for p in chosen) or None
