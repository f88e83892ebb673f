"""run_python's code run as a cell would run it, on the main thread, under an escalating time limit.

The code runs in the user's namespace (its names stay defined, the last expression is its value). Output
is captured, never shown raw in the cell: stdout and stderr keep a bounded tail, rich outputs are named,
figures left open by an inline backend are flushed into the capture. The time limit escalates
(`_Interrupts`): an interrupt of its own to the main thread; after a grace for the code's cleanup, an
interrupt every quarter second (and, where the code took SIGINT away, an exception raised in the main
thread); after a second grace the reply stops waiting (`still_running`). The kernel's stop button
interrupts the code and ends the reply (`Stopped`).
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import difflib
import linecache
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from twinny_magics import cells
from twinny_magics.cell_log import CellLog, TailWriter, value_text
from twinny_magics.cells import CellRecord
from twinny_magics.options import DEFAULTS
from twinny_magics.tools.kernel.main_thread import MainThread, Stopped
from twinny_magics.tools.kernel.rendering import bounded_repr

#: Seconds code run by the agent may take before it is interrupted.
KERNEL_SECONDS: float = DEFAULTS["kernel_seconds"]
#: After the time limit's first interrupt, how long the code may take to wind down (its ``except
#: KeyboardInterrupt`` or ``finally``) before the interrupts repeat; for as long again they come every
#: `INTERRUPT_EVERY_SECONDS`, and then the reply stops waiting for the code.
INTERRUPT_GRACE_SECONDS = 2.0
INTERRUPT_EVERY_SECONDS = 0.25
_AGENT_FILE = "<agent run {n}>"


@dataclass
class RunOutcome:
    """What code run by the agent did: its record, and whether it failed or was stopped."""

    record: CellRecord
    failed: bool = False
    timed_out: bool = False
    #: The code went on through every interrupt and the reply stopped waiting: it runs on in the kernel.
    still_running: bool = False
    #: What the user is told in the reply's notices ('' for nothing).
    notice: str = ""


class _Interrupts:
    """SIGINT while the agent's code runs: by the time limit's own thread, or from outside (stop button).

    The time limit escalates, because code can catch an interrupt (``except KeyboardInterrupt``, ``except
    BaseException``) and go on: at ``seconds`` one interrupt; after ``grace`` (for the code's cleanup)
    one every `INTERRUPT_EVERY_SECONDS` — each a SIGINT sent to the main thread (it wakes a sleep, as
    the kernel's own interrupt does), and where the code took the SIGINT handler away (``SIG_IGN``, a
    handler of its own) also a KeyboardInterrupt raised in the main thread by
    ``PyThreadState_SetAsyncExc``; after another ``grace`` they stop (`exhausted`) and the code is left
    to the user. ``give_up`` (the reply stopped waiting) stops them too. An interrupt after that is the
    user's (the stop button). Code that raises KeyboardInterrupt itself sets no flag: that is its error.

    An interrupt must never land in the kernel's own code around the agent's: it is armed only from
    the end of ``__enter__`` to `close`; the handler drops one that arrives outside that span or in the
    frames around the code (`_OWN_CODE`); the thread raises nothing while the main thread is in those
    frames; and `close` (on the main thread, under the lock the thread sends under) disarms and clears
    a raise not yet delivered. The one gap left: a raise aimed while the code ran may land as it ends
    (the main thread moved on between the look and the raise); `Kernel.run` then still reports the
    time limit.
    """

    def __init__(self, seconds: float, grace: float = INTERRUPT_GRACE_SECONDS) -> None:
        self.seconds = seconds
        self.grace = grace
        self.timed_out = False
        self.signalled = False
        self.exhausted = False
        #: Interrupts the time limit sent.
        self.sent = 0
        self._raised_async = False
        # Armed from the end of __enter__ (the code starts) to close (it ended): an interrupt outside
        # that span would land in the kernel's code, not the agent's.
        self._armed = False
        self._lock = threading.Lock()
        self._go = threading.Event()
        self._closed = threading.Event()
        self._given_up = threading.Event()
        self._installed = False
        self._previous: Any = None
        self._ident = threading.get_ident()

    def __enter__(self) -> _Interrupts:
        self._ident = threading.get_ident()
        try:
            self._previous = signal.signal(signal.SIGINT, self._handler)
            self._installed = True
        except ValueError:  # not the main thread: the time limit cannot interrupt (and is not needed)
            self._previous = None
        try:
            threading.Thread(target=self._escalate, name="twinny-time-limit", daemon=True).start()
        except BaseException:
            self.__exit__()
            raise
        with self._lock:
            self._armed = True
        self._go.set()  # the limit counts from here, not from a thread start that a busy machine slowed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        if self._installed and self._previous is not None:
            # signal.signal runs a SIGINT still pending first, by the handler now set: ours, disarmed.
            signal.signal(signal.SIGINT, self._previous)

    def close(self) -> None:
        """The code ended (on the main thread): no interrupt of ours may follow."""
        with self._lock:
            self._armed = False
            if self._raised_async:
                _async_raise(self._ident, None)  # one sent but not yet delivered is cleared
        self._closed.set()
        self._go.set()

    def give_up(self) -> None:
        """The reply stopped waiting: no more interrupts; a later one is the user's."""
        self._given_up.set()

    @property
    def given_up(self) -> bool:
        return self._given_up.is_set()

    def _handler(self, signum: int, frame: Any) -> None:
        if not self._armed or (frame is not None and frame.f_code in _OWN_CODE):
            return  # the code has ended (or is about to): this one is too late to mean anything
        if not self.timed_out or self.exhausted or self.given_up:
            self.signalled = True
        raise KeyboardInterrupt

    def _escalate(self) -> None:
        self._go.wait()
        if self._closed.wait(self.seconds) or self.given_up:
            return
        with self._lock:
            if self._disarmed():
                return
            self.timed_out = True
            self._interrupt(raise_too=False)
        end = time.monotonic() + 2 * self.grace
        wait = self.grace
        while not self._closed.wait(wait) and not self.given_up and time.monotonic() < end:
            wait = INTERRUPT_EVERY_SECONDS
            with self._lock:
                if self._disarmed():
                    return
                self._interrupt(raise_too=self._taken_away())
        self.exhausted = True

    def _taken_away(self) -> bool:
        """Whether the code replaced the SIGINT handler (ignored it, or set its own): only then is an
        exception raised in the main thread — it lands wherever the thread is, while a SIGINT's handler
        looks first (a raise is the last resort, against code that asked for it)."""
        try:
            return signal.getsignal(signal.SIGINT) != self._handler
        except (ValueError, OSError):
            return False

    def _disarmed(self) -> bool:
        return not self._armed  # read afresh: the main thread's close() sets it

    def _interrupt(self, *, raise_too: bool) -> None:
        """One interrupt (called under the lock): a SIGINT to the main thread and, when the code took
        the handler away, a KeyboardInterrupt raised there — unless it is in the frames around the code.
        Off the main thread (no handler could be set) only the raise: a SIGINT would reach the main
        thread's handler, not this code."""
        self.sent += 1
        if self._installed:
            try:
                signal.pthread_kill(self._ident, signal.SIGINT)  # wakes a sleep, unlike interrupt_main
            except (OSError, AttributeError, ValueError):
                import _thread  # noqa: PLC0415

                _thread.interrupt_main()
            if not raise_too:
                return
        top = sys._current_frames().get(self._ident)
        if top is not None and top.f_code not in _OWN_CODE and _async_raise(self._ident, KeyboardInterrupt):
            self._raised_async = True


def _async_raise(ident: int, kind: type[BaseException] | None) -> bool:
    """Raise ``kind`` in thread ``ident`` at its next Python instruction (None: clear one not yet
    raised); False where this Python cannot (not CPython)."""
    api = getattr(ctypes, "pythonapi", None)
    if api is None:
        return False
    try:
        done = api.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(ident), None if kind is None else ctypes.py_object(kind)
        )
    except Exception:
        return False
    return bool(done)


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


def run_code(
    shell: Any,
    code: str,
    seconds: float,
    number: int,
    *,
    grace: float = INTERRUPT_GRACE_SECONDS,
    interrupts: _Interrupts | None = None,
) -> RunOutcome:
    """Run ``code`` in ``shell.user_ns`` as a cell would (on the calling thread: call it on the main one).

    Plain Python: ``%`` magics and ``!`` commands are not transformed. The last expression is the value.
    ``interrupts``: the time limit (made here from ``seconds`` and ``grace`` when not given), which the
    caller may watch and give up on. Raises `Stopped` when the stop button interrupted it (after
    recording what it did).
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
    limit = interrupts if interrupts is not None else _Interrupts(seconds, grace)
    with _captured(shell, log_, record) as (tail, _), limit:
        try:
            exec(compile(tree, filename, "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last), filename, "eval"), namespace)
            _flush_figures()
            limit.close()  # inside the try: an interrupt sent just before lands in the handler below
        except KeyboardInterrupt as exc:
            limit.close()
            if limit.signalled:
                record.stopped = "the user pressed the stop button"
                stopped_by_user = True
            elif limit.timed_out:
                record.stopped = _time_limit_text(seconds, limit.sent)
                outcome.timed_out = True
            else:
                record.error = cells.error_text(exc, log_.where)
            outcome.failed = True
        except BaseException as exc:  # SystemExit too: the kernel goes on
            limit.close()
            record.error = cells.error_text(exc, log_.where) + _close_names(exc, namespace)
            if isinstance(exc, SystemExit):
                record.error += "\n  (sys.exit was caught: the kernel goes on)"
            outcome.failed = True
        finally:
            record.printed, record.printed_chars = tail.text(), tail.total
    if limit.timed_out and not outcome.failed:
        # It caught the interrupt and ended by itself: it still ran past the limit.
        record.stopped = _time_limit_text(seconds, limit.sent) + "; it caught the interrupt and ended"
        outcome.timed_out = True
    if limit.given_up and record.stopped:
        record.stopped += " (after the reply had stopped waiting for it)"
    if value is not None and not outcome.failed:
        namespace["_"] = value
        record.value = value_text(value, bounded_repr(value, chars=cells.VALUE_CHARS))
    if stopped_by_user:
        raise Stopped(cells.cell_text(record))
    return outcome


def _time_limit_text(seconds: float, sent: int) -> str:
    text = f"the time limit ({seconds:g} s) interrupted it"
    if sent > 1:
        text += f" ({sent} interrupts: it went on after the first)"
    return text


def _patience(seconds: float, grace: float) -> float:
    """How long the reply waits for code: the limit, both graces, and time for the last interrupt."""
    return seconds + 2 * grace + 2 * INTERRUPT_EVERY_SECONDS


def _still_running(
    code: str, seconds: float, grace: float, sent: int, label: str, *, started: bool
) -> RunOutcome:
    """The outcome of code the reply stopped waiting for (``started``: False when it never began, the
    main thread being busy elsewhere)."""
    record = CellRecord(None, cells.clip(code, cells.SOURCE_CHARS))
    if not started:
        record.stopped = "it never started: the kernel's main thread did not take it up"
        return RunOutcome(record, failed=True, timed_out=True)
    waited = _patience(seconds, grace)
    record.stopped = (
        f"the time limit ({seconds:g} s) interrupted it {sent} times and it went on; after {waited:g} s "
        "the reply stopped waiting. It is still running in the kernel."
    )
    notice = (
        f"run_python's code ({label}) is still running in the kernel: it went on through the time limit "
        f"({seconds:g} s) and {sent} interrupts, so this reply stopped waiting for it. The kernel stays busy "
        "until it ends: interrupt the kernel (■); if that does not stop it, restart the kernel (its "
        "variables are lost)."
    )
    return RunOutcome(record, failed=True, timed_out=True, still_running=True, notice=notice)


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


#: The kernel's own code on the main thread around the agent's: an interrupt of the time limit that
#: would land in one of these has come after the code ended, and is dropped.
_OWN_CODE = frozenset(
    {
        run_code.__code__,
        _Interrupts.__enter__.__code__,
        _Interrupts.__exit__.__code__,
        _Interrupts.close.__code__,
        _Interrupts._handler.__code__,
        MainThread._run.__code__,
        MainThread.serve.__code__,
        _flush_figures.__code__,
    }
)
