"""sqlite-utils 3.37's tasks of the later kinds (multi-hop, exact, file-count) and its edits.

``tasks_sqlite_utils.py`` builds the workspace (the sdist and the notebook written here) and the tasks of
the kinds the benchmark began with, and asks this module for the rest. As there, every fact is read from
the files or asserted against them, so a wrong pin fails when the tasks are built. Held out: see
``tasks_sqlite_utils.py``.
"""

from __future__ import annotations

import re

from tasks_common import (
    Answer,
    Edit,
    Source,
    Task,
    count_task,
    edit_task,
    regex_term,
    text_term,
)

_DB, _CLI, _UTILS = "sqlite_utils/db.py", "sqlite_utils/cli.py", "sqlite_utils/utils.py"
_RECIPES, _SETUP = "sqlite_utils/recipes.py", "setup.py"


def build_tasks(src: Source, notebook: str) -> list[Task]:
    """The multi-hop, exact, file-count, edit and multi-edit tasks; ``notebook`` is the one written here."""
    return _answers(src, notebook) + _edits(src)


def _quoted(snippet: str) -> str:
    """The text of the string literals in ``snippet``, joined (a message split over lines)."""
    return "".join(re.findall(r'"([^"]*)"', snippet))


def _answers(src: Source, notebook: str) -> list[Task]:
    path = src.path
    tasks: list[Task] = []
    add = tasks.append

    # multi-hop: a fact that needs two files
    src.has(_SETUP, "sqlite-utils=sqlite_utils.cli:cli")
    src.has(_CLI, "\ndef cli():\n")
    src.has("sqlite_utils/__main__.py", "from .cli import cli")
    add(
        Task(
            "hop-console-script",
            "multi-hop",
            "Which file of this project defines the function that the `sqlite-utils` console script, "
            "declared in setup.py, runs?",
            Answer(
                [path(_CLI)],
                [path("sqlite_utils/__main__.py"), path("sqlite_utils/__init__.py"), path(_DB)],
            ),
            right=(_CLI, "The entry point is sqlite_utils.cli:cli, the click group in cli.py."),
            wrong=("sqlite_utils/__main__.py", "sqlite_utils/__init__.py"),
            quick=True,
        )
    )
    src.has(_DB, "\n    def query(\n")
    src.has(_CLI, "\ndef query(\n")
    add(
        Task(
            "hop-notebook-query",
            "multi-hop",
            f"{notebook} runs its SQL with db.query. Which file of the project defines that method?",
            Answer([path(_DB)], [path(_CLI), path(_UTILS), path("tests/test_query.py", bare=True)]),
            right=(_DB, "Database.query, in sqlite_utils/db.py"),
            wrong=("sqlite_utils/cli.py", "sqlite_utils/utils.py"),
        )
    )
    src.has(_CLI, "from click_default_group import DefaultGroup")
    pinned = re.search(r'"click-default-group>=(\d+)\.(\d+)\.(\d+)"', src.text(_SETUP))
    assert pinned is not None
    major, minor, patch = (int(n) for n in pinned.groups())
    version = f"{major}.{minor}.{patch}"

    def release(text: str) -> str:
        return rf"(?<![\w.]){re.escape(text)}(?!\.?\d)"

    add(
        Task(
            "hop-default-group-version",
            "multi-hop",
            "sqlite-utils' command line group is a DefaultGroup, from a third-party package. Which minimum "
            "version of that package does setup.py require?",
            Answer(
                [regex_term(version, release(version))],
                [
                    regex_term(f"{major}.{minor}.{patch - 1}", release(f"{major}.{minor}.{patch - 1}")),
                    regex_term(f"{major}.{minor}.{patch + 1}", release(f"{major}.{minor}.{patch + 1}")),
                    regex_term(f"{major}.{minor}", release(f"{major}.{minor}")),
                    regex_term(f"{major}.{minor + 1}", rf"(?<![\w.]){major}\.{minor + 1}(?!\d)"),
                ],
            ),
            right=(version, f"click-default-group>={version}"),
            wrong=(f"{major}.{minor}.{patch - 1}", f"click-default-group>={major}.{minor + 1}"),
        )
    )

    # exact: a string quoted from the code
    both = _quoted(src.has(_DB, '), "Either specify a filename_or_conn or pass memory=True"'))
    add(
        Task(
            "exact-database-assert",
            "exact",
            "What assertion message does sqlite_utils' Database give when it is created with neither a "
            "file name or connection nor memory=True? Quote it exactly.",
            Answer(
                [text_term(both)],
                [text_term("Either specify a filename or"), text_term("filename_or_conn is required")],
            ),
            right=(both, f'AssertionError: "{both}"'),
            wrong=("Either specify a filename or pass memory=True", "filename_or_conn is required"),
            quick=True,
        )
    )
    group = src.has(_CLI, '\ndef cli():\n    "Commands for interacting with a SQLite database"\n')
    group = _quoted(group)
    add(
        Task(
            "exact-group-help",
            "exact",
            "What one-line description does `sqlite-utils --help` show for the command group? Quote it "
            "exactly.",
            Answer(
                [text_term(group)],
                [
                    text_term("CLI tool and Python library for manipulating SQLite databases"),
                    text_term("Commands for working with"),
                ],
            ),
            right=(group, f'"{group}" (the docstring of cli() in sqlite_utils/cli.py)'),
            wrong=(
                "CLI tool and Python library for manipulating SQLite databases",
                "Commands for working with a SQLite database",
            ),
        )
    )
    rows = src.has(_CLI, '            "Rows must all be dictionaries, got: {}".format(repr(doc)[:1000])')
    rows = _quoted(rows).removesuffix("{}").rstrip()
    add(
        Task(
            "exact-rows-not-dicts",
            "exact",
            "What error does `sqlite-utils insert` report when a row of its input is not a JSON object "
            "(dictionary)? Quote the message exactly.",
            Answer(
                [text_term(rows)],
                [
                    text_term("Rows must be dictionaries"),
                    text_term("--convert must return dict or iterator"),
                    text_term("Invalid JSON"),
                ],
            ),
            right=(rows, f'"{rows} {{}}", with the repr of the row'),
            wrong=("Rows must be dictionaries", "--convert must return dict or iterator"),
        )
    )

    # file-count: counted over a whole file by the grader
    alters = src.count(_DB, r"raise AlterError\(")
    add(
        count_task(
            "fcount-alter-errors",
            "file-count",
            "How many times does sqlite_utils/db.py raise AlterError?",
            alters,
            said="raises",
            quick=True,
        )
    )
    commands = src.count(_CLI, r"^@cli\.command\(")
    assert commands > 40, commands
    add(
        count_task(
            "fcount-cli-commands",
            "file-count",
            "How many commands does sqlite_utils/cli.py define with the @cli.command decorator?",
            commands,
            said="commands",
        )
    )
    fts_tests = src.count("tests/test_fts.py", r"^def test_")
    assert src.count("tests/test_fts.py", r"^\s+def test_") == 0
    add(
        count_task(
            "fcount-fts-tests",
            "file-count",
            "How many test functions does tests/test_fts.py define?",
            fts_tests,
            said="test functions",
        )
    )
    recipes = src.count(_RECIPES, r"^def ")
    add(
        count_task(
            "fcount-recipes",
            "file-count",
            "How many functions does sqlite_utils/recipes.py define?",
            recipes,
            said="functions",
        )
    )
    return tasks


def _spatialite_paths(text: str) -> tuple[str, list[str]]:
    """The SPATIALITE_PATHS tuple as written in utils.py, and its entries' lines."""
    found = re.search(r"^SPATIALITE_PATHS = \(\n((?:    \"[^\"]+\",\n)+)\)\n", text, re.MULTILINE)
    assert found is not None
    return found.group(0), found.group(1).splitlines(keepends=True)


def _edits(src: Source) -> list[Task]:
    tasks: list[Task] = []
    add = tasks.append

    # edit
    add(
        edit_task(
            src,
            "edit-table-batch-size",
            "In sqlite_utils/db.py, change the default batch_size of Table (the one in Table.__init__) "
            "from 100 to 500.",
            [
                (
                    Edit(_DB, "        batch_size: int = 100,\n", "        batch_size: int = 500,\n"),
                    r"        batch_size:[ \t]*int[ \t]*=[ \t]*500,\n",
                )
            ],
            wrong_edits=[
                [Edit(_DB, "        batch_size: int = 100,\n", "        batch_size: int = 1000,\n")],
                [
                    Edit(
                        "docs/python-api.rst",
                        "The default batch size is 100,",
                        "The default batch size is 500,",
                    )
                ],
            ],
            quick=True,
        )
    )
    requires = src.has(_SETUP, '    python_requires=">=3.8",\n')
    add(
        edit_task(
            src,
            "edit-python-requires",
            "In setup.py, change python_requires so that the package requires Python 3.9 or newer.",
            [
                (
                    Edit(_SETUP, requires, requires.replace("3.8", "3.9")),
                    r"""    python_requires\s*=\s*(['"])>=\s*3\.9\1,\n""",
                )
            ],
            wrong_edits=[
                [Edit(_SETUP, '        "Programming Language :: Python :: 3.8",\n', "")],
                [Edit(_SETUP, requires, requires.replace("3.8", "3.10"))],
            ],
        )
    )
    new_path = "/usr/lib/mod_spatialite.so"
    block, entries = _spatialite_paths(src.text(_UTILS))
    head = "SPATIALITE_PATHS = (\n"
    spelled = r"""[ \t]*(?:"/usr/lib/mod_spatialite\.so"|'/usr/lib/mod_spatialite\.so')"""
    placings = []
    for at in range(len(entries) + 1):
        comma = ",?" if at == len(entries) else ","
        placings.append(
            "".join(re.escape(e) for e in entries[:at])
            + spelled
            + comma
            + r"[ \t]*\n"
            + "".join(re.escape(e) for e in entries[at:])
        )
    add(
        edit_task(
            src,
            "edit-spatialite-path",
            f"Make find_spatialite also look for SpatiaLite at {new_path}: add that path to "
            "SPATIALITE_PATHS in sqlite_utils/utils.py.",
            [
                (
                    Edit(_UTILS, block, block.replace(")\n", f'    "{new_path}",\n)\n')),
                    re.escape(head) + "(?:" + "|".join(placings) + r")\)\n",
                )
            ],
            wrong_edits=[
                [Edit(_UTILS, '    "/usr/local/lib/mod_spatialite.so",\n', f'    "{new_path}",\n')],
                [Edit(_UTILS, block, block.replace(")\n", '    "/usr/lib/mod_spatialite",\n)\n'))],
            ],
        )
    )

    # multi-edit: several places, judged on every file
    old, new = "file_progress", "progress_for_file"
    assert src.text(_UTILS).count(old) == 1
    assert src.text(_CLI).count(old) == 2
    assert not any(old in src.text(f) for f in src.files if f not in (_UTILS, _CLI) and f.endswith(".py"))
    add(
        edit_task(
            src,
            "medit-rename-file_progress",
            f"Rename the function {old} in sqlite_utils/utils.py to {new}, and update every place in the "
            "package that uses it.",
            [
                (
                    Edit(
                        _UTILS,
                        f"def {old}(file, silent=False, **kwargs):",
                        f"def {new}(file, silent=False, **kwargs):",
                    ),
                    rf"def[ \t]+{new}\(file, silent=False, \*\*kwargs\):",
                ),
                (Edit(_CLI, f"    {old},\n", f"    {new},\n"), rf"    {new},\n"),
                (
                    Edit(
                        _CLI,
                        f"    with {old}(decoded_buffer, silent=silent) as decoded:",
                        f"    with {new}(decoded_buffer, silent=silent) as decoded:",
                    ),
                    rf"    with {new}\(decoded_buffer, silent=silent\) as decoded:",
                ),
            ],
            wrong_edits=[
                [Edit(_UTILS, f"def {old}(file,", f"def {new}(file,")],
                [
                    Edit(_UTILS, f"def {old}(file,", f"def {new}(file,"),
                    Edit(_CLI, f"    {old},\n", f"    {new},\n"),
                ],
            ],
            quick=True,
        )
    )
    date = "def parsedate(value, dayfirst=False, yearfirst=False, errors=None):"
    datetime = "def parsedatetime(value, dayfirst=False, yearfirst=False, errors=None):"
    src.has(_RECIPES, date)
    src.has(_RECIPES, datetime)
    add(
        edit_task(
            src,
            "medit-recipes-dayfirst",
            "In sqlite_utils/recipes.py, make both parsedate and parsedatetime read ambiguous dates day "
            "first by default (dayfirst=True unless the caller says otherwise).",
            [
                (
                    Edit(_RECIPES, date, date.replace("dayfirst=False", "dayfirst=True")),
                    r"def parsedate\(value, dayfirst[ \t]*=[ \t]*True, yearfirst=False, errors=None\):",
                ),
                (
                    Edit(_RECIPES, datetime, datetime.replace("dayfirst=False", "dayfirst=True")),
                    r"def parsedatetime\(value, dayfirst[ \t]*=[ \t]*True, yearfirst=False, errors=None\):",
                ),
            ],
            wrong_edits=[
                [Edit(_RECIPES, date, date.replace("dayfirst=False", "dayfirst=True"))],
                [
                    Edit(_RECIPES, date, date.replace("yearfirst=False", "yearfirst=True")),
                    Edit(_RECIPES, datetime, datetime.replace("yearfirst=False", "yearfirst=True")),
                ],
            ],
        )
    )
    return tasks
