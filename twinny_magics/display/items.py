"""The pieces a reply is shown as: each renders itself as ``text/plain`` and ``text/html``, in any state.

Each piece is its own output in the cell, shown with a display handle and re-shown when it changes, so a
notebook executed headless, exported to HTML or printed in a terminal keeps exactly what a live browser
saw (a widget would keep only its repr and a view id). Pure rendering: no widgets, no I/O.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from twinny_magics.contracts import ProposedChange
from twinny_magics.conversation import ToolCall, ToolResult
from twinny_magics.display.markdown import markdown_html
from twinny_magics.display.reprs import FONT, MONO, WindowPicture, esc, n, plain, sendable
from twinny_magics.display.terminal import command_lines, command_shape, visible_parts
from twinny_magics.usage import Price, Usage, usage_parts

NOTICE_COLOURS = {"warning": "#b8860b", "fallback": "#2a7ab8", "error": "#c62828"}
NOTICE_MARKS = {"warning": "⚠", "fallback": "↺", "error": "✖"}
ARGUMENT_CHARS = 40
TITLE_CHARS = 110
#: Tools whose ``code`` argument is shown whole in their item (the rest show arguments in the title).
CODE_TOOLS = ("run_python", "propose_cell")


class Item:
    """A piece of a reply's display."""

    def text(self) -> str:
        """The piece as plain text."""
        raise NotImplementedError

    def html(self) -> str:
        """The piece as HTML (inline styles only, so exports and sanitizers keep it)."""
        raise NotImplementedError

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": plain(self.text()), "text/html": sendable(self.html())}


@dataclass
class Bundle(Item):
    """Any ready-made HTML with its text twin."""

    html_text: str
    plain: str

    def text(self) -> str:
        """The text twin."""
        return self.plain

    def html(self) -> str:
        """The HTML."""
        return self.html_text


def short_arguments(call: ToolCall) -> str:
    """A call's arguments in one short line: ``path='a.py', start_line=3``."""
    parts = []
    for key, value in call.arguments.items():
        shown = repr(value) if isinstance(value, str) else str(value)
        shown = " ".join(shown.split())
        if len(shown) > ARGUMENT_CHARS:
            shown = shown[: ARGUMENT_CHARS - 1] + "…"
        parts.append(f"{key}={shown}")
    line = ", ".join(parts)
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


@dataclass
class StatusLine(Item):
    """The live line at the top of a reply: the step, what is running, the tokens, the time.

    Once the reply is over it also carries the usage gauge, from the server's counts: prompt tokens
    evaluated afresh and read from its cache, tokens generated, and with a ``price`` the cost.
    """

    steps: int
    step: int = 0
    doing: str = "starting"
    estimate: int | None = None
    counted: int | None = None
    ratio: float | None = None
    calls: int = 0
    requests: int = 0
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    outcome: str | None = None
    usage: Usage | None = None
    price: Price | None = None

    def text(self) -> str:
        """One line: ``step 2/12 · running read_file · ~1,234 tokens (server 1,300) · 1.2 s``."""
        elapsed = (self.ended or time.monotonic()) - self.started
        head = self.outcome or f"step {self.step}/{self.steps} · {self.doing}"
        parts = [head]
        if self.outcome:
            parts.append(f"{self.requests} request{'s' if self.requests != 1 else ''}")
            parts.append(f"{self.calls} call{'s' if self.calls != 1 else ''}")
        if self.estimate is not None:
            tokens = f"~{n(self.estimate)} tokens"
            if self.counted is not None:
                tokens += f" (server {n(self.counted)})"
            parts.append(tokens)
        if self.ratio is not None:
            parts.append(f"{self.ratio:.2f} chars/token")
        usage = self.usage
        if self.outcome and usage is not None and (usage.requests > usage.uncounted or usage.generated):
            parts += usage_parts(usage, self.price)
        parts.append(f"{elapsed:.1f} s")
        return " · ".join(parts)

    def html(self) -> str:
        """The line, dimmed, bold when the reply is over."""
        weight = "bold" if self.outcome else "normal"
        return f'<div style="{FONT}color:#666;font-weight:{weight}">{esc(self.text())}</div>'


@dataclass
class NoticeItem(Item):
    """A warning, a fallback or an error, as a visible note."""

    kind: str
    message: str

    def text(self) -> str:
        """``⚠ warning: …``."""
        return f"{NOTICE_MARKS.get(self.kind, '•')} {self.kind}: {self.message}"

    def html(self) -> str:
        """A note with a coloured left border."""
        colour = NOTICE_COLOURS.get(self.kind, "#666")
        return (
            f'<div style="{FONT}border-left:4px solid {colour};padding:2px 8px;margin:4px 0">'
            f'<b style="color:{colour}">{NOTICE_MARKS.get(self.kind, "•")} {esc(self.kind)}</b> '
            f"{esc(self.message)}</div>"
        )


@dataclass
class RequestItem(Item):
    """One request: its window picture, what was trimmed to fit it, and the server's count."""

    step: int
    mode: str
    last: bool
    picture: WindowPicture
    trims: list[str] = field(default_factory=list)
    usage: str | None = None

    def title(self) -> str:
        """``Request 2 · native · last, no tools``."""
        last = " · last, no tools" if self.last else ""
        return f"Request {self.step} · {self.mode}{last}"

    def text(self) -> str:
        """The title, the bar in characters, the trims and the count."""
        lines = [f"── {self.title()}", f"   {self.picture.text()}"]
        lines += [f"   ✂ {trim}" for trim in self.trims]
        if self.usage:
            lines.append(f"   {self.usage}")
        return "\n".join(lines)

    def html(self) -> str:
        """The title and the stacked bar."""
        trims = "".join(f'<div style="color:#b8860b">✂ {esc(t)}</div>' for t in self.trims)
        usage = f"<div>{esc(self.usage)}</div>" if self.usage else ""
        return (
            f'<div style="{FONT}margin-top:6px"><b>{esc(self.title())}</b>'
            f"{self.picture.html()}{trims}{usage}</div>"
        )


@dataclass
class TextItem(Item):
    """What the model wrote in one step: Markdown rendered to inert HTML (its text twin is the text itself).

    Never sent as ``text/markdown``: a frontend would render the raw HTML inside it (see
    :mod:`.markdown`). ``sent_chars`` counts what the view's updates of this piece have sent so far, so
    it can keep the traffic of a long answer linear in its length.
    """

    step: int
    body: str = ""
    shown_at: float = 0.0
    sent_chars: int = 0

    def text(self) -> str:
        """The text as written."""
        return self.body

    def html(self) -> str:
        """The text as sanitized HTML."""
        return markdown_html(self.body)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        body = sendable(self.body)
        return {"text/html": markdown_html(body) or " ", "text/plain": plain(body)}


@dataclass
class CallItem(Item):
    """One tool call: a collapsible item with the output as the model saw it."""

    key: str
    call: ToolCall
    result: ToolResult | None = None
    trimmed_at: int | None = None
    pending_edit: bool = False

    def title(self) -> str:
        """``read_file path='a.py'``."""
        args = short_arguments(self.call)
        return f"{self.call.name} {args}".strip()

    def badges(self) -> list[str]:
        """Short notes after the title: running, size, error, cut, trimmed, waiting for review."""
        result = self.result
        if result is None:
            return ["running…"]
        badges = [f"{len(result.output):,} chars"]
        if result.is_error:
            badges.append("error")
        if result.cut_chars:
            badges.append(f"cut: {result.cut_chars:,} chars left out")
        if self.trimmed_at is not None:
            badges.append(f"trimmed at request {self.trimmed_at}")
        if self.pending_edit:
            badges.append("waits for review")
        return badges

    def notes(self) -> list[str]:
        """Sentences that explain the badges inside the item."""
        notes = []
        if self.trimmed_at is not None:
            notes.append(
                f"Request {self.trimmed_at} trimmed this result to its first line to save context; "
                "below is what the model saw before that."
            )
        if self.result is not None and self.result.cut_chars:
            notes.append(
                f"The tool returned {len(self.result.full_text):,} characters; the model saw them cut, "
                "with a note of what was left out (at the end)."
            )
        return notes

    def code(self) -> str | None:
        """The code of a kernel run or a proposed cell, shown whole above the output (else None)."""
        code = self.call.arguments.get("code") if self.call.name in CODE_TOOLS else None
        return code if isinstance(code, str) else None

    def text(self) -> str:
        """``[1.0] read_file path='a.py' — 120 chars`` and the output, indented."""
        head = f"[{self.key}] {self.title()} — {', '.join(self.badges())}"
        lines = [head] + [f"    ({note})" for note in self.notes()]
        code = self.code()
        if code is not None:
            lines += [f"    │ {line}" for line in command_lines(code)]
        if self.result is not None:
            lines += [f"    {line}" for line in self.result.output.splitlines()]
        return "\n".join(lines)

    def html(self) -> str:
        """A ``<details>`` whose summary is the call and whose body is the output."""
        result = self.result
        colour = "#c62828" if result is not None and result.is_error else "inherit"
        badges = " · ".join(esc(b) for b in self.badges())
        trimmed = (
            ' <span style="background:#b8860b;color:white;border-radius:3px;padding:0 4px">trimmed</span>'
            if self.trimmed_at is not None
            else ""
        )
        notes = "".join(f'<div style="color:#b8860b">{esc(note)}</div>' for note in self.notes())
        code = self.code()
        notes += exact_code_html(code) if code is not None else ""
        body = (
            f'<pre style="{MONO}white-space:pre-wrap;max-height:24em;overflow:auto;margin:4px 0 4px 1em">'
            f"{esc(result.output)}</pre>"
            if result is not None
            else ""
        )
        return (
            f'<details style="{FONT}margin:2px 0"><summary style="cursor:pointer">'
            f'<span style="color:{colour}"><b>{esc(self.call.name)}</b></span> '
            f'<code style="{MONO}">{esc(short_arguments(self.call))}</code> '
            f'<span style="color:#888">{badges}</span>{trimmed}</summary>{notes}{body}</details>'
        )


def diff_html(diff: str) -> str:
    """A unified diff with added lines green and removed lines red."""
    lines = []
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            style = "background:rgba(46,160,67,0.18)"
        elif line.startswith("-") and not line.startswith("---"):
            style = "background:rgba(248,81,73,0.18)"
        elif line.startswith("@@"):
            style = "color:#888"
        else:
            style = ""
        lines.append(f'<span style="{style}">{esc(line)}</span>')
    return f'<pre style="{MONO}margin:4px 0;max-height:30em;overflow:auto">' + "\n".join(lines) + "</pre>"


@dataclass
class EditItem(Item):
    """A proposed edit: its diff, its status, and how to apply it without buttons."""

    edit: ProposedChange
    message: str = ""

    @property
    def status(self) -> str:
        """``pending``, ``applied``, ``discarded`` or ``conflict``."""
        return self.edit.status

    def headline(self) -> str:
        """``Proposed edit to a.py — waiting for review``."""
        path = self.edit.path
        what = "Proposed new file" if self.edit.creates else "Proposed edit to"
        state = {
            "pending": "waiting for review: Apply or Discard (or %agent apply / %agent discard)",
            "applied": "applied",
            "discarded": "discarded",
            "conflict": "not applied: the file changed meanwhile",
        }.get(self.status, self.status)
        return f"{what} {path} — {state}"

    def text(self) -> str:
        """The headline, the message of the last action, the diff."""
        lines = [self.headline()]
        if self.message:
            lines.append(self.message)
        lines.append(self.edit.diff)
        return "\n".join(lines)

    def html(self) -> str:
        """The headline and the coloured diff."""
        colour = {"applied": "#2e7d32", "discarded": "#888", "conflict": "#c62828"}.get(
            self.status, "inherit"
        )
        message = f"<div>{esc(self.message)}</div>" if self.message else ""
        return (
            f'<div style="{FONT}border:1px solid rgba(127,127,127,0.4);padding:4px 8px;margin:4px 0">'
            f'<b style="color:{colour}">{esc(self.headline())}</b>{message}'
            f"{diff_html(self.edit.diff)}</div>"
        )


@dataclass
class ApprovalItem(Item):
    """Code the model asked to run (a command, Python for the kernel) or a cell it proposed, shown
    exactly, and what became of the request.

    Exactly: every line on a line of its own, every control, bidi and invisible character as a marker
    (``⟨U+202E⟩``), long tokens wrapped, and the size stated — so that a newline, a right-to-left
    override, a zero-width character or a long run of text cannot make the code look like another.
    """

    command: str
    state: str = "waiting"
    #: The tool asking: run_command, run_python or propose_cell.
    tool: str = "run_command"

    STATES = {  # noqa: RUF012 (a class constant, never changed)
        "waiting": "waiting for approval (Run / Don't run)",
        "approved": "approved",
        "declined": "declined",
        "unanswered": "nobody answered; not run",
        "stopped": "stopped",
    }
    CELL_STATES = {  # noqa: RUF012
        "waiting": "waiting for the user (Insert / Discard)",
        "approved": "to be inserted below when the reply ends (not run)",
        "declined": "discarded",
        "unanswered": "nobody answered; not inserted",
        "stopped": "stopped",
    }

    @property
    def is_cell(self) -> bool:
        """Whether this is a proposed cell (Insert / Discard) rather than code to run."""
        return self.tool == "propose_cell"

    def state_text(self) -> str:
        """``waiting for approval (Run / Don't run)``, ``approved``, ..."""
        states = self.CELL_STATES if self.is_cell else self.STATES
        return states.get(self.state, self.state)

    def what(self) -> str:
        """``run_command asks to run``, ``run_python asks to run Python in the kernel``, …"""
        if self.is_cell:
            return "propose_cell proposes a new cell"
        if self.tool == "run_python":
            return "run_python asks to run Python in the kernel"
        return f"{self.tool} asks to run"

    def headline(self) -> str:
        """``run_command asks to run (1 line, 8 characters) — approved``."""
        return f"{self.what()} ({command_shape(self.command)}) — {self.state_text()}"

    def text(self) -> str:
        """The headline, then each line of the command after ``  │ ``, hidden characters as markers."""
        return "\n".join([self.headline(), *(f"  │ {line}" for line in command_lines(self.command))])

    def html(self) -> str:
        """The headline and the command, a line per line, long tokens wrapped, markers highlighted."""
        if self.is_cell:
            lead = "The model proposes this cell"
        elif self.tool == "run_python":
            lead = "The model asks to run this Python in your kernel"
        else:
            lead = "The model asks to run this command"
        return (
            f'<div style="{FONT}border-left:4px solid #2a7ab8;padding:2px 8px;margin:4px 0">'
            f"<div>{esc(lead)} ({esc(command_shape(self.command))}) — "
            f"<b>{esc(self.state_text())}</b></div>{exact_code_html(self.command)}</div>"
        )


def exact_code_html(code: str) -> str:
    """Code a line per line, numbered, every hidden character a highlighted marker, long tokens wrapped."""
    mark = "color:#c62828;background:rgba(198,40,40,0.12);border-radius:2px"
    rows = []
    for number, line in enumerate(code.split("\n"), 1):
        shown = "".join(
            f'<span style="{mark}">{esc(part)}</span>' if is_marker else esc(part)
            for part, is_marker in visible_parts(line)
        )
        rows.append(
            '<div style="padding-left:3.5em;text-indent:-3.5em">'
            f'<span style="color:#888;user-select:none">{number:>3} │</span> {shown}</div>'
        )
    return (
        f'<div style="{MONO}white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-all;'
        "direction:ltr;unicode-bidi:isolate;margin:4px 0;padding:4px 6px;"
        f'background:rgba(127,127,127,0.1);border-radius:3px">{"".join(rows)}</div>'
    )
