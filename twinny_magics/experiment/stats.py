"""Whether a difference between two variants is more than noise: the exact McNemar test. Pure.

The unit is a *pair*: one question, one repetition, run under both variants with the same seed. Only
discordant pairs say anything about the change (both passed or both failed: no information). If the
change made no difference, each discordant pair is as likely to favour one variant as the other,
whatever each question's own difficulty — so the count that favours B is binomial(n, 1/2), and the
two-sided p-value is twice the smaller tail. Exact rather than the chi-squared approximation because
experiments here are small (a handful of discordant pairs), where the approximation is poor.

Why not a sign test on per-question pass counts: it takes the question as the unit, which needs six or
more questions that all move the same way before it can ever say p < 0.05, and it answers a different
question (would the change help *other* questions like these). On a fixed question set the noise to rule
out is the sampling, which pairs measure. Greedy runs have no sampling noise: their repetitions are
copies, so a comparison of greedy variants counts one pair per question (then the test is the sign test
over questions, and it says whether the change moved the questions consistently one way).
"""

from __future__ import annotations

import math


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs (A passed alone, B passed alone)."""
    if only_a < 0 or only_b < 0:
        raise ValueError("counts of pairs cannot be negative")
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / (1 << n)
    return min(1.0, 2 * tail)
