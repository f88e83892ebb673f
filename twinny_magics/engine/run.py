"""One reply, run: a short state machine of steps, each a query (plan, weigh, send, read) and its outcome.

``run`` → ``step`` → ``_query`` → ``_outcome``. A step plans the window, asks the model, and acts on what
came back: the closing answer, a nudge, a problem for the model to fix, or calls to run. A refused request
is handled by one layer for each kind of refusal, outermost first:

- tools refused (``_query``): the server will not take native tools and no tool has run yet: say the tools
  as text from now on, and try the step again;
- grammar refused (``_query_handling_grammar``): send no grammar in this session, and try the step again;
- too long, or tool history refused on the closing request (``_send``): fit the request again to what the
  server counted (or re-say it as text) and send it once more.

Two exceptions carry the control flow: :class:`_TryAgain` (the step again, from a fresh plan, its number
unchanged) and :class:`_Stop` (the reply ends with the server's error). Anything else a part raises
(a cancellation, a bug) leaves the reply as it is. Conversation state changes only at the end of a step,
so a cancelled step leaves nothing half-recorded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from twinny_magics import protocol
from twinny_magics.budget import ContextPlan
from twinny_magics.contracts import FitsWindow, GivesHeadStart, HearsRequest, ModelServer, Toolset
from twinny_magics.conversation import Message, ToolCall, ToolResult, assistant, tool_result, user
from twinny_magics.errors import PromptTooLong, ServerError, ToolHistoryRefused, ToolsRefused
from twinny_magics.events import CallFinished, CallStarted, Reply, RequestRecord, Step
from twinny_magics.modes import ModeChoice, describe
from twinny_magics.notes import (
    IMITATED_RESULT_NOTICE,
    NO_ANSWER,
    imitated_result_prompt,
    look_first_prompt,
    looks_like_a_call,
    no_answer_summary,
    notes_messages,
    nothing_found,
    with_closing_prompt,
)
from twinny_magics.protocol.results import Imitation, imitated_results
from twinny_magics.redact import mask_value
from twinny_magics.retrieval import HEAD_START_LEAD, HEAD_START_TOOL
from twinny_magics.unanswered import not_done, unfinished_edit
from twinny_magics.window_warning import small_window_warning

from .calls import Calls, edit_nudge, offers_the_nudged_edit
from .citations import check as check_cited
from .citations import correction as cited_correction
from .fenced_edits import fallback_notice, fenced_edit, requested_edit
from .grounding import correction as quote_correction
from .grounding import ungrounded
from .meter import Meter, Weighed, reuses_cache
from .offer import Offer
from .question import Question, call_as_prose
from .reading import Heard, Reader, refuses_grammar
from .supported import settle
from .telling import Teller

#: The key of the head start's pseudo-call in the events (a call of step 0).
HEAD_START_KEY = "0.start"
#: The pseudo-call a wrong citation's lines come back as (no tool of that name is offered: never run).
CHECK_TOOL = "check_citations"
log = logging.getLogger(__name__)


class _TryAgain(Exception):
    """The step is tried again from a fresh plan, its number unchanged (a refusal was handled)."""


class _Stop(Exception):
    """The reply ends with the server's error."""

    def __init__(self, error: ServerError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(frozen=True)
class _Answer:
    """What one step's query came back with: the conversation as sent (trimmed), the text, the calls
    (native, else read from the text) and why any call could not be read."""

    kept: list[Message]
    text: str
    calls: list[ToolCall]
    problems: list[str]


class Run:
    """One reply while it runs: its parts, and the state that lasts only for it."""

    def __init__(
        self, server: ModelServer, tools: Toolset, offer: Offer, meter: Meter, tell: Teller, *, question: str
    ) -> None:
        self.server = server
        self.tools = tools
        self.offer = offer
        self.meter = meter
        self.tell = tell
        self.reply: Reply = tell.reply
        self.settings = offer.settings
        self.calls = Calls(tools, meter, offer, self.settings, tell)
        self.reader = Reader(server, meter, offer, tell)
        #: The question, read once for everything the reply asks of it.
        self.question = Question.read(question)
        self.messages: list[Message] = []
        self.number = 0
        #: Steps in a row that achieved nothing; once too many, ``stuck`` makes the next request the last.
        self.unusable = 0
        self.stuck = False
        #: The look-first and edit-first nudges, each sent at most once; the small-window warning, said once.
        self.nudged = False
        self.edit_nudged = False
        self.finish_nudged = False
        #: Sent back once a reply: an imitated tool result, a wrong citation, a plan or a promised value.
        self.imitated = self.cited = self.acted = self.warned = False
        #: Whether the last reply's calls (or broken calls) came as native tool calls, not as text.
        self.native_reply = False
        #: Edits read from fences of changed code in this reply (at most two).
        self.fenced = 0
        #: An answer quoting a string no file has is sent back once.
        self.quoted = False

    async def run(self, history: Sequence[Message], notes: str = "") -> Reply:
        """Run the reply to the question (after ``history``; ``notes`` go after it as a tool result)."""
        self._tell_remembered_mode()
        if isinstance(self.tools, HearsRequest):
            self.tools.hear(self.question.text)
        # The window decides which tools are offered (the system prompt lists them) and the head start's size.
        start = await self._head_start(await self._plan())
        self.offer.head_start_given = bool(start)
        self.messages = [
            self.offer.system_message(),
            *history,
            user(self.question.text),
            *start,
            *notes_messages(notes),
        ]
        try:
            while self.number < self.settings.steps:
                if await self.step():
                    break
        except _Stop as stop:
            return self.tell.failed(stop.error)
        return self.tell.finished()

    async def step(self) -> bool:
        """One step: plan, query, act on the answer; whether the reply is over."""
        self.number += 1
        last = self.calls.settled or self.stuck or self.number == self.settings.steps
        while True:
            plan = await self._plan()  # outside the layers: a server that cannot say its window raises
            try:
                answer = await self._query(last, plan)
            except _TryAgain:
                continue
            self.messages = answer.kept
            return await self._outcome(answer, last, plan)

    # -- the query, one layer a kind of refusal ----------------------------------------------------------

    async def _query(self, last: bool, plan: ContextPlan) -> _Answer:
        """The query, with native tools refused before any tool ran taken as a reason to say them as text."""
        try:
            return await self._query_handling_grammar(last, plan)
        except ToolsRefused as error:
            if self.offer.mode != "native" or self.calls.ran:
                raise _Stop(error) from error
            # Refused before any tool ran: nothing is lost by saying the tools as text instead.
            if self.offer.mode_setting == "auto":
                self.offer.choose_mode(ModeChoice("text", "the server refused native tools"))
            self.offer.mode = "text"
            self.reply.requests[-1].retried = "tools refused"
            self.messages = [self.offer.system_message(), *self.messages[1:]]
            self.tell.notice("fallback", f"The server refused native tools ({error}); switched to text mode.")
            raise _TryAgain from error

    async def _query_handling_grammar(self, last: bool, plan: ContextPlan) -> _Answer:
        """The query, with a refused grammar taken as a reason to send none in this session."""
        try:
            return await self._request(last, plan)
        except ToolsRefused:
            raise
        except ServerError as error:
            offer = self.offer
            if (
                not refuses_grammar(error)
                or offer.grammar_refused
                or not offer.grammar_for(self.number, last)
            ):
                raise _Stop(error) from error
            offer.grammar_refused = True
            self.tell.notice(
                "fallback", f"The server refused the tool-call grammar ({error}); retrying without."
            )
            raise _TryAgain from error

    async def _request(self, last: bool, plan: ContextPlan) -> _Answer:
        """Weigh and send one request; what it came back with."""
        offer = self.offer
        outgoing = (
            with_closing_prompt(self.messages, self.settings.closing_prompt) if last else list(self.messages)
        )
        reuses = reuses_cache(self.server, self.settings.extra)
        weighed = await self.meter.weigh(
            outgoing, offer.request_tools(last), plan, offer.mode, last=last, reuses=reuses
        )
        record = weighed.record(self.number, last)
        self.reply.requests.append(record)
        self._trimmed(weighed)
        self.tell.request(record, weighed.fitted, weighed.plan, self.meter.share(weighed))
        weighed, heard = await self._send(weighed, record)
        # The trims stay in the conversation (trimming afresh each step would also throw away the server's
        # prompt cache for nothing); the closing prompt does not, but the last request ends the reply anyway.
        kept = self.messages if last else weighed.messages
        self.native_reply = offer.mode == "native" and bool(heard.calls or heard.problems)
        if self.native_reply:
            return _Answer(kept, heard.text, heard.calls, heard.problems)
        # Text mode, or a native reply that wrote its call as prose (some models do; servers pass it on).
        parsed = protocol.parse_reply(heard.text, self.tools.definitions())
        return _Answer(kept, heard.text, list(parsed.calls), list(parsed.problems))

    async def _send(self, weighed: Weighed, record: RequestRecord) -> tuple[Weighed, Heard]:
        """Send a weighed request; a refusal of it is handled once, by the layer for its kind."""
        try:
            return weighed, await self.reader.hear(weighed.rendered, weighed.tools, weighed.plan, record)
        except PromptTooLong as error:
            return await self._send_shorter(weighed, record, error)
        except ToolHistoryRefused as error:
            if not record.last:
                raise
            # The last request offers no tools, and some servers then refuse tool messages in its history.
            self.tell.notice(
                "fallback", f"The server refused tool history without tools ({error}); re-said it as text."
            )
            record.retried = "tool history"
            text = self.meter.rendering(weighed.messages, "text")
            return weighed, await self.reader.hear(text, None, weighed.plan, record)

    async def _send_shorter(
        self, weighed: Weighed, record: RequestRecord, error: PromptTooLong
    ) -> tuple[Weighed, Heard]:
        """A request the server refused as too long, fitted again to what it counted and sent once more.

        Where it names a smaller window than planned (restarted with a smaller one), tools that window
        goes without leave the request (and text mode's prompt).
        """
        plan = self.meter.learn_refusal(weighed, error, self.settings.head_start_share)
        tools, messages = weighed.tools, weighed.fitted.before_note  # one note says what both fits did
        if plan.window < weighed.plan.window:
            record.window, record.limit, record.target = plan.window, plan.limit, plan.target
            if isinstance(self.tools, FitsWindow) and self.tools.fit_window(plan.window):
                tools = self.offer.request_tools(record.last)
                messages = [self.offer.system_message(), *messages[1:]]
        weighed = self.meter.refit(weighed.fitted, messages, tools, plan, weighed.mode, last=record.last)
        record.trimmed += len(weighed.fitted.trims)
        record.estimated_tokens = weighed.fitted.estimate
        record.chars = weighed.chars
        record.retried = "too long"
        self._trimmed(weighed)
        self.tell.notice(
            "fallback", f"The server refused the request as too long ({error}); trimmed and retried."
        )
        return weighed, await self.reader.hear(weighed.rendered, weighed.tools, weighed.plan, record)

    def _trimmed(self, weighed: Weighed) -> None:
        """Tell a fit's trims; a call whose result went may be run again (the stub said so)."""
        said = self.tell.trimmed(self.number, weighed.fitted, self.calls.keys)
        self.calls.trimmed.update(said)

    # -- what a step's answer leads to ----------------------------------------------------------------

    async def _outcome(self, answer: _Answer, last: bool, plan: ContextPlan) -> bool:
        """Act on a step's answer; whether the reply is over."""
        reply, text, calls = self.reply, answer.text, answer.calls
        listing = protocol.workspace_example(self.tools.definitions()) if answer.problems else ""
        problems = [self.question.aim(p, listing) for p in answer.problems]
        if self.question.answers_in_a_call(answer.problems, text):  # an answer in a call's shape
            problems, text = [], call_as_prose(text)
        imitation = imitated_results(text, self.tools.definitions())
        if imitation is not None:
            # Only the loop writes results: an imitated one is kept neither as the step's text nor in the
            # conversation, and what it asks for (a tool and its arguments) is read as that call.
            text = self._without_imitation(imitation, calls)
            calls = calls or list(imitation.calls)
        record = Step(self.number, text)
        reply.steps.append(record)
        if last:
            self._close(text, calls, imitation)
            await self._check_citations(record, last=True)
            return True
        if self._learn_mode(calls, problems):
            self.messages = [self.offer.system_message(), *self.messages[1:]]  # the tools, listed as text
        if not calls:
            if imitation is not None and not problems:
                return self._imitated(imitation, text, record)
            if problems:
                record.problems = problems
                self.messages = [*self.messages, assistant(text), user("\n\n".join(problems))]
                self._count_unusable(True)
                return False
            if await self._fenced_edit(record, text, plan):
                return False
            if self._nudge_to_look():
                nudge = look_first_prompt(self.offer.mode, self.question.text)
                self.messages = [*self.messages, assistant(text), user(nudge)]
                record.problems = ["answered without looking: nudged to call a tool first"]
                return False
            if said := self._nudge_to_act(text) or self._nudge_to_edit() or self._nudge_to_finish():
                self.messages = [*self.messages, assistant(text), user(said[1])]
                record.problems = [said[0]]
                return False
            reply.text = text.strip()
            if await self._check_citations(record, last=False):
                return False
            if await self._check_quotes(record):
                return False
            self._check_support()
            reply.stopped = "answer"
            return True
        self.messages = [*self.messages, *await self.calls.run(record, text, calls, plan, self.messages)]
        if problems:
            record.problems = problems
            self.messages.append(user("\n\n".join(problems)))
        self._count_unusable(all(r.is_error for r in record.results))
        return False

    def _close(self, text: str, calls: list[ToolCall], imitation: Imitation | None = None) -> None:
        """The closing request's answer is the reply's. A call written there is never run: the model was
        told it had none left."""
        reply = self.reply
        parsed = protocol.parse_reply(text, self.tools.definitions())
        content = parsed.content.strip()
        if not content or (parsed.problems and looks_like_a_call(content)):
            # A call in place of an answer: say so and list what ran, never the call's JSON.
            reply.text = no_answer_summary(self._results())
            if imitation is not None:
                self.tell.notice("warning", IMITATED_RESULT_NOTICE)
            elif text.strip() or calls:
                self.tell.notice("warning", "The model wrote a tool call instead of its answer.")
        elif self.stuck and reply.head_start is None and all(r.is_error for r in self._results()):
            # Stopped going round in circles with nothing found (no head start, no call that worked): what
            # the model writes now rests on nothing (SmolLM2 wrote pages of unrelated prose), so say so.
            reply.text = nothing_found(self._results())
            self.tell.notice("warning", "The model's closing text rested on nothing found: not shown.")
        else:
            reply.text = content
            self._check_support()
        reply.stopped = "settled" if self.calls.settled else "stuck" if self.stuck else "steps"

    def _check_support(self) -> None:
        """On a model too small to trust its prose (the embedded SmolLM2), the answer as what it read
        supports it (see :func:`.supported.settle`)."""
        if self.offer.checks_answers and self.question.about_workspace:
            read = [m.result for m in self.messages if m.result is not None]
            settled = settle(self.reply.text, self.question.text, read, self.reply.head_start)
            self.reply.text = settled.text
            if settled.notice:
                self.tell.notice("warning", settled.notice)

    def _results(self) -> list[ToolResult]:
        """Every result of this reply's calls, in order."""
        return [r for s in self.reply.steps for r in s.results]

    async def _check_citations(self, record: Step, *, last: bool) -> bool:
        """Check the answer's ``file:line`` citations against the files (kept on the reply); once a reply,
        when one does not hold and a step is left, the answer goes back with what the lines really say
        (as a result: file text is data). Whether it went back."""
        reply = self.reply
        if reply.text.startswith(NO_ANSWER):
            return False
        reply.citations = await check_cited(reply.text, self.question.text, self.tools)
        said = cited_correction(reply.citations)
        if not said or last or self.cited:
            return False
        self.cited = True
        call = ToolCall(
            CHECK_TOOL, {"cited": [f"{c.path}:{c.line}" for c in reply.citations]}, id="call_check"
        )
        self.messages = [
            *self.messages,
            assistant(reply.text, (call,)),
            tool_result(ToolResult(call, said, self.number)),
        ]
        record.problems = ["a cited line does not hold what the answer says: told what the lines say"]
        reply.text, reply.citations = "", []
        return True

    async def _check_quotes(self, record: Step) -> bool:
        """An answer that quotes a string as from the code which no file has goes back once to look it
        up (``grounding``). Whether it went back."""
        reply, question = self.reply, self.question
        if (
            self.quoted
            or not question.about_workspace
            or question.asks_change
            or reply.text.startswith(NO_ANSWER)
        ):
            return False
        missing = await ungrounded(reply.text, question.text, self.messages, self.tools)
        if not missing:
            return False
        self.quoted = True
        told = quote_correction(missing, self.offer.mode)
        self.messages = [*self.messages, assistant(reply.text), user(told)]
        record.problems = ["quoted a string that no file has: told to look it up"]
        reply.text, reply.citations = "", []
        return True

    def _without_imitation(self, imitation: Imitation, calls: list[ToolCall]) -> str:
        """A reply's text without the results it imitated; in text mode with the call it is read as,
        written the protocol's way, so the conversation shows the model a call where it wrote a result."""
        text = imitation.content
        asked = calls or list(imitation.calls)
        if (
            self.offer.mode == "text"
            and asked
            and not protocol.parse_reply(text, self.tools.definitions()).calls
        ):
            text = "\n\n".join(part for part in (text, protocol.format_call(asked[0])) if part)
        return text

    def _imitated(self, imitation: Imitation, text: str, record: Step) -> bool:
        """A reply that imitated a tool result and asks for no call: sent back once to call or answer; the
        second time, what the model wrote outside the imitation is the answer (with nothing else, none)."""
        if not self.imitated:
            self.imitated = True
            wrapper = imitation.wrappers[0] if imitation.wrappers else "<tool_result>"
            nudge = imitated_result_prompt(self.offer.mode, self.question.text, wrapper)
            self.messages = [*self.messages, assistant(text or "(a made-up tool result)"), user(nudge)]
            record.problems = ["imitated a tool result: asked once more to call a tool or answer"]
            return False
        self.tell.notice("warning", IMITATED_RESULT_NOTICE)
        if text and not looks_like_a_call(text):
            self.reply.text = text
        else:
            self.reply.text = no_answer_summary(self._results())
        self.reply.stopped = "answer"
        return True

    def _learn_mode(self, calls: list[ToolCall], problems: list[str]) -> bool:
        """``auto``, undecided: what this step shows about the model; True when it switched to text."""
        choice = self.offer.learn(
            self.number,
            native_reply=self.native_reply,
            called=bool(calls),
            wrote_a_call=bool(calls or problems),
            needed_a_tool=not calls and not problems and self.question.about_workspace,
        )
        if choice is None:
            return False
        after = "" if choice.mode == "native" else " (the tools are listed in the prompt from now on)"
        self.tell.notice("mode", f"Mode auto chose {describe(choice)}: {choice.reason}{after}.")
        return choice.mode == "text"

    def _nudge_to_look(self) -> bool:
        """Whether an answer written before any tool ran goes back once with a nudge to look first."""
        if not self.settings.look_first or self.nudged or self.calls.ran or self.number != 1:
            return False
        if not self.question.about_workspace:
            return False
        self.nudged = True
        return True

    def _nudge_to_act(self, text: str) -> tuple[str, str] | None:
        """An answer to a workspace question that only announces a plan ("I'll read the notebook…", before
        any tool ran), shows code and says what it would return with no value, or gives no number to a
        how-many question: sent back once (the problem and the nudge; `unanswered.not_done`)."""
        if self.acted or not self.question.about_workspace:
            return None
        said = not_done(self.question.text, text, ran=bool(self.calls.ran), mode=self.offer.mode)
        self.acted = said is not None
        return said

    async def _fenced_edit(self, record: Step, text: str, plan: ContextPlan) -> bool:
        """A reply to a request for a change that printed the changed code in a fence instead of calling
        the edit tool: the fence read as the edit it proposes and run as that call, through the same tool
        and approval (``fenced_edits``); nudged with the ready call (to make it, or to finish a rename
        half made) and still describing, the edit the request pins down (`requested_edit`). Whether it ran."""
        if self.fenced >= 2 or not self.settings.edit_first:
            return False
        if not self.question.asks_change or not offers_the_nudged_edit(self.tools):
            return False
        edited = self.calls.edited
        call = None if edited else await fenced_edit(text, self.question.text, self.messages, self.tools)
        if call is None and (self.finish_nudged if edited else self.edit_nudged):  # still described: the
            call = await requested_edit(self.question.text, self.tools)  # request's (its next use left)
        if call is None:
            return False
        self.fenced += 1
        self.tell.notice("fallback", fallback_notice(call))
        self.messages = [*self.messages, *await self.calls.run(record, text, [call], plan, self.messages)]
        self._count_unusable(all(r.is_error for r in record.results))
        return True

    def _nudge_to_edit(self) -> tuple[str, str] | None:
        """An answer to a request for a change, with no edit made or proposed in this reply: sent back once
        to make it (small models describe the change instead of making it)."""
        if not self.settings.edit_first or self.edit_nudged or self.calls.edited:
            return None
        if not self.question.asks_change or not offers_the_nudged_edit(self.tools):
            return None
        self.edit_nudged = True
        problem = "answered a request for a change without making it: nudged to edit"
        return problem, edit_nudge(self.tools, self.offer.mode, self.question.text)

    def _nudge_to_finish(self) -> tuple[str, str] | None:
        """An answer to a request for changes that the edits left part of (a rename's old name still used,
        a setting the request names untouched): sent back once to finish (`unanswered.unfinished_edit`)."""
        if self.finish_nudged or not self.calls.edited or not self.question.asks_change:
            return None
        said = unfinished_edit(self.question.text, self.calls.unfinished, self.calls.edits)
        self.finish_nudged = said is not None
        return said

    def _count_unusable(self, unusable: bool) -> None:
        """Count steps that achieved nothing; enough in a row and the next request is the last."""
        self.unusable = self.unusable + 1 if unusable else 0
        limit = self.settings.max_unusable_steps
        if limit and self.unusable >= limit and not self.stuck:
            self.stuck = True
            self.tell.notice(
                "warning",
                f"{self.unusable} steps in a row achieved nothing (repeated, failed or unreadable calls); "
                "asking the model to answer with what it has.",
            )

    # -- before the first step -------------------------------------------------------------------------

    def _tell_remembered_mode(self) -> None:
        """Say a mode ``auto`` took from what it learned earlier in this process, once."""
        choice = self.offer.untold
        if choice is None:
            return
        self.offer.untold = None
        self.tell.notice(
            "mode",
            f"{describe(choice).capitalize()}, as learned earlier in this process for this server and "
            f"model: {choice.reason}.",
        )

    async def _plan(self) -> ContextPlan:
        """Ask the window (the server caches its answer) and plan it; warn once when it is small."""
        plan = await self.meter.ask_window(self.settings.head_start_share)
        window = self.meter.window
        assert window is not None  # just planned
        warning = small_window_warning(window, self.server.kind)
        left_out = self.tools.fit_window(window) if isinstance(self.tools, FitsWindow) else []
        if (warning or left_out) and not self.warned:
            self.warned = True
            said = warning or ""
            if left_out:
                said += (
                    f" At this window {', '.join(left_out)} are not offered (their definitions would take "
                )
                said += "room in every request)."
            self.tell.notice("warning", said.strip())
        return plan

    async def _head_start(self, plan: ContextPlan) -> list[Message]:
        """The head start's messages (none when it is off, not offered, or the question is small talk).

        A pseudo-call and its result, like the notes: to the model, data a tool returned, after the
        question; shown as a call of its own, and trimmed first (step 0) when the window fills.
        """
        settings, tools = self.settings, self.tools
        if not (settings.workspace_map or settings.evidence) or not isinstance(tools, GivesHeadStart):
            return []
        if not self.question.about_workspace:
            return []
        try:
            text = await asyncio.to_thread(
                tools.head_start,
                self.question.text,
                plan.head_start_chars,
                map=settings.workspace_map,
                evidence=settings.evidence,
            )
        except Exception as exc:  # a bug of ours must not cost the reply: it runs without a head start
            log.warning("the head start failed", exc_info=True)
            self.tell.notice(
                "warning", f"The workspace map and search could not be built ({type(exc).__name__})."
            )
            return []
        if not isinstance(text, str) or not text:
            return []
        call = ToolCall(HEAD_START_TOOL, {"words": " ".join(self.question.terms)}, id="call_head_start")
        result = ToolResult(call, mask_value(text, self.tell.secret), 0)
        self.calls.keys[call.id or HEAD_START_KEY] = HEAD_START_KEY
        self.tell.emit(CallStarted(0, HEAD_START_KEY, call))
        self.tell.emit(CallFinished(0, HEAD_START_KEY, result))
        self.reply.head_start = result
        return [assistant(HEAD_START_LEAD, (call,)), tool_result(result)]
