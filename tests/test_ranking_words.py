"""What a question says in words finds what it means: a file named in words ("the slow log module"), a
function written as called (``cli()``), a parameter named as code ("the keyword_casing parameter of
X.__init__"), the project's name in lower case (not a class of that name), a question about defaults or
settings (a configuration file's lines, not the code that reads them), one for a message's words (the
string, not docstrings), one that leaves the tests out, a command-line option it names (its declaration,
then what its default calls), and a long named function's body past its def."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ranking_named import evidence

from twinny_magics.naming import named_by_words, named_in
from twinny_magics.tools.search_focus import (
    excludes_tests,
    message_bonus,
    option_bonus,
    setting_bonus,
    written_as,
)


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TWINNY_MAGICS_INDEX_DIR", str(tmp_path / "index"))
    root = tmp_path / "work"
    pkg = root / "tinyapp"
    pkg.mkdir(parents=True)
    # The application's class: its chunk has the question's words (table, format, default) and the
    # project's name as a class name.
    reads = "".join(f"        self.opt_{k} = c['main']['opt_{k}']  # option {k}\n" for k in range(30))
    (pkg / "main.py").write_text(
        "class TinyApp:\n"
        '    """The tiny app: reads the default configuration, the table format and the prompt."""\n\n'
        "    def __init__(self, config):\n"
        "        c = self.config = config\n"
        "        self.table_format = c['main']['table_format']  # the table format the user set\n"
        f"{reads}\n\n"
        "def serve(port):\n    return port\n\n\n"
        + "".join(
            f"def port_helper_{k}(port, serve_port):\n    # serve the port {k}: port, serve, listen\n"
            f"    return serve(port + {k})\n\n\n"
            for k in range(12)
        )
        + "def cli(verbose=False):\n"
        + "".join(f"    step_{k} = {k}  # set up part {k}\n" for k in range(8))
        + "    serve(9000)\n"
    )
    # The default configuration file, INI with comments; the words are in its comments.
    settings = "".join(f"# Setting {k}: what it does.\nopt_{k} = {k}\n\n" for k in range(12))
    (pkg / "tinyapprc").write_text(
        f"[main]\n{settings}# Table format. Possible values: ascii, psql.\ntable_format = ascii\n"
    )
    completer = (
        "class Completer:\n"
        + "".join(f"    keywords_{k} = ['SELECT', 'FROM']  # keyword list {k}\n" for k in range(20))
        + '\n    def __init__(self, formats=(), keyword_casing="auto"):\n'
        + "        self.keyword_casing = keyword_casing\n\n"
        + "".join(f"    def fill_{k}(self):\n        return {k}  # nothing to see\n\n" for k in range(20))
        + "".join(
            f"    def complete_{k}(self, word):\n"
            + "".join(
                f"        m{j} = find(word, casing=self.keyword_casing)  # keyword casing\n" for j in range(4)
            )
            + "        return m0\n\n"
            for k in range(6)
        )
    )
    (pkg / "completer.py").write_text(completer)
    (pkg / "slow_log.py").write_text(
        '"""Queries that ran slow."""\n\n'
        + "".join(f"QUERY_{k} = 'select {k}'  # a query that ran\n" for k in range(30))
        + "SLOW_SECONDS = 90  # above this a query is slow\n"
    )
    (pkg / "queries.py").write_text(
        "".join(
            f"def query_{k}(db):\n    # how long the slow query took\n    return db.run({k})\n\n\n"
            for k in range(6)
        )
    )
    return root


def test_a_file_named_in_words_is_read_as_named() -> None:
    paths = ["notebooks/session_log.ipynb", "pkg/slow_log.py", "pkg/tutorial.ipynb", "pkg/main.py"]
    assert named_by_words("In the session log notebook, how long did it take?", paths) == (paths[0],)
    assert named_by_words("What does the slow log module set?", paths) == (paths[1],)
    assert named_by_words("In the tutorial notebook, which k?", paths) == (paths[2],)
    # A one-word name needs its kind after it: "main" alone is any main.
    assert named_by_words("What is the main thing the app does?", paths) == ()
    assert named_by_words("Which log does the session keep?", paths) == ()  # not the words in a row
    # The words alone are a topic, not the file.
    assert named_by_words("Which key bindings does it use?", ["app/key_bindings.py"]) == ()
    assert named_by_words("What does the key bindings file set?", ["app/key_bindings.py"]) == (
        "app/key_bindings.py",
    )
    many = [f"part{k}/session_log.py" for k in range(4)]
    assert named_by_words("the session log module", many) == ()  # it did not say which


def test_a_short_file_named_in_words_is_shown_whole_and_first(app: Path) -> None:
    path, rows = evidence(app, "Above how many seconds is a query slow, in the slow log module?")[0]
    assert path == "tinyapp/slow_log.py"
    assert rows[0][0] == 1
    assert (33, "SLOW_SECONDS = 90  # above this a query is slow") in rows


def test_a_function_written_as_called_is_named_and_its_chunk_comes_first(app: Path) -> None:
    assert ("cli",) in named_in("In tinyapp/main.py, which port does cli() serve?").names
    assert ("cli",) in named_in("which port does `cli()` serve?").names
    assert (
        named_in("what does obj.cli() do").names == (("obj", "cli"),)
        or ("cli",) not in named_in("what does obj.cli() do").names
    )
    path, rows = evidence(app, "In tinyapp/main.py, which port does cli() serve?")[0]
    assert path == "tinyapp/main.py"
    assert any(text.startswith("def cli(") for _, text in rows)
    assert any("serve(9000)" in text for _, text in rows)


def test_a_parameter_named_as_code_is_what_its_default_focus_looks_for(app: Path) -> None:
    question = (
        "In tinyapp/completer.py, what is the default of the keyword_casing parameter of Completer.__init__?"
    )
    path, rows = evidence(app, question)[0]
    assert path == "tinyapp/completer.py"
    assert any('keyword_casing="auto"' in text for _, text in rows)


def test_the_projects_name_in_lower_case_is_not_its_class(app: Path) -> None:
    assert written_as("TinyApp", "Which class is TinyApp?")
    assert not written_as("TinyApp", "Which table format does tinyapp's configuration set?")
    assert written_as("serve", "anything")
    path, _ = evidence(app, "Which table format does tinyapp's default configuration file set?")[0]
    assert path == "tinyapp/tinyapprc"
    # Written as the class, the class still comes first.
    path, _ = evidence(app, "Which table format does the TinyApp class read?")[0]
    assert path == "tinyapp/main.py"


@pytest.mark.parametrize(
    ("question", "path", "bonus"),
    [
        ("Which key bindings does it use by default?", "app/apprc", True),
        ("Which table format does the default configuration file set?", "setup.cfg", True),
        ("What does the settings file say the port is?", "conf/default.yaml", True),
        ("Which key bindings does it use by default?", "tests/apprc", False),  # a test's copy
        ("Which key bindings does it use by default?", "app/main.py", False),
        ("What does the code do?", "app/apprc", False),  # not about settings
        ("What is the default of X's size?", "setup.cfg", False),  # names a definition
    ],
)
def test_a_question_about_defaults_favours_configuration_files(question: str, path: str, bonus: bool) -> None:
    assert (setting_bonus(question, named_in(question), path) > 0) is bonus


def test_a_question_that_leaves_the_tests_out_is_shown_no_test_file(app: Path) -> None:
    tests = app / "tests"
    tests.mkdir()
    (tests / "test_serve.py").write_text(
        "".join(
            f"from tinyapp.main import serve\n\n\ndef test_serve_{k}():\n"
            f"    assert serve({k}) == {k}  # serve\n\n\n"
            for k in range(6)
        )
    )
    (app / "tinyapp" / "web.py").write_text("from tinyapp.main import serve\n\n\ndef run():\n    serve(80)\n")
    question = "Which modules of the tinyapp package import serve, not the tests? Name every one."
    assert excludes_tests(question)
    assert excludes_tests("which files (excluding the tests) use it")
    assert not excludes_tests("Which test file has the tests for serve?")
    assert not excludes_tests("Which modules import serve? Not sure where.")
    paths = [path for path, _ in evidence(app, question)]
    assert paths
    assert not any(path.startswith("tests/") for path in paths)
    assert "tinyapp/web.py" in paths
    # Asked for the tests, the test file comes first.
    assert evidence(app, "Which test file has the tests for serve?")[0][0] == "tests/test_serve.py"


def test_a_question_for_a_messages_words_gets_the_string_not_the_docstrings(app: Path) -> None:
    (app / "tinyapp" / "audit.py").write_text(
        "".join(
            f'def log_{k}(self, text):\n    """Print the message to the audit log, if its file is open.\n\n'
            f"    A message printed when tinyapp cannot open the audit log file goes to the log.\n"
            f'    """\n    return text\n\n\n'
            for k in range(8)
        )
        + "def open_audit(path):\n"
        + "".join(f"    x{k} = {k}\n" for k in range(40))
        + "    try:\n        return open(path)\n    except OSError:\n"
        + '        print("Error: Unable to open the audit log file.")\n'
    )
    question = "What message does tinyapp print when it cannot open the audit log file? Quote it exactly."
    path, rows = evidence(app, question)[0]
    assert path == "tinyapp/audit.py"
    assert any("Unable to open the audit log file" in text for _, text in rows)
    # A string with one of the words, or a docstring, gains nothing; nor a question that asks no message.
    assert message_bonus(question, 'x = "the audit trail"', {"audit", "open"}) == 0
    assert message_bonus(question, '"""open the audit log"""', {"audit", "open"}) == 0
    assert message_bonus("How is the audit log opened?", 'e = "open the audit log"', {"audit", "open"}) == 0
    assert message_bonus(question, 'e = "open the audit log"', {"audit", "open"}) > 0
    # An option's help describes it; the program never says it.
    assert message_bonus(question, 'option("--audit", help="open the audit log")', {"audit", "open"}) == 0


def test_a_long_named_functions_body_past_its_first_chunk_comes_next(app: Path) -> None:
    (app / "tinyapp" / "runner.py").write_text(
        "def run(execute=None, csv=False, table=False):\n"
        '    """Run the app."""\n'
        + "".join(f"    s{k} = {k}\n" for k in range(40))
        + "    if execute:\n"
        + "        if csv:\n            fmt = 'csv'\n        elif not table:\n            fmt = 'tsv'\n"
        + "        return fmt\n\n\n"
        + "".join(
            f"def helper_{k}(execute, fmt):\n    # the output format for execute: csv or table\n"
            f"    return execute, fmt  # output format {k}\n\n\n"
            for k in range(6)
        )
    )
    question = (
        "In tinyapp/runner.py, which output format does run() set for execute when neither csv nor table?"
    )
    rows = [(path, text) for path, chunk in evidence(app, question) for _, text in chunk]
    assert rows[0] == ("tinyapp/runner.py", "def run(execute=None, csv=False, table=False):")
    assert ("tinyapp/runner.py", "            fmt = 'tsv'") in rows


def test_a_named_options_declaration_comes_first_and_what_its_default_calls_next(app: Path) -> None:
    (app / "tinyapp" / "paths.py").write_text(
        "import os\n\n\ndef home_dir():\n    return os.path.expanduser('~/.config/tinyapp/')\n"
    )
    (app / "tinyapp" / "command.py").write_text(
        "import click\n\nfrom .paths import home_dir\n\n\n"
        + "".join(
            f'@click.option("--flag-{k}", is_flag=True, help="Flag {k} of the cli.")\n' for k in range(30)
        )
        + '@click.option(\n    "--config",\n    default=home_dir() + "config",\n'
        + '    help="The config file.",\n)\n'
        + "".join(f'@click.option("--more-{k}", is_flag=True, help="More {k}.")\n' for k in range(6))
        + "def cli(config, **flags):\n    '''The cli: reads the config file by default.'''\n"
        + "".join(
            f"    option_{k} = flags.get('flag_{k}')  # the default config option {k}\n" for k in range(12)
        )
    )
    tests = app / "tests"
    tests.mkdir()
    (tests / "test_cli.py").write_text(
        'ARGS = ["--config", "tests/config", "db"]  # the config file option, default path\n\n\n'
        "def test_cli_default_config():\n    assert ARGS  # the cli's config option default\n"
    )
    question = "Which file does the cli's --config option default to? Give the path."
    chunks = evidence(app, question)
    assert chunks[0][0] == "tinyapp/command.py"
    assert any(text == '    "--config",' for _, text in chunks[0][1])
    assert chunks[1][0] == "tinyapp/paths.py"
    assert option_bonus(question, '@click.option(\n    "--config",\n    default=None)') > 0
    assert option_bonus(question, 'parser.add_argument("-c", "--config", default="x")') > 0
    assert option_bonus(question, 'ARGS = ["--config", "tests/config"]') == 0  # passed, not declared
    assert option_bonus("Which file does the config option default to?", '@click.option("--config")') == 0
    # Several options named are the context of a question about the code that reads them.
    both = "Which format does cli() set when --csv is given and --config is not?"
    assert option_bonus(both, '@click.option(\n    "--config",\n    default=None)') == 0
