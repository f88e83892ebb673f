"""A workspace file as the tools read it, and the read_file tool.

What every file tool shares: a path required to exist (`require`), a plain file told from a pipe or a
device, binary told from text, a file's lines read within a budget (`TextLines`), the text as the tools
show it with every secret masked (`shown_text`), and how sizes and a cut-short walk are said. Listing and
finding are in `listing`, searching file contents in `grep`.

Each tool takes the `Confinement` and the `ToolLimits` and returns the text the model reads; anything the
model can fix is raised as a `WorkspaceError` whose message says what to do instead. Every result stays
inside its limit and says how to ask for the rest, because a small model's window holds only a few.
"""

from __future__ import annotations

import hashlib
import io
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import MASK, mask_secrets
from twinny_magics.tools.base import ToolLimits, call_text
from twinny_magics.tools.notebook import notebook_lines
from twinny_magics.tools.opening import Entry, Target, open_file
from twinny_magics.tools.paths import Confinement, shown

BINARY_SNIFF_BYTES = 8192


def require(
    conf: Confinement, raw: object, limits: ToolLimits, *, want: str = "any", missing_hint: str = ""
) -> Target:
    """An existing path of the kind ``want`` ("file", "dir" or "any"), or an error saying what exists."""
    target = conf.resolve(raw)
    if not target.real.exists() and (other := _other_layout(conf, target.rel)) is not None:
        target = other
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


def _other_layout(conf: Confinement, rel: str) -> Target | None:
    """The file a path means in the workspace's other layout, when that one exists: ``pkg/cli.py`` for
    ``src/pkg/cli.py`` in a flat project and the reverse in a ``src/`` one (a small model writes the
    layout it has seen most, and repeated the failing call three times after "Did you mean")."""
    other = rel.removeprefix("src/") if rel.startswith("src/") else f"src/{rel}"
    if other == rel or other in ("", "src/."):
        return None
    try:
        target = conf.resolve(other)
    except WorkspaceError:
        return None
    return target if target.real.exists() else None


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a plain file: opening a pipe or a device would block or never end."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def is_binary(file: Target | Entry) -> bool:
    """Whether a file looks binary (see `looks_binary`); opened with `opening.open_file`'s checks."""
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


def size_text(size: int) -> str:
    """A file size as people write it: ``512 B``, ``1.5 KB``, ``2.0 MB``."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def walk_note(truncated: bool, limits: ToolLimits) -> str:
    """The note a search adds when its walk stopped at the entry limit ('' when it did not)."""
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
        size = size_text(target.real.stat().st_size)
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


# --- the text as shown -----------------------------------------------------------------------------

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
