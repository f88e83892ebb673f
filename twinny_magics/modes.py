"""``mode="auto"``: whether a model gets its tools natively or as text, learned from its first replies.

Pure: no I/O. Servers that take tools start native, and the first steps decide: a native call made
keeps native; a call written as text in the reply's content (a fence, a tag, a bare JSON call — read,
or a call marker that could not be read) switches to text, where the prompt shows the protocol the
model is already writing and, on llama.cpp, a grammar can shape the call; and no call at all in
``text_after`` steps of workspace questions also tries text. A decision holds for the session.

What later sessions of this process get (``LEARNED_MODES``, by server and model) depends on what
decided: the server's refusal of native tools is a fact about the server, kept for the process; what
the model wrote is kept only once it is a habit — text after ``TEXT_HABIT`` sessions in a row chose
text with no native call between them — and a native call forgets it. A model that wrote one call as
text, or calls natively, leaves later sessions to learn afresh (they start native, and a text call
still switches them).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal

from .conversation import Mode

__all__ = ["LEARNED_MODES", "TEXT_HABIT", "Ground", "ModeChoice", "ModeLearner", "ModeMemory", "describe"]

#: What decided a mode: the server itself (it refused native tools), or what the model did in a step.
Ground = Literal["server", "native call", "text call", "no call"]

#: Sessions in a row that chose text from what the model wrote, with no native call between them,
#: before later sessions of the process start in text. Qwen2.5-Coder-1.5B writes some calls as text
#: and most natively: carrying one text-written call to every later question cost answers in a session
#: (benchmarks/README.md, "Fresh and as sessions").
TEXT_HABIT = 3


@dataclass(frozen=True)
class ModeChoice:
    """How tools are offered to a model, and why (said in the reply's notices)."""

    mode: Mode
    reason: str
    #: What decided it (``server``: the server refused native tools; the default for a choice made
    #: outside the learner).
    ground: Ground = "server"


def describe(choice: ModeChoice) -> str:
    """``tools as text`` / ``native tool calls``."""
    return "tools as text" if choice.mode == "text" else "native tool calls"


@dataclass
class ModeLearner:
    """An undecided ``auto`` session: counts what its steps show until one decides."""

    #: Steps of workspace questions answered without any call so far.
    misses: int = 0

    def observe(
        self, step: int, *, native_call: bool, text_call: bool, needed_a_tool: bool, text_after: int = 2
    ) -> ModeChoice | None:
        """What one step (offered native tools) decides, or None when it decides nothing yet.

        ``text_after``: steps of workspace questions answered without any call before text is tried
        (0: never on that ground).
        """
        if native_call:
            return ModeChoice("native", f"the model made a native tool call in step {step}", "native call")
        if text_call:
            return ModeChoice(
                "text",
                f"the model wrote its tool call as text, not as a native call, in step {step}",
                "text call",
            )
        if not needed_a_tool:
            return None
        self.misses += 1
        if text_after and self.misses >= text_after:
            return ModeChoice(
                "text",
                f"no tool call with native tools in {self.misses} steps that needed the workspace; "
                "trying the tools as text",
                "no call",
            )
        return None


@dataclass
class _Learned:
    """What sessions with one server and model decided so far."""

    #: The server's own answer (it refused native tools): kept for the process.
    server: ModeChoice | None = None
    #: Sessions in a row that chose text from what the model wrote (a native call sets it back to 0).
    text_sessions: int = 0
    #: The latest of those text choices (what a later session is told, once it is a habit).
    text: ModeChoice | None = None

    def choice(self) -> ModeChoice | None:
        if self.server is not None:
            return self.server
        if self.text is not None and self.text_sessions >= TEXT_HABIT:
            said = f"{self.text_sessions} sessions in a row chose text, none native"
            reason = f"{said} (the latest: {self.text.reason})"
            return ModeChoice("text", reason, self.text.ground)
        return None


class ModeMemory:
    """What ``auto`` decided, by (server URL, model), for later sessions of the process (thread-safe:
    replies run on workers). ``get`` gives a session a mode only where the decisions hold as a rule (see
    the module's docstring); else the session learns afresh."""

    def __init__(self) -> None:
        self._learned: dict[tuple[str, str], _Learned] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str] | None) -> ModeChoice | None:
        """The mode a new session with ``key`` starts in, if what was learned settles it."""
        if key is None:
            return None
        with self._lock:
            learned = self._learned.get(key)
            return learned.choice() if learned is not None else None

    def remember(self, key: tuple[str, str] | None, choice: ModeChoice) -> None:
        """Count a session's decision for ``key`` (a server without a URL is not remembered)."""
        if key is None:
            return
        with self._lock:
            learned = self._learned.setdefault(key, _Learned())
            if choice.ground == "server":
                learned.server = choice
            elif choice.mode == "native":
                learned.text_sessions, learned.text = 0, None
            else:
                learned.text_sessions, learned.text = learned.text_sessions + 1, choice

    def clear(self) -> None:
        """Forget every decision (a benchmark that wants independent sessions calls this between them)."""
        with self._lock:
            self._learned.clear()

    def __len__(self) -> int:
        """Server and model pairs with something remembered."""
        with self._lock:
            return len(self._learned)


#: What ``auto`` learned in this process, by server URL and model.
LEARNED_MODES = ModeMemory()
