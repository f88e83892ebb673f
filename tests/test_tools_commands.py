"""run_command: output tail and exit code, timeout, approval, commands off, and nothing left running."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from twinny_magics.conversation import ToolCall
from twinny_magics.tools import ToolLimits, ToolOutput, Workspace


async def command(ws: Workspace, line: str) -> ToolOutput:
    return await ws.run(ToolCall("run_command", {"command": line}))


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie (a container's init may never reap one)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


async def wait_for_file(path: Path, seconds: float = 5.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path.name} never appeared")


async def test_a_command_runs_in_the_workspace_with_combined_output_and_exit_code(tmp_path: Path) -> None:
    """stdout and stderr come back together, after the command line, with the exit code."""
    (tmp_path / "here.txt").write_text("x")
    out = await command(Workspace(tmp_path, commands="allow"), "ls; echo oops >&2; exit 3")
    assert out.text == "$ ls; echo oops >&2; exit 3\nhere.txt\noops\n[exit code 3]"
    assert out.is_error


async def test_a_successful_command_is_not_an_error(tmp_path: Path) -> None:
    """Exit code 0 is a plain result."""
    out = await command(Workspace(tmp_path, commands="allow"), "echo fine")
    assert not out.is_error
    assert out.text == "$ echo fine\nfine\n[exit code 0]"


async def test_long_output_keeps_only_its_tail_and_says_so(tmp_path: Path) -> None:
    """Only the last characters are kept, cut on a line boundary, with a note of the total."""
    ws = Workspace(tmp_path, commands="allow", limits=ToolLimits(command_tail=100))
    out = await command(ws, "seq 1 5000")
    lines = out.text.splitlines()
    assert lines[1].startswith("[output cut: the last ")
    assert lines[1].endswith(" of 23893 bytes are shown]")
    assert lines[-2] == "5000"
    assert lines[-1] == "[exit code 0]"
    assert lines[2].isdigit()
    assert len("\n".join(lines[2:-1])) <= 100


async def test_colour_codes_and_progress_redraws_are_removed(tmp_path: Path) -> None:
    """ANSI escapes vanish and a carriage-return progress bar keeps only its last state."""
    ws = Workspace(tmp_path, commands="allow")
    out = await command(ws, r"printf '\033[31mred\033[0m\n10%%\r50%%\r100%%\n'")
    assert out.text.splitlines()[1:3] == ["red", "100%"]


async def test_a_command_that_runs_too_long_is_stopped_and_reported(tmp_path: Path) -> None:
    """Past the timeout the command is killed and the model is told so, with what it printed."""
    ws = Workspace(tmp_path, commands="allow", limits=ToolLimits(command_timeout=0.3))
    started = time.monotonic()
    out = await command(ws, "echo started; sleep 30")
    assert time.monotonic() - started < 3
    assert out.is_error
    assert out.text.splitlines()[1:] == [
        "started",
        "[timed out after 0.3 s; the command and its child processes were stopped]",
    ]


async def test_an_asked_command_does_not_run_when_nobody_can_approve(tmp_path: Path) -> None:
    """Headless ask mode runs nothing and tells the model to ask the user."""
    out = await command(Workspace(tmp_path, commands="ask"), "touch marker")
    assert out.is_error
    assert out.text.startswith("run_command was not run: commands need approval and nobody can approve")
    assert not (tmp_path / "marker").exists()


async def test_an_approved_command_runs_and_a_declined_one_does_not(tmp_path: Path) -> None:
    """The approve callable is asked with the command line; its answer decides."""
    asked: list[str] = []

    def yes(line: str) -> bool:
        asked.append(line)
        return True

    async def no(line: str) -> bool:
        asked.append(line)
        return False

    ran = await command(Workspace(tmp_path, approve=yes), "touch approved")
    declined = await command(Workspace(tmp_path, approve=no), "touch declined")
    assert asked == ["touch approved", "touch declined"]
    assert not ran.is_error
    assert (tmp_path / "approved").exists()
    assert declined.is_error
    assert "The user declined" in declined.text
    assert not (tmp_path / "declined").exists()


async def test_commands_off_removes_the_tool_and_refuses_a_call(tmp_path: Path) -> None:
    """With commands=off, run_command is not offered and a call to it says it is off."""
    ws = Workspace(tmp_path, commands="off", approve=lambda _: True)
    assert "run_command" not in ws.tool_names()
    out = await command(ws, "touch marker")
    assert out.is_error
    assert "off in this session" in out.text
    assert not (tmp_path / "marker").exists()


async def test_cancelling_a_running_command_kills_its_whole_process_group(tmp_path: Path) -> None:
    """A cancelled call leaves neither the shell nor the child it started running."""
    ws = Workspace(tmp_path, commands="allow")
    task = asyncio.ensure_future(command(ws, "sleep 30 & echo $! > child.pid; echo $$ > shell.pid; wait"))
    shell = int(await wait_for_file(tmp_path / "shell.pid"))
    child = int(await wait_for_file(tmp_path / "child.pid"))
    assert alive(shell)
    assert alive(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not alive(shell)
    assert not alive(child)


async def test_background_children_do_not_outlive_a_finished_command(tmp_path: Path) -> None:
    """A child left holding the output is stopped shortly after the command itself exits."""
    ws = Workspace(tmp_path, commands="allow")
    started = time.monotonic()
    out = await command(ws, "sleep 30 & echo $! > child.pid; echo done")
    assert time.monotonic() - started < 5
    assert out.text.splitlines()[1:3] == ["done", "[exit code 0]"]
    assert out.text.splitlines()[3].startswith("[1 process the command left running in the background was")
    assert not alive(int((tmp_path / "child.pid").read_text()))


async def test_an_empty_command_is_refused(tmp_path: Path) -> None:
    """A blank command line is an error with an example."""
    out = await command(Workspace(tmp_path, commands="allow"), "   ")
    assert out.is_error
    assert "needs a command" in out.text
