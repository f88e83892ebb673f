"""Telling what happens in a reply: the events, in order, to whoever shows it, and the notices kept in it.

The engine's only voice. Every notice goes through :meth:`Teller.notice`, which masks the server's key in
it (a notice may quote a server's words), keeps it in the reply and sends it on; every event goes through
:meth:`Teller.emit`. The display consumes these and never drives the reply.
"""

from __future__ import annotations

from collections.abc import Mapping

from twinny_magics.budget import ContextPlan, Fit
from twinny_magics.contracts import EventSink
from twinny_magics.errors import ServerError
from twinny_magics.events import (
    Event,
    Notice,
    Reply,
    ReplyFinished,
    RequestRecord,
    RequestStarted,
    ResultsTrimmed,
    UsageReported,
    WindowShare,
)
from twinny_magics.redact import mask_value


class Teller:
    """Tells one reply's events and notices (``secret``: the server's key, masked in every notice)."""

    def __init__(self, reply: Reply, emit: EventSink, secret: str | None) -> None:
        self.reply = reply
        self._emit = emit
        self.secret = secret

    def emit(self, event: Event) -> None:
        """Send ``event`` on."""
        self._emit(event)

    def notice(self, kind: str, text: str) -> None:
        """Say a warning, a fallback, a mode decision or an error (its key and key shapes masked)."""
        event = Notice(kind, mask_value(text, self.secret))
        self.reply.notices.append(event)
        self.emit(event)

    def trimmed(self, step: int, fitted: Fit, keys: Mapping[str, str]) -> list[str]:
        """Tell the trims of a fit (``keys``: the event key of each call, by call id); the keys trimmed."""
        if not fitted.trims:
            return []
        said = [keys[t.call_id] for t in fitted.trims if t.call_id is not None and t.call_id in keys]
        self.emit(ResultsTrimmed(step, tuple(said), fitted.trims, fitted.estimate_before, fitted.estimate))
        return said

    def request(self, record: RequestRecord, fitted: Fit, plan: ContextPlan, share: WindowShare) -> None:
        """Tell a request about to be sent: over the limit however trimmed, and how it shares the window."""
        if fitted.over_limit:
            self.notice(
                "warning",
                f"Even with every result trimmed, this request is estimated at {fitted.estimate:,} tokens, "
                f"over the limit of {plan.limit:,}. The question or the system prompt may be too long.",
            )
        self.emit(
            RequestStarted(record.step, record.last, record.mode, plan.window, plan, fitted.estimate, share)
        )

    def usage(self, record: RequestRecord, prompt: int | None, cached: int | None, ratio: float) -> None:
        """Tell the server's count of a request beside its estimate."""
        self.emit(
            UsageReported(
                record.step,
                record.estimated_tokens,
                prompt,
                record.completion_tokens,
                cached,
                ratio,
                record.first_token_seconds,
            )
        )

    def finished(self) -> Reply:
        """The reply is over."""
        self.emit(ReplyFinished(self.reply))
        return self.reply

    def failed(self, error: ServerError) -> Reply:
        """The reply ends with the server's ``error`` (masked), said as a notice."""
        self.reply.error = mask_value(str(error), self.secret)
        self.reply.stopped = "error"
        self.notice("error", str(error))
        return self.finished()
