"""run_command: a shell command in the workspace folder, as a real asyncio subprocess.

The command runs in its own session (``start_new_session=True``), so it and everything it starts share
one process group that can be stopped together: on timeout, when the awaiting task is cancelled (the
kernel's stop button), and when it finishes but left background processes holding its output. Nothing
a command starts outlives the call. A shell cannot be confined to the workspace; approval (``ask``) is
the guard, and ``off`` removes the tool.

Only the tail of the output is kept (that is where errors and test summaries are), with ANSI colour
codes and carriage-return progress bars removed: both cost a small model tokens and tell it nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from pathlib import Path

# After the command exits, its output may still be held open by a child it started in the background.
LINGER_SECONDS = 1.0
TERM_GRACE_SECONDS = 0.5
POLL_SECONDS = 0.05
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
# Non-interactive defaults: no pager waiting for a key, no colour, no password prompt.
_QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "NO_COLOR": "1", "GIT_TERMINAL_PROMPT": "0"}


async def run_command(command: str, cwd: Path, *, timeout: float, tail: int) -> tuple[str, bool]:
    """Run ``command`` with a shell in ``cwd``; the report the model reads and whether it failed."""
    process = await asyncio.create_subprocess_shell(
        command,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **_QUIET_ENV},
    )
    group = process.pid  # the session leader's pid is the group id
    buffer = _Tail(tail)
    assert process.stdout is not None
    reader = asyncio.ensure_future(buffer.read(process.stdout))
    waiter = asyncio.ensure_future(process.wait())
    loop = asyncio.get_running_loop()
    timed_out = False
    try:
        deadline = loop.time() + timeout
        exited_at: float | None = None
        # Poll the return code as well as awaiting wait(): on some Pythons wait() also waits for the
        # pipe, which a background child can hold open long after the command itself has finished.
        while True:
            now = loop.time()
            if process.returncode is not None:
                if reader.done():
                    break
                exited_at = exited_at or now
                if now - exited_at > LINGER_SECONDS:
                    break
            elif now > deadline:
                timed_out = True
                break
            pending = {task for task in (reader, waiter) if not task.done()}
            if not pending:
                break
            await asyncio.wait(pending, timeout=POLL_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        await stop_group(group)
        await asyncio.wait({reader, waiter}, timeout=2 * TERM_GRACE_SECONDS)
    except BaseException:
        # Cancelled (or anything else): the whole group goes before the exception travels on.
        await stop_group(group)
        with contextlib.suppress(BaseException):
            await asyncio.wait({waiter}, timeout=TERM_GRACE_SECONDS)
        raise
    finally:
        reader.cancel()
        waiter.cancel()
    code = process.returncode
    lines = [f"$ {command}"]
    output = buffer.text()
    if output:
        lines.append(output)
    if timed_out:
        lines.append(f"[timed out after {timeout:g} s; the command and its child processes were stopped]")
    else:
        lines.append(f"[exit code {code}]" if code is not None else "[exit code unknown]")
    return "\n".join(lines), timed_out or code != 0


async def stop_group(group: int) -> None:
    """SIGTERM the process group, give it a moment, then SIGKILL whatever is left."""
    try:
        os.killpg(group, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TERM_GRACE_SECONDS
        while loop.time() < deadline and _group_alive(group):
            await asyncio.sleep(POLL_SECONDS)
    finally:
        # Also reached when cancelled again while waiting: the kill must not be skipped.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


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
    """Output without colour codes, and with each carriage-return-redrawn line at its final state."""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))
