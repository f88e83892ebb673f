"""Real kernels: every notebook in notebooks/ executed headless, and what only a kernel can show.

The kernel is this virtualenv's Python, named ``python3`` by a kernelspec written into a temporary
``JUPYTER_PATH`` (the machine may have another ``python3`` kernel that cannot import the package).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from live_kernel import Kernel, python3_kernelspec, shown
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
AGENT_CELL = "%%agent"

#: What each notebook's %%agent cells must show.
EXPECTED: dict[str, dict[str, list[str]]] = {
    # The embedded SmolLM2 under the call grammar: its first step is a call, so there are two requests;
    # then the replay of Qwen2.5-Coder-1.5B's recorded answer to the same question.
    "quickstart.ipynb": {
        "agent": ["Request 1", "Request 2", "[1.0]", "The files in this folder are:"],
        "after": ["Context plan", "Agent session"],
    },
    # A scripted trajectory replayed on the embedded server at a 2,048-token window: real counts, a cut,
    # trims, the prompt cache, an edit applied after the cell.
    "context_budget.ipynb": {
        "agent": [
            "Request 1",
            "server counted",
            "read_file path='logs/app.log'",
            "cut: ",
            "trimmed at request",
            "grep pattern='ERROR'",
            "of them cached by the server",
            "Proposed edit to config.toml",
            "last, no tools",
        ],
        "after": [
            "Context plan for a 2,048-token window",
            "the agent's estimate",
            "Token estimator",
            "Applied the edit to config.toml.",
            "pool_size = 20",
        ],
    },
    # SmolLM2 in text mode under the call-first grammar: one call, then the last request.
    "tool_protocol.ipynb": {
        "agent": ["Request 1 · text", "[1.0]", "last, no tools"],
        "after": [
            "You can call these tools:",
            "grep(pattern='PORT')",
            "read_file(path='app.py', end_line=5)",
            "find_files(pattern='*.py')",
            'There is no tool called "delete_file"',
            "read_file needs path",
            "<tokens> are fine.",
            "root ::= call",
        ],
    },
    # Variants of SmolLM2's prompts measured over three questions: %%agent compare, then run() resumed from
    # its saved results (only the new variant runs), each comparison with its table; one reply up close.
    "prompt_tuning.ipynb": {
        "agent": [
            "Done: 6 runs",
            "Experiment: 3 questions × 2 variants",
            "answer vs default: fixed",
            "McNemar",
        ],
        "after": [
            "Done: 3 runs",
            "9/9 runs",
            "12/12 runs",
            "grep hint vs answer",
            "system prompt vs answer",
            # One run up close: its first request (whether SmolLM2 answers there from the head start or
            # needs the closing request depends on every word it is sent).
            "── Request 1 · text",
        ],
    },
    # The kernel tools on a scripted model (what ran, a run, a proposed cell shown as code headless), then
    # the embedded SmolLM2 asked the same with kernel=ask: nothing it asks to run runs headless.
    "kernel_agent.ipynb": {
        "agent": [
            "cell_history",
            "error: KeyError",
            'in by_region: return frame.groupby("region")["totl"].sum()',
            "run_python",
            "['region', 'month', 'total']",
            "propose_cell",
            "Not inserted",
            "pandas raises",
            "Request 1",
        ],
        "after": ["── cell_history:", "── run_python:", "('shown', 'use the real column, total')"],
    },
}
#: Notebooks that start the embedded llama.cpp server (a real model).
USES_A_SERVER = {
    "quickstart.ipynb",
    "context_budget.ipynb",
    "tool_protocol.ipynb",
    "prompt_tuning.ipynb",
    "kernel_agent.ipynb",
}


@pytest.fixture(scope="module", autouse=True)
def kernelspec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A ``python3`` kernelspec for this virtualenv's Python, first on ``JUPYTER_PATH``."""
    with python3_kernelspec(tmp_path_factory.mktemp("jupyter")) as root:
        yield root


def outputs_text(cell: Any) -> str:
    """Everything a saved cell shows, as text/plain, text/markdown, text/html and streams."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output["text"])
        for mime in ("text/plain", "text/markdown", "text/html"):
            parts.append(str(output.get("data", {}).get(mime, "")))
    return "\n".join(parts)


@pytest.mark.notebook
# A whole notebook with a model in it: prompt_tuning's compare runs 8 replies (70-106 s measured on a
# loaded machine); each cell still has nbclient's 180 s, the notebook as a whole gets 400.
@pytest.mark.timeout(400)
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(p.name, marks=[pytest.mark.server] if p.name in USES_A_SERVER else [])
        for p in sorted(NOTEBOOKS.glob("*.ipynb"))
    ],
)
def test_the_notebook_runs_headless_and_keeps_its_calls_and_answer(name: str, tmp_path: Path) -> None:
    shutil.copy(NOTEBOOKS / name, tmp_path / name)
    shutil.copytree(NOTEBOOKS / "sessions", tmp_path / "sessions")  # the saved sessions they replay
    nb = nbformat.read(tmp_path / name, as_version=4)
    NotebookClient(
        nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    # A cell tagged raises-exception fails on purpose (nbclient goes on past it); no other may.
    errors = [
        o
        for c in nb.cells
        if "raises-exception" not in c.get("metadata", {}).get("tags", [])
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert errors == []
    agent_cells = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(AGENT_CELL)]
    assert agent_cells
    shown = "\n".join(outputs_text(c) for c in agent_cells)
    later = "\n".join(outputs_text(c) for c in nb.cells if c.cell_type == "code" and c not in agent_cells)
    expected = EXPECTED.get(name, {"agent": ["Request 1"], "after": []})
    for text in expected["agent"]:
        assert text in shown
    for text in expected["after"]:
        assert text in later
    for cell in agent_cells:
        for output in cell.outputs:
            if output.get("output_type") == "display_data":
                assert "text/plain" in output["data"]
                assert "text/html" in output["data"]
                assert "text/markdown" not in output["data"]  # model text is never raw Markdown


# -- a live kernel, driven the way a frontend drives it ---------------------------------------------------


SESSION = """
from pathlib import Path
from twinny_magics import Agent, ToolCall
from twinny_magics.servers.scripted import Scripted, ScriptedServer
server = ScriptedServer([{replies}])
s = Agent(server=server, workspace=Path.cwd())
%load_ext twinny_magics
%agent use s
"""


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    running = Kernel(tmp_path)
    yield running
    running.stop()


@pytest.mark.notebook
def test_the_stop_button_stops_a_reply_and_the_next_cell_works(kernel: Kernel) -> None:
    kernel.run(SESSION.format(replies='Scripted("word " * 400, delay=0.02), "Short answer."'))
    msg_id = kernel.client.execute("%%agent\nWrite a lot.")
    time.sleep(1.0)
    started = time.monotonic()
    kernel.manager.interrupt_kernel()
    messages = []
    while True:
        message = kernel.client.get_iopub_msg(timeout=30)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(message)
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
    assert time.monotonic() - started < 3
    text = shown(messages)
    assert "Stopped" in text
    assert "Traceback" not in text
    assert not any(m["msg_type"] == "error" for m in messages)
    assert "Short answer." in shown(kernel.run("%%agent\nAgain, briefly."))
    assert "stopped" in shown(kernel.run("print(s.replies[0].stopped)"))


@pytest.mark.notebook
def test_a_command_is_approved_by_a_click_while_the_cell_runs(kernel: Kernel, tmp_path: Path) -> None:
    call = 'Scripted("", calls=(ToolCall("run_command", {"command": "touch approved.txt"}),))'
    kernel.run(SESSION.format(replies=f'{call}, "It ran."'))
    run_button: list[str] = []
    everything: list[dict[str, Any]] = []

    def click_run(message: dict[str, Any]) -> None:
        # A frontend renders the Run button from its comm_open and lets it be clicked once the kernel
        # enables it; a click is a custom comm message.
        everything.append(message)
        content = message["content"]
        if message["msg_type"] == "comm_open" and content["data"]["state"].get("description") == "Run":
            run_button.append(content["comm_id"])
        elif (
            message["msg_type"] == "comm_msg"
            and run_button
            and content["comm_id"] == run_button[0]
            and content["data"].get("state", {}).get("disabled") is False
        ):
            data = {"method": "custom", "content": {"event": "click"}}
            kernel.send_comm("comm_msg", {"comm_id": run_button[0], "data": data})

    kernel.run("%%agent\nTouch the file.", allow_stdin=True, on_message=click_run, timeout=30)
    # The click was handled while the cell ran (on a subshell), so its update is the click's child, and
    # a frontend applies it by display id wherever it is.
    text = shown(everything)
    assert run_button
    assert "— approved" in text
    assert (tmp_path / "approved.txt").exists()
    assert "It ran." in text


@pytest.mark.notebook
def test_a_headless_run_does_not_ask_and_does_not_run_the_command(kernel: Kernel, tmp_path: Path) -> None:
    call = 'Scripted("", calls=(ToolCall("run_command", {"command": "touch ran.txt"}),))'
    kernel.run(SESSION.format(replies=f'{call}, "Not run."'))
    text = shown(kernel.run("%%agent\nTouch the file.", allow_stdin=False))
    assert "nobody can approve" in text
    assert "Run / Don't run" not in text
    assert not (tmp_path / "ran.txt").exists()


@pytest.mark.notebook
def test_the_apply_button_works_after_the_cell_has_finished(kernel: Kernel, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    edit = (
        'Scripted("", calls=(ToolCall("edit_file", {"path": "a.py", "find": "x = 1", "replace": "x = 2"}),))'
    )
    kernel.run(SESSION.format(replies=f'{edit}, "Proposed."'))
    apply_button: list[str] = []

    def find_apply(message: dict[str, Any]) -> None:
        content = message["content"]
        if message["msg_type"] == "comm_open" and content["data"]["state"].get("description") == "Apply":
            apply_button.append(content["comm_id"])

    kernel.run("%%agent\nSet x to 2.", allow_stdin=True, on_message=find_apply)
    assert (tmp_path / "a.py").read_text() == "x = 1\n"
    everything: list[dict[str, Any]] = []
    kernel.send_comm(
        "comm_msg", {"comm_id": apply_button[0], "data": {"method": "custom", "content": {"event": "click"}}}
    )
    # The click runs on the idle kernel; wait for the view's update, then for the kernel to be idle again.
    kernel.run("pass", on_message=everything.append)
    assert (tmp_path / "a.py").read_text() == "x = 2\n"
    assert "Proposed edit to a.py — applied" in shown(everything)
