"""A saved session as a transcript a person reads: Markdown, or one HTML page of the cell's own pieces.

Both are made from the session document (:mod:`twinny_magics.sessions.document`), so they carry exactly
what a save would — the key and credential shapes already masked. The Markdown keeps the model's words
readable but inert wherever it is rendered (GitHub, VS Code, JupyterLab render raw HTML and load
images): the model's and the question's Markdown is parsed and written out again with no image (it
becomes text, ``[image: alt — address]``), no raw HTML, links only http(s) and mailto
(:func:`~twinny_magics.display.markdown.inert_markdown`); every other string read from the session (a
tool's name, a notice's kind, an error) is escaped to show as text; tool arguments and output sit in code
spans and fences longer than any run of backticks inside them. The HTML is the pieces the cell showed
(:mod:`.items`), the model's Markdown through the package's sanitizing renderer, everything else
escaped, and a Content-Security-Policy that lets no script run and nothing load.

Pure: no I/O (``Agent.export`` writes the file through :mod:`twinny_magics.sessions.files`).
"""

from __future__ import annotations

from twinny_magics.budget import plan_context
from twinny_magics.conversation import ToolCall
from twinny_magics.display.items import CallItem, EditItem, NoticeItem, RequestItem, TextItem, short_arguments
from twinny_magics.display.markdown import (
    code_fence,
    code_span,
    inert_markdown,
    markdown_lines,
    markdown_text,
)
from twinny_magics.display.reprs import FONT, WindowPicture, esc, plan_html, reply_html, sendable
from twinny_magics.events import Reply, RequestRecord
from twinny_magics.sessions.document import SavedSession

#: A page that shows and runs nothing from elsewhere: inline styles, and nothing else.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def _error(request: RequestRecord) -> str:
    if not request.prompt_tokens:
        return ""
    diff = (request.estimated_tokens - request.prompt_tokens) / request.prompt_tokens
    return f"{diff:+.1%}"


def _fence(text: str, info: str = "text") -> str:
    return code_fence(text, info)


def _quote(markdown: str) -> str:
    """Markdown already made inert, as a block quote."""
    return "\n".join("> " + line if line else ">" for line in markdown.splitlines() or [""])


def _server_line(saved: SavedSession) -> str:
    server = saved.server
    parts = [server.kind or "an unknown server"]
    if server.embedded:
        parts.append("(embedded)")
    if server.model:
        parts.append(f"model {server.model}")
    if server.window:
        parts.append(f"window {server.window:,}")
    return " ".join(parts)


def _saved_line(saved: SavedSession) -> str:
    return (
        f"Saved {saved.saved_at or '(unknown time)'} · {_server_line(saved)} · mode {saved.mode} · "
        f"{saved.ratio:.2f} characters a token, learned from {len(saved.observations)} server counts"
    )


def _summary(saved: SavedSession) -> list[str]:
    return [
        _saved_line(saved),
        f"Workspace: `{saved.workspace}` · {len(saved.replies)} replies · {len(saved.notes)} notes",
    ]


def _summary_markdown(saved: SavedSession) -> list[str]:
    """`_summary` as Markdown: the time, the server's name and the mode are text read from the file."""
    return [
        markdown_text(_saved_line(saved)),
        f"Workspace: {code_span(str(saved.workspace))} · {len(saved.replies)} replies · "
        f"{len(saved.notes)} notes",
    ]


def _requests_table(requests: list[RequestRecord]) -> list[str]:
    lines = [
        "| request | step | mode | estimate | server | estimate vs server | limit | trimmed |",
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for number, r in enumerate(requests, 1):
        server = f"{r.prompt_tokens:,}" if r.prompt_tokens is not None else "–"
        step = f"{r.step} (last)" if r.last else str(r.step)
        lines.append(
            f"| {number} | {step} | {markdown_text(str(r.mode))} | {r.estimated_tokens:,} | {server} | "
            f"{_error(r)} | {r.limit:,} | {markdown_text(str(r.trimmed or ''))} |"
        )
    return lines


def _call_markdown(key: str, item: CallItem) -> list[str]:
    result = item.result
    badges = f" — {markdown_text(', '.join(item.badges()))}" if result is not None else ""
    lines = [f"- {_call_title(item.call)} \\[{markdown_text(key)}\\]{badges}"]
    code = item.code()
    if code is not None:
        lines += ["", _fence(code, "python")]
    if result is not None:
        lines += ["", _fence(result.output or "(empty)")]
        if result.original is not None and result.original != result.output:
            lines += ["", f"  The full result ({len(result.original):,} characters) before it was cut:", ""]
            lines += [_fence(result.original)]
    return lines


def _call_title(call: ToolCall) -> str:
    """A call's name in bold and its arguments in a code span (a name is any text a model wrote)."""
    arguments = code_span(short_arguments(call))
    return f"**{markdown_text(call.name) or '(no name)'}**" + (f" {arguments}" if arguments else "")


def reply_markdown(number: int, reply: Reply) -> str:
    """One reply: the question, each step's calls with their results as the model saw them, the answer."""
    first = reply.question.strip().splitlines()[0] if reply.question.strip() else "(no question)"
    lines = [f"## {number}. {markdown_text(first[:100])}", "", _quote(inert_markdown(reply.question)), ""]
    if reply.head_start is not None:
        lines += ["**Head start** (given before the first step)", ""]
        lines += [*_call_markdown("0.0", CallItem("0.0", reply.head_start.call, reply.head_start)), ""]
    last = len(reply.steps)
    for step in reply.steps:
        lines.append(f"**Step {step.number}**")
        lines.append("")
        for index, result in enumerate(step.results):
            key = f"{step.number}.{index}"
            lines += [*_call_markdown(key, CallItem(key, result.call, result)), ""]
        ran = [r.call for r in step.results]
        for call in step.calls:
            if call not in ran:
                lines += [f"- {_call_title(call)} (not run)", ""]
        if not step.calls and step.text.strip() and step.number != last:
            lines += [_quote(inert_markdown(step.text.strip())), ""]
        lines += [f"*{markdown_text(problem)}*" for problem in step.problems]
        if step.problems:
            lines.append("")
    for notice in reply.notices:
        lines += [_quote(f"**{markdown_text(notice.kind)}**: {markdown_lines(notice.text)}"), ""]
    for edit in reply.pending:
        item = EditItem(edit)
        headline = markdown_text(item.headline())
        lines += [f"**{headline}**", "", _fence(edit.diff, "diff"), ""]
    lines += [f"**Answer** (ended: {markdown_text(str(reply.stopped))})", ""]
    lines += [inert_markdown(reply.text.strip()) or "*(no answer)*", ""]
    if reply.error:
        lines += [f"**Error**: {markdown_lines(reply.error)}", ""]
    if reply.requests:
        lines += ["Requests, in tokens (the estimate sent, the server's own count):", ""]
        lines += [*_requests_table(reply.requests), ""]
    return "\n".join(lines)


def markdown_transcript(saved: SavedSession) -> str:
    """The whole session as Markdown."""
    parts = ["# twinny_magics session", "", *_summary_markdown(saved), ""]
    parts += [reply_markdown(number, reply) for number, reply in enumerate(saved.replies, 1)]
    return sendable("\n".join(parts).rstrip() + "\n")


def _request_item(request: RequestRecord, ratio: float) -> RequestItem:
    plan = plan_context(request.window, ratio)
    picture = WindowPicture(
        window=request.window,
        limit=request.limit,
        target=request.target,
        parts=(("request", request.estimated_tokens),),
        reply=plan.reply,
        estimate=request.estimated_tokens,
        server=request.prompt_tokens,
    )
    return RequestItem(request.step, request.mode, request.last, picture)


def reply_html_pieces(reply: Reply, ratio: float) -> str:
    """One reply as the cell showed it: requests, calls, text, notices, edits, the answer and its table."""
    pieces = [f'<h2 style="{FONT}font-size:16px">{esc(reply.question.strip()[:200])}</h2>']
    pieces.append(f'<div style="{FONT}white-space:pre-wrap;color:#555">{esc(reply.question)}</div>')
    if reply.head_start is not None:
        pieces.append(CallItem("0.0", reply.head_start.call, reply.head_start).html())
    last = len(reply.steps)
    for step in reply.steps:
        pieces += [_request_item(r, ratio).html() for r in reply.requests if r.step == step.number]
        if not step.calls and step.text.strip() and step.number != last:
            pieces.append(TextItem(step.number, step.text).html())
        for index, result in enumerate(step.results):
            pieces.append(CallItem(f"{step.number}.{index}", result.call, result).html())
        pieces += [NoticeItem("warning", problem).html() for problem in step.problems]
    pieces += [NoticeItem(notice.kind, notice.text).html() for notice in reply.notices]
    pieces += [EditItem(edit).html() for edit in reply.pending]
    pieces.append(TextItem(last, reply.text).html())
    pieces.append(reply_html(reply))
    return f'<section style="margin:1.5em 0">{"".join(pieces)}</section>'


def html_transcript(saved: SavedSession) -> str:
    """The whole session as one HTML page that runs nothing."""
    summary = "".join(f"<div>{esc(line)}</div>" for line in _summary(saved))
    plan = plan_html(saved.plan) if saved.plan is not None else ""
    replies = "".join(reply_html_pieces(reply, saved.ratio) for reply in saved.replies)
    page = (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        "<title>twinny_magics session</title></head>"
        f'<body style="{FONT}max-width:60em;margin:1em auto">'
        f'<h1 style="font-size:20px">twinny_magics session</h1>{summary}{plan}{replies}</body></html>\n'
    )
    return sendable(page)
