"""The embedded server started with --exit-with-parent ends when whatever started it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A parent that starts the server, says the server's pid once it is ready, then waits to be killed.
PARENT = """
import subprocess, sys, time
flags = sys.argv[1:]
server = subprocess.Popen(
    [sys.executable, "-m", "twinny_magics.servers.embedded", "--ctx", "512", "--threads", "1", *flags],
    stdout=subprocess.PIPE,
)
line = server.stdout.readline().decode()
print(server.pid, line.split()[0] if line else "none", flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (ended, not yet reaped by init) counts as ended.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))


def _server_after_parent_killed(*flags: str, wait: float) -> tuple[int, bool]:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, *flags], stdout=subprocess.PIPE, cwd=ROOT, start_new_session=True
    )
    assert parent.stdout is not None
    pid_text, ready = parent.stdout.readline().decode().split()
    assert ready == "ready"
    pid = int(pid_text)
    parent.kill()
    parent.wait()
    parent.stdout.close()
    deadline = time.monotonic() + wait
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return pid, _alive(pid)


def test_the_server_ends_when_its_parent_is_killed() -> None:
    _, alive = _server_after_parent_killed("--exit-with-parent", wait=15)
    assert not alive


def test_without_the_flag_the_server_outlives_its_parent() -> None:
    pid, alive = _server_after_parent_killed(wait=2)
    try:
        assert alive
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGTERM)
