"""The tool loop of one session: a thin facade over the reply engine (:mod:`twinny_magics.engine`).

A :class:`Loop` holds a session's parts — the server, the tools, the :class:`~twinny_magics.engine.meter.
Meter` (the estimate, the window and the plan) and the :class:`~twinny_magics.engine.offer.Offer` (the
mode, the grammar, the tools and the prompt a request carries) — and runs each reply as an
:class:`~twinny_magics.engine.run.Run` of them. It knows nothing of how a reply is shown: the run emits
:mod:`~twinny_magics.events` to a callback. It takes a model server and a toolset through the protocols
of :mod:`~twinny_magics.contracts`, so a test hands it a scripted model and a real workspace, and
importing it loads no HTTP client.

The names other modules import from here (the settings, the server and tool protocols, the reply cap)
are re-exported from where they now live.
"""

from __future__ import annotations

from collections.abc import Sequence

from .budget import ContextPlan
from .contracts import Addressed, EventSink, ModelServer, ToolOutcome, Toolset, WarnsOfKey
from .conversation import Message, Mode
from .engine.meter import Counter, Meter
from .engine.offer import Offer
from .engine.reading import REPLY_CHARS_PER_TOKEN, REPLY_MARGIN_CHARS, reply_char_cap
from .engine.run import HEAD_START_KEY, Run
from .engine.settings import (
    DEFAULT_STEPS,
    DEFAULT_SYSTEM_PROMPT,
    MAX_CALLS_PER_REPLY,
    GrammarSetting,
    LoopSettings,
    ModeSetting,
)
from .engine.telling import Teller
from .estimate import TokenEstimator
from .events import Reply
from .modes import LEARNED_MODES, ModeChoice, ModeLearner, ModeMemory

__all__ = [
    "DEFAULT_STEPS",
    "DEFAULT_SYSTEM_PROMPT",
    "HEAD_START_KEY",
    "MAX_CALLS_PER_REPLY",
    "REPLY_CHARS_PER_TOKEN",
    "REPLY_MARGIN_CHARS",
    "EventSink",
    "GrammarSetting",
    "Loop",
    "LoopSettings",
    "ModeSetting",
    "ModelServer",
    "ToolOutcome",
    "Toolset",
    "reply_char_cap",
]


class Loop:
    """Runs replies for one session: the server, the tools, the meter and the offer live here.

    ``meter``: the session's meter, where a benchmark gives its own counter or fit policy (see
    :class:`~twinny_magics.engine.meter.Meter`); by default one with ``estimator``.
    """

    def __init__(
        self,
        server: ModelServer,
        tools: Toolset,
        *,
        estimator: TokenEstimator | None = None,
        mode: ModeSetting = "auto",
        settings: LoopSettings | None = None,
        memory: ModeMemory | None = None,
        meter: Meter | None = None,
    ) -> None:
        if meter is not None and estimator is not None and meter.estimator is not estimator:
            raise ValueError("Give the estimator to the meter: a loop with a meter uses the meter's.")
        self.server = server
        self.tools = tools
        self.meter = meter if meter is not None else Meter(server, estimator=estimator)
        self.offer = Offer(
            server,
            tools,
            mode=mode,
            settings=settings or LoopSettings(),
            memory=memory if memory is not None else LEARNED_MODES,
        )
        #: Set once the session has been warned that its API key goes over plain http.
        self.key_warned = False

    async def reply(
        self,
        question: str,
        history: Sequence[Message] = (),
        emit: EventSink = lambda event: None,
        reply: Reply | None = None,
        notes: str = "",
    ) -> Reply:
        """Run one reply to ``question`` (after earlier turns in ``history``), recorded in ``reply``.

        ``notes`` (what ran in earlier replies) go after the question as a tool result, never inside it.
        """
        tell = Teller(reply or Reply(question=question), emit, self.secret)
        self._warn_plain_key(tell)
        return await Run(self.server, self.tools, self.offer, self.meter, tell, question=question).run(
            history, notes
        )

    def _warn_plain_key(self, tell: Teller) -> None:
        """Once a session: say so when the API key goes over plain http to another machine (never blocks)."""
        if self.key_warned:
            return
        warning = self.server.key_warning if isinstance(self.server, WarnsOfKey) else None
        if warning:
            self.key_warned = True
            tell.notice("warning", warning)

    @property
    def secret(self) -> str | None:
        """The server's API key, where it has one: masked in every notice and error the loop keeps."""
        info = self.server.info if isinstance(self.server, Addressed) else None
        return info.api_key or None if info is not None else None

    # -- the settings and the offer ----------------------------------------------------------------------

    @property
    def settings(self) -> LoopSettings:
        """How the next replies run (replaced whole between replies)."""
        return self.offer.settings

    @settings.setter
    def settings(self, settings: LoopSettings) -> None:
        self.offer.settings = settings

    def set_mode(self, mode: ModeSetting) -> None:
        """Offer tools natively, as text, or as learned (``auto``); the same setting again changes nothing."""
        self.offer.set_mode(mode)

    def system_message(self) -> Message:
        """The system prompt for the current mode (text mode lists the tools in it)."""
        return self.offer.system_message()

    @property
    def mode(self) -> Mode:
        """How tools are offered now: ``native`` or ``text``."""
        return self.offer.mode

    @property
    def mode_setting(self) -> ModeSetting:
        """The mode asked for (``auto``, ``native`` or ``text``)."""
        return self.offer.mode_setting

    @property
    def mode_choice(self) -> ModeChoice | None:
        """Why the mode is what it is, once ``auto`` decided."""
        return self.offer.mode_choice

    @property
    def learner(self) -> ModeLearner | None:
        """``auto`` still learning; None once decided or when the mode was set."""
        return self.offer.learner

    @property
    def memory(self) -> ModeMemory:
        """What ``auto`` learned, by server and model."""
        return self.offer.memory

    @property
    def grammar_refused(self) -> bool:
        """Whether the server refused a grammar (none is sent again in this session)."""
        return self.offer.grammar_refused

    # -- the meter ---------------------------------------------------------------------------------------

    @property
    def estimator(self) -> TokenEstimator:
        """The ratio of characters to tokens, learned from the server's counts (what is shown)."""
        return self.meter.estimator

    @property
    def counter(self) -> Counter:
        """The estimate the loop trusts (see :class:`~twinny_magics.estimate.PromptCounter`)."""
        return self.meter.counter

    @property
    def family(self) -> tuple[str, str] | None:
        """The tokenizer family text is weighed for, and where that was learned."""
        return self.meter.family

    @property
    def window(self) -> int | None:
        """The window last planned (None before the first request)."""
        return self.meter.window

    @property
    def plan(self) -> ContextPlan | None:
        """The plan for that window."""
        return self.meter.plan
