"""A development code base: litecli 1.12.3, an application with a configuration file and a command line.

The workspace is the sdist of ``litecli==1.12.3`` from PyPI (BSD-3), pinned by sha256 and unpacked at
run time, plus ``notebooks/session_log.ipynb`` (written here: it imports two helpers of the package and
keeps its outputs). Its shape is the one the other development code bases lack: a click command (``cli`` in
``litecli/main.py``, 1,002 lines) whose options meet a default configuration file in INI form
(``litecli/liteclirc``), read through ``litecli/config.py``; special commands registered by a decorator
defined in another file; a CHANGELOG and tests.

**Development** now: litecli was the held-out code base of the previous rounds (its tasks run only to
report, its failures never read to change the loop). It was retired to the development set after a few of
its task lines were seen and because the next round reads its failures; yamllint (``tasks_yamllint.py``)
was held out in its place, and sqlite-utils since (``tasks_all.py`` says which is held out).
"""

from __future__ import annotations

import re
from pathlib import Path

from tasks_common import (
    Answer,
    Cells,
    Edit,
    Sdist,
    Source,
    Task,
    Where,
    check_unique,
    count_task,
    edit_task,
    line_task,
    located,
    name_term,
    number_term,
    regex_term,
    text_term,
    write_notebook,
)

PIN = Sdist("litecli", "1.12.3", "dd707c1bc04047aa6dba1916d204be47003aa383cf638bbe0f1d70bc6571d681")
NOTEBOOK = "notebooks/session_log.ipynb"

#: The notebook's cells; the outputs are what running them against litecli 1.12.3 gives
#: (tests/test_bench_codebases.py runs them to check).
NOTEBOOK_CELLS: Cells = (
    (
        "markdown",
        "# Last night's session log\n\nWhich commands does SQLite's own shell know, and which ran slow?",
        None,
    ),
    (
        "code",
        "from litecli.packages.special.utils import check_if_sqlitedotcommand, format_uptime\n"
        "\n"
        "SLOW_QUERY_SECONDS = 90  # queries longer than this go to the slow list\n"
        "log = [\n"
        '    (".tables", 2),\n'
        '    (".dump users", 95),\n'
        '    ("select * from orders", 3725),\n'
        '    (".schema orders", 1),\n'
        '    ("\\\\dt", 4),\n'
        '    (".import data.csv staging", 86461),\n'
        "]",
        None,
    ),
    (
        "code",
        "known = [cmd for cmd, _ in log if check_if_sqlitedotcommand(cmd)]\nknown",
        "['.tables', '.dump users', '.schema orders', '.import data.csv staging']",
    ),
    ("markdown", "## Slow queries\n\nHow long each took, as litecli words it.", None),
    (
        "code",
        "slow = {cmd: format_uptime(s) for cmd, s in log if s > SLOW_QUERY_SECONDS}\nslow",
        "{'.dump users': '1 min 35 sec', 'select * from orders': '1 hour 2 min 5 sec', "
        "'.import data.csv staging': '1 day 0 hours 1 min 1 sec'}",
    ),
)


def build_workspace(root: Path) -> Path:
    """The workspace at ``root``: the cached sdist unpacked, and the notebook."""
    PIN.unpack(PIN.cached(), root)
    write_notebook(root, NOTEBOOK, NOTEBOOK_CELLS)
    return root


def build_tasks(root: Path) -> list[Task]:
    """Every task, made from the workspace at ``root`` (facts read from its files and checked there)."""
    src = Source(root)
    path = src.path
    main, config, rc = "litecli/main.py", "litecli/config.py", "litecli/liteclirc"
    special_main, dbcommands = "litecli/packages/special/main.py", "litecli/packages/special/dbcommands.py"
    utils, parseutils = "litecli/packages/special/utils.py", "litecli/packages/parseutils.py"
    completer = "litecli/sqlcompleter.py"
    tasks: list[Task] = []
    add = tasks.append

    # locate
    add(
        Task(
            "locate-SQLExecute",
            "locate",
            "Which file of this project defines the class SQLExecute?",
            Answer([path("litecli/sqlexecute.py")], [path(main), path("tests/test_sqlexecute.py")]),
            right=("litecli/sqlexecute.py", "SQLExecute is defined in `sqlexecute.py`."),
            wrong=("litecli/main.py", "tests/test_sqlexecute.py"),
            quick=True,
        )
    )
    add(
        Task(
            "locate-FavoriteQueries",
            "locate",
            "In which file is the class FavoriteQueries defined?",
            Answer(
                [path("litecli/packages/special/favoritequeries.py")],
                [path("litecli/packages/special/iocommands.py", bare=True), path(special_main)],
            ),
            right=(
                "litecli/packages/special/favoritequeries.py",
                "In favoritequeries.py (packages/special).",
            ),
            wrong=("litecli/packages/special/iocommands.py", "litecli/packages/special/main.py"),
        )
    )
    add(
        Task(
            "locate-is_destructive",
            "locate",
            "Which file defines the function is_destructive?",
            Answer(
                [path(parseutils, bare=True)],
                [path("litecli/packages/prompt_utils.py", bare=True), path(main)],
            ),
            right=(parseutils, "is_destructive lives in the parseutils module."),
            wrong=("litecli/packages/prompt_utils.py", "litecli/main.py"),
        )
    )

    # value
    src.has(rc, "\ntable_format = ascii\n")
    add(
        Task(
            "value-table_format",
            "value",
            "Which table format does litecli's default configuration file set?",
            Answer([name_term("ascii")], [name_term("psql"), name_term("tsv"), name_term("csv")]),
            right=("ascii", "table_format = ascii"),
            wrong=("psql", "tsv", "csv"),
            quick=True,
        )
    )
    src.has(rc, "\nkey_bindings = emacs\n")
    add(
        Task(
            "value-key_bindings",
            "value",
            "Which key bindings does litecli use by default?",
            Answer([regex_term("emacs", r"\bemacs\b")], [regex_term("vi", r"(?<![\w-])vim?(?![\w-])")]),
            right=("emacs", "key_bindings = emacs (Ctrl-A is home, Ctrl-E is end)"),
            wrong=("vi", "vim"),
        )
    )
    max_len = int(re.search(r"max_len_prompt = (\d+)", src.text(main)).group(1))  # type: ignore[union-attr]
    add(
        Task(
            "value-max_len_prompt",
            "value",
            "What is the value of max_len_prompt in the LiteCli class?",
            Answer(
                [number_term(max_len)], [number_term(max_len - 1), number_term(max_len + 1), number_term(80)]
            ),
            right=(str(max_len), f"max_len_prompt = {max_len}"),
            wrong=(str(max_len - 1), "80"),
        )
    )
    src.has("pyproject.toml", 'requires-python = ">=3.7"')
    add(
        Task(
            "value-requires-python",
            "value",
            "Which Python versions does litecli's pyproject.toml allow (its requires-python)?",
            Answer(
                [regex_term(">=3.7", r"(?<![\w.])3\.7(?![\d])")],
                [
                    regex_term("3.6", r"(?<![\w.])3\.6(?![\d])"),
                    regex_term(">=3.8", r">=\s*3\.(?!7(?!\d))\d+"),
                ],
            ),
            right=('requires-python = ">=3.7"', "Python 3.7 or newer."),
            wrong=(">=3.6", ">=3.8"),
        )
    )

    # line (computed)
    add(
        line_task(
            src,
            "line-is_mutating",
            main,
            "def is_mutating(",
            what="is_mutating",
            other=src.line_of(main, "def is_select("),
        )
    )
    add(
        line_task(
            src,
            "line-get_config",
            config,
            "def get_config(",
            what="get_config",
            other=src.line_of(config, "def load_config("),
            quick=True,
        )
    )
    add(
        line_task(
            src,
            "line-SQLCompleter",
            completer,
            "class SQLCompleter(",
            what="the class SQLCompleter",
            other=src.line_of(completer, "    keywords = ["),
        )
    )

    # count (part of a file)
    options = src.count(main, r"^@click\.option\(")
    add(
        count_task(
            "count-cli-options",
            "count",
            "How many options (@click.option decorators) does the cli command in litecli/main.py declare?",
            options,
            said="options",
            quick=True,
        )
    )
    registered = src.count(main, r"special\.register_special_command\(")
    add(
        count_task(
            "count-registered-commands",
            "count",
            "How many special commands does LiteCli.register_special_commands register in litecli/main.py?",
            registered,
            said="commands",
        )
    )

    # cross-file
    add(
        Task(
            "cross-confirm-importers",
            "cross-file",
            "Which modules of the litecli package (not its tests) import confirm_destructive_query? Name "
            "every one.",
            Answer(
                [path(main), path("litecli/packages/special/iocommands.py", bare=True)],
                [path(dbcommands, bare=True), path(parseutils, bare=True)],
            ),
            right=(
                "litecli/main.py and litecli/packages/special/iocommands.py",
                "litecli/main.py and special/iocommands.py",
            ),
            wrong=("litecli/main.py", "main.py, iocommands.py and dbcommands.py"),
        )
    )
    src.has(main, "from .config import config_location, ensure_dir_exists, get_config")
    add(
        Task(
            "cross-main-config-imports",
            "cross-file",
            "Which names does litecli/main.py import from its .config module?",
            Answer(
                [name_term("config_location"), name_term("ensure_dir_exists"), name_term("get_config")],
                [name_term("load_config"), name_term("write_default_config"), name_term("upgrade_config")],
            ),
            right=(
                "config_location, ensure_dir_exists, get_config",
                "It imports `get_config`, `config_location` and `ensure_dir_exists`.",
            ),
            wrong=(
                "get_config and config_location",
                "get_config, load_config, config_location, ensure_dir_exists",
            ),
            quick=True,
        )
    )
    testers = [f for f in src.files if f.startswith("tests/") and "extract_tables" in src.text(f)]
    assert testers == ["tests/test_parseutils.py"], testers
    add(
        Task(
            "cross-tests-extract_tables",
            "cross-file",
            "Which test file has the tests for extract_tables?",
            Answer(
                [path("tests/test_parseutils.py", bare=True)],
                [path(parseutils, bare=True), path("tests/test_completion_engine.py", bare=True)],
            ),
            right=("tests/test_parseutils.py", "test_parseutils.py"),
            wrong=("litecli/packages/parseutils.py", "tests/test_completion_engine.py"),
        )
    )

    # grep-read
    keywords = re.findall(
        r'"(\w+)"', src.has(parseutils, 'keywords = ("drop", "shutdown", "delete", "truncate", "alter")')
    )
    add(
        Task(
            "grep-destructive-keywords",
            "grep-read",
            "Which SQL keywords make litecli treat a query as destructive? Name every one.",
            Answer(
                [name_term(k, case=False) for k in keywords],
                [name_term(k, case=False) for k in ("insert", "update", "create")],
            ),
            right=(", ".join(keywords), "DROP, SHUTDOWN, DELETE, TRUNCATE and ALTER"),
            wrong=("drop, delete, truncate, alter", "drop, shutdown, delete, truncate, alter, update"),
        )
    )
    src.has(dbcommands, 'raise TypeError(".load accepts exactly one path")')
    add(
        Task(
            "grep-load-exception",
            "grep-read",
            "Which exception does the .load special command raise when it is not given exactly one path?",
            Answer(
                [name_term("TypeError")],
                [name_term("ValueError"), name_term("OSError"), name_term("ArgumentMissing")],
            ),
            right=("TypeError", 'raise TypeError(".load accepts exactly one path")'),
            wrong=("ValueError", "ArgumentMissing"),
        )
    )
    src.has(main, 'log_file = "/tmp/litecli.log"')
    add(
        Task(
            "grep-log-fallback",
            "grep-read",
            "If litecli cannot create the folder of its log file, which file does it log to instead?",
            Answer(
                [text_term("/tmp/litecli.log")],
                [text_term("~/.config/litecli/log"), text_term("litecli.log.1")],
            ),
            right=("/tmp/litecli.log", 'It falls back to log_file = "/tmp/litecli.log".'),
            wrong=("~/.config/litecli/log", "It disables logging."),
        )
    )

    # notebook (the notebook written here)
    add(
        Task(
            "nb-slow-threshold",
            "notebook",
            f"Above how many seconds does {NOTEBOOK} put a query on the slow list?",
            Answer([number_term(90)], [number_term(95), number_term(86461), number_term(60)]),
            right=("90", "SLOW_QUERY_SECONDS = 90"),
            wrong=("95", "60 seconds"),
            quick=True,
        )
    )
    add(
        Task(
            "nb-select-duration",
            "notebook",
            "In the session log notebook, how long did the query `select * from orders` take, as its "
            "output words it?",
            Answer(
                [regex_term("1 hour 2 min 5 sec", r"1\s+hour\s+2\s+min\s+5\s+sec")],
                [
                    regex_term("3725 sec", r"(?<![\d,])3,?725\s*s"),
                    regex_term("1 min 35 sec", r"1\s+min\s+35"),
                ],
            ),
            right=("1 hour 2 min 5 sec", "'select * from orders': '1 hour 2 min 5 sec'"),
            wrong=("1 min 35 sec", "3725 sec"),
        )
    )
    add(
        Task(
            "nb-known-commands",
            "notebook",
            "How many of the logged commands does the session log notebook find to be SQLite dot commands?",
            Answer([number_term(4)], [number_term(5), number_term(3), number_term(6)]),
            right=("4", "Four: .tables, .dump users, .schema orders and .import data.csv staging."),
            wrong=("5", "3"),
        )
    )

    # big-file: deep in main.py (1,002 lines) or sqlcompleter.py
    src.has(main, 'elif not table:\n                litecli.formatter.format_name = "tsv"')
    add(
        Task(
            "big-execute-format",
            "big-file",
            "In litecli/main.py, which output format does cli() set for --execute when neither --csv nor "
            "--table is given?",
            Answer(
                [name_term("tsv", case=False)],
                [name_term("csv", case=False), name_term("ascii"), name_term("table")],
            ),
            right=("tsv", 'litecli.formatter.format_name = "tsv"'),
            wrong=("csv", "ascii"),
            quick=True,
        )
    )
    src.has(completer, 'def __init__(self, supported_formats=(), keyword_casing="auto"):')
    add(
        Task(
            "big-keyword-casing",
            "big-file",
            "In litecli/sqlcompleter.py, what is the default of the keyword_casing parameter of "
            "SQLCompleter.__init__?",
            Answer([name_term("auto")], [name_term("upper"), name_term("lower"), name_term("None")]),
            right=('"auto"', "keyword_casing defaults to 'auto'."),
            wrong=("upper", "lower"),
        )
    )
    src.has(main, 'if first_token.lower() in ("use", "\\\\u"):')
    add(
        Task(
            "big-completion-reset",
            "big-file",
            "In litecli/main.py, which first words of a statement make need_completion_reset return True?",
            Answer(
                [name_term("use", case=False), regex_term("\\u", r"\\\\?u\b")],
                [
                    name_term("alter", case=False),
                    name_term("create", case=False),
                    name_term("drop", case=False),
                ],
            ),
            right=('"use" and "\\u"', "use, \\\\u"),
            wrong=("use, connect, drop", "alter, create, use, \\u"),
        )
    )

    # multi-hop: a fact that needs two files
    src.has(main, 'default=config_location() + "config"')
    src.has(config, 'return expanduser("~/.config/litecli/")')
    add(
        Task(
            "hop-liteclirc-default",
            "multi-hop",
            "On Linux, with XDG_CONFIG_HOME unset, which file does the cli's --liteclirc option default to? "
            "Give the path.",
            Answer(
                [regex_term("~/.config/litecli/config", r"\.config/litecli/config\b")],
                [text_term("~/.litecli"), text_term("AppData"), regex_term("liteclirc", r"/liteclirc\b")],
            ),
            right=("~/.config/litecli/config", "config_location() + 'config' = ~/.config/litecli/config"),
            wrong=("~/.config/litecli/liteclirc", "~/.litecli/config"),
        )
    )
    src.has(dbcommands, "from .main import special_command, RAW_QUERY, PARSED_QUERY")
    add(
        Task(
            "hop-decorator-file",
            "multi-hop",
            "The special commands in litecli/packages/special/dbcommands.py are registered with a decorator. "
            "Which file defines that decorator?",
            Answer(
                [path(special_main)],
                [path(dbcommands, bare=True), path(main), path("litecli/packages/special/__init__.py")],
            ),
            right=(special_main, "special_command, from litecli/packages/special/main.py"),
            wrong=("litecli/packages/special/dbcommands.py", "litecli/main.py"),
            quick=True,
        )
    )
    add(
        Task(
            "hop-notebook-import",
            "multi-hop",
            f"{NOTEBOOK} calls format_uptime. Which file of the project defines that function?",
            Answer(
                [path(utils)],
                [
                    path(special_main),
                    path(dbcommands, bare=True),
                    path("litecli/packages/filepaths.py", bare=True),
                ],
            ),
            right=(utils, "format_uptime is defined in litecli/packages/special/utils.py"),
            wrong=("litecli/packages/special/main.py", "litecli/packages/special/dbcommands.py"),
        )
    )

    # exact: a string quoted from the code, computed from it
    execute_help = re.search(r'"--execute", type=str, help="([^"]+)"', src.text(main)).group(1)  # type: ignore[union-attr]
    add(
        Task(
            "exact-execute-help",
            "exact",
            "What is the help text of the -e/--execute option of litecli's command line? Quote it exactly.",
            Answer(
                [text_term(execute_help.rstrip("."))],
                [text_term("Execute commands from file"), text_term("Execute command and exit")],
            ),
            right=(execute_help, f'help="{execute_help}"'),
            wrong=("Execute commands from file.", "Execute command and exit."),
            quick=True,
        )
    )
    audit = src.has(main, "Unable to open the audit log file. Your queries will not be logged.")
    add(
        Task(
            "exact-audit-message",
            "exact",
            "What message does litecli print when it cannot open the audit log file? Quote it exactly.",
            Answer([text_term(audit.rstrip("."))], [text_term("Unable to open the log file")]),
            right=(f"Error: {audit}", audit),
            wrong=('Error: Unable to open the log file "{}".', "Cannot write to file"),
        )
    )
    destructive = src.has("litecli/packages/prompt_utils.py", "You're about to run a destructive command.")
    add(
        Task(
            "exact-destructive-prompt",
            "exact",
            "What does litecli say (the first sentence of the prompt) before it runs a destructive query? "
            "Quote it.",
            Answer(
                [text_term(destructive.rstrip("."))],
                [text_term("Wise choice"), text_term("Do you want to proceed")],
            ),
            right=(destructive, f'"{destructive}\\nDo you want to proceed? (y/n)"'),
            wrong=("Do you want to proceed? (y/n)", "Wise choice. Command execution stopped."),
        )
    )

    # file-count: counted over a whole file by the grader
    dot = src.count(utils, r'^\s+"\.\w+",\s*$')
    add(
        count_task(
            "fcount-dot-commands",
            "file-count",
            "How many SQLite dot commands does the list in check_if_sqlitedotcommand "
            "(litecli/packages/special/utils.py) hold?",
            dot,
            said="dot commands",
        )
    )
    funcs = src.count(parseutils, r"^def ")
    add(
        count_task(
            "fcount-parseutils-functions",
            "file-count",
            "How many top-level functions does litecli/packages/parseutils.py define?",
            funcs,
            said="functions",
            quick=True,
        )
    )
    colors = src.text(rc).split("\n[colors]\n", 1)[1].split("\n[", 1)[0]
    settings = sum(1 for line in colors.splitlines() if re.match(r"^[\w.-]+\s*=", line))
    add(
        count_task(
            "fcount-colors",
            "file-count",
            "How many settings does the [colors] section of litecli/liteclirc set?",
            settings,
            said="settings",
        )
    )
    tests = src.count("tests/test_sqlexecute.py", r"^def test_")
    add(
        count_task(
            "fcount-sqlexecute-tests",
            "file-count",
            "How many test functions does tests/test_sqlexecute.py define?",
            tests,
            said="test functions",
        )
    )

    # edit
    add(
        edit_task(
            src,
            "edit-max_len_prompt",
            f"In litecli/main.py, change max_len_prompt from {max_len} to 60.",
            [(Edit(main, f"max_len_prompt = {max_len}", "max_len_prompt = 60"), r"max_len_prompt\s*=\s*60")],
            wrong_edits=[
                [Edit(main, f"max_len_prompt = {max_len}", "max_len_prompt = 06")],
                [Edit(main, 'default_prompt = "\\\\d> "', 'default_prompt = "\\\\d> "  # 60')],
            ],
            quick=True,
        )
    )
    add(
        edit_task(
            src,
            "edit-table-format",
            "Make psql the default table format in litecli's default configuration file (litecli/liteclirc).",
            [
                (
                    Edit(rc, "\ntable_format = ascii\n", "\ntable_format = psql\n"),
                    r"\ntable_format\s*=\s*psql[ \t]*\n",
                )
            ],
            wrong_edits=[
                [Edit("tests/liteclirc", "table_format = ascii", "table_format = psql")],
                [Edit(rc, "# Recommended: ascii", "# Recommended: psql")],
            ],
        )
    )
    add(
        edit_task(
            src,
            "edit-requires-python",
            'In pyproject.toml, raise requires-python to ">=3.8".',
            [
                (
                    Edit("pyproject.toml", 'requires-python = ">=3.7"', 'requires-python = ">=3.8"'),
                    r"""requires-python\s*=\s*(["'])>=\s*3\.8\1""",
                )
            ],
            wrong_edits=[
                [Edit("pyproject.toml", 'requires-python = ">=3.7"', 'requires-python = ">=3.9"')],
                [Edit("setup.cfg", "[egg_info]", "[options]\npython_requires = >=3.8\n\n[egg_info]")],
            ],
        )
    )

    # multi-edit: several places, judged on every file
    add(
        edit_task(
            src,
            "medit-rename-is_select",
            "In litecli/main.py, rename the function is_select to is_select_query, and update the place "
            "that calls it.",
            [
                (
                    Edit(main, "def is_select(status):", "def is_select_query(status):"),
                    r"def[ \t]+is_select_query\(status\):",
                ),
                (
                    Edit(main, "if is_select(status) and", "if is_select_query(status) and"),
                    r"if is_select_query\(status\) and",
                ),
            ],
            wrong_edits=[
                [Edit(main, "def is_select(status):", "def is_select_query(status):")],
                [Edit(main, "if is_select(status) and", "if is_select_query(status) and")],
            ],
            quick=True,
        )
    )
    add(
        edit_task(
            src,
            "medit-two-settings",
            "In litecli's default configuration file (litecli/liteclirc), turn multi_line on (True) and "
            "destructive_warning off (False).",
            [
                (
                    Edit(rc, "\nmulti_line = False\n", "\nmulti_line = True\n"),
                    r"\nmulti_line\s*=\s*True[ \t]*\n",
                ),
                (
                    Edit(rc, "\ndestructive_warning = True\n", "\ndestructive_warning = False\n"),
                    r"\ndestructive_warning\s*=\s*False[ \t]*\n",
                ),
            ],
            wrong_edits=[
                [Edit(rc, "\nmulti_line = False\n", "\nmulti_line = True\n")],
                [
                    Edit("tests/liteclirc", "\nmulti_line = False\n", "\nmulti_line = True\n"),
                    Edit(
                        "tests/liteclirc", "\ndestructive_warning = True\n", "\ndestructive_warning = False\n"
                    ),
                ],
            ],
        )
    )
    check_unique(tasks)
    return located(tasks, WHERE)


_MAIN, _RC, _PARSEUTILS = "litecli/main.py", "litecli/liteclirc", "litecli/packages/parseutils.py"
_UTILS = "litecli/packages/special/utils.py"
#: Where each answer stands (the lines it rests on, the notebook as its cell view), by task; line and edit
#: tasks carry their own. Every task has one: none is without a line holding its answer.
WHERE: dict[str, list[Where]] = {
    "locate-SQLExecute": [Where("litecli/sqlexecute.py", "class SQLExecute")],
    "locate-FavoriteQueries": [Where("litecli/packages/special/favoritequeries.py", "class FavoriteQueries")],
    "locate-is_destructive": [Where(_PARSEUTILS, "def is_destructive(")],
    "value-table_format": [Where(_RC, "table_format = ascii")],
    "value-key_bindings": [Where(_RC, "key_bindings = emacs")],
    "value-max_len_prompt": [Where(_MAIN, "    max_len_prompt = ")],
    "value-requires-python": [Where("pyproject.toml", 'requires-python = ">=3.7"')],
    "count-cli-options": [Where(_MAIN, r"^@click\.option\(", every=True, regex=True)],
    "count-registered-commands": [
        Where(_MAIN, r"special\.register_special_command\(", every=True, regex=True)
    ],
    "cross-confirm-importers": [
        Where(_MAIN, "import confirm, confirm_destructive_query"),
        Where("litecli/packages/special/iocommands.py", "import confirm_destructive_query"),
    ],
    "cross-main-config-imports": [
        Where(_MAIN, "from .config import config_location, ensure_dir_exists, get_config")
    ],
    "cross-tests-extract_tables": [
        Where("tests/test_parseutils.py", "from litecli.packages.parseutils import (", until="extract_tables")
    ],
    "grep-destructive-keywords": [Where(_PARSEUTILS, 'keywords = ("drop", "shutdown", "delete"')],
    "grep-load-exception": [
        Where("litecli/packages/special/dbcommands.py", 'raise TypeError(".load accepts exactly one path")')
    ],
    "grep-log-fallback": [Where(_MAIN, 'log_file = "/tmp/litecli.log"')],
    "nb-slow-threshold": [Where(NOTEBOOK, "SLOW_QUERY_SECONDS = 90")],
    "nb-select-duration": [Where(NOTEBOOK, "'select * from orders': '1 hour 2 min 5 sec'")],
    "nb-known-commands": [Where(NOTEBOOK, "# out: ['.tables'")],
    # The --execute branch: its `elif not table:` (the first of two) through the tsv it sets.
    "big-execute-format": [Where(_MAIN, "elif not table:", until='format_name = "tsv"')],
    "big-keyword-casing": [Where("litecli/sqlcompleter.py", 'keyword_casing="auto"):')],
    "big-completion-reset": [Where(_MAIN, r'if first_token.lower() in ("use", "\\u"):')],
    "hop-liteclirc-default": [
        Where(_MAIN, 'default=config_location() + "config"'),
        Where("litecli/config.py", 'return expanduser("~/.config/litecli/")'),
    ],
    "hop-decorator-file": [
        Where("litecli/packages/special/dbcommands.py", "from .main import special_command"),
        Where("litecli/packages/special/main.py", "def special_command("),
    ],
    "hop-notebook-import": [
        Where(NOTEBOOK, "from litecli.packages.special.utils import"),
        Where(_UTILS, "def format_uptime("),
    ],
    "exact-execute-help": [Where(_MAIN, 'help="Execute command and quit."')],
    "exact-audit-message": [
        Where(_MAIN, "Unable to open the audit log file. Your queries will not be logged.")
    ],
    "exact-destructive-prompt": [
        Where("litecli/packages/prompt_utils.py", "You're about to run a destructive command.")
    ],
    # The counts: every line holding one of the things counted (as the task counts them).
    "fcount-dot-commands": [Where(_UTILS, r'^\s+"\.\w+",\s*$', every=True, regex=True)],
    "fcount-parseutils-functions": [Where(_PARSEUTILS, r"^def ", every=True, regex=True)],
    "fcount-colors": [
        Where(_RC, "completion-menu.completion.current =", until="bottom-toolbar.transaction.failed"),
        Where(_RC, "output.header =", until="output.even-row"),
    ],
    "fcount-sqlexecute-tests": [Where("tests/test_sqlexecute.py", r"^def test_", every=True, regex=True)],
}
