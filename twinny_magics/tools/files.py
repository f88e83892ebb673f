"""The read-only file tools: list_dir, find_files, read_file, grep.

Each takes the `Confinement` and the `ToolLimits` and returns the text the model reads; anything the
model can fix is raised as a `WorkspaceError` whose message says what to do instead. Every result stays
inside its limit and says how to ask for the rest, because a small model's window holds only a few.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import logging
import os
import re
import stat
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pathspec
import regex

from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import MASK, mask_secrets
from twinny_magics.tools.base import ToolLimits, call_text, cut_line
from twinny_magics.tools.notebook import notebook_lines
from twinny_magics.tools.paths import Confinement, Entry, Target, open_file, shown

BINARY_SNIFF_BYTES = 8192
GLOB_CHARS = frozenset("*?[")
_Match = Callable[[Entry], bool]
log = logging.getLogger(__name__)


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


def is_binary(file: Target | Entry) -> bool:
    """Whether a file looks binary (see `looks_binary`); opened with `paths.open_file`'s checks."""
    with open_file(file) as handle:
        return looks_binary(handle.read(BINARY_SNIFF_BYTES))


def looks_binary(head: bytes) -> bool:
    """Whether a file's first bytes look binary: a NUL byte, or mostly bytes that are not UTF-8."""
    if b"\x00" in head:
        return True
    text = head.decode("utf-8", errors="replace")
    return text.count("\ufffd") > max(8, len(text) // 10)


# read_file reads at most this much of a file: the lines it shows and a count of the lines around them.
# A file past it (a log, a dump, a text head with a long NUL-free or NUL tail) is said to be longer.
READ_SCAN_CHARS = 8 * 1024 * 1024
# A line is read in pieces of this many characters: a line longer than a piece (minified code, a NUL
# tail) is kept only up to what is shown and its length counted, never held whole.
_PIECE_CHARS = 64 * 1024


class TextLines:
    """A text file's (or a notebook's cell view's) lines, read within a budget.

    Iterating yields ``(head, length)`` for each line: at most ``keep`` characters of it and its full
    length (line ends dropped). It stops after ``budget`` characters (``truncated`` then says the file
    goes on) or at a line holding a NUL byte (``binary_at`` is its number: the rest is not text).
    """

    def __init__(self, file: Target | Entry, *, keep: int, budget: int = READ_SCAN_CHARS) -> None:
        self._file = file
        self._keep = min(keep, _PIECE_CHARS)
        self._budget = budget
        self.truncated = False
        self.binary_at: int | None = None

    def __iter__(self) -> Iterator[tuple[str, int]]:
        if self._file.real.suffix == ".ipynb":
            with open_file(self._file) as raw:
                cells = notebook_lines(raw, self._file.rel)
            for line in cells:
                yield line[: self._keep], len(line)
            return
        with io.TextIOWrapper(open_file(self._file), encoding="utf-8", errors="replace") as handle:
            seen = number = 0
            while True:
                if seen >= self._budget:
                    self.truncated = handle.read(1) != ""
                    return
                piece = handle.readline(_PIECE_CHARS)
                if not piece:
                    return
                number += 1
                seen += len(piece)
                if "\x00" in piece:
                    self.binary_at = number
                    return
                head, length = piece[: self._keep + 2], len(piece)
                while not piece.endswith("\n") and seen < self._budget:
                    piece = handle.readline(_PIECE_CHARS)  # the rest of a long line: counted, not kept
                    if not piece:
                        break
                    seen += len(piece)
                    length += len(piece)
                ended = piece.endswith("\n")
                yield head.rstrip("\r\n")[: self._keep], length - ended
                if not ended and seen >= self._budget:
                    self.truncated = True
                    return


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


# Looking inside files for a find_files or grep that found nothing takes at most this long in all
# (within grep's own bounds per file and per call): the answer is a hint, not a second search.
HINT_SECONDS = 2.0
_HINT_FILES = 5
_EXTENSION_GLOB = re.compile(r"\*?\.[A-Za-z0-9]{1,6}$")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def _inside_files(conf: Confinement, limits: ToolLimits, pattern: str, stop: threading.Event | None) -> str:
    """For a find_files that matched no name: the files whose text holds the pattern's word, and the grep
    call that searches contents — one line; "" when none does or the pattern has no word to look for.

    A plain pattern is looked for as written (``def main``); a glob or a regex by its longest word
    (``.*ClassName.*``, ``**/*Loader*.py``), never by a file extension alone (``*.rs``).
    """
    if GLOB_CHARS & set(pattern) or set("\\()|+^$") & set(pattern):
        last = _EXTENSION_GLOB.sub("", pattern.rstrip("/").rsplit("/", 1)[-1])
        words = sorted(_WORDS.findall(re.sub(r"\\[A-Za-z]", " ", last)), key=len, reverse=True)
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
    return (
        f"No file name matches {pattern!r}; these files contain {what}: {names} — use grep to search "
        f"contents: {call}"
    )


def _walk_note(truncated: bool, limits: ToolLimits) -> str:
    if not truncated:
        return ""
    return f"\n[The search stopped after {limits.scan_entries} entries; results may be missing. Narrow it.]"


# --- read_file ------------------------------------------------------------------------------------


def read_file(
    conf: Confinement, limits: ToolLimits, path: str, start_line: int | None, end_line: int | None
) -> str:
    """Numbered lines of a text file (or a notebook's cell view), at most ``read_lines`` of them.

    At most `READ_SCAN_CHARS` of the file are read, a line at a time in pieces (`TextLines`), so a huge
    file or a single huge line costs no more memory than the lines shown.
    """
    target = require(conf, path, limits, want="file")
    name = target.rel
    notebook = target.real.suffix == ".ipynb"
    if not notebook and is_binary(target):
        size = _size(target.real.stat().st_size)
        raise WorkspaceError(f"{name} is a binary file ({size}); read_file shows text files only.")
    start = 1 if start_line is None else start_line
    if start < 1:
        raise WorkspaceError(f"start_line counts from 1: {call_text('read_file', {'path': name})}")
    if end_line is not None and end_line < start:
        turned = {"path": name} | ({"start_line": end_line, "end_line": start} if end_line >= 1 else {})
        raise WorkspaceError(
            f"end_line ({end_line}) is before start_line ({start}): {call_text('read_file', turned)}"
        )
    wanted_end = end_line if end_line is not None else start + limits.read_lines - 1
    stop = min(wanted_end, start + limits.read_lines - 1)
    shown_lines: list[tuple[int, str]] = []
    total = 0
    lines = TextLines(target, keep=limits.line_chars)
    for total, (head, length) in enumerate(lines, start=1):
        if start <= total <= stop:
            shown_lines.append((total, _cut(head, length, limits.line_chars)))
    kind = (
        "notebook shown as cells, outputs summarized; edit_file cannot change notebooks" if notebook else ""
    )
    # Where the reading stopped short of the end: a line count that is a floor, and why.
    partial = lines.truncated or lines.binary_at is not None
    of = f"{total}+" if partial else str(total)
    if lines.binary_at is not None:
        why = f"[{name} turns binary at line {lines.binary_at} (NUL bytes); read_file shows only its text.]"
    else:
        why = (
            f"[read_file reads the first {READ_SCAN_CHARS // (1024 * 1024)} MB of a file and {name} is "
            "longer; for a later part use grep, or run_command (e.g. tail -n 50).]"
        )
    if total == 0:
        if partial:
            return f"{name} has no text lines read_file can show.\n{why}"
        return f"{name} is empty." if not notebook else f"{name} is a notebook with no cells."
    if start > total:
        if partial:
            raise WorkspaceError(
                f"start_line {start} is past the {total} lines read_file reads of {name}. {why[1:-1]}"
            )
        last_page = total - limits.read_lines + 1
        end = {"path": name} | ({"start_line": last_page} if last_page > 1 else {})
        raise WorkspaceError(
            f"{name} has {total} line{'s' if total != 1 else ''}; start_line {start} is past the end. "
            f"To read its end: {call_text('read_file', end)}"
        )
    last = shown_lines[-1][0]
    width = len(str(last))
    body = [f"{n:>{width}}: {text}" for n, text in shown_lines]
    if start == 1 and last == total and not partial:
        head = f"{name} ({total} line{'s' if total != 1 else ''}{'; ' + kind if kind else ''}):"
    else:
        head = f"{name}, lines {start}–{last} of {of}{' (' + kind + ')' if kind else ''}:"
    out = [head, *body]
    if last < min(wanted_end, total):
        out.append(
            f"[Stopped at line {last} of {of}: read_file shows {limits.read_lines} lines a call. "
            f"Call it with start_line={last + 1} to read on.]"
        )
    elif end_line is None and last < total:
        out.append(f"[{total - last}{'+' if partial else ''} more lines; start_line={last + 1} reads on.]")
    if partial:
        out.append(why)
    return "\n".join(out)


def _cut(head: str, length: int, limit: int) -> str:
    """A line (its kept head and full length) as `cut_line` shows it: the head, and how much was left out."""
    if length <= limit:
        return head
    return f"{head[:limit]} …[+{length - limit} chars]"


# --- grep -----------------------------------------------------------------------------------------

# Regex search is bounded in time, so a catastrophic pattern (`(a+)+$`, `^(\w+\s?)+$`) cannot hold the
# kernel: it runs on the `regex` engine, whose searches take a timeout and release the GIL while they
# match (Python's `re` holds the GIL and cannot be stopped: 40 characters of `(a+)+$` take a day). The
# bounds: the searches in one file may take `GREP_FILE_SECONDS` (that file is then left, and grep goes
# on); a second file that does stops the search, as the pattern is the trouble; and a call may take
# `GREP_CALL_SECONDS` in all. Workspace runs grep on a worker thread and sets ``stop`` when the reply is
# cancelled, which grep checks between files (within a file, its time bound ends every search).
GREP_FILE_SECONDS = 0.3
GREP_CALL_SECONDS = 10.0
GREP_SLOW_FILES = 2
PATTERN_CHARS = 1000
# The `regex` engine writes out counted repeats of literals when it compiles (`(a{1000}){1000}` takes
# 0.4 s and 290 MB); a pattern whose repeats multiply past this is refused before it is compiled.
PATTERN_EXPANSION = 50_000
# Patterns whose match on a whole file can differ from their match on a line alone (lookarounds,
# \A \Z \G, possessive and atomic parts, backtracking verbs, reverse search): these are searched line by
# line. Every other pattern is searched on the whole file at once (a hit inside one line is that line's
# match; one that runs past its line is checked on the line alone), which keeps an ordinary grep as fast
# as the per-line `re` search it replaces.
_LINE_ONLY = re.compile(r"\(\?(?:[=!>(]|<[=!])|[*+?}]\+|\\[AZzGK]|\(\*|\(\?[a-zA-Z\-]*r")


class GrepStopped(Exception):
    """Raised inside a search when a bound is reached; ``why`` says which."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class _Search:
    """One grep call's compiled pattern and its clock."""

    def __init__(self, pattern: str, stop: threading.Event | None, call_seconds: float) -> None:
        self.line = _compile(pattern, 0)
        self.whole = None if _LINE_ONLY.search(pattern) else _compile(pattern, regex.MULTILINE)
        self.stop = stop
        self.call_deadline = time.monotonic() + call_seconds
        self.file_deadline = self.call_deadline

    def check(self) -> None:
        """Stop when the reply was cancelled or the call's time is up."""
        if self.stop is not None and self.stop.is_set():
            raise GrepStopped("cancelled")
        if time.monotonic() >= self.call_deadline:
            raise GrepStopped("call")

    def matches(self, text: str, file_seconds: float) -> Iterator[tuple[int, str, regex.Match[str]]]:
        """``(line number, line, match)`` for each line of ``text`` that matches, in order."""
        self.file_deadline = min(time.monotonic() + file_seconds, self.call_deadline)
        if not text:
            return
        if text.endswith("\n"):
            text = text[:-1]  # a final line end starts no line
        if self.whole is None:
            for number, line in enumerate(text.split("\n"), start=1):
                found = self._search(self.line, line, 0)
                if found is not None:
                    yield number, line, found
            return
        # One finditer over the file (one timeout for all of it); a hit that runs past its line's end is
        # checked on the line alone, and the search starts again at the next line, so a hit that swallowed
        # the start of the next line cannot hide that line's own match.
        pos = counted = 0
        number = 1
        done = -1  # where the last line handled ends: later hits before it are in that line
        while pos <= len(text):
            restart = -1
            left = self.file_deadline - time.monotonic()
            if left <= 0:
                raise GrepStopped(self._bound())
            try:
                for hit in self.whole.finditer(text, pos, timeout=left):
                    start = hit.start()
                    if start <= done:
                        if hit.end() > done + 1:  # it ran from a handled line into the next one
                            restart = done + 1
                            break
                        continue
                    begin = text.rfind("\n", 0, start) + 1
                    end = text.find("\n", start)
                    end = len(text) if end < 0 else end
                    number += text.count("\n", counted, begin)
                    counted = begin
                    done = end
                    line = text[begin:end]
                    if hit.end() <= end:
                        yield number, line, hit
                        continue
                    found = self._search(self.line, line, 0)  # it crosses the line's end: the line decides
                    if found is not None:
                        yield number, line, found
                    restart = end + 1
                    break
            except TimeoutError:
                raise GrepStopped(self._bound()) from None
            if restart < 0:
                return
            pos = restart

    def _bound(self) -> str:
        """Which bound ran out: the file's, or the call's (when the file's reached past it)."""
        return "file" if self.file_deadline < self.call_deadline else "call"

    def _search(self, compiled: regex.Pattern[str], text: str, pos: int) -> regex.Match[str] | None:
        left = self.file_deadline - time.monotonic()
        if left <= 0:
            raise GrepStopped(self._bound())
        try:
            return compiled.search(text, pos, timeout=left)
        except TimeoutError:
            raise GrepStopped(self._bound()) from None


def _compile(pattern: str, flags: int) -> regex.Pattern[str]:
    """``pattern`` compiled by `regex` (the syntax of Python's `re`), or a `WorkspaceError` saying why not.

    A pattern neither accepts is explained in `re`'s words, which are the ones the model knows.
    """
    try:
        return regex.compile(pattern, flags)
    except (regex.error, RecursionError, OverflowError, ValueError) as exc:
        why = "it nests too deeply" if isinstance(exc, RecursionError) else str(exc)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                re.compile(pattern)
        except re.error as said:
            why = str(said)
        except (RecursionError, OverflowError, ValueError):
            pass
        raise WorkspaceError(
            f"{cut_line(pattern, 80)!r} is not a valid regular expression: {why}. To search for the text "
            r"literally, escape special characters with a backslash (e.g. \( \[ \. \*)."
        ) from None


def _expansion(pattern: str) -> int:
    """An upper bound of how many atoms a pattern's counted repeats write out (``(a{10}){10}`` → 100)."""
    stack: list[tuple[int, int]] = []  # per open group: (size before it, size of its last atom's start)
    size = 0
    last = 0  # the size of the atom a repeat would apply to
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            size, last = size + 1, 1
            continue
        if char == "[":
            close = pattern.find("]", i + 2)
            i = len(pattern) if close < 0 else close + 1
            size, last = size + 1, 1
            continue
        if char == "(":
            stack.append((size, last))
            size = 0
        elif char == ")" and stack:
            inner = max(size, 1)
            size, _ = stack.pop()
            size, last = size + inner, inner
        elif char == "{":
            repeat = re.match(r"\{(\d*)(?:,(\d*))?\}", pattern[i:])
            if repeat and (repeat.group(1) or repeat.group(2)):
                count = max(int(repeat.group(1) or 0), int(repeat.group(2) or 0), 1)
                size += last * (count - 1)
                last *= count
                if size > PATTERN_EXPANSION:
                    return size
                i += repeat.end()
                continue
            size, last = size + 1, 1
        elif char not in "|*+?^$":
            size, last = size + 1, 1
        i += 1
    return size + sum(before for before, _ in stack)


def _files_in(start: Target, walk: Iterable[Entry]) -> Iterator[Target | Entry]:
    """The files a search reads: ``start`` itself when it is a file, else the files of its walk."""
    if not start.real.is_dir():
        yield start
        return
    yield from (entry for entry in walk if not entry.is_dir)


def grep(
    conf: Confinement,
    limits: ToolLimits,
    pattern: str,
    path: str | None,
    *,
    stop: threading.Event | None = None,
    file_seconds: float | None = None,
    call_seconds: float | None = None,
) -> str:
    """Lines matching a Python regex, as ``file:line: text``, within the match and time limits.

    The pattern is matched against each file as the tools show it, secrets masked (`shown_text`), never
    against what the mask hides. One file that cannot be searched (unreadable, vanished, a malformed
    notebook, too slow for the pattern) is counted and named in a note; it never fails the search. The
    time bounds default to `GREP_FILE_SECONDS` and `GREP_CALL_SECONDS`; ``stop`` ends the search early (a
    cancelled reply).
    """
    file_seconds = GREP_FILE_SECONDS if file_seconds is None else file_seconds
    call_seconds = GREP_CALL_SECONDS if call_seconds is None else call_seconds
    if not pattern:
        raise WorkspaceError("grep needs a pattern (a Python regular expression, e.g. def main).")
    if len(pattern) > PATTERN_CHARS:
        raise WorkspaceError(
            f"The pattern is {len(pattern):,} characters long; grep takes at most {PATTERN_CHARS:,}. "
            "Search for a shorter, distinctive part."
        )
    if _expansion(pattern) > PATTERN_EXPANSION:
        raise WorkspaceError(
            "The pattern's counted repeats are too large (like (a{1000}){1000}); use smaller counts, "
            "or + and * instead."
        )
    search = _Search(pattern, stop, call_seconds)
    start = require(conf, path, limits)
    walk = conf.walk(start, limits.scan_entries)
    files = _files_in(start, walk)
    rows: list[str] = []
    left_out = capped_files = too_large = 0
    unreadable: list[str] = []
    slow: list[str] = []
    stopped = ""
    for entry in files:
        try:
            search.check()
            text = _grep_text(entry, limits)
            if text is None:
                continue
            in_file = 0
            for number, line, found in search.matches(text, file_seconds):
                in_file += 1
                if in_file > limits.grep_per_file or len(rows) >= limits.grep_matches:
                    left_out += 1
                    capped_files += in_file == limits.grep_per_file + 1
                    continue
                rows.append(f"{entry.rel}:{number}: {_around(line, found, limits.line_chars)}")
        except GrepStopped as halt:
            if halt.why == "file":
                slow.append(entry.rel)
                if len(slow) < GREP_SLOW_FILES:
                    continue
            stopped = halt.why
            break
        except _TooLarge:
            too_large += 1
        except (OSError, WorkspaceError) as exc:
            unreadable.append(f"{entry.rel} ({_why_unreadable(exc)})")
        except Exception as exc:  # one bad file must never fail the whole search
            log.warning("grep could not search %s", entry.rel, exc_info=True)
            unreadable.append(f"{entry.rel} ({type(exc).__name__})")
    where = "the workspace" if start.rel == "." else start.rel
    notes = []
    if left_out:
        per_file = f"; {capped_files} file(s) had more than {limits.grep_per_file}" if capped_files else ""
        notes.append(
            f"[{len(rows)} matches shown, {left_out} more left out{per_file}. "
            "Narrow the pattern or pass a path to see them.]"
        )
    if stopped == "file":
        notes.append(
            f"[The search was stopped: the pattern took too long (over {file_seconds:g} s in a file, in "
            f"{', '.join(slow)}). Use a simpler one, e.g. a plain word or phrase; avoid nested repeats "
            r"like (a+)+ or (\w+\s?)+.]"
        )
    elif slow:
        notes.append(
            f"[The pattern took too long in {', '.join(slow)} (over {file_seconds:g} s), which was not "
            "searched to the end. A simpler pattern, e.g. a plain word, would search it.]"
        )
    if stopped == "call":
        notes.append(
            f"[The search stopped after {call_seconds:g} s; results may be missing. Pass a path to search "
            "a smaller part, or use a simpler pattern.]"
        )
    if too_large:
        notes.append(
            f"[{too_large} file(s) over {_size(limits.grep_file_bytes)} were not searched; read_file "
            "or run_command can look into one.]"
        )
    if unreadable:
        more = f" and {len(unreadable) - 3} more" if len(unreadable) > 3 else ""
        names = ", ".join(unreadable[:3]) + more
        notes.append(f"[{len(unreadable)} file(s) could not be searched: {names}.]")
    if walk.truncated:
        notes.append(_walk_note(True, limits).strip())
    if stopped == "cancelled":
        notes.append("[The search was cancelled.]")
    if not rows:
        said = f"No matches for {pattern!r} in {where}"
        wider = "" if stopped or slow else _wider(conf, limits, pattern, start, path, stop, search)
        return "\n".join([f"{said}; {wider}" if wider else f"{said}.", *notes])
    return "\n".join([*rows, *notes])


_FLAGS_FIRST = re.compile(r"\(\?([aiLmsux]+)\)")
_REGEX_SYNTAX = re.compile(r"\\[A-Za-z]|\[(?:\\.|[^\]])*\]|\(\?[A-Za-z-]*[:)]|\(\?P?<\w+>|\{\d*,?\d*\}")


def _wider(  # noqa: PLR0917 (grep's own state, handed on whole)
    conf: Confinement,
    limits: ToolLimits,
    pattern: str,
    start: Target,
    path: str | None,
    stop: threading.Event | None,
    search: _Search,
) -> str:
    """For a grep that matched nothing: a case-insensitive or shorter pattern that would match, how much it
    would find, and the call — one line; "" when none would.

    Tried in order: ``(?i)`` and the pattern, its longest literal word, that word case-insensitively;
    each looked for as grep looks (`files_matching`) within `HINT_SECONDS` in all and within the call's
    own deadline (``search``'s).
    """
    tries: list[tuple[str, str]] = []
    flags = _FLAGS_FIRST.match(pattern)
    rest = pattern[flags.end() :] if flags else pattern
    given = flags.group(1) if flags else ""
    if "i" not in given and not _FLAGS_FIRST.search(rest) and re.search("[A-Za-z]", rest):
        tries.append(("the case-insensitive", f"(?i{given})" + rest))
    words = sorted(_WORDS.findall(_REGEX_SYNTAX.sub(" ", pattern)), key=len, reverse=True)
    if words and words[0] != pattern:
        tries += [("the shorter", re.escape(words[0])), ("the shorter", "(?i)" + re.escape(words[0]))]
    until = min(search.call_deadline, time.monotonic() + HINT_SECONDS)
    for how, candidate in tries:
        seconds = until - time.monotonic()
        if seconds <= 0:
            break
        tally = files_matching(conf, limits, start, candidate, stop=stop, seconds=seconds)
        if tally.files:
            least = "" if tally.complete else "at least "
            lines = f"{least}{tally.lines} matching line{'s' if tally.lines != 1 else ''}"
            files = f"{len(tally.files)} file{'s' if len(tally.files) != 1 else ''}"
            arguments = {"pattern": candidate} | ({"path": path} if path else {})
            return f"{how} {candidate!r} would give {lines} in {files}: {call_text('grep', arguments)}"
    return ""


class _TooLarge(Exception):
    """A file over grep's size limit (by its size, or by what could be read of it)."""


def _grep_text(entry: Target | Entry, limits: ToolLimits) -> str | None:
    """The text grep searches in a file (a notebook's cell view), or None for one it passes over.

    Read once, at most ``grep_file_bytes`` (+1, to tell a file that grew), with line ends made ``\\n``
    as text mode would; a file that turns binary (a NUL byte) is searched up to it. What is returned is
    the text as shown, secrets masked (`shown_text`).
    """
    if not is_regular(entry.real):
        return None  # a pipe or a device: opening it could block
    if entry.real.stat().st_size > limits.grep_file_bytes:
        raise _TooLarge
    if entry.real.suffix == ".ipynb":
        with open_file(entry) as raw:
            return shown_text("\n".join(notebook_lines(raw, entry.rel)))
    with open_file(entry) as handle:
        # At most the size it has now (+1 to tell one that grew): read(n) allocates n bytes up front.
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(min(size, limits.grep_file_bytes) + 1)
    if len(data) > limits.grep_file_bytes:
        raise _TooLarge
    if looks_binary(data[:BINARY_SNIFF_BYTES]):
        return None
    text = data.decode("utf-8", errors="replace")
    nul = text.find("\x00")
    if nul >= 0:
        text = text[:nul]
    return shown_text(text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text)


# grep searches a file as the tools show it, every secret masked (`redact.mask_secrets`, which every tool
# result passes through), never its raw text. Masking only the lines it reports is not enough: that a
# line is reported at all tells whether the hidden value matched, so `grep 'sk-proj-a'`, then
# `sk-proj-b`, … (or `API_KEY = "a`) would spell a key out one character at a time. Searching the masked
# text makes everything grep says — which lines, how many, the "no matches" note and its hints, the
# files find_files names for a word — a function of what read_file shows: a right guess and a wrong one
# get the same reply. A pattern that matches the mask itself (`secret hidden`) finds the masked lines,
# which read_file shows too. Masking costs about 100 ms per MB of text (a regex search about 1 ms), so
# what a text masks to is kept per text (by a hash of it): a file that did not change is masked once.
SHOWN_CACHE_ENTRIES = 4096
SHOWN_CACHE_CHARS = 16_000_000  # masked texts kept; an unchanged one is kept as None and costs nothing
_shown_cache: OrderedDict[bytes, str | None] = OrderedDict()
_shown_chars = 0
_shown_lock = threading.Lock()


def shown_text(text: str) -> str:
    """``text`` as the tools show it (`as_shown`), from the cache when the same text was masked before."""
    global _shown_chars  # noqa: PLW0603 (the cache's size, kept with it under its lock)
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _shown_lock:
        if key in _shown_cache:
            _shown_cache.move_to_end(key)
            kept = _shown_cache[key]
            return text if kept is None else kept
    shown = as_shown(text)
    kept = None if shown == text else shown
    with _shown_lock:
        if key not in _shown_cache and (kept is None or len(kept) <= SHOWN_CACHE_CHARS // 4):
            _shown_cache[key] = kept
            _shown_chars += len(kept or "")
            while len(_shown_cache) > SHOWN_CACHE_ENTRIES or _shown_chars > SHOWN_CACHE_CHARS:
                _, dropped = _shown_cache.popitem(last=False)
                _shown_chars -= len(dropped or "")
    return shown


def as_shown(text: str) -> str:
    """``text`` with every secret masked (`redact.mask_secrets`) and as many lines as it had.

    A mask that hid line ends (a PEM key's lines) is followed by those line ends, so the lines after it
    keep their numbers and the key's lines are empty.
    """
    shown = mask_secrets(text)
    lost = text.count("\n") - shown.count("\n")
    if lost <= 0:
        return shown
    kept = _lines_kept(text, shown)
    # mask_secrets replaces runs with MASK and keeps the rest as it is, so the pieces between masks are
    # found in order; if a later masking works otherwise, the numbers after the first such mask may be
    # off, but nothing hidden is shown.
    return kept if kept is not None else shown + "\n" * lost


def _lines_kept(text: str, shown: str) -> str | None:
    """``shown`` with each mask followed by the line ends of the run it hid in ``text``; None if the
    pieces of ``shown`` between masks are not found in ``text`` in order."""
    pieces = shown.split(MASK)
    if len(pieces) < 2 or not text.startswith(pieces[0]) or not text.endswith(pieces[-1]):
        return None
    last = len(text) - len(pieces[-1])
    pos = len(pieces[0])
    out = [pieces[0]]
    for piece in pieces[1:-1]:
        found = text.find(piece, pos, last)
        if found < 0:
            return None
        out += [MASK, "\n" * text.count("\n", pos, found), piece]
        pos = found + len(piece)
    if pos > last:
        return None
    out += [MASK, "\n" * text.count("\n", pos, last), pieces[-1]]
    return "".join(out)


class Tally:
    """What a bounded look through files (`files_matching`) found: the files with a match, the matching
    lines, whether all was searched."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.lines = 0
        self.complete = True


def files_matching(
    conf: Confinement,
    limits: ToolLimits,
    start: Target,
    pattern: str,
    *,
    stop: threading.Event | None,
    seconds: float,
    max_files: int | None = None,
) -> Tally:
    """The files and lines under ``start`` that match ``pattern``, found as grep finds them (the same walk,
    deny list and ignore rules, size and binary checks, per-file time bound) within ``seconds``; nothing
    of the text is kept. A file that cannot be searched is passed over."""
    tally = Tally()
    try:
        search = _Search(pattern, stop, seconds)
    except WorkspaceError:
        tally.complete = False
        return tally
    walk = conf.walk(start, limits.scan_entries)
    for entry in _files_in(start, walk):
        try:
            search.check()
            text = _grep_text(entry, limits)
            if text is None:
                continue
            count = sum(1 for _ in search.matches(text, GREP_FILE_SECONDS))
        except GrepStopped as halt:
            tally.complete = False
            if halt.why == "file":
                continue
            break
        except Exception:  # unreadable, too large, vanished: a hint passes over it
            continue
        if count:
            tally.files.append(entry.rel)
            tally.lines += count
            if max_files is not None and len(tally.files) >= max_files:
                tally.complete = False
                break
    tally.complete = tally.complete and not walk.truncated
    return tally


def _why_unreadable(exc: OSError | WorkspaceError) -> str:
    """A short reason a file could not be searched, without any path of the machine."""
    if isinstance(exc, FileNotFoundError):
        return "it vanished"
    if isinstance(exc, OSError):
        return (exc.strerror or type(exc).__name__).lower()
    text = str(exc)
    return "not a valid notebook" if "not a valid notebook" in text else cut_line(text, 60)


def _around(line: str, found: regex.Match[str], limit: int) -> str:
    """A long line cut to a window that still shows the match."""
    line = line.strip()
    if len(line) <= limit:
        return line
    index = max(0, line.find(found.group(0)) - limit // 4) if found.group(0) else 0
    piece = line[index : index + limit]
    return ("…" if index else "") + piece + ("…" if index + limit < len(line) else "")
