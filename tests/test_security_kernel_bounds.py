"""The kernel tools' time bounds hold against code that fights them.

``run_python``'s time limit, tried in a real kernel (ipykernel through jupyter_client) with a scripted
model: code that catches the first interrupt is stopped by a later one, code that takes SIGINT away is
stopped by an exception raised in the main thread, and code that swallows every interrupt ends the
reply within the limit and its graces — the model gets an error, the reply a notice that the kernel is
still busy — while the code runs on until the user ends it. In-process, with a serving thread standing
in for the main one: no more code runs while such code does, and the history shows what it did once it
ends.

``inspect_variable`` and ``describe``, in-process: objects whose repr, ``__class__``, metaclass or
library lookalike never return are shown by type and size within the bound, and the tool says their
code may still be running; reprs left running are capped, so repeated calls cannot pile up threads.
"""

from __future__ import annotations

import asyncio
import collections
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from live_kernel import Kernel, python3_kernelspec, shown

from twinny_magics import cells
from twinny_magics.errors import WorkspaceError
from twinny_magics.tools.kernel import Kernel as KernelTools
from twinny_magics.tools.kernel import MainThread, bounded, inspection
from twinny_magics.tools.kernel.inspection import describe
from twinny_magics.tools.kernel.run import run_code

#: Catches the time limit's first interrupt, then spins (an ``except KeyboardInterrupt`` that "cleans
#: up" for ever).
CATCHES_ONE = (
    "started = 1\n"
    "import time\n"
    "try:\n"
    "    time.sleep(60)\n"
    "except KeyboardInterrupt:\n"
    "    while True:\n"
    "        pass\n"
)
#: Takes SIGINT away, then spins: no signal can reach it.
IGNORES_SIGINT = (
    "started = 1\nimport signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n"
)
#: Swallows every interrupt until the test creates ``release``.
SWALLOWS_ALL = (
    "started = 1\n"
    "import os, time\n"
    "while not os.path.exists('release'):\n"
    "    try:\n"
    "        while not os.path.exists('release'):\n"
    "            time.sleep(0.01)\n"
    "    except BaseException:\n"
    "        pass\n"
    "ended = 1\n"
)
#: The limit and the grace the kernel tests set, and the most a reply may take past them.
SECONDS, GRACE, SLACK = 1.0, 0.5, 8.0


# --- run_python in a real kernel ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def kernelspec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with python3_kernelspec(tmp_path_factory.mktemp("jupyter")) as root:
        yield root


@pytest.fixture
def kernel(kernelspec: Path, tmp_path: Path) -> Iterator[Kernel]:
    running = Kernel(tmp_path)
    running.run("%load_ext twinny_magics")
    yield running
    (tmp_path / "release").touch()  # a test that failed may have left SWALLOWS_ALL running
    running.stop()


def session(running: Kernel, code: str) -> None:
    """An Agent over a scripted model that runs ``code`` with run_python and then answers; adopted,
    with the test's limit and grace."""
    running.run(
        "from pathlib import Path\n"
        "from twinny_magics import Agent, ToolCall\n"
        "from twinny_magics.servers.scripted import Scripted, ScriptedServer\n"
        f"_call = Scripted(calls=(ToolCall('run_python', {{'code': {code!r}}}),))\n"
        "_server = ScriptedServer([_call, 'The answer.', 'The answer.'])\n"
        "_s = Agent(server=_server, workspace=Path.cwd(), shell=get_ipython(), kernel='allow', "
        f"kernel_seconds={SECONDS})\n"
        f"_s.kernel.grace = {GRACE}\n"
        "%agent use _s"
    )


def results(running: Kernel) -> list[list[Any]]:
    """The last reply's tool results: ``[name, output, is_error]`` each."""
    return list(
        running.value(
            "[[r.call.name, r.output, r.is_error] for st in _s.replies[-1].steps for r in st.results]"
        )
    )


def sigint_handler(running: Kernel) -> str:
    return str(running.value("str(__import__('signal').getsignal(__import__('signal').SIGINT))"))


@pytest.mark.notebook
@pytest.mark.parametrize(
    ("code", "interrupts"),
    [(CATCHES_ONE, "it went on after the first"), (IGNORES_SIGINT, "it went on after the first")],
    ids=["catches-the-first-interrupt", "ignores-sigint"],
)
def test_code_that_outlasts_the_first_interrupt_is_stopped_by_the_next_and_the_kernel_goes_on(
    kernel: Kernel, code: str, interrupts: str
) -> None:
    handler = sigint_handler(kernel)
    session(kernel, code)
    started = time.monotonic()
    kernel.run("%%agent\nRun it.", timeout=SECONDS + 2 * GRACE + SLACK)
    took = time.monotonic() - started
    [(name, text, is_error)] = results(kernel)
    assert (name, is_error) == ("run_python", True)
    assert f"stopped: the time limit ({SECONDS:g} s) interrupted it" in text
    assert interrupts in text
    assert "still running" not in text
    # Stopped within the limit and its graces, not after them.
    assert took < SECONDS + 2 * GRACE + SLACK
    assert kernel.value("_s.replies[-1].stopped") == "settled"
    assert kernel.value("started") == 1
    assert kernel.value("2 + 2") == 4
    # The kernel's own SIGINT handler is back (the code's SIG_IGN did not stay).
    assert sigint_handler(kernel) == handler


@pytest.mark.notebook
def test_plain_slow_code_is_stopped_by_the_first_interrupt_as_before(kernel: Kernel) -> None:
    session(kernel, "started = 1\nimport time\ntime.sleep(60)")
    kernel.run("%%agent\nRun it.", timeout=SECONDS + SLACK)
    [(_, text, is_error)] = results(kernel)
    assert is_error
    assert f"stopped: the time limit ({SECONDS:g} s) interrupted it\n" in text + "\n"
    assert "interrupts" not in text
    assert kernel.value("started") == 1


@pytest.mark.notebook
def test_code_that_swallows_every_interrupt_ends_the_reply_with_a_notice_and_runs_on(
    kernel: Kernel, tmp_path: Path
) -> None:
    session(kernel, SWALLOWS_ALL)
    msg_id = kernel.client.execute("%%agent\nRun it.")
    messages: list[dict[str, Any]] = []
    started = time.monotonic()
    deadline = started + SECONDS + 2 * GRACE + SLACK
    try:
        # The reply ends (the model's answer shown) while the code still runs: the cell stays busy.
        while not ("interrupt the kernel (■)" in shown(messages) and "The answer." in shown(messages)):
            left = deadline - time.monotonic()
            assert left > 0, "the reply waited on the code: " + shown(messages)[-500:]
            message = kernel.client.get_iopub_msg(timeout=left)
            if message["parent_header"].get("msg_id") == msg_id:
                messages.append(message)
                assert message["content"].get("execution_state") != "idle", "the cell ended"
        took = time.monotonic() - started
    finally:
        (tmp_path / "release").touch()
    text = shown(messages)
    assert "is still running in the kernel" in text
    assert "restart the kernel" in text
    # It was given the limit and both graces before the reply stopped waiting.
    assert SECONDS + 2 * GRACE <= took < SECONDS + 2 * GRACE + SLACK
    # Released, the code ends and so does the cell; the kernel answers.
    while not (messages[-1]["msg_type"] == "status" and messages[-1]["content"]["execution_state"] == "idle"):
        message = kernel.client.get_iopub_msg(timeout=SLACK)
        if message["parent_header"].get("msg_id") == msg_id:
            messages.append(message)
    assert kernel.value("ended") == 1
    [(name, result, is_error)] = results(kernel)
    assert (name, is_error) == ("run_python", True)
    assert "It is still running in the kernel" in result
    assert "no more code can run in this reply" in result
    notices = kernel.value("[n.text for n in _s.replies[-1].notices]")
    assert any("is still running in the kernel" in notice for notice in notices)
    assert kernel.value("_s.replies[-1].stopped") == "settled"
    # The history shows what the code did once it ended, not that it is still running.
    [run] = kernel.value(
        "[__import__('twinny_magics.cells').cells.cell_text(r) "
        "for r in _s.kernel.log.records if r.number is None]"
    )
    assert "after the reply had stopped waiting for it" in run
    assert "still running" not in run
    assert kernel.value("3 + 3") == 6


# --- run_python in-process: a serving thread in place of the kernel's main thread ----------------------


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    yield ip
    log = getattr(ip, "_twinny_cell_log", None)
    if log is not None:
        log.uninstall()
    InteractiveShell.clear_instance()


@pytest.fixture
def serving() -> Iterator[MainThread]:
    """A MainThread served by a thread of its own (the kernel's main thread, waiting on a reply)."""
    main, done = MainThread(), threading.Event()
    thread = threading.Thread(target=main.serve, args=(done,), daemon=True)
    thread.start()
    yield main
    done.set()
    thread.join(10)


def on_worker(tools: KernelTools, code: str) -> Any:
    """``tools.run(code)`` from a thread of its own, as the reply runs it (the test's thread is not the
    serving one: on the process's main thread, ``submit`` would run the code right there)."""
    box: list[Any] = []

    def work() -> None:
        try:
            box.append(asyncio.run(tools.run(code)))
        except BaseException as exc:
            box.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(20)
    assert box, "the run did not return"
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def test_while_abandoned_code_runs_no_more_code_runs_and_the_history_catches_up(
    shell: InteractiveShell, serving: MainThread
) -> None:
    release = threading.Event()
    shell.user_ns["release"] = release
    tools = KernelTools(shell, seconds=0.3, main=serving)
    tools.grace = 0.2
    swallows = (
        "while not release.is_set():\n"
        "    try:\n"
        "        while not release.is_set():\n"
        "            pass\n"
        "    except BaseException:\n"
        "        pass\n"
        "ended = 1\n"
    )
    try:
        started = time.monotonic()
        outcome = on_worker(tools, swallows)
        took = time.monotonic() - started
        assert outcome.still_running
        assert outcome.failed
        assert outcome.timed_out
        assert 0.7 <= took < 5
        assert "is still running in the kernel" in outcome.notice
        assert "agent run 1" in outcome.notice
        # A second run is refused at once: it would wait behind the first for ever.
        with pytest.raises(WorkspaceError, match="still running the code of an earlier run_python call"):
            on_worker(tools, "x = 1")
        assert "x" not in shell.user_ns
        assert "still running" in cells.history_text(tools.log.records)
    finally:
        release.set()
    for _ in range(100):
        if serving.running is None:
            break
        time.sleep(0.05)
    assert shell.user_ns["ended"] == 1
    history = cells.history_text(tools.log.records)
    assert "after the reply had stopped waiting for it" in history
    assert "It is still running" not in history
    assert on_worker(tools, "x = 1").failed is False  # the kernel takes code again
    assert shell.user_ns["x"] == 1


def test_an_interrupt_never_lands_in_the_kernels_own_code_before_or_after_the_code(
    shell: InteractiveShell,
) -> None:
    """Code that ends just as the interrupts come — catching them, or with SIGINT taken away so that
    the exception raised in the main thread is the way in: every run returns an outcome (no interrupt
    escapes run_code or lands as it starts), the SIGINT handler is the one before, and none comes later."""
    catches = "import time\ntry:\n    time.sleep({x})\nexcept KeyboardInterrupt:\n    pass\n"
    ignores = (
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nt = time.monotonic()\n"
        "while time.monotonic() - t < {x}:\n    pass\n"
    )
    before = signal.getsignal(signal.SIGINT)
    for n in range(60):
        code = (catches if n % 2 else ignores).format(x=0.01 + (n % 7) * 0.004)
        outcome = run_code(shell, code, 0.005 + (n % 5) * 0.004, n, grace=0.01)
        assert not outcome.record.error, outcome.record.error
        assert signal.getsignal(signal.SIGINT) is before
    time.sleep(0.3)  # an interrupt still on its way would be raised here


# --- inspect_variable: hostile objects ------------------------------------------------------------------


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded, "REPR_SECONDS", 0.3)
    monkeypatch.setattr(inspection, "REPR_SECONDS", 0.3)


@pytest.fixture
def hold() -> Iterator[threading.Event]:
    """Released at the end of the test: hostile code waits on it instead of for ever."""
    release = threading.Event()
    yield release
    release.set()


def lying_class(release: threading.Event) -> property:
    def klass(self: object) -> type:
        release.wait(20)
        return int

    return property(klass)


def bounded_time(call: Any, *args: Any) -> tuple[Any, float]:
    started = time.monotonic()
    value = call(*args)
    return value, time.monotonic() - started


def test_a_repr_that_never_returns_is_reported_by_type_and_left_running(
    quick: None, hold: threading.Event
) -> None:
    class Hangs:
        def __repr__(self) -> str:
            hold.wait(20)
            return "never seen"

    out, took = bounded_time(describe, Hangs(), "h")
    assert took < 2
    assert out.splitlines()[0].startswith(f"h: {__name__}.")
    assert "the repr of h took too long (over 0.3 s)" in out
    assert "shown by type" in out
    assert "may still be running in the background" in out


@pytest.mark.parametrize("base", [bytearray, dict])
def test_a_lying_class_attribute_cannot_hold_up_the_description(
    quick: None, hold: threading.Event, base: type
) -> None:
    """``isinstance`` asks an object's ``__class__`` when its type is not the class: a property there is
    the user's code, run outside any bound before."""
    kind = type(f"Lying{base.__name__}", (base,), {"__class__": lying_class(hold)})
    value = kind()
    out, took = bounded_time(describe, value, "v")
    assert took < 2, out
    assert out.startswith(f"v: {__name__}.Lying{base.__name__}")
    assert "0 keys" in out or "0 bytes" in out


def test_a_metaclass_that_lies_about_its_name_cannot_hold_up_the_description(
    quick: None, hold: threading.Event
) -> None:
    def slow(cls: type) -> str:
        hold.wait(20)
        return "slow"

    meta = type("Meta", (type,), {"__module__": property(slow)})
    made = meta("Made", (), {})
    for value, name in ((made(), "obj"), (made, "cls"), ([made()], "items")):
        out, took = bounded_time(describe, value, name)
        assert took < 2, (name, out)
        assert out.startswith(f"{name}: ")


def test_a_module_lookalike_that_hangs_on_any_attribute_cannot_hold_up_the_description(
    quick: None, hold: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lazy module in ``sys.modules`` (a proxy that imports on first attribute) is the user's code too."""

    class Lazy(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            hold.wait(20)
            raise AttributeError(name)

    monkeypatch.setitem(sys.modules, "polars", Lazy("polars"))
    out, took = bounded_time(describe, object(), "o")
    assert took < 2, out
    assert out.splitlines()[0] == "o: object"
    assert out.splitlines()[1].startswith("repr: <object object at")


def test_a_library_subclass_whose_len_never_returns_is_shown_by_type_within_the_bound(
    quick: None, hold: threading.Event
) -> None:
    """pandas' own code runs on its objects outside the repr bound; a subclass's ``__len__`` is then
    the user's code: the description as a whole is bounded too."""
    pd = pytest.importorskip("pandas")

    class Endless(pd.Series):  # type: ignore[misc]
        def __len__(self) -> int:
            hold.wait(20)
            return 0

    out, took = bounded_time(describe, Endless([1, 2, 3]), "e")
    assert took < 2.5, out  # the 0.3 s bound, the description's 1 s more, and slack
    assert out.startswith(f"e: {__name__}.")
    assert "shown by type and size only" in out
    assert "may still be running in the background" in out


def test_a_series_named_by_a_lying_object_cannot_hold_up_the_description(
    quick: None, hold: threading.Event
) -> None:
    pd = pytest.importorskip("pandas")

    class Name:
        __class__ = lying_class(hold)  # type: ignore[assignment]

        def __hash__(self) -> int:
            return 1

    series = pd.Series([1, 2, 3], name=Name())
    out, took = bounded_time(describe, series, "s")
    assert took < 2, out
    assert out.startswith("s: pandas.Series")


def test_a_repr_that_returns_a_huge_or_hostile_string_is_cut(quick: None) -> None:
    class Huge:
        def __repr__(self) -> str:
            return "y" * 50_000_000

    class Sly(str):
        def __getitem__(self, key: Any) -> str:
            raise RuntimeError("sliced")

        def __str__(self) -> str:
            raise RuntimeError("str")

    class Odd:
        def __repr__(self) -> str:
            return Sly("odd")

    out = describe(Huge(), "h")
    assert len(out) < inspection.INSPECT_CHARS
    assert "yyyy" in out
    assert describe(Odd(), "o").splitlines()[1].startswith("repr: ")


def test_reprs_left_running_are_capped_so_calls_cannot_pile_up_threads(
    quick: None, hold: threading.Event
) -> None:
    runs: list[threading.Thread] = []

    class Spins:
        def __repr__(self) -> str:
            runs.append(threading.current_thread())
            while not hold.is_set():
                try:
                    while not hold.is_set():
                        pass
                except BaseException:  # swallows the stop the bound sends
                    pass
            return "spun"

    for _ in range(100):  # the threads earlier tests left running have been released: let them end
        if bounded.still_left() == 0:
            break
        time.sleep(0.05)
    outs = [describe(Spins(), f"s{n}") for n in range(bounded.LEFT_RUNNING + 3)]
    assert len(runs) == bounded.LEFT_RUNNING
    assert "still running in the background" in outs[-1]
    assert "was not run" in outs[-1]
    hold.set()
    for thread in runs:
        thread.join(5)
    # Once they end, user code runs again.
    assert "spun" in describe(Spins(), "again")


def test_a_container_of_hostile_items_keeps_its_length_and_types(quick: None, hold: threading.Event) -> None:
    class Hangs:
        def __repr__(self) -> str:
            hold.wait(20)
            return "late"

    out, took = bounded_time(describe, collections.deque([Hangs(), Hangs()]), "d")
    assert took < 2
    assert out.startswith("d: collections.deque, 2 items")
    assert "may still be running in the background" in out
