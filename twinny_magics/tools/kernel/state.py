"""The kernel tools' state in one shell (`Kernel`): the cell history, run_python's runs, proposed cells."""

from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass, replace
from typing import Any, Literal

from twinny_magics import cells
from twinny_magics.cell_log import CellLog, hide_known
from twinny_magics.cells import CellRecord
from twinny_magics.errors import WorkspaceError
from twinny_magics.tools.kernel.main_thread import MAIN, MainThread, Stopped
from twinny_magics.tools.kernel.run import (
    INTERRUPT_GRACE_SECONDS,
    KERNEL_SECONDS,
    RunOutcome,
    _Interrupts,
    _patience,
    _still_running,
    _time_limit_text,
    run_code,
)

KernelMode = Literal["ask", "allow", "off"]
CellsMode = Literal["review", "insert"]


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

    def __init__(
        self,
        shell: Any,
        *,
        seconds: float = KERNEL_SECONDS,
        grace: float = INTERRUPT_GRACE_SECONDS,
        main: MainThread = MAIN,
    ) -> None:
        self.shell = shell
        self.log = CellLog.of(shell)
        self.seconds = seconds
        self.grace = grace
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
        """Run ``code`` on the main thread; `Stopped` (the stop button) travels on as cancellation.

        Waits at most the time limit and its two graces (`_Interrupts`): code still running then is
        left running, and the outcome says so (``still_running``, a notice for the user). While it
        runs no other code is run: a `WorkspaceError` says why.
        """
        busy = self.main.running
        if busy is not None:
            raise WorkspaceError(
                "Not run: the kernel is still running the code of an earlier run_python call "
                f"({busy.label}), which went on after its time limit and every interrupt. No code can run "
                "until it ends. Answer with what you know; do not call run_python again."
            )
        self.runs += 1
        number = self.runs
        seconds, grace = self.seconds, self.grace
        interrupts = _Interrupts(seconds, grace)
        label = f"agent run {number}"
        future = self.main.submit(
            lambda: run_code(self.shell, code, seconds, number, interrupts=interrupts), label=label
        )
        waiting = asyncio.wrap_future(future)
        try:
            done, _ = await asyncio.wait({waiting}, timeout=_patience(seconds, grace))
        except asyncio.CancelledError:
            waiting.cancel()
            raise
        if not done:
            started = not future.cancel()  # cancelled only when the main thread never took it up
            waiting.cancel()  # its result, when it comes, is for the history, not for this reply
            interrupts.give_up()
            outcome: RunOutcome = _still_running(
                code, seconds, grace, interrupts.sent, label, started=started
            )
            self.log.records.append(outcome.record)
            future.add_done_callback(lambda ended: self._ended_late(ended, outcome.record))
            return self._shown(outcome)
        try:
            outcome = waiting.result()
        except Stopped:
            raise asyncio.CancelledError from None
        except KeyboardInterrupt:
            # An interrupt of the time limit that came as the code ended and got past run_code's own
            # handling (raised in the main thread, it lands wherever that thread is): still the limit's.
            record = CellRecord(None, cells.clip(code, cells.SOURCE_CHARS))
            record.stopped = _time_limit_text(seconds, interrupts.sent) + " as it ended"
            outcome = RunOutcome(record, failed=True, timed_out=True)
        self.log.records.append(outcome.record)
        return self._shown(outcome)

    def _shown(self, outcome: RunOutcome) -> RunOutcome:
        """``outcome`` as the model may see it: the kernel's known secrets hidden in what the code
        printed, returned and raised, as ``cell_history`` hides them (the log keeps what ran). Read after
        the run: the code may itself have set one."""
        record = hide_known([outcome.record], self.log.known_secrets())[0]
        return replace(outcome, record=record) if record is not outcome.record else outcome

    def _ended_late(self, ended: concurrent.futures.Future[Any], placeholder: CellRecord) -> None:
        """Code the reply stopped waiting for has ended (on the main thread): the history shows what it
        did in place of the record that said it was still running."""
        if ended.cancelled():
            return
        error = ended.exception()
        if error is None:
            record: CellRecord = ended.result().record
        else:
            record = replace(
                placeholder, stopped="the user pressed the stop button after the reply had ended"
            )
        records = self.log.records
        for index, kept in enumerate(records):
            if kept is placeholder:
                records[index] = record
                return

    def to_insert(self) -> str | None:
        """The code of every proposal chosen for insertion, once (marked inserted); None when none is."""
        chosen = [p for p in self.proposals if p.status == "insert"]
        for proposal in chosen:
            proposal.status = "inserted"
        return "\n\n".join(p.code.rstrip("\n") for p in chosen) or None
