"""Weighing one request, beside the loop: estimate it, count what is new, fit it to the window, re-fit it.

The arithmetic is :mod:`~twinny_magics.budget`'s (pure); this unit does what needs the server and the
loop's state. It plans the window (keeping to a smaller one a too-long refusal named), asks the server to
tokenize the texts not counted yet and to count a first or continued prompt, chooses the target a request
is trimmed to, fits it (and fits it again once the stubs are counted), re-plans and re-fits it when the
server refuses it as too long, and says how much of a new result the next request can show. It emits
nothing: :mod:`~twinny_magics.loop` records, tells and streams what was weighed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from . import contracts as wire
from .budget import (
    ContextPlan,
    Fit,
    chars_that_fit,
    fit,
    plan_context,
    request_chars,
    trim,
    trim_target,
)
from .contracts import CountsPrompts, FitsWindow, ReusesCache, Tokenizes
from .conversation import Message, Mode, ToolCall, ToolResult, render, tool_result
from .errors import PromptTooLong, ServerError
from .events import RequestRecord, WindowShare

if TYPE_CHECKING:
    from .loop import Loop

#: How long a window named by a too-long refusal overrides the probe (the probe caches its answer 30 s).
WINDOW_CAP_SECONDS = 30.0


@dataclass(frozen=True)
class Weighed:
    """One request as weighed: what it sends, the tools it offers, its plan and the target it was fit to.

    ``fitted`` holds the trims of its own fit only (a re-fit's are the re-fit's), as they are told.
    """

    fitted: Fit
    tools: list[dict[str, Any]] | None
    mode: Mode
    plan: ContextPlan
    target: int

    @property
    def messages(self) -> list[Message]:
        """The messages the request sends."""
        return self.fitted.messages

    def record(self, step: int, last: bool) -> RequestRecord:
        """The request's record, with what weighing it found (the server's counts come later)."""
        return RequestRecord(
            step=step,
            mode=self.mode,
            window=self.plan.window,
            limit=self.plan.limit,
            target=self.target,
            estimated_tokens=self.fitted.estimate,
            chars=request_chars(self.fitted.messages, self.mode, self.tools),
            trimmed=len(self.fitted.trims),
            last=last,
        )


class Weighing:
    """The loop's weighing: the estimate (the loop's ``counter`` and ``estimator``, read from it each
    time, so a benchmark may swap them), whether the server tokenizes, and the window a refusal named."""

    def __init__(self, loop: Loop) -> None:
        self.loop = loop
        #: Whether the server counts tokens exactly (llama.cpp's /tokenize); None until asked.
        self.tokenize_works: bool | None = None
        #: A smaller window a too-long refusal named, and until when it overrides the (cached) probe.
        self.window_cap: tuple[int, float] | None = None

    # -- the plan ----------------------------------------------------------------------------------

    def window(self, probed: int) -> int:
        """The window to plan: the server's (``probed``), or the smaller one a refusal named a moment ago."""
        if self.window_cap is not None:
            cap, until = self.window_cap
            if time.monotonic() < until:
                return min(probed, cap)
            self.window_cap = None
        return probed

    def plan(self, window: int) -> ContextPlan:
        """Share ``window`` out (see ``budget.plan_context``); the loop keeps it as its current plan."""
        loop = self.loop
        loop.window = window
        loop.plan = plan = plan_context(window, loop.estimator.ratio, loop.settings.head_start_share)
        return plan

    # -- counting ----------------------------------------------------------------------------------

    def count(self, messages: Sequence[Message], tools: list[dict[str, Any]] | None) -> int:
        """Estimated tokens of a request with these messages and tools."""
        return self.loop.counter.count(render(list(messages), self.loop.mode), tools)

    def share(
        self, messages: Sequence[Message], tools: list[dict[str, Any]] | None, plan: ContextPlan
    ) -> WindowShare:
        """How a request's estimate falls into the system prompt, the history, the results and the reply."""
        system_part = [m for m in messages if m.role == "system"]
        results = [m for m in messages if m.result is not None]
        history = [m for m in messages if m.role != "system" and m.result is None]
        return WindowShare(
            system=self.count(system_part, tools),
            history=self.count(history, None),
            results=self.count(results, None),
            reply=plan.reply,
        )

    async def server_count(
        self, rendered: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> int | None:
        """The server's exact count of a whole prompt, where it can count one (llama.cpp), which then
        teaches the estimate; None where it cannot, or did not this time."""
        loop = self.loop
        server = loop.server
        if not isinstance(server, CountsPrompts) or self.tokenize_works is False:
            return None
        try:
            exact = await server.count_prompt_tokens(
                wire.ChatRequest(messages=rendered, tools=tools, model=server.model)
            )
        except ServerError:
            return None
        if exact:
            loop.counter.observe(rendered, tools, exact)
        return exact

    async def count_first_request(
        self, messages: Sequence[Message], tools: list[dict[str, Any]] | None
    ) -> None:
        """Where the server can count a whole prompt (llama.cpp), anchor the very first estimate on it.

        Without an earlier count, a template's own markup and whether it renders the tool definitions at
        all (SmolLM2's does not: the estimate was 9x the real count) can only be guessed. Before it, where
        the model's name does not tell its tokenizer family, the server is asked what the model is.
        """
        await self.loop.learn_model_family()
        await self.server_count(render(list(messages), self.loop.mode), tools)

    async def learn_exact_counts(
        self, messages: Sequence[Message], tools: list[dict[str, Any]] | None
    ) -> None:
        """Ask the server for the exact tokens of each text not counted yet, where it can tokenize."""
        loop = self.loop
        server = loop.server
        if self.tokenize_works is False or not isinstance(server, Tokenizes):
            return
        for text in loop.counter.unknown_texts(render(list(messages), loop.mode), tools):
            try:
                count = await server.tokenize(text)
            except ServerError:
                return  # a passing fault: the estimate falls back to the ratio for these texts
            if count is None:
                self.tokenize_works = False
                return
            self.tokenize_works = True
            loop.counter.exact[text] = count

    # -- fitting -----------------------------------------------------------------------------------

    async def weigh(
        self,
        messages: Sequence[Message],
        tools: list[dict[str, Any]] | None,
        plan: ContextPlan,
        *,
        last: bool = False,
    ) -> Weighed:
        """Count a request's new texts, choose the target it is trimmed to, and fit it under the limit."""
        loop = self.loop

        def count(ms: Sequence[Message]) -> int:
            return self.count(ms, tools)

        await self.learn_exact_counts(messages, tools)
        if not loop.counter.anchored:
            await self.count_first_request(messages, tools)
        target = plan.target
        server = loop.server
        reuses = reuses_cache(server, loop.settings.extra)
        if count(messages) > plan.limit and not reuses:
            # A server that reads again everything below a trim is trimmed deeper, less often; one that
            # reuses its cache past a trim pays only for the note, so it keeps more of the results.
            target = trim_target(plan, count(_seen_stubbed(messages)))
        fitted = fit(messages, plan.limit, target, count, last=last)
        if fitted.trims:
            # The stubs and the note are new text: count them too, then make sure the exact total still fits.
            await self.learn_exact_counts(fitted.messages, tools)
            refit = fit(fitted.before_note, plan.limit, target, count, last=last, earlier=fitted)
            fitted = replace(refit, trims=fitted.trims + refit.trims, estimate_before=fitted.estimate_before)
        return Weighed(fitted, tools, loop.mode, plan, target)

    def refit_refused(self, weighed: Weighed, error: PromptTooLong, record: RequestRecord) -> Weighed:
        """A request the server refused as too long, fitted again to send once more (``record`` follows).

        The server counted more than we estimated: its count teaches the estimate, and the request is
        trimmed to the target. Where it names a smaller window than planned (restarted with a smaller
        one), that window is planned for, and kept to until the probe's answer has expired.
        """
        loop = self.loop
        plan, tools, earlier = weighed.plan, weighed.tools, weighed.fitted
        if error.prompt_tokens:
            loop.counter.observe(render(weighed.messages, loop.mode), tools, error.prompt_tokens)
        messages = earlier.before_note  # trimmed again below: one note says what both fits did
        if error.window and error.window < plan.window:
            self.window_cap = (error.window, time.monotonic() + WINDOW_CAP_SECONDS)
            plan = self.plan(error.window)
            record.window, record.limit, record.target = plan.window, plan.limit, plan.target
            if isinstance(loop.tools, FitsWindow) and loop.tools.fit_window(error.window):
                # Tools the smaller window goes without leave the request (and text mode's prompt).
                tools = loop.request_tools(record.last)
                messages = [loop.system_message(), *messages[1:]]

        def count(ms: Sequence[Message]) -> int:
            return self.count(ms, tools)

        fitted = fit(messages, -1, plan.target, count, last=record.last, earlier=earlier)
        record.trimmed += len(fitted.trims)
        record.estimated_tokens = fitted.estimate
        record.chars = request_chars(fitted.messages, loop.mode, tools)
        return Weighed(fitted, tools, loop.mode, plan, plan.target)

    async def room_for_result(
        self,
        call: ToolCall,
        step: int,
        shown: str,
        *,
        before: Sequence[Message],
        added: Sequence[Message],
        plan: ContextPlan,
    ) -> int:
        """Characters of a new result the next request can show the model.

        All of it when the request stays under the limit (nothing is trimmed), or when trimming older
        results makes room for it. Otherwise trimming would take it too, in the very request that
        brings it: then as much as fits beside everything else trimmed.
        """
        probe = tool_result(ToolResult(call, shown, step))
        await self.learn_exact_counts([probe], None)
        tools = self.loop.request_tools(False)
        if self.count([*before, *added, probe], tools) <= plan.limit:
            return len(shown)
        empty = tool_result(ToolResult(call, "", step))
        tokens = self.count([probe], None) - self.count([empty], None)
        rest = [_stubbed(m) for m in before] + [*added, empty]
        room = plan.target - self.count(rest, tools)
        return chars_that_fit(shown, tokens, room, len(shown))


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
