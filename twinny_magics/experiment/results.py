"""What an experiment gives back: every run, the table per variant, and comparisons between two variants.

`Results` is plain data with rich reprs (:mod:`.report`); it saves to JSON and loads back whole (the
settings, the model and server of each variant, the package version, every reply's record), so a run
made yesterday can be compared with one made today, or resumed.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from twinny_magics.experiment.checks import Question, describe, restore
from twinny_magics.experiment.records import Run
from twinny_magics.experiment.stats import mcnemar_exact
from twinny_magics.experiment.variants import Variant

FORMAT = "twinny_magics.experiment/1"
#: Below this p-value a difference is called more than noise.
ALPHA = 0.05

Change = Literal["fixed", "broke", "same", "changed", "not run"]


@dataclass(frozen=True)
class VariantSummary:
    """One variant over every run: passes of the judged runs, and the means of what the runs cost."""

    variant: str
    passed: int
    judged: int
    errors: int
    runs: int
    steps: float
    prompt_tokens: float
    generated_tokens: float
    refused: int
    seconds: float

    @property
    def pass_rate(self) -> float | None:
        """Passed / judged, or None when nothing was judged."""
        return self.passed / self.judged if self.judged else None


@dataclass(frozen=True)
class QuestionChange:
    """One question under two variants: passes out of judged runs in each, and what the change did."""

    question: str
    a: tuple[int, int]
    b: tuple[int, int]
    change: Change


class Comparison:
    """Variant ``b`` against ``a``, question by question, with the exact McNemar test over paired runs."""

    def __init__(self, results: Results, a: str, b: str) -> None:
        self.results, self.a, self.b = results, a, b
        #: Greedy variants (temperature 0) repeat exactly: one pair per question, not per repetition.
        self.greedy = results.temperature(a) == 0 and results.temperature(b) == 0
        self.rows: list[QuestionChange] = []
        self.only_a = self.only_b = self.pairs = 0
        for question in results.questions:
            self.rows.append(self._row(question))

    def _row(self, question: Question) -> QuestionChange:
        runs_a = self.results.runs_of(question.name, self.a)
        runs_b = self.results.runs_of(question.name, self.b)
        a = _tally(runs_a)
        b = _tally(runs_b)
        if not question.graded:
            first_a = next((r for r in runs_a if r.outcome == "ran"), None)
            first_b = next((r for r in runs_b if r.outcome == "ran"), None)
            if first_a is None or first_b is None:
                return QuestionChange(question.name, a, b, "not run")
            return QuestionChange(
                question.name, a, b, "same" if first_a.answer == first_b.answer else "changed"
            )
        by_repeat_b = {r.repeat: r for r in runs_b}
        pairs = [
            (ra, by_repeat_b[ra.repeat])
            for ra in runs_a
            if ra.repeat in by_repeat_b
            and ra.outcome in ("pass", "fail")
            and by_repeat_b[ra.repeat].outcome in ("pass", "fail")
        ]
        if self.greedy:
            pairs = pairs[:1]
        self.pairs += len(pairs)
        self.only_a += sum(1 for ra, rb in pairs if ra.passed and not rb.passed)
        self.only_b += sum(1 for ra, rb in pairs if rb.passed and not ra.passed)
        if not a[1] or not b[1]:
            return QuestionChange(question.name, a, b, "not run")
        rate_a, rate_b = a[0] / a[1], b[0] / b[1]
        change: Change = "fixed" if rate_b > rate_a else "broke" if rate_b < rate_a else "same"
        return QuestionChange(question.name, a, b, change)

    @property
    def fixed(self) -> list[str]:
        """Questions ``b`` passed more often than ``a``."""
        return [row.question for row in self.rows if row.change == "fixed"]

    @property
    def broke(self) -> list[str]:
        """Questions ``b`` passed less often than ``a``."""
        return [row.question for row in self.rows if row.change == "broke"]

    @property
    def p_value(self) -> float | None:
        """Two-sided exact McNemar p-value over the paired runs; None when no pair differs."""
        if self.only_a + self.only_b == 0:
            return None
        return mcnemar_exact(self.only_a, self.only_b)

    def verdict(self) -> str:
        """The test's result in words."""
        unit = "questions" if self.greedy else "paired runs"
        differ = self.only_a + self.only_b
        if not self.pairs:
            return "nothing to compare yet (no question judged under both)"
        if not differ:
            return (
                f"no difference: the {self.pairs} {unit} passed or failed alike "
                "(exact McNemar: no pair differs)"
            )
        p = self.p_value
        assert p is not None
        said = "more than noise" if p < ALPHA else "could be noise"
        return (
            f"{differ} of {self.pairs} {unit} differ ({self.only_b} for {self.b}, {self.only_a} for "
            f"{self.a}): exact McNemar p = {p:.3g}, {said}"
        )

    def summary(self) -> str:
        """``b vs a: fixed 3 (q1, q2, q5), broke 1 (q4); …``."""
        fixed, broke = self.fixed, self.broke
        changed = [row.question for row in self.rows if row.change == "changed"]
        parts = [f"fixed {len(fixed)}" + _names(fixed), f"broke {len(broke)}" + _names(broke)]
        if changed:
            parts.append(f"answer changed in {len(changed)} unchecked" + _names(changed))
        return f"{self.b} vs {self.a}: " + ", ".join(parts) + f"; {self.verdict()}"

    def __repr__(self) -> str:
        return f"<Comparison {self.summary()}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from twinny_magics.experiment import report  # noqa: PLC0415

        return report.bundle(report.comparison_html(self), report.comparison_text(self))


def _tally(runs: Iterable[Run]) -> tuple[int, int]:
    judged = [r for r in runs if r.outcome in ("pass", "fail")]
    return sum(r.passed for r in judged), len(judged)


def _names(names: Sequence[str], limit: int = 6) -> str:
    if not names:
        return ""
    shown = ", ".join(names[:limit]) + (", …" if len(names) > limit else "")
    return f" ({shown})"


class Results:
    """Every run of an experiment: ``results[question, variant]`` (or ``[q, v, repeat]``) is one `Run`."""

    def __init__(
        self,
        questions: Sequence[Question],
        variants: Sequence[Variant],
        *,
        repeat: int = 1,
        settings: dict[str, Any] | None = None,
        servers: dict[str, dict[str, Any]] | None = None,
        effective: dict[str, dict[str, Any]] | None = None,
        runs: Iterable[Run] = (),
        stopped: str | None = None,
    ) -> None:
        self.questions = list(questions)
        self.variants = list(variants)
        self.repeat = repeat
        #: How the experiment ran: seed, workspace, the options every variant shares, package version…
        self.settings: dict[str, Any] = dict(settings or {})
        #: Each variant's server: kind, model, base_url.
        self.servers: dict[str, dict[str, Any]] = dict(servers or {})
        #: What each variant ran with: the shared options and its own, Agent defaults left out.
        self.effective: dict[str, dict[str, Any]] = dict(effective or {})
        self.runs: list[Run] = list(runs)
        #: Why the experiment ended before every run was done (``interrupted``, ``server errors``), or None.
        self.stopped = stopped

    # -- looking up -------------------------------------------------------------------------------------

    def __getitem__(self, key: tuple[str, str] | tuple[str, str, int]) -> Run:
        question, variant, *rest = key
        repeat = rest[0] if rest else 0
        for run in self.runs:
            if run.key == (question, variant, repeat):
                return run
        raise KeyError(
            f"No run of {question!r} under {variant!r} (repetition {repeat}). Questions: "
            f"{', '.join(q.name for q in self.questions)}; variants: {', '.join(self.names)}."
        )

    @property
    def names(self) -> list[str]:
        """The variants' names, in order."""
        return [v.name for v in self.variants]

    def runs_of(self, question: str, variant: str) -> list[Run]:
        """The runs of one question under one variant, by repetition."""
        return sorted((r for r in self.runs if r.question == question and r.variant == variant), key=_repeat)

    @property
    def total(self) -> int:
        """Runs the experiment has in all."""
        return len(self.questions) * len(self.variants) * self.repeat

    @property
    def complete(self) -> bool:
        """Whether every run is done (an error counts as not done: resuming runs it again)."""
        done = {r.key for r in self.runs if r.outcome != "error"}
        return len(done) >= self.total

    def temperature(self, variant: str) -> float | None:
        """The temperature a variant ran at (None: the server's default)."""
        value = self.effective.get(variant, {}).get("temperature")
        return float(value) if isinstance(value, int | float) else None

    def _variant(self, name: str) -> Variant:
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise KeyError(f"No variant {name!r}; the variants are: {', '.join(self.names)}.")

    # -- what a person reads -------------------------------------------------------------------------

    def summary(self) -> list[VariantSummary]:
        """One row per variant: passes, errors and the mean steps, tokens and seconds of its runs."""
        rows = []
        for variant in self.variants:
            runs = [r for r in self.runs if r.variant == variant.name]
            judged = [r for r in runs if r.outcome in ("pass", "fail")]
            ran = [r for r in runs if r.outcome != "error"]
            rows.append(
                VariantSummary(
                    variant=variant.name,
                    passed=sum(r.passed for r in judged),
                    judged=len(judged),
                    errors=sum(r.outcome == "error" for r in runs),
                    runs=len(runs),
                    steps=_mean(r.steps for r in ran),
                    prompt_tokens=_mean(r.prompt_tokens for r in ran),
                    generated_tokens=_mean(r.generated_tokens for r in ran),
                    refused=sum(r.refused for r in runs),
                    seconds=_mean(r.seconds for r in ran),
                )
            )
        return rows

    def compare(self, a: str | None = None, b: str | None = None) -> Comparison:
        """Variant ``b`` against ``a`` (default: the second against the first), question by question."""
        if len(self.variants) < 2 and (a is None or b is None):
            raise ValueError("compare needs two variants; this experiment has one.")
        a = a if a is not None else self.variants[0].name
        b = b if b is not None else self.variants[1].name
        self._variant(a)
        self._variant(b)
        return Comparison(self, a, b)

    def __repr__(self) -> str:
        done = len([r for r in self.runs if r.outcome != "error"])
        size = f"{len(self.questions)} questions × {len(self.variants)} variants × {self.repeat} repetitions"
        return f"<Results {size}: {done}/{self.total} runs>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from twinny_magics.experiment import report  # noqa: PLC0415

        return report.bundle(report.results_html(self), report.results_text(self))

    # -- JSON ------------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Everything, as JSON: settings, questions and checks, variants and servers, every run's reply."""
        return {
            "format": FORMAT,
            "settings": self.settings,
            "repeat": self.repeat,
            "stopped": self.stopped,
            "questions": [
                {"name": q.name, "text": q.text, "check": describe(q.check)} for q in self.questions
            ],
            "variants": [
                {
                    "name": v.name,
                    "options": v.describe(),
                    "effective": self.effective.get(v.name),
                    "server": self.servers.get(v.name),
                }
                for v in self.variants
            ],
            "runs": [run.to_json() for run in self.runs],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Results:
        """Results as :meth:`to_json` wrote them."""
        if data.get("format") != FORMAT:
            raise ValueError(f"Not saved experiment results (format {data.get('format')!r}, not {FORMAT!r}).")
        questions = [Question(q["text"], restore(q.get("check")), name=q["name"]) for q in data["questions"]]
        variants = [Variant.loaded(v["name"], v.get("options") or {}) for v in data["variants"]]
        servers = {v["name"]: v["server"] for v in data["variants"] if v.get("server")}
        effective = {v["name"]: v["effective"] for v in data["variants"] if v.get("effective") is not None}
        return cls(
            questions,
            variants,
            repeat=int(data.get("repeat", 1)),
            settings=data.get("settings") or {},
            servers=servers,
            effective=effective,
            runs=[Run.from_json(r) for r in data.get("runs", [])],
            stopped=data.get("stopped"),
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the results as JSON to ``path`` (atomically: a reader never sees half a file)."""
        target = Path(path)
        text = json.dumps(self.to_json(), indent=1)  # ASCII: a lone surrogate a model wrote survives
        folder = target.parent if str(target.parent) else Path(".")
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Results:
        """Results saved with :meth:`save`."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(f"No saved results at {path}.") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not saved results: {error}.") from None
        return cls.from_json(data)


def load(path: str | os.PathLike[str]) -> Results:
    """Results saved with ``Results.save``."""
    return Results.load(path)


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def _repeat(run: Run) -> int:
    return run.repeat
