"""Values that are not values, and tools that redirect: measured on tables of real calls.

Small coder models (0.5B–1.5B) copy what they read into a call: a parameter's description became a new
file's name and its content, ``path/to/your/file.txt`` was read, a number in a description became
``start_line``. `BAD` holds such calls (those seen, and the placeholders and sentences small models
write); each must be refused before its tool runs — nothing reaches the disk under ``edits=apply`` —
with one line and one call to copy. `GOOD` holds 115 realistic calls (paths with spaces that exist,
``README``, ``Makefile``, notebooks, regexes made of the same words as the descriptions); none may be
refused. `REDIRECTS` holds the calls that found nothing where the answer was elsewhere (a class name
asked of file names, a pattern in the wrong case, a read past the end); each must say where, with a call.

Measured on the code before these checks (the same tables, each description copied as the model was
shown it then), of the 52 bad calls 28 were errors, every one a plain "does not exist" (or "outside the
workspace", "find was not found") that named neither the description nor the placeholder, and 24 ran:
12 junk files and 1 junk edit written under edits=apply, 3 junk commands run, 8 searches for nothing;
0 of the 11 redirects said where to look. Now 52 of 52 are refused with one line and a call, 0 of the
115 good calls are refused (0 before too), and 11 of 11 redirects say where to look, with a call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from twinny_magics.conversation import ToolCall
from twinny_magics.protocol import format_call, parse_reply, text_mode_system_prompt
from twinny_magics.protocol.grammar import tool_call_grammar
from twinny_magics.tools import ToolLimits, ToolOutput, Workspace

# --- the workspaces -------------------------------------------------------------------------------

NOTEBOOK = json.dumps(
    {
        "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "source": "import pandas as pd\n",
                   "outputs": [], "execution_count": None}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
)  # fmt: skip

# A project with the names small models treat as placeholders (file.txt, example.py, docs/path/to/),
# paths with spaces, files without an extension, notebooks: all real, so all must be usable.
PROJECT = {
    "README.md": "# Project\nRun it with make.\n",
    "README": "Plain readme.\n",
    "Makefile": "test:\n\tpytest -q\n",
    "Dockerfile": "FROM python:3.12\n",
    "LICENSE": "MIT License\n",
    "setup.py": "from setuptools import setup\nsetup()\n",
    "pyproject.toml": '[project]\nname = "demo"\n',
    "requirements.txt": "httpx\n",
    ".github/workflows/ci.yml": "on: push\n",
    "src/app.py": "import os\n\nDEBUG = False\nPORT = 8080\n\n\ndef main():\n    # TODO: read the port\n"
    "    return os.getcwd()\n\n\nif __name__ == '__main__':\n    main()\n",
    "src/pkg/__init__.py": "",
    "src/pkg/util.py": "class ConfigError(Exception):\n    pass\n\n\ndef helper(path, pattern):\n"
    "    return f'https://example.org/{path}'\n",
    "src/server.js": "const http = require('http');\nhttp.createServer(() => {}).listen(3000);\n",
    "src/stubs.py": "class Reader:\n    def read(self) -> str: ...\n",
    "tests/test_app.py": "from src.app import main\n\n\ndef test_main():\n    assert main()\n",
    "docs/guide.md": "# Guide\nA file, relative to the workspace root, is what a path names.\n",
    "docs/Getting Started.md": "# Getting started\n",
    "docs/path/to/guide.md": "A real folder named path/to.\n",
    "My Documents/report final.txt": "Quarterly report.\n",
    "data/raw data.csv": "a,b\n1,2\n",
    "notebooks/analysis.ipynb": NOTEBOOK,
    "notebooks/EDA v2.ipynb": NOTEBOOK,
    "notes/meeting notes.md": "Error: none.\n",
    "config/settings.yaml": "port: 8080\n",
    "templates/form.html": "<div>\n<label>Your name</label>\n<name>x</name><string>y</string>\n</div>\n",
    "lib/path.py": "def join(a, b):\n    return a + '/' + b\n",
    "file.txt": "a real file.txt\n",
    "example.py": "print('a real example.py')\n",
}

# A small project where the placeholder names do not exist (nor the descriptions' example src/app.py).
BARE = {
    "README.md": "# Shop\n",
    "server/main.py": "class ConfigLoader:\n    pass\n\n\ndef createServer(port):\n    return port\n",
    "server/routes.py": "from server.main import ConfigLoader\n"
    + "".join(f"# line {n}\n" for n in range(2, 41)),
    "docs/usage.md": "Start the ConfigLoader first.\n",
    "long.log": "".join(f"entry {n}\n" for n in range(1, 401)),
}


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make(tmp_path / "project", PROJECT)


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    return make(tmp_path / "bare", BARE)


# --- the tables -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Described:
    """A copy of what the model was shown for one parameter: ``whole`` (the description as it is),
    ``label`` (the part before the example, or the first clause) or ``start`` (its first three words)."""

    tool: str
    param: str
    how: str = "label"

    def text(self, definitions: list[dict[str, Any]]) -> str:
        function = next(d["function"] for d in definitions if d["function"]["name"] == self.tool)
        said: str = function["parameters"]["properties"][self.param]["description"]
        if self.how == "whole":
            return said
        label = re.split(r",? e\.g\.|, |\. ", said, maxsplit=1)[0].rstrip(".")
        return label if self.how == "label" else " ".join(said.split()[:3])


def arguments_of(arguments: dict[str, Any], definitions: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: v.text(definitions) if isinstance(v, Described) else v for k, v in arguments.items()}


# What small models sent instead of a value; run on BARE under edits=apply.
BAD: list[tuple[str, dict[str, Any]]] = [
    # Seen: the descriptions of the time copied in, and a placeholder path.
    (
        "create_file",
        {"path": "New file, relative to the workspace root.", "content": "The whole text of the file."},
    ),
    ("read_file", {"path": "File, relative to the workspace root."}),
    ("read_file", {"path": "path/to/your/file.txt"}),
    # A copy of each description the model is shown now.
    ("list_dir", {"path": Described("list_dir", "path", "whole")}),
    ("list_dir", {"path": Described("list_dir", "path")}),
    ("find_files", {"pattern": Described("find_files", "pattern", "whole")}),
    ("find_files", {"pattern": Described("find_files", "pattern")}),
    ("read_file", {"path": Described("read_file", "path", "whole")}),
    ("read_file", {"path": Described("read_file", "path")}),
    ("read_file", {"path": Described("read_file", "path", "start")}),
    ("grep", {"pattern": Described("grep", "pattern", "whole")}),
    ("grep", {"pattern": Described("grep", "pattern")}),
    ("grep", {"pattern": "ConfigLoader", "path": Described("grep", "path")}),
    ("edit_file", {"path": Described("edit_file", "path"), "find": "pass", "replace": "return None"}),
    ("edit_file", {"path": "server/main.py", "find": Described("edit_file", "find"), "replace": "x"}),
    ("edit_file", {"path": "server/main.py", "find": "pass", "replace": Described("edit_file", "replace")}),
    ("create_file", {"path": Described("create_file", "path"), "content": "# Notes\n"}),
    ("create_file", {"path": Described("create_file", "path", "whole"), "content": "# Notes\n"}),
    ("create_file", {"path": "notes/todo.md", "content": Described("create_file", "content")}),
    ("create_file", {"path": "notes/todo.md", "content": Described("create_file", "content", "whole")}),
    ("run_command", {"command": Described("run_command", "command")}),
    ("run_command", {"command": Described("run_command", "command", "whole")}),
    # Placeholder paths.
    ("read_file", {"path": "path/to/file.py"}),
    ("read_file", {"path": "/path/to/file.py"}),
    ("read_file", {"path": "your_file.py"}),
    ("read_file", {"path": "example.py"}),
    ("read_file", {"path": "file.txt"}),
    ("read_file", {"path": "<path>"}),
    ("read_file", {"path": "..."}),
    ("read_file", {"path": "{file_path}"}),
    ("read_file", {"path": "FILE_PATH"}),
    ("read_file", {"path": "filename.ext"}),
    ("read_file", {"path": "src/.../app.py"}),
    ("read_file", {"path": "path_to_file.py"}),
    ("read_file", {"path": "folder/file.py"}),
    ("read_file", {"path": "src/app.py"}),  # the description's example, where there is none
    ("list_dir", {"path": "path/to/dir"}),
    ("list_dir", {"path": "your_folder"}),
    ("grep", {"pattern": "<pattern>"}),
    ("grep", {"pattern": "your_regex"}),
    ("grep", {"pattern": "ConfigLoader", "path": "path/to/src"}),
    ("find_files", {"pattern": "path/to/*.py"}),
    ("find_files", {"pattern": "<pattern>"}),
    ("edit_file", {"path": "path/to/file.py", "find": "pass", "replace": "return None"}),
    ("run_command", {"command": "<command>"}),
    # A sentence or a placeholder for a new file's name, and content to fill in.
    ("create_file", {"path": "path/to/new_file.py", "content": "x = 1\n"}),
    ("create_file", {"path": "your_script.py", "content": "print('hi')\n"}),
    ("create_file", {"path": "<filename>", "content": "print('hi')\n"}),
    ("create_file", {"path": "A Python script that prints hello", "content": "print('hello')\n"}),
    ("create_file", {"path": "hello world program", "content": "print('hello world')\n"}),
    ("create_file", {"path": "Creates a helper module.", "content": "def helper():\n    pass\n"}),
    ("create_file", {"path": "notes/todo.md", "content": "..."}),
]

# Realistic calls that must run: on PROJECT, edits=review (nothing written), commands=ask with nobody to
# ask (a command comes back "not run: needs approval", never refused as a value).
GOOD: list[tuple[str, dict[str, Any]]] = [
    *[("list_dir", {"path": p}) for p in (".", "src", "src/", "./src", "docs", "My Documents", "notebooks",
                                         "docs/path/to", ".github", "data")],
    ("list_dir", {}),
    *[
        ("read_file", {"path": p})
        for p in (
            "README.md", "README", "Makefile", "Dockerfile", "LICENSE", "setup.py", "pyproject.toml",
            "requirements.txt", ".github/workflows/ci.yml", "src/app.py", "./src/app.py", "src/pkg/util.py",
            "src/pkg/__init__.py", "src/server.js", "tests/test_app.py", "docs/guide.md",
            "docs/Getting Started.md", "docs/path/to/guide.md", "My Documents/report final.txt",
            "data/raw data.csv", "notebooks/analysis.ipynb", "notebooks/EDA v2.ipynb",
            "notes/meeting notes.md", "config/settings.yaml", "templates/form.html", "lib/path.py",
            "file.txt", "example.py",
        )
    ],
    ("read_file", {"path": "src/app.py", "start_line": 3, "end_line": 4}),
    *[
        ("find_files", {"pattern": p})
        for p in (
            "**/*.py", "*.md", "config", "test_*", "*.ipynb", "Makefile", "README", "src/**/*.py", "setup",
            "util", "*.yaml", "Getting Started", "report final", "file", "path", "example", "EDA v2",
        )
    ],
    *[
        ("grep", {"pattern": p})
        for p in (
            "def main", "(?i)todo", r"class \w+", "import os", "TODO", "createServer", r"PORT\s*=\s*\d+",
            "__name__", "https?://", "if __name__", "[Ee]rror", "pattern", "path", "file", "your", "...",
            "<div>", "<name>", "<string>", "Your name", "DEBUG = False", "relative to the workspace root",
            "A file, relative to", "read-only", "Read only", "shell command", "regular expression",
            "a text file", "List the files",
        )
    ],
    ("grep", {"pattern": "def", "path": "src"}),
    ("grep", {"pattern": "report", "path": "My Documents"}),
    ("grep", {"pattern": "started", "path": "docs/Getting Started.md"}),
    ("grep", {"pattern": "pandas", "path": "notebooks"}),
    ("grep", {"pattern": "real", "path": "docs/path/to"}),
    ("edit_file", {"path": "src/app.py", "find": "DEBUG = False", "replace": "DEBUG = True"}),
    ("edit_file", {"path": "src/stubs.py", "find": "...", "replace": "return 'text'"}),
    ("edit_file", {"path": "notes/meeting notes.md", "find": "Error: none.", "replace": "..."}),
    ("edit_file", {"path": "My Documents/report final.txt", "find": "Quarterly", "replace": "Yearly"}),
    ("edit_file", {"path": "My Documents/report final.txt", "find": "Quarterly", "replace": "Read-only"}),
    ("edit_file", {"path": "src/app.py", "find": "DEBUG = False", "replace": "Shell command"}),
    *[
        ("create_file", {"path": p, "content": c})
        for p, c in (
            ("notes/todo.md", "# To do\n"),
            ("src/new_module.py", "def add(a, b):\n    return a + b\n"),
            ("docs/Release notes.md", "Release notes.\n"),
            ("scripts/run.sh", "#!/bin/sh\nmake test\n"),
            ("CHANGELOG", "Hello, world.\n"),
            ("tests/test_new.py", "def test_it():\n    assert True\n"),
            ("data/output v2.csv", "a,b\n"),
            ("examples/example.py", "print('example')\n"),
            ("out/file.txt", "The new text.\n"),
            ("Dockerfile.dev", "FROM python:3.12\n"),
            ("docs/status.md", "Read-only\n"),
            ("hello.py", "print('hello')\n"),
        )
    ],
    *[
        ("run_command", {"command": c})
        for c in (
            "python -m pytest -q", "ls -la", "git status", "make test", "python example.py", "echo done",
        )
    ],
]  # fmt: skip

# Calls that found nothing where the answer is elsewhere, run on BARE; each answer must say so.
REDIRECTS: list[tuple[str, dict[str, Any], str]] = [
    ("find_files", {"pattern": ".*ConfigLoader.*"}, "these files contain 'ConfigLoader': docs/usage.md"),
    ("find_files", {"pattern": "ConfigLoader"}, "these files contain it: docs/usage.md, server/main.py"),
    ("find_files", {"pattern": "*ConfigLoader*"}, "server/routes.py — use grep"),
    ("find_files", {"pattern": "**/*createServer*.py"}, "these files contain 'createServer': server/main.py"),
    ("find_files", {"pattern": "configloader"}, '{"pattern": "(?i)configloader"}'),
    ("grep", {"pattern": "configloader"}, "'(?i)configloader' would give 3 matching lines in 3 files"),
    ("grep", {"pattern": "createserver"}, "'(?i)createserver' would give 1 matching line in 1 file"),
    ("grep", {"pattern": r"def createServer\(host, port\)"}, "the shorter 'createServer' would give"),
    ("grep", {"pattern": "CONFIGLOADER", "path": "docs"}, '"path": "docs"'),
    ("read_file", {"path": "server/routes.py", "start_line": 150}, "server/routes.py has 40 lines"),
    ("read_file", {"path": "long.log", "start_line": 500}, '{"path": "long.log", "start_line": 251}'),
]


async def run(ws: Workspace, name: str, arguments: dict[str, Any]) -> ToolOutput:
    return await ws.run(ToolCall(name, arguments_of(arguments, ws.definitions())))


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for a folder)."""
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes() for p in root.rglob("*")}


def copyable_call(text: str) -> dict[str, Any] | None:
    """The call a one-line message ends with, as the text protocol would read it back; None if none."""
    start = text.find('{"name": ')
    if start < 0:
        return None
    call: dict[str, Any] = json.loads(text[start:])
    return call


# --- refused --------------------------------------------------------------------------------------


async def test_every_bad_call_is_refused_with_one_line_and_a_call(bare: Path) -> None:
    """Each bad call is an error of one line that names what is wrong and ends with a call to copy, and
    nothing is written, even under edits=apply."""
    before = snapshot(bare)
    ws = Workspace(bare, edits="apply", commands="allow")
    refused = []
    for name, arguments in BAD:
        out = await run(ws, name, arguments)
        assert out.is_error, (name, arguments, out.text)
        assert "\n" not in out.text, out.text
        assert re.search(
            r"is (copied from the tool's description|a placeholder|a sentence|the example)", out.text
        )
        call = copyable_call(out.text)
        assert call is not None, out.text
        refused.append((name, call))
    assert len(refused) == len(BAD) == 52
    assert snapshot(bare) == before


async def test_the_call_to_copy_runs_or_asks_for_the_missing_text(bare: Path) -> None:
    """Copied back as the text protocol reads it, the offered call runs, unless it holds the ``...`` the
    model must fill in (which is refused again as it stands)."""
    ws = Workspace(bare, edits="review", commands="off")
    definitions = ws.definitions()
    for name, arguments in BAD:
        if name == "run_command":
            continue
        call = copyable_call((await run(ws, name, arguments)).text)
        assert call is not None
        parsed = parse_reply(format_call(ToolCall(call["name"], call["arguments"])), definitions)
        assert [(c.name, c.arguments) for c in parsed.calls] == [(call["name"], call["arguments"])]
        again = await ws.run(parsed.calls[0])
        if "..." in call["arguments"].values():
            assert again.is_error
            assert "is a placeholder" in again.text
        else:
            assert not again.is_error, (name, arguments, call, again.text)


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        (
            "read_file",
            {"path": "File to read"},
            "read_file: path 'File to read' is copied from the tool's description. Real files here: "
            'README.md, long.log, docs/usage.md: {"name": "read_file", "arguments": {"path": "README.md"}}',
        ),
        (
            "read_file",
            {"path": "path/to/main.py"},
            "read_file: path 'path/to/main.py' is a placeholder, not a real file. Real files here: "
            "server/main.py, server/routes.py, README.md: "
            '{"name": "read_file", "arguments": {"path": "server/main.py"}}',
        ),
        (
            "read_file",
            {"path": "example.py"},
            "read_file: path 'example.py' is a placeholder, not a real file. Real files here: "
            "server/main.py, server/routes.py, README.md: "
            '{"name": "read_file", "arguments": {"path": "server/main.py"}}',
        ),
        (
            "list_dir",
            {"path": "Folder to list"},
            "list_dir: path 'Folder to list' is copied from the tool's description. Real folders here: "
            'docs/, server/: {"name": "list_dir", "arguments": {}}',
        ),
        (
            "create_file",
            {"path": "New file, relative to the workspace root.", "content": "print('hi')\n"},
            "create_file: path 'New file, relative to the workspace root.' is a sentence, not a file name. "
            "Give a short path with an extension, like notes/todo.md: "
            '{"name": "create_file", "arguments": {"path": "notes/todo.md", "content": "print(\'hi\')\\n"}}',
        ),
        (
            "edit_file",
            {"path": "server/main.py", "find": "pass", "replace": "Text to put in its place"},
            "edit_file: replace 'Text to put in its place' is copied from the tool's description. Write "
            "the new text itself; this shows the file: "
            '{"name": "read_file", "arguments": {"path": "server/main.py"}}',
        ),
        (
            "grep",
            {"pattern": "Regex to search for"},
            "grep: pattern 'Regex to search for' is copied from the tool's description. Search for a word "
            'from the question, like def main: {"name": "grep", "arguments": {"pattern": "def main"}}',
        ),
    ],
)
async def test_a_refusal_names_the_value_why_and_the_nearest_real_names(
    bare: Path, name: str, arguments: dict[str, Any], message: str
) -> None:
    """The nearest real names come first (same extension, then shallow), and the call uses the nearest;
    a sentence for a new file gets the example path; a text to write gets the read that shows the file."""
    out = await Workspace(bare).run(ToolCall(name, arguments))
    assert out.text == message


async def test_no_good_call_is_refused(project: Path) -> None:
    """Real paths (with spaces, without extensions, named like placeholders), globs, regexes made of
    the descriptions' words, edits and new files all run; a command only waits for approval."""
    ws = Workspace(project, edits="review", commands="ask")
    assert len(GOOD) == 115
    failed = []
    for name, arguments in GOOD:
        out = await run(ws, name, arguments)
        ok = (
            out.text.startswith("run_command was not run: commands need approval")
            if name == "run_command"
            else (not out.is_error)
        )
        if not ok:
            failed.append((name, arguments, out.text))
    assert failed == []


async def test_a_real_path_is_never_refused_even_when_it_reads_like_a_placeholder(tmp_path: Path) -> None:
    """A file really called path/to/your_file.py, <draft>.md or FILE_PATH is read like any other."""
    names = ["path/to/your_file.py", "<draft>.md", "FILE_PATH", "New file, relative to the workspace root."]
    make(tmp_path, dict.fromkeys(names, "text\n"))
    ws = Workspace(tmp_path)
    for name in names:
        out = await ws.run(ToolCall("read_file", {"path": name}))
        assert not out.is_error, out.text


async def test_tuned_descriptions_are_what_the_model_reads_and_what_is_checked(tmp_path: Path) -> None:
    """A tool_descriptions= text replaces the tool's description in the definitions, the call grammar and
    the text-mode tool list, and a copy of it is refused like a copy of the shipped one."""
    hint = (
        "Find the lines of the workspace's files that contain a word, e.g. listen; answers file:line: text."
    )
    make(tmp_path, {"app.py": "app.listen(8080)\n"})
    ws = Workspace(tmp_path, descriptions={"grep": hint})
    definitions = ws.definitions()
    grep = next(d["function"] for d in definitions if d["function"]["name"] == "grep")
    assert grep["description"] == hint
    assert "call-grep" in tool_call_grammar(definitions, require_call=True)
    prompt = text_mode_system_prompt("Answer briefly.", definitions)
    assert f"- grep {{pattern, path?}}: {hint}" in prompt
    assert "- read_file {path, start_line?, end_line?}: Read a text file" in prompt
    copied = await ws.run(ToolCall("grep", {"pattern": "Find the lines of the workspace's files"}))
    assert copied.is_error
    assert "copied from the tool's description" in copied.text
    assert (await ws.run(ToolCall("grep", {"pattern": "listen"}))).text == "app.py:1: app.listen(8080)"


def test_descriptions_are_short_labels_with_one_example_and_no_number(tmp_path: Path) -> None:
    """Every string parameter is described as a label and one example of the value (the one its error
    messages show), the integers without any; no description holds a digit."""
    from twinny_magics.tools.registry import TOOLS

    for spec in TOOLS.values():
        assert len(spec.description) <= 200
        assert not re.search(r"\d", spec.description), spec.description
        for param in spec.params:
            assert len(param.description) <= 50, param.description
            assert not re.search(r"\d", param.description), param.description
            if param.type == "integer":
                assert "e.g." not in param.description
            else:
                label, example = param.description.split(", e.g. ")
                assert example == spec.example[param.name].rstrip("\n")
                assert not label.endswith(".")


# --- redirected -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "arguments", "said"), REDIRECTS)
async def test_a_call_that_found_nothing_says_where_to_look_with_a_call(
    bare: Path, name: str, arguments: dict[str, Any], said: str
) -> None:
    """find_files with a word that is in files' text names them and the grep; grep in the wrong case or
    with too long a pattern gives the wider one and how much it finds; a read past the end gives the
    file's length and the read of its end. One line each, ending with the call; find_files's is followed
    by the first lines that grep finds (a model that asked file names for a symbol sees where it is)."""
    out = await Workspace(bare).run(ToolCall(name, arguments))
    assert said in out.text
    hint, *found = out.text.split("\n")
    if name == "find_files":
        assert found[0] == "What that grep finds (the first lines):"
        assert found[1:]
        assert all(re.match(r"[\w/.]+:\d+: ", line) for line in found[1:]), found
    else:
        assert not found
    call = copyable_call(hint)
    assert call is not None
    again = await Workspace(bare).run(ToolCall(call["name"], call["arguments"]))
    assert not again.is_error
    assert not again.text.startswith(("No ", "[")), again.text


async def test_nothing_found_anywhere_is_still_a_plain_answer(bare: Path) -> None:
    """No name, no text and no wider pattern: the answers are the short ones they were."""
    ws = Workspace(bare)
    assert (await ws.run(ToolCall("find_files", {"pattern": "*.rs"}))).text == "No files match '*.rs'."
    assert (await ws.run(ToolCall("find_files", {"pattern": "zebra"}))).text == (
        "No files match 'zebra' (a glob like **/*name* also matches by part of the name)."
    )
    assert (
        await ws.run(ToolCall("grep", {"pattern": "zebra"}))
    ).text == "No matches for 'zebra' in the workspace."


async def test_the_hints_look_only_where_grep_may(tmp_path: Path) -> None:
    """A withheld or ignored file holding the word is never named or counted by a hint."""
    make(
        tmp_path,
        {
            ".env": "ConfigLoader=1\nconfigloader\n",
            ".gitignore": "build/\n",
            "build/gen.py": "ConfigLoader\n",
            "app.py": "configloader = None\n",
        },
    )
    ws = Workspace(tmp_path)
    found = await ws.run(ToolCall("find_files", {"pattern": "ConfigLoader"}))
    assert found.text.startswith("No file name matches 'ConfigLoader'; these files contain it: app.py —")
    grepped = await ws.run(ToolCall("grep", {"pattern": "ConfigLoader"}))
    assert "would give 1 matching line in 1 file" in grepped.text
    assert ".env" not in found.text + grepped.text
    assert "build" not in found.text + grepped.text


async def test_the_hints_keep_to_the_time_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no time left for a hint, grep answers without one rather than running on."""
    from twinny_magics.tools import grep

    make(tmp_path, {"a.txt": "Needle\n"})
    monkeypatch.setattr(grep, "HINT_SECONDS", 0.0)
    out = await Workspace(tmp_path).run(ToolCall("grep", {"pattern": "needle"}))
    assert out.text == "No matches for 'needle' in the workspace."


def test_a_read_past_the_end_of_a_short_file_reads_it_whole(tmp_path: Path) -> None:
    """The end of a file shorter than one read is the whole file: the call has no start_line."""
    from twinny_magics.tools import files
    from twinny_magics.tools.paths import Confinement

    make(tmp_path, {"a.txt": "one\ntwo\n"})
    with pytest.raises(
        Exception, match=r'a.txt has 2 lines; .* \{"name": "read_file", "arguments": \{"path": "a.txt"\}\}$'
    ):
        files.read_file(Confinement(tmp_path), ToolLimits(), "a.txt", 9, None)
