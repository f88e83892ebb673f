"""The context budget: the plan for a window, the token estimate, cutting and trimming tool results.

Pure: no I/O. The loop asks the server for its window, calls :func:`plan_context`, estimates each request
with a :class:`TokenEstimator` (or anything with the same ``count`` shape), and calls :func:`fit` before
every request so that the request stays under the plan's ``limit``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .conversation import Message, Mode, ToolResult, inert, render
from .text_tokens import TextTokens

#: Where the estimate starts: 3.3 characters a token errs towards too many tokens, since code, paths,
#: JSON and logs run denser than prose. Too many is the safe side: it trims a little early instead of
#: letting the server cut the front of the conversation.
DEFAULT_CHARS_PER_TOKEN = 3.3
MIN_RATIO = 2.0
MAX_RATIO = 6.0
#: A prompt this short is mostly chat-template overhead; its ratio says nothing about the text.
MIN_OBSERVED_CHARS = 200

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


@dataclass(frozen=True)
class Observation:
    """One server-reported prompt size: the characters we sent and the tokens it counted."""

    chars: int
    prompt_tokens: int
    ratio_before: float
    ratio_after: float


class TokenEstimator:
    """Tokens from characters, with a ratio learned from what the server reports.

    How it learns: each usable observation *replaces* the ratio (the article's method). Measured on 1,000
    random 12-request agent conversations against llama.cpp's exact counts for SmolLM2
    (``benchmarks/bench_estimator.py``, requests 2-12): replacing erred least — median 2.8%, p95 23.6% —
    against smoothing (EMA 0.5: 4.6% / 24.4%; EMA 0.3: 6.8% / 26.9%; the cumulative ratio: 6.4% /
    25.8%), which drags in the ratio of shorter, differently mixed prompts. All are far from the goal of
    5%, which is why the loop estimates requests with :class:`PromptCounter` and keeps this ratio for
    what is shown and for the text it cannot count exactly.
    """

    def __init__(self, ratio: float = DEFAULT_CHARS_PER_TOKEN) -> None:
        self.ratio = _clamp_ratio(ratio)
        self.history: list[Observation] = []

    def tokens(self, chars: int) -> int:
        """Estimated tokens for ``chars`` characters (rounded up)."""
        if chars <= 0:
            return 0
        return math.ceil(chars / self.ratio)

    def observe(self, chars: int, prompt_tokens: int) -> None:
        """Learn from a request of ``chars`` characters that the server counted as ``prompt_tokens``."""
        if chars < MIN_OBSERVED_CHARS or prompt_tokens <= 0:
            return
        before = self.ratio
        self.ratio = _clamp_ratio(chars / prompt_tokens)
        self.history.append(Observation(chars, prompt_tokens, before, self.ratio))

    def __repr__(self) -> str:
        return f"TokenEstimator(ratio={self.ratio:.3f}, observations={len(self.history)})"


def _clamp_ratio(ratio: float) -> float:
    return min(MAX_RATIO, max(MIN_RATIO, float(ratio)))


# -- what a request weighs ---------------------------------------------------------------------------

#: Characters a chat template adds around each message (role markers, separators): about 5 tokens.
MESSAGE_OVERHEAD_CHARS = 16


def message_text(message: dict[str, Any]) -> str:
    """The text of one rendered message that the model reads: its content and its calls."""
    return str(message.get("content") or "") + calls_text(message)


def calls_text(message: dict[str, Any]) -> str:
    """The text of a rendered message's native calls: each one's name and arguments."""
    text = ""
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        text += f"{function.get('name', '')} {function.get('arguments', '')}"
    return text


def message_chars(message: dict[str, Any]) -> int:
    """Characters one rendered message weighs: its text, its calls' JSON and the template's markers."""
    return MESSAGE_OVERHEAD_CHARS + len(message_text(message)) + 11 * len(message.get("tool_calls") or ())


def tools_chars(tools: Sequence[dict[str, Any]] | None) -> int:
    """Characters the tool definitions add to a native request (the template renders their JSON)."""
    return len(tools_text(tools))


def request_chars(
    messages: Sequence[Message],
    mode: Mode,
    tools: Sequence[dict[str, Any]] | None = None,
    extra: str = "",
) -> int:
    """Characters of a whole request: the rendered messages, the tool definitions, any added text."""
    rendered = render(list(messages), mode)
    return sum(message_chars(m) for m in rendered) + tools_chars(tools) + len(extra)


# -- the estimate the loop trusts: the last count plus what changed ----------------------------------

#: Tokens a chat template adds around one message (ChatML: ``<|im_start|>role\n`` and ``<|im_end|>\n``)
#: and around each native call; a little high for most templates, which is the safe side.
MESSAGE_OVERHEAD_TOKENS = 6
CALL_OVERHEAD_TOKENS = 4


def tools_text(tools: Sequence[dict[str, Any]] | None) -> str:
    """The tool definitions as the text a template renders (their JSON)."""
    return json.dumps(list(tools), ensure_ascii=False, separators=(", ", ": ")) if tools else ""


#: How much the prior that a native call weighs what its text is estimated to weigh counts, as a row of
#: the least squares: a call's estimate, in tokens (about one call's worth).
CALL_PRIOR_TOKENS = 15.0
#: ... and as much as a typical tool result, the text factor's own prior row.
CONTENT_PRIOR_TOKENS = 400.0
#: The most a native call may weigh per token of its estimate (a template that wraps each call in JSON
#: with its own markup), and the least (0: a template that does not render calls at all).
MAX_CALL_SHARE = 3.0


@dataclass
class CallShare:
    """What a native call weighs, per token of its estimate, told from counts no exact count helps with.

    A server that cannot tokenize reports only whole prompts; a step adds a message with calls and its
    results at once. How the template renders calls differs most between templates (SmolLM2's drops
    them; Qwen's wraps each in JSON between tags), and taking the step's growth apart by the estimates
    would then credit the results with what the call weighed or did not: trimming a result later takes
    off that wrong weight. So each step's count is a row of a least squares, tokens = f × content +
    share × calls (both as the features estimate them, before the factor), with a prior row each (f at
    the text factor, share at 1); steps whose results are long and short tell the two apart.
    """

    xx: float = 0.0
    xc: float = 0.0
    cc: float = 0.0
    xt: float = 0.0
    ct: float = 0.0

    def add(self, content: float, calls: float, tokens: float) -> None:
        """One step's count: ``content`` and ``calls`` as estimated (raw), ``tokens`` of the two counted."""
        self.xx += content * content
        self.xc += content * calls
        self.cc += calls * calls
        self.xt += content * tokens
        self.ct += calls * tokens

    def share(self, factor: float) -> float:
        """Tokens a call weighs per token of its raw estimate (``factor``: the text factor, as prior)."""
        p, q = CONTENT_PRIOR_TOKENS**2, CALL_PRIOR_TOKENS**2
        xx, cc = self.xx + p, self.cc + q
        xt, ct = self.xt + p * factor, self.ct + q * factor
        determinant = xx * cc - self.xc * self.xc
        if determinant <= 0:
            return factor
        return min(MAX_CALL_SHARE, max(0.0, (xx * ct - self.xc * xt) / determinant))


@dataclass(frozen=True)
class _Anchor:
    """The last request the server counted: its messages, its tools' share and the server's count."""

    keys: tuple[str, ...]
    rendered: tuple[dict[str, Any], ...]
    tools_tokens: int
    prompt_tokens: int


def _key(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False)


class PromptCounter:
    """The estimate of a whole request: the server's last count, less what changed, plus the new parts.

    A ratio over the whole prompt errs 20-30% on agent conversations: one tool result of a dense kind
    (listings, logs, CSS) moves the true count far from any average, and a template that ignores the
    tool definitions makes the first ratio meaningless. But the server reports the exact size of every
    prompt it read, and the next request is that prompt plus a few messages (less what trimming cut). So
    the estimate stands on that count and estimates only the difference, each message on its own:
    exactly where the server can tokenize (llama.cpp's ``/tokenize``; the loop asks for each new message
    before a request, into ``exact``), else from the text's features (:class:`TextTokens`: words,
    digits, punctuation runs, weighed as a byte-level BPE vocabulary weighs them, times a factor learned
    from the counts). What a message was measured to weigh is kept in a ledger: the server's growth from
    one request to the next, shared among the messages it added; trimming a result then takes off what
    it weighed, not an estimate of it. ``estimator`` (the ratio) learns from the same new text and is
    what is shown. ``benchmarks/bench_estimator.py`` measures this against the alternatives.
    """

    def __init__(self, estimator: TokenEstimator, text: TextTokens | None = None) -> None:
        self.estimator = estimator
        self.text = text if text is not None else TextTokens()
        self.exact: dict[str, int] = {}
        #: What each message of the last counted request weighed, measured (keyed by the message).
        self.ledger: dict[str, int] = {}
        self._anchor: _Anchor | None = None
        #: Whether the server's template renders the tool definitions (None until a count says).
        self.tools_rendered: bool | None = None
        #: Tokens the template adds around a message; learned from counts where it can be told apart.
        self.message_overhead = MESSAGE_OVERHEAD_TOKENS
        #: What a message with native calls weighs beyond its counted text: templates differ most there
        #: (some render the calls' JSON, some nothing at all), so it is learned, and may be negative.
        self.call_adjustment = 0
        #: The same, learned from counts of whole prompts when no text was counted exactly.
        self.calls = CallShare()

    @property
    def anchored(self) -> bool:
        """Whether a count of an earlier request stands under the estimate."""
        return self._anchor is not None

    def message_tokens(self, message: dict[str, Any]) -> int:
        """One rendered message's tokens: what a count measured it to weigh (the ledger), else new.

        Measured first, for taking a message off as much as for keeping it: the template's share of a
        message is estimated for a new one (rounded up, the safe side for adding), and taking a dozen old
        steps off at those estimates would leave the request believed smaller than it is.
        """
        return self._weight(message, _key(message) if self.ledger else "")

    def _weight(self, message: dict[str, Any], key: str) -> int:
        """:meth:`message_tokens`, with the message's key already made (it is the costly part)."""
        measured = self.ledger.get(key)
        return measured if measured is not None else self._new_message_tokens(message)

    def _new_message_tokens(self, message: dict[str, Any]) -> int:
        """A message no count has weighed: its text exact where known, else estimated, and the template's."""
        text = message_text(message)
        exact = self.exact.get(text)
        calls = len(message.get("tool_calls") or ())
        if exact is None and calls:
            # Estimated: the content as text, the calls as the counts say this template renders them.
            content = self.text.tokens(str(message.get("content") or ""))
            rendered = math.ceil(self.call_share * self._calls_raw(message)) + self.call_adjustment
            return max(self.message_overhead, content + self.message_overhead + rendered)
        if exact is None:
            exact = self.text.tokens(text)
        if not calls:
            return exact + self.message_overhead
        return max(
            self.message_overhead,
            exact + self.message_overhead + CALL_OVERHEAD_TOKENS * calls + self.call_adjustment,
        )

    @property
    def call_share(self) -> float:
        """Tokens a native call weighs per token of its raw estimate, as learned (see :class:`CallShare`)."""
        return self.calls.share(self.text.factor)

    def _calls_raw(self, message: dict[str, Any]) -> float:
        """A message's native calls as the features estimate them (before the factor), with their markup."""
        calls = len(message.get("tool_calls") or ())
        return self.text.raw(calls_text(message)) + CALL_OVERHEAD_TOKENS * calls if calls else 0.0

    def tools_tokens(self, tools: Sequence[dict[str, Any]] | None) -> int:
        """The tool definitions' tokens: exact where known, else estimated."""
        text = tools_text(tools)
        if not text:
            return 0
        exact = self.exact.get(text)
        return exact if exact is not None else self.text.tokens(text)

    def count(self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> int:
        """Estimated prompt tokens of a request with these rendered messages and tools."""
        anchor = self._anchor
        # Without an anchor there is no ledger either, and no key is needed.
        keys = [_key(m) for m in rendered] if anchor is not None else [""] * len(rendered)
        parts = [self._weight(m, k) for m, k in zip(rendered, keys, strict=True)]
        tools_now = self.tools_tokens(tools)
        shared = 0 if anchor is None else _shared_prefix(anchor.keys, keys)
        if anchor is None or shared == 0:
            return sum(parts) + (0 if self.tools_rendered is False else tools_now)
        gone = sum(
            self._weight(m, k) for m, k in zip(anchor.rendered[shared:], anchor.keys[shared:], strict=True)
        )
        estimate = anchor.prompt_tokens - gone + sum(parts[shared:]) + self._tools_change(tools_now, anchor)
        # Whatever the counts said, no text runs denser than MAX_RATIO characters a token.
        chars = sum(message_chars(m) for m in rendered)
        if self.tools_rendered is not False:
            chars += len(tools_text(tools))
        return max(estimate, math.ceil(chars / MAX_RATIO), 1)

    def _tools_change(self, tools_now: int, anchor: _Anchor) -> int:
        """What the tool definitions add to a request since the anchor (a new turn offers them again)."""
        if self.tools_rendered is False:
            return 0  # the template ignores them
        if tools_now > anchor.tools_tokens or self.tools_rendered:
            # Tools dropped (the last request offers none) are taken off only when the template is known
            # to render them: taking off what was never there would underestimate.
            return tools_now - anchor.tools_tokens
        return 0

    def observe(
        self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, prompt_tokens: int
    ) -> None:
        """The server counted ``prompt_tokens`` for this request: stand the next estimates on it."""
        if prompt_tokens <= 0 or prompt_tokens * MAX_RATIO < sum(message_chars(m) for m in rendered):
            # A count that makes the text denser than any text is (a proxy that counts something else, a
            # server that reports 1) is not believed: standing on it would make every estimate tiny.
            return
        keys = tuple(_key(m) for m in rendered)
        tools_now = self.tools_tokens(tools)
        anchor = self._anchor
        shared = 0 if anchor is None else _shared_prefix(anchor.keys, list(keys))
        if anchor is None or shared == 0:
            every_exact = all(message_text(m) in self.exact for m in rendered)
            if tools_now and (every_exact or self.tools_rendered is None):
                # What is left of the count beyond the messages is the tools, or nothing: told apart by
                # exact counts, or (less surely, so only once) by the messages' estimates.
                rest = prompt_tokens - sum(self._weight(m, k) for m, k in zip(rendered, keys, strict=True))
                self.tools_rendered = rest > tools_now / 2
            added = list(rendered)
            new_chars = sum(message_chars(m) for m in rendered)
            new_tokens = prompt_tokens
            text_tokens = prompt_tokens
            if self.tools_rendered is not False:
                new_chars += len(tools_text(tools))
                text_tokens -= tools_now
            ledger: dict[str, int] = {}
        else:
            earlier = zip(anchor.rendered[shared:], anchor.keys[shared:], strict=True)
            base = anchor.prompt_tokens - sum(self._weight(m, k) for m, k in earlier)
            base += self._tools_change(tools_now, anchor)  # not new text: the ratio is about messages
            # Messages sent again unchanged below an edit keep what they were measured to weigh; the
            # rest of the growth is the new messages' (unless the counts disagree: then all share it).
            again = {k: self.ledger[k] for k in keys[shared:] if k in self.ledger}
            added = [m for k, m in zip(keys[shared:], rendered[shared:], strict=True) if k not in again]
            new_tokens = text_tokens = prompt_tokens - base - sum(again.values())
            if not added or new_tokens <= 0:
                again = {}
                added = list(rendered[shared:])
                new_tokens = text_tokens = prompt_tokens - base
            new_chars = sum(message_chars(m) for m in added)
            self._learn_overhead(added, new_tokens)
            kept = zip(keys[:shared], rendered[:shared], strict=True)
            ledger = {key: self._weight(m, key) for key, m in kept} | again
        if new_tokens > 0:
            self.estimator.observe(new_chars, new_tokens)
        self._learn_text(added, text_tokens)
        self.ledger = {**ledger, **self._share_out(added, text_tokens, whole=not ledger)}
        self._anchor = _Anchor(keys, tuple(rendered), tools_now, prompt_tokens)

    def _learn_text(self, added: Sequence[dict[str, Any]], tokens: int) -> None:
        """Teach the features' factor, and what a native call weighs, from messages none of which was
        counted exactly."""
        if not added or any(message_text(m) in self.exact for m in added):
            return
        counted = tokens - self.message_overhead * len(added)
        content = sum(self.text.raw(str(m.get("content") or "")) for m in added)
        calls = sum(self._calls_raw(m) for m in added)
        if calls:
            self.calls.add(content, calls, counted)
            counted -= round(self.call_share * calls)
        self.text.observe(content, counted)

    def _share_out(
        self, added: Sequence[dict[str, Any]], tokens: int, *, whole: bool = False
    ) -> dict[str, int]:
        """The new messages' ledger entries: the count's growth shared in proportion to their estimates.

        ``whole``: the count is of a whole request, which holds tokens of no message (the start of the
        text, the prompt for the reply): they go to the first message, which is never trimmed, and each
        other message keeps its estimate — a share of them would make it weigh more than it does, and
        taking it off later would leave the request believed smaller than it is.
        """
        estimates = [self._new_message_tokens(m) for m in added]
        if whole and added:
            first = max(1, tokens - sum(estimates[1:]))
            return {_key(m): e for m, e in zip(added, [first, *estimates[1:]], strict=True)}
        total = sum(estimates)
        scale = tokens / total if total > 0 and tokens > 0 else 1.0
        return {_key(m): max(1, round(e * scale)) for m, e in zip(added, estimates, strict=True)}

    def _learn_overhead(self, added: Sequence[dict[str, Any]], tokens: int) -> None:
        # Only from messages whose every part was counted exactly; what is left is the template's.
        if not added or any(message_text(m) not in self.exact for m in added):
            return
        with_calls = [m for m in added if m.get("tool_calls")]
        if not with_calls:
            content = sum(self.exact[message_text(m)] for m in added)
            # Rounded up: a token too many per message is the safe side.
            self.message_overhead = max(0, min(16, math.ceil((tokens - content) / len(added))))
            return
        # Messages with native calls take what is left over; rounded up for the same reason.
        left = tokens - sum(self._new_message_tokens(m) for m in added)
        self.call_adjustment = max(-4096, min(64, self.call_adjustment + math.ceil(left / len(with_calls))))

    def unknown_texts(
        self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[str]:
        """The texts of a request whose exact count is not known yet (what the loop may tokenize)."""
        texts = [message_text(m) for m in rendered]
        if tools:
            texts.append(tools_text(tools))
        return [t for t in dict.fromkeys(texts) if t and t not in self.exact]


def _shared_prefix(first: Sequence[str], second: Sequence[str]) -> int:
    shared = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        shared += 1
    return shared


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
