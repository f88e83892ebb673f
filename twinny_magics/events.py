"""What the loop tells whoever shows a reply, and the records a reply keeps.

Pure data. The loop emits these in order; the display consumes them and never drives the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .budget import ContextPlan, Trim
from .changes import PendingChange, ProposedChange
from .conversation import Mode, ToolCall, ToolResult


@dataclass(frozen=True)
class WindowShare:
    """How one request's estimate splits: what each part of the window takes, in tokens."""

    system: int
    history: int
    results: int
    reply: int


@dataclass(frozen=True)
class RequestStarted:
    """A request is about to be sent."""

    step: int
    last: bool
    mode: Mode
    window: int
    plan: ContextPlan
    estimate: int
    share: WindowShare


@dataclass(frozen=True)
class TextDelta:
    """Reply text that may be shown now (never part of a call marker)."""

    step: int
    text: str


@dataclass(frozen=True)
class CallStarted:
    """A tool call is about to run. ``key`` names it across later events (trims)."""

    step: int
    key: str
    call: ToolCall


@dataclass(frozen=True)
class CallFinished:
    """A tool call ran; ``result`` is what the model will see (with the cut note when it was cut)."""

    step: int
    key: str
    result: ToolResult
    pending_edit: PendingChange | None = None


@dataclass(frozen=True)
class ResultsTrimmed:
    """A request trimmed earlier results; ``keys`` name the calls whose results were trimmed."""

    step: int
    keys: tuple[str, ...]
    trims: tuple[Trim, ...]
    estimate_before: int
    estimate_after: int


@dataclass(frozen=True)
class Notice:
    """A warning or a fallback the user should see (``kind``: ``warning``, ``fallback``, ``error``)."""

    kind: str
    text: str


@dataclass(frozen=True)
class UsageReported:
    """The server's count for a request, next to our estimate and the ratio learned from it."""

    step: int
    estimated: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    ratio: float
    #: Seconds from sending the request to the first streamed token (text or call): on a CPU, mostly the
    #: server reading the prompt afresh. None when nothing streamed.
    first_token_seconds: float | None = None


@dataclass
class RequestRecord:
    """One request of a reply, as sent and as the server counted it."""

    step: int
    mode: Mode
    window: int
    limit: int
    target: int
    estimated_tokens: int
    chars: int
    trimmed: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    finish_reason: str | None = None
    last: bool = False
    retried: str | None = None
    #: The reply's call was finished by a second request held to the call grammar (``grammar="lazy"``):
    #: it continued the reply from its call marker. The counts above stay this request's own.
    continued: bool = False
    #: Seconds from sending the request to its first streamed token (see UsageReported).
    first_token_seconds: float | None = None


@dataclass
class Step:
    """One step of a reply: what the model wrote and the calls that ran (as the model saw them)."""

    number: int
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Citation:
    """A ``file:line`` an answer cites, checked against the file: ``holds`` (what the answer says is on
    that line or next to it), ``near`` (it is a few lines away: ``why`` says where, ``found`` shows it),
    ``wrong`` (it is not: ``found`` holds what the lines say) or ``unchecked`` (``why``: outside the
    workspace, a denied file, no such line number…)."""

    path: str
    line: int
    status: str
    found: str = ""
    why: str = ""


@dataclass
class Reply:
    """A finished reply: its answer text, its steps and its requests."""

    question: str
    text: str = ""
    steps: list[Step] = field(default_factory=list)
    requests: list[RequestRecord] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    pending: list[ProposedChange] = field(default_factory=list)
    stopped: str = "answer"
    error: str | None = None
    #: What the loop gave the model before its first step (the workspace map and the evidence), if any.
    head_start: ToolResult | None = None
    #: How long the reply took, from its question to its end (set by the session; None when not timed).
    seconds: float | None = None
    #: The ``file:line`` citations of the answer, each checked against the file (``engine.citations``).
    citations: list[Citation] = field(default_factory=list)


@dataclass(frozen=True)
class ReplyFinished:
    """The reply is over (answered, out of steps, settled by a pending edit, stopped or failed)."""

    reply: Reply


Event = (
    RequestStarted
    | TextDelta
    | CallStarted
    | CallFinished
    | ResultsTrimmed
    | Notice
    | UsageReported
    | ReplyFinished
)
