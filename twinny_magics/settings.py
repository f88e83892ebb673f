"""The session's settings: one frozen value, declared once, saved whole.

:class:`Settings` is every data option of an :class:`~twinny_magics.agent.Agent` — the server it names,
the workspace, how its replies run and what they may do. ``Agent(**options)`` builds one,
``Agent.configure(**changes)`` replaces it (``dataclasses.replace``: the same checks run again), the saved
session writes it whole (``asdict``) and a load reads it back field by field, by each field's type. The
live objects a session is handed (a server, a toolset, an approval callback, the kernel's shell and
namespace) are not settings: they are the Agent's own arguments.

Each field says beside its default how a load treats it (``load``) — the security rule of a saved
session, in one place:

- ``taken``: how the saved replies ran (mode, steps, the head start…); a load takes it from the file.
  None of these can make a reply do more than the notebook allows, say other words to the model or send
  a request elsewhere.
- ``guarded``: what replies may do (the approvals, the deny list, the code time limit), what the model is
  told (the prompts, the tool descriptions), what every request carries (``extra``) and the window and
  time limit requests are sized and waited for by. A load takes it from the file only when asked
  (``settings=True``, ``--settings``), each one that differs listed first: a session file that came with
  a cloned repository is somebody else's text.
- ``named``: never saved among the settings, never taken from a file — the server's address, model and
  kind, the workspace and the API key are named by whoever loads it.

and whether a change makes a new session (``scope`` ``session``: ``configure`` refuses it) or applies
from the next reply (``turn``). A field that is also an option of the magic (:mod:`.options`) takes its
default, scope and checks from that table. The fields of how a reply runs are declared once, with their
rule, where the engine declares them (:class:`~twinny_magics.engine.settings.LoopSettings`, which
``Settings`` extends); the others here, with the same helpers.
"""

# Each field is declared through a helper that returns dataclasses.field (RUF009 cannot see it does).
# ruff: noqa: RUF009

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from twinny_magics.engine.settings import Load, LoopSettings, ModeSetting, option_setting, setting
from twinny_magics.options import HEAD_START_PARTS, check
from twinny_magics.tools.denied import SecretFiles
from twinny_magics.tools.kernel import CellsMode, KernelMode
from twinny_magics.tools.workspace import CommandsMode, EditsMode
from twinny_magics.usage import Price, check_price

__all__ = [
    "LOOP_FIELDS",
    "Load",
    "Settings",
    "as_options",
    "from_options",
    "loaded",
    "saved",
    "session_scoped",
]

#: Request fields ``extra`` may not set: the conversation, the tools offered and the streaming the loop reads.
LOOP_FIELDS = frozenset({"messages", "tools", "stream"})


@dataclass(frozen=True)
class Settings(LoopSettings):
    """Every option of a session, checked when made (``ValueError`` names the option and what it takes).

    It is the loop's :class:`LoopSettings` too, whose fields (how a reply runs: the steps, the grammar,
    the prompts, ``extra``, the head start…) it takes as they are declared there, each with its load
    rule; the session hands it to each reply whole.
    """

    # -- which server, where: named by whoever makes or loads the session --------------------------------
    base_url: str | None = option_setting("base_url", "named", option="server")
    model: str | None = option_setting("model", "named")
    kind: str | None = option_setting("kind", "named")
    #: Unset on the magic is the kernel's working directory, which ``"."`` is too.
    workspace: str | Path = setting(".", "named", "session", option="workspace")
    api_key: str | None = option_setting("api_key", "named")

    # -- how the replies run: taken from a saved session ------------------------------------------------
    # (and, declared in LoopSettings: steps, max_calls, temperature, max_unusable_steps, repeat_guard,
    # grammar, look_first, edit_first, auto_text_after, workspace_map, evidence, head_start_share)
    mode: ModeSetting = option_setting("mode", "taken")
    #: The ranked search offered as a tool (the workspace's tools are made once a session).
    search: bool = setting(False, "taken", "session")
    #: Money per million tokens, ``(input, output[, cached input])``; no price is built in.
    price: Price | None = setting(None, "taken")

    # -- what replies may do and are told: taken from a file only when asked ------------------------------
    commands: CommandsMode = option_setting("commands", "guarded")
    edits: EditsMode = option_setting("edits", "guarded")
    kernel: KernelMode = option_setting("kernel", "guarded")
    cells: CellsMode = option_setting("cells", "guarded")
    kernel_seconds: float = option_setting("kernel_seconds", "guarded")
    #: Gitignore-style patterns of files the tools never show; None: the built-in deny list.
    secret_files: Sequence[str] | None = setting(None, "guarded", "session", option="secret_files")
    # (and, declared in LoopSettings: system_prompt, closing_prompt, extra)
    #: ``{"grep": "..."}`` replaces a workspace tool's description, word for word.
    tool_descriptions: Mapping[str, str] | None = setting(None, "guarded", "session")
    window: int | None = option_setting("window", "guarded")
    timeout: float | None = option_setting("timeout", "guarded")

    def __post_init__(self) -> None:
        values = vars(self)
        for f in fields(self):
            option = f.metadata["option"]
            if option is not None:
                check(option, values[f.name])
        if not 0 <= self.head_start_share <= 0.5:
            raise ValueError(
                f"head_start_share {self.head_start_share:g}: give a share of the window from 0 to 0.5."
            )
        owned = sorted(set(self.extra or {}) & LOOP_FIELDS)
        if owned:
            # extra is merged over the request body: these would replace what the loop budgets and reads.
            raise ValueError(f"extra cannot set {owned[0]!r}: every request's {owned[0]} is the loop's own.")
        descriptions = dict(self.tool_descriptions or {})
        from twinny_magics.tools.registry import TOOLS  # noqa: PLC0415 - the tools' table, heavy to load

        unknown = sorted(set(descriptions) - set(TOOLS))
        if unknown:
            raise ValueError(f"No tool named {unknown[0]!r} to describe; the tools are: {', '.join(TOOLS)}.")
        # Checked now (a single string would be read as one pattern per character), used by the workspace.
        patterns = SecretFiles(self.secret_files).patterns if self.secret_files is not None else None
        object.__setattr__(self, "tool_descriptions", descriptions)
        object.__setattr__(self, "secret_files", patterns)
        object.__setattr__(self, "price", check_price(self.price))


def loaded(load: Load) -> tuple[str, ...]:
    """The names of the settings a load treats as ``load``, in declaration order."""
    return tuple(f.name for f in fields(Settings) if f.metadata["load"] == load)


def saved(settings: Settings) -> dict[str, Any]:
    """The settings a saved session keeps (all but the ``named`` ones), as JSON-ready data."""
    kept = set(loaded("taken") + loaded("guarded"))
    data = dataclasses.asdict(settings)
    return {name: list(v) if isinstance(v, tuple) else v for name, v in data.items() if name in kept}


def session_scoped() -> frozenset[str]:
    """The settings a live session cannot change (``configure`` refuses them): make a new session."""
    return frozenset(f.name for f in fields(Settings) if f.metadata["scope"] == "session")


def from_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The settings the magic's options name (``server`` is ``base_url``; ``head_start`` is
    ``workspace_map`` and ``evidence``), for the options in ``options``."""
    out = {
        f.name: options[f.metadata["option"]]
        for f in fields(Settings)
        if f.metadata["option"] is not None and f.metadata["option"] in options
    }
    parts = HEAD_START_PARTS.get(str(options.get("head_start")))
    if parts is not None:
        out.update(workspace_map=parts[0], evidence=parts[1])
    return out


def as_options(settings: Settings) -> dict[str, Any]:
    """The magic's options of a session's settings (a loaded or adopted session's own, which its cells
    fall back to)."""
    data = dataclasses.asdict(settings)
    return {f.metadata["option"]: data[f.name] for f in fields(Settings) if f.metadata["option"] is not None}
