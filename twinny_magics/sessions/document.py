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

from collections.abc import Callable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from types import UnionType
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

from twinny_magics.budget import ContextPlan, Observation
from twinny_magics.engine.settings import ModeSetting
from twinny_magics.notes import NoteEntry
from twinny_magics.options import check
from twinny_magics.redact import mask_value
from twinny_magics.sessions.reading import Reader, SessionFileError
from twinny_magics.sessions.replies import (
    SavedEdit,
    call_from_json,
    call_to_json,
    reply_from_json,
    reply_to_json,
)
from twinny_magics.settings import Settings, loaded
from twinny_magics.usage import check_price
from twinny_magics.version import __version__

if TYPE_CHECKING:
    from twinny_magics.contracts import ProposedChange
    from twinny_magics.events import Reply

FORMAT = "twinny_magics.session"
#: Raised when a field changes meaning or a required one is added; readers refuse a newer version.
VERSION = 1
#: What a loaded edit that was still waiting for review becomes: it is never applied by a load.
EXPIRED = "expired"


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
    #: The saved settings (all but the server and the workspace: :func:`twinny_magics.settings.saved`).
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


def session_document(saved: SavedSession, *, secret: str | None) -> dict[str, Any]:
    """The session as JSON data, every text masked (``secret``, the session's key, and credential
    shapes); the settings are those a save keeps (:func:`twinny_magics.settings.saved`): never the key."""
    document = {
        "format": FORMAT,
        "version": VERSION,
        "package_version": __version__,
        "saved_at": saved.saved_at,
        "workspace": {"path": saved.workspace, "from_file": saved.workspace_from_file},
        "server": asdict(saved.server),
        "settings": saved.options,
        "mode": saved.mode,
        "plan": asdict(saved.plan) if saved.plan is not None else None,
        "estimator": {"ratio": saved.ratio, "history": [asdict(o) for o in saved.observations]},
        "notes": [{"call": call_to_json(e.call), "output": e.output} for e in saved.notes],
        "replies": [reply_to_json(reply) for reply in saved.replies],
    }
    out: dict[str, Any] = masked(document, lambda text: mask_value(text, secret))
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
#: What a load takes only when asked (``Agent.load(..., settings=True)``, ``%agent load PATH --settings``):
#: what replies may do, what the model is told, what every request carries and its window. Each setting
#: says which it is where it is declared (:class:`twinny_magics.settings.Settings`); the server's address
#: and the workspace are never taken from the file.
TAKEN = loaded("taken")
GUARDED = loaded("guarded")


def chosen_settings(saved: SavedSession, *, guarded: bool) -> dict[str, Any]:
    """The saved settings a load passes on: :data:`TAKEN`, and :data:`GUARDED` too when asked."""
    names = TAKEN + GUARDED if guarded else TAKEN
    return {name: saved.options[name] for name in names if name in saved.options}


def differences(saved: SavedSession, own: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """The guarded settings whose saved value differs from ``own`` (the session's, as
    :func:`twinny_magics.settings.saved` gives them): ``(name, saved, own)``, in :data:`GUARDED` order."""
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


#: What a setting missing from a file written before it was saved reads as, where that is not its default.
_SAVED_BEFORE = {"workspace_map": True, "search": True}


def _options(r: Reader) -> dict[str, Any]:
    """The saved settings, each read as its type says (one missing from an older file: its default), the
    options and the price checked; what only a session can check (``extra``'s fields, the tools named)
    is checked when a load takes it."""
    s = r.obj("settings")
    hints = get_type_hints(Settings)
    options: dict[str, Any] = {}
    for f in fields(Settings):
        if f.metadata["load"] == "named":
            continue  # never read from a file, even one that names them
        if s.has(f.name):
            options[f.name] = _setting(s, f.name, hints[f.name])
        else:
            options[f.name] = _SAVED_BEFORE.get(f.name, f.default)
        option = f.metadata["option"]
        if option is not None and f.name in options:
            try:
                check(option, options[f.name])
            except ValueError as error:
                raise SessionFileError(f"settings.{f.name}: {error}") from None
    try:
        options["price"] = check_price(options["price"])
    except ValueError as error:
        raise SessionFileError(f"settings.price: {error}") from None
    for name in ("max_calls", "max_unusable_steps"):
        if s.whole(name, 1) < 1:
            raise SessionFileError(f"settings.{name}: expected a whole number of at least 1")
    return options


def _setting(s: Reader, name: str, hint: Any) -> Any:
    """The setting ``name`` as its type ``hint`` says (a `SessionFileError` when it is not that)."""
    shape = hint
    if get_origin(hint) in (Union, UnionType):
        if s.data.get(name) is None:
            return None  # every union here is "something or None"
        shape = next(a for a in get_args(hint) if a is not type(None))
    origin = get_origin(shape)
    if origin is Literal:
        return s.choice(name, get_args(shape))
    if shape is bool:
        return s.flag(name)
    if shape is int:
        return s.whole(name)
    if shape is float:
        return s.real(name)
    if shape is str:
        return s.text(name)
    if origin in (dict, Mapping):
        value = s.raw_dict(name)
        if get_args(shape)[1] is str and not all(isinstance(v, str) for v in value.values()):
            raise SessionFileError(f"settings.{name}: expected text for each key")
        return value
    if get_args(shape)[:1] == (str,):
        return s.texts(name)
    return s.items(name)


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
        mode=r.choice("mode", get_args(ModeSetting), "auto"),
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


def expire_waiting(saved: SavedSession) -> list[str]:
    """Mark the edits that were waiting for review ``expired`` (what a load says of them, if any).

    An edit that was waiting comes back as data: the file may have changed since, so it is shown, never
    applied; the model can be asked for it again.
    """
    waiting = 0
    for reply in saved.replies:
        edits: list[ProposedChange] = []
        for edit in reply.pending:
            expired = isinstance(edit, SavedEdit) and edit.status == "pending"
            waiting += expired
            edits.append(replace(edit, status=EXPIRED) if isinstance(edit, SavedEdit) and expired else edit)
        reply.pending = edits
    if not waiting:
        return []
    return [
        f"{waiting} edit{'s' if waiting != 1 else ''} waited for review when the session was saved; "
        "a load never applies an edit (the file may have changed since). Ask for it again."
    ]
