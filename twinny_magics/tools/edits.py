"""edit_file and create_file: a change is computed first, then either held for review or written.

A `Change` is pure data (old bytes, new bytes, diff). In ``review`` mode it becomes a `PendingEdit` and
nothing touches the disk until the user applies it; in ``apply`` mode it is written at once. Either way
the write is atomic (a temporary file in the same folder, then ``os.replace``) and keeps the file's
mode, so a crash or a stopped kernel never leaves half a file. The write goes through file descriptors
(`write_file`): the folder is opened from the workspace root with no symlink followed, the temporary
file is made in it by ``dir_fd`` and renamed there by ``dir_fd``, and the folder is checked to be still
the one at that path just before — so a link or a folder swapped in meanwhile cannot send the write
outside the workspace. A file that is no longer a regular file (a pipe swapped in) is refused before it
is opened, and a hard-linked one is never changed.

Some paths are never written, under ``review`` and ``apply`` alike: modules Python would import in
place of another, start-up hooks, ignore files and the like (`denied.write_refusal`). They are refused
when the change is asked for and checked again when it is applied.

A pending edit remembers the hash of the file it was computed against. Applying it re-checks that hash
(and re-resolves the path), so a file changed meanwhile — by the user, a command, or another pending
edit to the same file that was applied first — is refused as a conflict instead of being overwritten.
Two pending edits to one file are therefore both computed against the disk, and only the first applied
wins; the second must be asked for again.

A pending edit is settled in one place, `PendingEdit.settle` (or `settle` for a change of another
toolset): the session's ``settle`` (``%agent apply``) and the display's Apply/Discard buttons both call
it. It holds the edit's lock, so two settling it at once apply it once (the other is told it is
"Already applied."), and turns a conflict or an OS error into the message the user reads.

``find`` is matched against the file as the tools show it, secrets masked (`files.shown_text`), and the
change is made at the same place of the real text only where the match is the file's own text
(`matching.own_text`); an edit that touches a hidden value is refused whatever ``find`` holds. Matched against
the real text, an edit was an oracle: whether ``API_KEY = "a8`` matched told the model the value's start.

Notebooks are refused: JupyterLab may have the file open with unsaved changes, and a write under it
loses them or clashes with them; the model is told to show the user the new cell instead.
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import os
import secrets
import stat
import threading
from collections.abc import Collection
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from twinny_magics.contracts import Settles
from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import MASK
from twinny_magics.tools import grep
from twinny_magics.tools.base import ToolLimits
from twinny_magics.tools.files import BINARY_SNIFF_BYTES, looks_binary, require, shown_text
from twinny_magics.tools.leftovers import renamed_function, still_there, used_elsewhere
from twinny_magics.tools.matching import in_file, match, own_text
from twinny_magics.tools.opening import (
    Target,
    hard_link_message,
    open_folder,
    read_bytes,
    same_folder,
    swapped_message,
)
from twinny_magics.tools.paths import Confinement

if TYPE_CHECKING:
    from twinny_magics.contracts import PendingChange

EditStatus = Literal["pending", "applied", "discarded", "conflict", "refused"]
# What the model sees of a diff; the full diff stays on the PendingEdit for the user's review.
DIFF_LINES_SHOWN = 60


@dataclass(frozen=True)
class Change:
    """A computed edit: the file's bytes before (None for a new file) and after, and the diff."""

    target: Target
    old: bytes | None
    new: bytes
    diff: str
    note: str = ""
    #: Where a name the edit renamed is still used in the file ('' for nowhere; also in ``note``).
    left: str = ""


class PendingEdit:
    """An edit waiting for the user's review; see the module docstring for conflicts."""

    def __init__(self, conf: Confinement, change: Change) -> None:
        self.path = change.target.rel
        self.diff = change.diff
        self.status: EditStatus = "pending"
        #: What settling it said ("Applied the edit to a.py.", a conflict...); "" until it is settled.
        self.message = ""
        # Settling, applying and discarding take it: one edit is written or dropped once, whoever asks.
        self._lock = threading.RLock()
        self._conf = conf
        self._real = change.target.real
        self._digest = _digest(change.old)
        self._new = change.new

    @property
    def creates(self) -> bool:
        """Whether applying it makes a new file."""
        return self._digest is None

    def apply(self) -> str:
        """Write the edit to disk (atomically); a `WorkspaceError` if the file changed since.

        The path is resolved and checked again (it may have become hidden, a link, or a name Python
        would import since the edit was proposed); a refused edit is marked ``refused``, one made
        against another version of the file ``conflict``.
        """
        with self._lock:
            return self._apply()

    def _apply(self) -> str:
        if self.status != "pending":
            raise WorkspaceError(f"The edit to {self.path} was already {self.status}.")
        self._conf.refresh()
        try:
            target: Target | None = self._conf.resolve(self.path)
        except WorkspaceError:
            target = None
        if target is None or target.real != self._real:
            self.status = "conflict"
            raise WorkspaceError(_conflict_message(self.path))
        try:
            refuse_write(self._conf, target, "The edit")
            write_file(target, self._new, expected=self._digest)
        except _Changed:
            self.status = "conflict"
            raise WorkspaceError(_conflict_message(self.path)) from None
        except WorkspaceError:
            self.status = "refused"
            raise
        self.status = "applied"
        return f"Applied the edit to {self.path}." if not self.creates else f"Created {self.path}."

    def discard(self) -> None:
        """Drop the edit without touching the disk (a no-op unless it is pending)."""
        with self._lock:
            if self.status == "pending":
                self.status = "discarded"

    def settle(self, apply: bool) -> str:
        """Apply or discard the edit; what happened (a conflict is reported, not raised). Thread-safe."""
        with self._lock:
            was = self.status
            message = settle_message(self, apply=apply)
            if was == "pending":
                self.message = message
            return message

    def __repr__(self) -> str:
        return f"<PendingEdit {self.path} {self.status}>"


# A change of another toolset has no lock of its own: settling one takes this one.
_SETTLING = threading.Lock()


def settle(change: PendingChange, *, apply: bool) -> str:
    """Apply or discard ``change``, under its lock; what the user is told (see `settle_message`)."""
    if isinstance(change, Settles):
        return change.settle(apply)
    with _SETTLING:
        return settle_message(change, apply=apply)


def settle_message(change: PendingChange, *, apply: bool) -> str:
    """Apply or discard ``change`` (the caller holds its lock); what happened, as the user reads it.

    A change no longer pending says ``Already applied.`` (discarded...); a conflict, a refused write or
    an OS error is reported as its message, never raised.
    """
    if change.status != "pending":
        return f"Already {change.status}."
    if not apply:
        change.discard()
        return f"Discarded the edit to {change.path}."
    try:
        return str(change.apply())
    except (WorkspaceError, OSError) as error:
        return str(error)


class _Changed(WorkspaceError):
    """The file on disk is not the one the edit was computed against."""


def _conflict_message(rel: str) -> str:
    return (
        f"{rel} changed on disk since this edit was proposed, so it was not applied. "
        "Ask for the edit again against the current file."
    )


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def write_file(target: Target, data: bytes, *, expected: str | None) -> None:
    """Replace ``target`` by ``data`` atomically, by file descriptors (see the module docstring).

    ``expected`` is the sha256 of the file the change was computed against, or None for a new file
    (which must still not exist). Raises `_Changed` when the file is not that one any more, and a
    `WorkspaceError` when the path was tampered with (a link or folder swapped in, a pipe, a hard link).
    The file keeps its mode; a new one gets the umask's.
    """
    name = target.real.name
    folder = open_folder(target, create=expected is None)
    try:
        before = _lstat(name, folder)
        if before is None:
            if expected is not None:
                raise _Changed(target.rel)
            mode = 0o666 & ~_umask()
        else:
            if expected is None:
                raise _Changed(target.rel)
            _check_old(target.rel, before)
            if _digest(_read_at(target.rel, name, folder, before)) != expected:
                raise _Changed(target.rel)
            mode = stat.S_IMODE(before.st_mode)
        temp = f".{name[:80]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            # The last look before the rename: the same folder at that path, the same file in it.
            if not same_folder(target, folder):
                raise WorkspaceError(
                    f"The folder of {target.rel} was moved or replaced while the edit was being written, "
                    "so it was not applied."
                )
            if _identity(_lstat(name, folder)) != _identity(before):
                raise _Changed(target.rel)
            if before is None:
                _link_new(temp, name, folder, target.rel)
            else:
                os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            raise
        with suppress(OSError):
            os.fsync(folder)  # the rename itself survives a crash
    finally:
        os.close(folder)


def _lstat(name: str, folder: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _identity(info: os.stat_result | None) -> tuple[int, ...] | None:
    if info is None:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_nlink, info.st_mode)


def _check_old(rel: str, info: os.stat_result) -> None:
    """The file to be replaced must be a regular file with one name: checked before it is opened."""
    if stat.S_ISLNK(info.st_mode):
        raise WorkspaceError(swapped_message(rel))
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(
            f"{rel} is no longer a regular file (a folder, pipe, socket or device is there now), so the "
            "edit was not applied."
        )
    if info.st_nlink > 1:
        raise WorkspaceError(hard_link_message(rel, info.st_nlink))


def _read_at(rel: str, name: str, folder: int, before: os.stat_result) -> bytes:
    """The file's bytes, opened in ``folder`` without following a link or blocking on a pipe."""
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise WorkspaceError(swapped_message(rel)) from None
        raise _Changed(rel) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino) or not stat.S_ISREG(info.st_mode):
            raise _Changed(rel)
        return handle.read()


def _link_new(temp: str, name: str, folder: int, rel: str) -> None:
    """Give the finished temporary file its name, failing if that name appeared meanwhile."""
    try:
        os.link(temp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    except FileExistsError:
        raise _Changed(rel) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        # No hard links on this file system: the name was absent a moment ago, so rename over it.
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        return
    os.unlink(temp, dir_fd=folder)


def _umask() -> int:
    """The process umask, read without setting it (os.umask would race with other threads)."""
    with suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


# --- computing changes ----------------------------------------------------------------------------


def refuse_notebook(target: Target, tool: str) -> None:
    """Notebooks are never rewritten by tools (see the module docstring)."""
    if target.real.suffix == ".ipynb":
        raise WorkspaceError(
            f"{tool} does not change notebooks ({target.rel}): the notebook may be open with unsaved work. "
            "Show the user the new cell source to paste in, or put the code in a .py file with create_file."
        )


def refuse_write(conf: Confinement, target: Target, tool: str) -> None:
    """A `WorkspaceError` saying why, when ``target`` is a path the tools never write (`denied`)."""
    refusal = conf.write_refusal(target)
    if refusal is not None:
        reason, instead = refusal
        raise WorkspaceError(f"{tool} was refused for {target.rel}: {reason} {instead}")


def edit_change(
    conf: Confinement,
    limits: ToolLimits,
    path: str,
    find: str,
    replace: str,
    *,
    request: Collection[str] = (),
    asked: str = "",
) -> Change:
    """The change replacing the one occurrence of ``find`` by ``replace``, or why it cannot be made
    (``request``: the words of the user's request, which pick one of several matches; see `match`;
    ``asked``: the request as written, for what the edit leaves; see `still_there`)."""
    target = require(conf, path, limits, want="file", missing_hint=" To make a new file, use create_file.")
    refuse_notebook(target, "edit_file")
    refuse_write(conf, target, "edit_file")
    if not find:
        raise WorkspaceError(
            "find is empty: give the exact text to replace (to make a new file, use create_file)."
        )
    if find == replace:
        raise WorkspaceError("find and replace are the same, so nothing would change.")
    old = read_bytes(target)
    content = _decode(target, old)
    if "\r\n" in content and "\r" not in find:
        # The model writes \n; a Windows-style file stores \r\n. Match it the way the file is written.
        find, replace = find.replace("\n", "\r\n"), replace.replace("\n", "\r\n")
    # find is matched against the file as read_file shows it, secrets masked: matched against the real
    # text, an edit whose find held a guess at a hidden value was made (or counted, or suggested) only
    # when the guess was right. A match in text the tools show is then made at the same place of the
    # real text; one that touches a hidden value is refused, whatever find holds.
    seen = shown_text(content)
    start, end, replacement, note = match(target.rel, seen, find, replace, request)
    # The file as the tools show it after the edit (masking keeps every line where it is).
    left = still_there(find, replacement, seen[:start] + replacement + seen[end:], target.rel, request, asked)
    if (rename := renamed_function(find, replacement)) is not None:
        elsewhere = _used_elsewhere(conf, limits, rename, target.rel)
        left = f"{left}; {elsewhere}" if left and elsewhere else left or elsewhere
    if seen != content:
        span = in_file(own_text(content, seen), start, end)
        if span is None:
            raise WorkspaceError(
                f"find touches a value the tools hid from you in {target.rel} (shown as {MASK}), and "
                "edit_file does not change hidden values. Change only the text around it, or ask the "
                "user to change it."
            )
        start, end = span
    new = content[:start] + replacement + content[end:]
    diff = unified_diff(target.rel, content, new)
    return Change(target, old, new.encode("utf-8"), diff, note + (f" ({left})" if left else ""), left)


def _used_elsewhere(conf: Confinement, limits: ToolLimits, rename: tuple[str, str], rel: str) -> str:
    """Where a renamed function is still used in the other files, found by grep (see `used_elsewhere`)."""
    old, new = rename
    try:
        rows = grep.grep(conf, limits, rf"\b{old}\b", None).splitlines()
    except WorkspaceError:
        return ""
    return used_elsewhere(old, new, rows, rel)


def create_change(conf: Confinement, path: str, content: str) -> Change:
    """The change making a new file, or why it cannot be made (it exists, a parent is a file…)."""
    target = conf.resolve(path)
    refuse_notebook(target, "create_file")
    if target.rel == ".":
        raise WorkspaceError("create_file needs a file name, like notes/todo.md.")
    refuse_write(conf, target, "create_file")
    if target.real.is_dir():
        raise WorkspaceError(f"{target.rel} is a folder; give a file name inside it.")
    if target.real.exists():
        raise WorkspaceError(f"{target.rel} already exists; use edit_file to change it (read_file shows it).")
    for parent in target.real.parents:
        if parent == conf.root:
            break
        if parent.exists() and not parent.is_dir():
            name = parent.relative_to(conf.root).as_posix()
            raise WorkspaceError(f"{name} is a file, so {target.rel} cannot be created inside it.")
    return Change(target, None, content.encode("utf-8"), unified_diff(target.rel, None, content))


def _decode(target: Target, data: bytes) -> str:
    if looks_binary(data[:BINARY_SNIFF_BYTES]):
        raise WorkspaceError(f"{target.rel} is a binary file; edit_file changes text files only.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkspaceError(
            f"{target.rel} is not UTF-8 text, so edit_file cannot change it safely."
        ) from None


def unified_diff(rel: str, old: str | None, new: str) -> str:
    """A unified diff of the change, with a note where a side has no final newline."""
    before = old.splitlines(keepends=True) if old is not None else []
    after = new.splitlines(keepends=True)
    lines = difflib.unified_diff(
        before, after, fromfile="/dev/null" if old is None else f"a/{rel}", tofile=f"b/{rel}", n=3
    )
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line.rstrip("\r\n"))
        else:
            out.extend([line.rstrip("\r"), "\\ No newline at end of file"])
    return "\n".join(out) + "\n"


def short_diff(diff: str) -> str:
    """The diff as the model sees it: at most `DIFF_LINES_SHOWN` lines."""
    lines = diff.rstrip("\n").split("\n")
    if len(lines) <= DIFF_LINES_SHOWN:
        return "\n".join(lines)
    return "\n".join([*lines[:DIFF_LINES_SHOWN], f"[… {len(lines) - DIFF_LINES_SHOWN} more diff lines]"])
