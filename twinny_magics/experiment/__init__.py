"""Prompt tuning as an experiment: a question set under two (or more) settings, measured and compared.

One reply from a small model says little: a change can help one question and break three others. So::

    from twinny_magics.experiment import Files, Not, Question, Variant, run

    questions = [
        Question("Which port does app.py listen on?", check=r"\\b8000\\b", name="port"),
        Question("What does README.md say to run?", check=[r"python app\\.py", Not("npm")], name="run"),
        Question("Set PORT to 9000 in app.py.", check=Files({"app.py": "PORT = 9000\\n"}), name="edit"),
        Question("Which function starts the server?", check=lambda reply, ws: "serve" in reply.text),
    ]
    results = run(questions, [Variant("default"), Variant("short", closing_prompt="Answer in a sentence.")],
                  workspace="shop", steps=4)
    results                          # a table per variant, the grid of ✓/✗, the replies (collapsed)
    results.compare("default", "short")  # fixed 2, broke 1 — and whether that is more than noise
    results["port", "short"]         # one run: its calls and its answer
    results.save("tuning.json"); load("tuning.json")

Each question × variant × repetition runs in a fresh session on a fresh copy of the workspace, greedy
and seeded by default; see :mod:`.runner` for how, :mod:`.checks` for the checks, :mod:`.variants` for
the options a variant may change, :mod:`.stats` for the paired test. ``%%agent compare`` is the short
form in a notebook (:mod:`.cells`); ``python -m twinny_magics.experiment`` the one for a terminal.
"""

from __future__ import annotations

from twinny_magics.experiment.checks import Files, Not, Question, Verdict
from twinny_magics.experiment.records import Run
from twinny_magics.experiment.results import Comparison, Results, VariantSummary, load
from twinny_magics.experiment.runner import run
from twinny_magics.experiment.stats import mcnemar_exact
from twinny_magics.experiment.variants import Variant, parse_options

__all__ = [
    "Comparison",
    "Files",
    "Not",
    "Question",
    "Results",
    "Run",
    "Variant",
    "VariantSummary",
    "Verdict",
    "load",
    "mcnemar_exact",
    "parse_options",
    "run",
]
