"""How results look: an HTML table in a notebook and aligned text in a terminal, for every object.

Question text, answers, tool output, reasons and names all come from people or models, so every piece of
text goes through :func:`~twinny_magics.display.reprs.esc` (or a display piece that escapes or sanitizes it,
:mod:`twinny_magics.display.items`), and the text twin through :func:`~twinny_magics.display.reprs.plain`.

The report reads an experiment's records through the small shapes below (``ShownRun``, ``ShownResults``,
``ShownComparison`` and their rows), not through the classes: :class:`~.records.Run`,
:class:`~.results.Results` and :class:`~.results.Comparison` render themselves by calling it, so it must
not import them back (mypy checks that each class fits its shape where it calls the report).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from twinny_magics.budget import plan_context
from twinny_magics.display.reprs import FONT, MONO, WindowPicture, esc, n, plain, sendable
from twinny_magics.experiment.variants import WHERE

if TYPE_CHECKING:
    from twinny_magics.display.items import Item
    from twinny_magics.events import Reply
    from twinny_magics.experiment.checks import Question
    from twinny_magics.experiment.variants import Variant

MARKS = {"pass": "✓", "fail": "✗", "ran": "·", "error": "⚠"}
COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "ran": "#888", "error": "#b8860b"}
#: Runs whose replies the results' HTML carries, collapsed; past this, ``results[q, v]`` shows one.
MAX_REPLY_VIEWS = 60
#: Characters of an option's value shown in a table.
OPTION_CHARS = 60
CELL = 'style="text-align:left;vertical-align:top;padding:2px 8px"'
NUM = 'style="text-align:right;padding:2px 8px"'


# -- what the report reads -------------------------------------------------------------------------------


class ShownRun(Protocol):
    """What the report reads of one run (:class:`~.records.Run` is one)."""

    @property
    def question(self) -> str: ...
    @property
    def variant(self) -> str: ...
    @property
    def repeat(self) -> int: ...
    @property
    def outcome(self) -> str: ...
    @property
    def why(self) -> str: ...
    @property
    def check_raised(self) -> bool: ...
    @property
    def seconds(self) -> float: ...
    @property
    def changed(self) -> Sequence[str]: ...
    @property
    def reply(self) -> Reply | None: ...
    @property
    def steps(self) -> int: ...
    @property
    def passed(self) -> bool: ...


class ShownSummary(Protocol):
    """What the report reads of one variant's row (:class:`~.results.VariantSummary` is one)."""

    @property
    def variant(self) -> str: ...
    @property
    def passed(self) -> int: ...
    @property
    def judged(self) -> int: ...
    @property
    def errors(self) -> int: ...
    @property
    def steps(self) -> float: ...
    @property
    def prompt_tokens(self) -> float: ...
    @property
    def generated_tokens(self) -> float: ...
    @property
    def refused(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    @property
    def pass_rate(self) -> float | None: ...


class ShownChange(Protocol):
    """What the report reads of one question's row in a comparison (:class:`~.results.QuestionChange`)."""

    @property
    def question(self) -> str: ...
    @property
    def a(self) -> tuple[int, int]: ...
    @property
    def b(self) -> tuple[int, int]: ...
    @property
    def change(self) -> str: ...


class ShownComparison(Protocol):
    """What the report reads of a comparison (:class:`~.results.Comparison` is one)."""

    @property
    def a(self) -> str: ...
    @property
    def b(self) -> str: ...
    @property
    def rows(self) -> Sequence[ShownChange]: ...
    def summary(self) -> str: ...


class ShownResults(Protocol):
    """What the report reads of an experiment's results (:class:`~.results.Results` is one)."""

    @property
    def questions(self) -> Sequence[Question]: ...
    @property
    def variants(self) -> Sequence[Variant]: ...
    @property
    def repeat(self) -> int: ...
    @property
    def settings(self) -> Mapping[str, Any]: ...
    @property
    def servers(self) -> Mapping[str, Mapping[str, Any]]: ...
    @property
    def runs(self) -> Sequence[ShownRun]: ...
    @property
    def stopped(self) -> str | None: ...
    @property
    def total(self) -> int: ...
    @property
    def names(self) -> Sequence[str]: ...
    def runs_of(self, question: str, variant: str) -> Sequence[ShownRun]: ...
    def summary(self) -> Sequence[ShownSummary]: ...
    def compare(self, a: str | None = None, b: str | None = None) -> ShownComparison: ...


def bundle(html: str, text: str) -> dict[str, str]:
    """A mime bundle: sendable HTML and inert text."""
    return {"text/html": sendable(html), "text/plain": plain(text)}


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rate(summary: ShownSummary) -> str:
    rate = summary.pass_rate
    return "–" if rate is None else f"{summary.passed}/{summary.judged} ({rate:.0%})"


def _options(results: ShownResults, variant: str) -> str:
    options = next((v.describe() for v in results.variants if v.name == variant), {})
    if not options:
        return "(the experiment's settings)"
    return ", ".join(f"{k}={_short(repr(v), OPTION_CHARS)}" for k, v in options.items())


def _head(results: ShownResults) -> str:
    settings = results.settings
    servers = {f"{s.get('model') or '?'} on {s.get('kind') or '?'}" for s in results.servers.values()}
    done = len([r for r in results.runs if r.outcome != "error"])
    parts = [
        f"{len(results.questions)} question{'s' if len(results.questions) != 1 else ''} × "
        f"{len(results.variants)} variant{'s' if len(results.variants) != 1 else ''} × "
        f"{results.repeat} repetition{'s' if results.repeat != 1 else ''}",
        ", ".join(sorted(servers)) or "server not known",
        f"seed {settings.get('seed')}",
        f"{done}/{results.total} runs",
    ]
    if results.stopped:
        parts.append(f"stopped ({results.stopped}): run(..., resume=results) runs the rest")
    return " · ".join(parts)


def _shared(results: ShownResults) -> str:
    """The options every variant starts from (where the server is, said in the head line, left out)."""
    options = results.settings.get("options") or {}
    shown = {k: v for k, v in options.items() if k not in WHERE}
    return ", ".join(f"{k}={_short(repr(v), OPTION_CHARS)}" for k, v in sorted(shown.items()))


def _text_of(name: str, text: str, limit: int) -> str:
    """A question's text for a table, or nothing when its name already is that text."""
    short = _short(text, limit)
    return "" if short == name or _short(text, len(name)) == name else short


def _cell(results: ShownResults, question: str, variant: str) -> tuple[str, str, str]:
    """A grid cell: its mark, its colour key and its tooltip (why)."""
    runs = results.runs_of(question, variant)
    if not runs:
        return "–", "ran", "not run"
    if len(runs) == 1 and results.repeat == 1:
        run = runs[0]
        why = run.why or ("passed" if run.passed else run.outcome)
        return MARKS[run.outcome], run.outcome, why
    judged = [r for r in runs if r.outcome in ("pass", "fail")]
    errors = sum(r.outcome == "error" for r in runs)
    if not judged:
        key = "error" if errors else "ran"
        return f"{MARKS[key]} {len(runs)}", key, "; ".join(sorted({r.why for r in runs if r.why}))[:300]
    passed = sum(r.passed for r in judged)
    mark = f"{passed}/{len(judged)}" + (f" ⚠{errors}" if errors else "")
    key = "pass" if passed == len(judged) else "fail" if passed == 0 else "ran"
    whys = "; ".join(sorted({r.why for r in judged if r.why}))
    return mark, key, whys[:300]


# -- results ---------------------------------------------------------------------------------------------


def results_text(results: ShownResults) -> str:
    """The results as aligned text: the head line, a row per variant, the grid, the comparisons."""
    rows = results.summary()
    width = max([7, *(len(r.variant) for r in rows)])
    lines = [f"Experiment: {_head(results)}"]
    if _shared(results):
        lines.append(f"Every variant: {_shared(results)}")
    lines.append("")
    lines.append(
        f"  {'variant':<{width}}  {'passed':>13}  {'errors':>6}  {'steps':>5}  {'prompt tok':>10}  "
        f"{'generated':>9}  {'refused':>7}  {'seconds':>7}"
    )
    for row in rows:
        lines.append(
            f"  {row.variant:<{width}}  {_rate(row):>13}  {row.errors:>6}  {row.steps:>5.1f}  "
            f"{n(round(row.prompt_tokens)):>10}  {n(round(row.generated_tokens)):>9}  {row.refused:>7}  "
            f"{row.seconds:>7.1f}"
        )
    for variant in results.variants:
        lines.append(f"  {variant.name}: {_options(results, variant.name)}")
    widths = [max(8, len(name)) for name in results.names]
    lines += ["", "  " + " ".join(f"{name:>{w}}" for name, w in zip(results.names, widths, strict=True))]
    lines[-1] += "  question"
    for question in results.questions:
        marks = [_cell(results, question.name, name)[0] for name in results.names]
        cells = " ".join(f"{mark:>{w}}" for mark, w in zip(marks, widths, strict=True))
        text = _text_of(question.name, question.text, 80)
        lines.append(f"  {cells}  {question.name}" + (f": {text}" if text else ""))
    for name in results.names[1:]:
        lines += ["", results.compare(results.names[0], name).summary()]
    return "\n".join(lines)


def results_html(results: ShownResults) -> str:
    """The results as HTML: the head line, the table per variant, the grid, comparisons, the replies."""
    rows = "".join(
        f"<tr><td {CELL}><b>{esc(row.variant)}</b></td><td {CELL}>{esc(_options(results, row.variant))}</td>"
        f'<td {NUM}><b style="white-space:nowrap">{esc(_rate(row))}</b></td><td {NUM}>{row.errors or ""}</td>'
        f"<td {NUM}>{row.steps:.1f}</td><td {NUM}>{n(round(row.prompt_tokens))}</td>"
        f"<td {NUM}>{n(round(row.generated_tokens))}</td><td {NUM}>{row.refused}</td>"
        f"<td {NUM}>{row.seconds:.1f}</td></tr>"
        for row in results.summary()
    )
    summary = (
        "<table><tr><th>variant</th><th>changes</th><th>passed</th><th>errors</th><th>steps</th>"
        "<th>prompt tokens</th><th>generated</th><th>refused</th><th>seconds</th></tr>"
        f"{rows}</table>"
    )
    head = "".join(f'<th style="text-align:center">{esc(name)}</th>' for name in results.names)
    grid_rows = []
    for question in results.questions:
        cells = []
        for name in results.names:
            mark, key, why = _cell(results, question.name, name)
            cells.append(
                f'<td title="{esc(why)}" style="text-align:center;color:{COLOURS[key]};font-weight:bold">'
                f"{esc(mark)}</td>"
            )
        text = _text_of(question.name, question.text, 120)
        grid_rows.append(
            f"<tr><td {CELL}><b>{esc(question.name)}</b></td>{''.join(cells)}"
            f'<td {CELL}><span style="color:#666">{esc(text)}</span></td></tr>'
        )
    grid = f"<table><tr><th>question</th>{head}<th></th></tr>{''.join(grid_rows)}</table>"
    comparisons = "".join(
        f"<div>{esc(results.compare(results.names[0], name).summary())}</div>" for name in results.names[1:]
    )
    shared = (
        f'<div style="color:#666">Every variant: {esc(_shared(results))}</div>' if _shared(results) else ""
    )
    return (
        f'<div style="{FONT}"><b>Experiment</b>: {esc(_head(results))}{shared}{summary}{grid}'
        f'<div style="margin:4px 0">{comparisons}</div>{_reply_views(results)}</div>'
    )


def _reply_views(results: ShownResults) -> str:
    runs = [r for r in results.runs if r.reply is not None]
    if not runs:
        return ""
    if len(runs) > MAX_REPLY_VIEWS:
        return (
            f'<div style="color:#666">{len(runs)} replies: results[question, variant] shows one '
            "(its calls and answer).</div>"
        )
    order = {q.name: i for i, q in enumerate(results.questions)}
    views = "".join(
        f'<details style="margin-left:1em"><summary style="cursor:pointer">{_run_title_html(run)}</summary>'
        f'<div style="margin-left:1em">{run_html(run, title=False)}</div></details>'
        for run in sorted(runs, key=lambda r: (order.get(r.question, 0), r.repeat))
    )
    return (
        '<details><summary style="cursor:pointer">Replies: each run\'s calls and answer '
        f"(results[question, variant] shows one)</summary>{views}</details>"
    )


def _run_rest(run: ShownRun) -> str:
    repeat = f" #{run.repeat + 1}" if run.repeat else ""
    steps = f"{run.steps} step{'s' if run.steps != 1 else ''}"
    return f"{run.question} · {run.variant}{repeat} · {steps} · {run.seconds:.1f} s"


def _run_title(run: ShownRun) -> str:
    return f"{MARKS[run.outcome]} {_run_rest(run)}"


def _run_title_html(run: ShownRun) -> str:
    mark = f'<b style="color:{COLOURS[run.outcome]}">{esc(MARKS[run.outcome])}</b>'
    return f"{mark} {esc(_run_rest(run))}"


# -- one run ---------------------------------------------------------------------------------------------


def _items(run: ShownRun) -> list[Item]:
    """The display pieces of a recorded reply, as the magic shows a live one."""
    from twinny_magics.display.items import CallItem, NoticeItem, RequestItem, TextItem  # noqa: PLC0415
    from twinny_magics.protocol import parse_reply  # noqa: PLC0415

    reply = run.reply
    if reply is None:
        return []
    items: list[Item] = []
    for step in reply.steps:
        for request in (r for r in reply.requests if r.step == step.number):
            picture = WindowPicture(
                window=request.window,
                limit=request.limit,
                target=request.target,
                # What the request held, as the server counted it (the record keeps no finer split).
                parts=(("prompt", request.prompt_tokens or request.estimated_tokens),),
                reply=plan_context(max(request.window, 1)).reply,
                estimate=request.estimated_tokens,
                server=request.prompt_tokens,
            )
            item = RequestItem(request.step, request.mode, request.last, picture)
            if request.completion_tokens is not None:
                item.usage = f"generated {n(request.completion_tokens)} tokens"
            items.append(item)
        last = step is reply.steps[-1]
        shown = parse_reply(step.text).content.strip() if step.calls else step.text.strip()
        if shown and not (last and shown == reply.text.strip()):
            items.append(TextItem(step.number, shown))
        for number, (call, result) in enumerate(zip(step.calls, step.results, strict=False)):
            items.append(CallItem(f"{step.number}.{number}", call, result))
        items.extend(NoticeItem("warning", problem) for problem in step.problems)
    items.extend(NoticeItem(notice.kind, notice.text) for notice in reply.notices)
    if reply.text:
        items.append(TextItem(0, reply.text))
    return items


def _verdict(run: ShownRun) -> str:
    said = {"pass": "passed", "fail": "failed", "ran": "ran (no check)", "error": "error"}[run.outcome]
    if run.check_raised:
        said += " (the check itself failed)"
    return said + (f": {run.why}" if run.why else "")


def run_text(run: ShownRun) -> str:
    """One run as text: what was asked under which variant, the verdict, the calls and the answer."""
    lines = [
        f"{_run_title(run)}",
        f"  {_verdict(run)}",
    ]
    if run.reply is not None:
        lines.append(f"  question: {run.reply.question}")
    if run.changed:
        lines.append("  files changed: " + ", ".join(run.changed))
    lines += [item.text() for item in _items(run)]
    return "\n".join(lines)


def run_html(run: ShownRun, *, title: bool = True) -> str:
    """One run as HTML: the verdict, each request, each call collapsible, the answer rendered inert."""
    head = f"<div>{_run_title_html(run)}</div>" if title else ""
    question = f"<div><b>Question</b>: {esc(run.reply.question)}</div>" if run.reply is not None else ""
    changed = f"<div>Files changed: {esc(', '.join(run.changed))}</div>" if run.changed else ""
    verdict = (
        f'<div style="color:{COLOURS[run.outcome]};white-space:pre-wrap;{MONO}">{esc(_verdict(run))}</div>'
    )
    items = "".join(item.html() for item in _items(run))
    return f'<div style="{FONT}">{head}{verdict}{question}{changed}{items}</div>'


# -- a comparison ----------------------------------------------------------------------------------------


def _pair(tally: tuple[int, int]) -> str:
    passed, judged = tally
    return f"{passed}/{judged}" if judged else "–"


def comparison_text(comparison: ShownComparison) -> str:
    """A comparison as text: the summary line, then a row per question."""
    lines = [comparison.summary(), f"  {comparison.a:>10} {comparison.b:>10}  change   question"]
    lines += [
        f"  {_pair(row.a):>10} {_pair(row.b):>10}  {row.change:<8} {row.question}" for row in comparison.rows
    ]
    return "\n".join(lines)


def comparison_html(comparison: ShownComparison) -> str:
    """A comparison as HTML: the summary line and a table with a row per question."""
    colours = {"fixed": COLOURS["pass"], "broke": COLOURS["fail"], "changed": COLOURS["error"]}
    rows = "".join(
        f"<tr><td {CELL}>{esc(row.question)}</td><td {NUM}>{esc(_pair(row.a))}</td>"
        f"<td {NUM}>{esc(_pair(row.b))}</td>"
        f'<td {CELL}><b style="color:{colours.get(row.change, "#888")}">{esc(row.change)}</b></td></tr>'
        for row in comparison.rows
    )
    return (
        f'<div style="{FONT}"><div>{esc(comparison.summary())}</div><table><tr><th>question</th>'
        f"<th>{esc(comparison.a)}</th><th>{esc(comparison.b)}</th><th>change</th></tr>{rows}</table></div>"
    )


# -- progress --------------------------------------------------------------------------------------------


def progress_html(line: str, done: bool) -> str:
    """The progress line, dimmed while it runs."""
    weight = "bold" if done else "normal"
    return f'<div style="{FONT}color:#666;font-weight:{weight}">{esc(line)}</div>'
