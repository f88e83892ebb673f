"""The read-only file tools: list_dir, find_files, read_file, grep.

Each takes the `Confinement` and the `ToolLimits` and returns the text the model reads; anything the
model can fix is raised as a `WorkspaceError` whose message says what to do instead. Every result stays
inside its limit and says how to ask for the rest, because a small model's window holds only a few.
"""

from __future__ import annotations

import fnmatch
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pathspec

from twinny_magics.errors import WorkspaceError
from twinny_magics.tools.base import ToolLimits, cut_line
from twinny_magics.tools.notebook import notebook_lines
from twinny_magics.tools.paths import Confinement, Entry, Target, shown

BINARY_SNIFF_BYTES = 8192
GLOB_CHARS = frozenset("*?[")
_Match = Callable[[Entry], bool]


def require(
    conf: Confinement, raw: object, limits: ToolLimits, *, want: str = "any", missing_hint: str = ""
) -> Target:
    """An existing path of the kind ``want`` ("file", "dir" or "any"), or an error saying what exists."""
    target = conf.resolve(raw)
    name = target.rel
    if not target.real.exists():
        asked = raw if isinstance(raw, str) else name
        close = conf.suggestions(asked, limits.scan_entries)
        hint = (
            f" Did you mean: {', '.join(close)}?" if close else " list_dir and find_files show what exists."
        )
        raise WorkspaceError(f"{shown(asked.strip())} does not exist.{hint}{missing_hint}")
    if want == "file" and target.real.is_dir():
        raise WorkspaceError(f"{name} is a folder; use list_dir to see what is in it.")
    if want == "file" and not is_regular(target.real):
        raise WorkspaceError(f"{name} is not a regular file (a pipe, socket or device); it cannot be used.")
    if want == "dir" and not target.real.is_dir():
        raise WorkspaceError(f"{name} is a file; use read_file to read it.")
    return target


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a plain file: opening a pipe or a device would block or never end."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def is_binary(path: Path) -> bool:
    """Whether a file looks binary: a NUL byte, or mostly bytes that are not UTF-8, near its start."""
    with path.open("rb") as handle:
        head = handle.read(BINARY_SNIFF_BYTES)
    if b"\x00" in head:
        return True
    text = head.decode("utf-8", errors="replace")
    return text.count("\ufffd") > max(8, len(text) // 10)


def text_lines(target: Target | Entry) -> Iterator[str]:
    """A text file's lines without their line ends; a notebook's cell view."""
    if target.real.suffix == ".ipynb":
        yield from notebook_lines(target.real, target.rel)
        return
    with target.real.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            yield line.rstrip("\r\n")


# --- list_dir -------------------------------------------------------------------------------------


def list_dir(conf: Confinement, limits: ToolLimits, path: str | None) -> str:
    """A folder's visible entries, folders first (ending in /), files with their size."""
    folder = require(conf, path, limits, want="dir")
    rows: list[str] = []
    total = 0
    for entry in conf.entries(folder, strict=True):
        total += 1
        if len(rows) < limits.list_entries:
            rows.append(_entry_row(conf, entry))
    where = "the workspace root" if folder.rel == "." else folder.rel
    if not rows:
        return f"{where} is empty."
    head = f"{where} ({total} entries):"
    if total > len(rows):
        rows.append(f"[… {total - len(rows)} more entries not shown; use find_files to search by name]")
    return "\n".join([head, *rows])


def _entry_row(conf: Confinement, entry: Entry) -> str:
    name = entry.rel.rsplit("/", 1)[-1] + ("/" if entry.is_dir else "")
    if entry.link:
        return f"{name} -> {entry.real.relative_to(conf.root).as_posix()}"
    if entry.is_dir:
        return name
    try:
        return f"{name}  ({_size(entry.real.stat().st_size)})"
    except OSError:
        return name


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


# --- find_files -----------------------------------------------------------------------------------


def find_files(conf: Confinement, limits: ToolLimits, pattern: str) -> str:
    """Paths matching a glob (``**/*.py``, ``*.md``, ``src/*.py``) or containing a name fragment."""
    pattern = pattern.strip().removeprefix("./")
    if not pattern:
        raise WorkspaceError(
            "find_files needs a pattern: a glob like **/*.py or a part of a name like 'config'."
        )
    matches = _matcher(pattern)
    walk = conf.walk(Target(conf.root, "."), limits.scan_entries)
    found = sorted(e.rel + ("/" if e.is_dir else "") for e in walk if matches(e))
    if not found:
        how = "" if GLOB_CHARS & set(pattern) else " (a glob like **/*name* also matches by part of the name)"
        return f"No files match {pattern!r}{how}." + _walk_note(walk.truncated, limits)
    head = f"{len(found)} match(es) for {pattern!r}:"
    rows = found[: limits.find_results]
    if len(found) > len(rows):
        rows.append(f"[… {len(found) - len(rows)} more not shown; give a narrower pattern]")
    return "\n".join([head, *rows]) + _walk_note(walk.truncated, limits)


def _matcher(pattern: str) -> _Match:
    """How an entry is tested: a glob by name or by path, or a case-insensitive fragment."""
    if not GLOB_CHARS & set(pattern):
        fragment = pattern.lower()
        return lambda e: fragment in e.rel.lower()
    if "/" in pattern.rstrip("/"):
        # Read as one .gitignore line, where a leading ! or # would mean something else.
        line = "\\" + pattern if pattern[0] in "!#" else pattern
        try:
            spec = pathspec.PathSpec.from_lines("gitignore", [line])
        except ValueError as exc:
            raise WorkspaceError(f"{pattern!r} is not a glob find_files can use ({exc}).") from None
        return lambda e: spec.match_file(e.rel + ("/" if e.is_dir else ""))
    # A glob without a slash matches a name at any depth, as people expect from `*.py`.
    glob = pattern.rstrip("/").lower()
    return lambda e: fnmatch.fnmatchcase(e.rel.rsplit("/", 1)[-1].lower(), glob)


def _walk_note(truncated: bool, limits: ToolLimits) -> str:
    if not truncated:
        return ""
    return f"\n[The search stopped after {limits.scan_entries} entries; results may be missing. Narrow it.]"


# --- read_file ------------------------------------------------------------------------------------


def read_file(
    conf: Confinement, limits: ToolLimits, path: str, start_line: int | None, end_line: int | None
) -> str:
    """Numbered lines of a text file (or a notebook's cell view), at most ``read_lines`` of them."""
    target = require(conf, path, limits, want="file")
    name = target.rel
    notebook = target.real.suffix == ".ipynb"
    if not notebook and is_binary(target.real):
        size = _size(target.real.stat().st_size)
        raise WorkspaceError(f"{name} is a binary file ({size}); read_file shows text files only.")
    start = 1 if start_line is None else start_line
    if start < 1:
        raise WorkspaceError("start_line counts from 1.")
    if end_line is not None and end_line < start:
        raise WorkspaceError(f"end_line ({end_line}) is before start_line ({start}).")
    wanted_end = end_line if end_line is not None else start + limits.read_lines - 1
    stop = min(wanted_end, start + limits.read_lines - 1)
    shown_lines: list[tuple[int, str]] = []
    total = 0
    for total, line in enumerate(text_lines(target), start=1):
        if start <= total <= stop:
            shown_lines.append((total, cut_line(line, limits.line_chars)))
    kind = (
        "notebook shown as cells, outputs summarized; edit_file cannot change notebooks" if notebook else ""
    )
    if total == 0:
        return f"{name} is empty." if not notebook else f"{name} is a notebook with no cells."
    if start > total:
        raise WorkspaceError(f"{name} has {total} lines; start_line {start} is past the end.")
    last = shown_lines[-1][0]
    width = len(str(last))
    body = [f"{n:>{width}}: {text}" for n, text in shown_lines]
    if start == 1 and last == total:
        head = f"{name} ({total} line{'s' if total != 1 else ''}{'; ' + kind if kind else ''}):"
    else:
        head = f"{name}, lines {start}–{last} of {total}{' (' + kind + ')' if kind else ''}:"
    lines = [head, *body]
    if last < min(wanted_end, total):
        lines.append(
            f"[Stopped at line {last} of {total}: read_file shows {limits.read_lines} lines a call. "
            f"Call it with start_line={last + 1} to read on.]"
        )
    elif end_line is None and last < total:
        lines.append(f"[{total - last} more lines; start_line={last + 1} reads on.]")
    return "\n".join(lines)


# --- grep -----------------------------------------------------------------------------------------


def grep(conf: Confinement, limits: ToolLimits, pattern: str, path: str | None) -> str:
    """Lines matching a Python regex, as ``file:line: text``, within the match limits."""
    if not pattern:
        raise WorkspaceError("grep needs a pattern (a Python regular expression, e.g. def main).")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise WorkspaceError(
            f"{pattern!r} is not a valid regular expression: {exc}. To search for the text literally, "
            r"escape special characters with a backslash (e.g. \( \[ \. \*)."
        ) from None
    start = require(conf, path, limits)
    walk = conf.walk(start, limits.scan_entries)
    files: Iterator[Target | Entry] = iter([start]) if not start.real.is_dir() else iter(walk)
    rows: list[str] = []
    left_out = 0
    capped_files = 0
    skipped = 0
    for entry in files:
        if isinstance(entry, Entry) and entry.is_dir:
            continue
        try:
            if not is_regular(entry.real):
                continue
            if entry.real.stat().st_size > limits.grep_file_bytes:
                skipped += 1
                continue
            if entry.real.suffix != ".ipynb" and is_binary(entry.real):
                continue
            in_file = 0
            for number, line in enumerate(text_lines(entry), start=1):
                found = regex.search(line)
                if found is None:
                    continue
                in_file += 1
                if in_file > limits.grep_per_file or len(rows) >= limits.grep_matches:
                    left_out += 1
                    capped_files += in_file == limits.grep_per_file + 1
                    continue
                rows.append(f"{entry.rel}:{number}: {_around(line, found, limits.line_chars)}")
        except (OSError, WorkspaceError):
            skipped += 1
    where = "the workspace" if start.rel == "." else start.rel
    notes = []
    if left_out:
        per_file = f"; {capped_files} file(s) had more than {limits.grep_per_file}" if capped_files else ""
        notes.append(
            f"[{len(rows)} matches shown, {left_out} more left out{per_file}. "
            "Narrow the pattern or pass a path to see them.]"
        )
    if skipped:
        notes.append(f"[{skipped} file(s) were too large or unreadable and were not searched.]")
    if walk.truncated:
        notes.append(_walk_note(True, limits).strip())
    if not rows:
        return "\n".join([f"No matches for {pattern!r} in {where}.", *notes])
    return "\n".join([*rows, *notes])


def _around(line: str, found: re.Match[str], limit: int) -> str:
    """A long line cut to a window that still shows the match."""
    line = line.strip()
    if len(line) <= limit:
        return line
    index = max(0, line.find(found.group(0)) - limit // 4) if found.group(0) else 0
    piece = line[index : index + limit]
    return ("…" if index else "") + piece + ("…" if index + limit < len(line) else "")
