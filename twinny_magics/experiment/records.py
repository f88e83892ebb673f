"""One run of one question under one variant, and how a reply is kept as JSON.

Pure data: a :class:`Run` holds the reply's whole record (steps, calls, results, requests, notices), so
a saved experiment can be looked at, compared and resumed without the model. A reply is kept as JSON the
way a saved session keeps it (:mod:`twinny_magics.sessions.replies`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from twinny_magics.events import Reply
from twinny_magics.sessions.replies import reply_from_json, reply_to_json

#: ``pass``/``fail``: the check judged the answer; ``ran``: no check, the answer is recorded;
#: ``error``: the server failed (the run is not judged, and a resumed experiment runs it again).
Outcome = Literal["pass", "fail", "ran", "error"]
OUTCOMES: tuple[Outcome, ...] = ("pass", "fail", "ran", "error")


@dataclass
class Run:
    """One question under one variant, one repetition: how it was judged and what the model did."""

    question: str
    variant: str
    repeat: int
    outcome: Outcome
    #: Why it failed (the check's words) or what went wrong (the server's).
    why: str = ""
    #: The check itself raised (or returned something that is not a verdict): a failure, marked apart.
    check_raised: bool = False
    seed: int | None = None
    seconds: float = 0.0
    #: Requests the server refused as longer than its window.
    refused: int = 0
    #: The server that ran it (its address; on a fleet, which of the servers).
    server: str = ""
    #: Files of the run's copy of the workspace that differ afterwards: ``M a.py``, ``A new.py``, ``D b.py``.
    changed: list[str] = field(default_factory=list)
    reply: Reply | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        """``(question, variant, repeat)``."""
        return self.question, self.variant, self.repeat

    @property
    def passed(self) -> bool:
        """Whether the check passed."""
        return self.outcome == "pass"

    @property
    def steps(self) -> int:
        """Steps the reply took."""
        return len(self.reply.steps) if self.reply else 0

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens over every request, as the server counted them."""
        return sum(r.prompt_tokens or 0 for r in self.reply.requests) if self.reply else 0

    @property
    def generated_tokens(self) -> int:
        """Tokens the model generated over every request, as the server counted them."""
        return sum(r.completion_tokens or 0 for r in self.reply.requests) if self.reply else 0

    @property
    def answer(self) -> str:
        """The reply's answer text."""
        return self.reply.text if self.reply else ""

    def to_json(self) -> dict[str, Any]:
        """The run as JSON, its reply in full."""
        # The record's own fields, whole; its reply in the saved session's JSON (not asdict's deep copy).
        data = asdict(replace(self, reply=None))
        data["reply"] = reply_to_json(self.reply) if self.reply is not None else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        """A run as :meth:`to_json` wrote it."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known and k != "reply"}
        reply = data.get("reply")
        return cls(**values, reply=reply_from_json(reply) if reply is not None else None)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from twinny_magics.experiment import report  # noqa: PLC0415 - rendering loads the display

        return report.bundle(report.run_html(self), report.run_text(self))
