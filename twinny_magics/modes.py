"""``mode="auto"``: whether a model gets its tools natively or as text, learned from its first replies.

Pure: no I/O. Servers that take tools start native, and the first steps decide: a native call made
keeps native; a call written as text in the reply's content (a fence, a tag, a bare JSON call — read,
or a call marker that could not be read) switches to text, where the prompt shows the protocol the
model is already writing and, on llama.cpp, a grammar can shape the call; and no call at all in
``text_after`` steps of workspace questions also tries text. A decision holds for the session and, in
``LEARNED_MODES``, for every later session with the same server and model in this process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .conversation import Mode

__all__ = ["LEARNED_MODES", "ModeChoice", "ModeLearner", "ModeMemory", "describe"]


@dataclass(frozen=True)
class ModeChoice:
    """How tools are offered to a model, and why (said in the reply's notices)."""

    mode: Mode
    reason: str


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
            return ModeChoice("native", f"the model made a native tool call in step {step}")
        if text_call:
            return ModeChoice(
                "text", f"the model wrote its tool call as text, not as a native call, in step {step}"
            )
        if not needed_a_tool:
            return None
        self.misses += 1
        if text_after and self.misses >= text_after:
            return ModeChoice(
                "text",
                f"no tool call with native tools in {self.misses} steps that needed the workspace; "
                "trying the tools as text",
            )
        return None


class ModeMemory:
    """Decisions by (server URL, model), kept for the process (thread-safe: replies run on workers)."""

    def __init__(self) -> None:
        self._choices: dict[tuple[str, str], ModeChoice] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str] | None) -> ModeChoice | None:
        """The decision for ``key``, if one was made."""
        if key is None:
            return None
        with self._lock:
            return self._choices.get(key)

    def remember(self, key: tuple[str, str] | None, choice: ModeChoice) -> None:
        """Keep ``choice`` for ``key`` (a server without a URL is not remembered)."""
        if key is None:
            return
        with self._lock:
            self._choices[key] = choice

    def clear(self) -> None:
        """Forget every decision (a benchmark that wants independent sessions calls this between them)."""
        with self._lock:
            self._choices.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._choices)


#: What ``auto`` learned in this process, by server URL and model.
LEARNED_MODES = ModeMemory()
