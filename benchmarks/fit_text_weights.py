"""Fit the feature weights ``twinny_magics.text_tokens`` ships, and check the shipped ones.

Counts every text of the estimator corpus (160 pieces: code, JSON, Markdown, grep output, listings,
CSS, logs, prose) with llama.cpp's ``/tokenize`` for SmolLM2, fits non-negative weights minimising the
relative error, and prints them beside the shipped :data:`~twinny_magics.text_tokens.SMOLLM2_WEIGHTS`
with each one's error per kind, and a two-fold held-out error (fitted on one half, measured on the
other) — the number to believe for texts the fit never saw.

    .venv/bin/python benchmarks/fit_text_weights.py           # about 20 s
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The folder is put on the path just above, so that this runs as a plain script.
from bench_estimator import ServerTokenizer, llama_server
from estimator_corpus import KINDS, build_corpus
from stats import quantile

from twinny_magics.text_tokens import FEATURES, SMOLLM2_WEIGHTS, fit_weights, text_features


def errors(weights: Sequence[float], rows: Sequence[Sequence[float]], tokens: Sequence[int]) -> list[float]:
    """Relative error of each text's estimate (positive: too many tokens)."""
    return [
        (row[-1] + sum(w * x for w, x in zip(weights, row, strict=False))) / t - 1
        for row, t in zip(rows, tokens, strict=True)
    ]


def p95(values: Sequence[float]) -> float:
    return quantile([abs(v) for v in values], 0.95)


def main() -> None:
    pieces = build_corpus()
    rows = [text_features(p.text) for p in pieces]
    with llama_server() as server:
        tokenizer = ServerTokenizer(server)
        tokens = [tokenizer.count(p.text) for p in pieces]
    fitted = fit_weights(rows, tokens)
    shipped = [SMOLLM2_WEIGHTS[name] for name in FEATURES]
    print(f"{'feature':<20} {'fitted':>8} {'shipped':>8}")
    for name, new, old in zip(FEATURES, fitted, shipped, strict=True):
        print(f"{name:<20} {new:>8.3f} {old:>8.3f}")
    print()
    held_out: list[float] = []
    for half in (0, 1):
        train = [i for i in range(len(pieces)) if i % 2 != half]
        test = [i for i in range(len(pieces)) if i % 2 == half]
        weights = fit_weights([rows[i] for i in train], [tokens[i] for i in train])
        held_out += errors(weights, [rows[i] for i in test], [tokens[i] for i in test])
    print(f"{'kind':<10} {'shipped median':>15} {'shipped worst':>14} {'ratio 3.3 median':>17}")
    for kind in KINDS:
        members = [i for i, p in enumerate(pieces) if p.kind == kind]
        errs = errors(shipped, [rows[i] for i in members], [tokens[i] for i in members])
        ratio = [len(pieces[i].text) / 3.3 / tokens[i] - 1 for i in members]
        worst = max(errs, key=abs)
        print(
            f"{kind:<10} {statistics.median(abs(e) for e in errs):>15.1%} {worst:>+14.1%} "
            f"{statistics.median(abs(e) for e in ratio):>17.1%}"
        )
    every = errors(shipped, rows, tokens)
    print(
        f"\nshipped, all {len(pieces)} texts: median {statistics.median(abs(e) for e in every):.1%}, "
        f"p95 {p95(every):.1%}; fitted here: p95 {p95(errors(fitted, rows, tokens)):.1%}; "
        f"held out (two folds): median {statistics.median(abs(e) for e in held_out):.1%}, "
        f"p95 {p95(held_out):.1%}"
    )
    print("\nSMOLLM2_WEIGHTS = {")
    for name, value in zip(FEATURES, fitted, strict=True):
        print(f'    "{name}": {value:.3f},')
    print("}")


if __name__ == "__main__":
    main()
