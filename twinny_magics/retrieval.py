"""Words, chunks and their text: the pure half of the workspace map, the ranked search and the evidence.

Pure: no I/O. `tools.search_index` walks the workspace and keeps the index; this module decides what a
question's words are, where a file is cut into chunks, how files rank for a question, and how the map,
the search results and the evidence are written within a character budget.

Words are what a reader of code searches by: identifiers whole (``merge_with``) and in their parts
(``merge``, ``with``; ``groupBy`` -> ``group``, ``by``), lower-cased, in any script (``\\w`` is Unicode).
A question's common words (``what``, ``which``, ``file``…) are dropped: they match everything.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .outline import Definition

_WORD = re.compile(r"\w+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
#: At most this many words of a question are searched for.
MAX_TERMS = 24
#: A chunk is at most this many lines; a definition starts a new one once the chunk has `MIN_CHUNK_LINES`.
CHUNK_LINES = 40
MIN_CHUNK_LINES = 6

STOPWORDS = frozenset(
    """a an and are as at be been by can could did do does doing for from had has have how i if in into
    is it its me my no not of on or our should so than that the their them then there these they this
    those to was we were what when where which while who whom why will with would you your
    tell show find give list say please about does file files line lines number numbers name named
    defined define defines definition where which value values code function functions method methods
    class classes module modules workspace folder project repository repo many much used use uses
    using call calls called return returns returned exactly answer""".split()  # noqa: SIM905 (a word list)
)


@functools.lru_cache(maxsize=65536)
def _parts(token: str) -> tuple[str, ...]:
    return tuple(_identifier_parts(token))


def identifier_parts(token: str) -> list[str]:
    """``token`` lower-cased, then its parts when it has several (snake_case, camelCase, digits).

    camelCase is split only in ASCII words (``Größe`` is one word, not ``gr`` and ``ße``).
    """
    return list(_parts(token))


def _identifier_parts(token: str) -> list[str]:
    low = token.lower()
    parts: list[str] = []
    for piece in token.split("_"):
        if piece.isascii():
            parts.extend(p.lower() for p in _CAMEL.findall(piece))
        else:
            parts.append(piece.lower())
    parts = [p for p in parts if p != low]
    return [low, *dict.fromkeys(parts)] if len(parts) > 1 or (parts and parts[0] != low) else [low]


def index_words(text: str) -> str:
    """The words of ``text`` as the index holds them: each identifier whole and in its parts."""
    out: list[str] = []
    for token in _WORD.findall(text):
        out.extend(_parts(token))
    return " ".join(out)


def query_terms(question: str) -> list[str]:
    """The words of a question worth searching for, most specific first (names before plain words).

    A name written as code (``merge_with``, ``groupBy``, ``MAX_SIZE``) comes whole and in its parts; a
    common question word is dropped; at most `MAX_TERMS`, without repeats.
    """
    named: list[str] = []
    plain: list[str] = []
    for token in _WORD.findall(question):
        if len(token) < 2 and not token.isdigit():
            continue
        parts = identifier_parts(token)
        whole = parts[0]
        code_like = "_" in token or token[1:] != token[1:].lower() or any(c.isdigit() for c in token)
        if whole in STOPWORDS and not code_like:
            continue
        (named if code_like else plain).append(whole)
        for part in parts[1:]:
            if part not in STOPWORDS and len(part) > 1:
                plain.append(part)
    return list(dict.fromkeys([*named, *plain]))[:MAX_TERMS]


def match_query(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the terms (each quoted, so no word is read as an operator)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def path_words(path: str) -> str:
    """The words of a file's path (``toolz/itertoolz.py`` -> ``toolz itertoolz py``)."""
    return index_words(path.replace("/", " ").replace(".", " ").replace("-", " "))


def chunk_bounds(lines: int, starts: Iterable[int], blank: Sequence[bool] = ()) -> list[tuple[int, int]]:
    """Where a file of ``lines`` lines is cut into chunks: (first, last) line numbers, 1-based.

    A definition (its first line in ``starts``) begins a new chunk once the current one has
    `MIN_CHUNK_LINES`; no chunk is longer than `CHUNK_LINES`. Without definitions a chunk ends at a blank
    line (``blank[n - 1]`` for line n) once it is half that long.
    """
    begin = set(starts)
    out: list[tuple[int, int]] = []
    first = 1
    for number in range(1, lines + 1):
        size = number - first
        cut = size >= CHUNK_LINES or (number in begin and size >= MIN_CHUNK_LINES)
        if (
            not cut
            and not begin
            and size >= CHUNK_LINES // 2
            and number - 2 < len(blank)
            and blank[number - 2]
        ):
            cut = True
        if cut and number > first:
            out.append((first, number - 1))
            first = number
    if lines >= first:
        out.append((first, lines))
    return out


# -- what the map and the search show --------------------------------------------------------------------


@dataclass(frozen=True)
class FileInfo:
    """A file as the map lists it: path, size in bytes, definitions, and how far it was indexed
    (``full``, ``part`` for the head of a long file, ``none`` for binary, huge or not yet read)."""

    path: str
    size: int
    definitions: tuple[Definition, ...] = ()
    indexed: str = "full"


@dataclass(frozen=True)
class Chunk:
    """Lines of one file that matched a search: the first and last line numbers and the lines."""

    path: str
    start: int
    end: int
    lines: tuple[str, ...]
    names: tuple[str, ...] = ()
    score: float = 0.0
    #: The definition the chunk's first line is inside, when the chunk does not show its line
    #: (``class ScalarIndentationTestCase``: "which test class holds test_x" from a chunk of its methods).
    within: str = ""


@dataclass
class Survey:
    """Every visible file of a workspace as the index saw it, and what it could not get to."""

    files: list[FileInfo] = field(default_factory=list)
    #: The walk stopped at its entry limit: files past it are not listed.
    truncated: bool = False
    #: Files not (re)indexed because the update ran out of time; the next one carries on.
    pending: int = 0


def size_text(size: int) -> str:
    """A size as a person reads it: 812 B, 9.4 KB, 27 MB."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB" if size < 10 * 1024 else f"{size // 1024} KB"
    return f"{size / (1024 * 1024):.1f} MB" if size < 10 * 1024 * 1024 else f"{size // (1024 * 1024)} MB"


def file_score(info: FileInfo, terms: Sequence[str]) -> float:
    """How relevant a file looks for a question's terms: its path's words, then its definitions' names.

    A term that is a definition's name counts most (a question about ``groupby`` wants the file that
    defines it); a term in the path next; every file with definitions gets a little over one without,
    and a deep file a little less than a shallow one, so that with no term matching the map shows the
    source's top first.
    """
    wanted = set(terms)
    score = 0.0
    path = set(path_words(info.path).split())
    score += 3.0 * len(wanted & path)
    defined: set[str] = set()  # functions, classes and the like
    assigned: set[str] = set()  # constants and variables (often a name re-exported from elsewhere)
    parts: set[str] = set()
    for d in info.definitions:
        for name in (d.name, *d.members):
            split = identifier_parts(name)
            (assigned if d.kind in ("const", "var") and name == d.name else defined).add(split[0])
            parts.update(split[1:])
    score += 5.0 * len(wanted & defined) + 2.0 * len(wanted & assigned - defined) + 1.0 * len(wanted & parts)
    if info.definitions:
        score += 0.5
    score -= 0.1 * info.path.count("/")
    return score


def _definition_text(d: Definition, wanted: set[str]) -> str:
    members = ""
    if d.members:
        hit = [m for m in d.members if m.lower() in wanted]
        rest = [m for m in d.members if m.lower() not in wanted]
        shown = [*hit, *rest][:8]
        more = len(d.members) - len(shown)
        members = " (" + ", ".join(shown) + (f", +{more}" if more > 0 else "") + ")"
    return f"{d.kind} {d.name} {d.line}{members}"


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _wanted(d: Definition, wanted: set[str]) -> bool:
    return d.name.lower() in wanted or bool(wanted & {m.lower() for m in d.members})


def _file_line(info: FileInfo, wanted: set[str], room: int) -> str:
    """One file's line of the map: path, size, then as many definitions as ``room`` holds."""
    head = f"{info.path} {size_text(info.size)}" + (
        " (only its head indexed)" if info.indexed == "part" else ""
    )
    # Dunder names (``__all__``, ``__version__``) say little about where things are: left out unless asked.
    shown_defs = [d for d in info.definitions if not _dunder(d.name) or d.name.lower() in wanted]
    if not shown_defs:
        return head
    ranked = sorted(shown_defs, key=lambda d: (not _wanted(d, wanted), d.line))
    texts: list[tuple[int, str]] = []
    used = len(head) + 2
    for d in ranked:
        text = _definition_text(d, wanted)
        if used + len(text) + 2 > room:
            if texts:
                break
            text = text[: max(0, room - used - 3)] + "…"
        texts.append((d.line, text))
        used += len(text) + 2
    shown = [text for _, text in sorted(texts)]
    more = len(shown_defs) - len(shown)
    tail = f"; +{more} more" if more > 0 else ""
    return f"{head}: " + "; ".join(shown) + tail


MAP_LEAD = (
    "Workspace map (files with their sizes and top-level definitions with line numbers, the most relevant "
    "to the question first):"
)


def render_map(survey: Survey, terms: Sequence[str], chars: int) -> str:
    """The workspace map within ``chars`` ('' when not even its first line fits): the files most
    relevant to ``terms`` first and in detail, then others by name, then counts per folder of what did
    not fit (and what the walk did not reach)."""
    wanted = set(terms)
    files = survey.files
    if len(MAP_LEAD) + 12 > chars:
        return ""
    if not files:
        return MAP_LEAD + "\n(no files)" if len(MAP_LEAD) + 11 <= chars else MAP_LEAD
    ranked = sorted(files, key=lambda f: (-file_score(f, terms), f.path))
    notes = []
    if survey.truncated:
        notes.append(
            "[The workspace has more files than the map looks at; find_files and grep see them all.]"
        )
    if survey.pending:
        notes.append(f"[{survey.pending} files not indexed yet (definitions and search come later).]")
    budget = chars - len(MAP_LEAD) - sum(len(n) + 1 for n in notes) - (_LEFT_OUT_CHARS + 1)
    chosen: dict[str, str] = {}
    used = 0
    # The best few get up to a third of the map each; then every file that fits gets a line of its own.
    for rank, info in enumerate(ranked):
        left = budget - used
        if left <= len(info.path) + 12:
            break
        room = min(left, max(budget // 3, 160) if rank < 3 else 160)
        line = _file_line(info, wanted, room)
        if len(line) + 1 > left:
            line = f"{info.path} {size_text(info.size)}"
            if len(line) + 1 > left:
                continue
        chosen[info.path] = line
        used += len(line) + 1
    # Best first: a small model takes the first file that looks right (sorted by path, a re-export in
    # curried/__init__.py came before the file that defines the function, and was taken).
    lines = list(chosen.values())
    left_out = Counter(_folder(f.path) for f in files if f.path not in chosen)
    wrapper = "[Not shown, by folder: {}; list_dir lists a folder.]"
    counts = ", ".join(f"{folder or '.'}: {n}" for folder, n in sorted(left_out.items(), key=lambda i: -i[1]))
    tail = [wrapper.format(_clip(counts, _LEFT_OUT_CHARS - len(wrapper) + 2))] if left_out else []
    text = "\n".join([MAP_LEAD, *lines, *tail, *notes])
    # A guard (the budget above leaves room for the notes): drop file lines, then the notes, never the lead.
    while len(text) > chars and (lines or tail or notes):
        if lines:
            lines.pop()
        elif notes:
            notes.pop()
        else:
            tail.pop()
        text = "\n".join([MAP_LEAD, *lines, *tail, *notes])
    return text


#: The line that counts what the map left out, by folder, is cut to this.
_LEFT_OUT_CHARS = 240


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_chunks(chunks: Sequence[Chunk], chars: int, line_chars: int = 200) -> str:
    """Chunks as numbered lines under a ``path (names):`` heading each, within ``chars`` in all.

    A chunk whose heading and first lines do not fit is left out; the last one shown may be cut at a
    line, with a note that says how to read on (room for it is always kept). No number is written
    but the lines' own: a small model answered "line 94" from a read-on hint's ``start_line: 94``.
    """
    out: list[str] = []
    total = -1  # the length of "\n".join(out), counting the separator each new line adds

    def room_for(*lines: str) -> bool:
        return total + sum(len(line) + 1 for line in lines) <= chars

    for chunk in chunks:
        said = [f"in {chunk.within}"] if chunk.within else []
        said += list(chunk.names[:4])
        names = f" ({', '.join(said)})" if said else ""
        head = f"{chunk.path}{names}:"
        reads_on = f"[… {chunk.path} goes on: read_file with start_line at the next line's number reads it.]"
        lines = list(chunk.lines)
        first = chunk.start
        while lines and not lines[0].strip():  # a chunk's leading blank lines say nothing
            lines.pop(0)
            first += 1
        while lines and not lines[-1].strip():
            lines.pop()
        width = len(str(first + len(lines) - 1))
        rows = []
        for offset, line in enumerate(lines):
            text = line if len(line) <= line_chars else line[:line_chars] + " …"
            rows.append(f"{first + offset:>{width}}: {text}")
        if not rows or not room_for(head, *rows[:3], reads_on):
            if out:
                break
            continue
        out.append(head)
        total += len(head) + 1
        for index, row in enumerate(rows):
            last = index == len(rows) - 1
            if room_for(row) if last else room_for(row, reads_on):
                out.append(row)
                total += len(row) + 1
                continue
            out.append(reads_on)
            return "\n".join(out)
    return "\n".join(out)


# -- the head start: what the loop gives the model before its first step -------------------------------

#: The pseudo-call the head start comes back as (no tool of that name is offered: it is never run).
HEAD_START_TOOL = "head_start"
#: What the assistant turn that "asks" for it says (in text mode, all of it).
HEAD_START_LEAD = "First, what the loop found in the workspace for this question."
HEAD_START_INTRO = (
    "Found by the loop before your first step (not by you): {what}. It is a start, not the whole "
    "workspace: read_file reads any file in full, grep searches for exact text."
)
#: With both on, the map gets this share of the head start and the evidence the rest: a map lists where
#: things are, the evidence is the lines themselves, and the answer is more often in the lines.
MAP_SHARE = 0.4
SEARCH_LEAD = "Best matches for the question's words (ranked search):"


def head_start_text(survey: Survey | None, chunks: Sequence[Chunk], terms: Sequence[str], chars: int) -> str:
    """The head start within ``chars``: the intro, the map (when ``survey`` is given) and the evidence.

    '' when neither fits (or there is neither); the intro names only what is there.
    """
    longest = HEAD_START_INTRO.format(what=f"{_MAP_WHAT} and {_EVIDENCE_WHAT}")
    room = chars - len(longest) - 1
    parts: list[str] = []
    what: list[str] = []
    if survey is not None and room > len(MAP_LEAD) + 40:
        share = room if not chunks else int(room * MAP_SHARE)
        text = render_map(survey, terms, share)
        if text:
            parts.append(text)
            what.append(_MAP_WHAT)
            room -= len(text) + 1
    if chunks and room > len(SEARCH_LEAD) + 120:
        evidence = render_chunks(chunks, room - len(SEARCH_LEAD) - 1)
        if evidence:
            parts.append(f"{SEARCH_LEAD}\n{evidence}")
            what.append(_EVIDENCE_WHAT)
    if not parts:
        return ""
    return "\n".join([HEAD_START_INTRO.format(what=" and ".join(what)), *parts])


_MAP_WHAT = "a map of the workspace"
_EVIDENCE_WHAT = "the parts of files that best match the question's words"


def search_text(words: str, chunks: Sequence[Chunk], chars: int, files: int) -> str:
    """The search tool's answer: the best chunks, or what to try when nothing matched."""
    if not chunks:
        terms = query_terms(words)
        line = (
            f"No part of the {files} files indexed matches {words!r}. Try other words (a name from the code)"
        )
        if not terms:
            return line + "."
        call = '{"name": "grep", "arguments": {"pattern": "(?i)' + max(terms, key=len) + '"}}'
        return f"{line}, or grep for exact text: {call}"
    head = f"{len(chunks)} best match{'es' if len(chunks) != 1 else ''} for {words!r} (read_file reads on):"
    return head + "\n" + render_chunks(chunks, chars - len(head) - 1)
