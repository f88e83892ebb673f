"""Over-masking: how much ordinary Python the secret masker hides, before and after a change to it.

    .venv/bin/python benchmarks/bench_masking.py [--before REV] [--limit N] [--show N]

Runs ``redact.mask_secrets`` over every ``.py`` file of the standard library (``sys.base_prefix``'s
``lib/python3.X``, its ``test`` package included) and of this venv's site-packages, twice: with the
masker as it is in the work tree ("after") and as it was at ``--before`` (read with ``git show`` into a
temporary module: ``twinny_magics/redact.py``, or the ``twinny_magics/redact/`` package it became). None
of these files holds a real credential, so every masked line is over-masking, or a test fixture shaped
like a key; the masked lines are listed (in the JSON, all of them; printed, the first ``--show``) so a
person can judge them. Each file is masked whole, as it is and as read_file shows it (numbered lines).
Also the time per MB of each masker (the best of three runs per file, the two maskers taking turns: the
machine is shared).

Prints a table and writes benchmarks/results_masking.json.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).with_name("results_masking.json")
#: The commit the masker was taken from before issue 26's change (its last commit before it).
BEFORE = "356b796"
#: A file bigger than this is skipped (generated tables; none of the corpus's code).
MAX_BYTES = 2_000_000
RUNS = 3


def corpus() -> list[Path]:
    """The .py files of the standard library and of this venv's site-packages, sorted."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    purelib = Path(sysconfig.get_paths()["purelib"])
    files = [p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts]
    files += purelib.rglob("*.py")
    return sorted({p for p in files if p.is_file() and p.stat().st_size <= MAX_BYTES})


def load_masker(rev: str) -> ModuleType:
    """The masker at ``rev``, as a module of its own (it imports nothing of ours but its own modules):
    ``twinny_magics/redact.py``, or each module of the ``twinny_magics/redact/`` package it became."""
    folder = Path(tempfile.mkdtemp()) / "redact_before"
    folder.mkdir()
    listed = subprocess.run(
        ["git", "ls-tree", "--name-only", rev, "twinny_magics/redact/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in listed or ["twinny_magics/redact.py"]:
        source = subprocess.run(
            ["git", "show", f"{rev}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        (folder / ("__init__.py" if name.endswith("redact.py") else Path(name).name)).write_text(source)
    spec = importlib.util.spec_from_file_location(
        "redact_before", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["redact_before"] = module  # its modules import one another as `.base`, `.names`…
    spec.loader.exec_module(module)
    return module


def masked_lines(text: str, out: str) -> list[tuple[int, str, str]]:
    """``(line number, line before, line after)`` for each line of ``text`` the masker changed."""
    if out == text:
        return []
    old, new = text.split("\n"), out.split("\n")
    rows = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        after = "\n".join(new[j1:j2])
        for n in range(i1, max(i2, i1 + 1)):
            if n < len(old):
                rows.append((n + 1, old[n], after if n == i1 else ""))
    return rows


def measure(
    maskers: dict[str, Callable[[str], str]], texts: list[tuple[str, str]], runs: int
) -> dict[str, Any]:
    """Each masker over the corpus: files and lines masked, the lines themselves, ms per MB.

    The maskers take turns on each file, so a busy moment of the shared machine costs both alike, and
    each file's time is the best of ``runs``.
    """
    files: dict[str, list[dict[str, Any]]] = {label: [] for label in maskers}
    took = dict.fromkeys(maskers, 0.0)
    size = 0
    for name, text in texts:
        size += len(text.encode("utf-8", "surrogatepass"))
        for label, mask in maskers.items():
            best = float("inf")
            for _ in range(runs):
                started = time.perf_counter()
                out = mask(text)
                best = min(best, time.perf_counter() - started)
            took[label] += best
            rows = masked_lines(text, out)
            if rows:
                lines = [{"n": n, "was": was[:300], "now": now[:300]} for n, was, now in rows]
                files[label].append({"file": name, "lines": lines})
    return {
        label: {
            "files_masked": len(files[label]),
            "lines_masked": sum(len(entry["lines"]) for entry in files[label]),
            "seconds": round(took[label], 3),
            "ms_per_mb": round(took[label] * 1000 / (size / 1e6), 1),
            "files": files[label],
        }
        for label in maskers
    }


def numbered(text: str) -> str:
    """``text`` as read_file shows it: each line after its number (``  12: ``)."""
    lines = text.split("\n")
    width = len(str(len(lines)))
    return "\n".join(f"{n:>{width}}: {line}" for n, line in enumerate(lines, 1))


def only_after(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The lines the new masker hides and the old did not: the change's over-masking, to judge."""
    seen = {(entry["file"], line["n"]) for entry in before["files"] for line in entry["lines"]}
    return [
        {"file": entry["file"], **line}
        for entry in after["files"]
        for line in entry["lines"]
        if (entry["file"], line["n"]) not in seen
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", default=BEFORE, help="the git revision of the masker to compare with")
    parser.add_argument("--limit", type=int, default=0, help="only the first N files (0: all)")
    parser.add_argument("--show", type=int, default=60, help="masked lines printed per masker")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from twinny_magics import redact

    paths = corpus()
    if args.limit:
        paths = paths[: args.limit]
    base = Path(sys.base_prefix)
    texts = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # a test file in another encoding: read_file would show it differently anyway
        name = str(path.relative_to(base) if path.is_relative_to(base) else path.relative_to(ROOT))
        texts.append((name, text))
    megabytes = sum(len(t.encode("utf-8", "surrogatepass")) for _, t in texts) / 1e6
    maskers = {"before": load_masker(args.before).mask_secrets, "after": redact.mask_secrets}
    raw = measure(maskers, texts, RUNS)
    # The same files as read_file shows them (line numbers before each line): the key-body rule reads
    # lines under a tool's prefix, so this is where it could hide more.
    shown = measure(maskers, [(name, numbered(text)) for name, text in texts], 1)

    print(f"{len(texts):,} files, {megabytes:.1f} MB (stdlib of {sys.base_prefix} and {ROOT / '.venv'})\n")
    print(
        f"{'masker':<22} {'files masked':>12} {'lines masked':>12} {'ms / MB':>9}   as read_file shows them"
    )
    for label, key in ((f"before ({args.before})", "before"), ("after (work tree)", "after")):
        row = f"{label:<22} {raw[key]['files_masked']:>12,} {raw[key]['lines_masked']:>12,}"
        numbered_counts = f"{shown[key]['files_masked']:,} files, {shown[key]['lines_masked']:,} lines"
        print(f"{row} {raw[key]['ms_per_mb']:>9,.1f}   {numbered_counts}")
    new = only_after(raw["before"], raw["after"])
    print(f"\nLines masked after and not before ({len(new)}):")
    for line in new[: args.show]:
        print(f"  {line['file']}:{line['n']}: {line['was'].strip()[:150]}")
    if len(new) > args.show:
        print(f"  … and {len(new) - args.show} more (all in {RESULTS.name})")
    new_shown = only_after(shown["before"], shown["after"])
    print(f"As read_file shows them, masked after and not before: {len(new_shown)} lines")
    RESULTS.write_text(
        json.dumps(
            {
                "files": len(texts),
                "megabytes": round(megabytes, 1),
                "before_rev": args.before,
                "masked_after_not_before": new,
                "before": raw["before"],
                "after": raw["after"],
                "as_read_file_shows": {
                    label: {k: v for k, v in result.items() if k != "seconds"}
                    for label, result in shown.items()
                },
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
