"""A session as one JSON document, and back: what `Agent.save` writes and `Agent.load` reads.

The document (``format`` ``twinny_magics.session``, ``version`` 1; docs/sessions.md lists every
field) holds the settings, the server's kind, model and address — never its API key — the plan, the
estimator's ratio and history, the notes, and every reply in full (:mod:`.replies`). Every text in it
passes through ``redact.mask_value`` on the way out: the session's key and anything shaped like a
credential become ``[secret hidden]``, so a saved session can be shared like an exported notebook.

Paths inside (tool arguments, edits) are the workspace-relative ones the model used; the workspace
itself is kept twice — where it was, and where it lies from the session file — as a record: a load works
where it is told (the notebook's folder) and says so when that is not where the session was saved.

A loaded document is data (:data:`TAKEN` and :data:`GUARDED` say which settings a load takes): it never
widens a permission, changes a prompt or names the server.

Pure: no I/O. Reading and writing the file is :mod:`.files`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from twinny_magics.budget import MAX_RATIO, MIN_RATIO, ContextPlan, Observation, plan_context
from twinny_magics.notes import NoteEntry
from twinny_magics.options import BY_NAME, check
from twinny_magics.redact import mask_value
from twinny_magics.sessions.reading import Reader, SessionFileError
from twinny_magics.sessions.replies import (
    SavedEdit,
    call_from_json,
    call_to_json,
    reply_from_json,
    reply_to_json,
)
from twinny_magics.usage import check_price
from twinny_magics.version import __version__

if TYPE_CHECKING:
    from twinny_magics.agent import Agent
    from twinny_magics.contracts import ProposedChange
    from twinny_magics.events import Reply

FORMAT = "twinny_magics.session"
#: Raised when a field changes meaning or a required one is added; readers refuse a newer version.
VERSION = 1
#: What a loaded edit that was still waiting for review becomes: it is never applied by a load.
EXPIRED = "expired"

_MODES = ("auto", "native", "text")
_GRAMMARS = ("auto", "off", "lazy", "answer-or-call", "call-first")


@dataclass(frozen=True)
class SavedServer:
    """The server a session talked to: enough to find it again, never its key."""

    kind: str | None = None
    model: str | None = None
    #: The address asked for or found; None for the embedded server (its port dies with the kernel).
    base_url: str | None = None
    #: The window the server last said it had.
    window: int | None = None
    embedded: bool = False


@dataclass
class SavedSession:
    """A session document, read and checked: the settings, the learned state and the replies."""

    saved_at: str
    workspace: str
    #: The workspace as seen from the session file's folder (``..`` for the default place).
    workspace_from_file: str | None
    server: SavedServer
    #: Agent keyword arguments: how replies run (mode, steps, edits, prompts, head start…).
    options: dict[str, Any]
    #: The mode the session had settled on (``native`` or ``text``), where the setting was ``auto``.
    mode: str
    plan: ContextPlan | None
    ratio: float
    observations: list[Observation]
    notes: list[NoteEntry]
    replies: list[Reply]
    version: int = VERSION
    package_version: str = ""


@dataclass
class Restored:
    """Where a loaded session came from, and what its loading had to say (``Agent.restored``)."""

    path: str
    saved_at: str
    notices: list[str] = field(default_factory=list)
    #: What the session last knew of its server, kept until the next reply asks again (so a session
    #: loaded and saved again without a reply between keeps them).
    window: int | None = None
    mode: str = "auto"


def agent_options(agent: Agent) -> dict[str, Any]:
    """The Agent keyword arguments that say how its replies run (what a load passes back)."""
    s = agent.settings
    return {
        "mode": agent.requested_mode,
        "steps": s.steps,
        "edits": agent.edits,
        "commands": agent.commands,
        "grammar": s.grammar,
        "temperature": s.temperature,
        "workspace_map": s.workspace_map,
        "evidence": s.evidence,
        "search": agent.search,
        "head_start_share": s.head_start_share,
        "max_calls": s.max_calls,
        "max_unusable_steps": s.max_unusable_steps,
        "look_first": s.look_first,
        "edit_first": s.edit_first,
        "system_prompt": s.system_prompt,
        "closing_prompt": s.closing_prompt,
        "extra": s.extra,
        "kernel": agent.kernel_mode,
        "cells": agent.cells,
        "kernel_seconds": agent.kernel_seconds,
        "timeout": agent.timeout,
        "window": agent.requested_window,
        "secret_files": agent.secret_files,
        "tool_descriptions": dict(agent.tool_descriptions),
        "price": list(agent.price) if agent.price is not None else None,
    }


def _known(agent: Agent) -> tuple[int | None, str, ContextPlan | None]:
    """The window, mode and plan: the live ones, else (loaded, no reply yet) those it was saved with."""
    restored = agent.restored
    if agent.window is not None or restored is None or restored.window is None:
        return agent.window, agent.mode, agent.plan
    share = agent.settings.head_start_share
    return restored.window, restored.mode, plan_context(restored.window, agent.estimator.ratio, share)


def _server(agent: Agent) -> dict[str, Any]:
    server = agent.server
    # The adapters keep their address on ``info`` and the embedded server's handle on ``embedded``; a
    # scripted or hand-made server has neither (reprs reads them the same way for %agent status).
    embedded = getattr(server, "embedded", None) is not None
    found = getattr(getattr(server, "info", None), "base_url", None)
    base_url = None if embedded else agent.base_url or (found if isinstance(found, str) else None)
    return asdict(
        SavedServer(
            kind=server.kind if server is not None else agent.kind,
            model=(server.model if server is not None else None) or agent.model,
            base_url=base_url,
            window=_known(agent)[0],
            embedded=embedded,
        )
    )


def session_document(
    agent: Agent, *, saved_at: str, workspace: str, workspace_from_file: str | None
) -> dict[str, Any]:
    """The session as JSON data, every text masked (the key and credential shapes); never the key.

    ``workspace`` is the workspace's absolute path; ``workspace_from_file`` the same seen from the folder
    the file goes to.
    """
    _, mode, plan = _known(agent)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "package_version": __version__,
        "saved_at": saved_at,
        "workspace": {"path": workspace, "from_file": workspace_from_file},
        "server": _server(agent),
        "settings": agent_options(agent),
        "mode": mode,
        "plan": asdict(plan) if plan is not None else None,
        "estimator": {
            "ratio": agent.estimator.ratio,
            "history": [asdict(o) for o in agent.estimator.history],
        },
        "notes": [{"call": call_to_json(e.call), "output": e.output} for e in agent.note_entries],
        "replies": [reply_to_json(reply) for reply in agent.replies],
    }
    out: dict[str, Any] = masked(document, lambda text: mask_value(text, agent.api_key))
    return out


def masked(value: Any, mask: Callable[[str], str]) -> Any:
    """``value`` (JSON data) with ``mask`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {mask(str(k)): masked(v, mask) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [masked(v, mask) for v in value]
    return value


# -- reading -----------------------------------------------------------------------------------------


def check_format(data: Any) -> Reader:
    """The document's top object, once it is known to be a session this version can read."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise SessionFileError(
            f"not a saved twinny_magics session (its format is {found!r}, not {FORMAT!r}); "
            "save one with %agent save or Agent.save"
        )
    r = Reader(data)
    version = r.whole("version")
    if version > VERSION:
        raise SessionFileError(
            f"saved by a newer twinny_magics (session version {version}; this one reads up to {VERSION}, "
            f"package {__version__}): upgrade twinny_magics to load it"
        )
    if version < 1:
        raise SessionFileError(f"version: expected 1 to {VERSION}, found {version}")
    return r


#: What a load takes from the file by itself: how the saved replies ran (mode, steps, the head start…).
#: None of these can make a reply do more than the notebook allows, say other words to the model or send
#: a request elsewhere.
TAKEN = (
    "mode",
    "steps",
    "grammar",
    "temperature",
    "workspace_map",
    "evidence",
    "search",
    "head_start_share",
    "max_calls",
    "max_unusable_steps",
    "look_first",
    "edit_first",
    "price",
)
#: What a load takes from the file only when asked (``Agent.load(..., settings=True)``, ``%agent load PATH
#: --settings``), each one that differs listed before anything runs: what replies may do (the approvals,
#: the deny list, the code time limit), what the model is told (the prompts, the tool descriptions), what
#: every request carries (``extra`` is merged into the request body) and the window and time limit the
#: requests are sized and waited for by. A session file that came with a cloned repository or a pull
#: request is somebody else's text; these stay the notebook's. The server's address and the workspace
#: are never taken from the file: they are named by whoever loads it.
GUARDED = (
    "commands",
    "edits",
    "kernel",
    "cells",
    "kernel_seconds",
    "secret_files",
    "system_prompt",
    "closing_prompt",
    "extra",
    "tool_descriptions",
    "window",
    "timeout",
)


def chosen_settings(saved: SavedSession, *, guarded: bool) -> dict[str, Any]:
    """The saved settings a load passes on: :data:`TAKEN`, and :data:`GUARDED` too when asked."""
    names = TAKEN + GUARDED if guarded else TAKEN
    return {name: saved.options[name] for name in names if name in saved.options}


def differences(saved: SavedSession, own: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """The guarded settings whose saved value differs from ``own`` (the session's, as `agent_options`
    gives them): ``(name, saved, own)``, in :data:`GUARDED` order."""
    return [
        (name, saved.options[name], own.get(name))
        for name in GUARDED
        if name in saved.options and _comparable(saved.options[name]) != _comparable(own.get(name))
    ]


def _comparable(value: Any) -> Any:
    # A saved value is JSON (a list where the session has a tuple, {} for no descriptions).
    if isinstance(value, tuple):
        return list(value)
    if value == {}:
        return None
    return value


def _options(r: Reader) -> dict[str, Any]:
    s = r.obj("settings")
    secret_files = s.texts("secret_files") if s.data.get("secret_files") is not None else None
    extra = s.raw_dict("extra") if s.data.get("extra") is not None else None
    try:
        price = check_price(s.items("price") if s.data.get("price") is not None else None)
    except ValueError as error:
        raise SessionFileError(f"settings.price: {error}") from None
    descriptions = s.raw_dict("tool_descriptions")
    if not all(isinstance(v, str) for v in descriptions.values()):
        raise SessionFileError("settings.tool_descriptions: expected text for each tool")
    options = {
        "mode": s.choice("mode", _MODES, "auto"),
        "steps": s.whole("steps", 12),
        "edits": s.choice("edits", ("review", "apply"), "review"),
        "commands": s.choice("commands", ("ask", "allow", "off"), "ask"),
        "grammar": s.choice("grammar", _GRAMMARS, "auto"),
        "temperature": s.opt_real("temperature"),
        "workspace_map": s.flag("workspace_map", True),
        "evidence": s.flag("evidence", True),
        "search": s.flag("search", True),
        "head_start_share": s.real("head_start_share", 0.15),
        "max_calls": s.whole("max_calls", 8),
        "max_unusable_steps": s.whole("max_unusable_steps", 3),
        "look_first": s.flag("look_first", False),
        "edit_first": s.flag("edit_first", True),
        **({"system_prompt": s.text("system_prompt")} if s.has("system_prompt") else {}),
        **({"closing_prompt": s.text("closing_prompt")} if s.has("closing_prompt") else {}),
        "extra": extra,
        "kernel": s.choice("kernel", ("ask", "allow", "off"), "ask"),
        "cells": s.choice("cells", ("review", "insert"), "review"),
        "kernel_seconds": s.real("kernel_seconds", 60.0),
        "timeout": s.opt_real("timeout"),
        "window": s.opt_whole("window"),
        "secret_files": secret_files,
        "tool_descriptions": descriptions,
        "price": price,
    }
    for name, value in options.items():
        if name in BY_NAME:
            try:
                check(name, value)
            except ValueError as error:
                raise SessionFileError(f"settings.{name}: {error}") from None
    for name in ("max_calls", "max_unusable_steps"):
        if s.whole(name, 1) < 1:
            raise SessionFileError(f"settings.{name}: expected a whole number of at least 1")
    return options


def session_from_json(data: Any) -> SavedSession:
    """A document as :func:`session_document` wrote it, every field checked (`SessionFileError` if not)."""
    r = check_format(data)
    workspace = r.obj("workspace")
    server = r.obj("server", {})
    estimator = r.obj("estimator")
    plan = r.opt_obj("plan")
    return SavedSession(
        version=r.whole("version"),
        package_version=r.text("package_version", ""),
        saved_at=r.text("saved_at", ""),
        workspace=workspace.text("path"),
        workspace_from_file=workspace.opt_text("from_file"),
        server=SavedServer(
            kind=server.opt_text("kind"),
            model=server.opt_text("model"),
            base_url=server.opt_text("base_url"),
            window=server.opt_whole("window"),
            embedded=server.flag("embedded", False),
        ),
        options=_options(r),
        mode=r.choice("mode", _MODES, "auto"),
        plan=_plan(plan) if plan else None,
        ratio=estimator.real("ratio"),
        observations=[
            Observation(
                o.whole("chars"), o.whole("prompt_tokens"), o.real("ratio_before"), o.real("ratio_after")
            )
            for o in estimator.objs("history", [])
        ],
        notes=[NoteEntry(call_from_json(n.obj("call")), n.text("output")) for n in r.objs("notes", [])],
        replies=[reply_from_json(reply) for reply in r.objs("replies", [])],
    )


def _plan(plan: Reader) -> ContextPlan:
    """The saved plan; a field newer than the file (``deep_target``) takes its default."""
    return ContextPlan(
        **{
            f.name: plan.whole(f.name) if f.default is MISSING else plan.whole(f.name, f.default)
            for f in fields(ContextPlan)
        }
    )


def restore(agent: Agent, saved: SavedSession, restored: Restored) -> None:
    """Give a fresh ``agent`` the saved turns, notes and learned ratio (its settings are its own).

    An edit that was waiting for review comes back as data marked ``expired``: the file may have
    changed since, so it is shown, never applied; the model can be asked for it again.
    """
    waiting = 0
    for reply in saved.replies:
        edits: list[ProposedChange] = []
        for edit in reply.pending:
            expired = isinstance(edit, SavedEdit) and edit.status == "pending"
            waiting += expired
            edits.append(replace(edit, status=EXPIRED) if isinstance(edit, SavedEdit) and expired else edit)
        reply.pending = edits
    if waiting:
        restored.notices.append(
            f"{waiting} edit{'s' if waiting != 1 else ''} waited for review when the session was saved; "
            "a load never applies an edit (the file may have changed since). Ask for it again."
        )
    agent.replies[:] = saved.replies
    agent.note_entries[:] = saved.notes
    agent.estimator.ratio = min(MAX_RATIO, max(MIN_RATIO, saved.ratio))
    agent.estimator.history[:] = saved.observations
    agent.restored = restored
