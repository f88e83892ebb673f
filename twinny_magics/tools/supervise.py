"""The supervisor a command runs under, so that nothing it starts outlives the call.

Run as a script, not imported by the package: ``python -I -S supervise.py COMMAND`` (only the standard
library). Killing a command's process group is not enough: ``setsid``, a double fork or
``os.setsid()`` puts a child in a session of its own, and once its parent exits it is re-parented to
init, out of reach. On Linux the supervisor makes itself a *child subreaper*
(``prctl(PR_SET_CHILD_SUBREAPER)``): every orphan among its descendants is re-parented to it instead of
init, so every process the command starts, however it detaches, stays in the supervisor's tree until the
supervisor ends it.

The protocol with the parent (``commands.run_command``):

- fd 0 is the *control* pipe: EOF on it (the parent closed it, or the parent died) means "stop now";
- fd 1 is the command's output (the supervisor keeps no copy of it open, so EOF there means every
  descendant has closed it);
- fd 2 is the *status* pipe, lines the parent reads: ``shell PID`` once the shell is spawned,
  ``exit CODE`` when the shell ends (a negative code is a signal), and last
  ``stopped OTHERS SHELL LEFT``: how many processes besides the shell were still running when told to
  stop (those they fork meanwhile are stopped too, not counted), whether the shell itself was (1/0),
  and how many could not be stopped (e.g. stuck in the kernel) when the supervisor gave up.

The shell runs in a process group of its own (so ``kill 0`` from the command does not hit the
supervisor), with stdin from ``/dev/null``, stderr joined to stdout, and SIGPIPE at its default. SIGTERM,
SIGHUP or SIGINT to the supervisor mean "stop now" as well. Stopping is SIGTERM (and SIGCONT, for a
stopped process) to every live descendant, up to :data:`TERM_GRACE` seconds for them to go, then SIGKILL
rounds until none is left: a process forked meanwhile is found in the next round, because it can only be
re-parented inside the tree.

Elsewhere (no ``prctl``, no ``/proc``: macOS) the supervisor falls back to the shell's process group,
which a ``setsid`` child escapes.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

PR_SET_CHILD_SUBREAPER = 36
#: Seconds between SIGTERM and SIGKILL.
TERM_GRACE = 0.5
#: Seconds of SIGKILL rounds before the supervisor gives up on what is left (uninterruptible sleep).
KILL_LIMIT = 2.0
ROUND_SECONDS = 0.01
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def subreaper() -> bool:
    """Make this process the child subreaper of its descendants; whether that worked."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def children(pid: int) -> list[int]:
    """The children of ``pid`` (from ``/proc/PID/task/*/children``, else a scan of ``/proc``)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as file:
                found += [int(child) for child in file.read().split()]
        except FileNotFoundError:
            # A kernel without CONFIG_PROC_CHILDREN (or the task just ended): scan once for the parent.
            if not os.path.exists(f"/proc/{pid}/task/{task}"):
                continue
            return [child for child, parent in _parents().items() if parent == pid]
        except (OSError, ValueError):
            continue
    return found


def _parents() -> dict[int, int]:
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = proc_stat(int(name))
            if stat is not None:
                parents[int(name)] = int(stat[1])
    return parents


def proc_stat(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name: state, ppid, pgrp, ... (None when gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read().decode("ascii", "replace")
    except OSError:
        return None
    return text.rsplit(")", 1)[-1].split()


def session(sid: int) -> list[int]:
    """Every live process in session ``sid`` (a scan of ``/proc``)."""
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if name.isdigit():
            stat = proc_stat(int(name))
            if stat is not None and stat[3] == str(sid) and stat[0] not in ("Z", "X"):
                found.append(int(name))
    return found


def descendants(root: int) -> list[int]:
    """Every live (not zombie) descendant of ``root``, parents before children."""
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children(stack.pop()):
            stat = proc_stat(child)
            if stat is None:
                continue
            if stat[0] not in ("Z", "X"):
                found.append(child)
            stack.append(child)  # a zombie's children are re-parented to us soon; look anyway
    return found


class Supervisor:
    """Spawns the shell, reaps, reports, and stops everything when told."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.me = os.getpid()
        self.shell = 0
        self.shell_done = False
        self.tracked = subreaper() and os.path.isdir(f"/proc/{self.me}")

    def say(self, line: str) -> None:
        try:  # noqa: SIM105 (no contextlib: every import is start-up time, per command)
            os.write(2, (line + "\n").encode())
        except OSError:
            pass

    def run(self) -> int:
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        for signum in (signal.SIGCHLD, *_STOP_SIGNALS):
            signal.signal(signum, lambda *_: None)  # the wakeup fd carries the signal's number
        devnull = os.open(os.devnull, os.O_RDWR)
        self.shell = os.posix_spawn(
            "/bin/sh",
            ["/bin/sh", "-c", self.command],
            os.environ,
            file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, 1, 2)],
            setpgroup=0,
            setsigmask=(),
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, *_STOP_SIGNALS),
        )
        os.dup2(devnull, 1)  # our copy of the output pipe: EOF there must mean the descendants are done
        self.say(f"shell {self.shell}")
        stop = False
        while not stop:
            self.reap()
            try:
                ready, _, _ = select.select([0, wake_read], [], [])
            except InterruptedError:
                continue
            if wake_read in ready:
                numbers = os.read(wake_read, 512)
                stop = any(number in numbers for number in _STOP_SIGNALS)
            if 0 in ready and not os.read(0, 512):
                stop = True
        self.stop()
        return 0

    def reap(self) -> None:
        """Collect every ended child; report the shell's end once."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.shell and not self.shell_done:
                self.shell_done = True
                self.say(f"exit {os.waitstatus_to_exitcode(status)}")

    def live(self) -> list[int]:
        if self.tracked:
            return descendants(self.me)
        return [self.shell] if not self.shell_done else []

    def signal_all(self, signum: int, pids: list[int]) -> None:
        for pid in pids:
            _signal(os.kill, pid, signum)
        if self.shell:
            _signal(os.killpg, self.shell, signum)

    def stop(self) -> None:
        """SIGTERM every live descendant, then SIGKILL rounds until none is left; report."""
        self.reap()
        first = self.live()
        shell_running = not self.shell_done
        others = {pid for pid in first if pid != self.shell}
        self.signal_all(signal.SIGTERM, first)
        self.signal_all(signal.SIGCONT, first)  # a stopped process gets its SIGTERM only once continued
        deadline = time.monotonic() + TERM_GRACE
        left = first
        while left and time.monotonic() < deadline:
            time.sleep(ROUND_SECONDS)
            self.reap()
            left = self.live()
        deadline = time.monotonic() + KILL_LIMIT
        while True:
            self.reap()
            left = self.live()
            self.signal_all(signal.SIGKILL, left)
            if not left or time.monotonic() > deadline:
                break
            time.sleep(ROUND_SECONDS)
        self.reap()
        self.say(f"stopped {len(others)} {int(shell_running)} {len(self.live())}")


def _signal(send: Callable[[int, int], None], target: int, signum: int) -> None:
    try:  # noqa: SIM105 (no contextlib, as above)
        send(target, signum)
    except (ProcessLookupError, PermissionError):
        pass  # gone already (or, for a group, empty)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: supervise.py COMMAND\n")
        return 2
    return Supervisor(argv[1]).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
