"""What saving, loading and exporting a session costs: time and size, for a 12-reply session and a 50 MB one.

    .venv/bin/python benchmarks/bench_sessions.py            # 7 repeats
    .venv/bin/python benchmarks/bench_sessions.py --quick    # 3 repeats

A 12-reply session is made the way a real one is: an `Agent` over a scripted model that, in each reply,
reads three files of a generated project (each about 6 KB of Python), greps once and answers, so each
reply has 5 steps, 4 tool results, 5 requests with their server counts, and the notes grow as they do
in a session. The 50 MB one is the same session with every tool result's full text (``original``)
replaced by a ~0.8 MB log, which is what a session of huge command outputs looks like on disk.

For each: the file's size, then wall time (median of the repeats) of ``Agent.save`` (building the
document, masking every text, writing it atomically with fsync), ``Agent.load`` (reading, checking every
field, making the Agent), and ``Agent.export`` to Markdown and to HTML. The machine is shared (2 cores,
other jobs): read the sizes and the ratios, not the absolute times. Prints a table and writes
``benchmarks/results_sessions.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.servers.scripted import Scripted, ScriptedServer

RESULTS = Path(__file__).with_name("results_sessions.json")
REPLIES = 12


def project(root: Path) -> Path:
    """A project of 36 modules of about 6 KB each."""
    (root / "src").mkdir(parents=True)
    for n in range(REPLIES * 3):
        body = "".join(
            f"def handler_{n}_{i}(request, config):\n"
            f"    '''Answer route {i} of service {n}.'''\n"
            f"    return {{'status': 200, 'route': {i}, 'debug': config.get('debug')}}\n\n"
            for i in range(40)
        )
        (root / "src" / f"service{n}.py").write_text(body)
    return root


def session(root: Path) -> Agent:
    """Twelve replies of three reads, a grep and an answer each."""
    replies: list[Scripted | str] = []
    for r in range(REPLIES):
        replies += [
            Scripted("", (ToolCall("read_file", {"path": f"src/service{3 * r + k}.py"}),)) for k in range(3)
        ]
        replies.append(Scripted("", (ToolCall("grep", {"pattern": f"handler_{3 * r}_1"}),)))
        replies.append(f"Service {3 * r} answers 40 routes; `handler_{3 * r}_1` is route 1.")
    agent = Agent(server=ScriptedServer(replies, window=32768), workspace=root, steps=8, grammar="off")
    for r in range(REPLIES):
        agent.run(f"How many routes does service {3 * r} answer, and where is route 1?")
    return agent


def swollen(agent: Agent, target_bytes: int) -> Agent:
    """The same session with every result's full text a long log, about ``target_bytes`` in all."""
    results = [(reply, step) for reply in agent.replies for step in reply.steps if step.results]
    each = target_bytes // max(1, len(results))
    line = "2024-05-01 12:00:00 INFO api.orders request served in 37 ms for user 7 (region east)\n"
    log = line * (each // len(line) + 1)
    for _, step in results:
        step.results = [replace(result, original=log) for result in step.results]
    return agent


def timed(action: Callable[[], Any], repeat: int) -> float:
    """The median wall time of ``action`` over ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(name: str, agent: Agent, folder: Path, repeat: int) -> dict[str, Any]:
    path = folder / f"{name}.json"
    save = timed(lambda: agent.save(path), repeat)
    load = timed(lambda: Agent.load(path, server=ScriptedServer([])), repeat)
    markdown = timed(lambda: agent.export(folder / f"{name}.md"), repeat)
    html = timed(lambda: agent.export(folder / f"{name}.html"), repeat)
    return {
        "session": name,
        "replies": len(agent.replies),
        "steps": sum(len(r.steps) for r in agent.replies),
        "requests": sum(len(r.requests) for r in agent.replies),
        "notes": len(agent.note_entries),
        "bytes": path.stat().st_size,
        "markdown_bytes": (folder / f"{name}.md").stat().st_size,
        "html_bytes": (folder / f"{name}.html").stat().st_size,
        "save_s": round(save, 4),
        "load_s": round(load, 4),
        "export_md_s": round(markdown, 4),
        "export_html_s": round(html, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 7")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        root = project(Path(tmp) / "project")
        agent = session(root)
        rows.append(measure("12 replies", agent, Path(tmp), repeat))
        rows.append(measure("12 replies, 50 MB", swollen(agent, 50_000_000), Path(tmp), max(1, repeat // 2)))
    head = f"{'session':<20}{'size':>10}{'save':>9}{'load':>9}{'export md':>11}{'export html':>13}"
    print(head)
    for row in rows:
        print(
            f"{row['session']:<20}{row['bytes'] / 1e6:>8.2f}MB{row['save_s']:>8.3f}s{row['load_s']:>8.3f}s"
            f"{row['export_md_s']:>10.3f}s{row['export_html_s']:>12.3f}s"
        )
    result = {
        "mode": "quick" if args.quick else "full",
        "repeat": repeat,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "sessions": rows,
    }
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
