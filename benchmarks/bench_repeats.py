"""What the repeat guard saves: steps a small model spends repeating one call, with and without it.

    .venv/bin/python benchmarks/bench_repeats.py [--quick]

SmolLM2-135M on the real llama.cpp server (one thread, window 8,192), in text mode with the call grammar
(``call-first``, as on the embedded server), answers the 24 workspace questions of ``bench_grammar.py``
in full replies of up to 12 steps, twice: with the loop as shipped (the guard, and three useless steps
in a row end the reply) and with the guard off (``repeat_guard=False``, ``max_unusable_steps=0``).
A step "repeats" when it calls a tool with the same arguments as an earlier step of the same reply.
Prints a table and writes benchmarks/results_repeats.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench_grammar import QUESTIONS, QUICK, llama_server, make_workspace

from twinny_magics.agent import Agent
from twinny_magics.servers import ConnectedServer, ServerInfo

RESULTS = Path(__file__).with_name("results_repeats.json")
STEPS = 12
SEED = 7


def run_reply(url: str, workspace: Path, question: str, *, guard: bool) -> dict[str, Any]:
    """One full reply; what its steps did."""
    agent = Agent(
        server=ConnectedServer(ServerInfo(url, "llamacpp", "smollm2")),
        workspace=workspace,
        mode="text",
        grammar="call-first",
        steps=STEPS,
        temperature=0.0,
        extra={"seed": SEED},
        max_unusable_steps=3 if guard else 0,
        commands="off",
    )
    agent.settings = replace(agent.settings, repeat_guard=guard)  # read when the loop is made, on run
    started = time.perf_counter()
    reply = agent.run(question)
    seen: set[str] = set()
    repeats = 0
    for step in reply.steps:
        for call in step.calls:
            key = json.dumps([call.name, call.arguments], sort_keys=True)
            repeats += key in seen
            seen.add(key)
    return {
        "question": question,
        "guard": guard,
        "steps": len(reply.requests),
        "repeats": repeats,
        "stopped": reply.stopped,
        "error": reply.error,
        "seconds": round(time.perf_counter() - started, 2),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    steps = sum(r["steps"] for r in rows)
    return {
        "replies": len(rows),
        "steps": steps,
        "repeat_steps": sum(r["repeats"] for r in rows),
        "share_wasted_on_repeats": round(sum(r["repeats"] for r in rows) / steps, 3) if steps else 0.0,
        "mean_steps": round(steps / len(rows), 2),
        "replies_using_all_steps": sum(r["steps"] >= STEPS for r in rows),
        "mean_seconds": round(statistics.mean(r["seconds"] for r in rows), 2),
        "errors": sum(r["error"] is not None for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK} questions")
    args = parser.parse_args()
    questions = [q for q, _ in QUESTIONS][: QUICK if args.quick else None]
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, llama_server() as url:
        workspace = make_workspace(Path(folder))
        for question in questions:
            for guard in (False, True):
                rows.append(run_reply(url, workspace, question, guard=guard))
    summary = {
        "without guard": summarise([r for r in rows if not r["guard"]]),
        "with guard": summarise([r for r in rows if r["guard"]]),
    }
    print(
        f"{'':15} {'replies':>7} {'steps':>6} {'repeats':>8} {'wasted':>7} {'mean steps':>10} {'all 12':>7}"
    )
    for name, s in summary.items():
        print(
            f"{name:15} {s['replies']:>7} {s['steps']:>6} {s['repeat_steps']:>8} "
            f"{s['share_wasted_on_repeats']:>7.1%} {s['mean_steps']:>10} {s['replies_using_all_steps']:>7}"
        )
    took = round(time.perf_counter() - started, 1)
    RESULTS.write_text(
        json.dumps({"quick": args.quick, "seconds": took, "summary": summary, "rows": rows}, indent=1)
    )
    print(f"{took} s; wrote {RESULTS}")


if __name__ == "__main__":
    main()
