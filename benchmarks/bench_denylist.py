"""How much of what people name their credential files the deny list withholds, and what it costs.

Run: ``.venv/bin/python benchmarks/bench_denylist.py [--before REV]``. Compares the deny list (and grep)
at ``--before`` (default: the commit before the deny list grew, loaded with ``git show``) with the
working tree's, on the two lists in ``tests/test_security_deny_names.py``:

- coverage: of ``CREDENTIAL_NAMES`` (names credentials are really kept under), the share withheld —
  at the top, deep in folders and in capitals, all three; of ``NEAR_MISSES`` (ordinary files with close
  names), the share withheld (wrongly) in either place;
- cost: `SecretFiles.match` over every file name of the installed packages (a large real tree; a
  walk calls it once per entry), and grep over a copy of the package and its tests (about 2.6 MB of
  text): the first grep (nothing cached: grep now masks each file before it searches it) and the next
  ones, median of 5.

Prints a table and writes ``benchmarks/results_denylist.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("results_denylist.json")
BEFORE = "356b796ab0cf208f570b287c65766f5ea7ed6585"  # the deny list and grep before issue 26's change
sys.path.insert(0, str(ROOT / "tests"))

from test_security_deny_names import CREDENTIAL_NAMES, NEAR_MISSES  # noqa: E402 - tests are no package

from twinny_magics.tools import files, grep  # noqa: E402
from twinny_magics.tools.base import ToolLimits  # noqa: E402
from twinny_magics.tools.denied import SecretFiles  # noqa: E402
from twinny_magics.tools.paths import Confinement  # noqa: E402


def old_module(rev: str, path: str, name: str) -> types.ModuleType:
    """The module at ``path`` as it was at ``rev``, loaded under ``name`` beside today's package."""
    source = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType(name)
    module.__file__ = f"{rev[:7]}:{path}"
    sys.modules[name] = module  # dataclasses and the like look their module up while it runs
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def placements(name: str) -> list[str]:
    return [name, f"deep/er/{name}", f"deep/{name.upper()}"]


def coverage(rules: Any) -> dict[str, Any]:
    """Which credential names are withheld in every placement, which near misses in any."""
    missed = [n for n in CREDENTIAL_NAMES if any(rules.match(p, is_dir=False) is None for p in placements(n))]
    wrong = [
        n for n in NEAR_MISSES if any(rules.match(p, is_dir=False) is not None for p in (n, f"deep/er/{n}"))
    ]
    return {
        "credentials_withheld": len(CREDENTIAL_NAMES) - len(missed),
        "credentials": len(CREDENTIAL_NAMES),
        "credential_coverage": round((len(CREDENTIAL_NAMES) - len(missed)) / len(CREDENTIAL_NAMES), 4),
        "credentials_missed": missed,
        "near_misses_withheld": len(wrong),
        "near_misses": len(NEAR_MISSES),
        "near_miss_rate": round(len(wrong) / len(NEAR_MISSES), 4),
        "near_misses_wrongly_withheld": wrong,
        "patterns": len(rules.patterns),
    }


def tree_names(limit: int = 40_000) -> list[str]:
    """Relative paths of the installed packages' files: a large real tree."""
    lib = Path(sys.prefix) / "lib"
    rels: list[str] = []
    for top, _, names in os.walk(lib):
        rels += [os.path.relpath(os.path.join(top, n), lib) for n in names]
        if len(rels) >= limit:
            break
    return rels[:limit]


def match_cost(make: Callable[[], Any], rels: list[str]) -> dict[str, float]:
    """Microseconds per path for a walk's check (``parents=False``), a fresh rule set each run."""
    runs = []
    for _ in range(3):
        rules = make()
        start = time.perf_counter()
        for rel in rels:
            rules.match(rel, is_dir=False, parents=False)
        runs.append((time.perf_counter() - start) / len(rels) * 1e6)
    return {"us_per_path": round(min(runs), 2), "paths": len(rels)}


def grep_cost(grep: Callable[..., str], corpus: Path, clear: Callable[[], None]) -> dict[str, float]:
    """Seconds for a grep over the corpus: the first (cold) and the median of the next five."""
    conf = Confinement(corpus)
    limits = ToolLimits()
    clear()
    start = time.perf_counter()
    grep(conf, limits, "def main", None)
    cold = time.perf_counter() - start
    warm = []
    for _ in range(5):
        start = time.perf_counter()
        grep(conf, limits, "def main", None)
        warm.append(time.perf_counter() - start)
    return {"cold_s": round(cold, 3), "warm_s": round(statistics.median(warm), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default=BEFORE, help="the commit to compare with")
    args = parser.parse_args()
    old_denied = old_module(args.before, "twinny_magics/tools/denied.py", "_denied_before")
    old_files = old_module(args.before, "twinny_magics/tools/files.py", "_files_before")
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()

    before = coverage(old_denied.SecretFiles())
    after = coverage(SecretFiles())
    rels = tree_names()
    cost_before = match_cost(old_denied.SecretFiles, rels)
    cost_after = match_cost(SecretFiles, rels)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        for part in ("twinny_magics", "tests"):
            shutil.copytree(ROOT / part, corpus / part, ignore=shutil.ignore_patterns("__pycache__"))
        size = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())
        grep_before = grep_cost(old_files.grep, corpus, lambda: None)
        grep_after = grep_cost(grep.grep, corpus, files._shown_cache.clear)

    rows = [
        ("credential names withheld", "credential_coverage", "credentials_withheld", "credentials"),
        ("near misses withheld (wrongly)", "near_miss_rate", "near_misses_withheld", "near_misses"),
    ]
    print(f"Deny list at {args.before[:7]} (before) and the working tree at {head} (after)\n")
    print(f"{'':34} {'before':>16} {'after':>16}")
    for label, rate, count, total in rows:
        cells = [f"{r[count]}/{r[total]} ({r[rate]:.0%})" for r in (before, after)]
        print(f"{label:34} {cells[0]:>16} {cells[1]:>16}")
    print(f"{'patterns':34} {before['patterns']:>16} {after['patterns']:>16}")
    cells = [f"{c['us_per_path']:.1f} us" for c in (cost_before, cost_after)]
    print(f"{'match, per path (' + str(len(rels)) + ')':34} {cells[0]:>16} {cells[1]:>16}")
    mb = size / 1e6
    for key, label in (("cold_s", "grep, first"), ("warm_s", "grep, again (median)")):
        cells = [f"{g[key]:.3f} s" for g in (grep_before, grep_after)]
        print(f"{label + f' ({mb:.1f} MB)':34} {cells[0]:>16} {cells[1]:>16}")
    print(f"\nStill missed after: {after['credentials_missed'] or 'none'}")
    print(f"Near misses withheld after: {after['near_misses_wrongly_withheld'] or 'none'}")
    print(f"Missed before: {', '.join(before['credentials_missed'])}")

    RESULTS.write_text(
        json.dumps(
            {
                "before": {"rev": args.before, **before, "match": cost_before, "grep": grep_before},
                "after": {"rev": head, **after, "match": cost_after, "grep": grep_after},
                "grep_corpus_bytes": size,
                "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nWrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
