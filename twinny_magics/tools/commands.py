"""run_command: a shell command in the workspace folder, as a real asyncio subprocess under a supervisor.

Nothing a command starts outlives the call. A process group is not enough (``setsid``, a double fork or
``os.setsid()`` leaves it), so the shell runs under a small supervisor (:mod:`.supervise`, a Python
process of its own) that on Linux is the *child subreaper* of everything below it: an orphan is
re-parented to the supervisor, not to init, and stays in its tree however it detached. When the call
ends — the command finished, it timed out, or the awaiting task was cancelled (the kernel's stop button)
— the supervisor sends SIGTERM to every process left in its tree, then SIGKILL to whatever remains, and
says how many there were. A command that finishes but leaves a process running in the background (a
server started with ``&``, a daemon that forks away) has it stopped when the call ends, after at most
:data:`LINGER_SECONDS` for output it still writes, and the model is told how many processes were
stopped. Only what a command asks a service manager to start (``systemd-run``, ``docker run -d``, an
``at`` job, a tmux server already running) is not its descendant and keeps running. A shell cannot be
confined to the workspace; approval (``ask``) is the guard, and ``off`` removes the tool.

Only the tail of the output is kept (that is where errors and test summaries are), with terminal escape
sequences removed — colours, cursor moves, titles, OSC 52 clipboard writes, OSC 8 links, in their 7-bit
and 8-bit forms — carriage-return progress bars at their final state, backspace overstrikes resolved,
and every other control character shown as a marker (as :func:`twinny_magics.inert.inert` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from twinny_magics.inert import mark_controls, strip_escapes, visible
from twinny_magics.tools import supervise

log = logging.getLogger(__name__)
# After the command exits, its output may still be held open by a child it started in the background.
LINGER_SECONDS = 1.0
#: How long the supervisor takes to stop everything at most (its SIGTERM grace, SIGKILL rounds, margin).
STOP_SECONDS = 3.0
TERM_GRACE_SECONDS = 0.5
POLL_SECONDS = 0.05
SUPERVISOR = Path(__file__).with_name("supervise.py")
# Non-interactive defaults: no pager waiting for a key, no colour, no password prompt.
_QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "NO_COLOR": "1", "GIT_TERMINAL_PROMPT": "0"}


@dataclass
class _Status:
    """What the supervisor reported on its status pipe."""

    shell: int | None = None
    code: int | None = None
    others: int | None = None  # processes besides the shell that were running when the call ended
    left: int = 0  # processes that could not be stopped
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    extra: list[str] = field(default_factory=list)

    async def read(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            word, _, rest = line.decode("utf-8", "replace").strip().partition(" ")
            try:
                if word == "shell":
                    self.shell = int(rest)
                elif word == "exit":
                    self.code = int(rest)
                    self.exited.set()
                elif word == "stopped":
                    others, _shell, left = (int(part) for part in rest.split())
                    self.others, self.left = others, left
                else:
                    self.extra.append(line.decode("utf-8", "replace").rstrip())
            except ValueError:
                self.extra.append(line.decode("utf-8", "replace").rstrip())
        if self.extra:  # the supervisor failed (a traceback): for whoever reads the logs
            log.warning("the command supervisor said:\n%s", "\n".join(self.extra))


async def run_command(command: str, cwd: Path, *, timeout: float, tail: int) -> tuple[str, bool]:
    """Run ``command`` with a shell in ``cwd``; the report the model reads and whether it failed."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-S",
        str(SUPERVISOR),
        command,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE,  # the control pipe: closing it tells the supervisor to stop
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,  # the supervisor's status lines (the command's stderr is stdout)
        start_new_session=True,
        env={**os.environ, **_QUIET_ENV},
    )
    status = _Status()
    buffer = _Tail(tail)
    assert process.stdout is not None
    assert process.stderr is not None
    reader = asyncio.ensure_future(buffer.read(process.stdout))
    listener = asyncio.ensure_future(status.read(process.stderr))
    waiter = asyncio.ensure_future(process.wait())
    exited = asyncio.ensure_future(status.exited.wait())
    loop = asyncio.get_running_loop()
    timed_out = False
    try:
        deadline = loop.time() + timeout
        exited_at: float | None = None
        while True:
            now = loop.time()
            if status.code is not None:
                if reader.done():
                    break
                exited_at = exited_at or now
                if now - exited_at > LINGER_SECONDS:
                    break
            elif process.returncode is not None:
                break  # the supervisor itself ended (killed): nothing more will come
            elif now > deadline:
                timed_out = True
                break
            pending = {task for task in (reader, waiter, exited) if not task.done()}
            await asyncio.wait(pending, timeout=POLL_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        await _stop(process, status, listener)
        await asyncio.wait({reader, waiter}, timeout=2 * TERM_GRACE_SECONDS)
    except BaseException:
        # Cancelled (or anything else): everything the command started goes before the exception
        # travels on. Closing the control pipe is enough for the supervisor to do it; waiting only
        # makes sure, and a second cancellation while waiting does not undo it.
        with contextlib.suppress(BaseException):
            await _stop(process, status, listener)
            await asyncio.wait({reader, waiter}, timeout=TERM_GRACE_SECONDS)
        raise
    finally:
        for task in (reader, listener, waiter, exited):
            task.cancel()
    return _report(command, buffer, status, timeout=timeout, timed_out=timed_out)


def _report(
    command: str, buffer: _Tail, status: _Status, *, timeout: float, timed_out: bool
) -> tuple[str, bool]:
    """The text the model reads: the command, its output's tail, how it ended, what was stopped."""
    lines = [f"$ {visible(command)}"]
    output = buffer.text()
    if output:
        lines.append(output)
    if timed_out:
        lines.append(f"[timed out after {timeout:g} s; the command and its child processes were stopped]")
    else:
        lines.append(f"[exit code {status.code}]" if status.code is not None else "[exit code unknown]")
        if status.others:
            count = status.others
            lines.append(
                f"[{count} process{'es' if count != 1 else ''} the command left running in the background "
                f"{'were' if count != 1 else 'was'} stopped when it ended; a command's processes do not "
                "outlive it: ask the user to start what must keep running, such as a server]"
            )
    if status.left:
        lines.append(f"[{status.left} process(es) could not be stopped (stuck in the kernel)]")
    if status.others is None:
        lines.append(
            "[the command's supervisor was ended from outside; processes the command started may still run]"
        )
    return "\n".join(lines), timed_out or status.code != 0 or status.others is None


async def _stop(process: asyncio.subprocess.Process, status: _Status, listener: asyncio.Future[None]) -> None:
    """Tell the supervisor to stop everything and wait for its report; kill by process group without one."""
    if process.stdin is not None:
        process.stdin.close()  # EOF on the control pipe: the supervisor stops the tree and reports
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STOP_SECONDS
    waited = False
    try:
        # The status pipe ends when the supervisor exits, after its last line. Its return code is polled:
        # on some Pythons wait() also waits for the output pipe, which only the stopping closes.
        await asyncio.wait({listener}, timeout=STOP_SECONDS)
        while process.returncode is None and loop.time() < deadline:
            await asyncio.sleep(POLL_SECONDS / 5)
        waited = True
    finally:
        # Also reached when cancelled again while waiting: then the supervisor, told to stop, carries on
        # by itself. Only one past its time (stuck, or stopped with SIGSTOP) or gone without a report
        # (killed) is helped by killing the process groups.
        if (waited and not listener.done()) or (listener.done() and status.others is None):
            _kill_without_supervisor(process.pid, status.shell)


def _kill_without_supervisor(supervisor: int, shell: int | None) -> None:
    """SIGKILL what a stuck or killed supervisor would have stopped, as far as it can still be found.

    While the supervisor lives (stuck, stopped), every descendant is still in its tree: they go first,
    then the supervisor. Once it is gone, its session still holds the shell and whatever did not start a
    session of its own; the shell's process group is killed too (where there is no ``/proc``).
    """
    for _ in range(50):
        found = supervise.descendants(supervisor) + supervise.session(supervisor)
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not found:
            break
    for group in (supervisor, shell):
        if group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)


class _Tail:
    """The last part of a stream, and how much came before it."""

    def __init__(self, chars: int) -> None:
        self.chars = chars
        # Bytes, not characters, are kept: four per character covers any UTF-8 text.
        self._keep = chars * 4
        self._data = bytearray()
        self.total = 0

    async def read(self, stream: asyncio.StreamReader) -> None:
        """Read until EOF, keeping only the tail."""
        while chunk := await stream.read(65536):
            self.total += len(chunk)
            self._data += chunk
            if len(self._data) > 2 * self._keep:
                del self._data[: len(self._data) - self._keep]

    def text(self) -> str:
        """The cleaned tail, cut on a line boundary, with a note when the front was left out."""
        text = clean(bytes(self._data).decode("utf-8", errors="replace"))
        cut = self.total > len(self._data) or len(text) > self.chars
        if len(text) > self.chars:
            text = text[-self.chars :]
            newline = text.find("\n")
            if 0 <= newline < self.chars // 2:
                text = text[newline + 1 :]
        if cut:
            text = f"[output cut: the last {len(text)} characters of {self.total} bytes are shown]\n{text}"
        return text.rstrip("\n")


def clean(text: str) -> str:
    """Output as it would read on a terminal, with nothing left that could drive one.

    Escape sequences go (colours, cursor moves, titles, clipboard writes, links; 7-bit and 8-bit),
    each carriage-return-redrawn line keeps its final state, ``x\\bx`` overstrikes keep the character,
    and any control character left is shown as a marker such as ``⟨U+0007⟩``.
    """
    text = strip_escapes(text).replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))
    if "\x08" in text:
        text = _overstrike(text)
    return mark_controls(text)


def _overstrike(text: str) -> str:
    """Backspaces applied as a terminal shows them: ``x\bx`` is ``x``, ``_\bx`` is ``x`` (linear time)."""
    out: list[str] = []
    for char in text:
        if char != "\x08":
            out.append(char)
        elif out and out[-1] != "\n":
            out.pop()
    return "".join(out)
