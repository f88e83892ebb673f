"""`ReplyView`: one reply shown live in its cell, from the loop's events.

Events arrive on the reply's worker thread; every change takes the view's lock, so a click (on the
kernel's main thread or a subshell) and an event never interleave. Three ways to show:

- ``rich`` (a kernel: JupyterLab, Notebook, VS Code, nbclient): each piece (:mod:`.items`) is its own
  output, shown with a display handle and updated in place — so what is saved is exactly what was seen;
- ``text`` (terminal IPython, no frontend for rich output): plain lines printed as events arrive;
- ``quiet`` (either): only the answer, and errors.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from twinny_magics.contracts import PendingChange, Remembers
from twinny_magics.display import buttons
from twinny_magics.display.items import (
    ApprovalItem,
    CallItem,
    EditItem,
    Item,
    NoticeItem,
    RequestItem,
    StatusLine,
    TextItem,
)
from twinny_magics.display.reprs import WindowPicture, n, plain, sendable
from twinny_magics.events import (
    CallFinished,
    CallStarted,
    Event,
    Notice,
    Reply,
    ReplyFinished,
    RequestStarted,
    ResultsTrimmed,
    TextDelta,
    UsageReported,
)
from twinny_magics.notes import LOOP_ANSWERS, NO_ANSWER
from twinny_magics.usage import Price, reply_usage

log = logging.getLogger(__name__)

Style = Literal["rich", "text"]
#: Streamed text is re-shown at most this often (each update re-renders the Markdown).
TEXT_REFRESH_SECONDS = 0.15
#: Each update of streamed text re-sends the whole text so far, so a server writing without end would make
#: the traffic (and the rendering) grow with the square of the answer. A live update is sent only while
#: all updates of the piece together stay within this many times its current length, plus the slack:
#: every answer of ordinary length streams smoothly, and a huge one costs a few times its own size.
TEXT_TRAFFIC_FACTOR = 4
TEXT_TRAFFIC_SLACK = 200_000
#: The status line's clock is refreshed at most this often.
STATUS_REFRESH_SECONDS = 0.25
#: While a reply runs, the status line's clock ticks (and held-back text is shown) this often, so a cell
#: waiting on a slow prompt still shows that it is alive.
TICK_SECONDS = 0.5
#: How long a command waits for someone to press Run or Don't run.
APPROVAL_TIMEOUT_SECONDS = 300.0
#: Lines of a tool's output printed in a terminal (the whole output is on the reply).
TERMINAL_OUTPUT_LINES = 40

OUTCOMES = {
    "answer": "Answered",
    "steps": "Out of steps",
    "settled": "An edit waits for review",
    "stuck": "Ended early: steps in a row achieved nothing",
    "stopped": "Stopped",
    "error": "Failed",
}
#: A reply settled with no edit proposed: a tool result ended it (code run in the kernel past its limit).
SETTLED_WITHOUT_AN_EDIT = "Ended early: code run in the kernel went past its time limit"


class Slot:
    """Where one piece is shown: a display handle in a kernel, nothing elsewhere."""

    def __init__(self, item: Item, handle: Any) -> None:
        self.item = item
        self.handle = handle

    def update(self) -> None:
        """Show the piece again, in place."""
        if self.handle is not None:
            self.handle.update(self.item)


def _display(obj: Any) -> Any:
    from IPython.display import display  # noqa: PLC0415

    show: Callable[..., Any] = display  # IPython's display is untyped
    return show(obj, display_id=True)


class EditPanel:
    """A proposed edit with its Apply/Discard buttons; works after the cell has finished.

    It shows the edit and forwards a click to where every edit is settled (``tools.edits.settle``, as
    ``Agent.settle`` does): it owns no apply logic. An edit settled elsewhere (``%agent apply``) is shown
    by :meth:`catch_up`.
    """

    def __init__(self, edit: PendingChange, *, show: bool, with_buttons: bool) -> None:
        self.edit = edit
        self.item = EditItem(edit)
        # Only rendering takes it: a click and a catch-up never show the edit half updated.
        self._lock = threading.Lock()
        self._shown = self.item.status
        self.slot = Slot(self.item, _display(self.item) if show else None)
        self.buttons: Any = None
        if show and with_buttons:
            self.buttons = buttons.edit_buttons(self.apply, self.discard)
            _display(self.buttons)

    def apply(self) -> str:
        """The Apply button: write the edit; say what happened (a conflict is reported, not raised)."""
        return self._settle(apply=True)

    def discard(self) -> str:
        """The Discard button: drop the edit; say what happened."""
        return self._settle(apply=False)

    def _settle(self, *, apply: bool) -> str:
        from twinny_magics.tools.edits import settle  # noqa: PLC0415 - the display loads no tools until used

        message = settle(self.edit, apply=apply)
        with self._lock:
            self.item.message = message
            self._render()
        return message

    def catch_up(self) -> None:
        """Show the edit again if it was settled since it was last shown (render only)."""
        with self._lock:
            if self.item.status == self._shown:
                return
            said = self.edit.message if isinstance(self.edit, Remembers) else ""
            self.item.message = said or self.item.message
            self._render()

    def refresh(self) -> None:
        """Show the current status; grey the buttons out once the edit is settled."""
        with self._lock:
            self._render()

    def _render(self) -> None:
        self._shown = self.item.status
        self.slot.update()
        if self.buttons is not None and self.item.status != "pending":
            buttons.disable(self.buttons)


class ReplyView:
    """Shows one reply as it runs; give :meth:`handle` to ``Agent.run(on_event=...)``."""

    def __init__(
        self,
        question: str = "",
        *,
        steps: int = 12,
        style: Style = "rich",
        quiet: bool = False,
        with_buttons: bool = False,
        approval_subshell: str | None = None,
        write: Callable[[str], Any] | None = None,
        price: Price | None = None,
    ) -> None:
        self.question = question
        self.style: Style = style
        self.quiet = quiet
        self.with_buttons = with_buttons
        self.approval_subshell = approval_subshell
        self._write = write
        self.items: list[Item] = []
        # The price turns the usage the status line ends with into a cost (see twinny_magics.usage).
        self.status = StatusLine(steps, price=price)
        self.requests: list[RequestItem] = []
        self.calls: dict[str, CallItem] = {}
        self.texts: dict[int, TextItem] = {}
        self.edit_panels: list[EditPanel] = []
        self.failures: list[str] = []
        self.reply: Reply | None = None
        self._slots: dict[int, Slot] = {}
        self._dirty: set[int] = set()
        self._trims: list[tuple[int, str]] = []
        self._lock = threading.RLock()
        self._status_shown_at = 0.0
        self._closed = threading.Event()
        self._answer: TextItem | None = None
        self._printed_text = False

    # -- output ----------------------------------------------------------------------------------------

    @property
    def rich(self) -> bool:
        """Whether pieces are shown as outputs (not printed)."""
        return self.style == "rich"

    def _show(self, item: Item, visible: bool = True) -> None:
        self.items.append(item)
        handle = _display(item) if self.rich and visible else None
        self._slots[id(item)] = Slot(item, handle)

    def _refresh(self, item: Item) -> None:
        self._dirty.discard(id(item))
        slot = self._slots.get(id(item))
        if slot is not None:
            slot.update()

    def _print(self, text: str, end: str = "\n") -> None:
        if self.style != "text":
            return
        # A terminal obeys what it is sent: no escape sequence, control or bidi override gets through.
        write = self._write or sys.stdout.write
        write(plain(text + end))
        flush = getattr(sys.stdout, "flush", None)
        if self._write is None and flush is not None:
            flush()

    def _status(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._status_shown_at >= STATUS_REFRESH_SECONDS:
            self._status_shown_at = now
            self._refresh(self.status)

    def _flush_text(self, *, live: bool = False) -> None:
        for item in list(self.texts.values()) + ([self._answer] if self._answer else []):
            if id(item) in self._dirty and (not live or _affordable(item)):
                self._refresh_text(item)

    def _refresh_text(self, item: TextItem) -> None:
        item.sent_chars += len(item.body)
        self._refresh(item)

    # -- the reply's life ------------------------------------------------------------------------------

    def start(self) -> None:
        """Show the status line (before the first event, so it sits at the top of the cell)."""
        with self._lock:
            self._show(self.status, visible=not self.quiet)
        if self.rich:
            threading.Thread(target=self._tick, name="twinny-status", daemon=True).start()

    def close(self) -> None:
        """Stop the clock (the reply is over, however it ended)."""
        self._closed.set()

    def _tick(self) -> None:
        while not self._closed.wait(TICK_SECONDS):
            with self._lock:
                if self.status.outcome is not None:
                    return
                try:
                    self._flush_text(live=True)
                    self._status(force=True)
                except Exception:
                    self.failures.append(traceback.format_exc())
                    return

    def handle(self, event: Event) -> None:
        """Show one event; a display bug is noted, never raised into the reply."""
        with self._lock:
            try:
                self._handle(event)
            except Exception:
                # The reply must go on when its display fails; the failure is kept (and tests check it).
                self.failures.append(traceback.format_exc())
                log.warning("showing %s failed", type(event).__name__, exc_info=True)

    def _handle(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._text(event)
            return
        self._flush_text()
        if isinstance(event, RequestStarted):
            self._request(event)
        elif isinstance(event, CallStarted):
            self._call_started(event)
        elif isinstance(event, CallFinished):
            self._call_finished(event)
        elif isinstance(event, ResultsTrimmed):
            self._results_trimmed(event)
        elif isinstance(event, UsageReported):
            self._usage(event)
        elif isinstance(event, Notice):
            self._notice(event.kind, event.text)
        elif isinstance(event, ReplyFinished):
            self._finished(event.reply)

    def _request(self, event: RequestStarted) -> None:
        share = event.share
        picture = WindowPicture(
            window=event.window,
            limit=event.plan.limit,
            target=event.plan.target,
            parts=(("system", share.system), ("history", share.history), ("results", share.results)),
            reply=share.reply,
            estimate=event.estimate,
        )
        item = RequestItem(event.step, event.mode, event.last, picture)
        # Trims are announced just before the request they made room for.
        item.trims = [text for step, text in self._trims if step == event.step]
        self._trims = [(step, text) for step, text in self._trims if step != event.step]
        self.requests.append(item)
        self.status.step, self.status.requests = event.step, self.status.requests + 1
        self.status.doing = "waiting for the model" + (" (last request, no tools)" if event.last else "")
        self.status.estimate, self.status.counted = event.estimate, None
        if self.quiet:
            # Only the answer: the text of an earlier step was not it.
            if self._answer is not None:
                self._answer.body = ""
            self._status()
            return
        self._show(item)
        self._print(item.text())
        self._status(force=True)

    def _text(self, event: TextDelta) -> None:
        item = self._answer if self.quiet else self.texts.get(event.step)
        fresh = item is None
        if item is None:
            item = TextItem(event.step)
            if self.quiet:
                self._answer = item
            else:
                self.texts[event.step] = item
        item.body += event.text
        self.status.doing = f"writing ({len(item.body):,} chars)"
        if not self.quiet:
            if not self._printed_text:
                self._print("")
            self._printed_text = True
            self._print(event.text, end="")
        now = time.monotonic()
        if fresh:
            item.shown_at = now
            item.sent_chars += len(item.body)
            self._show(item)
        elif now - item.shown_at >= TEXT_REFRESH_SECONDS and _affordable(item):
            item.shown_at = now
            self._refresh_text(item)
        else:
            self._dirty.add(id(item))
        self._status()

    def _call_started(self, event: CallStarted) -> None:
        self._end_text_line()
        item = CallItem(event.key, event.call)
        self.calls[event.key] = item
        if event.step > 0:  # step 0 is the loop's own head start, not a call the model made
            self.status.calls += 1
        self.status.doing = f"running {event.call.name}"
        if not self.quiet:
            self._show(item)
        self._status(force=True)

    def _call_finished(self, event: CallFinished) -> None:
        item = self.calls.get(event.key) or CallItem(event.key, event.result.call)
        if event.key not in self.calls:
            self.calls[event.key] = item
            if not self.quiet:
                self._show(item)
        item.result = event.result
        item.pending_edit = event.pending_edit is not None
        self.status.doing = f"{event.result.call.name} done"
        if not self.quiet:
            self._refresh(item)
            self._print(_terminal(item.text()))
        if event.pending_edit is not None:
            self._edit(event.pending_edit)
        self._status()

    def _edit(self, edit: PendingChange) -> None:
        panel = EditPanel(edit, show=self.rich and not self.quiet, with_buttons=self.with_buttons)
        self.edit_panels.append(panel)
        self.items.append(panel.item)
        if not self.quiet:
            self._print(panel.item.text())

    def _results_trimmed(self, event: ResultsTrimmed) -> None:
        trimmed = [self.calls[key] for key in event.keys if key in self.calls]
        names = ", ".join(f"{c.call.name} [{c.key}]" for c in trimmed) or f"{len(event.trims)} results"
        text = (
            f"trimmed {names} to fit: estimate {n(event.estimate_before)} → {n(event.estimate_after)} tokens"
        )
        for item in trimmed:
            item.trimmed_at = event.step
            if not self.quiet:
                self._refresh(item)
        current = self.requests[-1] if self.requests else None
        if current is not None and current.step == event.step:
            # A retry after the server refused the request as too long trims the request already shown.
            current.trims.append(text)
            if not self.quiet:
                self._refresh(current)
        else:
            self._trims.append((event.step, text))
        self._print(f"✂ {text}")

    def _usage(self, event: UsageReported) -> None:
        self.status.counted = event.prompt_tokens
        self.status.ratio = event.ratio
        request = next((r for r in reversed(self.requests) if r.step == event.step), None)
        if request is not None and event.prompt_tokens is not None:
            request.picture = replace(request.picture, server=event.prompt_tokens)
            # The count itself is on the bar; this line says what was learned from it.
            cached = f"; {n(event.cached_tokens)} of them cached by the server" if event.cached_tokens else ""
            fresh = event.prompt_tokens - min(event.cached_tokens or 0, event.prompt_tokens)
            afresh = f", {n(fresh)} read afresh" if event.cached_tokens else ""
            first = event.first_token_seconds
            waited = f"; first token after {first:.1f} s" if first is not None else ""
            request.usage = f"ratio now {event.ratio:.2f} chars/token{cached}{afresh}{waited}"
            if not self.quiet:
                self._refresh(request)
                self._end_text_line()
                self._print(f"   {request.usage}")
        self._status(force=True)

    def _notice(self, kind: str, text: str, *, always: bool = False) -> None:
        if self.quiet and kind != "error" and not always:
            return
        self._end_text_line()
        item = NoticeItem(kind, text)
        self._show(item)
        self._print(item.text())

    def _finished(self, reply: Reply) -> None:
        if self.reply is not None:
            return
        self.reply = reply
        self._end_text_line()
        if not self.quiet and reply.text.startswith(NO_ANSWER):
            # Nothing of the last step was shown (a call is held back): what the steps found is the answer.
            item = TextItem(len(reply.steps))
            item.body = reply.text
            self._show(item)
            self._print(reply.text)
        elif not self.quiet and reply.text.startswith(LOOP_ANSWERS):
            # The last step's text streamed, and is not the answer: the loop's answer takes its place (the
            # model's text stays in the reply's steps).
            item = self.texts.get(len(reply.steps)) or TextItem(len(reply.steps))
            fresh = not item.body
            item.body = reply.text
            if fresh:
                self._show(item)
            else:
                self._refresh_text(item)
            self._print("\n" + reply.text)
        if self.quiet:
            if self._answer is None:
                self._answer = TextItem(0)
                self._show(self._answer)
            self._answer.body = reply.text
            self._refresh_text(self._answer)
            self._print(reply.text)
            waiting = sum(1 for p in self.edit_panels if p.item.status == "pending")
            if waiting:
                self._notice(
                    "warning",
                    f"{waiting} edit(s) wait for review: %agent apply or %agent discard.",
                    always=True,
                )
        self.status.usage = reply_usage(reply)
        outcome = OUTCOMES.get(reply.stopped, reply.stopped)
        if reply.stopped == "settled" and not reply.pending:
            outcome = SETTLED_WITHOUT_AN_EDIT
        if reply.stopped == "steps":
            outcome += f" ({self.status.steps})"
        self._end(outcome)

    def _end(self, outcome: str) -> None:
        self._closed.set()
        self.status.outcome = outcome
        self.status.ended = time.monotonic()
        self._refresh(self.status)
        if not self.quiet:
            self._print(self.status.text())

    def _end_text_line(self) -> None:
        if self._printed_text:
            self._print("")
            self._printed_text = False

    def interrupted(self) -> None:
        """The kernel's stop button: say "Stopped" (the loop may not have said it in time)."""
        with self._lock:
            self._flush_text()
            if self.status.outcome is None:
                self._end_text_line()
                self._end("Stopped")

    def failed(self, message: str) -> None:
        """The reply could not run (e.g. the server is unreachable): a clear note, no traceback."""
        with self._lock:
            self._flush_text()
            self._notice("error", message)
            if self.status.outcome is None:
                self._end("Failed")

    # -- approvals -------------------------------------------------------------------------------------

    async def approve(self, command: str, tool: str = "run_command") -> bool:
        """Ask whoever watches the cell to approve ``command`` (code ``tool`` asks to run, or a cell
        it proposes); False when nobody answers in time."""
        answered = threading.Event()
        choice: list[bool] = []
        item = ApprovalItem(command, tool=tool)
        with self._lock:
            self._end_text_line()
            self._show(item)
            self._print(item.text())
            self.status.doing = "waiting for approval"
            self._status(force=True)

        def on_answer(approved: bool) -> None:
            with self._lock:
                if choice:
                    return
                choice.append(approved is True)  # only the bool True approves
                item.state = "approved" if choice[0] else "declined"
                self._refresh(item)
            answered.set()

        box = None
        if self.rich and self.with_buttons:
            box = buttons.approval_buttons(on_answer, self.approval_subshell, cell=item.is_cell)
            _display(box)
        deadline = time.monotonic() + APPROVAL_TIMEOUT_SECONDS
        try:
            while not answered.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            with self._lock:
                item.state = "stopped"
                self._refresh(item)
            raise
        finally:
            if box is not None:
                buttons.disable(box)
        with self._lock:
            if not choice:
                choice.append(False)
                item.state = "unanswered"
                self._refresh(item)
            if item.is_cell:
                self.status.doing = "cell to insert" if choice[0] else "cell discarded"
            else:
                self.status.doing = f"running {tool}" if choice[0] else "declined"
            self._status(force=True)
        return choice[0]

    # -- the whole reply, for a fallback or a test -----------------------------------------------------

    def text(self) -> str:
        """Everything shown so far, as plain text."""
        with self._lock:
            return "\n".join(item.text() for item in self.items if item.text())

    def html(self) -> str:
        """Everything shown so far, as HTML."""
        with self._lock:
            return "".join(item.html() for item in self.items)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": plain(self.text()), "text/html": sendable(self.html())}


def _affordable(item: TextItem) -> bool:
    """Whether one more live update of ``item`` keeps its traffic linear (see TEXT_TRAFFIC_FACTOR)."""
    size = len(item.body)
    return item.sent_chars + size <= TEXT_TRAFFIC_FACTOR * size + TEXT_TRAFFIC_SLACK


def _terminal(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= TERMINAL_OUTPUT_LINES:
        return text
    hidden = len(lines) - TERMINAL_OUTPUT_LINES
    return "\n".join(
        [*lines[:TERMINAL_OUTPUT_LINES], f"    … {hidden} more lines (all of it is on the reply)"]
    )
