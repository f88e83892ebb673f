"""benchmarks/citation_stats.py: corrections counted from the recorded problems, graded before and after."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))

import citation_stats
from tasks_common import Answer, Task, name_term

TASK = Task("value-port", "value", "Which port?", Answer([name_term("8080")], [name_term("9090")]))


def run(*steps: tuple[str, list[str]], final: str) -> dict:
    return {
        "question": "value-port",
        "outcome": "pass",
        "reply": {"text": final, "steps": [{"text": t, "problems": p} for t, p in steps]},
    }


CITED = ["a cited line does not hold what the answer says: told what the lines say"]
QUOTED = ["quoted a string that no file has: told to look it up"]


def test_a_correction_that_turned_a_wrong_answer_right_is_counted() -> None:
    runs = [
        run(("9090 (app.py:1).", CITED), ("8080", []), final="8080"),
        run(('It says "no such port".', QUOTED), final="9090"),
        run(("8080 (app.py:4).", []), final="8080 (app.py:4)."),
        {"question": "value-port", "outcome": "error", "reply": None},
    ]
    result = citation_stats.stats(runs, {"value-port": TASK}, None)
    counts = result["counts"]
    assert counts["runs"] == 3
    assert counts["citation corrections"] == 1
    assert counts["citation: wrong -> right"] == 1
    assert counts["quote corrections"] == 1
    assert counts["quote: wrong -> wrong"] == 1
    assert counts["answers citing"] == 2
    assert len(result["lines"]) == 2
