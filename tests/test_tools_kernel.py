"""The kernel tools' rules, in-process (an IPython shell, no kernel process): who may approve a run or
an insertion, what each answer means, what a run answers, and what is offered when.

The real kernel (main thread, interrupts, the next-input payload) is in test_kernel_tools.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from twinny_magics.conversation import ToolCall
from twinny_magics.tools import Workspace
from twinny_magics.tools.base import ToolOutput
from twinny_magics.tools.kernel import Kernel


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    ip.user_ns["sales"] = {"region": ["east"], "total": [1]}
    yield ip
    log = getattr(ip, "_twinny_cell_log", None)
    if log is not None:
        log.uninstall()
    InteractiveShell.clear_instance()


def workspace(tmp_path: Path, shell: InteractiveShell, **options: Any) -> Workspace:
    kernel = Kernel(shell, seconds=5)
    kernel.can_insert = options.pop("can_insert", False)
    return Workspace(tmp_path, kernel=kernel, **options)


def call(ws: Workspace, name: str, **arguments: Any) -> ToolOutput:
    return asyncio.run(ws.run(ToolCall(name, arguments)))


@pytest.mark.parametrize("answer", ["yes", "y", 1, None, "True", [True], object()])
def test_only_true_approves_a_run(tmp_path: Path, shell: InteractiveShell, answer: object) -> None:
    asked: list[tuple[str, str]] = []

    def approve(code: str, tool: str = "") -> object:
        asked.append((code, tool))
        return answer

    ws = workspace(tmp_path, shell, approve=approve)
    out = call(ws, "run_python", code="ran = 1")
    assert out.is_error
    assert "only True approves code" in out.text
    assert "ran" not in shell.user_ns
    assert asked == [("ran = 1", "run_python")]


def test_a_true_answer_runs_and_a_false_one_declines(tmp_path: Path, shell: InteractiveShell) -> None:
    ws = workspace(tmp_path, shell, approve=lambda code, tool: True)
    out = call(ws, "run_python", code="ran = len(sales['region'])\nran * 10")
    assert not out.is_error
    assert "value: 10" in out.text
    assert shell.user_ns["ran"] == 1
    ws = workspace(tmp_path, shell, approve=lambda code, tool: False)
    out = call(ws, "run_python", code="ran = 2")
    assert out.is_error
    assert "declined" in out.text
    assert shell.user_ns["ran"] == 1


def test_an_approve_callback_that_takes_only_the_text_is_still_asked(
    tmp_path: Path, shell: InteractiveShell
) -> None:
    seen: list[str] = []
    ws = workspace(tmp_path, shell, approve=lambda text: seen.append(text) or True)
    assert not call(ws, "run_python", code="x = 3").is_error
    assert seen == ["x = 3"]


def test_allow_runs_without_asking_and_off_does_not_offer_it(tmp_path: Path, shell: InteractiveShell) -> None:
    ws = workspace(tmp_path, shell, kernel_mode="allow")
    assert "value: 7" in call(ws, "run_python", code="3 + 4").text
    off = workspace(tmp_path, shell, kernel_mode="off")
    assert "run_python" not in off.tool_names()
    assert {"cell_history", "propose_cell", "kernel_variables", "inspect_variable"} <= set(off.tool_names())
    assert "kernel=off" in call(off, "run_python", code="1").text
    # Outside a kernel there are no kernel tools at all.
    assert not {"cell_history", "run_python", "propose_cell"} & set(Workspace(tmp_path).tool_names())


def test_a_missing_name_suggests_the_kernels_names_like_it(tmp_path: Path, shell: InteractiveShell) -> None:
    ws = workspace(tmp_path, shell, kernel_mode="allow")
    out = call(ws, "run_python", code="sale['total']")
    assert out.is_error
    assert "NameError: name 'sale' is not defined" in out.text
    assert "Names like it in the kernel: sales" in out.text


def test_a_value_whose_repr_hangs_or_raises_is_reported_and_the_run_returns(
    tmp_path: Path, shell: InteractiveShell
) -> None:
    ws = workspace(tmp_path, shell, kernel_mode="allow")
    code = "import time\nclass Slow:\n    def __repr__(self):\n        time.sleep(30)\n        return ''\n"
    code += "Slow()"
    out = call(ws, "run_python", code=code)
    assert "repr took too long" in out.text
    code = "class Bad:\n    def __repr__(self):\n        raise ValueError('no repr')\nBad()"
    assert "repr raised ValueError: no repr" in call(ws, "run_python", code=code).text


def test_a_proposed_cell_is_inserted_only_on_a_true_answer(tmp_path: Path, shell: InteractiveShell) -> None:
    answers: list[object] = [True, False, "Insert"]
    ws = workspace(tmp_path, shell, approve=lambda text, tool: answers.pop(0), can_insert=True)
    kernel = ws.kernel
    assert kernel is not None
    assert "will be inserted below" in call(ws, "propose_cell", code="a = 1", why="set a").text
    assert "discarded" in call(ws, "propose_cell", code="b = 2").text
    assert "only True approves a cell" in call(ws, "propose_cell", code="c = 3").text
    assert [p.status for p in kernel.proposals] == ["insert", "discarded", "discarded"]
    assert kernel.to_insert() == "a = 1"
    assert kernel.to_insert() is None  # once
    assert "a" not in shell.user_ns  # never run


def test_cells_insert_needs_no_answer_but_a_frontend(tmp_path: Path, shell: InteractiveShell) -> None:
    ws = workspace(tmp_path, shell, cells="insert", can_insert=True)
    assert "will be inserted below" in call(ws, "propose_cell", code="a = 1").text
    headless = workspace(tmp_path, shell, cells="insert", can_insert=False)
    assert "Not inserted" in call(headless, "propose_cell", code="a = 1").text
    kernel = headless.kernel
    assert kernel is not None
    assert kernel.to_insert() is None


def test_empty_or_nul_code_is_refused(tmp_path: Path, shell: InteractiveShell) -> None:
    ws = workspace(tmp_path, shell, kernel_mode="allow")
    assert "needs code" in call(ws, "run_python", code="   ").text
    assert "NUL" in call(ws, "propose_cell", code="a\x00b").text


def test_a_run_answer_is_masked_and_cut(tmp_path: Path, shell: InteractiveShell) -> None:
    ws = workspace(tmp_path, shell, kernel_mode="allow")
    key = "sk-proj-" + "Zx9Yw8Vu7" * 6
    out = call(ws, "run_python", code=f"print('key={key}')\nprint('x' * 1_000_000)")
    assert key not in out.text
    assert len(out.text) < 2000
    assert "(1,000,0" in out.text  # how much was printed


def test_the_head_start_of_a_question_about_what_ran_holds_the_newest_cells(
    tmp_path: Path, shell: InteractiveShell
) -> None:
    (tmp_path / "app.py").write_text("def ratio(a, b):\n    return a / b\n")
    ws = workspace(tmp_path, shell)
    assert ws.kernel is not None
    shell.run_cell("def f(x):\n    return 1 / x\n\nf(0)", store_history=True)
    start = ws.head_start("Why does the last cell fail?", 3000)
    assert "The cells run in the notebook's kernel" in start
    assert "error: ZeroDivisionError: division by zero" in start
    assert "in f: return 1 / x" in start
    assert len(start) <= 3000
    # A question about the files gets the files only; an empty folder still gets the cells.
    assert "kernel" not in ws.head_start("Which file defines ratio?", 3000)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "ZeroDivisionError" in workspace(empty, shell).head_start("Why does the last cell fail?", 3000)


def test_a_small_window_goes_without_the_roomy_kernel_tools(tmp_path: Path, shell: InteractiveShell) -> None:
    ws = workspace(tmp_path, shell, kernel_mode="allow")
    assert ws.fit_window(2048) == ["cell_history", "run_python", "propose_cell"]
    names = ws.tool_names()
    assert not {"cell_history", "run_python", "propose_cell"} & set(names)
    assert {"kernel_variables", "inspect_variable"} <= set(names)
    assert "Unknown tool" in call(ws, "run_python", code="x = 1").text
    assert "x" not in shell.user_ns
    assert ws.fit_window(4096) == []
    assert {"cell_history", "run_python", "propose_cell"} <= set(ws.tool_names())
    assert Workspace(tmp_path).fit_window(2048) == []  # no kernel: nothing to leave out
