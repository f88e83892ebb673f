"""The context benchmark's time-to-first-token summary (``benchmarks/bench_context.py``, ``run.py``).

Rows as ``run_variant`` records them, made up here: no server. The summary must take requests that
streamed nothing (no first token) and windows where nothing was trimmed.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from bench_context import (  # noqa: E402
    NO_TOKENIZE,
    OURS,
    UNBOUNDED,
    Run,
    keep_everything,
    newest_first,
    summarise_first_tokens,
    summarise_runs,
    to_share,
)
from run import comparison_table, first_token_table, headline  # noqa: E402 - not a package

from twinny_magics.budget import fit  # noqa: E402


def row(step: int, fresh: int, first: float | None, *, trimmed: int = 0, cached: int = 100) -> dict[str, Any]:
    """One request as ``run_variant`` records it (the fields the summaries read)."""
    prompt = fresh + cached
    return {
        "step": step,
        "estimated": prompt,
        "prompt_tokens": prompt,
        "exact": prompt,
        "cached_tokens": cached,
        "cached_model": cached,
        "limit": 2000,
        "old_tokens": cached,
        "trimmed": trimmed,
        "trim_passes": [1] * trimmed,
        "unseen_trims": 0,
        "retried": None,
        "refused": False,
        "seconds": first or 0.0,
        "first_token_seconds": first,
        "fresh": fresh,
        "counting_seconds": 0.005,
    }


def test_a_request_without_a_first_token_is_counted_apart_and_nothing_trimmed_is_an_empty_group() -> None:
    rows = [row(1, 400, 0.5), row(2, 100, 0.2), row(3, 50, None), row(4, 120, 0.3)]
    summary = summarise_first_tokens(rows)
    assert (summary["n"], summary["untimed"]) == (3, 1)
    assert summary["ms_median"] == 300.0
    assert summary["first_step"] == {"n": 1, "fresh_median": 400, "ms_median": 500.0}
    assert summary["trimmed"] == {"n": 0, "fresh_median": None, "ms_median": None}
    assert summary["untrimmed"] == {"n": 2, "fresh_median": 110.0, "ms_median": 250.0}
    assert "3" not in summary["by_step"]
    assert summary["by_step_range"]["3"]["n"] == 0
    assert summary["counting_ms_median"] == 5.0


def test_the_line_through_fresh_tokens_and_the_trimmed_requests_apart() -> None:
    # 50 ms fixed and 2 ms a fresh token, exactly; step 3 was trimmed (the server read more again).
    rows = [row(step, fresh, (50 + 2 * fresh) / 1000) for step, fresh in ((1, 300), (2, 40), (4, 60))]
    rows.append(row(3, 500, (50 + 2 * 500) / 1000, trimmed=2))
    summary = summarise_first_tokens(rows)
    assert summary["ms_per_fresh"] == 2.0
    assert summary["ms_fixed"] == 50.0
    assert summary["trimmed"] == {"n": 1, "fresh_median": 500, "ms_median": 1050.0}
    assert summary["untrimmed"]["n"] == 2


def test_no_timed_request_gives_no_numbers_rather_than_an_error() -> None:
    summary = summarise_first_tokens([row(1, 400, None), row(2, 80, None)])
    assert summary["n"] == 0
    assert summary["untimed"] == 2
    assert summary["ms_median"] is summary["ms_p95"] is summary["ms_per_fresh"] is summary["ms_fixed"] is None
    assert summarise_first_tokens([])["n"] == 0
    # One request (or every one as fresh): no line.
    assert summarise_first_tokens([row(1, 80, 0.1), row(2, 80, 0.2)])["ms_per_fresh"] is None


def test_only_evaluated_runs_have_the_time_to_first_token_and_the_table_prints_gaps() -> None:
    run = Run(OURS.name, 2048, "short", "native", requests=[row(1, 400, 0.5), row(2, 90, None)])
    assert "first_token" not in summarise_runs([run], 2048, evaluated=False)
    summary = summarise_runs([run], 2048, evaluated=True)
    assert summary["first_token"]["untimed"] == 1
    table = first_token_table({"2048": {OURS.name: summary}})
    assert table.startswith("Time to first token (our loop on the real server)")
    assert "  2048    1     500     500" in table
    assert "—" in table  # no trimmed request, no line through one point


def test_every_trimming_policy_takes_what_the_loop_passes_to_fit() -> None:
    # The benchmark puts these in the place of the package's fit: a keyword fit gained (``earlier``, for
    # a refit) and they lacked ended a full run after 10 minutes.
    wanted = set(inspect.signature(fit).parameters)
    for policy in (keep_everything, newest_first, to_share(0.4)):
        assert set(inspect.signature(policy).parameters) == wanted, policy


def stored_run(package: str, times: float, p95: float, ttft: float | None) -> dict[str, Any]:
    """A run as results.json keeps it, with just the numbers the comparison reads."""
    first = None if ttft is None else {"trimmed": {"n": 3, "ms_median": ttft, "fresh_median": 200}}
    ours = {"requests": 87, "refused": 0, "estimate_error": {"p95": 0.01}, "fresh_per_step": 100 * times}
    ours |= {"fresh_tokens": 1000, "reevaluated_tokens": 50, "trims_per_step": 1.0, "unseen_trims": 2}
    if first:
        ours["first_token"] = first
    return {
        "package": package,
        "mode": "full",
        "windows": {
            "2048": {
                OURS.name: ours,
                UNBOUNDED.name: {"fresh_per_step": 100.0},
                NO_TOKENIZE.name: {"estimate_error": {"p95": p95}},
            }
        },
        "overflows": 0,
        "estimate_error": {"p95": 0.01},
        "no_tokenize": {"estimate_error": {"p95": p95}},
        "overhead": {"2048": {"loop_cpu_ms_per_step": 1.5}},
        "load_ext": {"twinny_magics": {"load_ext_s": 0.02}},
        "tasks": {"configs": {"ours": {"passed": 5}}},
    }


def test_the_comparison_shows_each_number_before_and_after_with_the_commits() -> None:
    old = headline(stored_run("aaaa111", 1.29, 0.117, None))  # an older run had no time to first token
    new = headline(stored_run("bbbb222", 1.05, 0.037, 2874.5))
    table = comparison_table(old, new)
    assert "before (aaaa111)" in table
    assert "after (bbbb222)" in table
    line = next(line for line in table.splitlines() if line.strip().startswith("2048"))
    assert "1.29 → 1.05" in line
    assert "11.7% → 3.7%" in line
    assert "— → 2874" in line
    assert "tasks passed, ours: 5 → 5" in table
