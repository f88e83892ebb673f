"""edit_file and create_file: a change is computed first, then either held for review or written.

A `Change` is pure data (old bytes, new bytes, diff). In ``review`` mode it becomes a `PendingEdit` and
nothing touches the disk until the user applies it; in ``apply`` mode it is written at once. Either way
the write is atomic (a temporary file in the same folder, then ``os.replace``) and keeps the file's
mode, so a crash or a stopped kernel never leaves half a file.

A pending edit remembers the hash of the file it was computed against. Applying it re-checks that hash
(and re-resolves the path), so a file changed meanwhile — by the user, a command, or another pending
edit to the same file that was applied first — is refused as a conflict instead of being overwritten.
Two pending edits to one file are therefore both computed against the disk, and only the first applied
wins; the second must be asked for again.

Notebooks are refused: JupyterLab may have the file open with unsaved changes, and a write under it
loses them or clashes with them; the model is told to show the user the new cell instead.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import stat
import tempfile
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from twinny_magics.errors import WorkspaceError
from twinny_magics.tools.base import ToolLimits, cut_line
from twinny_magics.tools.files import is_binary, require
from twinny_magics.tools.paths import Confinement, Target

EditStatus = Literal["pending", "applied", "discarded", "conflict"]
# What the model sees of a diff; the full diff stays on the PendingEdit for the user's review.
DIFF_LINES_SHOWN = 60
_NUMBERED = re.compile(r"^\s*\d+: ")


@dataclass(frozen=True)
class Change:
    """A computed edit: the file's bytes before (None for a new file) and after, and the diff."""

    target: Target
    old: bytes | None
    new: bytes
    diff: str
    note: str = ""


class PendingEdit:
    """An edit waiting for the user's review; see the module docstring for conflicts."""

    def __init__(self, conf: Confinement, change: Change) -> None:
        self.path = change.target.rel
        self.diff = change.diff
        self.status: EditStatus = "pending"
        self._conf = conf
        self._real = change.target.real
        self._digest = _digest(change.old)
        self._new = change.new

    @property
    def creates(self) -> bool:
        """Whether applying it makes a new file."""
        return self._digest is None

    def apply(self) -> str:
        """Write the edit to disk (atomically); a `WorkspaceError` if the file changed since."""
        if self.status != "pending":
            raise WorkspaceError(f"The edit to {self.path} was already {self.status}.")
        self._conf.refresh()
        try:
            same_place = self._conf.resolve(self.path).real == self._real
        except WorkspaceError:
            same_place = False
        if not same_place or _digest(_read_bytes(self._real)) != self._digest:
            self.status = "conflict"
            raise WorkspaceError(
                f"{self.path} changed on disk since this edit was proposed, so it was not applied. "
                "Ask for the edit again against the current file."
            )
        if self.creates:
            self._real.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self._real, self._new)
        self.status = "applied"
        return f"Applied the edit to {self.path}." if not self.creates else f"Created {self.path}."

    def discard(self) -> None:
        """Drop the edit without touching the disk (a no-op unless it is pending)."""
        if self.status == "pending":
            self.status = "discarded"

    def __repr__(self) -> str:
        return f"<PendingEdit {self.path} {self.status}>"


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` in one step, keeping its mode (new files get the umask's mode)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:80]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


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


def edit_change(conf: Confinement, limits: ToolLimits, path: str, find: str, replace: str) -> Change:
    """The change replacing the one occurrence of ``find`` by ``replace``, or why it cannot be made."""
    target = require(conf, path, limits, want="file", missing_hint=" To make a new file, use create_file.")
    refuse_notebook(target, "edit_file")
    if not find:
        raise WorkspaceError(
            "find is empty: give the exact text to replace (to make a new file, use create_file)."
        )
    if find == replace:
        raise WorkspaceError("find and replace are the same, so nothing would change.")
    old = target.real.read_bytes()
    content = _decode(target, old)
    if "\r\n" in content and "\r" not in find:
        # The model writes \n; a Windows-style file stores \r\n. Match it the way the file is written.
        find, replace = find.replace("\n", "\r\n"), replace.replace("\n", "\r\n")
    count = content.count(find)
    note = ""
    if count == 1:
        start = content.index(find)
        new = content[:start] + replace + content[start + len(find) :]
    elif count > 1:
        lines = _line_numbers(content, [m.start() for m in re.finditer(re.escape(find), content)])
        raise WorkspaceError(
            f"find matches {count} times in {target.rel}; it must match exactly once. Add a neighbouring "
            f"line to find so it is unique. The matches start at:\n{_show_lines(content, lines)}"
        )
    else:
        spans = _loose_spans(content, find)
        if len(spans) != 1:
            raise WorkspaceError(_not_found(target.rel, content, find, spans))
        start, end = spans[0]
        new = content[:start] + _reindent(replace, find, content, start) + content[end:]
        note = " (find matched only when ignoring differences in whitespace and indentation)"
    return Change(target, old, new.encode("utf-8"), unified_diff(target.rel, content, new), note)


def create_change(conf: Confinement, path: str, content: str) -> Change:
    """The change making a new file, or why it cannot be made (it exists, a parent is a file…)."""
    target = conf.resolve(path)
    refuse_notebook(target, "create_file")
    if target.rel == ".":
        raise WorkspaceError("create_file needs a file name, like notes/todo.md.")
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
    if is_binary(target.real):
        raise WorkspaceError(f"{target.rel} is a binary file; edit_file changes text files only.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkspaceError(
            f"{target.rel} is not UTF-8 text, so edit_file cannot change it safely."
        ) from None


def _loose_spans(content: str, find: str) -> list[tuple[int, int]]:
    """Where ``find`` occurs when every run of whitespace (indentation, line ends) may differ."""
    tokens = find.split()
    if not tokens:
        return []
    loose = re.compile(r"\s+".join(re.escape(token) for token in tokens))
    return [m.span() for m in loose.finditer(content)]


def _reindent(replace: str, find: str, content: str, start: int) -> str:
    """``replace`` shifted from ``find``'s indentation to the file's, for a whitespace-loose match.

    The match starts at the first non-blank character, after the file's own indentation, so the first
    line loses its leading blanks and later lines trade ``find``'s indentation for the file's.
    """
    line_start = content.rfind("\n", 0, start) + 1
    file_indent = content[line_start:start]
    if file_indent.strip():
        file_indent = ""  # the match starts mid-line: there is no indentation to carry over
    first = next((line for line in find.splitlines() if line.strip()), "")
    find_indent = first[: len(first) - len(first.lstrip())]
    lines = replace.strip().split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        if not line.strip():
            out.append(line.strip(" \t"))
        elif line.startswith(find_indent):
            out.append(file_indent + line[len(find_indent) :])
        else:
            out.append(line)
    return "\n".join(out)


def _line_numbers(content: str, offsets: list[int]) -> list[int]:
    return [content.count("\n", 0, offset) + 1 for offset in offsets]


def _show_lines(content: str, numbers: list[int]) -> str:
    lines = content.splitlines()
    return "\n".join(f"  {n}: {cut_line(lines[n - 1].strip(), 120)}" for n in numbers[:8])


def _not_found(rel: str, content: str, find: str, spans: list[tuple[int, int]]) -> str:
    """Why ``find`` did not match once, with the lines that come closest."""
    if spans:
        lines = _line_numbers(content, [start for start, _ in spans])
        return (
            f"find is not in {rel} exactly; ignoring whitespace it matches {len(spans)} times, so it is "
            f"ambiguous. Copy the text exactly from read_file and add a neighbouring line. Matches at:\n"
            f"{_show_lines(content, lines)}"
        )
    hint = ""
    if any(_NUMBERED.match(line) for line in find.splitlines()):
        hint = " find must not include the line numbers that read_file shows."
    first = next((line.strip() for line in find.splitlines() if line.strip()), find.strip())
    stripped = [line.strip() for line in content.splitlines()]
    close = difflib.get_close_matches(first, stripped, n=3, cutoff=0.5)
    numbers = sorted({stripped.index(line) + 1 for line in close})
    message = f"find was not found in {rel}.{hint}"
    if numbers:
        message += f" The closest lines are:\n{_show_lines(content, numbers)}\n"
        again = max(1, numbers[0] - 5)
        message += f"Read them again (read_file {rel} start_line={again}) and copy the text exactly."
    else:
        message += f" Read the file again (read_file {rel}) and copy the text exactly."
    return message


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
