"""A session on disk: written atomically, read within bounds, and the default place for it.

The thin I/O shell around :mod:`.document`. A save writes a temporary file in the target's folder and
renames it over the target (``os.replace``), so a crash, a full disk or a stopped kernel midway leaves
the previous file whole; the file is private to its owner (mode 0600), like the notebook's own data.
A load reads at most :data:`MAX_SESSION_BYTES` of a regular file (never a FIFO or a device, never a
link that leads out of the workspace), refuses what is not a session this version can read with a
`SessionFileError` that says why, and only then builds the new session.

A session file is data: a load brings back the conversation (turns, notes, the learned ratio, how the
replies ran) and nothing that widens what a reply may do, changes what the model is told or sends a
request elsewhere — those are the notebook's (see ``document.TAKEN``/``GUARDED``). The autosave folder is
written without following a link, so a ``.twinny_sessions`` planted as a link to elsewhere is refused.
The session itself (`Agent`) is never imported: it hands its record in and builds itself from one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twinny_magics.sessions.document import SavedSession, differences, session_document, session_from_json
from twinny_magics.sessions.reading import SessionFileError

if TYPE_CHECKING:
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
    return absolute(folder) / FOLDER / name


def in_folder(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file of ``folder``'s hidden sessions folder (an autosave may go on in it)."""
    return os.path.realpath(Path(path).parent) == os.path.realpath(Path(folder) / FOLDER)


def latest(folder: str | os.PathLike[str]) -> tuple[Path, str] | None:
    """The newest session file in ``folder``'s hidden sessions folder and when it was written, or None.

    Only the file's name and time are read (a load reads the rest): the folder is looked at before every
    new kernel's first reply, and a session file can be large.
    """
    found: list[tuple[float, Path]] = []
    sessions = Path(folder) / FOLDER
    if sessions.is_symlink():
        return None  # the folder itself is a link: not this workspace's sessions
    try:
        with os.scandir(sessions) as entries:
            for entry in entries:
                # Skipped: a save's temporary file (``.name.json.<random>.part``), anything not a file, and
                # links (a save never makes one: a link here was put by someone else).
                if (
                    entry.name.endswith(".json")
                    and not entry.name.startswith(".")
                    and entry.is_file(follow_symlinks=False)
                ):
                    found.append((entry.stat(follow_symlinks=False).st_mtime, Path(entry.path)))
    except OSError:
        return None
    if not found:
        return None
    when, path = max(found)
    return absolute(path), time.strftime("%Y-%m-%d %H:%M", time.localtime(when))


def write_atomic(path: Path, chunks: Iterable[str], *, follow_links: bool = True) -> None:
    """Write ``chunks`` to ``path`` through a temporary file in its folder: all of it, or nothing.

    ``follow_links=False``: the folder is opened without following a link (a link there is refused, also
    one swapped in after a check), and the file is made and renamed inside that opened folder.
    """
    folder = path.parent
    if follow_links:
        folder.mkdir(parents=True, exist_ok=True)
    else:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # a file or a link there: the open below says so
            folder.mkdir(exist_ok=True)
    flags = os.O_RDONLY | os.O_DIRECTORY | (0 if follow_links else os.O_NOFOLLOW)
    try:
        directory = os.open(folder, flags)
    except OSError as error:
        if not follow_links and folder.is_symlink():
            raise SessionFileError(
                f"{folder} is a link; sessions are not written through one (it may lead out of the "
                "workspace). Remove it, or save elsewhere with %agent save PATH."
            ) from error
        raise
    try:
        temporary = f".{path.name}.{secrets.token_hex(4)}.part"
        handle = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=directory
        )
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                for chunk in chunks:
                    file.write(chunk)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=directory)
            raise
    finally:
        os.close(directory)


def absolute(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute (``~`` expanded), links left as they are."""
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


def save(
    saved: SavedSession, path: str | os.PathLike[str], *, secret: str | None, follow_links: bool = True
) -> Path:
    """Write the session ``saved`` to ``path`` (see :mod:`.document`; ``secret`` is masked); the path written.

    The time and the workspace as seen from the file are filled in here. ``follow_links=False`` (the
    autosave): the file's folder is not reached through a link.
    """
    target = absolute(path)
    if target.is_dir():
        raise SessionFileError(f"{target} is a folder; give a file name, e.g. {target / 'session.json'}.")
    workspace = absolute(saved.workspace)
    saved = replace(
        saved,
        saved_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        workspace=str(workspace),
        workspace_from_file=os.path.relpath(workspace, target.parent),
    )
    try:
        write_atomic(target, json_lines(session_document(saved, secret=secret)), follow_links=follow_links)
    except SessionFileError:
        raise
    except (OSError, TypeError, ValueError) as error:
        raise SessionFileError(
            f"Could not save the session to {target}: {error}. Any file that was there is unchanged."
        ) from error
    return target


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _check_links(source: Path, workspace: Path) -> None:
    """Refuse a link — the file's name, or a folder between the workspace and it — that leads out of
    ``workspace``. A path the user names outside the workspace is theirs to name; a link is not."""
    real_workspace = os.path.realpath(workspace)
    linked = source.is_symlink()
    if _inside(str(source), str(workspace)):
        # Under the workspace by name: any link on the way (``.twinny_sessions`` itself) counts.
        linked = linked or not _inside(os.path.realpath(source.parent), real_workspace)
    if linked and not _inside(os.path.realpath(source), real_workspace):
        raise SessionFileError(
            f"{source} is a link to {os.path.realpath(source)}, outside the workspace {workspace}; a "
            "session is not loaded through a link that leads out. Name the file itself if you mean it. "
            "Nothing was read."
        )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def read(path: str | os.PathLike[str], *, workspace: str | os.PathLike[str] | None = None) -> SavedSession:
    """The session saved at ``path``, checked; a `SessionFileError` that says why when it is not one.

    Only a regular file is read (a FIFO would block the kernel, a device read to the cap). With
    ``workspace``, a link (the file's own name, or the sessions folder it is in) may lead only to a place
    inside it: a ``.twinny_sessions/`` file that came with a repository must not open the user's files.
    """
    source = absolute(path)
    if workspace is not None:
        _check_links(source, absolute(workspace))
    try:
        # Non-blocking, so a FIFO is not waited on; what it is is read from the open file, not the name.
        handle = os.open(source, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise SessionFileError(f"No session file at {source}.") from None
    except IsADirectoryError:
        raise SessionFileError(f"{source} is a folder; give the session's .json file.") from None
    except OSError as error:
        raise SessionFileError(f"Could not read {source}: {error.strerror or error}.") from None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            os.close(handle)
            if stat.S_ISDIR(info.st_mode):
                raise SessionFileError(f"{source} is a folder; give the session's .json file.")
            raise SessionFileError(
                f"{source} is not a regular file (a pipe, a socket or a device); a session is a .json "
                "file. Nothing was read."
            )
        with os.fdopen(handle, "rb") as file:
            if info.st_size > MAX_SESSION_BYTES:
                raise SessionFileError(
                    f"{source} is {info.st_size / 1e6:,.0f} MB, more than a session can be "
                    f"({MAX_SESSION_BYTES / 1e6:,.0f} MB); it is not a session file, or not one to load "
                    "whole."
                )
            raw = file.read(MAX_SESSION_BYTES + 1)
    except OSError as error:
        raise SessionFileError(f"Could not read {source}: {error.strerror or error}.") from None
    if len(raw) > MAX_SESSION_BYTES:
        raise SessionFileError(f"{source} grew past {MAX_SESSION_BYTES / 1e6:,.0f} MB while it was read.")
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


def load_notices(
    saved: SavedSession,
    *,
    source: Path,
    workspace: Path,
    base_url: str | None,
    own: dict[str, Any],
    taken: bool,
) -> list[str]:
    """What a load says before anything runs: another workspace, a saved server not used, and the guarded
    settings where the file differs from ``own`` (the session's own, as a save keeps them) — ``taken``
    (with ``--settings``) or left."""
    notices = _workspace_notice(saved, workspace) + _server_notice(saved, base_url, source)
    return notices + _settings_notice(saved, own, taken=taken, source=source)


def _workspace_notice(saved: SavedSession, workspace: Path) -> list[str]:
    if os.path.realpath(workspace) == os.path.realpath(saved.workspace):
        return []
    return [
        f"The session was saved with the workspace {saved.workspace}; it now works in {workspace} (a load "
        "never takes the workspace from the file). Paths in its calls, notes and edits are "
        "workspace-relative, so they now name files here."
    ]


def _server_notice(saved: SavedSession, base_url: str | None, source: Path) -> list[str]:
    server = saved.server
    if not server.base_url or server.base_url == base_url:
        return []
    what = " ".join(part for part in (server.kind, server.model) if part) or "a server"
    return [
        f"The session was saved talking to {what} at {server.base_url}. A load never uses a saved address "
        "(your API key would go to it): this session uses the notebook's server. To talk to that one, name "
        f"it: %agent load {shlex.quote(str(source))} --server {shlex.quote(server.base_url)} (or "
        "Agent.load(path, base_url=...))."
    ]


def _settings_notice(saved: SavedSession, own: dict[str, Any], *, taken: bool, source: Path) -> list[str]:
    """The guarded settings where the file differs from the session's own: taken (listed before anything
    runs) or left (and how to take them)."""
    differing = differences(saved, own)
    if not differing:
        return []
    listed = "; ".join(f"{name} {_shown(value)} (yours: {_shown(mine)})" for name, value, mine in differing)
    if taken:
        return [
            f"Taken from the session file, as asked (--settings): {listed}. Check them before you run a "
            "cell: they decide what a reply may do and what the model is told."
        ]
    names = ", ".join(name for name, _, _ in differing)
    return [
        f"The session file's own {names} {'were' if len(differing) > 1 else 'was'} not taken: what replies "
        "may do and what the model is told stay this notebook's. To take them, load with --settings "
        f"(%agent load {shlex.quote(str(source))} --settings; Agent.load(path, settings=True)); they will "
        f"be listed first. In the file: {listed}."
    ]


def _shown(value: Any) -> str:
    """A setting's value, short and on one line (a prompt can be pages long)."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 80 else text[:79] + "…"


def snapshot(saved: SavedSession, *, secret: str | None) -> SavedSession:
    """The session as a save would keep it (masked), without writing a file."""
    saved = replace(saved, saved_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), workspace_from_file=None)
    return session_from_json(session_document(saved, secret=secret))


def transcript_target(path: str | os.PathLike[str]) -> tuple[Path, bool]:
    """Where a transcript goes, and whether it is HTML (``.html``) rather than Markdown (``.md``)."""
    target = absolute(path)
    suffix = target.suffix.lower()
    if suffix not in (".md", ".markdown", ".html", ".htm"):
        raise SessionFileError(
            f"{target.name}: export writes Markdown (a .md file) or HTML (a .html file); name one of those."
        )
    return target, suffix in (".html", ".htm")


def write_transcript(target: Path, text: str) -> Path:
    """Write a transcript (atomically); the path written."""
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
