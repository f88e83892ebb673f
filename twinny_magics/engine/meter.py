"""The meter: one session's estimate, window and plan, and each request weighed once.

It owns what weighing needs and nothing else: the counter (the estimate the loop trusts), the ratio
shown, the tokenizer family the counter weighs text for, whether the server tokenizes, the window (and a
smaller one a refusal named) and the plan for it. The arithmetic is the pure core's (``budget``,
``estimate``); the meter does what needs the server: it asks it to tokenize the texts not counted yet
and to count a first or continued prompt, and learns from every count it reports.

:meth:`Meter.weigh` weighs a request once and hands back a :class:`Weighed` that carries its rendering:
the request's record reads its size from it, and the request is sent as it. Every list of messages the
meter weighs is rendered through one :class:`~twinny_magics.engine.rendering.Renderer`, which renders a
message as it enters the conversation and again only when it changes (a trim, a note).

Two strategies come in through the constructor, so that a benchmark compares its own without patching
anything: ``counter`` (anything with the :class:`Counter` shape) and ``fit`` (anything with
:func:`~twinny_magics.budget.fit`'s signature).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from twinny_magics.budget import ContextPlan, Fit, chars_that_fit, fit, plan_context, trim, trim_target
from twinny_magics.contracts import (
    ChatRequest,
    CountsPrompts,
    DescribesModel,
    ModelServer,
    ReusesCache,
    Tokenizes,
)
from twinny_magics.conversation import Message, Mode, ToolCall, ToolResult, render, tool_result
from twinny_magics.errors import PromptTooLong, ServerError
from twinny_magics.estimate import PromptCounter, TokenEstimator, rendered_chars
from twinny_magics.events import RequestRecord, WindowShare
from twinny_magics.text_tokens import FAMILY_WEIGHTS, TextTokens, family_weights, tokenizer_family

from .rendering import Rendered, Renderer

#: How long a window named by a too-long refusal overrides the probe (the probe caches its answer 30 s).
WINDOW_CAP_SECONDS = 30.0

Tools = list[dict[str, Any]] | None


class Counter(Protocol):
    """What the meter needs of an estimate (:class:`~twinny_magics.estimate.PromptCounter` is one)."""

    #: Exact token counts of texts, by text: the meter adds what the server tokenized.
    exact: dict[str, int]

    @property
    def anchored(self) -> bool:
        """Whether a server's count of an earlier request stands under the estimate."""
        ...

    def count(self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> int:
        """Estimated prompt tokens of a rendered request."""
        ...

    def observe(
        self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, prompt_tokens: int
    ) -> None:
        """The server counted ``prompt_tokens`` for this request."""
        ...

    def unknown_texts(
        self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[str]:
        """The request's texts whose exact count is not known yet."""
        ...


class FitPolicy(Protocol):
    """How a request is fitted under its limit (:func:`~twinny_magics.budget.fit` is the package's)."""

    def __call__(
        self,
        messages: Sequence[Message],
        limit: int,
        target: int,
        count: Callable[[Sequence[Message]], int],
        newest_step: int | None = None,
        *,
        last: bool = False,
        earlier: Fit | None = None,
    ) -> Fit: ...


@dataclass(frozen=True)
class Weighed:
    """One request as weighed: what it sends, rendered, the tools it offers, its plan and its target.

    ``fitted`` holds the trims of its own fit only (a re-fit's are the re-fit's), as they are told.
    """

    fitted: Fit
    tools: Tools
    mode: Mode
    plan: ContextPlan
    target: int
    #: ``fitted.messages`` rendered in ``mode``: what the request sends.
    rendered: Rendered

    @property
    def messages(self) -> list[Message]:
        """The messages the request sends."""
        return self.fitted.messages

    @property
    def chars(self) -> int:
        """The request's characters: its rendered messages and its tool definitions."""
        return rendered_chars(self.rendered, self.tools)

    def record(self, step: int, last: bool) -> RequestRecord:
        """The request's record, with what weighing it found (the server's counts come later)."""
        return RequestRecord(
            step=step,
            mode=self.mode,
            window=self.plan.window,
            limit=self.plan.limit,
            target=self.target,
            estimated_tokens=self.fitted.estimate,
            chars=self.chars,
            trimmed=len(self.fitted.trims),
            last=last,
        )


class Meter:
    """One session's estimate and window; weighs each request once (see the module's docstring)."""

    def __init__(
        self,
        server: ModelServer,
        *,
        estimator: TokenEstimator | None = None,
        counter: Counter | None = None,
        fit: FitPolicy = fit,
    ) -> None:
        self.server = server
        self.estimator = estimator or TokenEstimator()
        # Without /tokenize the estimate weighs text as the model's tokenizer family does (by its name; by
        # what the server says of the model when the name does not tell, see learn_model_family).
        self.counter: Counter = (
            counter
            if counter is not None
            else PromptCounter(self.estimator, TextTokens(family_weights(server.model)))
        )
        self.fit = fit
        #: The tokenizer family the text weights are for, and where it was learned (None: SmolLM2's).
        self.family: tuple[str, str] | None = None
        if (named := tokenizer_family(server.model)) is not None:
            self.family = (named, "the model's name")
        self._family_asked = False
        #: Whether the server counts tokens exactly (llama.cpp's /tokenize); None until asked.
        self.tokenize_works: bool | None = None
        #: A smaller window a too-long refusal named, and until when it overrides the (cached) probe.
        self.window_cap: tuple[int, float] | None = None
        #: The window last planned, and its plan (None before the first request).
        self.window: int | None = None
        self.plan: ContextPlan | None = None
        #: Every list of messages is rendered through this: each part once (see ``rendering``).
        self._renderer = Renderer(self.render)

    # -- the one place a conversation is rendered -----------------------------------------------------

    def render(self, messages: Sequence[Message], mode: Mode) -> Rendered:
        """``messages`` as a request in ``mode`` sends them, rendered afresh (a subclass may count these)."""
        return render(list(messages), mode)

    def rendering(self, messages: Sequence[Message], mode: Mode) -> Rendered:
        """``messages`` as a request in ``mode`` sends them: what :meth:`render` gives, with only the
        messages not rendered before rendered now."""
        return self._renderer(messages, mode)

    # -- the plan --------------------------------------------------------------------------------------

    async def ask_window(self, share: float) -> ContextPlan:
        """Ask the server's window (it caches its answer) and plan it, with ``share`` for the head start."""
        probed = await self.server.context_window()
        window = probed
        if self.window_cap is not None:
            cap, until = self.window_cap
            if time.monotonic() < until:
                window = min(probed, cap)
            else:
                self.window_cap = None
        return self.plan_for(window, share)

    def plan_for(self, window: int, share: float) -> ContextPlan:
        """Share ``window`` out (see ``budget.plan_context``), and keep it as the current plan."""
        self.window = window
        self.plan = plan = plan_context(window, self.estimator.ratio, share)
        return plan

    # -- what the server counts -------------------------------------------------------------------------

    def observe(self, rendered: Rendered, tools: Tools, prompt_tokens: int) -> None:
        """The server counted ``prompt_tokens`` for this request: the estimate learns from it."""
        self.counter.observe(rendered, tools, prompt_tokens)

    async def server_count(self, rendered: Rendered, tools: Tools) -> int | None:
        """The server's exact count of a whole prompt, where it can count one (llama.cpp), which then
        teaches the estimate; None where it cannot, or did not this time."""
        server = self.server
        if not isinstance(server, CountsPrompts) or self.tokenize_works is False:
            return None
        try:
            exact = await server.count_prompt_tokens(
                ChatRequest(messages=rendered, tools=tools, model=server.model)
            )
        except ServerError:
            return None
        if exact:
            self.counter.observe(rendered, tools, exact)
        return exact

    async def learn_model_family(self) -> None:
        """Once, before the first request: when the model's name does not tell its tokenizer family (a
        gateway's alias, a renamed model), ask the server what the model is and weigh text for that family."""
        if self._family_asked or self.family is not None:
            return
        self._family_asked = True
        if not isinstance(self.server, DescribesModel):
            return
        try:
            metadata = await self.server.model_metadata()
        except ServerError:
            return  # the name's weights (SmolLM2's) and the learned factor, as without metadata
        family = tokenizer_family(metadata.get("model"), metadata)
        if family is not None:
            if isinstance(self.counter, PromptCounter):
                self.counter.text = TextTokens(FAMILY_WEIGHTS[family])
            self.family = (family, "the server's description of the model")

    async def _learn_exact(self, rendered: Rendered, tools: Tools) -> None:
        """Ask the server for the exact tokens of each text not counted yet, where it can tokenize."""
        server = self.server
        if self.tokenize_works is False or not isinstance(server, Tokenizes):
            return
        for text in self.counter.unknown_texts(rendered, tools):
            try:
                count = await server.tokenize(text)
            except ServerError:
                return  # a passing fault: the estimate falls back to the ratio for these texts
            if count is None:
                self.tokenize_works = False
                return
            self.tokenize_works = True
            self.counter.exact[text] = count

    # -- weighing a request ---------------------------------------------------------------------------

    async def weigh(
        self,
        messages: Sequence[Message],
        tools: Tools,
        plan: ContextPlan,
        mode: Mode,
        *,
        last: bool,
        reuses: bool,
    ) -> Weighed:
        """Render a request once, count its new texts, choose the target it is trimmed to, and fit it under
        the limit. ``reuses``: the server reuses its cache past a trim (see :func:`reuses_cache`)."""
        self._renderer.turn()
        rendered = self.rendering(messages, mode)
        await self._learn_exact(rendered, tools)
        if not self.counter.anchored:
            # Without an earlier count, a template's own markup and whether it renders the tool
            # definitions at all (SmolLM2's does not: the estimate was 9x the real count) can only be
            # guessed: where the server can count a whole prompt, the very first estimate stands on it.
            await self.learn_model_family()
            await self.server_count(rendered, tools)
        weights = _Weights(self, tools, mode, (tuple(messages), self.counter.count(rendered, tools)))
        target = plan.target
        if weights(messages) > plan.limit and not reuses:
            # A server that reads again everything below a trim is trimmed deeper, less often; one that
            # reuses its cache past a trim pays only for the note, so it keeps more of the results.
            target = trim_target(plan, weights(_seen_stubbed(messages)))
        fitted = self.fit(messages, plan.limit, target, weights, last=last)
        if fitted.trims:
            # The stubs and the note are new text: count them too, then make sure the exact total still fits
            # (estimates made before those counts no longer hold).
            await self._learn_exact(self.rendering(fitted.messages, mode), tools)
            weights = _Weights(self, tools, mode, None)
            refit = self.fit(fitted.before_note, plan.limit, target, weights, last=last, earlier=fitted)
            fitted = replace(refit, trims=fitted.trims + refit.trims, estimate_before=fitted.estimate_before)
        return self._weighed(fitted, plan, target, weights)

    def learn_refusal(self, weighed: Weighed, error: PromptTooLong, share: float) -> ContextPlan:
        """What a too-long refusal of ``weighed`` teaches: the server's count (it counted more than we
        estimated), and a smaller window when it names one (a server restarted with less), planned for
        and kept to until the probe's answer has expired. Returns the plan to fit the request again to."""
        if error.prompt_tokens:
            self.counter.observe(weighed.rendered, weighed.tools, error.prompt_tokens)
        if error.window and error.window < weighed.plan.window:
            self.window_cap = (error.window, time.monotonic() + WINDOW_CAP_SECONDS)
            return self.plan_for(error.window, share)
        return weighed.plan

    def refit(
        self,
        earlier: Fit,
        messages: Sequence[Message],
        tools: Tools,
        plan: ContextPlan,
        mode: Mode,
        *,
        last: bool,
    ) -> Weighed:
        """A refused request fitted again, from ``messages`` (``earlier``'s before its note, perhaps with a
        new system message), trimmed to the plan's target whatever its estimate: one note says both fits."""
        weights = _Weights(self, tools, mode, None)
        fitted = self.fit(messages, -1, plan.target, weights, last=last, earlier=earlier)
        return self._weighed(fitted, plan, plan.target, weights)

    def _weighed(self, fitted: Fit, plan: ContextPlan, target: int, weights: _Weights) -> Weighed:
        """The request as fitted, rendered."""
        rendered = self.rendering(fitted.messages, weights.mode)
        return Weighed(fitted, weights.tools, weights.mode, plan, target, rendered)

    def share(self, weighed: Weighed) -> WindowShare:
        """How a request's estimate falls into the system prompt, the history, the results and the reply."""
        messages, mode, tools = weighed.messages, weighed.mode, weighed.tools
        system_part = [m for m in messages if m.role == "system"]
        results = [m for m in messages if m.result is not None]
        history = [m for m in messages if m.role != "system" and m.result is None]
        return WindowShare(
            system=self.counter.count(self.rendering(system_part, mode), tools),
            history=self.counter.count(self.rendering(history, mode), None),
            results=self.counter.count(self.rendering(results, mode), None),
            reply=weighed.plan.reply,
        )

    async def room_for_result(
        self,
        call: ToolCall,
        step: int,
        shown: str,
        *,
        before: Sequence[Message],
        added: Sequence[Message],
        plan: ContextPlan,
        tools: Tools,
        mode: Mode,
    ) -> int:
        """Characters of a new result the next request (``before``, then ``added`` and the result, offering
        ``tools``) can show the model.

        All of it when the request stays under the limit (nothing is trimmed), or when trimming older
        results makes room for it. Otherwise trimming would take it too, in the very request that
        brings it: then as much as fits beside everything else trimmed.
        """
        probe = tool_result(ToolResult(call, shown, step))
        alone = self.rendering([probe], mode)
        await self._learn_exact(alone, None)
        if self.counter.count(self.rendering([*before, *added, probe], mode), tools) <= plan.limit:
            return len(shown)
        empty = tool_result(ToolResult(call, "", step))
        tokens = self.counter.count(alone, None) - self.counter.count(self.rendering([empty], mode), None)
        rest = [_stubbed(m) for m in before] + [*added, empty]
        room = plan.target - self.counter.count(self.rendering(rest, mode), tools)
        return chars_that_fit(shown, tokens, room, len(shown))


class _Weights:
    """The count a fit is given: a list of messages estimated for one request (rendered by the meter, each
    part once). ``estimated``: the request's own messages and their estimate, while the counter has
    learned nothing since (the fit's first count is of them)."""

    def __init__(
        self, meter: Meter, tools: Tools, mode: Mode, estimated: tuple[tuple[Message, ...], int] | None
    ) -> None:
        self.meter = meter
        self.tools = tools
        self.mode = mode
        self.estimated = estimated

    def __call__(self, messages: Sequence[Message]) -> int:
        if self.estimated is not None:
            same, estimate = self.estimated
            if len(messages) == len(same) and all(a is b for a, b in zip(messages, same, strict=True)):
                return estimate
        return self.meter.counter.count(self.meter.rendering(messages, self.mode), self.tools)


def reuses_cache(server: object, extra: Mapping[str, Any] | None) -> bool:
    """Whether the server reuses its cached prompt past a trim: as the requests' own ``n_cache_reuse``
    says when they carry one (a positive chunk size: yes; 0: no, e.g. ``Agent(extra={"n_cache_reuse":
    0})``), else as the server does (``ReusesCache``)."""
    asked = (extra or {}).get("n_cache_reuse")
    if asked is not None:
        return isinstance(asked, int) and not isinstance(asked, bool) and asked > 0
    return isinstance(server, ReusesCache) and server.reuses_cache


def _seen_stubbed(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every result the model has seen trimmed: the newest step's results stay whole."""
    newest = max((m.result.step for m in messages if m.result is not None), default=0)
    return [_stubbed(m) if m.result is not None and m.result.step < newest else m for m in messages]


def _stubbed(message: Message) -> Message:
    """``message`` as the deepest trimming would leave it (a result becomes its stub, as ``trim`` does)."""
    result = message.result
    if result is None or result.trimmed:
        return message
    stub = trim(result)
    return message if stub is None else message.with_result(stub)
