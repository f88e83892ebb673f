"""Edits that finish: a reply to a request for a change that prints the changed code in a fence instead of
calling edit_file has the fence read as the edit it proposes, run through the same tool and approval; a
fence naming a path outside the workspace, a denied file, a huge fence, an abbreviated copy or a fence
that fits no file proposes nothing (the edit nudge goes back as before)."""

from __future__ import annotations

from pathlib import Path

import pytest

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.engine import fenced_edits
from twinny_magics.servers.scripted import Scripted, ScriptedServer

APP = (
    "import os\n"
    "\n"
    "PORT = 8080\n"
    "HOST = 'localhost'\n"
    "\n"
    "\n"
    "def serve(port=PORT):\n"
    '    """Serve the app on ``port``."""\n'
    "    print('serving on', port)\n"
    "    return port\n"
)
QUESTION = "In app.py, change the port to 9090."


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "app.py").write_text(APP)
    (root / "other.py").write_text("PORT = 1\n")
    (root / ".env").write_text("PORT = 8080\nHOST = 'localhost'\nAPI_KEY=sk-live-1234567890abcdef\n")
    (tmp_path / "outside.py").write_text(APP)
    return root


def fence(body: str, lang: str = "python") -> str:
    return f"Here is the updated code:\n```{lang}\n{body}```\n"


def run(workspace: Path, *replies: Scripted | str, mode: str = "text", question: str = QUESTION) -> Agent:
    server = ScriptedServer(list(replies))
    agent = Agent(server=server, workspace=workspace, mode=mode, edits="apply", steps=4)  # type: ignore[arg-type]
    agent.run(question)
    return agent


def test_a_whole_updated_file_in_a_fence_is_made_as_an_edit(workspace: Path) -> None:
    agent = run(workspace, fence(APP.replace("8080", "9090")), "Done: PORT is 9090.")
    reply = agent.replies[-1]
    assert (workspace / "app.py").read_text() == APP.replace("8080", "9090")
    assert reply.text == "Done: PORT is 9090."
    call = reply.steps[0].calls[0]
    assert call.name == "edit_file"
    assert call.arguments == {"path": "app.py", "find": "PORT = 8080", "replace": "PORT = 9090"}
    assert any("read as that edit of app.py" in n.text for n in reply.notices)


def test_a_changed_function_in_a_fence_is_made_in_its_place(workspace: Path) -> None:
    body = (
        "def serve(port=PORT):\n"
        '    """Serve the application on ``port``."""\n'
        "    print('serving on', port)\n"
        "    return port\n"
    )
    run(workspace, fence(body), "Done.", question="Fix the docstring of serve in app.py: say application.")
    assert (workspace / "app.py").read_text() == APP.replace("Serve the app", "Serve the application")


def test_lines_left_out_with_an_ellipsis_are_not_deleted(workspace: Path) -> None:
    body = "import os\n\nPORT = 9090\nHOST = 'localhost'\n\n# ... the rest unchanged\n"
    run(workspace, fence(body), "Done.")
    assert (workspace / "app.py").read_text() == APP.replace("8080", "9090")


def test_a_line_added_at_the_top_of_a_whole_file_is_kept_but_a_label_comment_is_not(workspace: Path) -> None:
    body = "# app.py\nimport os\nimport sys\n" + APP.split("\n", 1)[1]
    run(workspace, fence(body), "Done.", question="In app.py, add import sys after import os.")
    assert (workspace / "app.py").read_text() == "import os\nimport sys\n" + APP.split("\n", 1)[1]


def test_a_fence_in_native_mode_too(workspace: Path) -> None:
    run(workspace, Scripted(fence(APP.replace("8080", "9090"))), Scripted("Done."), mode="native")
    assert "PORT = 9090" in (workspace / "app.py").read_text()


def test_the_edit_waits_for_review_like_any_edit(workspace: Path) -> None:
    server = ScriptedServer([fence(APP.replace("8080", "9090")), "Proposed."])
    agent = Agent(server=server, workspace=workspace, mode="text", steps=4)
    reply = agent.run(QUESTION)
    assert (workspace / "app.py").read_text() == APP  # nothing written: held for review
    assert len(reply.pending) == 1
    assert reply.text == "Proposed."


def test_an_unchanged_copy_or_a_question_proposes_nothing(workspace: Path) -> None:
    agent = run(workspace, fence(APP), "It already is.")
    assert (workspace / "app.py").read_text() == APP
    assert agent.replies[-1].steps[0].problems == [
        "answered a request for a change without making it: nudged to edit"
    ]
    agent = run(
        workspace, fence(APP.replace("8080", "9090")), question="What would app.py look like on 9090?"
    )
    assert (workspace / "app.py").read_text() == APP
    assert not agent.replies[-1].steps[0].calls


def test_a_fence_that_fits_no_file_goes_to_the_nudge(workspace: Path) -> None:
    agent = run(workspace, fence("def other():\n    return 1\n"), "Done.")
    assert (workspace / "app.py").read_text() == APP
    assert not agent.replies[-1].steps[0].calls


@pytest.mark.parametrize(
    "named",
    ["../outside.py", "/etc/passwd", str(Path("..") / "outside.py"), ".env"],
)
def test_a_fence_naming_a_file_the_tools_may_not_read_proposes_nothing(
    workspace: Path, tmp_path: Path, named: str
) -> None:
    body = APP.replace("8080", "9090") if named != ".env" else "PORT = 9090\nHOST = 'localhost'\n"
    reply = f"Updated {named}:\n```python\n{body}```\n"
    agent = run(workspace, reply, "Done.", question=f"In {named}, change the port to 9090.")
    assert (tmp_path / "outside.py").read_text() == APP
    assert (workspace / ".env").read_text().startswith("PORT = 8080")
    calls = agent.replies[-1].steps[0].calls
    assert all(c.arguments.get("path") not in (named, "../outside.py", ".env") for c in calls)


def test_a_huge_fence_is_not_compared() -> None:
    huge = APP.replace("8080", "9090") + "#" * fenced_edits.MAX_FENCE_CHARS
    assert fenced_edits.fences(fence(huge)) == []
    assert fenced_edits.fences(fence("x = 1\n")) == ["x = 1\n"]


def test_a_tool_fence_or_a_shell_fence_is_not_a_file() -> None:
    assert fenced_edits.fences("```tool\n{}\n```\n```bash\nls\n```") == []


def test_a_mostly_deleting_fence_proposes_nothing() -> None:
    lines = [f"line_{n} = {n}" for n in range(40)]
    body = "\n".join([*lines[:3], "line_3 = 33", *lines[30:33]])  # 26 lines gone, without an ellipsis
    assert fenced_edits.propose(body, lines) is None


def test_two_changed_parts_between_left_out_lines_propose_nothing() -> None:
    lines = [f"line_{n} = {n}" for n in range(40)]
    body = "\n".join([*lines[0:3], "line_3 = 33", "# ...", *lines[20:23], "line_23 = 99"])
    assert fenced_edits.propose(body, lines) is None


def test_excerpts_far_apart_each_under_a_comment_naming_the_file_are_read_one_by_one() -> None:
    """A 1.5B model asked to rename a function printed the renamed function and, under a second
    ``# path`` comment, an unchanged method 1,000 lines further down: the changed excerpt is the edit. Two
    changed excerpts still propose nothing (one call is one change)."""
    lines = [f"line_{n} = {n}" for n in range(60)]
    label = "# pkg/module.py"
    body = "\n".join([label, *lines[0:3], "line_3 = 33", *lines[4:6], "", label, *lines[50:54]])
    assert fenced_edits.propose(body, lines) == ("line_3 = 3", "line_3 = 33", 5)  # 5 lines anchor it
    body = "\n".join([label, *lines[0:3], "line_3 = 33", "", label, *lines[50:53], "line_53 = 0"])
    assert fenced_edits.propose(body, lines) is None
    # Without the second label the two excerpts are one part, scattered over the file: nothing.
    body = "\n".join([label, *lines[0:3], "line_3 = 33", *lines[4:6], "", *lines[50:54]])
    assert fenced_edits.propose(body, lines) is None


def test_a_find_that_is_not_unique_gets_context() -> None:
    lines = ["def a():", "    x = 0", "    return 1", "", "def b():", "    x = 0", "    return 1", ""]
    found = fenced_edits.propose("def b():\n    x = 0\n    return 2\n", lines)
    assert found is not None
    find, replace, _ = found
    assert (find, replace) == ("def b():\n    x = 0\n    return 1", "def b():\n    x = 0\n    return 2")


def test_paths_are_read_from_model_text_without_scanning_twice() -> None:
    text = "Edit `toolz/utils.py` and ./setup.py, not 3.8 or e.g. this." + " word" * 5000
    assert fenced_edits.named_paths([text]) == ["toolz/utils.py", "setup.py"]


def test_the_call_takes_the_nudges_names() -> None:
    found = fenced_edits.Proposal("a.py", "x = 1", "x = 2", 3)
    call = fenced_edits.as_call(found, ToolCall("edit_file", {"path": "", "find": "", "replace": ""}))
    assert call.arguments == {"path": "a.py", "find": "x = 1", "replace": "x = 2"}


def test_a_run_of_lines_the_copy_left_out_is_kept() -> None:
    lines = [
        "def f():",
        '    """Doc.',
        "",
        "    More doc.",
        "    Even more.",
        "    And more.",
        "    Last.",
        '    """',
        "    return 1",
    ]
    found = fenced_edits.propose('def f():\n    """Docs.\n    """\n    return 1\n', lines)
    assert found is not None
    assert found[:2] == ('    """Doc.', '    """Docs.')


def test_a_copy_indented_by_another_amount_keeps_the_files_indentation() -> None:
    lines = [
        "setup(name='x',",
        "      version='1',",
        "      python_requires='>=3.8',",
        "      zip_safe=False)",
    ]
    body = "setup(name='x',\n       version='1',\n       python_requires='>=3.9',\n       zip_safe=False)\n"
    found = fenced_edits.propose(body, lines)
    assert found is not None
    assert found[:2] == ("      python_requires='>=3.8',", "      python_requires='>=3.9',")


def test_a_note_on_the_change_at_a_lines_end_is_not_written() -> None:
    lines = ["import os", "", "PORT = 8080  # the port", "HOST = 'h'"]
    found = fenced_edits.propose("import os\n\nPORT = 9090  # Changed from 8080 to 9090\nHOST = 'h'\n", lines)
    assert found is not None
    assert found[:2] == ("PORT = 8080  # the port", "PORT = 9090")


def test_a_replacement_described_in_inline_code_is_made(workspace: Path) -> None:
    said = "Replace the line `PORT = 8080` with `PORT = 9090` in app.py."
    agent = run(workspace, said, "Done.")
    assert (workspace / "app.py").read_text() == APP.replace("8080", "9090")
    assert agent.replies[-1].steps[0].calls[0].arguments["find"] == "PORT = 8080"


def test_edit_arguments_told_in_prose_are_made_as_the_edit(workspace: Path) -> None:
    said = "I edited app.py. The `find` argument is `PORT = 8080`. The `replace` argument is `PORT = 9090`."
    agent = run(workspace, said, "Done.")
    assert (workspace / "app.py").read_text() == APP.replace("8080", "9090")
    assert agent.replies[-1].steps[0].calls[0].arguments["replace"] == "PORT = 9090"


def test_a_described_replacement_whose_old_text_is_not_once_in_one_file_is_not_made(workspace: Path) -> None:
    (workspace / "copy.py").write_text("PORT = 8080\n")
    said = "Replace `PORT = 8080` with `PORT = 9090` in app.py or copy.py."
    agent = run(workspace, said, "Done.")
    assert (workspace / "app.py").read_text() == APP
    assert not agent.replies[-1].steps[0].calls
    said = "Change `port` to `9090`."  # not in the file as written
    run(workspace, said, "Done.")
    assert (workspace / "app.py").read_text() == APP


@pytest.mark.parametrize(
    ("text", "pairs"),
    [
        ('replace the line `a = ">=3.8"` with `a = ">=3.9"`', [('a = ">=3.8"', 'a = ">=3.9"')]),
        ("change `>=3.8` to `>=3.9`", [(">=3.8", ">=3.9")]),
        ('To raise `python_requires` to ">=3.9" in `setup.py`, edit it.', []),  # a file, not the new text
        ("replace `abc` in `x.py` with `abd`", []),
        ("change `ab` to `ac`", []),  # too short to find once
        (
            "To raise `python_requires` to `>=3.9` in setup.cfg, replace `a = >=3.8` with `a = >=3.9`.",
            [("a = >=3.8", "a = >=3.9")],
        ),  # a name and its new value are not a replacement of text
        ("change `python_requires` to `>=3.9`", []),
        (
            "I edited `pkg/x.py`. The `find` argument is the exact text, which is `hinge=1.5`. The "
            "`replace` argument is the new text, which is `hinge=3.0`.",
            [("hinge=1.5", "hinge=3.0")],
        ),  # the edit tool's arguments told, not passed
        ("with find `a = 1` and replace `a = 2`", [("a = 1", "a = 2")]),
        ("The `find` argument must be exact; `replace` is the new text.", []),
        ("find `python_requires` and replace it with `>=3.9`", []),  # not the old text changed
    ],
)
def test_what_counts_as_a_described_replacement(text: str, pairs: list[tuple[str, str]]) -> None:
    assert fenced_edits.described(text) == pairs


def test_a_fence_copied_with_its_line_numbers_is_read_without_them(workspace: Path) -> None:
    body = "app.py:\n1: import os\n2: \n3: PORT = 9090\n4: HOST = 'localhost'\n"
    run(workspace, fence(body), "Done.")
    assert (workspace / "app.py").read_text() == APP.replace("8080", "9090")
    assert fenced_edits.fences("```\n1: a = 1\nb = 2\nc = 3\n```") == ["1: a = 1\nb = 2\nc = 3\n"]


SCRIPT = (
    "with open('app.py', 'r') as file:\n"
    "    lines = file.readlines()\n"
    "for i, line in enumerate(lines):\n"
    "    if 'PORT = 8080' in line:\n"
    "        lines[i] = line.replace('PORT = 8080', 'PORT = 9090')\n"
    "with open('app.py', 'w') as file:\n"
    "    file.writelines(lines)\n"
)


def test_a_script_that_replaces_is_read_as_the_edit_it_would_make_never_run(workspace: Path) -> None:
    """Asked for a change, small models print a Python script that opens the file and replaces text:
    its replace is made through the edit tool, in the file it opens; the script itself never runs."""
    said = "Here's how you can do it:\n```python\n" + SCRIPT + "```\nThis script updates the port."
    agent = run(workspace, said, "Done.")
    assert (workspace / "app.py").read_text() == APP.replace("8080", "9090")
    call = agent.replies[-1].steps[0].calls[0]
    assert (call.arguments["path"], call.arguments["find"]) == ("app.py", "PORT = 8080")
    assert not (workspace / "file").exists()


def test_a_scripts_replace_matches_loosely_like_a_call(workspace: Path) -> None:
    script = SCRIPT.replace("PORT = 8080", "PORT=8080").replace("PORT = 9090", "PORT=9090")
    run(workspace, "```python\n" + script + "```\n", "Done.")
    # As a call's would be: the replacement takes the file's spacing ("PORT = 8080" in app.py).
    assert (workspace / "app.py").read_text() == APP.replace("PORT = 8080", "PORT = 9090")


@pytest.mark.parametrize(
    ("script", "found"),
    [
        (SCRIPT, [("app.py", "PORT = 8080", "PORT = 9090")]),
        ("text = text.replace('port=8080', 'port=9090')\n", [(None, "port=8080", "port=9090")]),  # no open
        ("text = text.replace('a', 'b')\n", []),  # too short to find once
        ("text = text.replace(old, new)\n", []),  # not literal text
        ("text = text.replace('import os', 'PORT = 9090')\n", []),  # not the old text changed
        ("text = text.replace('PORT = 8080'\n", []),  # does not parse
        ("open(path).read().replace('PORT = 8080', 'PORT = 9090')\n", [(None, "PORT = 8080", "PORT = 9090")]),
    ],
)
def test_what_counts_as_a_scripted_replacement(script: str, found: list[tuple[str | None, str, str]]) -> None:
    assert fenced_edits.scripted("```python\n" + script + "```\n") == found


def test_a_script_opening_a_file_the_tools_may_not_read_edits_nothing(workspace: Path) -> None:
    for path in ("../outside.py", ".env"):
        script = SCRIPT.replace("app.py", path)
        run(workspace, "```python\n" + script + "```\n", "Done.", question="Change the port to 9090.")
        assert (workspace.parent / "outside.py").read_text() == APP
        assert "PORT = 8080" in (workspace / ".env").read_text()
    assert (workspace / "app.py").read_text() == APP


BEFORE_AFTER = (
    "To change the port in app.py, edit the file. If the line is:\n```python\nPORT = 8080\n```\n"
    "Change it to:\n```python\nPORT = 9090\n```\nSave the file."
)


def test_a_line_told_as_it_is_and_as_it_should_be_in_two_fences_is_made(workspace: Path) -> None:
    agent = run(workspace, BEFORE_AFTER, "Done.")
    assert (workspace / "app.py").read_text() == APP.replace("8080", "9090")
    assert agent.replies[-1].steps[0].calls[0].arguments["find"] == "PORT = 8080"


@pytest.mark.parametrize(
    ("bodies", "pairs"),
    [
        (["PORT = 8080\n", "PORT = 9090\n"], [("PORT = 8080", "PORT = 9090")]),
        (["x = 1\n", "PORT = 8080\n", "PORT = 9090\n"], [("PORT = 8080", "PORT = 9090")]),
        (["PORT = 8080\n", "PORT = 8080\n"], []),  # the same twice
        (["PORT = 8080\n", "print(serve())\n"], []),  # a second snippet, not the first changed
        (["".join(f"x{k} = {k}\n" for k in range(9)), "".join(f"x{k} = {k + 1}\n" for k in range(9))], []),
    ],
)
def test_what_counts_as_a_before_and_after_pair_of_fences(
    bodies: list[str], pairs: list[tuple[str, str]]
) -> None:
    assert fenced_edits.before_and_after(bodies) == pairs


def test_a_before_and_after_pair_whose_first_is_not_once_in_one_file_is_not_made(workspace: Path) -> None:
    (workspace / "copy.py").write_text("PORT = 8080\n")
    agent = run(workspace, BEFORE_AFTER.replace("app.py", "app.py or copy.py"), "Done.")
    assert (workspace / "app.py").read_text() == APP
    assert (workspace / "copy.py").read_text() == "PORT = 8080\n"
    assert not agent.replies[-1].steps[0].calls


def test_a_before_and_after_pair_in_no_file_as_written_goes_to_the_one_file_the_question_names(
    workspace: Path,
) -> None:
    """Its lines as the model misremembers them (a name the file does not have): the edit tool answers
    with the closest lines, and the model can copy them."""
    told = BEFORE_AFTER.replace("PORT = 8080", "PORT_NUMBER = 8080").replace(
        "PORT = 9090", "PORT_NUMBER = 9090"
    )
    agent = run(workspace, told, "Done.")
    step = agent.replies[-1].steps[0]
    assert step.calls[0].arguments == {
        "path": "app.py",
        "find": "PORT_NUMBER = 8080",
        "replace": "PORT_NUMBER = 9090",
    }
    assert step.results[0].is_error
    assert "3: PORT = 8080" in step.results[0].output
    assert (workspace / "app.py").read_text() == APP
