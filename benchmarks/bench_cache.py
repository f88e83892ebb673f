"""Trims that keep the prompt cache: fresh tokens per step against a loop that never trims.

    .venv/bin/python benchmarks/bench_cache.py            # 2,048 / 4,096 / 8,192 / 32,768
    .venv/bin/python benchmarks/bench_cache.py --windows 4096

Every trim rewrites the prompt above the newest messages, so a server with a prompt cache (llama.cpp,
Ollama, LM Studio, hosted APIs that cache) reads everything below it again. This runs the full context
benchmark's trajectories (``run.py``'s plan) through the real loop at each window with three trimming
policies — ours (trims to 65% of the limit, deeper to ``deep_target`` while the newest step stays whole),
ours before the deep target (every trim to 65%), and keep-everything on a server that never refuses
(every token read once: the floor) — on the real llama.cpp server (SmolLM2) in ``count`` mode: each
request is counted exactly by the server, and the cache is the longest common token prefix with the
previous request (the model the full benchmark checks against the server's own ``cached_tokens``; see
``bench_context``). Fast: nothing is evaluated. Prints a table and writes ``results_cache.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The folder is put on the path just above, so that this runs as a plain script.
from bench_context import SHALLOW, UNBOUNDED, Variant, bench_window, build_workspace, summarise_runs
from estimator_corpus import build_corpus
from run import plan_trajectories

from twinny_magics.budget import DEEP_TARGET_PERCENT
from twinny_magics.servers.openai import CACHE_REUSE_CHUNK

RESULTS = Path(__file__).resolve().parent / "results_cache.json"
#: Our loop with its own trimming, on the counting server (the full benchmark's OURS evaluates for real).
OURS_COUNTED = Variant(f"ours (deep target {DEEP_TARGET_PERCENT}%)")


def reusing(chunk: int) -> Variant:
    """Ours on a llama.cpp server that reuses runs of ``chunk`` tokens past a trim (so: to 65%)."""
    return Variant(f"ours, llama.cpp n_cache_reuse {chunk}", reuse=chunk)


def bench(windows: Sequence[int], chunks: Sequence[int] = (CACHE_REUSE_CHUNK,)) -> dict[str, Any]:
    """Run the policies at each window; the summary per window and policy."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="twinny-bench-cache-") as temp:
        root = Path(temp) / "workspace"
        root.mkdir()
        files = build_workspace(root, build_corpus())
        plan = plan_trajectories(root, files, quick=False)
        variants = (UNBOUNDED, OURS_COUNTED, SHALLOW, *(reusing(chunk) for chunk in chunks))
        for window in windows:
            result = bench_window(
                window, plan[window], workspace=root, work=Path(temp), variants=variants, progress=print
            )
            floor = None
            for name, runs in result.runs.items():
                s = summarise_runs(runs, window, evaluated=False)
                if name == UNBOUNDED.name:
                    floor = s["fresh_per_step"]
                s["times_floor"] = round(s["fresh_per_step"] / floor, 3) if floor else None
                out.setdefault(str(window), {})[name] = {
                    k: s[k]
                    for k in (
                        "requests",
                        "refused",
                        "fresh_per_step",
                        "reevaluated_tokens",
                        "fresh_tokens",
                        "times_floor",
                        "fill",
                        "trims_per_step",
                        "trim_events",
                        "unseen_trims",
                    )
                }
    return out


def table(summary: dict[str, Any]) -> str:
    """Fresh tokens per step, against keep-everything, per window and policy."""
    lines = [
        "Prompt cache: tokens read afresh per step (prompt - cached), against a loop that never trims",
        f"{'window':>6} {'trimming':<44} {'req':>4} {'refused':>7} {'fresh/step':>10} {'re-read':>8} "
        f"{'× keep-all':>10} {'fill':>6} {'trim events':>11} {'unseen':>6}",
    ]
    for window, by in summary.items():
        for name, s in by.items():
            lines.append(
                f"{window:>6} {name:<44} {s['requests']:>4} {s['refused']:>7} {s['fresh_per_step']:>10.1f} "
                f"{s['reevaluated_tokens']:>8} {s['times_floor']:>10.2f} {s['fill']:>6.1%} "
                f"{s['trim_events']:>11} {s['unseen_trims']:>6}"
            )
    return "\n".join(lines)


def _commit() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--windows", default="2048,4096,8192,32768", help="comma-separated windows")
    parser.add_argument(
        "--chunks",
        default=str(CACHE_REUSE_CHUNK),
        help="comma-separated n_cache_reuse sizes to model (the package sends %(default)s)",
    )
    parser.add_argument("--no-store", action="store_true", help=f"do not write {RESULTS.name}")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    chunks = [int(c) for c in args.chunks.split(",")]
    summary = bench([int(w) for w in args.windows.split(",")], chunks)
    print(table(summary))
    entry = {
        "commit": _commit(),
        "deep_target_percent": DEEP_TARGET_PERCENT,
        "n_cache_reuse": chunks,
        "seconds": round(time.perf_counter() - started, 1),
        "windows": summary,
    }
    if not args.no_store:
        RESULTS.write_text(json.dumps(entry, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return entry


if __name__ == "__main__":
    main()
