"""Running a step's calls: each once, its result cut to what the next request can show, repeats refused.

What a call did beyond its text is asked of the call's outcome (``ToolEffects``), else of its toolset
(``DeclaresEffects``: ``contracts.effects_of``), and the edit nudge's tool is the one the nudge itself
calls: the engine never names a tool. One :class:`Calls` lasts a
reply: it keeps the calls made (a call repeated within the reply is answered with what happened the first
time instead of running again, until something may have changed the workspace), their event keys, which
results were trimmed, and what the calls settled.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, replace

from twinny_magics import protocol
from twinny_magics.budget import ContextPlan, cut_result
from twinny_magics.contracts import Notifies, ProposesEdits, ToolOutcome, Toolset, Unfinished, effects_of
from twinny_magics.conversation import Message, ToolCall, ToolResult, assistant, tool_result
from twinny_magics.events import CallFinished, CallStarted, Step
from twinny_magics.notes import edit_first_prompt

from .meter import Meter
from .offer import Offer
from .settings import LoopSettings
from .telling import Teller


@dataclass
class Calls:
    """The calls of one reply, and what they did."""

    tools: Toolset
    meter: Meter
    offer: Offer
    settings: LoopSettings
    tell: Teller
    #: The event key of each call (``step.n``), by call id.
    keys: dict[str, str] = field(default_factory=dict)
    #: Calls already made, by name and arguments: the earlier result's key and the result (whether it
    #: failed, and how). Cleared when something may have changed the workspace.
    made: dict[tuple[str, str], tuple[str, ToolResult]] = field(default_factory=dict)
    #: Keys of calls whose results were trimmed (the stub told the model to run them again).
    trimmed: set[str] = field(default_factory=set)
    #: Whether any tool ran; whether a call settled the reply (an edit waiting for review, a kernel run
    #: past its time limit: the next request is the last).
    ran: bool = False
    settled: bool = False
    #: What the latest edit said it left undone ('' for nothing): a renamed name still used (`Unfinished`).
    unfinished: str = ""
    #: The arguments (as JSON) of each edit made or proposed without an error, in order.
    edits: list[str] = field(default_factory=list)

    @property
    def edited(self) -> bool:
        """Whether an edit was made or proposed without an error."""
        return bool(self.edits)

    async def run(
        self, record: Step, text: str, parsed: list[ToolCall], plan: ContextPlan, before: list[Message]
    ) -> list[Message]:
        """Run a step's calls; return the messages the step adds (its assistant turn and the results)."""
        native = self.offer.mode == "native"
        # Native replies may fan out; text mode runs one call per reply, as its prompt asks.
        limit = self.settings.max_calls if native else 1
        step = record.number
        calls = [c if c.id else replace(c, id=f"call_{step}_{n}") for n, c in enumerate(parsed)]
        if not native and len(calls) > 1:
            # A model that wrote several calls sends the same message again after its first ran: the first
            # call not made yet runs, so the message's calls run one a step (the repeat would only be
            # refused, and the rest never run).
            fresh = next((n for n, c in enumerate(calls) if self._repeat_of(c) is None), 0)
            calls = [calls[fresh], *calls[:fresh], *calls[fresh + 1 :]]
        run_now, dropped = calls[:limit], calls[limit:]
        said = (*run_now, *dropped) if native else tuple(run_now)
        added: list[Message] = [assistant(text, said)]
        for n, call in enumerate(run_now):
            key = f"{step}.{n}"
            self.keys[call.id or key] = key
            self.tell.emit(CallStarted(step, key, call))
            repeat = self._repeat_of(call)
            if repeat is not None:
                result = ToolResult(call, repeat, step, is_error=True)
                record.calls.append(call)
                record.results.append(result)
                added.append(tool_result(result))
                self.tell.emit(CallFinished(step, key, result, None))
                continue
            output, outcome = await self._run_one(call, only_first=bool(dropped) and not native)
            result = await self._shown(call, step, output, outcome, plan=plan, before=before, added=added)
            record.calls.append(call)
            record.results.append(result)
            added.append(tool_result(result))
            self._settle(call, key, result, outcome)
        if dropped and native:
            note = f"Not run: at most {limit} calls run per message. Call it again if you still need it."
            added.extend(tool_result(ToolResult(call, note, step, is_error=True)) for call in dropped)
            self.tell.notice(
                "warning", f"The model asked for {len(calls)} calls at once; {len(dropped)} were not run."
            )
        return added

    async def _run_one(self, call: ToolCall, *, only_first: bool) -> tuple[str, ToolOutcome]:
        """Run ``call``; its output, with a word on the calls not run where the message made several."""
        outcome = await self.tools.run(call)
        self.ran = True
        output = outcome.text
        if only_first:
            output += "\n(Only the first call in your message ran: write one call per message.)"
        return output, outcome

    async def _shown(
        self,
        call: ToolCall,
        step: int,
        output: str,
        outcome: ToolOutcome,
        *,
        plan: ContextPlan,
        before: list[Message],
        added: list[Message],
    ) -> ToolResult:
        """The result as the model sees it: cut to the plan's share, and to the room the next request has."""
        shown, left_out = cut_result(output, plan.result_chars)
        room = await self.meter.room_for_result(
            call,
            step,
            shown,
            before=before,
            added=added,
            plan=plan,
            tools=self.offer.request_tools(False),
            mode=self.offer.mode,
        )
        if room < len(shown):
            shown, left_out = cut_result(output, room)
        return ToolResult(
            call,
            shown,
            step,
            original=output if left_out else None,
            cut_chars=left_out,
            is_error=outcome.is_error,
        )

    def _settle(self, call: ToolCall, key: str, result: ToolResult, outcome: ToolOutcome) -> None:
        """Keep what a call that ran did, and tell it."""
        effects = effects_of(self.tools, call, outcome)
        self._remember(call, key, result, changed=effects.changes_workspace)
        if effects.edits and not outcome.is_error:
            self.unfinished = outcome.unfinished if isinstance(outcome, Unfinished) else ""
            self.edits.append(call.arguments_json())
        self.tell.emit(CallFinished(result.step, key, result, outcome.pending))
        if outcome.pending is not None:
            # An edit waiting for review settles the reply: the next request is the last.
            self.tell.reply.pending.append(outcome.pending)
            self.settled = True
        if effects.settles:  # a kernel run past its time limit
            self.settled = True
        warning = outcome.notice if isinstance(outcome, Notifies) else ""  # e.g. kernel code left running
        if warning:
            self.tell.notice("warning", warning)

    def _repeat_of(self, call: ToolCall) -> str | None:
        """What to tell the model instead of running a call it already made in this reply, or None."""
        made = self.made.get(_signature(call))
        if made is None or not self.settings.repeat_guard:
            return None
        key, earlier = made
        if key in self.trimmed:
            return None  # its result was trimmed away, and the stub told the model to run it again
        said = f"You already called {call.name} with these arguments in step {earlier.step}"
        if earlier.is_error:
            why = earlier.output.strip().splitlines()[0][:300] if earlier.output.strip() else "it failed"
            return (
                f"Not run again. {said}, and it failed: {why}\nThe same call fails the same way. Change the "
                "arguments, use another tool (list_dir or find_files show what exists), or answer with "
                "what you know."
            )
        if self.unfinished and call.arguments_json() in self.edits:
            # A made edit called again (a small model repeats its last call): what it left, with its call.
            return f"Not run again. {said}, and that edit is made. What it left: {self.unfinished}"
        return (
            f"Not run again. {said}; its result is above and has not changed. Use it: read another part, "
            "search for something else, or answer the user."
        )

    def _remember(self, call: ToolCall, key: str, result: ToolResult, *, changed: bool) -> None:
        if changed and not result.is_error:
            # Something may have changed: an earlier read or listing may now give another answer.
            self.made.clear()
        self.made[_signature(call)] = (key, result)


def edit_nudge(tools: Toolset, mode: str, request: str) -> str:
    """The edit nudge, with the ready call of the edit the request pins down when the toolset can say it
    (the workspace reads the file the request names; see ``tools/proposal.py``)."""
    proposed = tools.proposed_edit(request) if isinstance(tools, ProposesEdits) else None
    return edit_first_prompt(mode, proposed)


def offers_the_nudged_edit(tools: Toolset) -> bool:
    """Whether the tool the edit nudge asks the model to call is on offer (a nudge toward a tool that is
    not would send the model to a call that fails)."""
    offered = {d.get("function", {}).get("name") for d in tools.definitions()}
    return _nudged_tool() in offered


@functools.cache
def _nudged_tool() -> str:
    """The tool the edit nudge names, as the nudge itself writes the call (the engine names no tool)."""
    return protocol.parse_reply(edit_first_prompt("text")).calls[0].name


def _signature(call: ToolCall) -> tuple[str, str]:
    return call.name, json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
