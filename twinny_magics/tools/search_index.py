"""The workspace's search index: every visible text file cut into chunks, ranked by BM25 (SQLite FTS5).

Kept beside the workspace, never in it: one SQLite file per workspace in the user's cache folder
(`index_folder`), out of the tools' sight and out of the user's project (nothing is written into the
workspace, which may be read-only, shared or under review). Brought up to date before each search and
map: a walk compares each file's modification time and size with what was indexed and reads only what changed.
The walk is the tools' own (`Confinement.walk`): ignored, hidden and secret files are never read, and
the walk's entry limit holds here too. An update stops reading after `UPDATE_SECONDS`; what it did not
get to is indexed by the next one (the map says how many files wait).

SQLite ships with Python, FTS5 with its SQLite; BM25 is FTS5's own ranking, with a definition's name
weighed over a path's words, and those over the text. A file over `INDEX_CHARS` is indexed by its head;
a binary file is listed, never read as text. An index that is corrupt, from another version, or that
cannot be written (a read-only cache, a link where the file should be) is rebuilt, or kept in memory
for the session: never an error for the user.

What is read back from the index file is not trusted as the files' text. The index says which lines
of which file match; the lines handed out are read from the file at that moment, and a chunk whose
stored text the file no longer holds (changed within its mtime's resolution, or planted) is left out
and its file read again by the next update; a definition's name is shown only where its line holds
it. And an index is kept only in a folder, and a file, that this user owns and no one else can write
(else it is kept in memory): another user cannot leave one for this user's workspace to trust.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import sqlite3
import stat
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from twinny_magics.errors import WorkspaceError
from twinny_magics.naming import (
    NAMED_PATH_BONUS,
    Named,
    hop_names,
    named_bonus,
    named_by_words,
    named_in,
    named_queries,
    project_names,
    project_words,
)
from twinny_magics.outline import Definition, outline
from twinny_magics.retrieval import (
    CHUNK_LINES,
    Chunk,
    FileInfo,
    Survey,
    chunk_bounds,
    index_words,
    match_query,
    path_words,
    query_terms,
)
from twinny_magics.tools.base import ToolLimits
from twinny_magics.tools.files import TextLines, is_binary
from twinny_magics.tools.opening import Entry, Target
from twinny_magics.tools.paths import Confinement
from twinny_magics.tools.search_focus import (
    ASKS_TESTS,
    RAISE_BONUS,
    TEST_PATH,
    TEST_PENALTY,
    TESTS_BONUS,
    assigned_focus,
    called_near,
    copy_penalty,
    defines_bonus,
    enclosing_of,
    env_bonus,
    excludes_tests,
    focus_of,
    from_focus,
    message_bonus,
    named_uses,
    option_bonus,
    setting_bonus,
    spread,
    with_whole,
)

INDEX_VERSION = "3"
#: Where the indexes live, one file per workspace (named by a digest of its path), unless
#: ``TWINNY_MAGICS_INDEX_DIR`` names another folder.
INDEX_DIR_VARIABLE = "TWINNY_MAGICS_INDEX_DIR"
#: Of a file, at most this many characters are indexed (its head; the map says so).
INDEX_CHARS = 1_000_000
#: Characters of a line kept in the index (minified code is one line of megabytes).
LINE_CHARS = 400
#: An update reads files for at most this long; the rest waits for the next one.
UPDATE_SECONDS = 20.0
#: Chunks kept per file in one search's results, so that the best few span more than one file.
PER_FILE = 2
#: A file the question names is shown whole, first, when it has at most this many lines.
WHOLE_LINES = 60
_WHOLE_SCORE = 1000.0
#: Candidates a search adds, per query, for the definitions its question names (``naming.named_queries``).
_NAMED_ROWS = 12
# BM25 column weights: file (unindexed), its path's words, names, words, and the unindexed rest.
_WEIGHTS = "0.0, 4.0, 8.0, 1.0, 0.0, 0.0, 0.0"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, mtime INTEGER, size INTEGER, "
    "indexed TEXT, outline TEXT)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(file UNINDEXED, path, names, words, "
    "start UNINDEXED, end UNINDEXED, body UNINDEXED, tokenize = \"unicode61 tokenchars '_'\")",
    # Which chunks a file has: FTS5 finds rows by their words, not by an unindexed column, so deleting a
    # file's chunks by `file` would read the whole table (a build of 10,000 files went quadratic).
    "CREATE TABLE IF NOT EXISTS chunk_files(id INTEGER PRIMARY KEY, file TEXT)",
    "CREATE INDEX IF NOT EXISTS chunk_files_by_file ON chunk_files(file)",
)


def index_folder() -> Path:
    """The folder of the search indexes: ``$TWINNY_MAGICS_INDEX_DIR``, else the user's cache folder."""
    given = os.environ.get(INDEX_DIR_VARIABLE)
    if given:
        return Path(given)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "twinny_magics" / "index"


class SearchIndex:
    """The index of one workspace (see the module docstring); ``update`` then ``search`` or ``survey``."""

    def __init__(
        self,
        conf: Confinement,
        limits: ToolLimits = ToolLimits(),  # noqa: B008 (frozen)
        *,
        seconds: float = UPDATE_SECONDS,
        persist: bool = True,
    ) -> None:
        self.conf = conf
        self.limits = limits
        self.seconds = seconds
        self.persist = persist
        #: Where the index lives (None: in memory, for this session only).
        self.location: Path | None = None
        self._db: sqlite3.Connection | None = None
        self.last = Survey()

    # -- the database ------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        path = self._place() if self.persist else None
        db = None
        if path is not None:
            try:
                db = self._open(str(path))
            except sqlite3.Error:
                _remove(path)  # corrupt, or not a database at all: rebuilt
                try:
                    db = self._open(str(path))
                except sqlite3.Error:
                    db = None
        if db is None:
            path = None
            db = self._open(":memory:")
        self.location = path
        self._db = db
        return db

    def _open(self, where: str) -> sqlite3.Connection:
        db = sqlite3.connect(where, timeout=5.0, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=DELETE")
            version = None
            with contextlib.suppress(sqlite3.OperationalError):
                row = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
                version = row[0] if row else None
            if version != INDEX_VERSION:
                # Another version's index (or a new one): start afresh.
                for table in ("meta", "files", "chunks", "chunk_files"):
                    db.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (INDEX_VERSION,))
            db.execute("SELECT count(*) FROM chunks").fetchone()  # a damaged table fails here
            db.commit()
        except sqlite3.Error:
            db.close()
            raise
        return db

    def _place(self) -> Path | None:
        """The index file of this workspace in the index folder, or None where it cannot be kept there."""
        folder = index_folder()
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError:
            return None
        digest = hashlib.sha256(os.fsencode(self.conf.root)).hexdigest()[:24]
        path = folder / f"{digest}.sqlite"
        try:
            if not _own(os.stat(folder)):
                return None  # a folder others can write to: any index in it may be theirs
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or not _own(info):
                return None  # a link, a folder, or a file someone else can write: not read, not written
        except FileNotFoundError:
            pass
        except OSError:
            return None
        return path if os.access(folder, os.W_OK) else None

    def close(self) -> None:
        """Close the database (it is opened again when next needed)."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def _reset(self) -> None:
        """Drop a database that failed mid-use and start one in memory."""
        self.close()
        self.persist = False

    # -- keeping it up to date ---------------------------------------------------------------------

    def update(self, seconds: float | None = None) -> Survey:
        """Bring the index up to date with the workspace; the files as they are now.

        Reading stops after ``seconds`` (default: the index's own `seconds`); the rest waits.
        """
        limit = self.seconds if seconds is None else seconds
        try:
            return self._update(limit)
        except sqlite3.Error:
            self._reset()
            return self._update(limit)

    def _update(self, seconds: float) -> Survey:
        db = self._connect()
        known = {
            row[0]: (row[1], row[2], row[3], row[4])
            for row in db.execute("SELECT path, mtime, size, indexed, outline FROM files")
        }
        survey = Survey()
        deadline = time.monotonic() + seconds
        walk = self.conf.walk(Target(self.conf.root, ".", self.conf.root), self.limits.scan_entries)
        seen: set[str] = set()
        for entry in walk:
            if entry.is_dir:
                continue
            try:
                info = entry.real.stat()
            except OSError:
                continue
            seen.add(entry.rel)
            old = known.get(entry.rel)
            if old is not None and old[0] == info.st_mtime_ns and old[1] == info.st_size:
                survey.files.append(FileInfo(entry.rel, info.st_size, _definitions(old[3]), old[2]))
                continue
            if time.monotonic() > deadline:
                survey.pending += 1
                survey.files.append(FileInfo(entry.rel, info.st_size, (), "none"))
                continue
            survey.files.append(self._index(db, entry, info))
        survey.truncated = walk.truncated
        gone = [path for path in known if path not in seen]
        if not walk.truncated:
            for path in gone:
                db.execute("DELETE FROM files WHERE path = ?", (path,))
                _drop_chunks(db, path)
        db.commit()
        self.last = survey
        return survey

    def _index(self, db: sqlite3.Connection, entry: Entry, info: os.stat_result) -> FileInfo:
        """Read one file and put its chunks and outline in the index."""
        _drop_chunks(db, entry.rel)
        lines: list[str] = []
        indexed = "none"
        notebook = entry.real.suffix == ".ipynb"
        try:
            if notebook or not is_binary(entry):
                reader = TextLines(entry, keep=LINE_CHARS, budget=INDEX_CHARS)
                lines = [head for head, _ in reader]
                indexed = "part" if reader.truncated or reader.binary_at is not None else "full"
        except (OSError, WorkspaceError, ValueError):
            lines, indexed = [], "none"
        definitions = outline(entry.rel, "\n".join(lines)) if lines and indexed == "full" else []
        self._add_chunks(db, entry.rel, lines, definitions)
        mtime = info.st_mtime_ns
        with contextlib.suppress(OSError):
            now = entry.real.stat()
            if (now.st_mtime_ns, now.st_size) != (info.st_mtime_ns, info.st_size):
                mtime = -1  # changed while it was read: read again next time
        stored = json.dumps([[d.kind, d.name, d.line, list(d.members)] for d in definitions])
        db.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
            (entry.rel, mtime, info.st_size, indexed, stored),
        )
        return FileInfo(entry.rel, info.st_size, tuple(definitions), indexed)

    def _add_chunks(
        self, db: sqlite3.Connection, path: str, lines: list[str], definitions: list[Definition]
    ) -> None:
        starts = {d.line: d for d in definitions}
        blank = [not line.strip() for line in lines]
        where = path_words(path)
        rows = []
        for first, last in chunk_bounds(len(lines), starts, blank):
            body = lines[first - 1 : last]
            names = [d.name for n, d in starts.items() if first <= n <= last]
            names += [m for n, d in starts.items() if first <= n <= last for m in d.members]
            text = "\n".join(body)
            if not text.strip():
                continue
            rows.append((path, where, index_words(" ".join(names)), index_words(text), first, last, text))
        for row in rows:
            rowid = db.execute("INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?)", row).lastrowid
            db.execute("INSERT INTO chunk_files VALUES (?, ?)", (rowid, path))

    # -- asking it ---------------------------------------------------------------------------------

    def survey(self) -> Survey:
        """Every visible file, with its size and definitions (updating the index first)."""
        return self.update()

    def search(self, words: str, n: int = 4, *, update: bool = True) -> list[Chunk]:
        """The ``n`` chunks that best match ``words`` (at most `PER_FILE` a file), best first; the index
        is brought up to date first unless ``update`` is False (it just was)."""
        if update:
            self.update()
        terms = query_terms(words)
        plain = project_words(terms, words, project_names([f.path for f in self.last.files]))
        terms = [t for t in terms if t not in plain] or terms
        if not terms:
            return []
        named = named_in(words)
        named = replace(named, names=tuple(c for c in named.names if len(c) > 1 or c[0].lower() not in plain))
        if not named.paths:  # "the session log notebook": that file
            named = replace(named, paths=named_by_words(words, [f.path for f in self.last.files]))
            # Its name's words name it, they are not what is asked: other files' chunks with them (a
            # ``log = logging.getLogger`` for "the session log notebook") were ranked beside it.
            its_name = {w for p in named.paths for w in path_words(p.rsplit("/", 1)[-1]).split()}
            terms = [t for t in terms if t.lower() not in its_name] or terms
        focus = focus_of(words, terms, named)
        tests = bool(named) and ASKS_TESTS.search(words) is not None and not excludes_tests(words)
        try:
            found = self._search(terms, n, named, focus=focus, tests=tests, written=words)
        except sqlite3.Error:
            self._reset()
            self.update()
            found = self._search(terms, n, named, focus=focus, tests=tests, written=words)
        if focus is None and found:
            # A named attribute set deep in the best chunk: shown from that line, so what it is set to
            # (the second look, next) fits beside it.
            found = [*from_focus(found[:1], assigned_focus(named)), *found[1:]]
        return self._whole(named, from_focus(found, focus), n)

    def _whole(self, named: Named, found: list[Chunk], n: int) -> list[Chunk]:
        """A short file the question names, whole (`with_whole` says where): a count made from two chunks
        of six is wrong, and a value 14 lines into a 21-line file is missed by a 6-line chunk of it."""
        if not named.paths:
            return found
        for path in [f.path for f in self.last.files if named.names_file(f.path)][:3]:
            lines = self._lines(path, WHOLE_LINES + 1) if self._visible(path) else None
            if lines and len(lines) <= WHOLE_LINES:
                return with_whole(named, Chunk(path, 1, len(lines), tuple(lines), (), _WHOLE_SCORE), found, n)
        return found

    def _search(
        self,
        terms: list[str],
        n: int,
        named: Named | None = None,
        *,
        focus: re.Pattern[str] | None = None,
        tests: bool = False,
        written: str = "",
    ) -> list[Chunk]:
        db = self._connect()
        select = (
            f"SELECT file, start, end, body, bm25(chunks, {_WEIGHTS}) AS rank FROM chunks "
            "WHERE chunks MATCH ? ORDER BY rank LIMIT ?"
        )
        rows = db.execute(select, (match_query(terms), max(n * 12, 48))).fetchall()
        # A definition the question names (``X in a/b.py``, ``X.y``) is looked for by its own words too:
        # a method or a constant is not among a file's chunk names, and a plain-word query may miss it.
        extras: list[tuple[str, str, tuple[str, ...]]] = [
            (q, select, ()) for q in named_queries(named or Named())
        ]
        # A file named, no definition: its chunks with the words, ranked as the words rank them.
        files: list[str] = []
        if named is not None and not named and named.paths:
            files = [f.path for f in self.last.files if named.names_file(f.path)][:8]
        if files:
            within = select.replace("WHERE", f"WHERE file IN ({', '.join('?' * len(files))}) AND")
            extras.append((match_query(terms), within, tuple(files)))
        for extra, query, args in extras:
            found = db.execute(query, (*args, extra, _NAMED_ROWS)).fetchall()
            seen = {(row[0], row[1]) for row in rows}
            rows += [row for row in found if (row[0], row[1]) not in seen]
        ranked: list[_Candidate] = []
        wanted = set(terms)
        outlines: dict[str, tuple[Definition, ...]] = {}
        no_tests, asks_tests = excludes_tests(written), ASKS_TESTS.search(written) is not None
        # Every row is scored before PER_FILE holds: a file's third chunk by BM25 may be what is asked
        # (the named function's body past its def, the message, the setting) once its bonus is added.
        for path, start, end, body, rank in rows:
            if not isinstance(path, str) or not self._visible(path) or (no_tests and TEST_PATH.search(path)):
                continue
            if (bounds := _bounds(start, end)) is None:
                continue
            plain = setting_bonus(written, named, path) + message_bonus(written, str(body), wanted)
            aside = not asks_tests and TEST_PATH.search(path) is not None  # a test, not asked about
            plain -= (TEST_PENALTY if aside else 0.0) + copy_penalty(written, path)
            plain += option_bonus(written, str(body)) + env_bonus(written, str(body))
            first, last = bounds
            if path not in outlines:  # one read of a file's outline, however many of its chunks match
                outlines[path] = _file_definitions(db, path)
            defined = tuple(d for d in outlines[path] if first <= d.line <= last)
            score = -float(rank) + (0.0 if aside else defines_bonus(defined, wanted, written)) + plain
            if named:
                before = [d for d in outlines[path] if d.line <= first]
                enclosing = max(before, key=lambda d: d.line).name if before else None
                score += named_bonus(named, path, str(body).splitlines(), enclosing)
                # "What does X raise", "the default of X's y": the chunk of X (or of the named file) that
                # raises, or that gives y its default — not X's docstring.
                inside = enclosing in {chain[-1] for chain in named.names} or named.names_file(path)
                if focus is not None and inside and focus.search(str(body)):
                    score += RAISE_BONUS
                if tests and TEST_PATH.search(path) and named_uses(named, str(body)):
                    score += TESTS_BONUS
            elif named is not None and named.names_file(path):
                score += NAMED_PATH_BONUS
            ranked.append(_Candidate(path, first, last, str(body), defined, score))
        ranked.sort(key=lambda c: -c.score)
        ranked = spread(ranked, PER_FILE)
        if named and ranked:
            # A second look, from what the best chunk says of a named name: the value it is set to comes
            # next (it is the answer's subject), a base class after the next best (it is context).
            values, bases = hop_names(named, ranked[0].body.splitlines())
            for names, at in ((bases, 2), (values, 1)):
                hop = self._hop(db, names, {(c.path, c.first) for c in ranked[: n + 1]})
                if hop is not None:
                    ranked.insert(at, hop)
        if focus is not None and ranked:  # what the line asked about calls (``default=config_location()``)
            best = {(ranked[0].path, ranked[0].first)}
            if (hop := self._hop(db, called_near(focus, ranked[0].body.splitlines()), best)) is not None:
                ranked = [
                    ranked[0],
                    hop,
                    *[c for c in ranked[1:] if (c.path, c.first) != (hop.path, hop.first)],
                ]
        return self._hand_out(db, ranked, n)

    def _hop(
        self, db: sqlite3.Connection, names: list[str], shown: set[tuple[str, int]]
    ) -> _Candidate | None:
        """The best chunk that defines one of ``names`` (a base class of a named class, the function a
        named attribute is set to) and is not among ``shown``: a second look."""
        if not names:
            return None
        hop = Named((), tuple((name,) for name in names[:3]))
        best: _Candidate | None = None
        for query in named_queries(hop):
            for path, start, end, body, rank in db.execute(
                f"SELECT file, start, end, body, bm25(chunks, {_WEIGHTS}) FROM chunks WHERE chunks MATCH ? "
                "ORDER BY 5 LIMIT ?",
                (query, _NAMED_ROWS),
            ):
                bounds = _bounds(start, end)
                if not isinstance(path, str) or bounds is None or (path, bounds[0]) in shown:
                    continue
                if not self._visible(path) or named_bonus(hop, path, str(body).splitlines(), None) <= 0:
                    continue
                score = -float(rank)
                if best is None or score > best.score:
                    best = _Candidate(path, bounds[0], bounds[1], str(body), (), score)
        return best

    def _hand_out(self, db: sqlite3.Connection, ranked: list[_Candidate], n: int) -> list[Chunk]:
        """The best ``n`` candidates whose text the file holds now, each with the file's own lines.

        The index only says which lines to show: what they say is read from the file (the index file
        may have been written by someone else, or the file changed within its mtime's resolution).
        A chunk the file does not hold is left out and its file read again by the next update.
        """
        reach: dict[str, int] = {}  # a file is read once, as far as its furthest candidate
        for c in ranked:
            reach[c.path] = max(reach.get(c.path, 0), c.last)
        files: dict[str, list[str] | None] = {}
        stale: set[str] = set()
        out: list[Chunk] = []
        for c in ranked:
            if len(out) == n:
                break
            if c.path not in files:
                files[c.path] = self._lines(c.path, reach[c.path])
            lines = files[c.path]
            held = tuple(lines[c.first - 1 : c.last]) if lines is not None and len(lines) >= c.last else None
            if held is None or "\n".join(held) != c.body:
                stale.add(c.path)
                continue
            # A definition counts only where the file's line holds its name.
            names = tuple(d.name for d in c.defined if d.name and d.name in held[d.line - c.first])
            within = enclosing_of(held, _file_definitions(db, c.path), c.first)
            out.append(Chunk(c.path, c.first, c.last, held, names, c.score, within))
        if stale:
            db.executemany("UPDATE files SET mtime = -1 WHERE path = ?", [(p,) for p in sorted(stale)])
            db.commit()
        return out

    def _lines(self, path: str, count: int) -> list[str] | None:
        """The first ``count`` lines of a file as the index reads them; None if it cannot be read now."""
        try:
            target = self.conf.resolve(path)
            reader = TextLines(target, keep=LINE_CHARS, budget=INDEX_CHARS)
            return [head for head, _ in itertools.islice(reader, count)]
        except (OSError, WorkspaceError, ValueError):
            return None

    def _visible(self, path: str) -> bool:
        """Whether a file the index holds is still one the tools would read (the rules may have changed)."""
        try:
            self.conf.resolve(path)
        except WorkspaceError:
            return False
        return True


@dataclass(frozen=True)
class _Candidate:
    """A chunk as the index holds it, ranked, before its text is checked against the file."""

    path: str
    first: int
    last: int
    body: str
    defined: tuple[Definition, ...]
    score: float


def _bounds(start: object, end: object) -> tuple[int, int] | None:
    """A stored chunk's first and last line, or None when they are not a chunk's (see `chunk_bounds`)."""
    if not isinstance(start, int) or not isinstance(end, int):
        return None
    if start < 1 or end < start or end - start >= CHUNK_LINES:
        return None
    return start, end


def _file_definitions(db: sqlite3.Connection, path: str) -> tuple[Definition, ...]:
    row = db.execute("SELECT outline FROM files WHERE path = ?", (path,)).fetchone()
    return _definitions(row[0] if row else None)


def _definitions(stored: Any) -> tuple[Definition, ...]:
    try:
        data = json.loads(stored) if stored else []
        return tuple(
            Definition(str(k), str(name), int(line), tuple(map(str, members)))
            for k, name, line, members in data
        )
    except (ValueError, TypeError):
        return ()


def _drop_chunks(db: sqlite3.Connection, path: str) -> None:
    """Delete a file's chunks (by their row ids: see `_SCHEMA`)."""
    ids = [row[0] for row in db.execute("SELECT id FROM chunk_files WHERE file = ?", (path,))]
    if ids:
        db.executemany("DELETE FROM chunks WHERE rowid = ?", [(i,) for i in ids])
        db.execute("DELETE FROM chunk_files WHERE file = ?", (path,))


def _own(info: os.stat_result) -> bool:
    """Whether only this user can change a file or folder: theirs, and not writable by group or others.

    The index is read back as the chunks the model is shown, so it must be one this user wrote: on a
    shared machine (or a shared ``$TWINNY_MAGICS_INDEX_DIR``) another user could have left one there.
    """
    if not hasattr(os, "geteuid"):  # no owners to compare (Windows): the user's own profile folder
        return True
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _remove(path: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(str(path) + suffix)
