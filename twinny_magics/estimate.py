"""The token estimate of a request: the ratio, the weight of a rendered message, and the counter.

Pure: no I/O. What a request weighs is estimated here and nowhere else: :class:`TokenEstimator` (a ratio of
characters to tokens, learned from the server's counts and shown to the user), the characters a rendered
message, the tool definitions and a whole request weigh, and :class:`PromptCounter`, the estimate the
loop trusts (the server's last count, less what changed, plus the new parts). :mod:`~twinny_magics.budget`
plans the window and fits a request with it; it re-exports these names.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .conversation import Message, Mode, render
from .text_tokens import TextTokens

#: Where the estimate starts: 3.3 characters a token errs towards too many tokens, since code, paths,
#: JSON and logs run denser than prose. Too many is the safe side: it trims a little early instead of
#: letting the server cut the front of the conversation.
DEFAULT_CHARS_PER_TOKEN = 3.3
MIN_RATIO = 2.0
MAX_RATIO = 6.0
#: A prompt this short is mostly chat-template overhead; its ratio says nothing about the text.
MIN_OBSERVED_CHARS = 200


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
    return rendered_chars(render(list(messages), mode), tools) + len(extra)


def rendered_chars(rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> int:
    """Characters of a request already rendered: its messages and its tool definitions."""
    return sum(message_chars(m) for m in rendered) + tools_chars(tools)


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
