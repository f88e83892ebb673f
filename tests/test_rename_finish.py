"""A rename that is only half made goes back once: the edit says where the old name is still used, and an
answer given then, to a request for every use changed, is told to edit those lines (a 1.5B model renamed a
function's definition, read the note and answered that the rename was done)."""

from __future__ import annotations

from pathlib import Path

import pytest

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.servers.scripted import Scripted, ScriptedServer
from twinny_magics.tools.workspace import Workspace
from twinny_magics.unanswered import asks_every_use

SOURCE = "def head_tail(v):\n    return v\n\n\nx = head_tail([1])\n"
RENAME_DEF = ToolCall(
    "edit_file", {"path": "m.py", "find": "def head_tail(v):", "replace": "def _head_tail(v):"}
)
RENAME_USE = ToolCall(
    "edit_file", {"path": "m.py", "find": "x = head_tail([1])", "replace": "x = _head_tail([1])"}
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "m.py").write_text(SOURCE)
    return tmp_path


def run(workspace: Path, question: str, *replies: Scripted | str) -> tuple[Agent, ScriptedServer]:
    server = ScriptedServer(list(replies))
    agent = Agent(server=server, workspace=workspace, mode="native", edits="apply", steps=6)
    agent.run(question)
    return agent, server


def test_an_answer_with_the_old_name_still_used_goes_back_once_to_edit_those_lines(workspace: Path) -> None:
    agent, server = run(
        workspace,
        "In m.py, rename the function head_tail to _head_tail and update every call of it.",
        Scripted("", (RENAME_DEF,)),
        "The function has been renamed.",
        Scripted("", (RENAME_USE,)),
        "Renamed it and its call.",
    )
    reply = agent.replies[-1]
    assert reply.text == "Renamed it and its call."
    assert reply.steps[1].problems == [
        "answered with a rename half made: told where the old name is still used"
    ]
    told = server.requests[2].messages[-1]["content"]
    assert "head_tail is still on line 5 of this file" in told
    assert "edit each one with edit_file" in told
    assert (workspace / "m.py").read_text() == SOURCE.replace("head_tail", "_head_tail")


def test_a_second_half_made_answer_is_finished_by_the_loop_from_the_request(workspace: Path) -> None:
    """Told where the old name is still used, the model answered again without editing: the loop renames
    the use the request pins down (the edit nudge's fallback), through edit_file, and asks once more."""
    agent, server = run(
        workspace,
        "Rename head_tail to _head_tail in m.py.",
        Scripted("", (RENAME_DEF,)),
        "Done.",
        "Done, really.",
        "All renamed.",
    )
    assert agent.replies[-1].text == "All renamed."
    assert len(server.requests) == 4
    assert (workspace / "m.py").read_text() == SOURCE.replace("head_tail", "_head_tail")


def test_a_second_half_made_answer_is_the_answer_when_the_request_pins_no_edit(workspace: Path) -> None:
    # No file named: the request pins no line down, and the second answer stands.
    agent, server = run(
        workspace,
        "Rename head_tail to _head_tail everywhere.",
        Scripted("", (RENAME_DEF,)),
        "Done.",
        "Done, really.",
    )
    assert agent.replies[-1].text == "Done, really."
    assert len(server.requests) == 3


def test_a_change_that_asks_for_one_place_is_not_sent_back(workspace: Path) -> None:
    """Changing only the definition's name on purpose ("change the def line") is not a rename of every use."""
    agent, server = run(
        workspace,
        "In m.py, change the def line of head_tail to def _head_tail(v):",
        Scripted("", (RENAME_DEF,)),
        "Changed the def line.",
    )
    assert agent.replies[-1].text == "Changed the def line."
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("question", "every"),
    [
        ("Rename fold to reduce_fold in toolz/sandbox/parallel.py.", True),
        ("In a.py, change f to g and update all its calls.", True),
        ("Change each reference to PORT in app.py to PORT_NUMBER.", True),
        ("In setup.py, raise python_requires to 3.9.", False),
        ("In docs/index.rst, fix every typo.", False),
    ],
)
def test_what_asks_for_every_use_changed(question: str, every: bool) -> None:
    assert asks_every_use(question) is every


CONF = "[main]\nmulti_line = False\ndestructive_warning = True\n"
TWO = "In conf.ini, turn multi_line on (True) and destructive_warning off (False)."
FIRST = ToolCall(
    "edit_file", {"path": "conf.ini", "find": "multi_line = False", "replace": "multi_line = True"}
)
SECOND = ToolCall(
    "edit_file",
    {"path": "conf.ini", "find": "destructive_warning = True", "replace": "destructive_warning = False"},
)


def test_a_request_naming_two_settings_answered_with_one_changed_goes_back_once(workspace: Path) -> None:
    (workspace / "conf.ini").write_text(CONF)
    agent, server = run(workspace, TWO, Scripted("", (FIRST,)), "Done.", Scripted("", (SECOND,)), "Both set.")
    reply = agent.replies[-1]
    assert reply.text == "Both set."
    assert reply.steps[1].problems == ["answered with a named part of the request unchanged: told which"]
    told = server.requests[2].messages[-1]["content"]
    assert "the request also names destructive_warning, which none of your edits changed" in told
    assert (workspace / "conf.ini").read_text() == "[main]\nmulti_line = True\ndestructive_warning = False\n"
    # Once: a second such answer is the answer; all of them touched: none goes back.
    (workspace / "conf.ini").write_text(CONF)
    agent, server = run(workspace, TWO, Scripted("", (FIRST,)), "Done.", "Done, really.")
    assert agent.replies[-1].text == "Done, really."
    assert len(server.requests) == 3
    (workspace / "conf.ini").write_text(CONF)
    agent, server = run(workspace, TWO, Scripted("", (FIRST,)), Scripted("", (SECOND,)), "Both set.")
    assert agent.replies[-1].text == "Both set."
    assert len(server.requests) == 3


def test_a_request_naming_one_thing_or_no_edit_made_is_not_sent_back(workspace: Path) -> None:
    (workspace / "conf.ini").write_text(CONF)
    agent, server = run(workspace, "In conf.ini, turn multi_line on.", Scripted("", (FIRST,)), "Done.")
    assert agent.replies[-1].text == "Done."
    assert len(server.requests) == 2


async def test_a_renamed_functions_uses_in_other_files_are_named_with_the_first_call(tmp_path: Path) -> None:
    """A model renamed the test's call and stopped: the definition and the other module's call were left."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "vcs.py").write_text(
        "class Helper:\n    def identify_repo(url):\n        return url\n"
    )
    (tmp_path / "pkg" / "repo.py").write_text(
        "from pkg.vcs import identify_repo\n\n\ndef clone(url):\n    return identify_repo(url)\n"
    )
    (tmp_path / "tests" / "test_vcs.py").write_text(
        "from pkg import vcs\n\n\ndef test_it():\n    assert vcs.identify_repo('u') == 'u'\n"
    )
    (tmp_path / "README.md").write_text("# Notes\n\nThe identify_repo function finds the kind of a repo.\n")
    ws = Workspace(tmp_path, edits="apply")
    out = await ws.run(
        ToolCall(
            "edit_file",
            {
                "path": "tests/test_vcs.py",
                "find": "assert vcs.identify_repo('u') == 'u'",
                "replace": "assert vcs.detect_repo_type('u') == 'u'",
            },
        )
    )
    assert not out.is_error, out.text
    note = out.text.splitlines()[0]
    assert "identify_repo is also used in pkg/vcs.py (line 2), pkg/repo.py (lines 1, 5)" in note
    assert (
        'starting with pkg/vcs.py line 2: {"name": "edit_file", "arguments": {"path": "pkg/vcs.py", '
        '"find": "def identify_repo(url):", "replace": "def detect_repo_type(url):"}}'
    ) in note
    assert "README.md" not in note  # prose that names it is no use
    assert out.unfinished
    # A parameter renamed in one function: its word in other files is another thing.
    out = await ws.run(
        ToolCall(
            "edit_file", {"path": "pkg/repo.py", "find": "def clone(url):", "replace": "def clone(link):"}
        )
    )
    assert "also used" not in out.text
