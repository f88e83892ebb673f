"""The session's options, declared once: name, type, range, default and help.

``Agent`` and ``Agent.configure`` check values against this table; the magic builds its ``%config
TwinnyMagics.<option>`` traits, its ``%%agent --option`` flags and the option list of ``%%agent?`` from
it; ``%%agent compare`` takes the flags it shares from it too. Adding an option is one entry here (and
its use where it takes effect). Pure: the standard library only, so loading the extension stays fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

#: ``session``: a change makes a new session (another server, model, workspace…); ``turn``: applies to
#: one cell of the same session; ``view``: how the magic shows and keeps a reply, not the Agent's.
Scope = Literal["session", "turn", "view"]


@dataclass(frozen=True)
class Option:
    """One option: what it takes, its default, and what it does."""

    name: str
    #: ``str``, ``int``, ``float``, ``bool`` or ``list`` (of strings).
    type: type
    default: Any
    #: One or two sentences, shown by ``%config TwinnyMagics`` and in the reference.
    help: str
    scope: Scope
    #: The ``%%agent`` flag's help (short, lower case); None: no flag on the magic's line.
    flag: str | None = None
    choices: tuple[str, ...] = ()
    #: The smallest value allowed (``above``: the value must be larger than it) and the largest.
    least: float | None = None
    above: bool = False
    most: float | None = None
    #: None is a value of its own (unset: the server's, the usual places…).
    nullable: bool = False
    metavar: str | None = None
    #: A flag that takes no value (``--quiet``), for a bool.
    switch: bool = False

    @property
    def spelling(self) -> str:
        """The flag as written on the magic's line."""
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> Any:
        """``value`` if this option takes it, else a ValueError that says what it takes."""
        if value is None:
            if self.nullable:
                return None
            raise ValueError(f"{self.name} needs a value ({self._takes()}).")
        if self.choices:
            if value not in self.choices:
                raise ValueError(f"{self.name} must be {self._takes()}, not {value!r}")
            return value
        if self.type in (int, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{self.name} {value!r}: give {self._takes()}.")
            if self.type is int and not isinstance(value, int):
                raise ValueError(f"{self.name} {value!r}: give {self._takes()}.")
            low_ok = self.least is None or (value > self.least if self.above else value >= self.least)
            if not low_ok or (self.most is not None and value > self.most):
                raise ValueError(f"{self.name} {value:g}: give {self._takes()}.")
        return value

    def _takes(self) -> str:
        if self.choices:
            quoted = [repr(c) for c in self.choices]
            return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
        what = "a whole number" if self.type is int else "a number"
        if self.least is not None and self.most is not None:
            return f"{what} from {self.least:g} to {self.most:g}"
        if self.least is not None:
            return f"{what} {'above' if self.above else 'of at least'} {self.least:g}"
        return what


#: ``--head-start``: which parts of the head start a reply gets (the workspace map, the evidence).
HEAD_START_PARTS: dict[str, tuple[bool, bool]] = {
    "on": (True, True),
    "off": (False, False),
    "map": (True, False),
    "evidence": (False, True),
}

_MODES = ("auto", "native", "text")
_GRAMMARS = ("auto", "off", "lazy", "answer-or-call", "call-first")
_ASK = ("ask", "allow", "off")

#: Every option, in the order the magic's help lists them.
OPTIONS: tuple[Option, ...] = (
    Option(
        "server",
        str,
        None,
        "The model server's URL; unset: the usual places, then the embedded one.",
        "session",
        flag="the model server (Ollama, llama.cpp, LM Studio, a gateway…)",
        nullable=True,
        metavar="URL",
    ),
    Option(
        "model",
        str,
        None,
        "The model to ask for; unset: the server's.",
        "session",
        flag="the model to ask for",
        nullable=True,
    ),
    Option(
        "kind",
        str,
        None,
        "The server's kind (ollama, llamacpp, lmstudio, …); unset: recognised.",
        "session",
        flag="the server's kind: ollama, llamacpp, lmstudio, litellm, vllm, openai, …",
        nullable=True,
    ),
    Option(
        "mode",
        str,
        "auto",
        "How tools are offered.",
        "turn",
        flag="tools as JSON schemas, or as text",
        choices=_MODES,
    ),
    Option(
        "steps",
        int,
        12,
        "At most this many requests per reply.",
        "turn",
        flag="at most N requests in this reply (default 12)",
        least=1,
        metavar="N",
    ),
    Option(
        "edits",
        str,
        "review",
        "review: edits wait for Apply; apply: written.",
        "turn",
        flag="review: edits wait for Apply/Discard",
        choices=("review", "apply"),
    ),
    Option(
        "commands",
        str,
        "ask",
        "Whether run_command asks first.",
        "turn",
        flag="whether run_command asks first",
        choices=_ASK,
    ),
    Option(
        "kernel",
        str,
        "ask",
        "run_python (code run in this kernel): ask first (Run / Don't run), allow without asking, or "
        "off (not offered).",
        "turn",
        flag="run_python, code run in this kernel: ask first, allow, or off",
        choices=_ASK,
    ),
    Option(
        "cells",
        str,
        "review",
        "propose_cell: review (Insert / Discard) or insert (put in below the question without asking).",
        "turn",
        flag="propose_cell: review (Insert/Discard) or insert",
        choices=("review", "insert"),
    ),
    Option(
        "kernel_seconds",
        float,
        60.0,
        "The time limit of code run_python runs in the kernel.",
        "turn",
        least=0,
        above=True,
    ),
    Option(
        "grammar",
        str,
        "auto",
        "Shape text-mode calls on llama.cpp with a grammar (auto: lazy; call-first on the embedded SmolLM2 "
        "unless a head start may answer).",
        "turn",
        flag="llama.cpp, text mode: lazy (free text, a call finished well-formed), answer-or-call, "
        "call-first (the first step calls); auto: lazy, call-first on the embedded SmolLM2 (answer-or-call "
        "after a head start)",
        choices=_GRAMMARS,
    ),
    Option(
        "temperature",
        float,
        None,
        "The sampling temperature sent with each request; unset: the server's.",
        "turn",
        flag="sampling temperature (default: the server's)",
        least=0,
        most=2,
        nullable=True,
        metavar="T",
    ),
    Option(
        "head_start",
        str,
        "evidence",
        "What the first request of a reply gets before the model looks: evidence (the best-matching "
        "parts of files; the default), on (a map of the workspace too), map, off.",
        "turn",
        flag="before the model looks: the best-matching lines (evidence, the default), with a map of the "
        "workspace (on), the map alone (map), or nothing (off)",
        choices=tuple(HEAD_START_PARTS),
    ),
    Option(
        "window",
        int,
        None,
        "The window to load the model with (Ollama num_ctx, the embedded server).",
        "session",
        flag="load the model with an N-token window",
        least=1,
        nullable=True,
        metavar="N",
    ),
    Option(
        "workspace",
        str,
        None,
        "The folder the tools see; unset: the kernel's working directory.",
        "session",
        flag="the folder the tools see (default: the notebook's)",
        nullable=True,
        metavar="DIR",
    ),
    Option(
        "api_key",
        str,
        None,
        "Sent as a Bearer token.",
        "session",
        flag="sent as a Bearer token",
        nullable=True,
        metavar="KEY",
    ),
    Option(
        "timeout",
        float,
        None,
        "Seconds a reply may go silent before it is given up (default 300).",
        "session",
        flag="give a reply up after S silent seconds (default 300)",
        least=0,
        above=True,
        nullable=True,
        metavar="S",
    ),
    Option(
        "autosave",
        bool,
        True,
        "Save the session after every reply, in .twinny_sessions/<session id>.json in the workspace "
        "(a folder the tools never show); the first cell of a new kernel offers to resume the newest.",
        "view",
        flag="save the session after this reply, in .twinny_sessions/ (default on; %%config "
        "TwinnyMagics.autosave)",
    ),
    Option("quiet", bool, False, "Show only the answer.", "view", flag="show only the answer", switch=True),
    Option(
        "secret_files",
        list,
        None,
        "Gitignore-style patterns of files the tools never show; unset: the built-in deny list "
        "(twinny_magics.tools.denied), []: none. A change makes a new session.",
        "session",
        nullable=True,
    ),
    Option(
        "output",
        str,
        "auto",
        "rich: outputs updated in place (a kernel); text: printed lines (a terminal); auto: pick.",
        "view",
        choices=("auto", "rich", "text"),
    ),
)

#: The options by name.
BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}
#: Their defaults by name (``Agent``'s keyword defaults read them).
DEFAULTS: dict[str, Any] = {option.name: option.default for option in OPTIONS}


def option(name: str) -> Option:
    """The option called ``name``."""
    return BY_NAME[name]


def default(name: str) -> Any:
    """The default of the option called ``name``."""
    return BY_NAME[name].default


def check(name: str, value: Any) -> Any:
    """``value`` if the option called ``name`` takes it, else a ValueError saying what it takes."""
    return BY_NAME[name].check(value)


def scoped(*scopes: Scope) -> tuple[str, ...]:
    """The names of the options of these scopes, in table order."""
    return tuple(o.name for o in OPTIONS if o.scope in scopes)


def with_flags(names: tuple[str, ...] | None = None) -> Iterator[Option]:
    """The options that have a flag on the magic's line (of ``names``, when given), in table order."""
    for o in OPTIONS:
        if o.flag is not None and (names is None or o.name in names):
            yield o


def add_flag(add_argument: Callable[..., Any], o: Option, *, described: str | None = None) -> Any:
    """Declare ``o``'s flag with ``add_argument`` (argparse's, or IPython's ``magic_arguments.argument``)."""
    words: dict[str, Any] = {"dest": o.name, "help": o.flag if described is None else described}
    if o.switch:
        words.update(action="store_true", default=None)
    elif o.type is bool:
        words["choices"] = ["on", "off"]
    elif o.choices:
        words["choices"] = list(o.choices)
    elif o.type in (int, float):
        words["type"] = o.type
    if o.metavar and not o.switch:
        words["metavar"] = o.metavar
    return add_argument(o.spelling, **words)
