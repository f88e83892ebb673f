"""The fresh copies: the workspace copied once when an experiment starts, then once for every run.

Copying once first refuses a workspace that cannot be copied (a named pipe, an unreadable file, too much
to copy for every run) before anything runs, and keeps the runs to what the folder held when the
experiment started, whatever is edited there meanwhile. A snapshot of every file (size, mtime, a digest;
a link by its target, a named pipe or other special file by its kind, never opened) says afterwards
which files a run changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from stat import S_IFMT, S_ISLNK, S_ISREG

#: Folders never copied: the tools never show them, and a repository's history can be large.
SKIPPED = (".git", ".ipynb_checkpoints")
#: A workspace is copied for every run; past these it is refused (point ``workspace=`` at a project).
MAX_WORKSPACE_BYTES = 200_000_000
MAX_WORKSPACE_FILES = 20_000


@dataclass(frozen=True)
class _Entry:
    size: int
    mtime_ns: int
    digest: str


Snapshot = dict[str, _Entry]


@contextlib.contextmanager
def template(workspace: Path) -> Iterator[tuple[Path, Snapshot]]:
    """A copy of the workspace taken once (refused when it cannot be made), and what it holds."""
    if not workspace.is_dir():
        raise ValueError(f"The workspace {workspace} is not a folder.")
    files, size = _measure(workspace)
    if files > MAX_WORKSPACE_FILES or size > MAX_WORKSPACE_BYTES:
        raise ValueError(
            f"The workspace {workspace} holds {files:,} files, {size / 1e6:,.0f} MB: too much to copy for "
            f"every run (at most {MAX_WORKSPACE_FILES:,} files, {MAX_WORKSPACE_BYTES / 1e6:,.0f} MB). "
            "Point workspace= at the project's folder."
        )
    folder = Path(tempfile.mkdtemp(prefix="twinny-experiment-"))
    template = folder / "workspace"
    try:
        try:
            shutil.copytree(workspace, template, symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED))
        except shutil.Error as error:
            problems = error.args[0] if error.args and isinstance(error.args[0], list) else [error]
            shown = "; ".join(_problem(p) for p in problems[:3])
            raise ValueError(f"The workspace {workspace} cannot be copied for the runs: {shown}.") from None
        except OSError as error:
            raise ValueError(
                f"The workspace {workspace} cannot be copied for the runs: {error.strerror or error}."
            ) from None
        yield template, snapshot(template)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def fresh_copy(template: Path) -> Iterator[Path]:
    """A copy of ``template`` for one run, removed when the run is over."""
    folder = Path(tempfile.mkdtemp(prefix="twinny-run-"))
    try:
        copy = folder / "workspace"
        shutil.copytree(template, copy, symlinks=True)
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _problem(problem: object) -> str:
    if isinstance(problem, tuple) and len(problem) == 3:
        return f"{problem[0]}: {problem[2]}"
    return str(problem)


def _measure(root: Path) -> tuple[int, int]:
    files = size = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED]
        for name in names:
            files += 1
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(folder, name)).st_size
        if files > MAX_WORKSPACE_FILES:
            break
    return files, size


def snapshot(root: Path, earlier: Snapshot | None = None) -> Snapshot:
    """Every file under ``root``: size, mtime, digest (kept from ``earlier`` when size and mtime match)."""
    found: Snapshot = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]  # a command that ran Python leaves these
        for name in names:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            try:
                stat = os.lstat(path)
            except OSError:
                continue
            known = (earlier or {}).get(relative)
            if known is not None and known.size == stat.st_size and known.mtime_ns == stat.st_mtime_ns:
                found[relative] = known
                continue
            found[relative] = _Entry(stat.st_size, stat.st_mtime_ns, _digest(path, stat.st_mode))
    return found


def _digest(path: str, mode: int) -> str:
    """What a file holds, for telling whether it changed: its bytes' digest, a link's target, or the
    kind of a special file (a named pipe a run's command made would block a read: it is never opened)."""
    try:
        if S_ISLNK(mode):
            return "link:" + os.readlink(path)
        if not S_ISREG(mode):
            return f"special:{S_IFMT(mode):o}"
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as file:
            if not S_ISREG(os.fstat(file.fileno()).st_mode):  # swapped since it was looked at
                return "special:swapped"
            return hashlib.sha256(file.read()).hexdigest()
    except OSError as error:
        return f"unreadable:{error.errno}"


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """``M path``, ``A path``, ``D path`` for each file that differs, in path order."""
    out = []
    for path in sorted(set(before) | set(after)):
        if path not in after:
            out.append(f"D {path}")
        elif path not in before:
            out.append(f"A {path}")
        elif before[path].digest != after[path].digest:
            out.append(f"M {path}")
    return out
