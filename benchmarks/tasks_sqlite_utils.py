"""The held-out code base: sqlite-utils 3.37, a Python library for SQLite with a click command line.

The workspace is the sdist of ``sqlite_utils==3.37`` from PyPI (Apache-2.0), pinned by sha256 and unpacked
at run time, plus ``notebooks/shelf_catalogue.ipynb`` (written here: it builds a small catalogue in an
in-memory database with the package's Python API and keeps its outputs). Its shape: a library whose
classes (``Database``, ``Queryable``, ``Table``, ``View``, their exceptions and namedtuples) fill one
module of nearly 3,900 lines (``sqlite_utils/db.py``), beside a click command line of over 3,200 lines
(``sqlite_utils/cli.py``: a ``DefaultGroup`` whose commands wrap the library); helpers in
``sqlite_utils/utils.py``, the ``convert`` recipes in ``recipes.py``, pluggy plugin hooks
(``hookspecs.py``, ``plugins.py``); ``setup.py``/``setup.cfg``; Sphinx docs (``docs/*.rst``: the Python API,
the command line and its generated reference ``cli-reference.rst``, plugins, a 1,341-line changelog) and
tests (``tests/test_cli.py`` is 2,438 lines).

**Held out**: these tasks are run only to report. A model's failures here are never read to change the
loop; once they have been, this code base is retired to the development set and another takes its place
(``tasks_all.py`` says which is held out). Writing the tasks from reading the code base is fine; running a
model on them is not, except to report. This module builds the workspace and the tasks of the first nine
kinds but edits; ``tasks_sqlite_utils_more.py`` holds the rest (multi-hop, exact, file-count, the edits).
"""

from __future__ import annotations

import re
from pathlib import Path

import tasks_sqlite_utils_more
from tasks_common import (
    Answer,
    Cells,
    Sdist,
    Source,
    Task,
    Term,
    check_unique,
    count_task,
    line_task,
    name_term,
    number_term,
    regex_term,
    text_term,
    write_notebook,
)

PIN = Sdist("sqlite_utils", "3.37", "542a71033d4e7936fe909230ac9794d3e200021838ab63dbaf3ce8f5bc2273a4")
NOTEBOOK = "notebooks/shelf_catalogue.ipynb"

#: The notebook's cells; the outputs are what running them against sqlite-utils 3.37 gives (with its
#: dependencies sqlite-fts4, click, python-dateutil and pluggy; tests/test_bench_codebases.py runs them).
NOTEBOOK_CELLS: Cells = (
    (
        "markdown",
        "# The team bookshelf\n\nA small catalogue of the books on our shelf, in an in-memory SQLite "
        "database built with sqlite-utils.",
        None,
    ),
    (
        "code",
        "from sqlite_utils import Database\n"
        "\n"
        "db = Database(memory=True)\n"
        'db["authors"].insert_all(\n'
        "    [\n"
        '        {"id": 1, "name": "Ursula K. Le Guin"},\n'
        '        {"id": 2, "name": "Octavia E. Butler"},\n'
        '        {"id": 3, "name": "Ted Chiang"},\n'
        "    ],\n"
        '    pk="id",\n'
        ")\n"
        'books = db["books"]\n'
        "books.insert_all(\n"
        "    [\n"
        '        {"id": 10, "title": "The Dispossessed", "author_id": 1, "year": 1974, "pages": 387},\n'
        '        {"id": 11, "title": "Kindred", "author_id": 2, "year": 1979, "pages": 264},\n'
        '        {"id": 12, "title": "A Wizard of Earthsea", "author_id": 1, "year": 1968, "pages": 183},\n'
        '        {"id": 13, "title": "Exhalation", "author_id": 3, "year": 2019, "pages": 350},\n'
        '        {"id": 14, "title": "Parable of the Sower", "author_id": 2, "year": 1993, "pages": 345},\n'
        '        {"id": 15, "title": "The Left Hand of Darkness", "author_id": 1, "year": 1969, '
        '"pages": 304},\n'
        "    ],\n"
        '    pk="id",\n'
        '    foreign_keys=[("author_id", "authors")],\n'
        ")",
        "<Table books (id, title, author_id, year, pages)>",
    ),
    ("code", "books.count, books.pks", "(6, ['id'])"),
    (
        "code",
        "books.foreign_keys",
        "[ForeignKey(table='books', column='author_id', other_table='authors', other_column='id')]",
    ),
    ("markdown", "## Who is on the shelf most?", None),
    (
        "code",
        "list(\n"
        "    db.query(\n"
        '        "select authors.name, count(*) as books, sum(pages) as pages from books "\n'
        '        "join authors on authors.id = books.author_id "\n'
        '        "group by authors.name order by books desc"\n'
        "    )\n"
        ")",
        "[{'name': 'Ursula K. Le Guin', 'books': 3, 'pages': 874}, "
        "{'name': 'Octavia E. Butler', 'books': 2, 'pages': 609}, "
        "{'name': 'Ted Chiang', 'books': 1, 'pages': 350}]",
    ),
    ("markdown", "## Fixing a page count\n\nThe paperback of Exhalation is longer; we rate it too.", None),
    (
        "code",
        'books.upsert({"id": 13, "pages": 352, "rating": 5}, pk="id", alter=True)\nbooks.get(13)',
        "{'id': 13, 'title': 'Exhalation', 'author_id': 3, 'year': 2019, 'pages': 352, 'rating': 5}",
    ),
    (
        "code",
        "books.columns_dict",
        "{'id': <class 'int'>, 'title': <class 'str'>, 'author_id': <class 'int'>, 'year': <class 'int'>, "
        "'pages': <class 'int'>, 'rating': <class 'int'>}",
    ),
)


def build_workspace(root: Path) -> Path:
    """The workspace at ``root``: the cached sdist unpacked, and the notebook."""
    PIN.unpack(PIN.cached(), root)
    write_notebook(root, NOTEBOOK, NOTEBOOK_CELLS)
    return root


def release_term(version: str) -> Term:
    """A release number (``3.34``), not inside a longer one (not 3.34.1, 13.34 or 3.341)."""
    return regex_term(version, rf"(?<![\w.]){re.escape(version)}(?!\.?\d)")


def build_tasks(root: Path) -> list[Task]:
    """Every task, made from the workspace at ``root`` (facts read from its files and checked there)."""
    src = Source(root)
    tasks = _first_kinds(src) + tasks_sqlite_utils_more.build_tasks(src, NOTEBOOK)
    check_unique(tasks)
    return tasks


def _first_kinds(src: Source) -> list[Task]:
    """The tasks of the kinds the benchmark began with, but the edits."""
    path = src.path
    db, cli, utils = "sqlite_utils/db.py", "sqlite_utils/cli.py", "sqlite_utils/utils.py"
    recipes, hookspecs, plugins = (
        "sqlite_utils/recipes.py",
        "sqlite_utils/hookspecs.py",
        "sqlite_utils/plugins.py",
    )
    tasks: list[Task] = []
    add = tasks.append

    # locate
    src.has(utils, "\ndef rows_from_file(\n")
    assert not any("def rows_from_file(" in src.text(f) for f in (db, cli)), "rows_from_file elsewhere"
    add(
        Task(
            "locate-rows_from_file",
            "locate",
            "Which file of sqlite-utils defines the function rows_from_file?",
            Answer(
                [path(utils)],
                [path(cli), path(db), path("tests/test_rows_from_file.py", bare=True)],
            ),
            right=(utils, "rows_from_file is defined in the sqlite_utils.utils module."),
            wrong=("sqlite_utils/cli.py", "tests/test_rows_from_file.py"),
            quick=True,
        )
    )
    src.has(recipes, "\ndef jsonsplit(value, ")
    add(
        Task(
            "locate-jsonsplit",
            "locate",
            "In which file is jsonsplit, one of the recipes of `sqlite-utils convert`, defined?",
            Answer(
                [path(recipes)],
                [path(utils), path(cli), path("tests/test_recipes.py", bare=True)],
            ),
            right=(recipes, "In recipes.py (sqlite_utils/recipes.py)."),
            wrong=("sqlite_utils/utils.py", "sqlite_utils/cli.py"),
        )
    )
    src.has(hookspecs, "@hookspec\ndef register_commands(cli):")
    src.has("tests/test_plugins.py", "def register_commands(self, cli):")
    add(
        Task(
            "locate-register_commands-spec",
            "locate",
            "Which file declares the plugin hook specification register_commands?",
            Answer(
                [path(hookspecs, bare=True)],
                [path(plugins, bare=True), path(cli), path("tests/test_plugins.py", bare=True)],
            ),
            right=(hookspecs, "It is a @hookspec in sqlite_utils/hookspecs.py."),
            wrong=("sqlite_utils/plugins.py", "tests/test_plugins.py"),
        )
    )

    # value
    src.has(cli, '    cls=DefaultGroup,\n    default="query",\n    default_if_no_args=True,')
    add(
        Task(
            "value-default-command",
            "value",
            "Which sqlite-utils command runs when it is given a database file and SQL without a command "
            'name, as in `sqlite-utils data.db "select 1"`?',
            Answer([name_term("query")], [name_term("memory"), name_term("rows"), name_term("tables")]),
            right=("query", 'The query command: the group is a DefaultGroup with default="query".'),
            wrong=("memory", "rows"),
            quick=True,
        )
    )
    src.has(db, '    int: "INTEGER",\n    bool: "INTEGER",\n')
    add(
        Task(
            "value-bool-column-type",
            "value",
            "When sqlite-utils creates a table from Python records, which SQLite column type does it give a "
            "column of bool values?",
            Answer(
                [regex_term("INTEGER", r"\bINTEGER\b")],
                [
                    regex_term("BOOLEAN", r"\bBOOL(?:EAN)?\b", flags=0),
                    regex_term("TEXT", r"\bTEXT\b", flags=0),
                    regex_term("NUMERIC", r"\bNUMERIC\b", flags=0),
                ],
            ),
            right=("INTEGER", 'COLUMN_TYPE_MAPPING maps bool to "INTEGER" (stored as 0 or 1).'),
            wrong=("BOOLEAN", "TEXT"),
        )
    )
    src.has(db, '    _counts_table_name = "_counts"\n')
    add(
        Task(
            "value-counts-table",
            "value",
            "What is the table called in which sqlite-utils keeps the cached row counts of enable_counts()?",
            Answer(
                [name_term("_counts")],
                [name_term("_sqlite_utils_counts"), name_term("sqlite_stat1"), name_term("_table_counts")],
            ),
            right=("_counts", "A table named `_counts` (Database._counts_table_name)."),
            wrong=("sqlite_stat1", "_table_counts"),
        )
    )
    src.has(cli, '@click.option("--common-limit", type=int, default=10, help="How many common values")')
    add(
        Task(
            "value-common-limit",
            "value",
            "By default, how many most common values per column does `sqlite-utils analyze-tables` show "
            "(its --common-limit)?",
            Answer([number_term(10)], [number_term(5), number_term(20), number_term(100)]),
            right=("10", "Ten: --common-limit defaults to 10."),
            wrong=("5", "20 values"),
        )
    )

    # line (computed)
    add(
        line_task(
            src,
            "line-insert_all",
            db,
            "    def insert_all(",
            what="the Table method insert_all",
            other=src.line_of(db, "    def upsert_all("),
            quick=True,
        )
    )
    add(
        line_task(
            src,
            "line-insert_upsert_implementation",
            cli,
            "def insert_upsert_implementation(",
            what="insert_upsert_implementation",
            other=src.line_of(cli, "def import_options("),
        )
    )
    add(
        line_task(
            src,
            "line-hash_record",
            utils,
            "def hash_record(",
            what="hash_record",
            other=src.line_of(utils, "def chunks("),
        )
    )

    # count (part of a file)
    text = src.text(cli)
    body = text.split("\ndef output_options(fn):\n", 1)[1].split("\ndef ", 1)[0]
    options = len(re.findall(r"click\.option\(", body))
    add(
        count_task(
            "count-output-options",
            "count",
            "How many options does the output_options decorator in sqlite_utils/cli.py add to a command?",
            options,
            said="options",
            quick=True,
        )
    )
    init = (
        src.text(db).split("\nclass Database:\n", 1)[1].split("    def __init__(\n", 1)[1].split("):\n", 1)[0]
    )
    params = [p for p in re.findall(r"^        (\w+)\b", init, re.MULTILINE) if p != "self"]
    assert (params[0], params[-1]) == ("filename_or_conn", "strict"), params
    add(
        count_task(
            "count-database-params",
            "count",
            "How many parameters (not counting self) does the constructor of sqlite_utils' Database class "
            "take?",
            len(params),
            said="parameters",
        )
    )

    # cross-file
    imported = re.search(r"^from sqlite_utils\.db import (.+)$", src.text(cli), re.MULTILINE)
    assert imported is not None
    names = [n.strip() for n in imported.group(1).split(",")]
    assert names == ["AlterError", "BadMultiValues", "DescIndex", "NoTable"], names
    add(
        Task(
            "cross-cli-db-imports",
            "cross-file",
            "Which names does sqlite_utils/cli.py import from sqlite_utils.db?",
            Answer(
                [name_term(n) for n in names],
                [name_term("NotFoundError"), name_term("PrimaryKeyRequired"), name_term("InvalidColumns")],
            ),
            right=(
                "AlterError, BadMultiValues, DescIndex and NoTable",
                "`from sqlite_utils.db import AlterError, BadMultiValues, DescIndex, NoTable`",
            ),
            wrong=(
                "AlterError, DescIndex, NoTable",
                "AlterError, BadMultiValues, DescIndex, NoTable, NotFoundError",
            ),
            quick=True,
        )
    )
    users = [
        f
        for f in src.files
        if f.startswith("sqlite_utils/")
        and f.endswith(".py")
        and re.search(r"^from (?:sqlite_utils|)\.?plugins import .*\bpm\b", src.text(f), re.MULTILINE)
    ]
    assert sorted(users) == [cli, db], users
    add(
        Task(
            "cross-pm-importers",
            "cross-file",
            "Which modules of the sqlite_utils package (not its tests) import the plugin manager pm from "
            "sqlite_utils.plugins? Name every one.",
            Answer(
                [path(db), path(cli)],
                [
                    path(hookspecs, bare=True),
                    path(utils),
                    path(recipes, bare=True),
                    path("sqlite_utils/__init__.py"),
                ],
            ),
            right=(
                "sqlite_utils/db.py and sqlite_utils/cli.py",
                "db.py (Database runs prepare_connection) and cli.py (register_commands).",
            ),
            wrong=("sqlite_utils/cli.py", "cli.py, db.py and hookspecs.py"),
        )
    )
    testers = [f for f in src.files if f.startswith("tests/") and "guess_foreign_table" in src.text(f)]
    assert testers == ["tests/test_introspect.py"], testers
    add(
        Task(
            "cross-tests-guess_foreign_table",
            "cross-file",
            "Which test file has the tests for Table.guess_foreign_table?",
            Answer(
                [path("tests/test_introspect.py", bare=True)],
                [
                    path(db),
                    path("tests/test_create.py", bare=True),
                    path("tests/test_m2m.py", bare=True),
                    path("tests/test_extract.py", bare=True),
                ],
            ),
            right=("tests/test_introspect.py", "test_introspect.py, under tests/"),
            wrong=("tests/test_create.py", "tests/test_m2m.py"),
        )
    )

    # grep-read
    src.has(cli, 'envvar="SQLITE_UTILS_DETECT_TYPES",')
    add(
        Task(
            "grep-detect-types-env",
            "grep-read",
            "Which environment variable turns on type detection for CSV/TSV data in `sqlite-utils insert`, "
            "like its --detect-types option?",
            Answer(
                [name_term("SQLITE_UTILS_DETECT_TYPES")],
                [name_term("SQLITE_UTILS_TYPES"), name_term("DETECT_TYPES"), name_term("SQLITE_UTILS_SNIFF")],
            ),
            right=("SQLITE_UTILS_DETECT_TYPES", "Set SQLITE_UTILS_DETECT_TYPES=1 (the option's envvar)."),
            wrong=("SQLITE_UTILS_TYPES", "DETECT_TYPES"),
        )
    )
    src.has(db, '            self.execute("PRAGMA recursive_triggers=on;")')
    add(
        Task(
            "grep-connection-pragma",
            "grep-read",
            "Which SQLite PRAGMA does sqlite_utils.Database turn on for every connection it opens, unless "
            "told not to?",
            Answer(
                [name_term("recursive_triggers", case=False)],
                [
                    name_term("foreign_keys", case=False),
                    name_term("journal_mode", case=False),
                    name_term("synchronous", case=False),
                ],
            ),
            right=("recursive_triggers", "PRAGMA recursive_triggers=on;"),
            wrong=("foreign_keys", "PRAGMA journal_mode=wal"),
        )
    )
    changelog = src.text("docs/changelog.rst")
    marker = "This release introduces a new :ref:`plugin system <plugins>`."
    src.has("docs/changelog.rst", marker)
    before = changelog.split(marker, 1)[0]
    release = re.findall(r"^(\d+\.\d+(?:\.\d+)?) \(\d{4}-\d\d-\d\d\)$", before, re.MULTILINE)[-1]
    assert release == "3.34", release
    add(
        Task(
            "grep-plugins-release",
            "grep-read",
            "In which release did sqlite-utils introduce its plugin system?",
            Answer(
                [release_term(release)],
                [release_term("3.33"), release_term("3.35"), release_term("3.37")],
            ),
            right=(release, f"It came in {release} (2023-07-22)."),
            wrong=("3.33", "3.35"),
        )
    )

    # notebook (the notebook written here)
    add(
        Task(
            "nb-most-books",
            "notebook",
            f"According to the query in {NOTEBOOK}, which author has the most books on the shelf?",
            Answer(
                [regex_term("Ursula K. Le Guin", r"\bLe\s+Guin\b")],
                [regex_term("Octavia E. Butler", r"\bButler\b"), regex_term("Ted Chiang", r"\bChiang\b")],
            ),
            right=("Ursula K. Le Guin", "Le Guin, with 3 books (874 pages)."),
            wrong=("Octavia E. Butler", "Ted Chiang"),
            quick=True,
        )
    )
    add(
        Task(
            "nb-exhalation-pages",
            "notebook",
            "In the bookshelf notebook, how many pages does Exhalation have after the upsert?",
            Answer([number_term(352)], [number_term(350), number_term(351), number_term(353)]),
            right=("352", "352 pages (it was 350 before the upsert)."),
            wrong=("350", "353 pages"),
        )
    )
    add(
        Task(
            "nb-upsert-new-column",
            "notebook",
            f"Which column does the upsert in {NOTEBOOK} add to the books table?",
            Answer(
                [name_term("rating")],
                [name_term("pages"), name_term("year"), name_term("author_id"), name_term("title")],
            ),
            right=("rating", "It adds `rating` (an INTEGER), thanks to alter=True."),
            wrong=("pages", "year"),
        )
    )

    # big-file: deep in the long modules and tests
    text = src.text(db)
    assert text.index("    def add_geometry_column(") > len(text) * 0.9
    srid = src.has(db, "        srid: int = 4326,\n")
    srid_value = int(re.search(r"\d+", srid).group(0))  # type: ignore[union-attr]
    add(
        Task(
            "big-geometry-srid",
            "big-file",
            "Which SRID does Table.add_geometry_column in sqlite_utils/db.py use when none is given?",
            Answer(
                [number_term(srid_value)],
                [number_term(3857), number_term(0), number_term(4269)],
            ),
            right=(str(srid_value), f"srid defaults to {srid_value} (WGS84)."),
            wrong=("3857", "0"),
        )
    )
    view = text.split("\nclass View(Queryable):\n", 1)[1].split("\ndef ", 1)[0]
    assert "    def enable_fts(self, *args, **kwargs):" in view
    assert "raise NotImplementedError(" in view
    assert text.index("\nclass View(Queryable):\n") > len(text) * 0.95
    add(
        Task(
            "big-view-enable-fts",
            "big-file",
            "In sqlite_utils/db.py, which exception does calling enable_fts() on a View raise?",
            Answer(
                [name_term("NotImplementedError")],
                [
                    name_term("NotFoundError"),
                    name_term("AlterError"),
                    name_term("OperationalError"),
                    name_term("NoTable"),
                ],
            ),
            right=(
                "NotImplementedError",
                "It raises NotImplementedError: enable_fts() is supported on tables but not on views.",
            ),
            wrong=("AlterError", "sqlite3.OperationalError"),
        )
    )
    tests_cli = src.text("tests/test_cli.py")
    test = tests_cli.split("\ndef test_integer_overflow_error(", 1)[1].split("\ndef ", 1)[0]
    assert tests_cli.index("\ndef test_integer_overflow_error(") > len(tests_cli) * 0.9
    message = re.search(r'"Error: ([^\\"]+)\\n', test).group(1)  # type: ignore[union-attr]
    assert message == "Python int too large to convert to SQLite INTEGER", message
    add(
        Task(
            "big-overflow-message",
            "big-file",
            "In tests/test_cli.py, what error message does test_integer_overflow_error expect when a number "
            "too big for SQLite is inserted? Give its first line.",
            Answer(
                [text_term(message)],
                [text_term("integer overflow"), text_term("OverflowError:"), text_term("too many digits")],
            ),
            right=(f"Error: {message}", f"'{message}', followed by the SQL and its parameters"),
            wrong=("integer overflow", "OverflowError: int too large"),
        )
    )
    return tasks
