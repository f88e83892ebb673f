"""How the grounding checks did in a task benchmark's runs: citations and quoted messages, from the records.

    .venv/bin/python benchmarks/citation_stats.py RECORD.json [RECORD.json …] --codebase toolz

For each run of the records (the experiment JSON ``bench_tasks.py`` writes): the ``file:line`` citations
its first answer wrote and how many of them hold (checked again against the code base's files, as the
loop checks them), whether a wrong citation went back (``engine/citations.py``), whether a quoted
message no file has went back (``engine/grounding.py``), and, when one went back, whether the answer
before the correction and the answer after it pass the task's check (an answer task's grader on each
text): how often a correction turned a wrong answer right, or a right one wrong.

The records do not keep the citations themselves (a reply's saved fields); they are read again from the
answers' texts. Per-run lines are printed for the development code bases only: a held-out record gives its
totals and nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import tasks_all
from tasks_common import Answer, Task

from twinny_magics.engine import citations
from twinny_magics.tools.workspace import Workspace

#: The problems the loop records on a step whose answer went back (engine/run.py says them).
CITATION_PROBLEM = "a cited line does not hold"
QUOTE_PROBLEM = "quoted a string that no file has"


def corrected(run: dict[str, Any], problem: str) -> str | None:
    """The answer a check sent back in this run (the step's text), or None."""
    for step in (run.get("reply") or {}).get("steps", []):
        if any(p.startswith(problem) for p in step.get("problems") or []):
            return str(step.get("text") or "")
    return None


def first_answer(run: dict[str, Any]) -> str:
    """The first answer the run wrote: the text a check saw first (else the reply's)."""
    reply = run.get("reply") or {}
    for problem in (CITATION_PROBLEM, QUOTE_PROBLEM):
        text = corrected(run, problem)
        if text is not None:
            return text
    return str(reply.get("text") or "")


def grade(task: Task | None, text: str) -> bool | None:
    """Whether ``text`` passes an answer task's check (None: no such task, or an edit)."""
    if task is None or not isinstance(task.check, Answer):
        return None
    return task.check.grade(text) is True


def stats(runs: list[dict[str, Any]], tasks: dict[str, Task], workspace: Workspace | None) -> dict[str, Any]:
    """The counts over ``runs`` (see the module), and a line per run that a check concerned."""
    count: Counter[str] = Counter()
    lines: list[str] = []
    for run in runs:
        if run.get("reply") is None:
            continue
        count["runs"] += 1
        task = tasks.get(run["question"])
        question = task.question if task else ""
        answer = first_answer(run)
        pairs = citations.find_citations(answer)
        if pairs:
            count["answers citing"] += 1
            count["citations"] += len(pairs)
            if workspace is not None:
                checked = asyncio.run(citations.check(answer, question, workspace))
                for c in checked:
                    count[f"citations {c.status}"] += 1
        for name, problem in (("citation", CITATION_PROBLEM), ("quote", QUOTE_PROBLEM)):
            before = corrected(run, problem)
            if before is None:
                continue
            count[f"{name} corrections"] += 1
            after = str((run.get("reply") or {}).get("text") or "")
            was, now = grade(task, before), grade(task, after)
            if was is not None and now is not None:
                key = f"{name}: {'right' if was else 'wrong'} -> {'right' if now else 'wrong'}"
                count[key] += 1
            lines.append(f"  {run['question']:<32} {name} correction: {was} -> {now} ({run['outcome']})")
    return {"counts": dict(count), "lines": lines}


def load_tasks(name: str, root: Path) -> tuple[dict[str, Task], Workspace]:
    """The code base's tasks and its workspace, built in ``root`` from the pinned sdist."""
    base = tasks_all.CODEBASES[name]
    workspace = base.workspace(root)
    return {t.name: t for t in base.tasks(workspace)}, Workspace(workspace)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path)
    parser.add_argument("--codebase", help="grade and re-check against this code base (toolz, pluggy, …)")
    args = parser.parse_args(argv)
    runs = [r for path in args.records for r in json.loads(path.read_text())["runs"]]
    heldout = bool(args.codebase) and tasks_all.CODEBASES[args.codebase].split == "heldout"
    with tempfile.TemporaryDirectory(prefix="twinny-citations-") as temp:
        tasks, workspace = load_tasks(args.codebase, Path(temp)) if args.codebase else ({}, None)
        result = stats(runs, tasks, workspace)
    for key, value in sorted(result["counts"].items()):
        print(f"{key:<36} {value}")
    if not heldout:
        print("\n".join(result["lines"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
