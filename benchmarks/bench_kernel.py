"""What a kernel result costs the model: characters and tokens sent against the object's size, and CPU.

    .venv/bin/python benchmarks/bench_kernel.py             # 7 repeats, llama.cpp's own token count
    .venv/bin/python benchmarks/bench_kernel.py --quick     # 3 repeats, the package's estimate only
    .venv/bin/python benchmarks/bench_kernel.py --no-llama  # 7 repeats, the package's estimate only

A real ``IPython.core.interactiveshell.InteractiveShell.instance()`` (history in memory, its IPython
folder a temporary one) with ``CellLog.of(shell)`` installed holds objects of growing size: pandas
DataFrames of 10, 10³ and 10⁶ rows (five columns: int, float with NaNs, str, bool, datetime) and one of
10 rows × 10⁴ columns, NumPy arrays of 10²…10⁷ float64, a str of 1 KB, 1 MB and 100 MB (log lines),
lists of 10…10⁶ ints, dicts of 10, 10³ and 10⁵ keys, a nested JSON-like record of 10³ items, a recursive
structure (a list holding itself and 10³ dicts that point back to it and to themselves) and a linked
chain of dicts 10³ deep (deeper than ``repr`` can go: it raises RecursionError, and so does IPython's
display of it). For each, what the model is sent:

- ``inspect_variable``: the text ``Workspace.run`` returns for the call (``inspection.inspect_variable``,
  checked to be the same text);
- ``cell_history``: a cell whose value is the object, run by ``shell.run_cell(name, store_history=True)``
  (its display sent to /dev/null), then ``cells.history_text`` of that cell's record alone — what
  ``cell_history`` answers when it is the only cell;
- ``run_python``: the text ``Workspace.run`` returns for code that evaluates to the object
  (``kernel.run_code``, then ``cells.cell_text(record, source=False)`` under its "Ran in the kernel:" line)

— in characters and in tokens: the package's estimate (``text_tokens.TextTokens``) and, unless
``--no-llama``/``--quick``, SmolLM2's real count from llama.cpp's ``/tokenize`` (the embedded server, as
``bench_estimator.py`` runs it). Beside them, the object's own size: elements (rows × columns, items,
characters), memory in bytes (pandas' deep ``memory_usage``, NumPy's ``nbytes``, ``sys.getsizeof`` over
the built-in containers) and ``len(repr(x))`` (pandas and NumPy cut their own repr; the built-ins do not).

CPU: process CPU time (``time.process_time``, every thread: the bounded repr runs on a worker) and wall
time, median of the repeats, of inspecting a 10⁶-row frame against a 10-row one: ``inspect_variable``,
the cell run and recorded (``run_cell`` with ``CellLog``, and the same cell before ``CellLog`` was
installed), ``cell_history``'s answer (``history_text`` of the whole history), and ``run_python``
returning the frame (``run_code`` + ``cell_text``). Measured side by side in one run, not asserted.

The machine is shared (2 cores, other jobs): read the ratios and the characters, not absolute times.
Prints the tables and writes benchmarks/results_kernel.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from twinny_magics import cells
from twinny_magics.cell_log import CellLog
from twinny_magics.conversation import ToolCall
from twinny_magics.text_tokens import TextTokens
from twinny_magics.tools import Workspace
from twinny_magics.tools.kernel import Kernel, inspection
from twinny_magics.tools.kernel.run import run_code

RESULTS = Path(__file__).with_name("results_kernel.json")
SEED = 11
#: Texts longer than this are not sent to llama.cpp for a real count (the reprs of the big objects).
LLAMA_CHARS = 20_000
#: The kernel's time limit for the benchmark's run_python (never reached).
SECONDS = 60.0

LOG_BLOCK = "".join(
    f"2024-05-0{1 + i % 9} 12:{i % 60:02d}:{(7 * i) % 60:02d} INFO api.orders request {1000 + i} "
    f"served in {(37 * i) % 480} ms for user {i % 13} (region {('east', 'west', 'north')[i % 3]})\n"
    for i in range(12)
)


# --- the objects ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    """One object measured: its variable name, its label in the table, its family and how to make it."""

    name: str
    label: str
    family: str
    make: Callable[[], Any]


def frame(rows: int) -> pd.DataFrame:
    """``rows`` rows of five columns: int, float (1% NaN), str, bool, datetime."""
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=rows)
    x[rng.random(rows) < 0.01] = np.nan
    labels = np.array(["east", "west", "north", "south"])[rng.integers(0, 4, rows)]
    return pd.DataFrame(
        {
            "id": np.arange(rows),
            "x": x,
            "label": labels,
            "flag": rng.random(rows) < 0.5,
            "when": pd.date_range("2024-01-01", periods=rows, freq="min"),
        }
    )


def wide_frame(rows: int, columns: int) -> pd.DataFrame:
    rng = np.random.default_rng(SEED)
    return pd.DataFrame(rng.normal(size=(rows, columns)), columns=[f"c{j}" for j in range(columns)])


def text(size: int) -> str:
    """``size`` characters of log lines."""
    return (LOG_BLOCK * (size // len(LOG_BLOCK) + 1))[:size]


def nested(items: int) -> dict[str, Any]:
    """A JSON-like API answer: a header and ``items`` records of scalars, lists and dicts."""
    return {
        "meta": {"page": 1, "per_page": items, "source": "api/v2/orders", "filters": {"region": ["east"]}},
        "items": [
            {
                "id": i,
                "name": f"order {i}",
                "tags": ["express", "gift"][: i % 3],
                "lines": [{"sku": f"SKU-{i}-{k}", "qty": k + 1, "price": 9.5 * (k + 1)} for k in range(3)],
                "address": {"city": ("Lyon", "Porto", "Graz")[i % 3], "zip": f"{10000 + i}"},
            }
            for i in range(items)
        ],
    }


def recursive(items: int) -> list[Any]:
    """A list that holds itself and ``items`` dicts, each pointing back to it and to itself."""
    root: list[Any] = ["root"]
    root.append(root)
    for i in range(items):
        node: dict[str, Any] = {"id": i, "parent": root}
        node["self"] = node
        root.append(node)
    return root


def chain(depth: int) -> dict[str, Any]:
    """A linked list ``depth`` dicts deep: deeper than ``repr`` can go (it raises RecursionError)."""
    head: Any = None
    for i in reversed(range(depth)):
        head = {"id": i, "next": head}
    return dict(head)


def ints(count: int) -> list[int]:
    return [(7 * i) % 1000 for i in range(count)]


def keyed(count: int) -> dict[str, float]:
    return {f"key_{i}": i * 0.5 for i in range(count)}


def subjects() -> list[Subject]:
    rng = np.random.default_rng(SEED)
    out = [Subject(f"df_{n}", f"DataFrame {n:,} × 5", "frame", partial(frame, n)) for n in (10, 10**3, 10**6)]
    out.append(Subject("df_wide", "DataFrame 10 × 10,000", "wide", partial(wide_frame, 10, 10**4)))
    out += [
        Subject(f"arr_{n}", f"ndarray {n:,}", "ndarray", partial(rng.normal, size=n))
        for n in (10**2, 10**4, 10**6, 10**7)
    ]
    out += [
        Subject(f"text_{label.replace(' ', '')}", f"str {label}", "str", partial(text, n))
        for n, label in ((1000, "1 KB"), (10**6, "1 MB"), (10**8, "100 MB"))
    ]
    out += [Subject(f"items_{n}", f"list {n:,} ints", "list", partial(ints, n)) for n in (10, 10**3, 10**6)]
    out += [Subject(f"table_{n}", f"dict {n:,} keys", "dict", partial(keyed, n)) for n in (10, 10**3, 10**5)]
    out.append(Subject("record", "nested: 1,000 records", "nested", partial(nested, 1000)))
    out.append(Subject("graph", "recursive: 1,000 nodes", "recursive", partial(recursive, 1000)))
    out.append(Subject("linked", "linked chain 1,000 deep", "recursive", partial(chain, 1000)))
    return out


def elements_and_bytes(value: Any) -> tuple[int, int]:
    """Elements (a frame's rows × columns, an array's size, a str's characters, a container's items and
    everything they hold, each object once) and its memory in bytes."""
    if isinstance(value, pd.DataFrame):
        rows, columns = value.shape
        return rows * columns, int(value.memory_usage(deep=True, index=True).sum())
    if isinstance(value, np.ndarray):
        return int(value.size), int(value.nbytes)
    if isinstance(value, str):
        return len(value), sys.getsizeof(value)
    seen: set[int] = set()
    stack = [value]
    count = size = 0
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        size += sys.getsizeof(item)
        if isinstance(item, dict):
            count += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set):
            count += len(item)
            stack.extend(item)
    return count, size


# --- the shell -----------------------------------------------------------------------------------------


@contextlib.contextmanager
def ipython_shell() -> Iterator[Any]:
    """A real InteractiveShell, its IPython folder a temporary one and its history in memory; cleared
    on leaving (the instance is a singleton of the process: run.py goes on after this)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    before = os.environ.get("IPYTHONDIR")
    with tempfile.TemporaryDirectory(prefix="twinny-kernel-bench-") as folder:
        os.environ["IPYTHONDIR"] = folder
        try:
            shell = InteractiveShell.instance(config=config)
            yield shell
        finally:
            log = getattr(shell, "_twinny_cell_log", None) if "shell" in locals() else None
            if isinstance(log, CellLog):
                log.uninstall()
            InteractiveShell.clear_instance()
            if before is None:
                os.environ.pop("IPYTHONDIR", None)
            else:
                os.environ["IPYTHONDIR"] = before


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """stdout and stderr to /dev/null (the displayhook prints a cell's value, up to 100 MB of it)."""
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
        yield


def run_cell(shell: Any, source: str) -> None:
    with quiet():
        result = shell.run_cell(source, store_history=True)
    if not result.success:
        raise RuntimeError(f"the cell {source!r} failed: {result.error_in_exec or result.error_before_exec}")


def forget(shell: Any, name: str) -> None:
    """Drop the object and every reference the shell kept to it (Out, _, __, ___)."""
    with quiet():
        shell.displayhook.flush()
    shell.user_ns.pop(name, None)
    shell.user_ns.pop("_", None)


# --- counting ------------------------------------------------------------------------------------------


class Counter:
    """Characters, the package's token estimate and (when a server is given) llama.cpp's count."""

    def __init__(self, llama: Any = None) -> None:
        self.estimate = TextTokens()
        self.llama = llama

    def __call__(self, text: str) -> dict[str, int | None]:
        real = (
            self.llama.tokenize(text, add_special=False) if self.llama and len(text) <= LLAMA_CHARS else None
        )
        return {"chars": len(text), "tokens": self.estimate.tokens(text), "llama": real}


@contextlib.contextmanager
def llama_counter(enabled: bool) -> Iterator[Any]:
    """llama.cpp's server on SmolLM2 (bench_estimator's), or None."""
    if not enabled:
        yield None
        return
    from bench_estimator import LlamaServer

    server = LlamaServer(n_ctx=8192)
    try:
        yield server
    finally:
        server.close()


def tool_text(workspace: Workspace, name: str, arguments: dict[str, Any]) -> str:
    out = asyncio.run(workspace.run(ToolCall(name, arguments)))
    if out.is_error:
        raise RuntimeError(f"{name} {arguments} failed: {out.text}")
    return out.text


def measure_sizes(shell: Any, log: CellLog, workspace: Workspace, count: Counter) -> list[dict[str, Any]]:
    rows = []
    for subject in subjects():
        started = time.process_time()
        value = subject.make()
        shell.user_ns[subject.name] = value
        elements, memory = elements_and_bytes(value)
        try:
            shown: str | None = repr(value)
        except RecursionError:  # the linked chain: deeper than the interpreter's stack
            shown = None
        # The cell whose value is the object, recorded by CellLog; cell_history of that cell alone.
        run_cell(shell, subject.name)
        record = log.history()[-1]
        if record.source != subject.name:
            raise RuntimeError(f"CellLog did not record the cell {subject.name!r}")
        history = cells.history_text([record])
        inspected = tool_text(workspace, "inspect_variable", {"name": subject.name})
        direct = inspection.inspect_variable(shell.user_ns, subject.name)
        ran = tool_text(workspace, "run_python", {"code": subject.name})
        rows.append(
            {
                "name": subject.name,
                "object": subject.label,
                "family": subject.family,
                "elements": elements,
                "bytes": memory,
                "repr": count(shown) if shown is not None else None,
                "inspect_variable": count(inspected),
                "cell_history": count(history),
                "run_python": count(ran),
                "same_as_direct_call": inspected == direct,
            }
        )
        if subject.name == "df_1000000":
            rows[-1]["texts"] = {"inspect_variable": inspected, "cell_history": history, "run_python": ran}
        del value, shown
        forget(shell, subject.name)
        print(f"  {subject.label}: {time.process_time() - started:.1f} s CPU", flush=True)
    return rows


# --- CPU -----------------------------------------------------------------------------------------------


def timed(work: Callable[[], object], repeat: int) -> dict[str, float]:
    """Median process CPU and wall milliseconds of ``repeat`` runs of ``work`` (after one not counted:
    first calls fill caches)."""
    work()
    cpu, wall = [], []
    for _ in range(repeat):
        started_cpu, started_wall = time.process_time(), time.perf_counter()
        work()
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started_wall)
    return {
        "cpu_ms": round(1000 * statistics.median(cpu), 3),
        "wall_ms": round(1000 * statistics.median(wall), 3),
    }


SMALL, LARGE = 10, 10**6


def measure_cpu_without_log(shell: Any, repeat: int) -> dict[str, dict[str, float]]:
    """The cell that shows each frame, before CellLog is installed (the shell's own cost)."""
    out = {}
    for rows in (SMALL, LARGE):
        name = f"cpu_df_{rows}"
        shell.user_ns[name] = frame(rows)
        out[str(rows)] = timed(partial(run_cell, shell, name), repeat)
        forget(shell, name)
    return out


def python(shell: Any, code: str, runs: Iterator[int]) -> str:
    """run_python's work: the code run as a cell would run it, and its record as the model reads it."""
    outcome = run_code(shell, code, SECONDS, next(runs))
    return cells.cell_text(outcome.record, source=False)


def measure_cpu(shell: Any, log: CellLog, repeat: int) -> dict[str, dict[str, dict[str, float]]]:
    """Per step, per frame size: the median CPU and wall milliseconds."""
    steps: dict[str, dict[str, dict[str, float]]] = {
        "inspect_variable": {},
        "run_cell_logged": {},
        "cell_history": {},
        "run_python": {},
    }
    runs = iter(range(1000, 10**6))
    for rows in (SMALL, LARGE):
        name = f"cpu_df_{rows}"
        shell.user_ns[name] = frame(rows)
        steps["inspect_variable"][str(rows)] = timed(
            partial(inspection.inspect_variable, shell.user_ns, name), repeat
        )
        steps["run_cell_logged"][str(rows)] = timed(partial(run_cell, shell, name), repeat)
        steps["cell_history"][str(rows)] = timed(lambda: cells.history_text(log.history()), repeat)
        steps["run_python"][str(rows)] = timed(partial(python, shell, name, runs), repeat)
        forget(shell, name)
    return steps


# --- the tables ----------------------------------------------------------------------------------------


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def size_table(rows: list[dict[str, Any]], llama: bool) -> str:
    tools = ("inspect_variable", "cell_history", "run_python")
    sub = f"{'chars':>6} {'est':>5}" + (f" {'llama':>5}" if llama else "")
    width = len(sub)
    lines = [
        "What the model is sent for a kernel result, against the object's size "
        "(tokens: est = the package's estimate"
        + (", llama = SmolLM2's count on llama.cpp)" if llama else ")"),
        f"{'object':<24} {'elements':>12} {'memory':>9} {'repr chars':>12} {'repr est':>10} | "
        + " | ".join(f"{t:^{width}}" for t in tools),
        f"{'':<24} {'':>12} {'':>9} {'':>12} {'':>10} | " + " | ".join(sub for _ in tools),
    ]
    for row in rows:
        cells_ = []
        for tool in tools:
            c = row[tool]
            part = f"{c['chars']:>6,} {c['tokens']:>5,}"
            cells_.append(part + (f" {_n(c['llama']):>5}" if llama else ""))
        shown = (
            f"{row['repr']['chars']:>12,} {row['repr']['tokens']:>10,}"
            if row["repr"] is not None
            else f"{'RecursionError':>23}"
        )
        lines.append(
            f"{row['object']:<24} {row['elements']:>12,} {_bytes(row['bytes']):>9} "
            f"{shown} | " + " | ".join(cells_)
        )
    return "\n".join(lines)


FLAT_PAIRS = (
    ("df_1000", "df_1000000"),
    ("arr_10000", "arr_10000000"),
    ("text_1MB", "text_100MB"),
    ("items_1000", "items_1000000"),
    ("table_1000", "table_100000"),
)


def flatness(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For pairs of the same kind, the bigger object's size and cost as multiples of the smaller's."""
    by_name = {row["name"]: row for row in rows}
    out = []
    for small, large in FLAT_PAIRS:
        a, b = by_name[small], by_name[large]
        out.append(
            {
                "small": a["object"],
                "large": b["object"],
                "elements_x": round(b["elements"] / a["elements"], 1),
                "bytes_x": round(b["bytes"] / a["bytes"], 1),
                "repr_chars_x": round(b["repr"]["chars"] / a["repr"]["chars"], 2),
                **{
                    f"{tool}_chars_x": round(b[tool]["chars"] / a[tool]["chars"], 2)
                    for tool in ("inspect_variable", "cell_history", "run_python")
                },
            }
        )
    return out


def flat_table(pairs: list[dict[str, Any]]) -> str:
    lines = [
        "Beyond the cut: the bigger object's size and characters sent, as multiples of the smaller one's",
        f"{'bigger / smaller':<44} {'elements':>9} {'memory':>8} {'repr':>8} {'inspect':>8} {'history':>8} "
        f"{'run_py':>8}",
    ]
    for p in pairs:
        lines.append(
            f"{p['large'] + ' / ' + p['small']:<44} {p['elements_x']:>8,.0f}× {p['bytes_x']:>7,.0f}× "
            f"{p['repr_chars_x']:>7,.2f}× {p['inspect_variable_chars_x']:>7.2f}× "
            f"{p['cell_history_chars_x']:>7.2f}× {p['run_python_chars_x']:>7.2f}×"
        )
    return "\n".join(lines)


CPU_LABELS = {
    "inspect_variable": "inspect_variable",
    "run_cell_no_log": "the cell that shows it, before CellLog",
    "run_cell_logged": "the same cell, run and recorded by CellLog",
    "cell_history": "cell_history's answer (history_text)",
    "run_python": "run_python returning it (run_code + cell_text)",
}


def cpu_table(steps: dict[str, dict[str, dict[str, float]]], repeat: int) -> str:
    lines = [
        f"CPU for a {LARGE:,}-row frame against a {SMALL}-row one (ms, median of {repeat}; "
        "process CPU of every thread, and wall)",
        f"{'step':<48} {f'{SMALL} rows cpu':>12} {'wall':>8} {f'{LARGE:,} rows cpu':>17} {'wall':>8} "
        f"{'cpu ×':>7}",
    ]
    for key, label in CPU_LABELS.items():
        small, large = steps[key][str(SMALL)], steps[key][str(LARGE)]
        ratio = large["cpu_ms"] / small["cpu_ms"] if small["cpu_ms"] > 0 else float("nan")
        lines.append(
            f"{label:<48} {small['cpu_ms']:>12.2f} {small['wall_ms']:>8.2f} {large['cpu_ms']:>17.2f} "
            f"{large['wall_ms']:>8.2f} {ratio:>6.1f}×"
        )
    return "\n".join(lines)


# --- the run -------------------------------------------------------------------------------------------


def bench_kernel(quick: bool = False, llama: bool = True) -> dict[str, Any]:
    """Every measurement of this benchmark, as results_kernel.json keeps it (printing as it goes)."""
    from bench_tasks import package_commit

    started = time.perf_counter()
    repeat = 3 if quick else 7
    with ipython_shell() as shell, tempfile.TemporaryDirectory(prefix="twinny-kernel-ws-") as root:
        # The cells before CellLog is installed (they stay in In/Out, as cells run before %load_ext do).
        without_log = measure_cpu_without_log(shell, repeat)
        log = CellLog.of(shell)
        kernel = Kernel(shell, seconds=SECONDS)
        workspace = Workspace(root, commands="off", search=False, kernel=kernel, kernel_mode="allow")
        cpu = measure_cpu(shell, log, repeat)
        cpu["run_cell_no_log"] = without_log
        with llama_counter(llama) as server:
            count = Counter(server)
            print("sizes:", flush=True)
            rows = measure_sizes(shell, log, workspace, count)
            whole = log.history()
            history_all = {"cells": len(whole), **count(cells.history_text(whole))}
    pairs = flatness(rows)
    return {
        "mode": "quick" if quick else "full",
        "llama": llama,
        "repeat": repeat,
        "limits": {
            "INSPECT_CHARS": inspection.INSPECT_CHARS,
            "HISTORY_CHARS": cells.HISTORY_CHARS,
            "VALUE_CHARS": cells.VALUE_CHARS,
            "PRINTED_CHARS": cells.PRINTED_CHARS,
        },
        "objects": rows,
        "flat": pairs,
        "history_all": history_all,
        "cpu": cpu,
        "seconds": round(time.perf_counter() - started, 1),
        "package": package_commit(),
        "python": sys.version.split()[0],
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "machine": platform.machine(),
    }


def tables(result: dict[str, Any]) -> str:
    history = result["history_all"]
    llama_note = f", llama {history['llama']:,}" if history.get("llama") is not None else ""
    return "\n".join(
        [
            size_table(result["objects"], result["llama"]),
            f"cell_history over all {history['cells']} cells of this run: {history['chars']:,} chars, "
            f"est {history['tokens']:,} tokens{llama_note} (its cut: {cells.HISTORY_CHARS:,} chars)",
            "",
            flat_table(result["flat"]),
            "",
            cpu_table(result["cpu"], result["repeat"]),
        ]
    )


def compact(result: dict[str, Any]) -> dict[str, Any]:
    """What run.py keeps under ``kernel`` in results.json: the 10⁶-row frame's cost, the flat pairs, CPU."""
    frame_row = next(row for row in result["objects"] if row["name"] == f"df_{LARGE}")
    return {
        "frame_1e6": {tool: frame_row[tool] for tool in ("inspect_variable", "cell_history", "run_python")},
        "flat": result["flat"],
        "cpu": result["cpu"],
        "llama": result["llama"],
        "seconds": result["seconds"],
    }


def write(result: dict[str, Any]) -> None:
    RESULTS.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="3 repeats, no llama.cpp count")
    parser.add_argument("--no-llama", action="store_true", help="the package's token estimate only")
    args = parser.parse_args()
    result = bench_kernel(quick=args.quick, llama=not (args.quick or args.no_llama))
    print()
    print(tables(result))
    write(result)
    print(f"\n{result['mode']} run in {result['seconds']} s; wrote {RESULTS}")


if __name__ == "__main__":
    main()
