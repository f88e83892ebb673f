"""What a request offers the model: how its tools are said (the mode), its grammar, its tools, its prompt.

The session's own state about it lives here: the mode, and in ``auto`` what the first replies taught
(kept by server and model in a :class:`~twinny_magics.modes.ModeMemory`, so a later session starts where
this one ended); whether the server refused a grammar. The run asks this part what the next request
carries and tells it what a step showed; it never decides a mode itself.
"""

from __future__ import annotations

from typing import Any

from twinny_magics import protocol
from twinny_magics.contracts import (
    Addressed,
    ChatRequest,
    ContinuesPrefill,
    MaybeEmbedded,
    ModelServer,
    Named,
    TakesTools,
    Toolset,
)
from twinny_magics.conversation import Message, Mode, system
from twinny_magics.modes import ModeChoice, ModeLearner, ModeMemory
from twinny_magics.protocol.grammar import tool_call_grammar

from .settings import GrammarSetting, LoopSettings, ModeSetting


class Offer:
    """How tools are offered to one session's model, and what each request carries because of it."""

    def __init__(
        self,
        server: ModelServer,
        tools: Toolset,
        *,
        mode: ModeSetting,
        settings: LoopSettings,
        memory: ModeMemory,
    ) -> None:
        self.server = server
        self.tools = tools
        self.settings = settings
        #: What ``auto`` learned, by server and model (the process's own unless a test gives one).
        self.memory = memory
        self.mode: Mode = "native"
        self.mode_setting: ModeSetting = mode
        #: Why the mode is what it is, once ``auto`` decided (None while it learns, or when set).
        self.mode_choice: ModeChoice | None = None
        #: ``auto`` still learning (native tools so far); None once decided or when the mode was set.
        self.learner: ModeLearner | None = None
        #: A decision taken from ``memory``, to be said in the next reply's notices.
        self.untold: ModeChoice | None = None
        #: Set when the server refused a grammar: none is sent again in this session.
        self.grammar_refused = False
        #: Whether the current reply's first request carries a head start (the run sets it each reply):
        #: then the first step may answer from it, even where a call is otherwise required first.
        self.head_start_given = False
        self._start_mode(mode)

    # -- the mode --------------------------------------------------------------------------------------

    def set_mode(self, mode: ModeSetting) -> None:
        """Offer tools natively, as text, or as learned (``auto``); the same setting again changes nothing."""
        if mode != self.mode_setting:
            self._start_mode(mode)

    def _start_mode(self, mode: ModeSetting) -> None:
        self.mode_setting = mode
        self.mode_choice = self.learner = self.untold = None
        self.mode = _initial_mode(mode, self.server)
        if mode != "auto" or self.mode != "native":
            return  # set, or a server (or model) that can only take tools as text
        remembered = self.memory.get(self.server_key)
        if remembered is not None:
            self.mode, self.mode_choice, self.untold = remembered.mode, remembered, remembered
        else:
            self.learner = ModeLearner()

    @property
    def server_key(self) -> tuple[str, str] | None:
        """The server's URL and model, what ``auto``'s decisions are remembered by (None: no URL)."""
        info = self.server.info if isinstance(self.server, Addressed) else None
        base = info.base_url if info is not None else None
        return (base, self.server.model or "") if base else None

    def choose_mode(self, choice: ModeChoice) -> None:
        """Decide ``auto``: offer tools this way from now on, in this session and later ones."""
        self.mode, self.mode_choice, self.learner = choice.mode, choice, None
        self.memory.remember(self.server_key, choice)

    def learn(
        self, step: int, *, native_reply: bool, called: bool, wrote_a_call: bool, needed_a_tool: bool
    ) -> ModeChoice | None:
        """``auto``, undecided: what one step under native tools shows; the decision it made, if any.

        ``native_reply``: the step's calls came as native calls; ``called``: it made readable calls;
        ``wrote_a_call``: it made calls or wrote ones that could not be read; ``needed_a_tool``: it answered
        a workspace question with no call at all.
        """
        if self.learner is None or self.mode != "native":
            return None
        choice = self.learner.observe(
            step,
            native_call=native_reply and called,
            text_call=not native_reply and wrote_a_call,
            needed_a_tool=needed_a_tool,
            text_after=self.settings.auto_text_after,
        )
        if choice is not None:
            self.choose_mode(choice)
        return choice

    @property
    def checks_answers(self) -> bool:
        """Whether an answer is checked against what the model read before it is shown (see
        ``engine.supported``): on the embedded SmolLM2, too small to keep its prose to what it read."""
        return embedded_smollm2(self.server)

    # -- what a request carries ----------------------------------------------------------------------

    def grammar_setting(self) -> GrammarSetting:
        """The grammar setting in force for the next request: ``off`` where none applies (a mode or a
        server without grammars, a server that refused one, the user's own constraint), ``auto`` resolved."""
        setting = self.settings.grammar
        extra = self.settings.extra or {}
        if self.mode != "text" or self.grammar_refused or setting == "off" or self.server.kind != "llamacpp":
            return "off"
        if any(key in extra for key in ("grammar", "json_schema", "response_format")):
            return "off"  # the user's own constraint wins
        if setting == "auto":
            if not embedded_smollm2(self.server):
                return "lazy"  # larger models answer and call without being held to either
            # SmolLM2 writes no well-formed call unless one is required; but a head start in the first
            # request may already hold the answer, and requiring a call there forbade answering from it.
            return "answer-or-call" if self.head_start_given else "call-first"
        return setting

    def grammar_for(self, step: int, last: bool) -> str | None:
        """The GBNF grammar sent with a request, where one applies (text mode on llama.cpp), else None.

        Under ``lazy`` a step's request goes without one (see ``lazy_for``); only the closing request has it.
        """
        setting = self.grammar_setting()
        if setting == "off":
            return None
        if last:
            return tool_call_grammar([])  # the closing reply is an answer: a call there would be wasted
        if setting == "lazy":
            return None
        return tool_call_grammar(self.tools.definitions(), require_call=setting == "call-first" and step == 1)

    def lazy_for(self, last: bool) -> bool:
        """Whether a call a request's reply opens is finished under the call grammar (``lazy``).

        Only where the server continues a reply from a trailing assistant message (llama.cpp); a
        scripted or replayed model would answer that request with its next reply instead.
        """
        if last or not (isinstance(self.server, ContinuesPrefill) and self.server.continues_prefill):
            return False
        return self.grammar_setting() == "lazy" and bool(self.tools.definitions())

    def system_message(self) -> Message:
        """The system prompt for the current mode (text mode lists the tools in it)."""
        if self.mode == "text":
            return system(
                protocol.text_mode_system_prompt(self.settings.system_prompt, self.tools.definitions())
            )
        return system(self.settings.system_prompt)

    def request_tools(self, last: bool) -> list[dict[str, Any]] | None:
        """The tool definitions a request offers natively (none in text mode, none on the closing request)."""
        if last or self.mode == "text":
            return None
        return self.tools.definitions()

    def request(
        self,
        rendered: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        reply_tokens: int,
        *,
        step: int,
        last: bool,
    ) -> ChatRequest:
        """The request for messages already rendered: the tools, the grammar where one applies (a request
        that offers tools natively has none), the reply's tokens and the session's own extras."""
        extra = dict(self.settings.extra or {})
        grammar = self.grammar_for(step, last) if tools is None else None
        if grammar is not None:
            extra["grammar"] = grammar
        if self.checks_answers:
            reply_tokens = min(reply_tokens, TINY_MODEL_REPLY_TOKENS)
        return ChatRequest(
            messages=rendered,
            tools=tools,
            model=self.server.model,
            max_tokens=reply_tokens,
            temperature=self.settings.temperature,
            extra=extra,
        )


#: The most a reply of the embedded SmolLM2 may write: its answers that are right are a sentence or a short
#: list, and past that it loops or rambles until the cap (a sampled quickstart reply ran 288 s on 2 cores).
TINY_MODEL_REPLY_TOKENS = 384


def embedded_smollm2(server: ModelServer) -> bool:
    """Whether the server is the embedded one running SmolLM2 (it may run another GGUF)."""
    embedded = server.embedded if isinstance(server, MaybeEmbedded) else None
    if embedded is None:
        return False
    # One that gives no name runs the default model, SmolLM2.
    return "smollm2" in (embedded.alias if isinstance(embedded, Named) else "smollm2").lower()


def _initial_mode(mode: ModeSetting, server: ModelServer) -> Mode:
    if mode in ("native", "text"):
        return mode
    if server.kind == "textgen" or (isinstance(server, TakesTools) and server.takes_tools is False):
        return "text"
    if isinstance(server, MaybeEmbedded) and server.embedded is not None:
        # The embedded server runs small models (SmolLM2's template drops the tool definitions): text
        # mode lists the tools in the prompt, where the model sees them, and lets a grammar shape calls.
        return "text"
    return "native"
