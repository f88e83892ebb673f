"""The context budget: the plan for a window, cutting and trimming tool results, fitting a request.

Pure: no I/O. The loop asks the server for its window, calls :func:`plan_context`, estimates each request
(the estimate is :mod:`~twinny_magics.estimate`'s; its names are re-exported here, where they were first
imported from), and calls :func:`fit` before every request so that the request stays under the plan's
``limit``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from .conversation import Message, ToolResult, inert
from .estimate import (
    CALL_OVERHEAD_TOKENS,
    CALL_PRIOR_TOKENS,
    CONTENT_PRIOR_TOKENS,
    DEFAULT_CHARS_PER_TOKEN,
    MAX_CALL_SHARE,
    MAX_RATIO,
    MESSAGE_OVERHEAD_CHARS,
    MESSAGE_OVERHEAD_TOKENS,
    MIN_OBSERVED_CHARS,
    MIN_RATIO,
    CallShare,
    Observation,
    PromptCounter,
    TokenEstimator,
    calls_text,
    message_chars,
    message_text,
    rendered_chars,
    request_chars,
    tools_chars,
    tools_text,
)

# The estimate's names are re-exported: they were budget's, and are still imported from here.
__all__ = [
    "CALL_OVERHEAD_TOKENS",
    "CALL_PRIOR_TOKENS",
    "CONTENT_PRIOR_TOKENS",
    "DEEP_TARGET_PERCENT",
    "DEFAULT_CHARS_PER_TOKEN",
    "FITTED_RESULT_SHARE",
    "HEAD_START_MAX",
    "HEAD_START_MIN",
    "HEAD_START_SHARE",
    "MAX_CALL_SHARE",
    "MAX_RATIO",
    "MAX_REPLY_TOKENS",
    "MESSAGE_OVERHEAD_CHARS",
    "MESSAGE_OVERHEAD_TOKENS",
    "MIN_FITTED_RESULT_CHARS",
    "MIN_LIMIT",
    "MIN_OBSERVED_CHARS",
    "MIN_RATIO",
    "MIN_TRIM_SAVING",
    "REPLY_SHARE",
    "TRIMMED_FIRST_LINE",
    "CallShare",
    "ContextPlan",
    "Fit",
    "Observation",
    "PromptCounter",
    "TokenEstimator",
    "Trim",
    "calls_text",
    "chars_that_fit",
    "cut_note",
    "cut_result",
    "fit",
    "message_chars",
    "message_text",
    "noted_fit",
    "plan_context",
    "rendered_chars",
    "request_chars",
    "say_trims",
    "tools_chars",
    "tools_text",
    "trim",
    "trim_target",
    "trimmed_note",
    "trimmed_stub",
    "with_note",
]

REPLY_SHARE = 0.2
MAX_REPLY_TOKENS = 2048
MIN_LIMIT = 512
#: ``ContextPlan.deep_target`` in percent of the limit.
DEEP_TARGET_PERCENT = 20
TRIMMED_FIRST_LINE = 160


@dataclass(frozen=True)
class ContextPlan:
    """How a window of ``window`` tokens is shared out (all in tokens but the two ``*_chars``)."""

    window: int
    reply: int
    limit: int
    target: int
    result_chars: int
    notes_chars: int
    #: What the head start (the workspace map and the evidence) may fill in the first request.
    head_start_chars: int = 0
    #: How deep a trim takes the results the model has already seen, when the newest step still fits whole
    #: (0: no deeper than ``target``). Every trim makes the server read again everything below it, so one
    #: deep batch, paid once for several steps, re-reads less than a shallow trim every other step.
    deep_target: int = field(default=0, compare=False)


#: The head start's share of the window (in characters at the current ratio). At 4,096 tokens that is
#: about 600 tokens: the system prompt, the tools and the question take about 1,100 of the 2,867 a
#: request may use, which leaves room for two results of 20% before trimming has to start — and the
#: head start is the first thing trimmed (it is step 0). ``benchmarks/bench_tasks.py`` measures shares.
HEAD_START_SHARE = 0.15
HEAD_START_MIN = 600
HEAD_START_MAX = 16000


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def _floor(value: float) -> int:
    # Round away float noise first (8192 * 3.3 * 0.2 must not become 5406.719999…) before flooring.
    return math.floor(round(value, 6))


def plan_context(
    window_tokens: int,
    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN,
    head_start_share: float = HEAD_START_SHARE,
) -> ContextPlan:
    """Share a window out: reply share, request limit, trim target, per-result, notes and head-start sizes."""
    w = max(0, int(window_tokens))
    # Held back for the reply itself (the answer, or the next call's arguments): a request that fills the
    # window to the brim gets a reply cut after a few tokens, with no error from the server.
    reply = min(MAX_REPLY_TOKENS, w // 5)
    limit = max(MIN_LIMIT, (9 * w) // 10 - reply)
    # Trimming goes past the limit down to 65% of it, so that it is not needed again one step later.
    target = (65 * limit) // 100
    result_chars = _clamp(_floor(w * chars_per_token * 0.2), 2000, 30000)
    notes_chars = _clamp(_floor(w * chars_per_token * 0.08), 1200, 6000)
    head = _floor(w * chars_per_token * head_start_share)
    head_start_chars = _clamp(head, HEAD_START_MIN, HEAD_START_MAX) if head_start_share > 0 else 0
    deep_target = (DEEP_TARGET_PERCENT * limit) // 100
    return ContextPlan(w, reply, limit, target, result_chars, notes_chars, head_start_chars, deep_target)


def trim_target(plan: ContextPlan, newest_whole: int) -> int:
    """Where one request's trimming goes: as deep as ``plan.deep_target``, never so deep that the newest
    step's results go too, never shallower than ``plan.target``.

    ``newest_whole`` is the request's estimate with every result the model has seen trimmed and the newest
    step's results whole: the deepest trimming that keeps what the model has not read yet. Between the
    deep target and the target, trimming takes every older result (one batch); above the target, it is
    the three passes to ``target`` as always.
    """
    if not plan.deep_target or plan.deep_target >= plan.target:
        return plan.target
    return max(plan.deep_target, min(newest_whole, plan.target))


# -- one result that is too long ---------------------------------------------------------------------


def cut_note(left_out: int) -> str:
    """The note that ends a cut result."""
    return (
        f"\n[{left_out:,} more characters were left out. "
        "Ask for less at a time: a line range, a narrower pattern or a subfolder.]"
    )


def cut_result(text: str, max_chars: int) -> tuple[str, int]:
    """Cut ``text`` to at most ``max_chars`` on a line boundary; return it and how many chars left out.

    The note is counted inside ``max_chars``. The cut falls on the last newline before the limit unless
    that would lose more than half of what fits, in which case it falls mid-line.
    """
    if len(text) <= max_chars:
        return text, 0
    room = max(0, max_chars - len(cut_note(len(text))))
    newline = text.rfind("\n", 0, room + 1)
    end = newline if newline >= room / 2 else room
    left_out = len(text) - end
    return text[:end] + cut_note(left_out), left_out


#: A new result is never cut to fit the window below this (the cut note's ~120 characters included):
#: fewer would tell the model little more than the trimmed stub does.
MIN_FITTED_RESULT_CHARS = 320
#: The share of the room a new result may fill: its own estimate may be a little low.
FITTED_RESULT_SHARE = 0.9


def chars_that_fit(text: str, tokens: int, room: int, max_chars: int) -> int:
    """How many characters of a new result of ``tokens`` tokens fit in ``room`` tokens, at its own density.

    A result the window cannot hold even with every older result trimmed would be trimmed in the very
    request that brings it, so the model would see only its first line and be told to run the tool
    again — which brings it back just as long. Cut to what fits instead, with the note to ask for less
    at a time, the model sees the beginning and knows what to do. ``max_chars`` (the plan's
    ``result_chars``) stays the most a result may be; :data:`MIN_FITTED_RESULT_CHARS` the least.
    """
    if tokens <= room or not text:
        return max_chars
    fitting = math.floor(len(text) * max(0, room) / tokens * FITTED_RESULT_SHARE)
    return max(MIN_FITTED_RESULT_CHARS, min(max_chars, fitting))


def trimmed_stub(text: str) -> str:
    """What a trimmed result becomes: the start of its first line (at most 160 characters), nothing added.

    Only a beginning of the text, cut where a token ends (before a newline, or before a space in a longer
    line), so that to the server the trim is a deletion: the tokens before and after it are the ones it
    has cached, and a llama.cpp server asked to reuse its cache (``n_cache_reuse``) shifts what follows
    instead of reading it again. The note saying what was trimmed goes at the end of the request
    (:func:`trimmed_note`), where new text costs nothing cached.
    """
    first = text.split("\n", 1)[0]
    if len(first) <= TRIMMED_FIRST_LINE:
        return first
    space = first.rfind(" ", 0, TRIMMED_FIRST_LINE + 1)
    return first[: space if space > TRIMMED_FIRST_LINE // 2 else TRIMMED_FIRST_LINE]


def trimmed_note(steps: Sequence[int], *, dropped: Sequence[ToolResult] = (), last: bool = False) -> str:
    """The note a request that trims adds at its end: results of ``steps`` cut to their first line (step 0:
    the head start), and the ``dropped`` steps' calls."""
    said: list[str] = []
    if dropped:
        gone = sorted({r.step for r in dropped})
        calls = "; ".join(
            f"{r.call.name} {json.dumps(r.call.arguments, ensure_ascii=False)}" for r in dropped
        )
        if len(calls) > 240:
            calls = calls[:239] + "…"
        calls = inert(calls)  # the model wrote the arguments: no chat-template token may end the turn
        which, verb = _steps(gone), "was" if len(gone) == 1 else "were"
        said.append(f"{which[0].upper()}{which[1:]} {verb} dropped to fit the window ({calls}).")
    if steps:
        said.append(f"Results of {_steps(sorted(set(steps)))} trimmed to their first line.")
    if not last:
        said.append("Run the tool again if you need one.")
    return "[" + " ".join(said) + "]"


def _steps(numbers: Sequence[int]) -> str:
    """Step numbers as said (0 is the head start)."""
    rest = [n for n in numbers if n != 0]
    parts = ["the head start"] if 0 in numbers else []
    if rest:
        said = ", ".join(map(str, rest)) if len(rest) <= 6 else f"{rest[0]}, {rest[1]}, …, {rest[-1]}"
        parts.append(("step " if len(rest) == 1 else "steps ") + said)
    return " and ".join(parts)


def with_note(messages: list[Message], note: str) -> None:
    """Add ``note`` to the end of ``messages``: after the last result's text, before the last user
    message's (a closing prompt stays the last thing said), or as a message of its own."""
    end = messages[-1] if messages else None
    if end is not None and end.result is not None:
        messages[-1] = end.with_result(replace(end.result, output=f"{end.result.output}\n{note}"))
    elif end is not None and end.role == "user":
        messages[-1] = Message("user", f"{note}\n\n{end.content}")
    else:
        messages.append(Message("user", note))


def say_trims(
    messages: list[Message], trims: Sequence[Trim], *, dropped: Sequence[ToolResult] = (), last: bool = False
) -> None:
    """End ``messages`` with the note on what one fit did: the results it trimmed (not those of steps it
    then dropped) and the steps it dropped (see :func:`trimmed_note`, :func:`with_note`)."""
    gone = {r.step for r in dropped}
    cut = [t.step for t in trims if t.pass_number < 4 and t.step not in gone]
    with_note(messages, trimmed_note(cut, dropped=dropped, last=last))


#: A result is not trimmed for less than this (about the note that says it was): it would save nothing.
MIN_TRIM_SAVING = 80


def trim(result: ToolResult) -> ToolResult | None:
    """``result`` trimmed to its stub, the full text kept; None when that would save almost nothing."""
    stub = trimmed_stub(result.output)
    if len(result.output) - len(stub) < MIN_TRIM_SAVING:
        return None
    return replace(result, output=stub, original=result.full_text, trimmed=True)


# -- fitting a conversation under the limit ----------------------------------------------------------


@dataclass(frozen=True)
class Trim:
    """One result trimmed by :func:`fit`: where it is, which step made it, and in which pass."""

    index: int
    step: int
    tool: str
    chars_before: int
    chars_after: int
    pass_number: int
    call_id: str | None = None


@dataclass(frozen=True)
class Fit:
    """What :func:`fit` did: the messages to send, the trims, and the estimate before and after."""

    messages: list[Message]
    trims: tuple[Trim, ...] = ()
    estimate_before: int = 0
    estimate: int = 0
    limit: int = 0
    target: int = 0
    over_limit: bool = False
    #: The messages before the note was added (None: no note), and every step dropped so far. A later fit
    #: of the same request starts from ``unsaid`` and passes this one as ``earlier``: one note says both.
    unsaid: list[Message] | None = None
    dropped: tuple[ToolResult, ...] = ()

    @property
    def before_note(self) -> list[Message]:
        """The messages as fitted, before any note was added: where a later fit of the request starts."""
        return self.unsaid if self.unsaid is not None else self.messages


def fit(
    messages: Sequence[Message],
    limit: int,
    target: int,
    count: Callable[[Sequence[Message]], int],
    newest_step: int | None = None,
    *,
    last: bool = False,
    earlier: Fit | None = None,
) -> Fit:
    """Trim tool results until the request is at or under ``target``, when it is over ``limit``.

    Three passes, each oldest first, each stopping as soon as the estimate reaches the target: results of
    steps older than the two most recent; then of any step but the newest; then any. If the request is
    still over the limit, a fourth pass drops whole old steps (see ``_drop_old_steps``). ``count`` estimates
    the whole request (messages plus what the request adds), so trimming is judged on what is sent.

    A trimmed result keeps only its first line (:func:`trimmed_stub`): to the server a deletion, so one
    that reuses its cache past a change reads nothing again. What was trimmed is said once, at the end of
    the request that trims it (:func:`trimmed_note`; ``last``: the reply's closing request).

    ``earlier``: a fit of the same request this one goes on from (``messages`` is its ``unsaid``, perhaps
    with a new system message); the note then says what both trimmed and dropped, once.
    """
    current = list(messages)
    before = count(current)
    trims: list[Trim] = []
    dropped: list[ToolResult] = []
    estimate = before
    if before > limit:
        estimate = _trim_passes(current, trims, before, target, count, newest=newest_step)
        if estimate > limit:
            dropped = _drop_old_steps(current, trims, target, count)
    return noted_fit(
        current, trims, dropped, before, estimate, limit, target, count, last=last, earlier=earlier
    )


def noted_fit(  # noqa: PLR0917 - the whole of what a fit found, as fit names it
    current: list[Message],
    trims: Sequence[Trim],
    dropped: Sequence[ToolResult],
    before: int,
    estimate: int,
    limit: int,
    target: int,
    count: Callable[[Sequence[Message]], int],
    *,
    last: bool,
    earlier: Fit | None,
) -> Fit:
    """What a fit of ``current`` (estimated ``before`` it, ``estimate`` after) comes to: the note on its
    ``trims`` and ``dropped`` steps, and on those of the ``earlier`` fit it goes on from, said once at
    the end."""
    said = [*earlier.trims, *trims] if earlier is not None else list(trims)
    gone = [*earlier.dropped, *dropped] if earlier is not None else list(dropped)
    if not said:
        return Fit(current, (), before, estimate, limit, target, estimate > limit)
    unsaid = list(current)
    say_trims(current, said, dropped=gone, last=last)
    estimate = count(current)
    return Fit(current, tuple(trims), before, estimate, limit, target, estimate > limit, unsaid, tuple(gone))


def _trim_passes(
    current: list[Message],
    trims: list[Trim],
    estimate: int,
    target: int,
    count: Callable[[Sequence[Message]], int],
    *,
    newest: int | None,
) -> int:
    """The three trimming passes of :func:`fit` over ``current`` (estimated at ``estimate``; trimmed in
    place, ``trims`` appended); returns the estimate after them."""
    if newest is None:
        newest = max((m.result.step for m in current if m.result is not None), default=0)
    passes: tuple[Callable[[int], bool], ...] = (
        lambda step: step < newest - 1,
        lambda step: step < newest,
        lambda step: True,
    )
    # Each trim changes one message, so the estimate moves by that message's own difference: recounting
    # the whole conversation after every trim would make fitting quadratic in its length. The exact count
    # is taken again when a pass stops; if rounding stopped it early, the same pass goes on.
    for number, eligible in enumerate(passes, start=1):
        while estimate > target:
            trimmed_any = False
            for index, message in enumerate(current):
                if estimate <= target:
                    break
                result = message.result
                if result is None or result.trimmed or not eligible(result.step):
                    continue
                done = trim(result)
                if done is None:
                    continue
                trimmed = message.with_result(done)
                estimate -= count([message]) - count([trimmed])
                current[index] = trimmed
                trims.append(
                    Trim(
                        index,
                        result.step,
                        result.call.name,
                        len(result.output),
                        len(done.output),
                        number,
                        result.call.id,
                    )
                )
                trimmed_any = True
            estimate = count(current)
            if not trimmed_any:
                break
    return estimate


def _drop_old_steps(
    current: list[Message], trims: list[Trim], target: int, count: Callable[[Sequence[Message]], int]
) -> list[ToolResult]:
    """The fourth pass, when every result is a stub and the request is still over the limit: whole steps go.

    A long reply at a small window collects stubs and calls until they alone overflow it. Then the oldest
    steps (a call and its results) give way, never the newest, until the estimate reaches the target.
    Nothing takes their place (a deletion, like a trim); the note at the end of the request says which
    steps went and what they called. Returns the dropped results.
    """
    estimate = count(current)
    dropped: list[ToolResult] = []
    while estimate > target:
        steps = sorted({m.result.step for m in current if m.result is not None})
        if len(steps) <= 1:
            break
        oldest = steps[0]
        where = [i for i, m in enumerate(current) if m.result is not None and m.result.step == oldest]
        start, end = where[0], where[-1]
        if start > 0 and current[start - 1].role == "assistant":
            start -= 1  # the call goes with its results
        gone = [m.result for m in current[start : end + 1] if m.result is not None]
        dropped += gone
        del current[start : end + 1]
        trims.extend(Trim(-1, r.step, r.call.name, len(r.output), 0, 4, r.call.id) for r in gone)
        estimate = count(current)
    return dropped
