"""Security issue 17, bounded work: grep's regexes, one bad file, and read_file's size.

Each test tries the attack for real:

- A catastrophic regex. Python's ``re`` holds the GIL for the whole match and cannot be stopped: ``(a+)+$``
  on a 40-character line takes about a day, the kernel froze and its stop button waited for the match.
  grep now runs on the ``regex`` engine (the same syntax) with a time bound per file and per call, on a
  worker thread, and a cancelled reply stops it: the model hears "the pattern took too long" within
  about a second, and the matches found meanwhile are kept.
- One bad file (a malformed or deeply nested notebook, an unreadable file, a file that vanishes during
  the walk) is named in a note and never fails the search.
- read_file reads at most a few MB of a file, a line at a time in pieces, so a text head with a 300 MB
  tail (NUL or not) costs no more memory than the lines shown.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.events import Reply
from twinny_magics.servers.scripted import Scripted, ScriptedServer
from twinny_magics.tools import ToolLimits, ToolOutput, Workspace, files
from twinny_magics.tools import grep as grep_tool
from twinny_magics.tools.paths import Confinement

# Catastrophic for Python's re (exponential backtracking). The `regex` engine answers the issue's three
# at once (it recognises these shapes); `(a|aa)+$` is catastrophic for it too, so it tries the bounds.
ISSUE_PATTERNS = [r"(a+)+$", r"^(\w+\s?)+$", r"(x+x+)+y"]
SLOW_PATTERN = r"(a|aa)+$"
SLOW_LINE = "a" * 40 + "!"
#: How long a pathological grep may take before the model hears back: "about a second", with room for
#: two shared cores and the regex engine's timeout granularity (a 0.3 s bound overshoots to ~0.45 s).
ANSWER_WITHIN = 2.0


async def call(ws: Workspace, name: str, **arguments: object) -> ToolOutput:
    return await ws.run(ToolCall(name, dict(arguments)))


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A workspace whose files make the patterns above backtrack, with ordinary matches around them."""
    (tmp_path / "a_first.txt").write_text("aa\nimport os\n")
    for n in range(5):
        (tmp_path / f"slow{n}.txt").write_text(f"x\n{SLOW_LINE}\nword {n}\n")
    (tmp_path / "words.txt").write_text("word " * 12 + "!\n" + "x" * 40 + "\n")
    (tmp_path / "z_last.py").write_text("import sys\n")
    return tmp_path


# --- 1. catastrophic patterns ---------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ISSUE_PATTERNS)
async def test_the_issues_catastrophic_patterns_return_at_once_with_every_match(
    hostile: Path, pattern: str
) -> None:
    started = time.monotonic()
    out = await call(Workspace(hostile), "grep", pattern=pattern)
    assert time.monotonic() - started < 1.0, out.text
    assert not out.is_error
    assert "too long" not in out.text
    expected = _reference(hostile, pattern)
    assert sorted(_rows(out.text)) == sorted(expected)


async def test_a_pattern_catastrophic_for_every_engine_answers_within_about_a_second(hostile: Path) -> None:
    """Two files hit the per-file bound: the search stops and says why; what it found is kept."""
    started = time.monotonic()
    out = await call(Workspace(hostile), "grep", pattern=SLOW_PATTERN)
    took = time.monotonic() - started
    assert took < ANSWER_WITHIN, took
    assert "the pattern took too long" in out.text
    assert "Use a simpler one, e.g. a plain word" in out.text
    assert "slow0.txt, slow1.txt" in out.text  # the two files that were too slow, named
    assert "a_first.txt:1: aa" in out.text  # found before the stop: kept
    print(f"{SLOW_PATTERN} over 5 hostile files: answered in {took:.2f} s")


async def test_one_slow_file_is_left_and_the_search_goes_on(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("aa\n")
    (tmp_path / "m_slow.txt").write_text(f"{SLOW_LINE}\n")
    (tmp_path / "z.txt").write_text("aaaa\n")
    out = await call(Workspace(tmp_path), "grep", pattern=SLOW_PATTERN)
    assert _rows(out.text) == [("a.txt", 1, "aa"), ("z.txt", 1, "aaaa")]
    assert "took too long in m_slow.txt" in out.text
    assert "search was stopped" not in out.text


async def test_the_event_loop_keeps_running_while_a_pattern_is_slow(hostile: Path) -> None:
    """The reply's loop (and so the stop button's cancel) is never held: `re` held the GIL throughout."""
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    started = time.monotonic()
    await call(Workspace(hostile), "grep", pattern=SLOW_PATTERN)
    took = time.monotonic() - started
    ticker.cancel()
    assert took > 0.5  # it did backtrack for a while…
    assert ticks > took / 0.01 * 0.3, (ticks, took)  # …and the loop ticked on meanwhile


async def test_a_cancelled_grep_returns_at_once_and_its_search_ends(hostile: Path) -> None:
    before = threading.active_count()
    task = asyncio.create_task(call(Workspace(hostile), "grep", pattern=SLOW_PATTERN))
    await asyncio.sleep(0.15)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - cancelled_at < 0.1
    # The worker thread stops at its next check: within one bounded search (0.3 s, plus overshoot).
    deadline = time.monotonic() + 1.5
    while _grep_running() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert not _grep_running()
    assert threading.active_count() <= before + 1  # the executor's idle thread at most


def test_the_stop_button_during_a_slow_grep_gives_control_back_within_a_second(hostile: Path) -> None:
    """As in a notebook: `Agent.run` inside a running loop, SIGINT to the main thread mid-grep."""
    many = hostile / "many"
    many.mkdir()
    for n in range(40):
        (many / f"s{n:02}.txt").write_text(f"{SLOW_LINE}\n")
    server = ScriptedServer(
        [Scripted("", (ToolCall("grep", {"pattern": SLOW_PATTERN, "path": "many"}, id="g"),)), "Done."]
    )
    agent = Agent(server=server, tools=Workspace(hostile))
    timer = threading.Timer(
        0.4, lambda: signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
    )
    sent = time.monotonic() + 0.4

    async def cell() -> Reply | KeyboardInterrupt:
        try:
            return agent.run("Find the a's.")
        except KeyboardInterrupt as stopped:
            return stopped

    loop = asyncio.new_event_loop()
    timer.start()
    try:
        outcome = loop.run_until_complete(cell())
    finally:
        timer.cancel()
        loop.close()
    returned = time.monotonic()
    assert isinstance(outcome, KeyboardInterrupt)
    assert returned - sent < 1.0, returned - sent
    assert agent.replies[-1].stopped == "stopped"


async def test_patterns_with_lookarounds_are_searched_line_by_line_under_the_same_bound(
    hostile: Path,
) -> None:
    started = time.monotonic()
    out = await call(Workspace(hostile), "grep", pattern=r"(?=a)(a|aa)+$")
    assert time.monotonic() - started < ANSWER_WITHIN
    assert "the pattern took too long" in out.text
    assert "a_first.txt:1: aa" in out.text


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("(a{1000}){1000}", "counted repeats are too large"),
        ("((a{100}){100}){100}", "counted repeats are too large"),
        ("(" * 400 + "a" + ")" * 400, "not a valid regular expression"),
        ("a" * 1001, "grep takes at most 1,000"),
        ("main(", "missing ), unterminated subpattern"),
    ],
)
async def test_patterns_that_would_cost_before_matching_are_refused_with_a_reason(
    tmp_path: Path, pattern: str, expected: str
) -> None:
    """`regex` writes out counted repeats as it compiles ((a{1000}){1000}: 0.4 s and 290 MB)."""
    (tmp_path / "a.txt").write_text("a\n")
    tracemalloc.start()
    started = time.monotonic()
    out = await call(Workspace(tmp_path), "grep", pattern=pattern)
    took = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert out.is_error
    assert expected in out.text
    assert "unexpectedly" not in out.text
    assert took < 0.5
    assert peak < 20_000_000


def test_whole_file_search_finds_exactly_the_lines_a_per_line_search_finds() -> None:
    """The fast path (search the file, then check each hit's line alone) against per-line `re`."""

    @settings(max_examples=1000, deadline=None)
    @given(
        st.lists(st.text(alphabet="ab \t:#(x\\", max_size=12), max_size=12).map("\n".join),
        st.sampled_from(
            [
                r"a",
                r"^a",
                r"a$",
                r"^$",
                r"a\s+b",
                r"\s",
                r"[^a]+$",
                r"b.*a",
                r"(?s)a.b",
                r"\bab\b",
                r"\Bb",
                r"x*",
                r"a|b$",
                r"(a)\1",
                r"[\s:]+x",
                r"(?m)^b",
                r"\W$",
                r"(?<!a)b",
                r"a(?=\s)",
                r"a\Z",
                r"\Ab",
            ]
        ),
    )
    def same(text: str, pattern: str) -> None:
        search = grep_tool._Search(pattern, None, 5.0)
        got = [(n, line, found.group(0)) for n, line, found in search.matches(text, 5.0)]
        body = text[:-1] if text.endswith("\n") else text
        lines = body.split("\n") if text else []  # "" has no line; "\n" has one, empty
        found = [(n, line, re.search(pattern, line)) for n, line in enumerate(lines, start=1)]
        want = [(n, line, m.group(0)) for n, line, m in found if m is not None]
        assert got == want, (text, pattern)

    same()


async def test_ordinary_grep_over_a_real_tree_finds_what_per_line_re_finds() -> None:
    """The installed IPython package: the same lines as a per-line `re` search, and about as fast."""
    import IPython

    tree = Path(IPython.__file__).parent
    limits = ToolLimits(grep_matches=100_000, grep_per_file=100_000)
    conf = Confinement(tree)
    for pattern in (r"def \w+\(", r"(?i)todo|fixme", r"^class [A-Z]"):
        started = time.monotonic()
        out = await asyncio.to_thread(grep_tool.grep, conf, limits, pattern, None)
        took = time.monotonic() - started
        want = _reference(tree, pattern)
        assert len(_rows(out)) == len(want), pattern
        assert took < 2.0, (pattern, took)


# --- 2. one bad file ------------------------------------------------------------------------------


def _notebook(cells: object) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


BAD_NOTEBOOKS = {
    "deep.ipynb": "[" * 100_000 + "]" * 100_000,
    "outputs.ipynb": _notebook([{"cell_type": "code", "source": "import x", "outputs": 5}]),
    "fields.ipynb": _notebook(
        [
            {"cell_type": {"a": 1}, "source": [1, None, "import y"], "execution_count": True},
            {"cell_type": "code", "source": "z", "outputs": [{"output_type": "stream", "name": [1]}]},
            {"cell_type": "code", "source": "", "outputs": [{"output_type": "error", "evalue": {"x": 1}}]},
            "not a cell",
        ]
    ),
    "truncated.ipynb": _notebook([{"cell_type": "code", "source": "import t"}])[:30],
    "nul.ipynb": '{"cells": [\x00\x00]}',
    "list.ipynb": "[1, 2, 3]",
}


@pytest.fixture
def bad_notebooks(tmp_path: Path) -> Path:
    for name, content in BAD_NOTEBOOKS.items():
        (tmp_path / name).write_text(content)
    (tmp_path / "good.py").write_text("import os\n")
    (tmp_path / "good.ipynb").write_text(_notebook([{"cell_type": "code", "source": "import json"}]))
    return tmp_path


async def test_malformed_notebooks_never_fail_a_workspace_grep(bad_notebooks: Path) -> None:
    out = await call(Workspace(bad_notebooks), "grep", pattern="import")
    assert not out.is_error, out.text
    assert "good.py:1: import os" in out.text
    assert "good.ipynb:2: import json" in out.text
    assert "fields.ipynb:2: import y" in out.text  # fields of the wrong type are read past
    assert (
        "[4 file(s) could not be searched: deep.ipynb (not a valid notebook), list.ipynb (not a valid "
        "notebook), nul.ipynb (not a valid notebook) and 1 more.]"
    ) in out.text


@pytest.mark.parametrize("name", sorted(BAD_NOTEBOOKS))
async def test_read_file_of_a_malformed_notebook_says_so_cleanly(bad_notebooks: Path, name: str) -> None:
    out = await call(Workspace(bad_notebooks), "read_file", path=name)
    assert "unexpectedly" not in out.text
    assert out.is_error == (name not in {"outputs.ipynb", "fields.ipynb"}), out.text
    if out.is_error:
        assert f"{name} is not a valid notebook" in out.text


async def test_a_notebook_over_the_size_cap_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    big = tmp_path / "big.ipynb"
    big.write_text('{"cells": []}')
    os.truncate(big, 40 * 1024 * 1024)  # sparse: no disk used
    tracemalloc.start()
    out = await call(Workspace(tmp_path), "read_file", path="big.ipynb")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert out.is_error
    assert "too large to show as cells" in out.text
    assert peak < 1_000_000  # refused by its size: not read, not parsed


async def test_a_file_that_vanishes_mid_walk_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(f"needle in {name}\n")
    walk = Confinement.walk

    def vanishing(self: Confinement, *args: Any, **kwargs: Any) -> Iterator[Any]:
        for entry in walk(self, *args, **kwargs):
            if entry.rel == "b.txt":
                entry.real.unlink()  # listed, then gone before it is read
            yield entry

    class Walked(list[Any]):
        truncated = False

    monkeypatch.setattr(Confinement, "walk", lambda *a, **k: Walked(vanishing(*a, **k)))
    out = await call(Workspace(tmp_path), "grep", pattern="needle")
    assert not out.is_error
    assert _rows(out.text) == [("a.txt", 1, "needle in a.txt"), ("c.txt", 1, "needle in c.txt")]


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (PermissionError(13, "Permission denied"), "b.txt (permission denied)"),
        (FileNotFoundError(2, "No such file or directory"), "b.txt (it vanished)"),  # between check and open
        (IsADirectoryError(21, "Is a directory"), "b.txt (is a directory)"),
    ],
)
async def test_a_file_that_cannot_be_opened_is_named_and_the_search_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, said: str
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(f"needle in {name}\n")
    opened = grep_tool.open_file

    def guarded(file: Any) -> Any:
        if file.rel == "b.txt":
            raise error  # as root, chmod 000 would not stop a read
        return opened(file)

    monkeypatch.setattr(grep_tool, "open_file", guarded)
    out = await call(Workspace(tmp_path), "grep", pattern="needle")
    assert _rows(out.text) == [("a.txt", 1, "needle in a.txt"), ("c.txt", 1, "needle in c.txt")]
    assert f"[1 file(s) could not be searched: {said}.]" in out.text


async def test_a_bug_on_one_file_is_named_and_the_search_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(f"needle in {name}\n")
    real = grep_tool._grep_text

    def broken(entry: object, limits: ToolLimits) -> str | None:
        if getattr(entry, "rel", "") == "a.txt":
            raise KeyError("surprise")
        return real(entry, limits)  # type: ignore[arg-type]

    monkeypatch.setattr(grep_tool, "_grep_text", broken)
    out = await call(Workspace(tmp_path), "grep", pattern="needle")
    assert _rows(out.text) == [("b.txt", 1, "needle in b.txt")]
    assert "a.txt (KeyError)" in out.text


async def test_grep_searches_a_file_only_up_to_where_it_turns_binary(tmp_path: Path) -> None:
    (tmp_path / "mixed.txt").write_bytes(b"needle 1\n" + b"x\n" * 5000 + b"\x00\x00needle 2\n")
    out = await call(Workspace(tmp_path), "grep", pattern="needle")
    assert _rows(out.text) == [("mixed.txt", 1, "needle 1")]


# --- 3. read_file's size cap ----------------------------------------------------------------------

HEAD = "".join(f"line {n}: some text\n" for n in range(1, 1001))  # ~20 KB: past the binary sniff


@pytest.fixture
def big_files(tmp_path: Path) -> Iterator[Path]:
    nul = tmp_path / "nul_tail.txt"
    nul.write_text(HEAD)
    os.truncate(nul, 300 * 1024 * 1024)  # a 300 MB NUL tail, sparse
    long = tmp_path / "long_line.txt"
    with long.open("w") as out:
        out.write(HEAD)
        for _ in range(64):
            out.write("x" * (1024 * 1024))  # a 64 MB line, no NUL
    yield tmp_path
    nul.unlink()
    long.unlink()


@pytest.mark.parametrize("name", ["nul_tail.txt", "long_line.txt"])
async def test_read_file_holds_only_what_it_shows_of_a_huge_file(big_files: Path, name: str) -> None:
    """Before: the tail was read as one line (300 MB → +600 MB of memory, 2 GB → MemoryError)."""
    ws = Workspace(big_files)
    tracemalloc.start()
    started = time.monotonic()
    first = await call(ws, "read_file", path=name)
    last = await call(ws, "read_file", path=name, start_line=990)
    took = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5_000_000, peak
    assert took < 5.0
    lines = "1000+" if name == "nul_tail.txt" else "1001+"  # the long line is line 1001, read in part
    assert first.text.startswith(f"{name}, lines 1–150 of {lines}")
    assert "\n150: line 150: some text" in first.text
    assert "1000: line 1000: some text" in last.text
    if name == "nul_tail.txt":
        assert "turns binary at line 1001 (NUL bytes)" in last.text
    else:
        assert "1001: xxxx" in last.text  # the long line: its head…
        assert "…[+" in last.text  # …and how much was left out
        assert "reads the first 8 MB of a file and long_line.txt is longer" in last.text
    print(f"read_file {name} twice: peak {peak / 1e6:.2f} MB traced, {took:.2f} s")


async def test_read_file_past_what_it_reads_says_how_to_see_later_parts(big_files: Path) -> None:
    out = await call(Workspace(big_files), "read_file", path="long_line.txt", start_line=5000)
    assert out.is_error
    assert "past the 1001 lines read_file reads of long_line.txt" in out.text
    assert "tail -n 50" in out.text


async def test_grep_over_the_huge_files_passes_them_over_and_says_so(big_files: Path) -> None:
    (big_files / "small.txt").write_text("line 7: here\n")
    tracemalloc.start()
    out = await call(Workspace(big_files), "grep", pattern="line 7:")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert _rows(out.text) == [("small.txt", 1, "line 7: here")]
    assert "2 file(s) over 4.8 MB were not searched" in out.text
    assert peak < 5_000_000


async def test_a_long_line_in_an_ordinary_file_is_cut_with_its_length(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("a" * 300_000 + "\nb\n")
    out = await call(Workspace(tmp_path), "read_file", path="min.js")
    assert out.text.splitlines()[1] == "1: " + "a" * 200 + " …[+299800 chars]"
    assert out.text.splitlines()[2] == "2: b"


def test_text_lines_reads_no_further_than_its_budget(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("abc\n" * 1000)
    target = Confinement(tmp_path).resolve("f.txt")
    lines = files.TextLines(target, keep=10, budget=400)
    got = list(lines)
    assert got[0] == ("abc", 3)
    assert len(got) == 100
    assert lines.truncated


# --- helpers --------------------------------------------------------------------------------------


def _grep_running() -> bool:
    return any(
        frame.f_code.co_name == "grep" and frame.f_code.co_filename == grep_tool.__file__
        for frame in _frames()
    )


def _frames() -> Iterator[object]:
    import sys

    for frame in sys._current_frames().values():
        current = frame
        while current is not None:
            yield current
            current = current.f_back  # type: ignore[assignment]


def _rows(text: str) -> list[tuple[str, int, str]]:
    rows = []
    for line in text.splitlines():
        found = re.match(r"^([^\[\s][^:]*):(\d+): (.*)$", line)
        if found:
            rows.append((found.group(1), int(found.group(2)), found.group(3)))
    return rows


def _reference(root: Path, pattern: str) -> list[tuple[str, int, str]]:
    """What a per-line search finds, with `regex` (whose answers equal `re`'s, only bounded)."""
    import regex

    compiled = regex.compile(pattern)
    conf = Confinement(root)
    found = []
    for entry in conf.walk(conf.resolve("."), 20_000):
        if entry.is_dir or entry.real.suffix == ".ipynb":
            continue
        data = entry.real.read_bytes()
        if b"\x00" in data[:8192] or len(data) > 5_000_000:
            continue
        text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
        for number, line in enumerate(text.split("\n"), start=1):
            if compiled.search(line, timeout=5):
                found.append((entry.rel, number, line.strip()[:200]))
    return found
