"""The task benchmark's workspace and tasks: the source of toolz 1.0.0, a notebook that uses it, 36 tasks.

The workspace is real code nobody here wrote: the sdist of ``toolz==1.0.0`` from PyPI (BSD-3), pinned
by sha256, unpacked at run time, plus ``notebooks/orders.ipynb`` (written here, with its outputs). Why
toolz: pure Python in several modules (itertoolz, functoolz, dicttoolz, recipes, utils, curried/,
sandbox/, tlz/) with their tests beside them, files too big for one read at a 4,096-token window
(itertoolz.py and functoolz.py are over 1,000 lines; a 150-line read is cut at about 2,700 characters
there), cross-module imports to ask about, and content that does not move: 1.0.0 is a mature release of
a slow-moving library, and the archive is checked byte for byte.

Every task has a kind (``KINDS``) and a check made from the source itself where it can be (line numbers
and counts are computed, values asserted), so a task can never disagree with the files. Answers are
judged by :class:`Answer`, which reads the way models write: ``toolz/itertoolz.py``, ``itertoolz.py``,
``toolz.itertoolz`` and "the itertoolz module" are one file; ``two`` is 2. With one thing asked, the
candidate the answer names *first* is its answer (so "in utils.py; itertoolz.py imports it" passes, and
"itertoolz.py, or maybe utils.py" does not); with several asked, all must be named and no listed wrong
one. A reply the model did not answer (the loop then lists what its steps found) fails, even when that
list holds the answer. Edits are judged on the files: the target with exactly the intended change (a
little whitespace or quoting aside) and no other file changed (:class:`~twinny_magics.experiment.Files`).

``python benchmarks/tasks_toolz.py fetch`` puts the sdist in the cache (``scripts/setup.sh`` does, for
the tests); ``check`` says whether it is there.
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
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from twinny_magics.experiment import Files, Question

if TYPE_CHECKING:
    from twinny_magics.events import Reply

# -- the pinned source --------------------------------------------------------------------------------

PACKAGE = "toolz"
VERSION = "1.0.0"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
SDIST_SHA256 = "2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02"
NOTEBOOK = "notebooks/orders.ipynb"


def cache_dir() -> Path:
    """Where the sdist is kept: ``$TWINNY_BENCH_CACHE``, else the user's cache folder (outside the repo)."""
    own = os.environ.get("TWINNY_BENCH_CACHE")
    if own:
        return Path(own)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "twinny_magics" / "sdists"


def sha256(path: Path) -> str:
    """The file's sha256, hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


class SourceMissing(RuntimeError):
    """The pinned sdist is not in the cache (or is not the pinned file)."""


def cached_sdist(cache: Path | None = None) -> Path:
    """The pinned sdist in the cache, checked by sha256; SourceMissing says how to get it."""
    path = (cache or cache_dir()) / SDIST
    if not path.is_file():
        raise SourceMissing(
            f"The task benchmark's source ({SDIST}) is not in {path.parent}. Fetch it (PyPI only, checked "
            "by sha256): `.venv/bin/python benchmarks/tasks_toolz.py fetch` — or `source scripts/setup.sh "
            "&& setup_bench_sources`; scripts/test.sh does it."
        )
    digest = sha256(path)
    if digest != SDIST_SHA256:
        raise SourceMissing(
            f"{path} is not the pinned {SDIST} (sha256 {digest}, expected {SDIST_SHA256}); delete it and "
            "fetch it again: `.venv/bin/python benchmarks/tasks_toolz.py fetch`."
        )
    return path


def fetch_sdist(cache: Path | None = None, *, quiet: bool = True) -> Path:
    """The pinned sdist, downloaded from PyPI with pip when it is not cached yet; checked by sha256."""
    folder = cache or cache_dir()
    try:
        return cached_sdist(folder)
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
            f"{PACKAGE}=={VERSION}",
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        got = Path(temp) / SDIST
        if done.returncode != 0 or not got.is_file():
            raise SourceMissing(
                f"pip could not download {SDIST}:\n{done.stdout[-1500:]}{done.stderr[-1500:]}"
            )
        digest = sha256(got)
        if digest != SDIST_SHA256:
            raise SourceMissing(f"PyPI gave a {SDIST} with sha256 {digest}, not the pinned {SDIST_SHA256}.")
        shutil.move(str(got), folder / SDIST)
    if not quiet:
        print(f"fetched {SDIST} into {folder}")
    return cached_sdist(folder)


def unpack(sdist: Path, root: Path) -> Path:
    """The sdist's files under ``root`` (its top folder stripped), and the notebook; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    top = f"{PACKAGE}-{VERSION}/"
    with tarfile.open(sdist, "r:gz") as archive:
        for member in archive.getmembers():
            if not member.isfile() or not member.name.startswith(top):
                continue  # folders are made as needed; nothing else (links, devices) is taken
            rel = PurePosixPath(member.name[len(top) :])
            if rel.is_absolute() or ".." in rel.parts:
                raise ValueError(f"{sdist} holds a path outside its folder: {member.name}")
            target = root.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            assert source is not None
            target.write_bytes(source.read())
    notebook = root / NOTEBOOK
    notebook.parent.mkdir(parents=True, exist_ok=True)
    notebook.write_text(json.dumps(notebook_json(), indent=1) + "\n", encoding="utf-8")
    return root


def build_workspace(root: Path, cache: Path | None = None) -> Path:
    """The benchmark's workspace at ``root``: the cached sdist unpacked, and the notebook."""
    return unpack(cached_sdist(cache), root)


# -- the notebook ----------------------------------------------------------------------------------------

#: (kind, source, output of the cell's last expression or None). The outputs are what running the cells
#: against toolz 1.0.0 gives (tests/test_bench_tasks.py runs them to check).
NOTEBOOK_CELLS: tuple[tuple[str, str, str | None], ...] = (
    ("markdown", "# Orders by region\n\nLast week's orders, summed per region with toolz.", None),
    (
        "code",
        "from toolz import groupby, valmap, topk, pipe\n"
        "from toolz.curried import map, filter\n"
        "\n"
        "LARGE_ORDER = 250  # dollars: orders above this go to review\n"
        "orders = [\n"
        '    {"id": 101, "region": "north", "total": 120},\n'
        '    {"id": 102, "region": "south", "total": 340},\n'
        '    {"id": 103, "region": "north", "total": 75},\n'
        '    {"id": 104, "region": "east", "total": 410},\n'
        '    {"id": 105, "region": "south", "total": 95},\n'
        '    {"id": 106, "region": "east", "total": 260},\n'
        '    {"id": 107, "region": "north", "total": 180},\n'
        "]",
        None,
    ),
    (
        "code",
        'by_region = groupby(lambda o: o["region"], orders)\n'
        'totals = valmap(lambda os: sum(o["total"] for o in os), by_region)\n'
        "totals",
        "{'north': 375, 'south': 435, 'east': 670}",
    ),
    ("markdown", "## Large orders\n\nThe ids of the orders to review.", None),
    (
        "code",
        'large = pipe(orders, filter(lambda o: o["total"] > LARGE_ORDER), map(lambda o: o["id"]), list)\n'
        "large",
        "[102, 104, 106]",
    ),
    (
        "code",
        'topk(2, orders, key=lambda o: o["total"])',
        "({'id': 104, 'region': 'east', 'total': 410}, {'id': 102, 'region': 'south', 'total': 340})",
    ),
)


def notebook_json() -> dict[str, Any]:
    """The notebook as nbformat 4 JSON, with its outputs."""
    cells = []
    count = 0
    for kind, source, output in NOTEBOOK_CELLS:
        lines = source.splitlines(keepends=True)
        if kind == "markdown":
            cells.append({"cell_type": "markdown", "metadata": {}, "source": lines})
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
        cells.append(
            {
                "cell_type": "code",
                "execution_count": count,
                "metadata": {},
                "outputs": outputs,
                "source": lines,
            }
        )
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


# -- judging answers -------------------------------------------------------------------------------------


def no_answer_prefix() -> str:
    """How the loop starts a reply whose model wrote a call instead of an answer (see twinny_magics.notes)."""
    from twinny_magics import notes

    return str(getattr(notes, "NO_ANSWER", "The model did not answer"))


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


class Answer:
    """A check of an answer: it names what is right and not what is wrong (see the module docstring).

    With one right term, the candidate named first decides; with several, every right one must be named
    and no wrong one. Callable as an experiment check ``(reply, workspace) -> True | reason``.
    """

    def __init__(self, right: Sequence[Term], wrong: Sequence[Term] = ()) -> None:
        if not right:
            raise ValueError("An answer check needs at least one right term.")
        self.right = tuple(right)
        self.wrong = tuple(wrong)
        # The experiment saves a function check by this name and refuses to resume results whose checks
        # differ; the terms are in it, so a changed check is a changed name.
        said = "+".join(t.label for t in self.right)
        unsaid = ",".join(t.label for t in self.wrong)
        self.__qualname__ = f"Answer[{said}{' not ' + unsaid if unsaid else ''}]"

    def __repr__(self) -> str:
        return self.__qualname__

    def grade(self, text: str) -> bool | str:
        """True when ``text`` is a right answer, else why not."""
        text = unlisted(text)
        if len(self.right) == 1:
            at = self.right[0].find(text)
            if at is None:
                return f"the answer does not say {self.right[0].label}"
            earlier = [t.label for t in self.wrong if (w := t.find(text)) is not None and w <= at]
            if earlier:
                return f"the answer names {earlier[0]} first (not {self.right[0].label})"
            return True
        missing = [t.label for t in self.right if t.find(text) is None]
        if missing:
            return "the answer does not say " + ", ".join(missing)
        said = [t.label for t in self.wrong if t.find(text) is not None]
        if said:
            return "the answer also says " + ", ".join(said)
        return True

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

#: The kinds, in the order tables show them.
KINDS = ("locate", "value", "line", "count", "cross-file", "grep-read", "notebook", "big-file", "edit")

IDK = "I don't know."
#: What the benchmark promises (tests/test_bench_tasks.py holds it to it).
MIN_TASKS = 30
MIN_EDITS = 5


@dataclass(frozen=True)
class Edit:
    """A change to one file: ``old`` (once in it) becomes ``new``."""

    path: str
    old: str
    new: str


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
    quick: bool = False

    def as_question(self) -> Question:
        """The task as an experiment question."""
        return Question(self.question, self.check, name=self.name)


@dataclass
class _Source:
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

    def path(self, rel: str, *, bare: bool = False) -> Term:
        if rel not in self.files:
            raise ValueError(f"{rel} is not in the workspace")
        return path_term(rel, self.files, bare=bare)


def _line_task(
    src: _Source, name: str, rel: str, start: str, *, what: str, other: int, quick: bool = False
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
    )


def build_tasks(root: Path) -> list[Task]:
    """Every task, made from the workspace at ``root`` (facts read from its files and checked there)."""
    src = _Source(root)
    path = src.path
    itertoolz, functoolz, dicttoolz = "toolz/itertoolz.py", "toolz/functoolz.py", "toolz/dicttoolz.py"
    parallel = "toolz/sandbox/parallel.py"
    tasks: list[Task] = []
    add = tasks.append

    # locate: which file defines X (an answer names one file; another file named first is wrong).
    add(
        Task(
            "locate-countby",
            "locate",
            "Which file of this project defines the function countby?",
            Answer(
                [path("toolz/recipes.py")], [path(itertoolz, bare=True), path("toolz/tests/test_recipes.py")]
            ),
            right=("toolz/recipes.py", "countby is defined in `recipes.py`.", "In the toolz.recipes module."),
            wrong=(
                "toolz/itertoolz.py",
                "toolz/tests/test_recipes.py",
                "It is in itertoolz, next to groupby.",
            ),
            quick=True,
        )
    )
    add(
        Task(
            "locate-EqualityHashKey",
            "locate",
            "In which file is the class EqualityHashKey defined?",
            Answer(
                [path("toolz/sandbox/core.py")],
                [path("toolz/sandbox/__init__.py"), path(parallel), path(functoolz, bare=True)],
            ),
            right=(
                "toolz/sandbox/core.py",
                "It is defined in sandbox/core.py (class EqualityHashKey).",
            ),
            wrong=("toolz/sandbox/__init__.py", "toolz/sandbox/parallel.py", "toolz/functoolz.py"),
        )
    )
    add(
        Task(
            "locate-fold",
            "locate",
            "Which file defines the function fold?",
            Answer(
                [path(parallel)],
                [path("toolz/sandbox/core.py"), path(functoolz, bare=True), path(itertoolz, bare=True)],
            ),
            right=(parallel, "`fold` lives in the parallel module of toolz.sandbox: parallel.py"),
            wrong=("toolz/sandbox/core.py", "toolz/functoolz.py", "itertoolz.py"),
        )
    )
    add(
        Task(
            "locate-TlzLoader",
            "locate",
            "Which file defines the TlzLoader class?",
            Answer(
                [path("tlz/_build_tlz.py", bare=True)], [path("tlz/__init__.py"), path("toolz/__init__.py")]
            ),
            right=("tlz/_build_tlz.py", "The TlzLoader class is in _build_tlz.py, in the tlz package."),
            wrong=("tlz/__init__.py", "toolz/__init__.py"),
        )
    )
    add(
        Task(
            "locate-excepts",
            "locate",
            "Which file defines the excepts class (the functional try/except)?",
            Answer(
                [path(functoolz, bare=True)],
                [path("toolz/curried/exceptions.py"), path(dicttoolz, bare=True), path("toolz/utils.py")],
            ),
            right=(functoolz, "excepts is a class in functoolz.py", "It's in the functoolz module."),
            wrong=("toolz/curried/exceptions.py", "toolz/dicttoolz.py", "toolz/utils.py"),
        )
    )

    # value: a value or a default, asserted against the source.
    default = src.has(parallel, "chunksize=128")
    assert default
    add(
        Task(
            "value-fold-chunksize",
            "value",
            "What is the default value of the chunksize parameter of fold?",
            Answer([number_term(128)], [number_term(256), number_term(64), name_term("None")]),
            right=("128", "chunksize defaults to 128.", "`chunksize=128`"),
            wrong=("256", "64", "None (the combine default)"),
            quick=True,
        )
    )
    src.has(itertoolz, "no_pad = '__no__pad__'")
    add(
        Task(
            "value-no_pad",
            "value",
            "What string is the no_pad sentinel set to in toolz?",
            Answer([text_term("__no__pad__")], [text_term("__no__default__"), name_term("None")]),
            right=("'__no__pad__'", "no_pad = '__no__pad__' (in itertoolz.py)"),
            wrong=("'__no__default__'", "None"),
        )
    )
    src.has(dicttoolz, "def valmap(func, d, factory=dict):")
    add(
        Task(
            "value-valmap-factory",
            "value",
            "What is the default of the factory argument of valmap?",
            Answer(
                [regex_term("dict", r"(?<![\w-])dict(?![\w-])", r"\bdictionary\b")],
                [name_term("None"), name_term("list"), regex_term("OrderedDict", r"OrderedDict|defaultdict")],
            ),
            right=("dict", "factory=dict: a plain dictionary", "The default factory is `dict`."),
            wrong=("None", "list", "collections.OrderedDict"),
        )
    )
    src.has("setup.py", 'python_requires=">=3.8",')
    add(
        Task(
            "value-python-requires",
            "value",
            "Which Python versions does setup.py allow (its python_requires)?",
            Answer(
                [regex_term(">=3.8", r"(?<![\w.])3\.8(?![\d])")],
                [
                    regex_term("3.7", r"(?<![\w.])3\.7(?![\d])"),
                    regex_term(">=3.9", r">=\s*3\.(?!8(?!\d))\d+"),
                ],
            ),
            right=('python_requires=">=3.8"', "Python 3.8 or newer.", ">= 3.8"),
            wrong=(">=3.7", ">=3.9", "Python 3.12 and up: >=3.12"),
        )
    )
    src.has("toolz/_version.py", '"full-revisionid": "07f30a9c75e07a4b7095d0ec93ba4e963504f259"')
    add(
        Task(
            "value-revision",
            "value",
            "From which git revision (the full revision id) was toolz/_version.py generated?",
            Answer(
                [text_term("07f30a9")], [text_term("2024-10-04"), regex_term("0.18", r"(?<![\w.])0\.18\b")]
            ),
            right=("07f30a9c75e07a4b7095d0ec93ba4e963504f259", "Revision 07f30a9c75e0."),
            wrong=("1.0.0", "It was generated by versioneer 0.18.", "2024-10-04T11:15:31-0500"),
        )
    )

    # line: computed from the source.
    add(
        _line_task(
            src,
            "line-groupby",
            itertoolz,
            "def groupby(",
            what="groupby",
            other=src.line_of(itertoolz, "def merge_sorted("),
            quick=True,
        )
    )
    add(
        _line_task(
            src,
            "line-curry",
            functoolz,
            "class curry(",
            what="the class curry",
            other=src.line_of(functoolz, "def memoize("),
        )
    )
    add(
        _line_task(
            src,
            "line-get_in",
            dicttoolz,
            "def get_in(",
            what="get_in",
            other=src.line_of(dicttoolz, "def update_in("),
        )
    )

    # count: computed from the source.
    recipes_tests = src.count("toolz/tests/test_recipes.py", r"^def test_")
    add(
        Task(
            "count-recipes-tests",
            "count",
            "How many test functions does toolz/tests/test_recipes.py define?",
            Answer(
                [number_term(recipes_tests)], [number_term(recipes_tests - 1), number_term(recipes_tests + 1)]
            ),
            right=(
                str(recipes_tests),
                f"{_NUMBER_WORDS[recipes_tests]}: test_countby and test_partitionby",
                f"1. test_countby\n2. test_partitionby\n\nSo {recipes_tests} test functions.",
            ),
            wrong=(str(recipes_tests - 1), f"{recipes_tests + 1} tests"),
            quick=True,
        )
    )
    head = src.text(itertoolz).split("__all__ = (", 1)[1].split(")", 1)[0]
    exported = len(re.findall(r"'(\w+)'", head))
    add(
        Task(
            "count-itertoolz-all",
            "count",
            "How many names does __all__ list in toolz/itertoolz.py?",
            Answer(
                [number_term(exported)],
                [number_term(exported - 1), number_term(exported + 1), number_term(30)],
            ),
            right=(str(exported), f"__all__ has {exported} entries."),
            wrong=(str(exported - 1), str(exported + 1), "About 30."),
        )
    )
    curried_tests = src.count("toolz/tests/test_curried.py", r"^def test_")
    add(
        Task(
            "count-curried-tests",
            "count",
            "How many test functions are there in toolz/tests/test_curried.py?",
            Answer(
                [number_term(curried_tests)], [number_term(curried_tests - 1), number_term(curried_tests + 1)]
            ),
            right=(
                str(curried_tests),
                f"There are {curried_tests} test functions (test_take … test_curried_namespace).",
            ),
            wrong=(str(curried_tests - 1), str(curried_tests + 1)),
        )
    )

    # cross-file: who imports or tests what.
    add(
        Task(
            "cross-tests-countby",
            "cross-file",
            "Which test file has the tests for countby?",
            Answer(
                [path("toolz/tests/test_recipes.py", bare=True)],
                [
                    path("toolz/tests/test_itertoolz.py", bare=True),
                    path("toolz/tests/test_curried.py", bare=True),
                    path("toolz/recipes.py"),
                ],
            ),
            right=("toolz/tests/test_recipes.py", "test_recipes.py (test_countby)"),
            wrong=("toolz/tests/test_itertoolz.py", "toolz/recipes.py", "test_curried.py"),
            quick=True,
        )
    )
    add(
        Task(
            "cross-no_default-importers",
            "cross-file",
            "Which modules import no_default from toolz.utils? Name every one.",
            Answer(
                [path(itertoolz, bare=True), path(functoolz, bare=True), path(parallel)],
                [path(dicttoolz, bare=True), path("toolz/recipes.py")],
            ),
            right=(
                "toolz/itertoolz.py, toolz/functoolz.py and toolz/sandbox/parallel.py",
                "itertoolz, functoolz and sandbox.parallel",
            ),
            wrong=(
                "toolz/itertoolz.py and toolz/functoolz.py",
                "itertoolz.py, functoolz.py, parallel.py, dicttoolz.py",
            ),
        )
    )
    src.has(parallel, "from toolz.itertoolz import partition_all")
    add(
        Task(
            "cross-parallel-imports",
            "cross-file",
            "Which function does toolz/sandbox/parallel.py import from toolz.itertoolz?",
            Answer(
                [name_term("partition_all")],
                [name_term("partition"), name_term("sliding_window"), name_term("no_default")],
            ),
            right=("partition_all", "It imports `partition_all`."),
            wrong=("partition", "no_default", "sliding_window"),
        )
    )
    src.has("toolz/recipes.py", "from .itertoolz import frequencies, pluck, getter")
    add(
        Task(
            "cross-recipes-imports",
            "cross-file",
            "Which names does toolz/recipes.py import from .itertoolz?",
            Answer(
                [name_term("frequencies"), name_term("pluck"), name_term("getter")],
                [name_term("groupby"), name_term("partition_all"), name_term("no_default")],
            ),
            right=(
                "frequencies, pluck, getter",
                "It imports `frequencies`, `pluck` and `getter` (plus itertools).",
            ),
            wrong=("frequencies and pluck", "groupby, frequencies, pluck, getter"),
        )
    )

    # grep-read: find the place, then read what is there.
    src.has(dicttoolz, "except (KeyError, IndexError, TypeError):")
    add(
        Task(
            "grep-get_in-except",
            "grep-read",
            "Which exceptions does get_in catch before it returns the default?",
            Answer(
                [name_term("KeyError"), name_term("IndexError"), name_term("TypeError")],
                [name_term("AttributeError"), name_term("ValueError")],
            ),
            right=("KeyError, IndexError and TypeError", "except (KeyError, IndexError, TypeError)"),
            wrong=("KeyError and IndexError", "KeyError, IndexError, AttributeError, TypeError"),
            quick=True,
        )
    )
    src.has(functoolz, 'raise TypeError("Arguments to memoized function must be hashable")')
    add(
        Task(
            "grep-memoize-message",
            "grep-read",
            "What error message does memoize raise when a memoized function gets arguments that cannot "
            "be hashed?",
            Answer([text_term("must be hashable")], [text_term("unhashable type")]),
            right=(
                'TypeError("Arguments to memoized function must be hashable")',
                "Arguments to memoized function must be hashable",
            ),
            wrong=("TypeError: unhashable type: 'list'", "It raises a KeyError."),
        )
    )
    src.has(functoolz, 'raise TypeError("Input must be callable")')
    add(
        Task(
            "grep-curry-callable",
            "grep-read",
            "What message does curry raise when it is given something that is not callable?",
            Answer([text_term("Input must be callable")], [text_term("takes at least 2 arguments")]),
            right=('TypeError("Input must be callable")', "The message is: Input must be callable"),
            wrong=("__init__() takes at least 2 arguments (1 given)", "It returns None."),
        )
    )
    src.has("toolz/compatibility.py", "category=DeprecationWarning")
    add(
        Task(
            "grep-compat-warning",
            "grep-read",
            "Which warning category does toolz/compatibility.py warn with when it is imported?",
            Answer(
                [name_term("DeprecationWarning")],
                [
                    name_term("PendingDeprecationWarning"),
                    name_term("FutureWarning"),
                    name_term("UserWarning"),
                ],
            ),
            right=("DeprecationWarning", "category=DeprecationWarning"),
            wrong=("FutureWarning", "PendingDeprecationWarning", "UserWarning"),
        )
    )

    # notebook: the notebook the project adds (read as cells, outputs summarised).
    add(
        Task(
            "nb-threshold",
            "notebook",
            f"Above which order total does {NOTEBOOK} flag an order as large?",
            Answer([number_term(250)], [number_term(200), number_term(300), number_term(340)]),
            right=("250", "Orders above LARGE_ORDER = 250 dollars.", "$250"),
            wrong=("200", "300", "340"),
            quick=True,
        )
    )
    add(
        Task(
            "nb-east-total",
            "notebook",
            "What total does the orders notebook compute for the east region?",
            Answer([number_term(670)], [number_term(410), number_term(260), number_term(435)]),
            right=("670", "east: 670 (410 + 260)"),
            wrong=("410", "435", "260"),
        )
    )
    add(
        Task(
            "nb-large-ids",
            "notebook",
            "Which order ids does the orders notebook list as large orders?",
            Answer(
                [number_term(102), number_term(104), number_term(106)],
                [number_term(101), number_term(103), number_term(105), number_term(107)],
            ),
            right=("[102, 104, 106]", "Orders 102, 104 and 106."),
            wrong=("102 and 104", "104, 106, 107", "101, 102, 104, 106"),
        )
    )

    # big-file: the answer is deep in a file one read cannot hold at a small window.
    src.has(itertoolz, "return tuple(heapq.nlargest(k, seq, key=key))")
    add(
        Task(
            "big-topk",
            "big-file",
            "In toolz/itertoolz.py, which standard-library function does topk call to find the largest "
            "elements?",
            Answer(
                [name_term("nlargest")],
                [name_term("nsmallest"), name_term("sorted"), name_term("heappush"), name_term("max")],
            ),
            right=("heapq.nlargest", "It returns tuple(heapq.nlargest(k, seq, key=key))."),
            wrong=("sorted", "heapq.nsmallest", "max"),
            quick=True,
        )
    )
    src.has(itertoolz, "random_state=2016))")
    add(
        Task(
            "big-random-seed",
            "big-file",
            "Which integer seed do the random_sample examples in toolz/itertoolz.py pass as random_state?",
            Answer([number_term(2016)], [number_term(42), number_term(2015), number_term(0)]),
            right=("2016", "random_state=2016"),
            wrong=("42", "0", "2015"),
        )
    )
    issue = int(re.search(r"toolz/issues/(\d+)", src.text(itertoolz)).group(1))  # type: ignore[union-attr]
    add(
        Task(
            "big-issue",
            "big-file",
            "Which GitHub issue number does the comment inside partition_all in toolz/itertoolz.py point to?",
            Answer([number_term(issue)], [number_term(issue - 1), number_term(issue + 1)]),
            right=(str(issue), f"https://github.com/pytoolz/toolz/issues/{issue}", f"issue #{issue}"),
            wrong=(str(issue - 1), f"#{issue + 1}"),
        )
    )
    src.has(functoolz, "def __init__(self, exc, func, handler=return_none):")
    add(
        Task(
            "big-excepts-handler",
            "big-file",
            "What is the default handler of the excepts class in toolz/functoolz.py?",
            Answer(
                [name_term("return_none")], [name_term("None"), name_term("identity"), name_term("raise")]
            ),
            right=("return_none", "handler=return_none: a function that returns None"),
            wrong=("None", "identity", "raise: it re-raises the exception"),
        )
    )

    # edit: run with edits=apply, judged on the files (the one change, nothing else).
    def edit_task(
        name: str,
        question: str,
        change: Edit,
        *,
        new: str,
        wrong_edits: Sequence[Sequence[Edit]],
        quick: bool = False,
    ) -> Task:
        text = src.text(change.path)
        pattern = edit_pattern(text, change.old, new)
        if not pattern.search(edited(text, change.old, change.new)):
            raise ValueError(f"{name}: the reference edit does not match its own check")
        return Task(
            name,
            "edit",
            question,
            Files({change.path: pattern}),
            edit=change,
            wrong_edits=tuple(tuple(w) for w in wrong_edits),
            quick=quick,
        )

    add(
        edit_task(
            "edit-fold-chunksize",
            "In toolz/sandbox/parallel.py, change the default chunksize of fold from 128 to 256.",
            Edit(parallel, "chunksize=128", "chunksize=256"),
            new=r"chunksize\s*=\s*256",
            wrong_edits=[
                [Edit(parallel, "chunksize=128", "chunksize=265")],
                [
                    Edit(parallel, "chunksize=128", "chunksize=256"),
                    Edit("notes.txt", "", "chunksize is 256\n"),
                ],
                [Edit(parallel, "chunksize=128, combine=None", "chunksize=256, combine=max")],
            ],
            quick=True,
        )
    )
    add(
        edit_task(
            "edit-python-requires",
            'In setup.py, raise python_requires to ">=3.9".',
            Edit("setup.py", 'python_requires=">=3.8"', 'python_requires=">=3.9"'),
            new=r"""python_requires\s*=\s*(["'])>=\s*3\.9\1""",
            wrong_edits=[
                [Edit("setup.py", 'python_requires=">=3.8"', 'python_requires=">=3.10"')],
                [Edit("setup.cfg", "[versioneer]", "[options]\npython_requires = >=3.9\n\n[versioneer]")],
            ],
        )
    )
    add(
        edit_task(
            "edit-docstring-typo",
            "The docstring of fold in toolz/sandbox/parallel.py lists its first parameter as `binops`, but "
            "the parameter is `binop`. Fix that line of the docstring.",
            Edit(parallel, "    binops\n", "    binop\n"),
            new=r"[ \t]*binop[ \t]*\n",
            wrong_edits=[
                [Edit(parallel, "def fold(binop,", "def fold(binops,")],
                [Edit(parallel, "``binop``     -", "``binops``     -")],
            ],
        )
    )
    add(
        edit_task(
            "edit-no_pad",
            "In toolz/itertoolz.py, change the value of the no_pad sentinel to '__no_pad__'.",
            Edit(itertoolz, "no_pad = '__no__pad__'", "no_pad = '__no_pad__'"),
            new=r"""no_pad\s*=\s*(["'])__no_pad__\1""",
            wrong_edits=[
                [Edit(itertoolz, "no_pad = '__no__pad__'", "no_pad = '__nopad__'")],
                [Edit("toolz/utils.py", "no_default = '__no__default__'", "no_default = '__no_pad__'")],
            ],
        )
    )
    add(
        edit_task(
            "edit-classifier",
            'In setup.py, add the classifier "Programming Language :: Python :: 3.13" right after the '
            "3.12 one.",
            Edit(
                "setup.py",
                '"Programming Language :: Python :: 3.12",\n',
                '"Programming Language :: Python :: 3.12",\n'
                '          "Programming Language :: Python :: 3.13",\n',
            ),
            new=r"""(["'])Programming Language :: Python :: 3\.12\1,[ \t]*\n"""
            r"""[ \t]*(["'])Programming Language :: Python :: 3\.13\2,[ \t]*\n""",
            wrong_edits=[
                [
                    Edit(
                        "setup.py",
                        '"Programming Language :: Python :: 3.12"',
                        '"Programming Language :: Python :: 3.13"',
                    )
                ],
                [
                    Edit(
                        "setup.py",
                        '"Programming Language :: Python :: 3.8",\n',
                        '"Programming Language :: Python :: 3.13",\n'
                        '          "Programming Language :: Python :: 3.8",\n',
                    )
                ],
            ],
        )
    )
    add(
        edit_task(
            "edit-rename-test",
            "In toolz/tests/test_utils.py, rename the test function test_raises to "
            "test_raises_zero_division.",
            Edit("toolz/tests/test_utils.py", "def test_raises():", "def test_raises_zero_division():"),
            new=r"def[ \t]+test_raises_zero_division\(\)[ \t]*:",
            wrong_edits=[
                [Edit("toolz/tests/test_utils.py", "def test_raises():", "def test_raises_zero():")],
                [Edit("toolz/utils.py", "def raises(err, lamda):", "def raises_zero_division(err, lamda):")],
            ],
        )
    )
    _check_unique(tasks)
    return tasks


def _check_unique(tasks: Sequence[Task]) -> None:
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ValueError("two tasks share a name")
    unknown = {t.kind for t in tasks} - set(KINDS)
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


def select(tasks: Sequence[Task], wanted: str | None, *, quick: bool = False) -> list[Task]:
    """The tasks ``wanted`` names (comma-separated task names or kinds; None: all, or the quick set)."""
    if not wanted:
        return [t for t in tasks if t.quick] if quick else list(tasks)
    words = [w.strip() for w in wanted.split(",") if w.strip()]
    known = {t.name for t in tasks} | set(KINDS)
    unknown = [w for w in words if w not in known]
    if unknown:
        raise ValueError(
            f"no task or kind named {', '.join(unknown)}; kinds: {', '.join(KINDS)}; "
            f"tasks: {', '.join(t.name for t in tasks)}"
        )
    return [t for t in tasks if t.name in words or t.kind in words]


def main(argv: Sequence[str] | None = None) -> int:
    """``fetch``: put the pinned sdist in the cache (quiet when it is there); ``check``: is it there?"""
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else "check"
    try:
        if command == "fetch":
            fetch_sdist(quiet=True)
        elif command == "check":
            print(cached_sdist())
        else:
            print(f"usage: {Path(__file__).name} fetch|check", file=sys.stderr)
            return 2
    except SourceMissing as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
