"""Rich reprs for what a person inspects in a notebook: the plan, the estimator, a reply, the session.

Nothing here changes the objects: the reprs are registered with IPython's formatters when the extension
loads (:func:`register`), by type *name*, so that loading the extension imports none of the classes.
Every picture is plain HTML and inline SVG with inline styles — no matplotlib, nothing a sanitizer or an
HTML export drops — and every one has a text twin.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from twinny_magics.budget import DEEP_TARGET_PERCENT
from twinny_magics.contracts import Addressed, MaybeEmbedded, ModelServer, PendingChange
from twinny_magics.engine.citations import summary as citations_summary
from twinny_magics.inert import inert
from twinny_magics.usage import Price, Usage, usage_line

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from twinny_magics.budget import ContextPlan, TokenEstimator
    from twinny_magics.events import Reply

# Colours picked to read on light and dark themes alike; every part also has a text label.
COLOURS = {
    "system": "#8c6bb1",
    "history": "#4a90c2",
    "results": "#e8873a",
    "reply": "#9e9e9e",
    "server": "#d62728",
}
BAR_CHARS = 48
FONT = "font-family: var(--jp-ui-font-family, sans-serif); font-size: 12px;"
MONO = "font-family: var(--jp-code-font-family, monospace); font-size: 12px;"


def sendable(text: str) -> str:
    """``text`` with what UTF-8 cannot carry (lone surrogates) replaced by ``?``.

    A model may stream ``"\\ud800"`` (valid JSON, no character) and a file name that is not UTF-8 comes
    out of ``os.scandir`` as one; the kernel sends outputs as UTF-8 JSON and fails on them, losing the
    output. The session keeps the text as it came; only what is shown is mended.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8")
    return text


def plain(text: str) -> str:
    """Text for ``text/plain`` and a terminal: sendable, with no escape sequence, control or bidi override.

    Frontends render ANSI colour in ``text/plain`` and a terminal obeys every escape it is sent (titles,
    OSC 52 clipboard writes, links, cursor moves); model text and file names must do neither.
    """
    return inert(sendable(text))


def esc(text: object) -> str:
    """HTML-escaped text."""
    return html.escape(str(text), quote=True)


def n(value: int | None) -> str:
    """A token count with thousands separators, or a dash."""
    return "–" if value is None else f"{value:,}"


# -- the window bar ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowPicture:
    """One request against its window: the parts in tokens, the markers, and the server's count."""

    window: int
    limit: int
    target: int
    parts: tuple[tuple[str, int], ...]
    reply: int
    estimate: int | None = None
    server: int | None = None

    def html(self) -> str:
        """A stacked bar: the parts from the left, the reply share at the right, target and limit marks."""
        w = max(1, self.window)

        def pct(tokens: int) -> float:
            return max(0.0, min(100.0, 100.0 * tokens / w))

        segments = "".join(
            f'<div title="{esc(name)}: {n(tokens)} tokens" style="height:100%;width:{pct(tokens):.2f}%;'
            f'background:{COLOURS.get(name, "#888")};display:inline-block"></div>'
            for name, tokens in self.parts
            if tokens > 0
        )
        marks = [
            (self.target, "target", "border-left:2px dashed #555"),
            (self.limit, "limit", "border-left:2px solid #222"),
        ]
        if self.server is not None:
            marks.append((self.server, "server count", f"border-left:2px solid {COLOURS['server']}"))
        overlays = "".join(
            f'<div title="{esc(label)}: {n(tokens)}" style="position:absolute;top:-3px;bottom:-3px;'
            f'left:{pct(tokens):.2f}%;{style}"></div>'
            for tokens, label, style in marks
        )
        reply = (
            f'<div title="reply share: {n(self.reply)} tokens" style="position:absolute;top:0;bottom:0;'
            f"right:0;width:{pct(self.reply):.2f}%;background:repeating-linear-gradient(45deg,"
            f'{COLOURS["reply"]} 0 3px,transparent 3px 6px)"></div>'
        )
        bar = (
            '<div style="position:relative;height:12px;max-width:560px;margin:4px 0;'
            'background:rgba(127,127,127,0.15);border-radius:2px;white-space:nowrap;font-size:0">'
            f"{segments}{reply}{overlays}</div>"
        )
        legend = " · ".join(
            f'<span style="color:{COLOURS.get(name, "#888")}">■</span> {esc(name)} {n(tokens)}'
            for name, tokens in (*self.parts, ("reply", self.reply))
        )
        numbers = (
            f"estimate <b>{n(self.estimate)}</b> · target {n(self.target)} · limit {n(self.limit)}"
            f" · window {n(self.window)}"
        )
        if self.server is not None:
            numbers += (
                f' · <span style="color:{COLOURS["server"]}">server counted <b>{n(self.server)}</b></span>'
            )
            if self.estimate:
                numbers += f" ({_error(self.estimate, self.server)})"
        return f'<div style="{FONT}">{bar}<div>{legend}</div><div>{numbers}</div></div>'

    def text(self) -> str:
        """The same bar in characters: s/h/r for the parts, ``:`` the target, ``|`` the limit."""
        w = max(1, self.window)
        cells = ["."] * BAR_CHARS

        def at(tokens: int) -> int:
            return max(0, min(BAR_CHARS - 1, round(BAR_CHARS * tokens / w)))

        start = 0
        for name, tokens in self.parts:
            end = start + tokens
            for i in range(at(start), at(end)):
                cells[i] = name[0]
            start = end
        for i in range(at(w - self.reply), BAR_CHARS):
            cells[i] = "~"
        cells[at(self.target)] = ":"
        cells[at(self.limit)] = "|"
        parts = ", ".join(f"{name} {n(tokens)}" for name, tokens in self.parts)
        line = (
            f"[{''.join(cells)}] estimate {n(self.estimate)} / limit {n(self.limit)} "
            f"(target {n(self.target)}, window {n(self.window)}; {parts}; reply {n(self.reply)})"
        )
        if self.server is not None:
            line += f"; server counted {n(self.server)}"
        return line


def _error(estimate: int, real: int) -> str:
    if real <= 0:
        return "no count"
    diff = (estimate - real) / real
    side = "over" if diff >= 0 else "under"
    return f"estimate {abs(diff):.1%} {side}"


# -- the plan ------------------------------------------------------------------------------------------

_PLAN_ROWS = (
    ("window", "tokens the server holds"),
    ("reply", "held back for the reply (20%, at most 2,048)"),
    ("limit", "a request may take this much (90% of the window less the reply)"),
    ("target", "trimming goes down to this (65% of the limit)"),
    (
        "deep_target",
        f"or this deep ({DEEP_TARGET_PERCENT}%) while the newest step stays whole: fewer trims, "
        "the prompt cache kept",
    ),
    ("result_chars", "one tool result is cut at this many characters"),
    ("notes_chars", "the notes of earlier turns take at most this many characters"),
)


def _plan_values(plan: ContextPlan) -> dict[str, int]:
    values: dict[str, int] = asdict(plan)
    return values


def plan_html(plan: ContextPlan) -> str:
    """The plan as a table with its bar."""
    values = _plan_values(plan)
    rows = "".join(
        f'<tr><td style="text-align:left"><code>{name}</code></td>'
        f'<td style="text-align:right">{n(values[name])}</td>'
        f'<td style="text-align:left">{esc(why)}</td></tr>'
        for name, why in _PLAN_ROWS
    )
    picture = WindowPicture(plan.window, plan.limit, plan.target, (), plan.reply)
    return (
        f'<div style="{FONT}"><b>Context plan for a {n(plan.window)}-token window</b>'
        f"{picture.html()}<table>{rows}</table></div>"
    )


def plan_text(plan: ContextPlan) -> str:
    """The plan as aligned text."""
    lines = [f"Context plan for a {n(plan.window)}-token window"]
    values = _plan_values(plan)
    lines += [f"  {name:<13}{n(values[name]):>8}  {why}" for name, why in _PLAN_ROWS]
    return "\n".join(lines)


# -- the estimator -------------------------------------------------------------------------------------


def ratio_chart_svg(ratios: Sequence[float], width: int = 240, height: int = 48) -> str:
    """The ratio after each observation as a small inline SVG line chart (2–6 characters a token)."""
    low, high = 2.0, 6.0
    if not ratios:
        return ""
    step = width / max(1, len(ratios) - 1)

    def y(ratio: float) -> float:
        return height - (min(high, max(low, ratio)) - low) / (high - low) * height

    points = " ".join(f"{i * step:.1f},{y(r):.1f}" for i, r in enumerate(ratios))
    dots = "".join(f'<circle cx="{i * step:.1f}" cy="{y(r):.1f}" r="2"/>' for i, r in enumerate(ratios))
    guide = y(3.3)
    return (
        f'<svg width="{width}" height="{height}" viewBox="-3 -3 {width + 6} {height + 6}" '
        f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="ratio history">'
        f'<line x1="0" x2="{width}" y1="{guide:.1f}" y2="{guide:.1f}" stroke="#999" stroke-dasharray="3 3"/>'
        f'<polyline points="{points}" fill="none" stroke="{COLOURS["history"]}" stroke-width="1.5"/>'
        f'<g fill="{COLOURS["history"]}">{dots}</g></svg>'
    )


def estimator_html(estimator: TokenEstimator) -> str:
    """The ratio, and its history as a chart and a table of the last observations."""
    history = estimator.history
    head = (
        f"<b>Token estimator</b>: {estimator.ratio:.3f} characters a token, "
        f"learned from {len(history)} server count{'s' if len(history) != 1 else ''}"
    )
    if not history:
        return f'<div style="{FONT}">{head} (still the starting guess).</div>'
    rows = "".join(
        f"<tr><td>{n(o.chars)}</td><td>{n(o.prompt_tokens)}</td><td>{o.ratio_before:.3f}</td>"
        f"<td>{o.ratio_after:.3f}</td></tr>"
        for o in history[-8:]
    )
    return (
        f'<div style="{FONT}">{head}.<br>{ratio_chart_svg([o.ratio_after for o in history])}'
        f'<span style="color:#888"> (dashed: 3.3, the start)</span>'
        f"<table><tr><th>characters</th><th>server tokens</th><th>ratio before</th><th>after</th></tr>"
        f"{rows}</table></div>"
    )


def estimator_text(estimator: TokenEstimator) -> str:
    """The ratio and its recent history in one line."""
    ratios = " → ".join(f"{o.ratio_after:.2f}" for o in estimator.history[-8:])
    return f"TokenEstimator: {estimator.ratio:.3f} chars/token, {len(estimator.history)} observations" + (
        f" ({ratios})" if ratios else ""
    )


# -- a reply -------------------------------------------------------------------------------------------


def reply_html(reply: Reply) -> str:
    """A reply's requests as a table: step, mode, estimated vs real tokens, limit, trims, finish."""
    rows = "".join(
        f"<tr><td>{r.step}{' (last)' if r.last else ''}</td><td>{esc(r.mode)}</td>"
        f"<td>{n(r.estimated_tokens)}</td><td>{n(r.prompt_tokens)}</td>"
        f"<td>{_error(r.estimated_tokens, r.prompt_tokens) if r.prompt_tokens else ''}</td>"
        f"<td>{n(r.limit)}</td><td>{r.trimmed or ''}</td><td>{esc(r.finish_reason or '')}"
        f"{' · retried: ' + esc(r.retried) if r.retried else ''}</td></tr>"
        for r in reply.requests
    )
    calls = sum(len(s.calls) for s in reply.steps)
    return (
        f'<div style="{FONT}"><b>Reply</b> to {esc(_short(reply.question, 80))!s}: '
        f"{len(reply.steps)} steps, {calls} calls, ended: {esc(reply.stopped)}"
        f"{' — ' + esc(reply.error) if reply.error else ''}"
        "<table><tr><th>step</th><th>mode</th><th>estimated</th><th>server</th><th></th><th>limit</th>"
        f"<th>trimmed</th><th>finish</th></tr>{rows}</table></div>"
    )


def reply_text(reply: Reply) -> str:
    """A reply's requests as aligned text, then its answer."""
    calls = sum(len(s.calls) for s in reply.steps)
    lines = [
        f"Reply to {_short(reply.question, 60)!r}: {len(reply.steps)} steps, {calls} calls, "
        f"ended: {reply.stopped}" + (f" — {reply.error}" if reply.error else ""),
        f"  {'step':<9}{'mode':<8}{'estimated':>10}{'server':>9}{'limit':>9}{'trimmed':>9}  finish",
    ]
    lines += [
        f"  {str(r.step) + (' (last)' if r.last else ''):<9}{r.mode:<8}{n(r.estimated_tokens):>10}"
        f"{n(r.prompt_tokens):>9}{n(r.limit):>9}{r.trimmed or '':>9}  {r.finish_reason or ''}"
        for r in reply.requests
    ]
    if reply.text:
        lines += ["", reply.text]
    if reply.citations:  # each file:line the answer cites, checked against the file or not
        lines.append(citations_summary(reply.citations))
    return "\n".join(lines)


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the session ---------------------------------------------------------------------------------------


class _Named(Protocol):
    """Where a session's server was named: its settings' address and model (None: found, the server's)."""

    @property
    def base_url(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...


class Session(Protocol):
    """What ``%agent status`` reads of a session (an ``Agent`` is one)."""

    @property
    def settings(self) -> _Named: ...
    @property
    def server(self) -> ModelServer | None: ...
    @property
    def plan(self) -> ContextPlan | None: ...
    @property
    def workspace(self) -> Path: ...
    @property
    def mode(self) -> str: ...
    @property
    def window(self) -> int | None: ...
    @property
    def estimator(self) -> TokenEstimator: ...
    @property
    def replies(self) -> Sequence[Reply]: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def price(self) -> Price | None: ...
    @property
    def pending(self) -> Sequence[PendingChange]: ...


def pending_edits(agent: Session) -> list[PendingChange]:
    """The edits of this session still waiting for review, oldest first (``agent.pending``)."""
    return list(agent.pending)


def session_rows(agent: Session) -> list[tuple[str, str]]:
    """What ``%agent status`` shows, as (label, value) pairs."""
    server = agent.server
    plan = agent.plan
    model = (server.model if server is not None else None) or agent.settings.model
    return [
        ("server", _server_line(agent)),
        ("model", str(model or "(the server's)")),
        ("workspace", str(agent.workspace)),
        ("mode", str(agent.mode)),
        ("window", n(agent.window) if agent.window else "not asked yet"),
        (
            "plan",
            f"limit {n(plan.limit)}, target {n(plan.target)}, reply {n(plan.reply)}, "
            f"results ≤ {n(plan.result_chars)} chars"
            if plan
            else "after the first request",
        ),
        ("ratio", f"{agent.estimator.ratio:.3f} chars/token ({len(agent.estimator.history)} server counts)"),
        ("replies", str(len(agent.replies))),
        # The server's counts over every reply: prompt tokens afresh and cached, generated, cost if priced.
        ("usage", usage_line(agent.usage, agent.price)),
        (
            "pending edits",
            "; ".join(f"{i}. {e.path}" for i, e in enumerate(pending_edits(agent), 1)) or "none",
        ),
    ]


def _server_line(agent: Session) -> str:
    server = agent.server
    named = agent.settings.base_url
    if server is None:
        where = named or "the usual places, then the embedded server"
        return f"not connected yet ({where})"
    info = server.info if isinstance(server, Addressed) else None
    url = named or (info.base_url if info is not None else None)
    embedded = " (embedded)" if isinstance(server, MaybeEmbedded) and server.embedded is not None else ""
    return f"{server.kind}{embedded}" + (f" at {url}" if url else "")


def agent_html(agent: Session) -> str:
    """The session as a small table."""
    rows = "".join(
        f'<tr><td style="text-align:left"><b>{esc(k)}</b></td><td style="text-align:left">{esc(v)}</td></tr>'
        for k, v in session_rows(agent)
    )
    return f'<div style="{FONT}"><b>Agent session</b><table>{rows}</table></div>'


def agent_text(agent: Session) -> str:
    """The session as aligned text."""
    return "Agent session\n" + "\n".join(f"  {k:<14}{v}" for k, v in session_rows(agent))


# -- registration --------------------------------------------------------------------------------------

_REPRS: tuple[tuple[str, str, Callable[[Any], str], Callable[[Any], str]], ...] = (
    ("twinny_magics.budget", "ContextPlan", plan_html, plan_text),
    ("twinny_magics.estimate", "TokenEstimator", estimator_html, estimator_text),
    ("twinny_magics.events", "Reply", reply_html, reply_text),
    ("twinny_magics.agent", "Agent", agent_html, agent_text),
)


def _pretty(text_of: Callable[[Any], str]) -> Callable[[Any, Any, bool], None]:
    def printer(obj: Any, p: Any, cycle: bool) -> None:
        p.text(plain(text_of(obj)))

    return printer


def _sendable_html(html_of: Callable[[Any], str]) -> Callable[[Any], str]:
    return lambda obj: sendable(html_of(obj))


def register(shell: InteractiveShell) -> None:
    """Register the HTML and text reprs with the shell's formatters (by name: nothing is imported)."""
    if shell.display_formatter is None:
        return
    formatters = shell.display_formatter.formatters
    for module, name, to_html, to_text in _REPRS:
        formatters["text/html"].for_type_by_name(module, name, _sendable_html(to_html))
        formatters["text/plain"].for_type_by_name(module, name, _pretty(to_text))


def unregister(shell: InteractiveShell) -> None:
    """Remove what :func:`register` added."""
    if shell.display_formatter is None:
        return
    formatters = shell.display_formatter.formatters
    for module, name, _, _ in _REPRS:
        for mime in ("text/html", "text/plain"):
            formatters[mime].pop(f"{module}.{name}", None)
