"""The ranking alone: are the lines an answer rests on in the evidence the loop gives before step 1?

    .venv/bin/python benchmarks/bench_ranking.py [--label after] [--window 4096] [--tasks NAME,...]

No model. For every development task that says where its answer stands (``Task.where``: toolz, pluggy,
mapclassify, litecli, cookiecutter, yamllint; the held-out code base is never read here), the workspace is
built from its pinned sdist, and the head start is made exactly as a reply's first request makes it (the
workspace's ``head_start`` at the plan's ``head_start_chars`` for ``--window``, evidence on and the map
off: the defaults). The evidence is read back as the model sees it — ``path (names):`` headings and
``N: line`` rows — and for each task measured:

- **recall**: the share of its answer-bearing lines shown, with their own line numbers, in the evidence;
- **hit**: at least one of them shown; **first**: one shown in the first chunk.

Printed as a table per task and per code base; the run is stored under ``--label`` in
benchmarks/results_ranking.json (other labels kept, so a before and an after sit side by side).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import tasks_cookiecutter
import tasks_litecli
import tasks_mapclassify
import tasks_pluggy
import tasks_toolz
import tasks_yamllint
from tasks_common import Task

from twinny_magics.budget import plan_context
from twinny_magics.engine.question import Question
from twinny_magics.retrieval import SEARCH_LEAD
from twinny_magics.tools.notebook import notebook_lines
from twinny_magics.tools.workspace import Workspace

RESULTS = Path(__file__).with_name("results_ranking.json")
#: The development code bases with answer-location tables (the held-out one is never measured here: its
#: tasks are not read). litecli, development since yamllint took its place, was added last: runs stored
#: before it (their summaries have no litecli row) compare with later ones per code base, not in "all".
#: cookiecutter came after it, the same way: "all" from before it has no cookiecutter tasks. yamllint joined
#: when it was retired to development (2026-12-06, sqlite-utils held out in its place); only its edits
#: say where their answers stand so far (``edit_task`` sets it), so "all" from before it has none of them.
CODEBASES = {
    "toolz": tasks_toolz,
    "pluggy": tasks_pluggy,
    "mapclassify": tasks_mapclassify,
    "litecli": tasks_litecli,
    "cookiecutter": tasks_cookiecutter,
    "yamllint": tasks_yamllint,
}
_ROW = re.compile(r"^\s*(\d+): ")
_GREP_ROW = re.compile(r"^([^\s:]+):(\d+): ")


def shown_lines(evidence: str) -> list[list[tuple[str, int]]]:
    """The evidence's chunks, each the (path, line number) pairs it shows, in order: the grep rows the
    head start puts before the ranked search (a message's strings, the lines that import a name) first,
    as one chunk, then the search's chunks and the rows after them."""
    chunks: list[list[tuple[str, int]]] = []
    path: str | None = None
    before, lead, rest = evidence.partition(SEARCH_LEAD)
    first = [(m.group(1), int(m.group(2))) for m in map(_GREP_ROW.match, before.splitlines()) if m]
    if lead and first:
        chunks.append(first)
    for line in (rest if lead else "").splitlines():
        row = _ROW.match(line)
        if row and path is not None:
            chunks[-1].append((path, int(row.group(1))))
            continue
        if (grepped := _GREP_ROW.match(line)) is not None:  # the lines a "which modules import X" gets
            if path != "":
                path = ""
                chunks.append([])
            chunks[-1].append((grepped.group(1), int(grepped.group(2))))
            continue
        if line.endswith(":") and not line.startswith("[") and not line[:1].isspace():
            # ``path (names):`` — the names may hold parentheses of their own (a notebook's heading); a
            # lead of words ("Counted by the loop …:") heads no chunk.
            path = line[:-1].split(" (", 1)[0]
            if " " in path:
                path = None
                continue
            chunks.append([])
    return chunks


def file_view(root: Path, rel: str) -> list[str]:
    """A file's lines as the tools number them (a notebook as its cell view)."""
    if rel.endswith(".ipynb"):
        return notebook_lines(root / rel, rel)
    return (root / rel).read_text(encoding="utf-8").splitlines()


def measure(task: Task, root: Path, workspace: Workspace, chars: int) -> dict[str, Any]:
    """One task's recall, hit and first-chunk hit."""
    wanted = {(w.path, n) for w in task.where for n in w.lines(file_view(root, w.path))}
    question = Question.read(task.question)
    text = (
        workspace.head_start(task.question, chars, map=False, evidence=True)
        if question.about_workspace
        else ""
    )
    chunks = shown_lines(text)
    # The one-line definitions of the constants the best chunk uses come before it: they count as its.
    while len(chunks) > 1 and len(chunks[0]) == 1:
        chunks = [chunks[0] + chunks[1], *chunks[2:]]
    seen = {pair for chunk in chunks for pair in chunk}
    found = wanted & seen
    rank = next((k + 1 for k, chunk in enumerate(chunks) if wanted & set(chunk)), None)
    return {
        "task": task.name,
        "kind": task.kind,
        "lines": len(wanted),
        "shown": len(found),
        "recall": round(len(found) / len(wanted), 3),
        "hit": bool(found),
        "first": rank == 1,
        "rank": rank,
        "chunks": [f"{c[0][0]}:{c[0][1]}-{c[-1][1]}" for c in chunks if c],
    }


def run(window: int, only: set[str] | None) -> dict[str, Any]:
    """Every development task with an answer location, measured; per code base and in all."""
    chars = plan_context(window).head_start_chars
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="twinny-ranking-") as temp:
        os.environ["TWINNY_MAGICS_INDEX_DIR"] = str(Path(temp) / "index")
        for name, module in CODEBASES.items():
            root = module.build_workspace(Path(temp) / name)
            workspace = Workspace(root)
            for task in module.build_tasks(root):
                if not task.where or (only and task.name not in only and name not in only):
                    continue
                rows.append({"codebase": name, **measure(task, root, workspace, chars)})
    return {"window": window, "head_start_chars": chars, "tasks": rows, "summary": summary(rows)}


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean recall and hit/first rates, per code base and in all."""
    groups: dict[str, list[dict[str, Any]]] = {"all": rows}
    for row in rows:
        groups.setdefault(row["codebase"], []).append(row)
    out = {}
    for name, group in groups.items():
        n = len(group) or 1
        out[name] = {
            "tasks": len(group),
            "recall": round(sum(r["recall"] for r in group) / n, 3),
            "hit": round(sum(r["hit"] for r in group) / n, 3),
            "first": round(sum(r["first"] for r in group) / n, 3),
        }
    return out


def commit() -> str:
    """The checkout's commit (with ``+`` when it has changes), for the record."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=False,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="current", help="the name this run is stored under")
    parser.add_argument("--window", type=int, default=4096)
    parser.add_argument("--tasks", default="", help="comma-separated task or code-base names (default all)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    only = {t.strip() for t in args.tasks.split(",") if t.strip()} or None
    started = time.perf_counter()
    result = run(args.window, only)
    result["commit"] = commit()
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(f"{'task':<34} {'kind':<11} {'lines':>5} {'shown':>5} {'recall':>6} first")
    for row in result["tasks"]:
        print(
            f"{row['codebase'][:5] + ' ' + row['task']:<34} {row['kind']:<11} {row['lines']:>5} "
            f"{row['shown']:>5} {row['recall']:>6.2f} {'yes' if row['first'] else ''}"
        )
    print()
    for name, s in result["summary"].items():
        print(
            f"{name:<12} tasks {s['tasks']:>3}  recall {s['recall']:.3f}  hit {s['hit']:.3f}  "
            f"first {s['first']:.3f}"
        )
    print(f"({result['seconds']} s, window {args.window}, head start {result['head_start_chars']} chars)")
    if not args.no_save:
        stored = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        stored[args.label] = result
        RESULTS.write_text(json.dumps(stored, indent=1) + "\n")


if __name__ == "__main__":
    main()
