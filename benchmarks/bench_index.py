"""What the search index costs and saves on a large workspace: build, updates, search, and grep beside it.

    .venv/bin/python benchmarks/bench_index.py [--files 10000] [--queries 50]

A synthetic Python workspace (100 packages of 100 modules by default, each module a docstring, imports,
a constant, three functions and a class with two methods, 40–70 lines, names unique to the module) is
written to a temporary folder, with the index kept in another (``TWINNY_MAGICS_INDEX_DIR``). Measured:

- the full build (``SearchIndex.update`` on an empty index, no time limit) and the index file's size;
- an update with nothing changed (the walk and a stat of every file), median of 5;
- an update after 10 files were edited;
- search latency over ``--queries`` queries (names, name parts, plain words, whole questions), median and
  p95: ``search`` as the tool calls it (an update walk, then the query) and the query alone;
- ``tools.grep.grep`` of one word, as the model would call it, in the same run: a name defined in one
  file (grep reads every file), and a common word (grep stops at its match limit); median of 3.

The machine is shared (2 cores, other jobs): read the ratios, not the absolute times.
Prints a table and writes benchmarks/results_index.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from twinny_magics.retrieval import query_terms
from twinny_magics.tools import ToolLimits, grep, search_index
from twinny_magics.tools.paths import Confinement

RESULTS = Path(__file__).with_name("results_index.json")
SEED = 7
WORDS = (  # noqa: SIM905 (a word list)
    "parse render merge split load save fetch cache index rank score token buffer stream window "
    "budget limit table column vector matrix graph node edge path route query filter group order"
).split()


def module_source(rng: random.Random, package: int, module: int) -> str:
    """One synthetic module, its names unique to (package, module)."""
    tag = f"{package}_{module}"
    verb, noun, other = rng.sample(WORDS, 3)
    body = [
        f'"""The {noun} helpers of package {package}: {verb} and {other}."""',
        "",
        "import os",
        "from collections import defaultdict",
        "",
        f"LIMIT_{tag} = {rng.randint(1, 10_000)}",
        "",
        "",
    ]
    for k in range(3):
        body += [
            f"def {verb}_{noun}_{tag}_{k}(items, limit=LIMIT_{tag}):",
            f'    """{verb.title()} the {noun} of items, at most limit of them."""',
            "    seen = defaultdict(list)",
            "    for item in items[:limit]:",
            f"        seen[item.{other}].append(item)",
        ]
        body += [f"    # step {i}: {rng.choice(WORDS)} {rng.choice(WORDS)}" for i in range(rng.randint(2, 8))]
        body += ["    return dict(seen)", "", ""]
    body += [
        f"class {noun.title()}{other.title()}{tag.replace('_', 'x')}:",
        f'    """Keeps {noun} by {other}."""',
        "",
        "    def __init__(self):",
        "        self.parts = []",
        "",
        f"    def {other}_all(self):",
        f"        return [os.path.join(p, '{noun}') for p in self.parts]",
        "",
    ]
    return "\n".join(body)


def make_workspace(root: Path, count: int) -> list[Path]:
    rng = random.Random(SEED)
    per = 100
    made = []
    for n in range(count):
        package, module = divmod(n, per)
        folder = root / f"pkg_{package:03d}"
        folder.mkdir(exist_ok=True)
        path = folder / f"mod_{module:03d}.py"
        path.write_text(module_source(rng, package, module))
        made.append(path)
    return made


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def queries(rng: random.Random, count: int, files_made: int) -> list[str]:
    out = []
    for i in range(count):
        package, module = divmod(rng.randrange(files_made), 100)
        kind = i % 4
        if kind == 0:
            out.append(f"LIMIT_{package}_{module}")
        elif kind == 1:
            out.append(f"Where is the {rng.choice(WORDS)} function of package {package} defined?")
        elif kind == 2:
            out.append(f"{rng.choice(WORDS)} {rng.choice(WORDS)}")
        else:
            out.append(f"what does {rng.choice(WORDS)}_{rng.choice(WORDS)} return")
    return out


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    started = time.perf_counter()
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "ws"
        root.mkdir()
        os.environ[search_index.INDEX_DIR_VARIABLE] = str(Path(folder) / "index")
        t_write, made = timed(lambda: make_workspace(root, args.files))
        source_bytes = sum(p.stat().st_size for p in made)
        conf = Confinement(root)
        limits = ToolLimits()
        index = search_index.SearchIndex(conf, limits, seconds=3600)

        t_build, survey = timed(index.update)
        assert survey.pending == 0, survey.pending
        assert not survey.truncated, "the walk stopped at its entry limit"
        assert index.location is not None, "the index was kept in memory"
        chunks = index._connect().execute("SELECT count(*) FROM chunks").fetchone()[0]
        index_bytes = index.location.stat().st_size

        no_change = [timed(index.update)[0] for _ in range(5)]
        for path in rng.sample(made, 10):
            path.write_text(path.read_text() + "\n# edited for the benchmark\n")
        t_touched, survey = timed(index.update)

        asked = queries(rng, args.queries, args.files)
        with_update: list[float] = []
        query_only: list[float] = []
        hits = 0
        for question in asked:
            took, found = timed(lambda q=question: index.search(q, 4))
            with_update.append(took)
            hits += bool(found)
            terms = query_terms(question)
            if terms:
                query_only.append(timed(lambda t=terms: index._search(t, 4))[0])

        # grep as the model calls it: a name defined in one file (every file is read) and a common word.
        rare = "LIMIT_77_42" if args.files > 7742 else "LIMIT_0_1"
        grep_rare = [timed(lambda: grep.grep(conf, limits, rare, None))[0] for _ in range(3)]
        grep_common = [timed(lambda: grep.grep(conf, limits, "defaultdict", None))[0] for _ in range(3)]
        grep_text = grep.grep(conf, limits, rare, None)
        search_rare = [timed(lambda: index.search(rare, 4))[0] for _ in range(3)]
        rare_found = index.search(rare, 4)
        index.close()

    result = {
        "files": args.files,
        "source_mb": round(source_bytes / 1e6, 1),
        "write_workspace_s": round(t_write, 1),
        "build_s": round(t_build, 1),
        "build_files_per_s": round(args.files / t_build),
        "chunks": chunks,
        "index_mb": round(index_bytes / 1e6, 1),
        "index_to_source": round(index_bytes / source_bytes, 2),
        "update_no_change_ms": {"median": ms(statistics.median(no_change)), "max": ms(max(no_change))},
        "update_10_touched_ms": ms(t_touched),
        "search_with_update_ms": {"median": ms(statistics.median(with_update)), "p95": ms(p95(with_update))},
        "query_only_ms": {"median": ms(statistics.median(query_only)), "p95": ms(p95(query_only))},
        "queries": len(asked),
        "queries_with_results": hits,
        "grep_rare_word_ms": ms(statistics.median(grep_rare)),
        "grep_common_word_ms": ms(statistics.median(grep_common)),
        "search_rare_word_ms": ms(statistics.median(search_rare)),
        "grep_over_search_rare": round(statistics.median(grep_rare) / statistics.median(search_rare), 1),
        "grep_rare_found": rare in grep_text,
        "search_rare_first": rare_found[0].path if rare_found else None,
        "seconds": round(time.perf_counter() - started, 1),
    }
    update_ms, query_ms = result["search_with_update_ms"], result["query_only_ms"]
    rows = [
        ("files (source MB)", f"{result['files']:,} ({result['source_mb']} MB)"),
        ("full build", f"{result['build_s']} s ({result['build_files_per_s']} files/s, {chunks:,} chunks)"),
        ("index file", f"{result['index_mb']} MB ({result['index_to_source']}x the source)"),
        ("update, nothing changed", f"{result['update_no_change_ms']['median']} ms median"),
        ("update, 10 files edited", f"{result['update_10_touched_ms']} ms"),
        (
            "search (update + query)",
            f"{update_ms['median']} ms median, {update_ms['p95']} ms p95",
        ),
        (
            "query alone",
            f"{query_ms['median']} ms median, {query_ms['p95']} ms p95",
        ),
        (
            "grep, a name in one file",
            f"{result['grep_rare_word_ms']} ms (found: {result['grep_rare_found']})",
        ),
        ("grep, a common word", f"{result['grep_common_word_ms']} ms"),
        (
            "search, the same name",
            f"{result['search_rare_word_ms']} ms (first: {result['search_rare_first']})",
        ),
        ("grep / search, that name", f"{result['grep_over_search_rare']}x"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{result['seconds']} s; wrote {RESULTS}")


if __name__ == "__main__":
    main()
