"""Reading one streamed request: the reply's text as it comes, its native calls, its usage, its finish.

Under the ``lazy`` grammar a reply streams free until it writes a call opener; that stream is then closed
and a second request continues the reply from the opener, held to the call grammar (llama.cpp continues
a trailing assistant message). Both are read here, as one reply: the text, shown as it streams except
what may begin a call marker; the calls; and the counts, which teach the meter.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from twinny_magics import contracts as wire
from twinny_magics import protocol
from twinny_magics.budget import ContextPlan
from twinny_magics.contracts import Closes, ModelServer
from twinny_magics.conversation import ToolCall
from twinny_magics.errors import PromptTooLong, ServerError
from twinny_magics.events import RequestRecord, TextDelta
from twinny_magics.protocol.grammar import call_opener, may_open_call, tool_call_rest_grammar

from .meter import Meter, Tools
from .offer import Offer
from .rendering import Rendered
from .telling import Teller

#: A reply is read until it is clearly past the tokens asked for (``max_tokens``), whatever the server
#: does: at most this many characters a token (text runs 3-5; long whitespace or symbol runs more)...
REPLY_CHARS_PER_TOKEN = 8
#: ...plus this many. A server that honours ``max_tokens`` stops well before; one that ignores it is cut.
REPLY_MARGIN_CHARS = 2000


def reply_char_cap(reply_tokens: int) -> int:
    """The characters of reply text read for a reply of at most ``reply_tokens`` tokens."""
    return max(0, reply_tokens) * REPLY_CHARS_PER_TOKEN + REPLY_MARGIN_CHARS


@dataclass(frozen=True)
class Heard:
    """What one request's reply said: its text, its native calls, and why any of those could not be read."""

    text: str
    calls: list[ToolCall]
    problems: list[str]


@dataclass
class Reading:
    """A reply's text as it streams, over one request or two (a call finished under the grammar)."""

    #: Characters of reply text still to be read (the cap is over both requests together).
    room: int
    #: Watch for a call opener a grammar can finish (``lazy``).
    watch: bool = False
    detector: protocol.StreamDetector = field(default_factory=protocol.StreamDetector)
    parts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    cut: bool = False
    #: The opener the reply was cut after, for the grammar to finish the call from.
    opener: str | None = None
    #: A continuation's usage (its count includes the prefill, so it is not the request's own).
    usage: wire.Usage | None = None

    @property
    def text(self) -> str:
        """The reply so far."""
        if len(self.parts) > 1:
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def opened(self) -> bool:
        """Whether the call marker the reply wrote is a whole opener a grammar can finish; if so, the
        reply is kept up to and including it (what came after is the model's unconstrained try)."""
        text, at = self.text, self.detector.shown
        opener = call_opener(text[at:])
        if opener is None:
            self.watch = may_open_call(text[at:])  # another dialect is read as it comes
            return False
        self.opener = opener
        kept = text[: at + len(opener)]
        self.room += len(text) - len(kept)
        self.parts = [kept]
        return True


class Reader:
    """Sends a request and reads its reply, for one reply's run."""

    def __init__(self, server: ModelServer, meter: Meter, offer: Offer, tell: Teller) -> None:
        self.server = server
        self.meter = meter
        self.offer = offer
        self.tell = tell

    async def hear(self, rendered: Rendered, tools: Tools, plan: ContextPlan, record: RequestRecord) -> Heard:
        """Send one request and read its reply (continued under the call grammar where ``lazy`` says)."""
        request = self.offer.request(rendered, tools, plan.reply, step=record.step, last=record.last)
        # Read until the reply's text is clearly past what was asked for, whatever the server does with
        # max_tokens: one that ignores it would otherwise stream for ever. (Native call arguments, which
        # are not shown as they stream, are bounded by the adapters' byte limit, wire.stream_byte_limit.)
        watch = tools is None and self.offer.lazy_for(record.last)
        reading = Reading(room=reply_char_cap(plan.reply), watch=watch)
        await self._read(request, record, reading, counted=(rendered, tools))
        if reading.opener is not None:
            await self._continue_call(request, record, plan, reading, counted=(rendered, tools))
        if reading.cut:
            # As a server's own finish_reason "length": the reply so far is kept and read as it is.
            record.finish_reason = "length"
            self.tell.notice(
                "warning",
                f"The server kept writing past the reply limit of {plan.reply:,} tokens; the reply was cut.",
            )
        tail = reading.detector.flush()  # what was held back in case it began a call marker, and did not
        if tail:
            self.tell.emit(TextDelta(record.step, tail))
        return Heard(reading.text, reading.calls, reading.problems)

    async def _read(
        self,
        request: wire.ChatRequest,
        record: RequestRecord,
        reading: Reading,
        *,
        counted: tuple[Rendered, Tools] | None,
    ) -> None:
        """Stream one request into ``reading``; stop early at the reply cap or, watched, a call opener.

        ``counted``: the messages and tools the server's count is of (None: it counts a prefill as well,
        so its usage is kept in ``reading`` instead of teaching the estimate).
        """
        stream = self.server.stream(request)
        sent = time.monotonic()
        try:
            async for chunk in stream:
                if record.first_token_seconds is None and not isinstance(chunk, wire.Usage | wire.Finish):
                    record.first_token_seconds = round(time.monotonic() - sent, 3)
                if isinstance(chunk, wire.TextChunk):
                    if self._text(chunk.text, record, reading):
                        break
                elif counted is None:
                    if isinstance(chunk, wire.Usage):
                        reading.usage = chunk
                    elif isinstance(chunk, wire.Finish):
                        record.finish_reason = chunk.reason
                else:
                    self._event(chunk, record, reading, *counted)
        finally:
            # Closed now, not when collected: a cut reply (or a stopped one, or one whose call a grammar
            # is to finish) lets go of the connection.
            if isinstance(stream, Closes):
                await stream.aclose()

    def _text(self, text: str, record: RequestRecord, reading: Reading) -> bool:
        """Take in a piece of reply text; whether to stop reading (the cap, or an opener to finish)."""
        if len(text) > reading.room:
            text, reading.cut = text[: reading.room], True
        reading.room -= len(text)
        reading.parts.append(text)
        visible = reading.detector.feed(text)
        if visible:
            self.tell.emit(TextDelta(record.step, visible))
        return reading.cut or (reading.watch and reading.detector.call_started and reading.opened())

    def _event(
        self, chunk: wire.ChatEvent, record: RequestRecord, reading: Reading, rendered: Rendered, tools: Tools
    ) -> None:
        """Take in one streamed event that is not reply text: the calls, the usage, the finish."""
        if isinstance(chunk, wire.ToolCalls):
            reading.calls.extend(chunk.readable)
            reading.problems.extend(
                f"Your call of {call.name or 'a tool'} could not be read: {error}. "
                "Call it again with the arguments as one JSON object."
                for call, error in zip(chunk.calls, chunk.errors, strict=True)
                if error is not None
            )
        elif isinstance(chunk, wire.Usage):
            record.prompt_tokens = chunk.prompt_tokens
            record.completion_tokens = chunk.completion_tokens
            record.cached_tokens = chunk.cached_tokens
            if chunk.prompt_tokens:
                self.meter.observe(rendered, tools, chunk.prompt_tokens)
            self.tell.usage(record, chunk.prompt_tokens, chunk.cached_tokens, self.meter.estimator.ratio)
        elif isinstance(chunk, wire.Finish):
            record.finish_reason = chunk.reason

    async def _continue_call(
        self,
        request: wire.ChatRequest,
        record: RequestRecord,
        plan: ContextPlan,
        reading: Reading,
        *,
        counted: tuple[Rendered, Tools],
    ) -> None:
        """Finish the call a reply opened: continue it from the opener under the call grammar.

        The reply so far goes back as a trailing assistant message, which llama.cpp continues (an
        assistant prefill) rather than answering, from its prompt cache. The first stream was closed
        before its usage came, and the second one's count includes the prefill, so the request's own
        count is asked of the server (as for a first request) and only that teaches the estimate.
        """
        assert reading.opener is not None
        prefill = reading.text
        spent = math.ceil(len(prefill) / self.meter.estimator.ratio)  # the reply's tokens so far, about
        rest = tool_call_rest_grammar(self.offer.tools.definitions(), reading.opener)
        extra: dict[str, Any] = {**request.extra, "grammar": rest}
        follow = replace(
            request,
            messages=[*request.messages, {"role": "assistant", "content": prefill}],
            max_tokens=max(1, plan.reply - spent),
            extra=extra,
        )
        record.continued = True
        reading.watch = False
        try:
            await self._read(follow, record, reading, counted=None)
        except PromptTooLong as error:
            # Its count is of the prompt and the prefill together, so it teaches nothing; the opener alone
            # goes back to the model as a call that could not be read.
            self.tell.notice("warning", f"The server refused to finish the call ({error}).")
        except ServerError as error:
            if not refuses_grammar(error) or self.offer.grammar_refused:
                raise
            self.offer.grammar_refused = True
            self.tell.notice(
                "fallback", f"The server refused the tool-call grammar ({error}); continuing without."
            )
            follow = replace(follow, extra={k: v for k, v in extra.items() if k != "grammar"})
            await self._read(follow, record, reading, counted=None)
        await self._count_continued(record, reading, counted)

    async def _count_continued(
        self, record: RequestRecord, reading: Reading, counted: tuple[Rendered, Tools]
    ) -> None:
        """A continued request's own prompt count, asked of the server; the reply's tokens from both."""
        prompt = await self.meter.server_count(*counted)  # which teaches the estimate
        usage = reading.usage
        record.prompt_tokens = prompt
        if usage is not None and usage.prompt_tokens and usage.completion_tokens is not None and prompt:
            # The prefill was the model's own text: the reply's tokens are its and the continuation's.
            record.completion_tokens = usage.prompt_tokens - prompt + usage.completion_tokens
        self.tell.usage(record, prompt, None, self.meter.estimator.ratio)


def refuses_grammar(error: ServerError) -> bool:
    """Whether the server refused a request for the grammar it carried."""
    return error.status == 400 and "grammar" in f"{error} {error.body or ''}".lower()
