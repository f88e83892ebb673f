"""What the model is offered and how its calls are checked; the read-only kernel variables view."""

from __future__ import annotations

import json
import math
import types
from pathlib import Path
from typing import Any

import pytest

from twinny_magics.conversation import ToolCall
from twinny_magics.tools import ToolLimits, Workspace

ALL_TOOLS = [
    "list_dir",
    "find_files",
    "read_file",
    "search",
    "grep",
    "edit_file",
    "create_file",
    "run_command",
    "kernel_variables",
    "inspect_variable",
]


def test_definitions_are_openai_style_with_ordered_properties_and_short_descriptions(tmp_path: Path) -> None:
    """Every definition has the function shape, its arguments in call order, and a short description."""
    definitions = Workspace(tmp_path, namespace={}).definitions()
    assert [d["function"]["name"] for d in definitions] == ALL_TOOLS
    for definition in definitions:
        assert definition["type"] == "function"
        function = definition["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert len(function["description"]) <= 200
        assert function["parameters"]["type"] == "object"
    read = definitions[2]["function"]["parameters"]
    assert list(read["properties"]) == ["path", "start_line", "end_line"]
    assert read["required"] == ["path"]
    assert read["properties"]["start_line"]["type"] == "integer"


def test_definitions_follow_the_modes_and_say_no_number(tmp_path: Path) -> None:
    """commands=off drops run_command, no kernel drops kernel_variables and inspect_variable, and no limit
    is written as a number a small model would copy (read_file's "150 lines" became start_line 150)."""
    ws = Workspace(tmp_path, commands="off", limits=ToolLimits(read_lines=40))
    kernel = ("run_command", "kernel_variables", "inspect_variable")
    assert ws.tool_names() == [name for name in ALL_TOOLS if name not in kernel]
    read = next(d for d in ws.definitions() if d["function"]["name"] == "read_file")
    assert not any(char.isdigit() for char in json.dumps(read["function"]))
    review = Workspace(tmp_path).definitions()[5]["function"]["description"]
    applied = Workspace(tmp_path, edits="apply").definitions()[5]["function"]["description"]
    assert "reviews each edit" in review
    assert "reviews" not in applied
    # search=False leaves the ranked search out (the head start still uses its index).
    assert "search" not in Workspace(tmp_path, search=False).tool_names()


def test_a_workspace_refuses_unknown_modes(tmp_path: Path) -> None:
    """A misspelled mode is a programming error, caught at construction."""
    with pytest.raises(ValueError, match="edits must be"):
        Workspace(tmp_path, edits="yolo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="commands must be"):
        Workspace(tmp_path, commands="always")  # type: ignore[arg-type]


async def test_an_unknown_tool_is_answered_with_the_tools_on_offer(tmp_path: Path) -> None:
    """A call of a tool that does not exist lists the real ones."""
    out = await Workspace(tmp_path, commands="off").run(ToolCall("cat", {"path": "x"}))
    assert out.is_error
    assert out.text == (
        "Unknown tool 'cat'. The tools are: list_dir, find_files, read_file, search, grep, edit_file, "
        "create_file."
    )
    # In a kernel, the two kernel tools are on offer too.
    out = await Workspace(tmp_path, commands="off", namespace={}).run(ToolCall("cat", {}))
    assert out.text == (
        "Unknown tool 'cat'. The tools are: list_dir, find_files, read_file, search, grep, edit_file, "
        "create_file, kernel_variables, inspect_variable."
    )


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("read_notebook", "read_file shows a .ipynb notebook as its cells."),
        ("readfile", "Did you mean read_file?"),
    ],
)
async def test_an_unknown_tool_close_to_a_real_one_gets_a_hint(tmp_path: Path, name: str, hint: str) -> None:
    """A near miss is pointed at the tool it probably meant."""
    out = await Workspace(tmp_path).run(ToolCall(name, {}))
    assert out.is_error
    assert out.text.endswith(hint)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, 'read_file needs path. Call it as read_file {path, start_line?, end_line?}, e.g. {"path": '),
        ({"name": "a.py"}, "read_file needs path (it got name instead)."),
        ({"path": ["a.py"]}, "read_file: path must be a string (got list)."),
        ({"path": "a.py", "start_line": "ten"}, 'read_file: start_line must be an integer (got "ten").'),
        ({"path": "a.py", "start_line": True}, "read_file: start_line must be an integer (got true)."),
        ("a.py", "The arguments of read_file must be an object."),
    ],
)
async def test_wrong_arguments_come_back_with_the_expected_call_shape(
    tmp_path: Path, arguments: Any, message: str
) -> None:
    """Missing or wrongly typed arguments are errors that show how to call the tool."""
    out = await Workspace(tmp_path).run(ToolCall("read_file", arguments))
    assert out.is_error
    assert out.text.startswith(message)
    assert "read_file {path, start_line?, end_line?}" in out.text


async def test_common_argument_aliases_and_numbers_in_strings_are_accepted(tmp_path: Path) -> None:
    """file_path for path, and "2" for 2, work as small models write them; extra arguments are ignored."""
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    out = await Workspace(tmp_path).run(
        ToolCall("read_file", {"file_path": "a.txt", "start_line": "2", "end_line": 2.0, "mode": "fast"})
    )
    assert out.text == "a.txt, lines 2–2 of 3:\n2: two"


class Matrix:
    """Looks like a numpy array: a shape and a repr, nothing else."""

    shape = (3, 4)

    def __repr__(self) -> str:
        return "Matrix([[0, 0, 0, 0], ...])"


class Grumpy:
    def __repr__(self) -> str:
        raise ValueError("no repr for you")


class Counted(list[int]):
    """A list that records every call of __len__ and __iter__, to prove the view did not use them."""

    calls: list[str] = []  # noqa: RUF012 (shared on purpose: the test reads it)

    def __len__(self) -> int:
        self.calls.append("len")
        return 0


async def test_kernel_variables_show_names_types_shapes_lengths_and_short_reprs() -> None:
    """Data variables are listed; modules, functions, classes, _names and IPython's own are not."""
    namespace: dict[str, Any] = {
        "items": [1, 2, 3],
        "config": {"lr": 0.1, "epochs": 3},
        "grid": Matrix(),
        "weird": Grumpy(),
        "long_text": "x" * 500,
        "math": math,
        "helper": lambda: None,
        "Matrix": Matrix,
        "_hidden": 1,
        "In": [""],
        "Out": {},
        "get_ipython": print,
        "exit": types.SimpleNamespace(),
    }
    out = await Workspace(".", namespace=namespace).run(ToolCall("kernel_variables", {}))
    lines = out.text.splitlines()
    assert lines[0] == "5 variable(s) in the kernel (read-only view):"
    assert lines[1] == "config (dict, len 2): {'epochs': 3, 'lr': 0.1}"
    assert lines[2] == f"grid ({__name__}.Matrix, shape 3×4): Matrix([[0, 0, 0, 0], ...])"
    assert lines[3] == "items (list, len 3): [1, 2, 3]"
    assert lines[4].startswith("long_text (str, len 500): 'xxxxxxxxxx")
    assert len(lines[4]) < 160
    assert lines[5].startswith(f"weird ({__name__}.Grumpy): <Grumpy instance at 0x")


async def test_kernel_variables_are_capped_and_never_call_into_a_custom_container() -> None:
    """Many variables are cut at the limit, and a subclass's own __len__ is not trusted blindly."""
    namespace: dict[str, Any] = {f"v{i:03}": i for i in range(100)}
    namespace["a_counted"] = Counted([1, 2])
    out = await Workspace(".", namespace=namespace, limits=ToolLimits(variables=10)).run(
        ToolCall("kernel_variables", {})
    )
    assert out.text.splitlines()[1] == f"a_counted ({__name__}.Counted): [1, 2]"
    assert out.text.splitlines()[-1] == "[… 91 more not shown]"
    assert len(out.text.splitlines()) == 12
    assert Counted.calls == []


async def test_kernel_variables_outside_a_kernel_say_there_is_none(tmp_path: Path) -> None:
    """Without a namespace the tool answers that there is no kernel."""
    out = await Workspace(tmp_path).run(ToolCall("kernel_variables", {}))
    assert not out.is_error
    assert out.text.startswith("There is no kernel here")


async def test_an_unreadable_file_error_names_no_absolute_path(tmp_path: Path) -> None:
    """An OS error is reported by its reason only."""
    secret = tmp_path / "locked.txt"
    secret.write_text("x")
    secret.chmod(0)
    try:
        out = await Workspace(tmp_path).run(ToolCall("read_file", {"path": "locked.txt"}))
    finally:
        secret.chmod(0o644)
    if out.is_error:  # root can read anything; elsewhere this is the permission error
        assert str(tmp_path) not in out.text
        assert "Permission denied" in out.text
