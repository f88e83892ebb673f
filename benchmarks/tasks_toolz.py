"""The task benchmark's first code base: the source of toolz 1.0.0, a notebook that uses it, 37 tasks.

The workspace is real code nobody here wrote: the sdist of ``toolz==1.0.0`` from PyPI (BSD-3), pinned
by sha256, unpacked at run time, plus ``notebooks/orders.ipynb`` (written here, with its outputs). Why
toolz: pure Python in several modules (itertoolz, functoolz, dicttoolz, recipes, utils, curried/,
sandbox/, tlz/) with their tests beside them, files too big for one read at a 4,096-token window
(itertoolz.py and functoolz.py are over 1,000 lines; a 150-line read is cut at about 2,700 characters
there), cross-module imports to ask about, and content that does not move: 1.0.0 is a mature release of
a slow-moving library, and the archive is checked byte for byte.

Every task has a kind (``KINDS``: the first nine kinds of the benchmark) and a check made from the source
itself where it can be (line numbers and counts are computed, values asserted), so a task can never
disagree with the files; how answers and edits are judged is :mod:`tasks_common`'s (shared by every code
base). toolz is a development code base: the loop was tuned on it.

``python benchmarks/tasks_toolz.py fetch`` puts the sdist in the cache (``scripts/setup.sh`` does, for
the tests, with every code base's: ``benchmarks/tasks_all.py fetch``); ``check`` says whether it is there.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The judging and the task machinery are shared by every code base (tasks_common); their names stay
# importable from here, as the tests and older scripts use them.
from tasks_common import (
    _NUMBER_WORDS,
    IDK,
    Answer,
    Cells,
    Edit,
    Sdist,
    Source,
    SourceMissing,
    Task,
    Term,
    Where,
    apply_edits,
    cache_dir,
    check_unique,
    edit_pattern,
    edited,
    line_task,
    located,
    name_term,
    no_answer_prefix,
    number_term,
    path_term,
    regex_term,
    sha256,
    text_term,
    unlisted,
    write_notebook,
)
from tasks_common import notebook_json as _notebook_json
from tasks_common import select as _select

from twinny_magics.experiment import Files

__all__ = [
    "IDK",
    "Answer",
    "Edit",
    "SourceMissing",
    "Task",
    "Term",
    "apply_edits",
    "cache_dir",
    "edit_pattern",
    "edited",
    "name_term",
    "no_answer_prefix",
    "number_term",
    "path_term",
    "regex_term",
    "sha256",
    "text_term",
    "unlisted",
]

# -- the pinned source --------------------------------------------------------------------------------

PACKAGE = "toolz"
VERSION = "1.0.0"
SDIST_SHA256 = "2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02"
PIN = Sdist(PACKAGE, VERSION, SDIST_SHA256)
SDIST = PIN.file
NOTEBOOK = "notebooks/orders.ipynb"


def cached_sdist(cache: Path | None = None) -> Path:
    """The pinned sdist in the cache, checked by sha256; SourceMissing says how to get it."""
    return PIN.cached(cache)


def fetch_sdist(cache: Path | None = None, *, quiet: bool = True) -> Path:
    """The pinned sdist, downloaded from PyPI with pip when it is not cached yet; checked by sha256."""
    return PIN.fetch(cache, quiet=quiet)


def unpack(sdist: Path, root: Path) -> Path:
    """The sdist's files under ``root`` (its top folder stripped), and the notebook; returns ``root``."""
    PIN.unpack(sdist, root)
    write_notebook(root, NOTEBOOK, NOTEBOOK_CELLS)
    return root


def build_workspace(root: Path, cache: Path | None = None) -> Path:
    """The benchmark's workspace at ``root``: the cached sdist unpacked, and the notebook."""
    return unpack(cached_sdist(cache), root)


# -- the notebook ----------------------------------------------------------------------------------------

#: (kind, source, output of the cell's last expression or None). The outputs are what running the cells
#: against toolz 1.0.0 gives (tests/test_bench_tasks.py runs them to check).
NOTEBOOK_CELLS: Cells = (
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
    return _notebook_json(NOTEBOOK_CELLS)


# -- the tasks -------------------------------------------------------------------------------------------

#: The kinds of toolz's tasks, in the order tables show them (the benchmark's first nine).
KINDS = ("locate", "value", "line", "count", "cross-file", "grep-read", "notebook", "big-file", "edit")

#: What the benchmark promises (tests/test_bench_tasks.py holds it to it).
MIN_TASKS = 30
MIN_EDITS = 5
#: The name the shared Source had here.
_Source = Source
_line_task = line_task


def build_tasks(root: Path) -> list[Task]:
    """Every task, made from the workspace at ``root`` (facts read from its files and checked there)."""
    src = Source(root)
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
            where=(Where(change.path, change.old.strip().splitlines()[0]),),
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
    check_unique(tasks, KINDS)
    return located(tasks, _where(itertoolz, functoolz, dicttoolz, parallel))


def _where(itertoolz: str, functoolz: str, dicttoolz: str, parallel: str) -> dict[str, list[Where]]:
    """Where each answer stands (the lines it rests on), by task; line and edit tasks carry their own."""
    test_recipes = "toolz/tests/test_recipes.py"
    return {
        "locate-countby": [Where("toolz/recipes.py", "def countby(")],
        "locate-EqualityHashKey": [Where("toolz/sandbox/core.py", "class EqualityHashKey")],
        "locate-fold": [Where(parallel, "def fold(")],
        "locate-TlzLoader": [Where("tlz/_build_tlz.py", "class TlzLoader")],
        "locate-excepts": [Where(functoolz, "class excepts")],
        "value-fold-chunksize": [Where(parallel, "chunksize=128")],
        "value-no_pad": [Where(itertoolz, "no_pad = '__no__pad__'")],
        "value-valmap-factory": [Where(dicttoolz, "def valmap(func, d, factory=dict):")],
        "value-python-requires": [Where("setup.py", 'python_requires=">=3.8"')],
        "value-revision": [Where("toolz/_version.py", '"full-revisionid"')],
        "count-recipes-tests": [Where(test_recipes, r"^def test_", every=True, regex=True)],
        "count-itertoolz-all": [Where(itertoolz, "__all__ = (", until=")")],
        "count-curried-tests": [Where("toolz/tests/test_curried.py", r"^def test_", every=True, regex=True)],
        "cross-tests-countby": [Where(test_recipes, "def test_countby")],
        "cross-no_default-importers": [
            Where(itertoolz, "import no_default"),
            Where(functoolz, "import no_default"),
            Where(parallel, "import no_default"),
        ],
        "cross-parallel-imports": [Where(parallel, "from toolz.itertoolz import partition_all")],
        "cross-recipes-imports": [Where("toolz/recipes.py", "from .itertoolz import")],
        "grep-get_in-except": [Where(dicttoolz, "except (KeyError, IndexError, TypeError)")],
        "grep-memoize-message": [Where(functoolz, "Arguments to memoized function must be hashable")],
        "grep-curry-callable": [Where(functoolz, "Input must be callable")],
        "grep-compat-warning": [Where("toolz/compatibility.py", "DeprecationWarning")],
        "nb-threshold": [Where(NOTEBOOK, "LARGE_ORDER = 250")],
        "nb-east-total": [Where(NOTEBOOK, "'east': 670")],
        "nb-large-ids": [Where(NOTEBOOK, "# out: [102, 104, 106]")],
        "big-topk": [Where(itertoolz, "return tuple(heapq.nlargest(")],
        "big-random-seed": [Where(itertoolz, "random_state=2016")],
        "big-issue": [Where(itertoolz, "issues/387")],
        "big-excepts-handler": [Where(functoolz, "def __init__(self, exc, func, handler=return_none)")],
    }


def select(tasks: Sequence[Task], wanted: str | None, *, quick: bool = False) -> list[Task]:
    """The tasks ``wanted`` names (comma-separated task names or kinds; None: all, or the quick set)."""
    return _select(tasks, wanted, quick=quick, kinds=KINDS)


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
