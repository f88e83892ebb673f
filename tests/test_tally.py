"""Counts the loop makes of a file a count question names (twinny_magics.tally), and where they go: the
head start of such a question, after the evidence; hostile files give fewer counts, never an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twinny_magics import tally
from twinny_magics.agent import Agent
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.tools.asked import TALLY_SHARE
from twinny_magics.tools.notebook import notebook_lines
from twinny_magics.tools.workspace import Workspace

TESTS = """\
import pytest


def helper():
    return 1


def test_one():
    assert helper()


@pytest.mark.parametrize("x", [1, 2])
def test_two(x):
    assert x


async def test_three():
    pass


class TestGroup:
    def setup_method(self):
        pass

    def test_a(self):
        pass

    def test_b(self):
        pass
"""

LIBRARY = """\
__all__ = ["Base", "Left", "Right", "make"]
__all__ += ["extra"]
NAMES = ("a", "b", "c")
EMPTY = []
TABLE = {"x": 1, "y": 2}


class Base:
    KINDS = ["one", "two"]

    def run(self):
        pass


class Left(Base):
    pass


class Right(Base, dict):
    pass


class Other(object):
    pass


@register("left")
def make():
    pass


@register("right")
def unmake():
    pass
"""


def lines_of(text: str) -> list[str]:
    return text.splitlines()


def test_python_tests_are_counted_apart_from_helpers_and_methods() -> None:
    lines = lines_of(TESTS)
    counted = tally.tally("tests/test_x.py", lines)
    assert counted[0] == f"lines: {len(lines)} ({sum(1 for x in lines if x.strip())} not blank)"
    assert "top-level functions (def): 4 (helper, test_one, test_two, test_three)" in counted
    assert "top-level functions named test*: 3 (test_one, test_two, test_three)" in counted
    assert "top-level classes: 1 (TestGroup)" in counted
    assert "methods of class TestGroup: 3 (setup_method, test_a, test_b)" in counted
    assert "methods of class TestGroup named test*: 2 (test_a, test_b)" in counted
    assert "functions decorated @pytest.mark.parametrize: 1 (test_two)" in counted


def test_python_bases_collections_and_decorators() -> None:
    counted = tally.tally("pkg/lib.py", lines_of(LIBRARY))
    assert "classes deriving directly from Base: 2 (Left, Right)" in counted
    assert "classes deriving directly from dict: 1 (Right)" in counted
    assert "classes deriving directly from object: 1 (Other)" in counted
    assert "__all__ = a list of 4 items (line 1): 'Base', 'Left', 'Right', 'make'" in counted
    assert "__all__ += a list of 1 items (line 2): 'extra'" in counted
    assert "NAMES = a tuple of 3 items (line 3): 'a', 'b', 'c'" in counted
    assert "TABLE = a dict of 2 keys (line 5): 'x', 'y'" in counted
    assert "Base.KINDS = a list of 2 items (line 9): 'one', 'two'" in counted
    assert "functions decorated @register: 2 (make, unmake)" in counted
    assert not any(line.startswith("EMPTY") for line in counted)  # a collection started empty lists nothing


def test_a_collection_inside_a_function_is_counted_under_the_functions_name() -> None:
    source = (
        "def is_dot_command(command):\n"
        "    pair = (1, 2)\n"
        "    if command:\n"
        "        known = [\n" + "".join(f"            '.c{k}',\n" for k in range(66)) + "        ]\n"
        "        return command in known\n"
        "\n\n"
        "class Shell:\n"
        "    def run(self):\n"
        "        modes = {'a': 1, 'b': 2, 'c': 3}\n"
        "        return modes\n"
    )
    counted = tally.tally("utils.py", lines_of(source))
    assert (
        "known = a list of 66 items (line 4, in is_dot_command): '.c0', '.c1', '.c2', '.c3', …, '.c65'"
        in counted
    )
    assert "modes = a dict of 3 keys (line 77, in run): 'a', 'b', 'c'" in counted
    assert not any(line.startswith("pair") for line in counted)  # a function's pair is no collection to count
    # Asked of the function, its list comes right after the file's own counts.
    asked = tally.tally("utils.py", lines_of(source), ["is_dot_command"])
    assert asked[3].startswith("known = a list of 66 items")


def test_long_lists_show_their_first_names_and_the_last() -> None:
    source = "ITEMS = [" + ", ".join(f"'n{k}'" for k in range(31)) + "]\n"
    (line,) = [x for x in tally.tally("m.py", [source]) if x.startswith("ITEMS")]
    assert line == "ITEMS = a list of 31 items (line 1): 'n0', 'n1', 'n2', 'n3', …, 'n30'"


def test_a_name_the_question_gives_comes_before_the_others_of_its_file() -> None:
    source = "".join(f"class C{k}:\n    def a(self): pass\n    def b(self): pass\n" for k in range(20))
    source += "WANTED = (1, 2, 3)\n"
    plain = tally.tally("m.py", lines_of(source))
    assert len(plain) == tally.MAX_LINES
    assert not any(line.startswith("WANTED") for line in plain[:3])
    asked = tally.tally("m.py", lines_of(source), ["wanted"])
    assert asked[3].startswith("WANTED = a tuple of 3 items")
    asked = tally.tally("m.py", lines_of(source), ["C17"])
    assert asked[3].startswith("methods of class C17: 2")


def test_a_notebook_counts_its_cells_and_a_cell_cannot_add_one(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# Title"},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 1,
            "outputs": [],
            "source": "x = 1\n# cell 3 [code]\n# cell 3 [code] (ran as [9])",
        },
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": "y = 2"},
    ]
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    counted = tally.tally("n.ipynb", notebook_lines(path, "n.ipynb"))
    assert counted[1:4] == ["code cells: 2", "markdown cells: 1", "cells in all: 3"]
    assert "code cells that ran (have an execution count): 1" in counted


def test_markdown_headings_by_level_outside_fences() -> None:
    text = "# Top\n\n## One\n\n```\n## not a heading\n```\n\n## Two ##\n### Deep\n"
    assert tally.tally("README.md", lines_of(text))[1:] == [
        "level-1 headings (#): 1 (Top)",
        "level-2 headings (##): 2 (One, Two)",
        "level-3 headings (###): 1 (Deep)",
    ]


def test_rst_section_titles_by_their_adornment() -> None:
    text = "=========\nChangelog\n=========\n\nlib 1.1 (2024)\n==============\n\n"
    text += "Features\n--------\n\nlib 1.0\n=======\n\nnot a title\n===\n"
    assert tally.tally("CHANGELOG.rst", lines_of(text))[1:] == [
        "section titles over- and underlined with '=': 1 (Changelog)",  # a style of its own: the title
        # Every title names a version: a changelog's releases, which a "how many releases" asks for.
        "section titles underlined with '=', each naming a version (a release): 2 (lib 1.1 (2024), lib 1.0)",
        "section titles underlined with '-': 1 (Features)",
    ]
    # Not when one of them names none, nor for a single title; Markdown's headings alike.
    text = "# Changes\n\n## 2.0.1\n\n## v1.9\n\n## Unreleased\n\n### Fixed\n"
    assert tally.tally("CHANGES.md", lines_of(text))[1:] == [
        "level-1 headings (#): 1 (Changes)",
        "level-2 headings (##): 3 (2.0.1, v1.9, Unreleased)",
        "level-3 headings (###): 1 (Fixed)",
    ]
    text = "## 2.0.1\n\n## v1.9\n"
    assert tally.tally("CHANGES.md", lines_of(text))[1:] == [
        "level-2 headings (##), each naming a version (a release): 2 (2.0.1, v1.9)"
    ]


def test_ini_sections_and_their_settings() -> None:
    text = "[main]\n# a comment\nhost = x\nport: 1\nlist =\n    one\n    two\n; off = 1\n\n"
    text += "[colors]\nred = 1\n"
    assert tally.tally("app/settingsrc", lines_of(text))[1:] == [
        "sections: 2 (main, colors)",
        "settings in [main]: 3 (host, port, list)",
        "settings in [colors]: 1 (red)",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "def broken(:\n    pass\n",  # a file mid-edit
        "x = " + "(" * 5000 + ")" * 5000 + "\n",  # nested past the parser's depth
        "\x00\x01 binary-ish \ufffd\n",
        "[" * 3000 + "\n",
    ],
)
def test_hostile_python_gives_the_line_count_and_no_error(text: str) -> None:
    counted = tally.tally("bad.py", lines_of(text))
    assert counted[0].startswith("lines: ")


def test_names_are_one_short_line_however_they_are_written() -> None:
    source = "X = ['line one\\nline two <script>alert(1)</script> " + "y" * 200 + "']\n"
    (line,) = [x for x in tally.tally("m.py", [source]) if x.startswith("X = ")]
    assert "\n" not in line
    assert len(line) < 120


def test_a_huge_file_is_counted_by_its_lines_only() -> None:
    lines = ["def f(): pass"] * (tally.TALLY_CHARS // 10)
    assert tally.tally("big.py", lines) == [f"lines: {len(lines)} ({len(lines)} not blank)"]


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("How many test functions does tests/test_x.py define?", True),
        ("What is the number of code cells in n.ipynb?", True),
        ("Count the classes in lib.py", True),
        ("Where is connect defined?", False),
        ("What does the counter module do?", False),
    ],
)
def test_which_questions_ask_for_a_count(question: str, asks: bool) -> None:
    assert tally.asks_count(question) is asks


def workspace(root: Path) -> Path:
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text(TESTS)
    (root / "pkg").mkdir()
    (root / "pkg" / "lib.py").write_text(LIBRARY + 'TOKENS = ["sk-live-0123456789abcdefghijklmnopqrstuv"]\n')
    (root / ".env").write_text("A=1\nB=2\n")
    return root


def test_a_count_question_naming_a_file_gets_its_counts_before_the_evidence(tmp_path: Path) -> None:
    ws = Workspace(workspace(tmp_path))
    text = ws.head_start("How many test functions does tests/test_x.py define?", 6000)
    lead = "Counted by the loop over the whole file"
    assert lead in text
    assert text.index(lead) < text.index("Found by the loop before your first step")
    counts = text[text.index(lead) : text.index("Found by the loop before your first step")]
    # What is counted comes first; the file's lines, not asked for, last.
    assert "tests/test_x.py:\n- top-level functions named test*: 3 (test_one, test_two, test_three)" in counts
    assert "- lines: " in counts
    lines = ws.head_start("How many lines does tests/test_x.py have?", 6000)
    assert "tests/test_x.py:\n- lines: " in lines
    assert "pkg/lib.py" not in counts


def test_no_counts_for_other_questions_or_files_not_named(tmp_path: Path) -> None:
    ws = Workspace(workspace(tmp_path))
    assert "Counted by the loop" not in ws.head_start("Where is test_two defined in tests/test_x.py?", 6000)
    assert "Counted by the loop" not in ws.head_start("How many test functions are there?", 6000)
    assert "Counted by the loop" not in ws.head_start("How many classes are there?", 6000, evidence=False)


def test_counts_keep_secrets_masked_and_hidden_files_uncounted(tmp_path: Path) -> None:
    ws = Workspace(workspace(tmp_path))
    text = ws.head_start("How many items does TOKENS list in pkg/lib.py?", 6000)
    assert "TOKENS = a list of 1 items" in text
    assert "sk-live-0123456789abcdefghijklmnopqrstuv" not in text
    text = ws.head_start("How many settings does .env have?", 6000)
    assert "Counted by the loop" not in text
    assert "A=1" not in text


def test_counts_stay_within_their_share_of_the_head_start(tmp_path: Path) -> None:
    source = "".join(f"class C{k}:\n    def a(self): pass\n" for k in range(30))
    (tmp_path / "many.py").write_text(source)
    ws = Workspace(tmp_path)
    for chars in (800, 2000, 6000):
        text = ws.head_start("How many classes does many.py define?", chars)
        counts = text[text.index("Counted by the loop") :] if "Counted by the loop" in text else ""
        counts = counts.split("\nFound by the loop", 1)[0]  # the block comes before the evidence
        assert len(counts) <= chars * TALLY_SHARE
        assert len(text) <= chars


def test_the_model_sees_the_counts_in_its_first_request(tmp_path: Path) -> None:
    server = ScriptedServer(["There are 3 test functions."], window=4096)
    reply = Agent(server=server, workspace=workspace(tmp_path)).run(
        "How many test functions does tests/test_x.py define?"
    )
    assert reply.text == "There are 3 test functions."
    sent = json.dumps(server.requests[0].messages)
    assert "top-level functions named test*: 3 (test_one, test_two, test_three)" in sent


CONFIG_YAML = """\
# settings
---
extends: base

files:
  - '*.yaml'
  - .hidden

checks:
  first: enable
  second:
    level: warning
    max: 1
  third:
    min: 2
  notes: |
    looks: like a key
    but: is text
  fourth: disable
ignore:
- a
- b: 1
  c: 2
"""


def test_yaml_keys_mappings_and_lists_each_under_their_key() -> None:
    counted = tally.tally("conf/app.yaml", lines_of(CONFIG_YAML))
    assert counted[1:] == [
        "top-level keys: 4 (extends, files, checks, ignore)",
        "items in the list under files: 2",
        "keys under checks: 5 (first, second, third, notes, fourth)",  # not the text under notes: |
        "keys under checks.second: 2 (level, max)",
        "keys under checks.third: 1 (min)",
        "items in the list under ignore: 2",  # a list written at its key's indent; an item's keys are its own
    ]
    # Asked of one key, its count comes right after the file's own.
    asked = tally.tally("conf/app.yaml", lines_of(CONFIG_YAML), ["third"])
    assert asked[2] == "keys under checks.third: 1 (min)"


def test_a_file_without_a_yaml_suffix_is_counted_as_yaml_when_it_starts_as_yaml() -> None:
    assert "top-level keys: 4 (extends, files, checks, ignore)" in tally.tally(
        ".apprc", lines_of(CONFIG_YAML)
    )
    assert tally.tally("notes.txt", lines_of(CONFIG_YAML)) == [tally.tally("x.txt", lines_of(CONFIG_YAML))[0]]
    assert len(tally.tally("LICENSE", lines_of("MIT License\n\nCopyright: someone\n"))) == 1


@pytest.mark.parametrize(
    "text",
    [
        "a:\n" + "".join("  " * k + f"k{k}:\n" for k in range(1, 3000)),  # nested deeper than anyone writes
        '- - - -\n  - :\n:\n: :\n\'unclosed: x\n"a": [1, 2\n{b: c}\n',
        "key: |\n" + "  x: 1\n" * 1000 + "after: 2\n",
        "\x00: \x01\n\ufffd:\n",
    ],
)
def test_hostile_yaml_gives_counts_or_none_and_no_error(text: str) -> None:
    counted = tally.tally("bad.yaml", lines_of(text))
    assert counted[0].startswith("lines: ")
    assert all("\n" not in line and len(line) < 300 for line in counted)


def test_what_a_function_calls_often_is_counted_not_its_decorators() -> None:
    source = (
        "import argparse\n\n\n"
        "@option('-a')\n@option('-b')\n@option('-c')\n"
        "def run(argv=None):\n"
        "    parser = argparse.ArgumentParser()\n"
        + "".join(f"    parser.add_argument('--o{k}')\n" for k in range(7))
        + "    return parser.parse_args(argv)\n\n\n"
        "class Shell:\n"
        "    def register(self):\n" + "        self.add('x')\n" * 4 + "\n\n"
        "for name in 'abc':\n    register(name)\n    register(name)\n    register(name)\n"
    )
    counted = tally.tally("cli.py", lines_of(source))
    assert "calls to parser.add_argument() in run: 7" in counted
    assert "calls to self.add() in register: 4" in counted
    assert "calls to register() at the top level: 3" in counted
    assert not any("option()" in line for line in counted)  # decorators are counted as decorators


def test_calls_of_unnamed_functions_are_a_few_lines_and_a_named_ones_come_first() -> None:
    source = "".join(f"def test_{k}():\n" + "    run()\n" * (3 + k) for k in range(10))
    plain = tally.tally("tests/test_many.py", lines_of(source))
    assert [line for line in plain if line.startswith("calls to")] == [
        "calls to run() in test_7: 10",  # the three that call most, in the file's order
        "calls to run() in test_8: 11",
        "calls to run() in test_9: 12",
        # and the whole file's, since several functions call it
        "calls to run() in the whole file: 75 (test_0 3, test_1 4, test_2 5, test_3 6, …, test_9 12)",
    ]
    asked = tally.tally("tests/test_many.py", lines_of(source), ["test_2"])
    assert asked[2] == "calls to run() in test_2: 5"


def test_counts_that_say_the_questions_words_come_first_in_their_group() -> None:
    counted = tally.tally("tests/test_x.py", lines_of(TESTS), ["test", "functions", "define"])
    assert counted[1].startswith("top-level functions named test*: 3")
    counted = tally.tally("tests/test_x.py", lines_of(TESTS), ["classes"])
    assert counted[1].startswith("top-level classes: 1")
    assert tally.tally("tests/test_x.py", lines_of(TESTS))[1].startswith("top-level functions (def)")


def test_a_folder_the_question_names_gets_its_files_counted(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "pkg" / "rules").mkdir()
    for name in ("a.py", "b.py", "__init__.py", "notes.md"):
        (root / "pkg" / "rules" / name).write_text("x = 1\n")
    (root / "pkg" / "rules" / ".env").write_text("TOKEN=1\n")
    text = Workspace(root).head_start("How many Python modules are in pkg/rules?", 6000)
    counts = text[text.index("Counted by the loop") :]
    assert "pkg/rules/ (a folder):\n- files directly in it: 4 (3 .py, 1 .md)" in counts
    assert "- its .py files: 3 (__init__.py, a.py, b.py)" in counts
    assert ".env" not in counts  # what the tools may not read is not the workspace's to count
    text = Workspace(root).head_start("How many files are in the pkg folder?", 6000)
    assert "- subfolders: 1 (rules)" in text
    assert "- files in it and its subfolders: 5" in text  # lib.py and the four in rules
    assert "pkg/rules/ (a folder)" in Workspace(root).head_start("How many files does rules/ hold?", 6000)


def test_folder_names_are_one_short_line_however_they_are_written() -> None:
    paths = ["d/" + "x\u202e" * 100 + ".py", "d/<img src=x onerror=alert(1)>.py"]
    counted = tally.folder_counts("d", paths)
    assert all("\n" not in line and len(line) < 300 for line in counted)


def test_a_notebooks_cells_are_counted_for_what_they_assign_and_show(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# Log"},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 1,
            "outputs": [],
            "source": "%matplotlib inline\nLIMIT = 90\nlog = [('a', 1), ('b', 2), ('c', 3), ('d', 4)]",
        },
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 2,
            "outputs": [
                {"output_type": "execute_result", "data": {"text/plain": "['a', 'b', 'c']"}, "metadata": {}}
            ],
            "source": "[name for name, _ in log if _ < 4]",
        },
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 3,
            "outputs": [
                {"output_type": "execute_result", "data": {"text/plain": "__import__('os').system('x')"}},
            ],
            "source": "def broken(:",
        },
    ]
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    lines = notebook_lines(path, "n.ipynb")
    assert not any("output" in line for line in tally.tally("n.ipynb", lines, (), "How many cells ran?"))
    counted = tally.tally("n.ipynb", lines, (), "How many names does the notebook find?")
    assert "cell 3's output: a list of 3 items: 'a', 'b', 'c'" in counted
    assert "log = a list of 4 items (cell 2): tuple, tuple, tuple, tuple" in counted
    # An output is read as a literal, never run; a cell that does not parse gives nothing.
    assert not any("cell 4" in line for line in counted)


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("Above how many seconds does the notebook put a query on the slow list?", False),
        ("How many bytes does the buffer hold at most?", False),
        ("How many times does run call echo?", True),
        ("How many rules are there, and how many seconds does each take?", True),
        ("What default number of classes (the constant K) does classifiers.py set?", False),  # a setting
        ("What is the maximum number of retries?", False),
        ("What is the number of classes in classifiers.py?", True),
    ],
)
def test_a_question_for_a_measure_is_no_count(question: str, asks: bool) -> None:
    assert tally.asks_count(question) is asks


def test_a_decorator_the_question_writes_comes_before_what_the_function_calls() -> None:
    source = (
        "import click\n\n\n@click.command()\n"
        + "".join(f"@click.option('--o{k}')\n" for k in range(6))
        + "def main(**kw):\n"
        + "    click.echo('a')\n" * 4
    )
    counted = tally.tally("cli.py", lines_of(source), ["option", "decorators", "main"])
    decorated = counted.index("functions decorated @click.option: 6 (main, main, main, main, …, main)")
    assert decorated < counted.index("calls to click.echo() in main: 4")


def test_raises_calls_on_any_object_and_the_whole_files_calls_are_counted() -> None:
    source = (
        "import argparse\n\n\nclass ConfigError(Exception):\n    pass\n\n\n"
        "def parse(conf):\n"
        + "".join(f"    if conf == {k}:\n        raise ConfigError('bad {k}')\n" for k in range(4))
        + "    raise ConfigError\n\n\n"
        "def validate(conf):\n    if not conf:\n        raise ConfigError('empty')\n"
        "    raise ValueError('once')\n\n\n"
        "def run(argv=None):\n"
        "    parser = argparse.ArgumentParser()\n    group = parser.add_mutually_exclusive_group()\n"
        "    group.add_argument('-a')\n    group.add_argument('-b')\n"
        "    parser.add_argument('files')\n    parser.add_argument('-c')\n    parser.add_argument('-d')\n"
        "    return parser.parse_args(argv)\n"
    )
    counted = tally.tally("pkg/config.py", lines_of(source))
    assert "raise statements of ConfigError in the file: 6" in counted
    assert not any(line.startswith("raise statements of ValueError") for line in counted)  # once: no count
    assert "calls to ConfigError() in the whole file: 5 (parse 4, validate 1)" in counted
    assert "calls to .add_argument() on any object in run: 5 (group 2, parser 3)" in counted
    # "How many times is ConfigError raised": that count before the others of its group.
    asked = tally.tally(
        "pkg/config.py", lines_of(source), ["configerror"], "How many times is ConfigError raised?"
    )
    assert asked.index("raise statements of ConfigError in the file: 6") < asked.index(
        "calls to .add_argument() on any object in run: 5 (group 2, parser 3)"
    )


def test_yaml_keys_that_share_a_value_are_counted_by_value() -> None:
    text = "rules:\n  a: enable\n  b: disable\n  c:\n    level: warning\n"
    text += "  d: disable  # off\n  e: enable\n  f: x\n"
    counted = tally.tally("conf/default.yaml", lines_of(text), (), "How many rules does it disable?")
    assert "keys under rules set to disable: 2 (b, d)" in counted
    assert "keys under rules set to enable: 2 (a, e)" in counted
    assert not any("set to x" in line for line in counted)  # a value once is no group
    assert counted.index("keys under rules set to disable: 2 (b, d)") < counted.index(
        "keys under rules set to enable: 2 (a, e)"
    )
