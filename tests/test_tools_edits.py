"""edit_file and create_file: review before writing, conflicts, atomic writes, loose matching, notebooks."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import MASK
from twinny_magics.servers.scripted import Scripted, ScriptedServer
from twinny_magics.tools import PendingEdit, ToolOutput, Workspace
from twinny_magics.tools.leftovers import still_there

APP = "def main():\n    x = 1\n    return x\n\n\ndef other():\n    return 2\n"


async def call(ws: Workspace, name: str, **arguments: object) -> ToolOutput:
    return await ws.run(ToolCall(name, dict(arguments)))


@pytest.fixture
def app(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(APP)
    return tmp_path / "app.py"


def proposed(out: ToolOutput) -> PendingEdit:
    assert not out.is_error, out.text
    assert out.pending is not None
    return out.pending


async def test_a_reviewed_edit_touches_nothing_until_it_is_applied(app: Path) -> None:
    """In review mode the edit waits with its diff; the file changes only on apply."""
    ws = Workspace(app.parent)
    out = await call(ws, "edit_file", path="app.py", find="x = 1", replace="x = 41")
    edit = proposed(out)
    assert "waiting for the user's review" in out.text
    assert "NOT on disk yet" in out.text
    assert "-    x = 1\n+    x = 41" in out.text
    assert app.read_text() == APP
    assert ws.pending == [edit]
    assert edit.path == "app.py"
    assert edit.status == "pending"
    assert edit.diff.startswith("--- a/app.py\n+++ b/app.py\n@@ -1,5 +1,5 @@\n")
    assert edit.apply() == "Applied the edit to app.py."
    assert app.read_text() == APP.replace("x = 1", "x = 41")
    assert edit.status == "applied"
    assert ws.pending == []


async def test_a_discarded_edit_never_reaches_the_disk(app: Path) -> None:
    """Discarding leaves the file as it was and the edit can no longer be applied."""
    ws = Workspace(app.parent)
    edit = proposed(await call(ws, "edit_file", path="app.py", find="x = 1", replace="x = 2"))
    assert ws.discard_pending() == 1
    assert edit.status == "discarded"
    assert app.read_text() == APP
    with pytest.raises(WorkspaceError, match="already discarded"):
        edit.apply()


async def test_an_edit_to_a_file_changed_meanwhile_is_refused_as_a_conflict(app: Path) -> None:
    """If the file changed after the proposal, apply refuses and keeps the newer content."""
    ws = Workspace(app.parent)
    edit = proposed(await call(ws, "edit_file", path="app.py", find="x = 1", replace="x = 2"))
    app.write_text(APP + "# the user typed this\n")
    with pytest.raises(WorkspaceError, match="changed on disk since this edit was proposed"):
        edit.apply()
    assert edit.status == "conflict"
    assert app.read_text().endswith("# the user typed this\n")


async def test_of_two_pending_edits_to_one_file_the_second_applied_is_a_conflict(app: Path) -> None:
    """Both are made against the disk; applying the first makes the second a conflict, as announced."""
    ws = Workspace(app.parent)
    first = proposed(await call(ws, "edit_file", path="app.py", find="x = 1", replace="x = 2"))
    second_out = await call(ws, "edit_file", path="app.py", find="return 2", replace="return 3")
    second = proposed(second_out)
    assert "Another edit to app.py is also waiting" in second_out.text
    messages = ws.apply_pending()
    assert messages[0] == "Applied the edit to app.py."
    assert "changed on disk" in messages[1]
    assert (first.status, second.status) == ("applied", "conflict")
    assert "return 3" not in app.read_text()
    assert "x = 2" in app.read_text()


async def test_apply_mode_writes_at_once_and_shows_a_short_diff(app: Path) -> None:
    """In apply mode the file is written immediately and the answer includes the diff."""
    ws = Workspace(app.parent, edits="apply")
    out = await call(ws, "edit_file", path="app.py", find="return 2", replace="return 20")
    assert not out.is_error
    assert out.pending is None
    assert out.text.startswith("Applied the edit to app.py.\n--- a/app.py")
    assert "+    return 20" in out.text
    assert app.read_text() == APP.replace("return 2", "return 20")


async def test_an_atomic_write_keeps_the_file_mode_and_leaves_no_temporary_file(app: Path) -> None:
    """The replaced file keeps its permissions (here executable) and no temp file remains."""
    app.chmod(0o751)
    ws = Workspace(app.parent, edits="apply")
    await call(ws, "edit_file", path="app.py", find="x = 1", replace="x = 3")
    assert stat.S_IMODE(app.stat().st_mode) == 0o751
    assert sorted(p.name for p in app.parent.iterdir()) == ["app.py"]


async def test_a_created_file_gets_the_usual_mode_and_its_folders(tmp_path: Path) -> None:
    """create_file makes missing folders and gives the file the umask's mode, not the temp file's 0600."""
    umask = os.umask(0o022)
    os.umask(umask)
    ws = Workspace(tmp_path)
    out = await call(ws, "create_file", path="notes/todo.md", content="# To do\n")
    edit = proposed(out)
    assert "creating notes/todo.md" in out.text
    assert "+# To do" in out.text
    assert not (tmp_path / "notes").exists()
    assert edit.apply() == "Created notes/todo.md."
    created = tmp_path / "notes" / "todo.md"
    assert created.read_text() == "# To do\n"
    assert stat.S_IMODE(created.stat().st_mode) == 0o666 & ~umask


async def test_create_file_refuses_to_overwrite_and_points_to_edit_file(app: Path) -> None:
    """An existing path is never overwritten by create_file."""
    out = await call(Workspace(app.parent), "create_file", path="app.py", content="")
    assert out.is_error
    assert "already exists; use edit_file" in out.text
    assert app.read_text() == APP


async def test_a_pending_create_conflicts_when_the_file_appears_meanwhile(tmp_path: Path) -> None:
    """A file created by someone else before apply is not overwritten."""
    ws = Workspace(tmp_path)
    edit = proposed(await call(ws, "create_file", path="new.py", content="mine\n"))
    (tmp_path / "new.py").write_text("theirs\n")
    with pytest.raises(WorkspaceError, match="changed on disk"):
        edit.apply()
    assert (tmp_path / "new.py").read_text() == "theirs\n"


async def test_edit_file_on_a_missing_file_points_to_create_file(tmp_path: Path) -> None:
    """Editing a file that does not exist says to create it."""
    out = await call(Workspace(tmp_path), "edit_file", path="nope.py", find="a", replace="b")
    assert out.is_error
    assert out.text.endswith("To make a new file, use create_file.")


async def test_find_matching_several_times_is_refused_with_the_count_and_lines(app: Path) -> None:
    """An ambiguous find says how often it matched and where."""
    out = await call(Workspace(app.parent), "edit_file", path="app.py", find="return", replace="yield")
    assert out.is_error
    assert out.text.startswith("find matches 2 times in app.py; it must match exactly once.")
    assert "  3: return x\n  7: return 2" in out.text
    # The call for the first, its whole (unique) line as find, to copy (a small model repeated its call).
    assert out.text.endswith(
        'To change them one at a time, start with line 3: {"name": "edit_file", "arguments": '
        '{"path": "app.py", "find": "return x", "replace": "yield x"}}'
    )


async def test_several_matches_suggest_no_call_when_the_first_line_is_not_unique(tmp_path: Path) -> None:
    """Where the first match's line is itself repeated, or find spans lines, no call is suggested: one
    that would fail again is no help."""
    (tmp_path / "a.py").write_text("x = f(1)\nx = f(1)\ny = f(2)\n")
    out = await call(Workspace(tmp_path), "edit_file", path="a.py", find="f(", replace="g(")
    assert out.is_error
    assert "one at a time" not in out.text
    out = await call(Workspace(tmp_path), "edit_file", path="a.py", find="x = f(1)\n", replace="x = 0\n")
    assert "one at a time" not in out.text


async def test_find_matching_nowhere_shows_the_closest_lines(app: Path) -> None:
    """A find that is not in the file is answered with the most similar lines and how to re-read."""
    out = await call(Workspace(app.parent), "edit_file", path="app.py", find="    retrun x", replace="")
    assert out.is_error
    assert out.text.startswith("find was not found in app.py. The closest lines are:\n  3: return x")
    assert "read_file app.py start_line=1" in out.text


async def test_line_numbers_copied_into_find_are_pointed_out(app: Path) -> None:
    """A find that carries read_file's line numbers gets a hint to drop them."""
    out = await call(Workspace(app.parent), "edit_file", path="app.py", find="2:     x = 1", replace="x")
    assert "must not include the line numbers" in out.text


async def test_a_find_with_other_indentation_matches_when_unique_and_is_reindented(app: Path) -> None:
    """Whitespace differences are forgiven when the loose match is unique; the replacement is re-indented."""
    ws = Workspace(app.parent, edits="apply")
    out = await call(
        ws, "edit_file", path="app.py", find="x = 1\nreturn x", replace="x = 1\nif x:\n    return x\nreturn 0"
    )
    assert not out.is_error, out.text
    assert "ignoring differences in whitespace" in out.text
    assert app.read_text().startswith("def main():\n    x = 1\n    if x:\n        return x\n    return 0\n\n")


async def test_a_loose_match_keeps_the_files_own_lines_where_the_edit_changes_nothing(tmp_path: Path) -> None:
    """A model that copied a dict's continuation lines with its own indentation changed one value: the
    lines it left alone stay as the file has them, the changed one keeps the file's indentation."""
    (tmp_path / "rule.py").write_text(
        "CONF = {'max': int}\n"
        "DEFAULT = {'max': 80,\n"
        "           'allow-words': True,\n"
        "           'allow-mappings': False}\n"
    )
    find = "DEFAULT = {'max': 80,\n              'allow-words': True,\n              'allow-mappings': False}"
    ws = Workspace(tmp_path, edits="apply")
    out = await call(ws, "edit_file", path="rule.py", find=find, replace=find.replace("80", "120"))
    assert not out.is_error, out.text
    assert (tmp_path / "rule.py").read_text() == (
        "CONF = {'max': int}\n"
        "DEFAULT = {'max': 120,\n"
        "           'allow-words': True,\n"
        "           'allow-mappings': False}\n"
    )
    # A changed line in the middle takes the file's indentation there, plus what the model added.
    (tmp_path / "f.py").write_text("class A:\n    def f(self):\n        x = 1\n        return x\n")
    out = await call(
        ws,
        "edit_file",
        path="f.py",
        find="def f(self):\n  x = 1\n  return x",
        replace="def f(self):\n  x = 2\n  return x",
    )
    assert not out.is_error, out.text
    assert (tmp_path / "f.py").read_text() == "class A:\n    def f(self):\n        x = 2\n        return x\n"


async def test_a_settings_new_value_names_the_other_setting_the_request_names_not_the_old_values_uses(
    tmp_path: Path,
) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "default.yaml").write_text(
        "rules:\n  document-end: disable\n  empty-values: disable\n  float-values: disable\n"
        "  hyphens: enable\n  octal-values: disable\n"
    )
    ws = Workspace(tmp_path, edits="apply")
    ws.hear("In conf/default.yaml, enable the float-values and octal-values rules.")
    out = await call(
        ws,
        "edit_file",
        path="conf/default.yaml",
        find="float-values: disable",
        replace="float-values: enable",
    )
    assert not out.is_error, out.text
    assert "document-end" not in out.text.splitlines()[0]  # the old value elsewhere is no use of a name
    assert (
        "the request also names octal-values, still 'octal-values: disable' on line 6: "
        '{"name": "edit_file", "arguments": {"path": "conf/default.yaml", "find": "octal-values: disable", '
        '"replace": "octal-values: enable"}}'
    ) in out.text
    assert out.unfinished
    out = await call(
        ws,
        "edit_file",
        path="conf/default.yaml",
        find="octal-values: disable",
        replace="octal-values: enable",
    )
    assert out.text.startswith("Applied the edit to conf/default.yaml.\n")  # nothing named is left
    # A request that names no other setting: nothing is said of the old value's other lines.
    ws.hear("In conf/default.yaml, enable hyphens' sibling rule empty-values.")
    out = await call(
        ws,
        "edit_file",
        path="conf/default.yaml",
        find="empty-values: disable",
        replace="empty-values: enable",
    )
    assert out.text.startswith("Applied the edit to conf/default.yaml.\n"), out.text


@pytest.mark.parametrize(
    "request_",
    [
        "In app.rc, turn multi_line on (True) and destructive_warning off (False).",
        "In app.rc, turn multi_line on and destructive_warning off.",
    ],
)
async def test_settings_given_values_each_way_are_not_told_to_take_one_value(
    tmp_path: Path, request_: str
) -> None:
    """A request that turns one setting on and another off: after the second edit, the first (now on) is
    no setting left to turn off."""
    (tmp_path / "app.rc").write_text("[main]\nmulti_line = False\ndestructive_warning = True\n")
    ws = Workspace(tmp_path, edits="apply")
    ws.hear(request_)
    out = await call(ws, "edit_file", path="app.rc", find="multi_line = False", replace="multi_line = True")
    assert out.text.startswith("Applied the edit to app.rc.\n"), out.text
    out = await call(
        ws,
        "edit_file",
        path="app.rc",
        find="destructive_warning = True",
        replace="destructive_warning = False",
    )
    assert out.text.startswith("Applied the edit to app.rc.\n"), out.text


async def test_a_loose_match_that_is_not_unique_is_refused(tmp_path: Path) -> None:
    """Ignoring whitespace must still single out one place."""
    (tmp_path / "a.py").write_text("f(1,  2)\nf(1, 2)\n")
    out = await call(Workspace(tmp_path), "edit_file", path="a.py", find="f(1,   2)", replace="g()")
    assert out.is_error
    assert "ignoring whitespace it matches 2 times" in out.text


async def test_an_edit_keeps_windows_line_ends(tmp_path: Path) -> None:
    """A \\r\\n file is matched with the model's \\n and stays \\r\\n."""
    path = tmp_path / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    ws = Workspace(tmp_path, edits="apply")
    out = await call(ws, "edit_file", path="win.txt", find="one\ntwo", replace="1\n2")
    assert not out.is_error, out.text
    assert path.read_bytes() == b"1\r\n2\r\nthree\r\n"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"find": "", "replace": "x"}, "find is empty"),
        ({"find": "x = 1", "replace": "x = 1"}, "find and replace are the same"),
    ],
)
async def test_an_edit_that_changes_nothing_is_refused(
    app: Path, arguments: dict[str, str], message: str
) -> None:
    """An empty find or a no-op replacement is an error, not a pending edit."""
    out = await Workspace(app.parent).run(ToolCall("edit_file", {"path": "app.py", **arguments}))
    assert out.is_error
    assert out.text.startswith(message)


async def test_notebooks_are_never_rewritten_and_stay_valid(tmp_path: Path) -> None:
    """edit_file and create_file refuse a .ipynb and say what to do; the notebook is untouched."""
    nb = tmp_path / "nb.ipynb"
    original = json.dumps(
        {"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": []}]}
    )
    nb.write_text(original)
    ws = Workspace(tmp_path, edits="apply")
    edit = await call(ws, "edit_file", path="nb.ipynb", find="x = 1", replace="x = 2")
    create = await call(ws, "create_file", path="other.ipynb", content="{}")
    assert edit.is_error
    assert "does not change notebooks" in edit.text
    assert "new cell source" in edit.text
    assert create.is_error
    assert "does not change notebooks" in create.text
    assert nb.read_text() == original
    assert json.loads(nb.read_text())
    assert not (tmp_path / "other.ipynb").exists()


async def test_a_binary_file_is_not_edited(tmp_path: Path) -> None:
    """edit_file refuses a binary file."""
    (tmp_path / "data.bin").write_bytes(b"\x00\x01abc")
    out = await call(Workspace(tmp_path), "edit_file", path="data.bin", find="abc", replace="xyz")
    assert out.is_error
    assert "binary file" in out.text


# -- what small models write instead of the file's text --------------------------------------------------


async def test_find_in_the_other_quote_style_or_spacing_matches_once_and_keeps_the_files_quotes(
    tmp_path: Path,
) -> None:
    (tmp_path / "setup.py").write_text('setup(\n    python_requires=">=3.8",\n    chunksize=128,\n)\n')
    ws = Workspace(tmp_path, edits="apply")
    out = await call(
        ws, "edit_file", path="setup.py", find="python_requires='>=3.8'", replace="python_requires='>=3.9'"
    )
    assert not out.is_error
    assert "ignoring quote style" in out.text
    out = await call(ws, "edit_file", path="setup.py", find="chunksize = 128", replace="chunksize = 256")
    assert not out.is_error
    # The replacement is written in the file's spacing, not the find's: chunksize=256, as the file has it.
    assert (
        tmp_path / "setup.py"
    ).read_text() == 'setup(\n    python_requires=">=3.9",\n    chunksize=256,\n)\n'


async def test_a_rename_says_where_the_old_name_is_still_used(tmp_path: Path) -> None:
    """Renaming a function's definition ends with where its old name is still used in the file, so the
    calls are edited next (a 1.5B model renamed the definition and stopped). A value's change, or a
    name that is gone everywhere, adds nothing; the lines are read in the file as the tools show it."""
    (tmp_path / "m.py").write_text(
        "def head_tail(v):\n    return head_tail(v[1:]) if v else v\n\n\nx = head_tail([1])\nLIMIT = 1.5\n"
    )
    ws = Workspace(tmp_path, edits="apply")
    out = await call(ws, "edit_file", path="m.py", find="def head_tail(v):", replace="def _head_tail(v):")
    assert not out.is_error
    assert out.text.startswith(
        "Applied the edit to m.py. (head_tail is still on lines 2, 5 of this file: if each use should "
        "change too, edit those as well, starting with line 2: "
        '{"name": "edit_file", "arguments": {"path": "m.py", "find": "return head_tail(v[1:]) if v else v", '
        '"replace": "return _head_tail(v[1:]) if v else v"}})\n'
    )
    out = await call(ws, "edit_file", path="m.py", find="LIMIT = 1.5", replace="LIMIT = 3.0")
    assert out.text.startswith("Applied the edit to m.py.\n")
    out = await call(ws, "edit_file", path="m.py", find="x = head_tail([1])", replace="x = _head_tail([1])")
    assert "still" in out.text  # line 2 is left
    out = await call(
        ws, "edit_file", path="m.py", find="return head_tail(v[1:])", replace="return _head_tail(v[1:])"
    )
    assert out.text.startswith("Applied the edit to m.py.\n")


@pytest.mark.parametrize(
    ("find", "replace", "after", "note"),
    [
        ("def f(x):", "def g(x):", "def g(x):\n    return f(x)\n", ""),  # 'f' is too short to be sure
        (
            "old_name(1)",
            "new_name(1)",
            "new_name(1)\nold_name(2)\nold_names(3)\n",
            "old_name is still on line 2",
        ),
        ("a = old_name", "a = 2", "a = 2\nold_name\n", ""),  # nothing new came: a removal, not a rename
        ("k = 128", "k = 256", "k = 256\nk = 128\n", ""),  # numbers are not names
        ("multi_line = False", "multi_line = True", "multi_line = True\nwarn = False\n", ""),  # a value
        ("x = None", "x = default_x", "x = default_x\ny = None\n", ""),  # a keyword is no name
        # A parameter renamed: its :param and its uses are left; the word in prose is not a use.
        (
            "def add(ingredients: tuple):",
            "def add(pantry: tuple):",
            'def add(pantry: tuple):\n    """Look at the ingredients and offer yours.\n\n'
            "    :param ingredients: the ingredients, don't touch them!\n    :return: a list of ingredients\n"
            '    """\n    for i in ingredients:\n        print(i)\n    return ingredients\n',
            "ingredients is still on lines 4, 7, 9 of this file",
        ),
        ("def add(ingredients):", "def add(pantry):", "def add(pantry):\n    # the ingredients list\n", ""),
    ],
)
def test_what_a_rename_leaves_is_named(find: str, replace: str, after: str, note: str) -> None:
    text = still_there(find, replace, after)
    assert (note in text) if note else text == ""


async def test_a_loose_match_writes_the_replacement_in_the_files_spacing(tmp_path: Path) -> None:
    """A 1.5B model asked to change a default wrote ``hinge = 3.0`` for a file's ``hinge=1.5``: the edit
    keeps the file's style around each punctuation mark, also beside a new argument; a line end the
    replacement adds stays, and nothing outside the match changes."""
    (tmp_path / "c.py").write_text("class B:\n    def __init__(self, y, hinge=1.5):\n        self.y = y\n")
    ws = Workspace(tmp_path, edits="apply")
    out = await call(
        ws,
        "edit_file",
        path="c.py",
        find="def __init__(self, y, hinge = 1.5):",
        replace="def __init__(self, y, hinge = 3.0, k = 5):",
    )
    assert not out.is_error
    assert "ignoring quote style" in out.text
    assert (tmp_path / "c.py").read_text() == (
        "class B:\n    def __init__(self, y, hinge=3.0, k=5):\n        self.y = y\n"
    )
    out = await call(ws, "edit_file", path="c.py", find="self.y=y", replace="self.y=y\n        self.k=k")
    assert not out.is_error
    assert (tmp_path / "c.py").read_text().endswith("        self.y = y\n        self.k = k\n")


async def test_a_loose_find_that_matches_twice_or_joins_two_words_is_not_applied(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x=1\ny = 2\nx =1\ndeffold = 2\n")
    ws = Workspace(tmp_path, edits="apply")
    out = await call(ws, "edit_file", path="a.py", find="x = 1", replace="x = 2")
    assert out.is_error
    assert "not found" in out.text
    assert (await call(ws, "edit_file", path="a.py", find="def fold", replace="def f")).is_error
    assert (tmp_path / "a.py").read_text() == "x=1\ny = 2\nx =1\ndeffold = 2\n"


async def test_a_find_escaped_like_a_regex_matches_as_plain_text_and_replace_is_read_alike(
    tmp_path: Path,
) -> None:
    """Small models escape find as a regex or a JSON string twice; the plain text is what they mean,
    where the lines it matches hold no backslash."""
    (tmp_path / "lib.py").write_text('def add():\n    spices = ["salt", "pepper"]\n    return spices\n')
    ws = Workspace(tmp_path, edits="apply")
    out = await call(
        ws,
        "edit_file",
        path="lib.py",
        find='spices = \\[\\"salt\\", \\"pepper\\"\\]',
        replace='spices = \\[\\"salt\\", \\"pepper\\", \\"paprika\\"\\]',
    )
    assert not out.is_error, out.text
    assert "backslash escapes read as plain characters" in out.text
    assert (tmp_path / "lib.py").read_text() == (
        'def add():\n    spices = ["salt", "pepper", "paprika"]\n    return spices\n'
    )


async def test_an_escaped_find_never_matches_where_the_file_has_backslashes(tmp_path: Path) -> None:
    """Where the file's own lines hold escapes (a regex in code), find is taken as written."""
    text = 'PATTERN = re.compile(r"\\d+\\.\\d+")\nOTHER = "1.2"\n'
    (tmp_path / "r.py").write_text(text)
    ws = Workspace(tmp_path, edits="apply")
    out = await call(ws, "edit_file", path="r.py", find='r"\\d+\\.\\d+"', replace='r"\\d+"')
    assert not out.is_error  # exact: as written
    assert (tmp_path / "r.py").read_text() == 'PATTERN = re.compile(r"\\d+")\nOTHER = "1.2"\n'
    (tmp_path / "q.py").write_text('A = "x\\.y"\nB = "x.y"\n')
    out = await call(ws, "edit_file", path="q.py", find='"x\\.y"\nB', replace='"z"\nB')
    assert not out.is_error  # the exact text, not the unescaped one
    assert (tmp_path / "q.py").read_text() == 'A = "x\\.y"\nB = "x.y"\n'.replace('"x\\.y"\nB', '"z"\nB')
    (tmp_path / "s.py").write_text('S = "a\\[b"\n')
    out = await call(ws, "edit_file", path="s.py", find="a\\\\[b", replace="c")
    assert out.is_error  # unescaped it would be a\[b, which sits on a line with a backslash: not taken
    assert (tmp_path / "s.py").read_text() == 'S = "a\\[b"\n'


async def test_an_edit_repeated_after_it_worked_is_told_the_change_is_made(tmp_path: Path) -> None:
    (tmp_path / "p.py").write_text("def fold(binop, seq, chunksize=128):\n    pass\n")
    ws = Workspace(tmp_path, edits="apply")
    edit = {"path": "p.py", "find": "chunksize=128):", "replace": "chunksize=256):"}
    assert not (await call(ws, "edit_file", **edit)).is_error
    again = await call(ws, "edit_file", **edit)
    assert again.is_error
    assert "but replace is (line 1): this change looks made already" in again.text
    assert (tmp_path / "p.py").read_text() == "def fold(binop, seq, chunksize=256):\n    pass\n"


# --- files that hold hidden values (see test_security_edit_oracle.py for the guesses) ---------------

ASSIGNED = "a8Fq3ZpL0x9Wv2Rt7Yb4Nc6Md1Ke5Hj"  # an ordinary-looking value, hidden for its name
OPENAI = "sk-proj-" + "Qm7Xc2Lr9Tz4Wb8Nd1Kf6Hs3Jv5Pg0Ya2Ue7Ri4Oc9Lw1Bn"
CONFIG = f'import os\n\nAPI_KEY = "{ASSIGNED}"  # from the vault\nOPENAI_KEY = "{OPENAI}"\nDEBUG = True\n'
PEM_BODY = [f"{n:02}" + "Ab9/" * 15 + "Qz" for n in range(8)]
PEM = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *PEM_BODY, "-----END RSA PRIVATE KEY-----"])


async def test_edits_beside_and_on_the_line_of_a_hidden_value_keep_it(tmp_path: Path) -> None:
    """find is matched against the file as shown (values masked); the change lands at the same place of
    the real file, the hidden values kept as they are."""
    (tmp_path / "config.py").write_text(CONFIG)
    (tmp_path / "notes.txt").write_text(f"Deploy notes\n\n{PEM}\nafter_the_key = 1\nlast line\n")
    ws = Workspace(tmp_path, edits="apply")
    for find, replace in (
        ("DEBUG = True", "DEBUG = False"),
        ("API_KEY = ", "APP_KEY = "),  # the line's start, before its hidden value
        ('"  # from the vault', '"  # from the new vault'),  # after it
        ("DEBUG   =   False", "DEBUG = 0"),  # a loose match after two hidden lines
    ):
        out = await call(ws, "edit_file", path="config.py", find=find, replace=replace)
        assert not out.is_error, out.text
    expected = (
        CONFIG.replace("DEBUG = True", "DEBUG = 0")
        .replace("API_KEY = ", "APP_KEY = ")
        .replace("# from the vault", "# from the new vault")
    )
    assert (tmp_path / "config.py").read_text() == expected
    out = await call(ws, "edit_file", path="notes.txt", find="after_the_key = 1", replace="after_the_key = 2")
    assert "+after_the_key = 2" in out.text
    assert (tmp_path / "notes.txt").read_text() == f"Deploy notes\n\n{PEM}\nafter_the_key = 2\nlast line\n"


async def test_a_find_that_holds_the_mask_or_a_hidden_line_is_refused_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "config.py").write_text(CONFIG)
    (tmp_path / "notes.txt").write_text(f"Deploy notes\n\n{PEM}\nafter_the_key = 1\n")
    ws = Workspace(tmp_path, edits="apply")
    out = await call(ws, "edit_file", path="config.py", find=f'API_KEY = "{MASK}"', replace="API_KEY = None")
    assert out.is_error
    assert "hid from you" in out.text
    # The key's hidden lines show empty: a find that reaches into them touches the hidden value.
    out = await call(ws, "edit_file", path="notes.txt", find="\n\nafter_the_key", replace="\nafter_the_key")
    assert out.is_error
    assert "hid from you" in out.text
    assert (tmp_path / "config.py").read_text() == CONFIG
    assert (tmp_path / "notes.txt").read_text() == f"Deploy notes\n\n{PEM}\nafter_the_key = 1\n"


async def test_a_find_written_with_self_matches_the_class_bodys_bare_name(tmp_path: Path) -> None:
    """A 1.5B model wrote ``self.max_len_prompt = 45`` for a class attribute set as ``max_len_prompt = 45``
    in the class body: matched without the ``self.``, in find and replace alike."""
    (tmp_path / "c.py").write_text(
        "class C:\n    limit = 45\n\n    def __init__(self):\n        self.size = 1\n"
    )
    ws = Workspace(tmp_path, edits="apply")
    out = await call(ws, "edit_file", path="c.py", find="self.limit = 45", replace="self.limit = 60")
    assert not out.is_error, out.text
    assert "without its self." in out.text
    assert (tmp_path / "c.py").read_text().startswith("class C:\n    limit = 60\n")
    # Where the file has it with self., it matches as written; where the bare name is twice, it is refused.
    out = await call(ws, "edit_file", path="c.py", find="self.size = 1", replace="self.size = 2")
    assert "without its self." not in out.text
    assert "self.size = 2" in (tmp_path / "c.py").read_text()
    (tmp_path / "d.py").write_text("class A:\n    n = 1\n\n\nclass B:\n    n = 1\n")
    out = await call(ws, "edit_file", path="d.py", find="self.n = 1", replace="self.n = 2")
    assert out.is_error
    assert (tmp_path / "d.py").read_text() == "class A:\n    n = 1\n\n\nclass B:\n    n = 1\n"


RULES = (
    "rules:\n"
    "  empty-lines:\n"
    "    max: 2\n"
    "    level: error\n"
    "  # line-length is checked below\n"
    "  line-length:\n"
    "    max: 2\n"
    "    level: warning\n"
)


@pytest.mark.parametrize(
    ("request_text", "line"),
    [
        ("In conf/rules.yaml, raise the max of the line-length rule to 3.", 7),
        ("Set empty-lines' max to 3 in conf/rules.yaml.", 3),
    ],
)
async def test_of_several_matches_the_one_under_the_key_the_request_names_is_edited(
    tmp_path: Path, request_text: str, line: int
) -> None:
    """``max: 2`` twice in a YAML file: the request names the key it is under, and that one is changed
    (the enclosing lines name it; a comment naming the other key does not count), and said."""
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "rules.yaml").write_text(RULES)
    ws = Workspace(tmp_path, edits="apply")
    ws.hear(request_text)
    out = await call(ws, "edit_file", path="conf/rules.yaml", find="max: 2", replace="max: 3")
    assert not out.is_error, out.text
    assert f"find matched 2 times; this is the one at line {line}, under '" in out.text
    rows = RULES.split("\n")
    rows[line - 1] = rows[line - 1].replace("max: 2", "max: 3")
    assert (tmp_path / "conf" / "rules.yaml").read_text() == "\n".join(rows)


async def test_several_matches_stay_refused_when_the_request_names_none_or_both(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(RULES)
    ws = Workspace(tmp_path, edits="apply")
    ws.hear("In rules.yaml, raise the max of the line-length rule to 3.")
    out = await call(ws, "edit_file", path="rules.yaml", find="max", replace="3")  # a bare word: no place
    assert out.is_error
    assert out.text.startswith("find matches 2 times")
    for request_text in ("", "Raise max to 3 in rules.yaml.", "Raise max in empty-lines and line-length."):
        ws.hear(request_text)
        out = await call(ws, "edit_file", path="rules.yaml", find="max: 2", replace="max: 3")
        assert out.is_error, request_text
        assert out.text.startswith("find matches 2 times"), (request_text, out.text)
    assert (tmp_path / "rules.yaml").read_text() == RULES


async def test_an_ini_section_or_a_class_the_request_names_picks_the_match(tmp_path: Path) -> None:
    (tmp_path / "apprc").write_text("[main]\nmulti_line = False\n\n[colors]\nmulti_line = False\n")
    (tmp_path / "shapes.py").write_text(
        "class Box:\n    def __init__(self, hinge=1.5):\n        pass\n\n\n"
        "class Plot:\n    def __init__(self, hinge=1.5):\n        pass\n"
    )
    ws = Workspace(tmp_path, edits="apply")
    ws.hear("Turn multi_line on in the main section of apprc.")
    out = await call(ws, "edit_file", path="apprc", find="multi_line = False", replace="multi_line = True")
    assert not out.is_error, out.text
    assert (tmp_path / "apprc").read_text().startswith("[main]\nmulti_line = True\n")
    ws.hear("Change Plot's default hinge to 3.0 in shapes.py")
    out = await call(ws, "edit_file", path="shapes.py", find="hinge=1.5", replace="hinge=3.0")
    assert not out.is_error, out.text
    assert (tmp_path / "shapes.py").read_text().count("hinge=1.5") == 1
    assert "class Plot:\n    def __init__(self, hinge=3.0):" in (tmp_path / "shapes.py").read_text()


def test_the_loop_tells_the_workspace_the_request_before_the_first_step(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(RULES)
    edit = ToolCall("edit_file", {"path": "rules.yaml", "find": "max: 2", "replace": "max: 3"}, id="c1")
    server = ScriptedServer([Scripted(calls=(edit,)), Scripted("Done.")])
    agent = Agent(server=server, workspace=tmp_path, mode="native", edits="apply", steps=3)
    agent.run("Raise the max of the line-length rule in rules.yaml to 3.")
    assert (tmp_path / "rules.yaml").read_text() == RULES.replace(
        "    max: 2\n    level: warning", "    max: 3\n    level: warning"
    )


async def test_a_find_without_the_quotes_the_file_writes_around_a_value_matches_and_keeps_them(
    tmp_path: Path,
) -> None:
    """YAML (and TOML, INI) quote a value or not: a model wrote ``replay_dir: /home/x`` for the file's
    ``replay_dir: "/home/x"``; the line is changed with the file's quotes, and it says so."""
    text = 'default:\n    name: "Ada Lovelace"\ncookies_dir: "/home/x/cookies"\n'
    text += "replay_dir: '/home/x'  # here\n"
    (tmp_path / "conf.yaml").write_text(text)
    ws = Workspace(tmp_path, edits="apply")
    out = await call(
        ws, "edit_file", path="conf.yaml", find="cookies_dir: /home/x/cookies", replace="cookies_dir: /srv/c"
    )
    assert not out.is_error, out.text
    assert "without the quotes the file writes around the value" in out.text
    out = await call(
        ws, "edit_file", path="conf.yaml", find="replay_dir: /home/x", replace="replay_dir: /srv/r"
    )
    assert not out.is_error, out.text
    out = await call(
        ws, "edit_file", path="conf.yaml", find="name: Ada Lovelace", replace="name: Grace Hopper"
    )
    assert not out.is_error, out.text
    expected = 'default:\n    name: "Grace Hopper"\ncookies_dir: "/srv/c"\nreplay_dir: \'/srv/r\'  # here\n'
    assert (tmp_path / "conf.yaml").read_text() == expected
    # Another key in replace, or a value the file does not hold: not found, as before.
    for find, replace in (("replay_dir: /srv/r", "other: /x"), ("replay_dir: /elsewhere", "replay_dir: /x")):
        out = await call(ws, "edit_file", path="conf.yaml", find=find, replace=replace)
        assert out.is_error
        assert out.text.startswith("find was not found"), out.text
    assert (tmp_path / "conf.yaml").read_text() == expected
