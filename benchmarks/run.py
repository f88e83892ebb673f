"""The project's benchmark: context fit on the real llama.cpp server, overhead, load time (issue 6), what
a kernel result costs the model (``bench_kernel.py``), and whether the agent answers (the task
benchmark, issue 12).

    .venv/bin/python benchmarks/run.py --quick    # windows 2,048/4,096/8,192, four trajectories; 9 tasks
    .venv/bin/python benchmarks/run.py            # adds 32,768 and more trajectories; all 37 tasks
    .venv/bin/python benchmarks/run.py --quick --tasks-only   # only the task benchmark

Prints the tables and writes ``benchmarks/results.json``: the required keys (``overflows``,
``estimate_error``, ``naive_overflow_step``) for this run at the top, everything else beside them, and
the latest quick and full runs each kept under ``quick`` / ``full``. The task benchmark
(``bench_tasks.py``, on the embedded SmolLM2 at a 4,096 window) keeps its own ``results_tasks.json``;
its pass rates per configuration are copied under ``tasks``. ``benchmarks/README.md`` says what every
number means and what is measured for real.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The folder is put on the path just above, so that this runs as a plain script.
from bench_context import (
    ESTIMATES,
    NAIVE,
    NO_TOKENIZE,
    OURS,
    POLICIES,
    UNBOUNDED,
    Trajectory,
    WindowResult,
    bench_window,
    build_workspace,
    errors_of,
    make_trajectory,
    summarise_errors,
    summarise_runs,
)
from bench_kernel import bench_kernel, compact
from bench_kernel import tables as kernel_tables
from bench_kernel import write as write_kernel
from bench_load import bench_load, load_table
from bench_overhead import bench_loop_overhead, bench_streaming_cost
from bench_tasks import compact_summary
from bench_tasks import main as bench_tasks_main
from estimator_corpus import build_corpus, fingerprint

RESULTS = Path(__file__).resolve().parent / "results.json"


def plan_trajectories(root: Path, files: Any, quick: bool) -> dict[int, list[Trajectory]]:
    """Which trajectories run at which window.

    Quick: 20 calls with short reads, both modes at 2,048 and one each at 4,096 and 8,192 (the real
    server reads every prompt, so the time goes with the tokens). Full: 28 calls; at every window to
    8,192 both modes with short reads and a native one with long reads; at 32,768 the long reads in
    both modes (short reads never fill that window).
    """
    calls = 20 if quick else 28

    def short(seed: int, mode: str) -> Trajectory:
        return make_trajectory(root, files, seed, calls, mode)  # type: ignore[arg-type]

    def long(seed: int, mode: str) -> Trajectory:
        return make_trajectory(root, files, seed, calls, mode, long_reads=True)  # type: ignore[arg-type]

    if quick:
        return {
            2048: [short(1, "native"), short(2, "text")],
            4096: [short(3, "text")],
            8192: [short(4, "native")],
        }
    plan = {w: [short(1, "native"), short(2, "text"), long(5, "native")] for w in (2048, 4096, 8192)}
    plan[32768] = [long(5, "native"), long(5, "text")]
    return plan


def _pct(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:+.1%}" if value < 0 else f"{value:.1%}"


def context_tables(summaries: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The estimate/fit table, the naive loop's overflows, and the prompt-cache table."""
    lines = [
        "Context fit on llama.cpp (SmolLM2-135M): estimate error from the second request on, "
        "(estimate - server count) / server count",
        f"{'window':>6} {'loop':<38} {'req':>4} {'refused':>7} {'median':>7} {'p95':>7} {'worst↓':>7} "
        f"{'>10%↓':>5} {'fill':>6} {'max':>6} {'trims/step':>10}",
    ]
    for window, by_variant in summaries.items():
        for variant in [v.name for v in ESTIMATES]:
            s = by_variant[variant]
            e = s["estimate_error"]
            lines.append(
                f"{window:>6} {variant:<38} {s['requests']:>4} {s['refused']:>7} {_pct(e['median']):>7} "
                f"{_pct(e['p95']):>7} {_pct(e['worst_under']):>7} {e.get('over_10_under', 0):>5} "
                f"{_pct(s['fill']):>6} {_pct(s['fill_max']):>6} {s['trims_per_step']:>10.2f}"
            )
    lines += ["", "The naive loop (keeps everything): the request the server first refused, per trajectory"]
    for window, by_variant in summaries.items():
        steps = by_variant[NAIVE.name]["first_refused_step"]
        ours = by_variant[OURS.name]
        lines.append(
            f"{window:>6}  naive first refused at step {', '.join(str(s) for s in steps)};  our loop: "
            f"{ours['refused']} refused in {ours['requests']} requests"
        )
    lines += [
        "",
        "Prompt cache: tokens the server evaluated afresh (prompt - cached) and, of those, tokens it had "
        "read before (re-evaluated: a trim changed the prompt above them)",
        f"{'window':>6} {'trimming':<38} {'fresh/step':>10} {'re-eval':>8} {'re-eval %':>9} "
        f"{'× keep-all':>10} {'trims/step':>10} {'unseen':>6} {'cache':>6}",
    ]
    for window, by_variant in summaries.items():
        reference = by_variant[UNBOUNDED.name]["fresh_per_step"]
        for variant in [OURS.name, *(v.name for v in POLICIES)]:
            s = by_variant[variant]
            share = s["reevaluated_tokens"] / s["fresh_tokens"] if s["fresh_tokens"] else 0.0
            lines.append(
                f"{window:>6} {variant:<38} {s['fresh_per_step']:>10.1f} {s['reevaluated_tokens']:>8} "
                f"{share:>9.1%} {s['fresh_per_step'] / reference if reference else 0:>10.2f} "
                f"{s['trims_per_step']:>10.2f} {s['unseen_trims']:>6} {s['cache_source']:>6}"
            )
    checks = [
        f"{w}: cache model {s[OURS.name].get('cache_model_mismatches', 0)} off, "
        f"exact count {s[OURS.name]['count_mismatches']} off in {s[OURS.name]['requests']}"
        for w, s in summaries.items()
    ]
    lines.append("checks against the real server (our loop's requests): " + "; ".join(checks))
    return "\n".join(lines)


def _num(value: float | None, spec: str = ".0f") -> str:
    return "—" if value is None else format(value, spec)


def first_token_table(summaries: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Our loop's time to first token on the real server, against the tokens read afresh."""
    lines = [
        "Time to first token (our loop on the real server): ms from sending a request to its first "
        "streamed token, against the tokens the server evaluated afresh (prompt - cached)",
        f"{'window':>6} {'req':>4} {'median':>7} {'p95':>7} {'fresh':>6} {'ms/fresh':>8} {'fixed':>6} "
        f"{'count':>5} | {'step 1 fresh':>12} {'ms':>6} | {'trimmed':>7} {'fresh':>6} {'ms':>6} | "
        f"{'untrimmed':>9} {'fresh':>6} {'ms':>6}",
    ]
    ranges: list[str] = []
    by_step: list[str] = []
    for window, by_variant in summaries.items():
        t = by_variant[OURS.name].get("first_token")
        if not t:
            continue
        first, cut, kept = t["first_step"], t["trimmed"], t["untrimmed"]
        lines.append(
            f"{window:>6} {t['n']:>4} {_num(t['ms_median']):>7} {_num(t['ms_p95']):>7} "
            f"{_num(t['fresh_median']):>6} {_num(t['ms_per_fresh'], '.2f'):>8} {_num(t['ms_fixed']):>6} "
            f"{_num(t['counting_ms_median']):>5} | {_num(first['fresh_median']):>12} "
            f"{_num(first['ms_median']):>6} | {cut['n']:>7} {_num(cut['fresh_median']):>6} "
            f"{_num(cut['ms_median']):>6} | {kept['n']:>9} {_num(kept['fresh_median']):>6} "
            f"{_num(kept['ms_median']):>6}"
        )
        if not ranges:
            ranges = list(t["by_step_range"])
            head = " ".join(f"{label:>13}" for label in ranges)
            by_step = [f"By step: median fresh tokens / median ms\n{'window':>6} {head}"]
        cells = [t["by_step_range"][label] for label in ranges]
        by_step.append(
            f"{window:>6} "
            + " ".join(
                f"{_num(c['fresh_median']) + ' / ' + _num(c['ms_median']) if c['n'] else '—':>13}"
                for c in cells
            )
        )
    if ranges:
        lines += ["", *by_step]
    return "\n".join(lines)


def overhead_table(overhead: dict[str, Any], streaming: dict[str, float]) -> str:
    """The loop's own CPU per step against the model's time per request."""
    lines = [
        "Overhead: the loop's own CPU per step (plan, estimate, fit, render, parse, events; no model), "
        "against the model's time per request on the real server",
        f"{'window':>6} {'steps':>5} {'trims':>5} {'loop ms/step':>12} {'tools ms/step':>13} "
        f"{'model ms/req':>12} {'loop/model':>10}",
    ]
    for window, row in overhead.items():
        model = row.get("model_ms_per_request")
        share = f"{100 * row['loop_over_model']:.2g}%" if row.get("loop_over_model") is not None else "—"
        model_text = (
            f"{model:.0f}{'*' if row.get('model_from_window') != int(window) else ''}" if model else "—"
        )
        lines.append(
            f"{window:>6} {row['steps']:>5} {row['trims']:>5} {row['loop_cpu_ms_per_step']:>12.2f} "
            f"{row['tools_cpu_ms_per_step']:>13.2f} {model_text:>12} {share:>10}"
        )
    if any(row.get("model_from_window") != int(w) for w, row in overhead.items()):
        lines.append("* the model's time at the largest window measured on the real server in this run")
    lines.append(
        f"Streaming detection: {streaming['stream_ms_per_kb']:.3f} ms CPU a KB of reply (4-character "
        f"chunks, then one parse); one parse of the finished reply {streaming['parse_ms_per_kb']:.3f} ms a KB"
    )
    return "\n".join(lines)


def summarise(results: dict[int, WindowResult]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per window, per variant: the summary numbers."""
    return {
        str(window): {
            name: summarise_runs(runs, window, evaluated=name == OURS.name)
            for name, runs in result.runs.items()
        }
        for window, result in results.items()
    }


def pooled(results: dict[int, WindowResult], variant: str) -> dict[str, Any]:
    """One variant over every window: the requests refused as too long, and its estimate error."""
    runs = [run for result in results.values() for run in result.runs[variant]]
    return {
        "overflows": sum(run.refused for run in runs),
        "failed_replies": sum(run.error is not None for run in runs),
        "estimate_error": summarise_errors(errors_of(runs)),
    }


def naive_steps(summaries: dict[str, dict[str, dict[str, Any]]]) -> dict[str, int | None]:
    """The earliest step at which the naive loop was refused, per window (None: never, in this run)."""
    out: dict[str, int | None] = {}
    for window, by_variant in summaries.items():
        steps = [s for s in by_variant[NAIVE.name]["first_refused_step"] if s is not None]
        out[window] = min(steps) if steps else None
    return out


def headline(run: dict[str, Any]) -> dict[str, Any]:
    """The numbers of a run that a later run is compared on: per window (our loop) and for the whole run.

    Works on any stored run (older runs lack some numbers: those are None)."""
    windows: dict[str, dict[str, Any]] = {}
    for window, by_variant in run.get("windows", {}).items():
        ours = by_variant.get(OURS.name, {})
        reference = by_variant.get(UNBOUNDED.name, {}).get("fresh_per_step")
        blind = by_variant.get(NO_TOKENIZE.name, {}).get("estimate_error", {})
        first = ours.get("first_token") or {}
        fresh, again = ours.get("fresh_tokens"), ours.get("reevaluated_tokens")
        windows[window] = {
            "requests": ours.get("requests"),
            "refused": ours.get("refused"),
            "p95": ours.get("estimate_error", {}).get("p95"),
            "p95_without_tokenize": blind.get("p95"),
            "times_keep_all": round(ours["fresh_per_step"] / reference, 3)
            if reference and ours.get("fresh_per_step") is not None
            else None,
            "reread_share": round(again / fresh, 4) if fresh and again is not None else None,
            "trims_per_step": ours.get("trims_per_step"),
            "unseen_trims": ours.get("unseen_trims"),
            "ttft_trimmed_ms": (first.get("trimmed") or {}).get("ms_median"),
            "ttft_untrimmed_ms": (first.get("untrimmed") or {}).get("ms_median"),
            "trimmed_fresh": (first.get("trimmed") or {}).get("fresh_median"),
        }
    tasks = run.get("tasks") or {}
    return {
        "package": run.get("package"),
        "mode": run.get("mode"),
        "windows": windows,
        "refused": run.get("overflows"),
        "p95": (run.get("estimate_error") or {}).get("p95"),
        "p95_without_tokenize": ((run.get("no_tokenize") or {}).get("estimate_error") or {}).get("p95"),
        "loop_ms_per_step": {
            w: r.get("loop_cpu_ms_per_step") for w, r in (run.get("overhead") or {}).items()
        },
        "load_ext_s": ((run.get("load_ext") or {}).get("twinny_magics") or {}).get("load_ext_s"),
        "tasks": {name: c.get("passed") for name, c in (tasks.get("configs") or {}).items()}
        if isinstance(tasks, dict)
        else {},
    }


def comparison_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Two runs' headlines (:func:`headline`) side by side: before → after, each with its commit."""

    def pair(old: Any, new: Any, spec: str) -> str:
        def one(value: Any) -> str:
            if value is None:
                return "—"
            return f"{value:.1%}" if spec == "%" else format(value, spec)

        return f"{one(old)} → {one(new)}"

    columns = [
        ("refused", "refused", "d"),
        ("p95 error", "p95", "%"),
        ("p95, no /tokenize", "p95_without_tokenize", "%"),
        ("× keep-all", "times_keep_all", ".2f"),
        ("re-read", "reread_share", "%"),
        ("trims/step", "trims_per_step", ".2f"),
        ("unseen", "unseen_trims", "d"),
        ("TTFT trimmed ms", "ttft_trimmed_ms", ".0f"),
        ("TTFT untrimmed ms", "ttft_untrimmed_ms", ".0f"),
    ]
    lines = [
        f"Against the earlier {after.get('mode') or 'run'}: before ({before.get('package')}) → "
        f"after ({after.get('package')}), our loop on the real server",
        f"{'window':>6} " + " ".join(f"{title:>19}" for title, _, _ in columns),
    ]
    windows = list(dict.fromkeys([*before.get("windows", {}), *after.get("windows", {})]))
    for window in windows:
        old, new = before["windows"].get(window, {}), after["windows"].get(window, {})
        lines.append(
            f"{window:>6} "
            + " ".join(f"{pair(old.get(key), new.get(key), spec):>19}" for _, key, spec in columns)
        )
    lines.append(
        f"whole run: refused {pair(before.get('refused'), after.get('refused'), 'd')}; estimate p95 "
        f"{pair(before.get('p95'), after.get('p95'), '%')}, without /tokenize "
        f"{pair(before.get('p95_without_tokenize'), after.get('p95_without_tokenize'), '%')}; "
        f"%load_ext {pair(before.get('load_ext_s'), after.get('load_ext_s'), '.3f')} s"
    )
    for window in dict.fromkeys([*before.get("loop_ms_per_step", {}), *after.get("loop_ms_per_step", {})]):
        lines.append(
            f"loop CPU per step at {window}: "
            + pair(before["loop_ms_per_step"].get(window), after["loop_ms_per_step"].get(window), ".2f")
            + " ms"
        )
    for name in dict.fromkeys([*before.get("tasks", {}), *after.get("tasks", {})]):
        lines.append(
            f"tasks passed, {name}: {pair(before['tasks'].get(name), after['tasks'].get(name), 'd')}"
        )
    return "\n".join(lines)


def compare_stored(mode: str, earlier: Path, results: Path = RESULTS) -> None:
    """Print the stored ``mode`` run against ``mode``'s run in ``earlier`` and keep that as its ``before``."""
    stored = json.loads(results.read_text(encoding="utf-8"))
    old = json.loads(earlier.read_text(encoding="utf-8")).get(mode)
    if mode not in stored or old is None:
        raise SystemExit(f"no {mode} run to compare: {results} and {earlier} must both hold one")
    run = stored[mode]
    run["before"] = headline(old)
    if stored.get("package") == run.get("package") and stored.get("seconds") == run.get("seconds"):
        stored["before"] = run["before"]  # the top is this run
    results.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
    print(comparison_table(run["before"], headline(run)))


def package_version() -> str:
    """The commit the package was run at, ``+changes`` when its files differ from it (a shared tree)."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "twinny_magics"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+changes" if changed else "")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="three windows, four trajectories; the 9 quick tasks"
    )
    parser.add_argument(
        "--windows",
        type=lambda text: [int(w) for w in text.split(",")],
        help="only these windows of the plan (e.g. 2048,4096): kept under `partial`, the top left alone",
    )
    parser.add_argument(
        "--jai-venv", type=Path, default=Path("/tmp/jai-venv"), help="a venv with jupyter-ai-magics"
    )
    parser.add_argument("--no-tasks", action="store_true", help="skip the task benchmark (bench_tasks.py)")
    parser.add_argument(
        "--tasks-only",
        action="store_true",
        help="only the task benchmark (it writes results_tasks.json; results.json is left alone)",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="FILE",
        help="only compare: the stored run of this mode against the same mode's run in FILE (an earlier "
        "results.json, e.g. from `git show REV:benchmarks/results.json`); kept as its `before`",
    )
    args = parser.parse_args(argv)
    if args.compare:
        compare_stored("quick" if args.quick else "full", args.compare)
        return
    if args.tasks_only:
        bench_tasks_main(["--quick"] if args.quick else [])
        return
    started = time.perf_counter()
    package = package_version()
    mode = "quick" if args.quick else "full"
    pieces = build_corpus()
    with tempfile.TemporaryDirectory(prefix="twinny-bench-") as temp:
        work = Path(temp)
        root = work / "workspace"
        root.mkdir()
        files = build_workspace(root, pieces)
        plan = plan_trajectories(root, files, args.quick)
        if args.windows:
            plan = {w: plan[w] for w in args.windows}
        print(
            f"{mode} run: {len(files)} workspace files; windows {', '.join(str(w) for w in plan)}", flush=True
        )
        results: dict[int, WindowResult] = {}
        for window, trajectories in plan.items():
            results[window] = bench_window(
                window,
                trajectories,
                workspace=root,
                work=work,
                variants=[*ESTIMATES, *POLICIES],
                progress=lambda m: print(m, flush=True),
            )
        context_seconds = time.perf_counter() - started
        summaries = summarise(results)
        print(flush=True)
        print(context_tables(summaries), flush=True)
        print(flush=True)
        print(first_token_table(summaries), flush=True)

        overhead_runs = {2048: plan[2048][:1], 32768: plan.get(32768, [])[:1]}
        if not overhead_runs[32768]:
            overhead_runs[32768] = [make_trajectory(root, files, 5, 28, "native", long_reads=True)]
        overhead = bench_loop_overhead(overhead_runs, root)
    measured = {int(w): s[OURS.name].get("model_seconds_per_request") for w, s in summaries.items()}
    for key, row in overhead.items():
        source = int(key) if measured.get(int(key)) else max(w for w, v in measured.items() if v)
        row["model_from_window"] = source
        row["model_ms_per_request"] = round(1000 * measured[source], 1)  # type: ignore[operator]
        row["loop_over_model"] = round(row["loop_cpu_ms_per_step"] / row["model_ms_per_request"], 7)
    streaming = bench_streaming_cost()
    print(flush=True)
    print(overhead_table(overhead, streaming), flush=True)
    load = bench_load(repeat=3 if args.quick else 7, jai_venv=args.jai_venv)
    print(flush=True)
    print(load_table(load), flush=True)
    # What a kernel result costs the model (bench_kernel.py; its own results_kernel.json as well).
    kernel = None if args.windows else bench_kernel(quick=args.quick, llama=not args.quick)
    if kernel is not None:
        write_kernel(kernel)
        print(flush=True)
        print(kernel_tables(kernel), flush=True)
    # Whether the agent answers: a run of its own (one server at a time: the context servers are stopped).
    tasks = None if args.no_tasks or args.windows else bench_tasks_main(["--quick"] if args.quick else [])

    ours = pooled(results, OURS.name)
    no_tokenize = pooled(results, NO_TOKENIZE.name)
    error = ours["estimate_error"]
    seconds = round(time.perf_counter() - started, 1)
    run: dict[str, Any] = {
        "overflows": ours["overflows"],
        "estimate_error": {k: error[k] for k in ("median", "p95", "worst_under", "n")},
        "naive_overflow_step": naive_steps(summaries),
        "goal": {
            "p95_at_most_5pct": bool(error["p95"] <= 0.05),
            "never_more_than_10pct_under": bool(error["worst_under"] >= -0.10),
            "no_overflows": ours["overflows"] == 0,
        },
        "no_tokenize": no_tokenize,
        "windows": summaries,
        "trajectories": {
            str(w): [{"name": t.name, "mode": t.mode, "calls": len(t.calls)} for t in ts]
            for w, ts in plan.items()
        },
        "overhead": overhead,
        "streaming": streaming,
        "load_ext": load,
        "kernel": compact(kernel) if kernel else None,
        "tasks": compact_summary(tasks) if tasks else None,
        "mode": mode,
        "seconds": seconds,
        "context_seconds": round(context_seconds, 1),
        "server_seconds": {str(w): round(r.seconds, 1) for w, r in results.items()},
        "corpus": fingerprint(pieces),
        "package": package,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
    }
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    kept = {k: previous[k] for k in ("quick", "full", "partial") if k in previous}
    if not args.windows and mode in previous:
        run["before"] = headline(previous[mode])  # the earlier run of this mode, to compare with
    if args.windows:
        # A part of a run is kept beside the whole ones, never in their place.
        run["mode"] = mode = f"{mode}, windows {', '.join(str(w) for w in args.windows)}"
        kept["partial"] = run
        top = {k: v for k, v in previous.items() if k not in kept}
    else:
        kept[mode] = run
        top = run
    RESULTS.write_text(json.dumps({**top, **kept}, indent=1) + "\n", encoding="utf-8")
    print(
        f"\n{mode} run in {seconds:.0f} s. Our loop: {ours['overflows']} refused; estimate error median "
        f"{_pct(error['median'])}, p95 {_pct(error['p95'])}, worst under {_pct(error['worst_under'])} "
        f"(without /tokenize: {no_tokenize['overflows']} refused, p95 "
        f"{_pct(no_tokenize['estimate_error']['p95'])}, worst under "
        f"{_pct(no_tokenize['estimate_error']['worst_under'])}). Wrote {RESULTS}"
    )
    if "before" in run:
        print(flush=True)
        print(comparison_table(run["before"], headline(run)), flush=True)
    goal = run["goal"]
    print(
        "Goal: p95 ≤ 5% "
        + ("met" if goal["p95_at_most_5pct"] else "MISSED")
        + "; never more than 10% under "
        + ("met" if goal["never_more_than_10pct_under"] else "MISSED")
        + "; no request refused as too long "
        + ("met" if goal["no_overflows"] else "MISSED")
    )


if __name__ == "__main__":
    main()
