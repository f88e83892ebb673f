"""Opening a workspace file or folder without following links, once its path passed the rules of `paths`.

`Target` is a path that passed them and `Entry` a file or folder a walk found; `open_file`,
`read_bytes`, `open_folder` and `same_folder` open them.

Opening is fd-relative (`open_file`, `open_folder`, `Confinement.hold`): from the root, every folder
on the way is opened with ``O_NOFOLLOW`` and the file itself with ``O_NOFOLLOW | O_NONBLOCK``, so a
symlink swapped in between the check and the open makes the open fail instead of leading elsewhere, and
a pipe swapped in cannot block. A walk lists each folder through such a descriptor and holds it while it
yields that folder's files, which are then opened with one ``openat`` each (cheaper than opening by
path). The opened file must be a regular file with one name: a hard link may be the other name of a file
outside the workspace, and nothing tells where that other name is, so such files are refused for reading
and editing (``st_nlink > 1``).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from twinny_magics.errors import WorkspaceError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
# Whether files can be opened fd-relative without following links (every POSIX system Python runs on).
FD_RELATIVE = bool(_NOFOLLOW and getattr(os, "O_DIRECTORY", 0)) and os.open in os.supports_dir_fd


@dataclass(frozen=True)
class Target:
    """A path the model asked for, once it passed the rules.

    ``real`` is the resolved absolute path (for I/O only, never shown); ``rel`` its workspace-relative
    POSIX name ("." for the root), which is what messages say; ``root`` the workspace root that
    `open_file` opens from (without it, from the file system's root).
    """

    real: Path
    rel: str
    root: Path | None = field(default=None, compare=False, repr=False)

    def child(self, name: str) -> str:
        """The relative name of an entry inside this directory."""
        return name if self.rel == "." else f"{self.rel}/{name}"


class FolderHandle:
    """A folder a walk holds open (by a descriptor reached with no symlink followed) while it yields
    that folder's files, so that `open_file` opens each of them with one ``openat``. Closed when the
    walk moves on; a closed handle is never used again (its number may belong to another file)."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def close(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)


@dataclass(frozen=True)
class Entry:
    """One visible file or folder found by a walk."""

    real: Path
    rel: str
    is_dir: bool
    link: bool = False
    root: Path | None = field(default=None, compare=False, repr=False)
    folder: FolderHandle | None = field(default=None, compare=False, repr=False)


def open_file(file: Target | Entry) -> io.BufferedReader:
    """``file`` opened for reading, fd-relative from the workspace root with no symlink followed.

    A `WorkspaceError` (in workspace terms) when a symlink was swapped into its path since it was
    resolved, when it is not a regular file (a pipe would block), or when it has other names (hard
    links) that may lie outside the workspace.
    """
    fd = _open_regular(file, os.O_RDONLY | _NONBLOCK)
    try:
        _check_regular(file.rel, os.fstat(fd))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(file: Target | Entry) -> bytes:
    """All of ``file``'s bytes, read through `open_file`."""
    with open_file(file) as handle:
        return handle.read()


def open_folder(file: Target, *, create: bool = False) -> int:
    """A file descriptor of ``file``'s folder, opened from the root with no symlink followed.

    With ``create``, missing folders on the way are made (as ``mkdir -p`` would, but never through a
    link). The caller closes it.
    """
    root, parts = _split(file)
    return open_chain(root, parts[:-1], create=create, name=file.rel)


def same_folder(file: Target, fd: int) -> bool:
    """Whether ``file``'s folder, opened again from the root, is still the folder ``fd`` is open on."""
    try:
        again = open_folder(file)
    except (OSError, WorkspaceError):
        return False
    try:
        now, then = os.fstat(again), os.fstat(fd)
    finally:
        os.close(again)
    return (now.st_dev, now.st_ino) == (then.st_dev, then.st_ino)


def hard_link_message(name: str, links: int) -> str:
    """Why a file with several names is not used."""
    return (
        f"{name} has {links} names (it is hard-linked): the other names may be outside the workspace and "
        "there is no way to tell where, so the tools do not read or change it. Ask the user to copy it "
        "if it is needed."
    )


def swapped_message(name: str) -> str:
    """Why an open failed because a link appeared on the path after it was checked."""
    return (
        f"{name} changed while it was being opened (a symbolic link appeared on its path), so it was not "
        "used. Look at it again with list_dir."
    )


def _check_regular(name: str, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(f"{name} is not a regular file (a pipe, socket or device); it cannot be used.")
    if info.st_nlink > 1:
        raise WorkspaceError(hard_link_message(name, info.st_nlink))


def _split(file: Target | Entry) -> tuple[str, list[str]]:
    """The folder to open from and the names to open one by one from there (plain string work:
    this runs for every file a grep reads)."""
    real = str(file.real)
    root = str(file.root) if file.root is not None else ""
    if root and real == root:
        return root, []
    if root and real.startswith(root.rstrip(os.sep) + os.sep):
        return root, real[len(root.rstrip(os.sep)) + 1 :].split(os.sep)
    anchor = file.real.anchor
    return anchor, [part for part in real[len(anchor) :].split(os.sep) if part]


def _open_regular(file: Target | Entry, flags: int) -> int:
    held = file.folder.fd if isinstance(file, Entry) and file.folder is not None else None
    if held is not None and FD_RELATIVE:
        try:
            return os.open(file.real.name, flags | _NOFOLLOW | _CLOEXEC, dir_fd=held)
        except OSError as exc:
            raise WorkspaceError(_open_message(file.rel, exc)) from None
    root, parts = _split(file)
    if not parts:
        raise WorkspaceError(f"{file.rel} is a folder; use list_dir to see what is in it.")
    if not FD_RELATIVE:  # no fd-relative opening here: open the path, then check it is the same file
        try:
            before = os.stat(file.real, follow_symlinks=False)
            fd = os.open(file.real, flags | _CLOEXEC | getattr(os, "O_BINARY", 0))
        except OSError as exc:
            raise WorkspaceError(os_message(file.rel, exc)) from None
        after = os.fstat(fd)
        if (before.st_dev, before.st_ino) != (after.st_dev, after.st_ino):
            os.close(fd)
            raise WorkspaceError(swapped_message(file.rel))
        return fd
    folder = open_chain(root, parts[:-1], create=False, name=file.rel)
    try:
        return os.open(parts[-1], flags | _NOFOLLOW | _CLOEXEC, dir_fd=folder)
    except OSError as exc:
        raise WorkspaceError(_open_message(file.rel, exc)) from None
    finally:
        os.close(folder)


def open_chain(root: str, parts: Sequence[str], *, create: bool, name: str) -> int:
    """The folder ``root/parts…`` opened one name at a time, never through a symlink."""
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise WorkspaceError(_open_message(name, exc)) from None
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            following = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = following
    except OSError as exc:
        os.close(fd)
        raise WorkspaceError(_open_message(name, exc)) from None
    return fd


def _open_message(name: str, exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
        return swapped_message(name)
    if exc.errno == errno.ENOENT:
        return f"{name} does not exist (it was removed meanwhile). list_dir shows what is there."
    return os_message(name, exc)


def os_message(name: str, exc: OSError) -> str:
    """An OSError as the model reads it: the reason only, since ``str(exc)`` holds the absolute path."""
    if exc.errno == errno.ENAMETOOLONG:
        return f"{name} is too long for the file system; give a shorter path."
    if exc.errno == errno.ELOOP:
        return f"{name} is a symbolic link loop; it cannot be used."
    return f"{name} cannot be used: {exc.strerror or type(exc).__name__}."
