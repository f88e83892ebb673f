"""Security: what a command leaves behind, what approves it, and what its output can do to a terminal.

Everything here runs for real: real shells and processes (each escaping process writes its own pid,
which is then looked up in ``/proc``), a real stop (SIGINT to the main thread, as the kernel's stop button
sends) through ``Agent.run``, a real ``input()`` as an approver.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

import pytest

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.servers.scripted import Scripted, ScriptedServer
from twinny_magics.tools import ToolLimits, ToolOutput, Workspace, supervise
from twinny_magics.tools.commands import clean
from twinny_magics.tools.workspace import DECLINED

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the subreaper is Linux's")

PY = sys.executable

# Ways a command's child leaves the command's process group and session. Each writes its own pid to the
# file named by $PIDFILE and sleeps; none keeps the command's output open, so the call returns at once.
DETACH = {
    "setsid": "setsid sh -c 'echo $$ > \"$PIDFILE\"; exec sleep 1000' > /dev/null 2>&1 &",
    "os.setsid": (
        f'{PY} -c \'import os, time; os.setsid(); open(os.environ["PIDFILE"], "w")'
        ".write(str(os.getpid())); time.sleep(1000)' > /dev/null 2>&1 &"
    ),
    "double fork and setsid": (
        f"{PY} -c 'import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        '        open(os.environ["PIDFILE"], "w").write(str(os.getpid())); time.sleep(1000)\n'
        "    os._exit(0)\n"
        "' > /dev/null 2>&1"
    ),
    "nohup": "nohup sh -c 'echo $$ > \"$PIDFILE\"; exec sleep 1000' > /dev/null 2>&1 &",
    "setsid, ignoring SIGTERM": (
        'setsid sh -c \'trap "" TERM; echo $$ > "$PIDFILE"; while :; do sleep 0.05; done\' > /dev/null 2>&1 &'
    ),
}


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def gone(pid: int, seconds: float = 2.0) -> bool:
    """Whether the process is gone within ``seconds`` (a SIGKILL by process group is not waited for)."""
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


def wait_for_pid(path: Path, seconds: float = 10.0) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text().strip())
        time.sleep(0.02)
    raise AssertionError(f"{path.name} never appeared")


@pytest.fixture
def pidfile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Where an escaping process writes its pid; whatever a failing test leaves running is killed."""
    path = tmp_path / "escaped.pid"
    monkeypatch.setenv("PIDFILE", str(path))
    yield path
    if path.exists() and path.read_text().strip():
        pid = int(path.read_text())
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


async def command(ws: Workspace, line: str) -> ToolOutput:
    return await ws.run(ToolCall("run_command", {"command": line}))


# -- nothing a command starts outlives the call ----------------------------------------------------------


@pytest.mark.parametrize("way", list(DETACH))
async def test_a_detached_child_does_not_outlive_a_finished_command(
    tmp_path: Path, pidfile: Path, way: str
) -> None:
    ws = Workspace(tmp_path, commands="allow")
    out = await command(ws, DETACH[way] + "\nsleep 0.3; echo done")
    escaped = wait_for_pid(pidfile)
    assert not alive(escaped), f"{way}: {escaped} survived"
    lines = out.text.splitlines()
    assert lines[-3:-1] == ["done", "[exit code 0]"]
    # The SIGTERM-ignoring loop is its shell and, most of the time, the sleep it is waiting on.
    counts = ("1 process", "2 processes") if "ignoring" in way else ("1 process",)
    assert lines[-1].startswith(
        tuple(f"[{count} the command left running in the background" for count in counts)
    )
    assert lines[-1].endswith(
        "stopped when it ended; a command's processes do not outlive it: ask the user to start what must "
        "keep running, such as a server]"
    )
    assert not out.is_error


@pytest.mark.parametrize("way", ["setsid", "double fork and setsid", "setsid, ignoring SIGTERM"])
async def test_a_detached_child_does_not_outlive_a_timeout(tmp_path: Path, pidfile: Path, way: str) -> None:
    ws = Workspace(tmp_path, commands="allow", limits=ToolLimits(command_timeout=1.0))
    started = time.monotonic()
    out = await command(ws, DETACH[way] + "\nsleep 30")
    took = time.monotonic() - started
    escaped = wait_for_pid(pidfile)
    assert not alive(escaped)
    assert out.is_error
    assert out.text.endswith("[timed out after 1 s; the command and its child processes were stopped]")
    assert took < 4


@pytest.mark.parametrize("way", ["setsid", "double fork and setsid", "setsid, ignoring SIGTERM"])
async def test_a_detached_child_does_not_outlive_a_cancelled_call(
    tmp_path: Path, pidfile: Path, way: str
) -> None:
    ws = Workspace(tmp_path, commands="allow")
    task = asyncio.ensure_future(command(ws, DETACH[way] + "\necho $$ > shell.pid; sleep 30"))
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and (tmp_path / "shell.pid").exists()) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    escaped, shell = wait_for_pid(pidfile), wait_for_pid(tmp_path / "shell.pid")
    assert alive(escaped)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 1.5  # a SIGTERM-ignoring child costs the 0.5 s grace, no more
    assert not alive(escaped)
    assert not alive(shell)


def test_the_stop_button_during_a_command_leaves_no_detached_child(tmp_path: Path, pidfile: Path) -> None:
    """SIGINT to the main thread while ``Agent.run`` waits on a command: the reply stops, nothing is left."""
    line = DETACH["double fork and setsid"] + "\nsleep 30"
    server = ScriptedServer([Scripted("", calls=(ToolCall("run_command", {"command": line}),)), "unused"])
    agent = Agent(server=server, workspace=tmp_path, commands="allow")
    sent: list[float] = []

    def stop_when_running() -> None:
        wait_for_pid(pidfile)
        sent.append(time.monotonic())
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    async def cell() -> Any:
        # As a Jupyter cell calls it: inside a running loop, so the reply runs on a worker thread.
        try:
            return agent.run("Start it.")
        except KeyboardInterrupt as stopped:
            return stopped

    stopper = threading.Thread(target=stop_when_running)
    stopper.start()
    loop = asyncio.new_event_loop()
    try:
        outcome = loop.run_until_complete(cell())
    finally:
        loop.close()
        stopper.join()
    returned = time.monotonic()
    assert sent
    assert returned - sent[0] < 1.5
    assert isinstance(outcome, KeyboardInterrupt)
    assert agent.replies[-1].stopped == "stopped"
    assert not alive(int(pidfile.read_text()))


async def test_every_child_of_a_fork_storm_is_stopped_and_counted(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, commands="allow")
    out = await command(
        ws, "for i in $(seq 40); do setsid sleep 1000 > /dev/null 2>&1 & echo $! >> pids; done; echo started"
    )
    pids = [int(pid) for pid in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 40
    assert not [pid for pid in pids if alive(pid)]
    assert "[40 processes the command left running in the background were stopped when it ended" in out.text


async def test_a_background_server_started_by_a_command_is_stopped_when_the_call_ends(tmp_path: Path) -> None:
    """The documented choice: ``python -m http.server &`` does not survive the call; the model is told."""
    ws = Workspace(tmp_path, commands="allow")
    out = await command(
        ws, f"{PY} -m http.server 0 --bind 127.0.0.1 > server.log 2>&1 & echo $! > server.pid; sleep 0.5"
    )
    assert not alive(int((tmp_path / "server.pid").read_text()))
    assert "1 process the command left running in the background was stopped" in out.text


async def test_a_command_that_kills_its_supervisor_is_reported_and_its_shell_is_stopped(
    tmp_path: Path,
) -> None:
    """``kill -9 $PPID`` ends the supervisor: what is in the shell's group is still killed, and the model
    and the user are told that detached processes may survive (docs/security.md says so)."""
    ws = Workspace(tmp_path, commands="allow")
    started = time.monotonic()
    out = await command(ws, "echo $$ > shell.pid; sleep 30 & echo $! > child.pid; kill -9 $PPID; sleep 30")
    assert time.monotonic() - started < 2
    assert gone(int((tmp_path / "shell.pid").read_text()))
    assert gone(int((tmp_path / "child.pid").read_text()))
    assert "supervisor was ended from outside" in out.text
    assert out.is_error


async def test_a_command_that_stops_its_supervisor_still_ends(tmp_path: Path) -> None:
    """SIGSTOP to the supervisor: the call still ends (the process groups are killed after a wait)."""
    ws = Workspace(tmp_path, commands="allow", limits=ToolLimits(command_timeout=0.5))
    started = time.monotonic()
    out = await command(ws, "echo $$ > shell.pid; kill -STOP $PPID; sleep 30")
    assert time.monotonic() - started < 6
    assert gone(int((tmp_path / "shell.pid").read_text()))
    assert out.is_error


async def test_kill_0_from_the_command_does_not_reach_the_supervisor(tmp_path: Path) -> None:
    """The shell has a process group of its own: ``kill 0`` ends the command, and the report still comes."""
    ws = Workspace(tmp_path, commands="allow")
    out = await command(ws, "setsid sleep 1000 > /dev/null 2>&1 & echo $! > child.pid; sleep 0.3; kill 0")
    assert not alive(int((tmp_path / "child.pid").read_text()))
    assert out.text.splitlines()[1] == "[exit code -15]"
    assert "1 process the command left running in the background was stopped" in out.text


async def test_pipes_and_signals_behave_as_in_a_plain_shell(tmp_path: Path) -> None:
    """SIGPIPE is at its default in the command (``yes | head`` ends), stdin is empty, stderr joins."""
    ws = Workspace(tmp_path, commands="allow", limits=ToolLimits(command_timeout=10))
    out = await command(ws, "yes | head -3; cat; echo err >&2")
    assert out.text.splitlines()[1:] == ["y", "y", "y", "err", "[exit code 0]"]


# -- only True approves ----------------------------------------------------------------------------------

NOT_A_YES = ["n", "no", "", "y", "yes", "True", None, 0, 1, 1.0, [], ["yes"], MagicMock(), object()]


@pytest.mark.parametrize("answer", NOT_A_YES, ids=repr)
@pytest.mark.parametrize("awaited", [False, True], ids=["sync", "async"])
async def test_an_answer_that_is_not_a_bool_runs_nothing_and_says_so(
    tmp_path: Path, answer: object, awaited: bool
) -> None:
    def sync(line: str) -> Any:
        return answer

    async def coroutine(line: str) -> Any:
        return answer

    out = await command(Workspace(tmp_path, approve=coroutine if awaited else sync), "touch ran")
    assert not (tmp_path / "ran").exists()
    assert out.is_error
    assert out.text.startswith("run_command was not run: the approval answer was not a yes or no (it was ")
    assert "only True approves a command" in out.text


async def test_false_declines_and_only_true_runs(tmp_path: Path) -> None:
    declined = await command(Workspace(tmp_path, approve=lambda _: False), "touch declined")
    ran = await command(Workspace(tmp_path, approve=lambda _: True), "touch ran")
    assert declined.text == DECLINED
    assert not (tmp_path / "declined").exists()
    assert (tmp_path / "ran").exists()
    assert not ran.is_error


@pytest.mark.parametrize("typed", ["n\n", "no\n", "\n", "y\n"])
async def test_input_as_an_approver_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: str
) -> None:
    """``approve=lambda c: input(f"run {c}? ")``: the string typed is never True, so nothing runs."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    out = await command(Workspace(tmp_path, approve=lambda c: input(f"run {c}? ")), "touch ran")
    assert not (tmp_path / "ran").exists()
    assert f"(it was {typed.strip()!r} (str))" in out.text


# -- what a command's output can do to a terminal --------------------------------------------------------

ESCAPES = {
    "colour": r"\033[1;31m",
    "cursor up and clear": r"\033[2A\033[2K",
    "title by BEL": r"\033]0;owned\007",
    "title by ST": r"\033]2;owned\033\\",
    "clipboard OSC 52": r"\033]52;c;cm0gLXJmIH4K\033\\",
    "hyperlink OSC 8": r"\033]8;;https://evil.example/\033\\",
    "DCS": r"\033P+q544e\033\\",
    "APC": r"\033_hidden\033\\",
    "PM": r"\033^hidden\033\\",
    "8-bit CSI": r"\302\2332J",
    "8-bit OSC": r"\302\2350;owned\302\234",
    "reset": r"\033c",
    "save cursor": r"\0337",
    "lone ESC": r"\033\033[0m",
    "bell": r"\007",
    "backspaces": r"\010\010\010",
}


@pytest.mark.parametrize("name", list(ESCAPES))
async def test_command_output_reaches_the_model_without_escapes(tmp_path: Path, name: str) -> None:
    ws = Workspace(tmp_path, commands="allow")
    out = await command(ws, f"printf 'before {ESCAPES[name]}after\\n'")
    shown = out.text.splitlines()[1]
    assert "\x1b" not in shown
    assert not any(0x80 <= ord(c) <= 0x9F or (ord(c) < 0x20 and c not in "\n\t") for c in shown)
    assert shown.startswith("before") or name == "backspaces"
    assert shown.endswith("after")
    assert "owned" not in shown
    assert "hidden" not in shown


def test_clean_resolves_redraws_and_overstrikes_and_marks_the_rest() -> None:
    assert clean("10%\r50%\r100%\nnext") == "100%\nnext"
    assert clean("b\bbo\bol\bld\bd and _\bu") == "bold and u"
    assert clean("a\x07b") == "a⟨U+0007⟩b"
    assert clean("x\u202ey") == "x⟨U+202E⟩y"
    assert clean("\x1b]8;;http://a\x1b\\link\x1b]8;;\x1b\\") == "link"
    assert clean("\x1b]0;unterminated title") == "⟨U+001B⟩]0;unterminated title"


async def test_the_command_line_in_the_report_is_shown_exactly(tmp_path: Path) -> None:
    """The ``$ command`` line the model and the user read marks a bidi override instead of obeying it."""
    ws = Workspace(tmp_path, commands="allow")
    out = await command(ws, "echo safe # \u202e\u2066 ; rm -rf x")
    assert out.text.splitlines()[0] == "$ echo safe # ⟨U+202E⟩⟨U+2066⟩ ; rm -rf x"


# -- the supervisor's view of the process tree -------------------------------------------------------------


def test_children_are_found_with_and_without_proc_children_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """``/proc/PID/task/*/children`` needs CONFIG_PROC_CHILDREN; without it a scan of ``/proc`` answers."""
    sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    try:
        pids = {p.pid for p in sleepers}
        assert pids <= set(supervise.children(os.getpid()))
        assert pids <= set(supervise.descendants(os.getpid()))
        real_open = open

        def no_children_files(path: Any, *args: Any, **kwargs: Any) -> Any:
            if str(path).endswith("/children"):
                raise FileNotFoundError(path)
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr("builtins.open", no_children_files)
        assert pids <= set(supervise.children(os.getpid()))
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
