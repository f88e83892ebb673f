"""The tools that list and find files: list_dir (a folder's entries) and find_files (names by glob or
fragment, and where no name matches, the files whose text holds the word)."""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import threading
import time
from collections.abc import Callable

import pathspec

from twinny_magics.errors import WorkspaceError
from twinny_magics.tools.base import ToolLimits, call_text
from twinny_magics.tools.files import require, size_text, walk_note
from twinny_magics.tools.grep import HINT_SECONDS, WORDS, files_matching, grep
from twinny_magics.tools.opening import Entry, Target
from twinny_magics.tools.paths import Confinement

GLOB_CHARS = frozenset("*?[")
_Match = Callable[[Entry], bool]


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
        return f"{name}  ({size_text(entry.real.stat().st_size)})"
    except OSError:
        return name


# --- find_files -----------------------------------------------------------------------------------


def find_files(
    conf: Confinement, limits: ToolLimits, pattern: str, *, stop: threading.Event | None = None
) -> str:
    """Paths matching a glob (``**/*.py``, ``*.md``, ``src/*.py``) or containing a name fragment.

    When no name matches but the pattern's word is in files' text (a class name asked of file names),
    the answer names those files and the grep call that searches contents (`_inside_files`).
    """
    pattern = pattern.strip().removeprefix("./")
    if not pattern:
        raise WorkspaceError(
            "find_files needs a pattern: a glob like **/*.py or a part of a name like 'config'."
        )
    matches = _matcher(pattern)
    walk = conf.walk(Target(conf.root, "."), limits.scan_entries)
    found = sorted(e.rel + ("/" if e.is_dir else "") for e in walk if matches(e))
    if not found:
        inside = _inside_files(conf, limits, pattern, stop)
        if inside:
            return inside
        how = "" if GLOB_CHARS & set(pattern) else " (a glob like **/*name* also matches by part of the name)"
        return f"No files match {pattern!r}{how}." + walk_note(walk.truncated, limits)
    head = f"{len(found)} match(es) for {pattern!r}:"
    rows = found[: limits.find_results]
    if len(found) > len(rows):
        rows.append(f"[… {len(found) - len(rows)} more not shown; give a narrower pattern]")
    return "\n".join([head, *rows]) + walk_note(walk.truncated, limits)


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


# A find_files that matched no name names at most this many files whose text holds its word.
_HINT_FILES = 5
#: ... and shows at most this many of the lines that hold it (this many a file).
_HINT_LINES = 8
_HINT_LINES_PER_FILE = 3
_EXTENSION_GLOB = re.compile(r"\*?\.[A-Za-z0-9]{1,6}$")


def _inside_files(conf: Confinement, limits: ToolLimits, pattern: str, stop: threading.Event | None) -> str:
    """For a find_files that matched no name: the files whose text holds the pattern's word, and the grep
    call that searches contents — one line; "" when none does or the pattern has no word to look for.

    A plain pattern is looked for as written (``def main``); a glob or a regex by its longest word
    (``.*ClassName.*``, ``**/*Loader*.py``), never by a file extension alone (``*.rs``).
    """
    if GLOB_CHARS & set(pattern) or set("\\()|+^$") & set(pattern):
        last = _EXTENSION_GLOB.sub("", pattern.rstrip("/").rsplit("/", 1)[-1])
        words = sorted(WORDS.findall(re.sub(r"\\[A-Za-z]", " ", last)), key=len, reverse=True)
        word = words[0] if words else ""
    else:
        word = pattern if re.search(r"[A-Za-z0-9_]{3,}", pattern) else ""
    if not word:
        return ""
    start = Target(conf.root, ".", conf.root)
    until = time.monotonic() + HINT_SECONDS
    for search in (re.escape(word), "(?i)" + re.escape(word)):
        seconds = until - time.monotonic()
        if seconds <= 0:
            return ""
        tally = files_matching(
            conf, limits, start, search, stop=stop, seconds=seconds, max_files=_HINT_FILES + 1
        )
        if tally.files:
            break
    else:
        return ""
    what = "it" if word == pattern else repr(word)
    names = ", ".join(tally.files[:_HINT_FILES]) + (", …" if len(tally.files) > _HINT_FILES else "")
    shown_pattern = word if search == re.escape(word) else search
    call = call_text("grep", {"pattern": shown_pattern})
    hint = (
        f"No file name matches {pattern!r}; these files contain {what}: {names} — use grep to search "
        f"contents: {call}"
    )
    # A small model that asks file names for a symbol tends to ask again, not to grep: the lines that
    # hold it come with the hint (a few: a full grep stays one call away).
    seconds = until - time.monotonic()
    if seconds <= 0:
        return hint
    few = dataclasses.replace(limits, grep_matches=_HINT_LINES, grep_per_file=_HINT_LINES_PER_FILE)
    try:
        lines = grep(conf, few, search, None, stop=stop, call_seconds=seconds)
    except WorkspaceError:
        return hint
    return f"{hint}\nWhat that grep finds (the first lines):\n{lines}"
