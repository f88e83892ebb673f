"""What `fit` costs on long conversations, against the cost of just estimating them once.

    .venv/bin/python benchmarks/bench_fit.py [--repeat N]

Prints a table and writes benchmarks/results_fit.json. Times are CPU time per call (best of N runs);
compare the ratios, not the absolute numbers, since these machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from twinny_magics.budget import TokenEstimator, fit, plan_context, request_chars
from twinny_magics.conversation import Message, ToolCall, ToolResult, assistant, system, tool_result, user


def conversation(messages: int, seed: int = 7) -> list[Message]:
    """A conversation of ``messages`` messages: a system prompt, a question, then calls and results."""
    rng = random.Random(seed)
    out = [system("You are a coding agent. " * 40), user("Where is the server created?")]
    step = 0
    while len(out) < messages:
        step += 1
        call = ToolCall("grep", {"pattern": f"p{step}"}, id=f"c{step}")
        out.append(assistant("", (call,)))
        lines = rng.randint(20, 120)
        output = "\n".join(f"src/mod{step}/file{n}.py:{n}: match {rng.random():.6f}" for n in range(lines))
        out.append(tool_result(ToolResult(call, output, step)))
    return out[:messages]


def cpu_best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    estimator = TokenEstimator()

    def count(ms: Sequence[Message]) -> int:
        return estimator.tokens(request_chars(ms, "native"))

    rows = []
    for size in (50, 200, 800):
        messages = conversation(size)
        total = count(messages)
        for window in (8192, 32768):
            plan = plan_context(window)
            limit = min(plan.limit, total - 1)
            target = min(plan.target, (65 * limit) // 100)
            once = cpu_best(lambda ms=messages: count(ms), args.repeat)  # type: ignore[misc]
            fitted = fit(messages, limit, target, count)
            cost = cpu_best(lambda ms=messages, li=limit, ta=target: fit(ms, li, ta, count), args.repeat)  # type: ignore[misc]
            rows.append(
                {
                    "messages": size,
                    "window": window,
                    "estimate_tokens": total,
                    "trims": len(fitted.trims),
                    "fit_ms": round(cost * 1000, 3),
                    "one_estimate_ms": round(once * 1000, 3),
                    "ratio": round(cost / once, 1) if once else None,
                }
            )
    print(
        f"{'msgs':>5} {'window':>7} {'tokens':>8} {'trims':>6} {'fit ms':>9} {'1 count ms':>11} {'ratio':>6}"
    )
    for r in rows:
        print(
            f"{r['messages']:>5} {r['window']:>7} {r['estimate_tokens']:>8} {r['trims']:>6} "
            f"{r['fit_ms']:>9} {r['one_estimate_ms']:>11} {r['ratio']!s:>6}"
        )
    out = Path(__file__).with_name("results_fit.json")
    out.write_text(json.dumps({"fit": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
