"""A session on disk: written atomically, read within bounds, and the default place for it.

The thin I/O shell around :mod:`.document`. A save writes a temporary file in the target's folder and
renames it over the target (``os.replace``), so a crash, a full disk or a stopped kernel midway leaves
the previous file whole; the file is private to its owner (mode 0600), like the notebook's own data.
A load reads at most :data:`MAX_SESSION_BYTES`, refuses what is not a session this version can read
with a `SessionFileError` that says why, and only then builds the new session.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twinny_magics.sessions.document import (
    Restored,
    SavedSession,
    restore,
    session_document,
    session_from_json,
)
from twinny_magics.sessions.reading import SessionFileError

if TYPE_CHECKING:
    from twinny_magics.agent import Agent
    from twinny_magics.contracts import ModelServer
    from twinny_magics.servers.scripted import ReplayServer, ScriptedServer

#: The folder ``%agent save`` writes to, next to the notebook; the workspace tools never show it.
FOLDER = ".twinny_sessions"
#: A 12-reply session is well under 1 MB; 256 MB is far past any real one and still loads in seconds.
MAX_SESSION_BYTES = 256 * 1024 * 1024


def default_path(folder: str | os.PathLike[str]) -> Path:
    """A new file in ``folder``'s hidden sessions folder, named for now: ``20250101-120000.json``."""
    base = Path(folder) / FOLDER / time.strftime("%Y%m%d-%H%M%S")
    path, number = base.with_suffix(".json"), 1
    while path.exists():
        number += 1
        path = base.with_name(f"{base.name}-{number}.json")
    return path


def autosave_path(folder: str | os.PathLike[str]) -> Path:
    """A new session's own file in ``folder``'s hidden sessions folder: ``<time>-<6 hex digits>.json``.

    The random part keeps two sessions started in the same second (two notebooks in one folder) apart;
    the time first keeps the folder's listing in the order the sessions began.
    """
    name = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}.json"
    return _absolute(folder) / FOLDER / name


def in_folder(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file of ``folder``'s hidden sessions folder (an autosave may go on in it)."""
    return os.path.realpath(Path(path).parent) == os.path.realpath(Path(folder) / FOLDER)


def latest(folder: str | os.PathLike[str]) -> tuple[Path, str] | None:
    """The newest session file in ``folder``'s hidden sessions folder and when it was written, or None.

    Only the file's name and time are read (a load reads the rest): the folder is looked at before every
    new kernel's first reply, and a session file can be large.
    """
    found: list[tuple[float, Path]] = []
    try:
        with os.scandir(Path(folder) / FOLDER) as entries:
            for entry in entries:
                # Skipped: a save's temporary file (``.name.json.<random>.part``) and anything not a file.
                if entry.name.endswith(".json") and not entry.name.startswith(".") and entry.is_file():
                    found.append((entry.stat().st_mtime, Path(entry.path)))
    except OSError:
        return None
    if not found:
        return None
    when, path = max(found)
    return _absolute(path), time.strftime("%Y-%m-%d %H:%M", time.localtime(when))


def write_atomic(path: Path, chunks: Iterable[str]) -> None:
    """Write ``chunks`` to ``path`` through a temporary file in its folder: all of it, or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            for chunk in chunks:
                file.write(chunk)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _absolute(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(Path(path).expanduser()))


def json_lines(document: dict[str, Any]) -> Iterator[str]:
    """The document as JSON, a top-level field a line and a reply a line (a person can still read it).

    ASCII, so a lone surrogate a model wrote survives; C-encoded piece by piece, so a 50 MB session is
    written in well under a second and a failure part-way stops the write there.
    """
    encode = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode
    yield "{"
    for index, (key, value) in enumerate(document.items()):
        yield ("\n" if index == 0 else ",\n") + encode(key) + ":"
        if key == "replies" and isinstance(value, list) and value:
            yield "[" + ",".join("\n" + encode(reply) for reply in value) + "\n]"
        else:
            yield encode(value)
    yield "\n}\n"


def save(agent: Agent, path: str | os.PathLike[str]) -> Path:
    """Write ``agent``'s session to ``path`` (see :mod:`.document`); the path written."""
    target = _absolute(path)
    if target.is_dir():
        raise SessionFileError(f"{target} is a folder; give a file name, e.g. {target / 'session.json'}.")
    workspace = _absolute(agent.workspace)
    document = session_document(
        agent,
        saved_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        workspace=str(workspace),
        workspace_from_file=os.path.relpath(workspace, target.parent),
    )
    try:
        write_atomic(target, json_lines(document))
    except (OSError, TypeError, ValueError) as error:
        raise SessionFileError(
            f"Could not save the session to {target}: {error}. Any file that was there is unchanged."
        ) from error
    return target


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def read(path: str | os.PathLike[str]) -> SavedSession:
    """The session saved at ``path``, checked; a `SessionFileError` that says why when it is not one."""
    source = _absolute(path)
    try:
        size = source.stat().st_size
        if source.is_dir():
            raise SessionFileError(f"{source} is a folder; give the session's .json file.")
        if size > MAX_SESSION_BYTES:
            raise SessionFileError(
                f"{source} is {size / 1e6:,.0f} MB, more than a session can be "
                f"({MAX_SESSION_BYTES / 1e6:,.0f} MB); it is not a session file, or not one to load whole."
            )
        with source.open("rb") as file:
            raw = file.read(MAX_SESSION_BYTES + 1)
    except FileNotFoundError:
        raise SessionFileError(f"No session file at {source}.") from None
    except OSError as error:
        raise SessionFileError(f"Could not read {source}: {error}.") from None
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise SessionFileError(f"{source} is not a saved session: it is not UTF-8 text.") from None
    except json.JSONDecodeError as error:
        raise SessionFileError(
            f"{source} is not whole JSON ({error.msg} at line {error.lineno}, column {error.colno}): a save "
            "that did not finish, or a file edited by hand. Nothing was loaded; the file is left as it is."
        ) from None
    except (ValueError, RecursionError) as error:
        raise SessionFileError(f"{source} is not a saved session: {error}.") from None
    try:
        return session_from_json(data)
    except SessionFileError as error:
        raise SessionFileError(f"{source}: {error}. Nothing was loaded; the file is left as it is.") from None


def _workspace(saved: SavedSession, source: Path, given: Any) -> tuple[Path, list[str]]:
    """Where the loaded session works, and a notice when that is not where it was saved."""
    if given is not None:
        chosen = _absolute(given)
    else:
        beside = source.parent / saved.workspace_from_file if saved.workspace_from_file else None
        candidates = [p for p in (beside, Path(saved.workspace)) if p is not None and p.is_dir()]
        chosen = _absolute(candidates[0]) if candidates else Path.cwd()
    if os.path.realpath(chosen) == os.path.realpath(saved.workspace):
        return chosen, []
    return chosen, [
        f"The session was saved with the workspace {saved.workspace}; it now works in {chosen}. Paths in "
        "its calls, notes and edits are workspace-relative, so they now name files there."
    ]


def load(
    path: str | os.PathLike[str],
    *,
    factory: Callable[..., Agent],
    server: ModelServer | None = None,
    **options: Any,
) -> Agent:
    """A new session made by ``factory`` with the saved settings (``options`` override them), given the
    saved turns, notes and ratio.

    The server: ``server`` if given; else ``base_url``/``model``/``kind`` in ``options``; else the saved
    address (the embedded server has none: it is started afresh). The API key is never in the file.
    """
    source = _absolute(path)
    saved = read(source)
    for name in ("base_url", "model", "kind"):
        if options.get(name) is None:
            options.pop(name, None)  # unset (a magic passes its defaults): not a choice of server
    workspace, notices = _workspace(saved, source, options.pop("workspace", None))
    settings: dict[str, Any] = dict(saved.options)
    if server is not None:
        settings["server"] = server
    elif not options.keys() & {"base_url", "model", "kind"} and saved.server.base_url:
        settings.update(base_url=saved.server.base_url, kind=saved.server.kind, model=saved.server.model)
    agent = factory(**{**settings, **options, "workspace": workspace})
    restore(agent, saved, Restored(str(source), saved.saved_at, notices, saved.server.window, saved.mode))
    return agent


def snapshot(agent: Agent) -> SavedSession:
    """The session as a save would keep it (masked), without writing a file."""
    workspace = str(_absolute(agent.workspace))
    document = session_document(
        agent, saved_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), workspace=workspace, workspace_from_file=None
    )
    return session_from_json(document)


def export(agent: Agent, path: str | os.PathLike[str]) -> Path:
    """Write ``agent``'s session as a transcript: Markdown for ``.md``, one HTML page for ``.html``."""
    target = _absolute(path)
    suffix = target.suffix.lower()
    if suffix not in (".md", ".markdown", ".html", ".htm"):
        raise SessionFileError(
            f"{target.name}: export writes Markdown (a .md file) or HTML (a .html file); name one of those."
        )
    from twinny_magics.sessions import export as transcript  # noqa: PLC0415 - the display's renderers

    saved = snapshot(agent)
    text = (
        transcript.html_transcript(saved)
        if suffix in (".html", ".htm")
        else transcript.markdown_transcript(saved)
    )
    try:
        write_atomic(target, [text])
    except OSError as error:
        raise SessionFileError(
            f"Could not write {target}: {error}. Any file that was there is unchanged."
        ) from error
    return target


def replay_server(path: str | os.PathLike[str], counted_by: Any = None) -> ScriptedServer | ReplayServer:
    """A scripted server queued with the model replies saved at ``path``; with ``counted_by`` (a real
    server) each request is also counted by it (see :mod:`.replay`)."""
    from twinny_magics.sessions.replay import replay_server as scripted  # noqa: PLC0415

    return scripted(read(path), counted_by)
