"""The grep tool: lines of files that match a regex, bounded in size and time, searched as the tools show
the files (secrets masked); and `files_matching`, the same search as a bounded count, for the hints that
find_files, grep and a refused call give."""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import warnings
from collections.abc import Iterable, Iterator

import regex

from twinny_magics.errors import WorkspaceError
from twinny_magics.sections import Heading, headings, is_document, section_of
from twinny_magics.tools.base import ToolLimits, call_text, cut_line
from twinny_magics.tools.files import (
    BINARY_SNIFF_BYTES,
    is_regular,
    looks_binary,
    require,
    shown_text,
    size_text,
    walk_note,
)
from twinny_magics.tools.notebook import notebook_lines
from twinny_magics.tools.opening import Entry, Target, open_file
from twinny_magics.tools.paths import Confinement

log = logging.getLogger(__name__)

# Looking inside files for a find_files or grep that found nothing takes at most this long in all
# (within grep's own bounds per file and per call): the answer is a hint, not a second search.
HINT_SECONDS = 2.0
#: A word worth looking for in a glob or a regex: three or more characters of a name.
WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")

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
            lines: list[str] | None = None  # split once, at the first match that needs the file's lines
            titles: list[Heading] | None = None  # a document's headings, read at its first match
            for number, line, found in search.matches(text, file_seconds):
                in_file += 1
                if in_file > limits.grep_per_file or len(rows) >= limits.grep_matches:
                    left_out += 1
                    capped_files += in_file == limits.grep_per_file + 1
                    continue
                row = f"{entry.rel}:{number}: {_around(line, found, limits.line_chars)}"
                if _METHOD.match(line):
                    lines = text.split("\n") if lines is None else lines
                    owner = enclosing_class(lines, number - 1)
                    row += f"  [in class {owner}]" if owner else ""
                elif titles is None or titles:
                    if titles is None:
                        titles = []
                        if is_document(entry.rel):
                            lines = text.split("\n") if lines is None else lines
                            titles = headings(entry.rel, lines)
                    chain = section_of(titles, number - 1)
                    row += f"  [under {' > '.join(chain)}]" if chain else ""
                rows.append(row)
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
            f"[{too_large} file(s) over {size_text(limits.grep_file_bytes)} were not searched; read_file "
            "or run_command can look into one.]"
        )
    if unreadable:
        more = f" and {len(unreadable) - 3} more" if len(unreadable) > 3 else ""
        names = ", ".join(unreadable[:3]) + more
        notes.append(f"[{len(unreadable)} file(s) could not be searched: {names}.]")
    if walk.truncated:
        notes.append(walk_note(True, limits).strip())
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
    words = sorted(WORDS.findall(_REGEX_SYNTAX.sub(" ", pattern)), key=len, reverse=True)
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


#: A method's line (an indented def) and a class's line, for the class a matched method belongs to.
_METHOD = re.compile(r"^([ \t]+)(?:async[ \t]+)?def[ \t]+\w")
_CLASS = re.compile(r"^[ \t]*class[ \t]+(\w{1,80})\b")
#: How far up a method's class is looked for (a class longer than this is not named).
CLASS_LINES = 3000


def enclosing_class(lines: list[str], index: int) -> str | None:
    """The class that the method defined on ``lines[index]`` (an indented ``def``) belongs to: the first
    line above it that is indented less, when that line opens a class; None for a nested function, a
    method past `CLASS_LINES` lines of its class, or a line that is no method. A grep row names it, so a
    question of which class defines a method is answered by the row that finds the method."""
    method = _METHOD.match(lines[index])
    if method is None:
        return None
    indent = len(method.group(1).expandtabs())
    for k in range(index - 1, max(-1, index - CLASS_LINES), -1):
        line = lines[k]
        body = line.lstrip()
        if not body or body.startswith(("#", "@", ")", "]")):
            continue
        if len(line[: len(line) - len(body)].expandtabs()) < indent:
            owner = _CLASS.match(line)
            return owner.group(1) if owner else None
    return None


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
