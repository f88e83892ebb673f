"""What a notebook cell did, as a few lines a small model can read: the pure part of the kernel tools.

A cell's record holds its source, the text of its value, the tail of what it printed, its rich outputs
*named* (``[image/png 640×480]``, never the image), and an error as its exception line plus the frames
in the user's own code. Everything here is already cut to size when it is recorded (`CellRecord`'s
fields have their own limits), and `history_text` fits the newest cells into a character budget,
leaving the oldest out first — so a million printed lines or a megabyte of HTML cost the same few
hundred characters as a short cell.

No I/O and no kernel here: ``tools/kernel.py`` watches the shell and runs code; this shapes what it saw.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType


def cut_line(line: str, limit: int) -> str:
    """``line`` cut to ``limit`` characters, saying how much was left out (as the tools' own cut does;
    written here so that this module, which ``%load_ext`` loads, imports none of the tools)."""
    return line if len(line) <= limit else f"{line[:limit]} …[+{len(line) - limit} chars]"


#: Characters kept of a cell's source, of what it printed (the tail), of its value's text.
SOURCE_CHARS = 1500
PRINTED_CHARS = 1200
VALUE_CHARS = 1200
#: Rich outputs named per cell, frames of the user's code shown per error, characters of an error line.
OUTPUTS = 8
FRAMES = 4
ERROR_CHARS = 300
#: What the cell history answers at most (the loop's cut to its budget applies on top).
HISTORY_CHARS = 4000

_PNG = b"\x89PNG\r\n\x1a\n"


@dataclass
class CellRecord:
    """One cell run in the kernel (or one run of the agent's code), as the tools show it."""

    #: The cell's execution count, or None for code the agent ran.
    number: int | None
    source: str
    value: str = ""
    printed: str = ""
    #: Characters printed in all (the record keeps the tail).
    printed_chars: int = 0
    outputs: list[str] = field(default_factory=list)
    #: Rich outputs beyond `OUTPUTS` (counted, not named).
    more_outputs: int = 0
    error: str = ""
    #: Why the run stopped early ("time limit", "stop button"), for code the agent ran.
    stopped: str = ""
    #: Whether this record was made from ``In``/``Out`` alone (a cell run before the extension loaded).
    partial: bool = False

    def add_output(self, name: str) -> None:
        """Name one more rich output (counted past `OUTPUTS`)."""
        if len(self.outputs) < OUTPUTS:
            self.outputs.append(name)
        else:
            self.more_outputs += 1


def clip(text: str, chars: int, *, tail: bool = False) -> str:
    """``text`` within ``chars`` on a line boundary where one is near, saying how much was left out.

    A cut inside a line never splits a secret the masker would hide (`_safe_cut`): the part kept ends
    before it (or, for the ``tail``, starts after it), and a cut word is left out whole — a half of a
    key no longer looks like one, nor is it the kernel's known value.
    """
    if len(text) <= chars:
        return text
    if tail:
        start = len(text) - chars
        cut = text.find("\n", start, start + chars // 3)
        start = cut + 1 if cut >= 0 else _safe_cut(text, start, tail=True)
        return f"[… {start:,} chars before]\n{text[start:]}"
    cut = text.rfind("\n", chars * 2 // 3, chars)
    end = cut if cut >= 0 else _safe_cut(text, chars, tail=False)
    return f"{text[:end]}\n[… {len(text) - end:,} chars more]"


#: How far around a cut inside a line the text is masked to see whether the cut falls in a secret,
#: and the longest word a cut leaves out whole (a key, a token; longer runs are data, cut anywhere).
_CUT_WINDOW = 600
_CUT_WORD = 400


def start_of_tail(text: str) -> str:
    """The tail of a longer output (its start cut off elsewhere) from its first whole word or line:
    the word cut in two may be the end of a secret, which no longer looks like one."""
    line = text.find("\n", 0, _CUT_WORD)
    if line >= 0:
        return text[line + 1 :]
    space = re.search(r"\s", text[:_CUT_WORD])
    return text[space.end() :] if space else text


def _safe_cut(text: str, at: int, *, tail: bool) -> int:
    """Where to cut ``text`` near ``at`` so that no secret is split: outside every span the masker hides
    in the text around it, then at the edge of the word there (``tail``: the kept part starts after it)."""
    from twinny_magics.redact import MASK, mask_secrets  # noqa: PLC0415 - only a cut inside a line needs it

    low = max(0, at - _CUT_WINDOW)
    window = text[low : at + _CUT_WINDOW]
    shown = mask_secrets(window)
    if shown != window:
        # The masker replaces spans and keeps the rest: the pieces between masks are found in order.
        pieces, found, spans = shown.split(MASK), 0, []
        for n, piece in enumerate(pieces):
            where = window.find(piece, found) if n < len(pieces) - 1 else len(window) - len(piece)
            if where < found:
                spans = [(0, len(window))]  # not found as expected: treat the whole window as hidden
                break
            if n:
                spans.append((found, where))
            found = where + len(piece)
        for start, end in spans:
            if low + start < at < low + end:
                at = low + (end if tail else start)
                break
    if 0 < at < len(text) and not text[at - 1].isspace() and not text[at].isspace():
        if tail:
            space = re.search(r"\s", text[at : at + _CUT_WORD])
            at = at + space.end() if space else at
        else:
            low = max(0, at - _CUT_WORD)
            before = max(text.rfind(" ", low, at), text.rfind("\t", low, at))
            at = before + 1 if before >= 0 else at
    return at


def output_name(data: Mapping[str, object]) -> str:
    """A rich output's name: ``[image/png 640×480]``, ``[text/html 12,400 chars]``; plain text shown.

    The richest type is named (images first, then HTML, JSON, anything else); a text/plain part beside
    a rich one is not repeated, and one alone is shown itself, cut to one line.
    """
    types = [str(kind) for kind in data]
    for kind in types:
        if kind.startswith("image/"):
            size = _image_size(kind, data[kind])
            return f"[{kind}{' ' + size if size else ''}]"
    rich = [kind for kind in types if kind != "text/plain"]
    if rich:
        kind = "text/html" if "text/html" in rich else rich[0]
        body = data[kind]
        length = len(body) if isinstance(body, str) else None
        return f"[{cut_line(kind, 60)}{f' {length:,} chars' if length is not None else ''}]"
    plain = data.get("text/plain")
    return cut_line(" ".join(str(plain).split()), 160) if plain is not None else "[empty output]"


def _image_size(kind: str, body: object) -> str:
    """``640×480`` from a PNG's header (base64, as a kernel carries it); '' for anything else."""
    if kind != "image/png" or not isinstance(body, str | bytes):
        return ""
    raw = body.encode("ascii", "ignore") if isinstance(body, str) else body
    if raw.startswith(_PNG):
        head = raw[:24]
    else:
        try:
            head = base64.b64decode(raw[:32] + b"=" * (-len(raw[:32]) % 4), validate=False)
        except (binascii.Error, ValueError):
            return ""
    if len(head) < 24 or not head.startswith(_PNG):
        return ""
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    return f"{width}×{height}"


def error_text(exc: BaseException, where: Callable[[str], str | None]) -> str:
    """The exception line, then the last `FRAMES` frames of the user's own code, one a line.

    ``where(filename)`` names a file that is the user's (``cell [3]``) or None for library code, which is
    left out: a small model needs the line of its user's code that failed, not pandas' internals. A
    chained exception (raised while handling another) says so in a line.
    """
    lines = [cut_line(_exception_line(exc), ERROR_CHARS)]
    frames = []
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        place = where(code.co_filename)
        if place is not None:
            frames.append((place, tb.tb_lineno, code.co_name, code.co_filename))
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and exc.filename is not None:
        place = where(exc.filename)
        if place is not None and exc.lineno:
            text = " ".join((exc.text or "").split())
            lines.append(f"  {place}, line {exc.lineno}: {cut_line(text, 160)}")
    for place, number, function, filename in frames[-FRAMES:]:
        text = _source_line(filename, number)
        inside = "" if function == "<module>" else f", in {function}"
        lines.append(f"  {place}, line {number}{inside}: {cut_line(text, 160)}")
    if len(frames) > FRAMES:
        lines.insert(1, f"  [… {len(frames) - FRAMES} earlier frames of the user's code]")
    cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    if cause is not None:
        how = "caused by" if exc.__cause__ is not None else "raised while handling"
        lines.append(f"  ({how} {cut_line(_exception_line(cause), 160)})")
    return "\n".join(lines)


def _exception_line(exc: BaseException) -> str:
    """``KeyError: 'totl'`` on one line (the message is the exception's own code; it may raise)."""
    kind = type(exc).__name__
    try:
        message = str(exc) if not isinstance(exc, KeyError) else repr(exc.args[0]) if exc.args else ""
    except Exception:
        return f"{kind} (its message could not be shown)"
    message = " ".join(message.split())
    return f"{kind}: {message}" if message else kind


def _source_line(filename: str, number: int) -> str:
    import linecache  # noqa: PLC0415 - a cache of text, read only

    return linecache.getline(filename, number).strip()


def cell_text(record: CellRecord, *, source: bool = True) -> str:
    """One record as the model reads it: the source (unless ``source`` is False: the model's own code
    comes back as what it did only), then what came of it, each part labelled."""
    lines = []
    if source:
        if record.number is None:
            head = "[agent run]"
        else:
            partial = " (run before the agent was loaded: value only)" if record.partial else ""
            head = f"[{record.number}]{partial}"
        code = record.source.rstrip("\n") or "(empty)"
        lines = [head, *(f"    {line}" for line in code.split("\n"))]
    if record.stopped:
        lines.append(f"  stopped: {record.stopped}")
    if record.error:
        error = record.error.split("\n")
        lines.append(f"  error: {error[0]}")
        lines.extend(f"  {line}" for line in error[1:])
    if record.printed:
        # Not printed_chars > len(printed): a known secret hidden in it shortens the text kept.
        cut = record.printed_chars > PRINTED_CHARS
        printed = (start_of_tail(record.printed) if cut else record.printed).rstrip("\n")
        size = f" ({record.printed_chars:,} chars, the end shown)" if cut else ""
        lines.append(f"  printed{size}:")
        lines.extend(f"    {line}" for line in printed.split("\n"))
    if record.outputs:
        more = f" and {record.more_outputs} more" if record.more_outputs else ""
        lines.append(f"  outputs: {', '.join(record.outputs)}{more}")
    if record.value:
        value = record.value.rstrip("\n").split("\n")
        lines.append(f"  value: {value[0]}")
        lines.extend(f"    {line}" for line in value[1:])
    if not (record.error or record.printed or record.outputs or record.value or record.stopped):
        lines.append("  (no output)")
    return "\n".join(lines)


def history_text(records: Sequence[CellRecord], chars: int = HISTORY_CHARS) -> str:
    """The cells newest last, within ``chars``: the oldest are left out first (and counted)."""
    if not records:
        return (
            "No cells have run in this kernel yet (besides the agent's own). Ask the user to run the "
            "notebook, or read the .ipynb file."
        )
    blocks: list[str] = []
    used = 0
    for record in reversed(records):
        block = cell_text(record)
        if blocks and used + len(block) + 1 > chars - 80:
            break
        if not blocks and len(block) > chars - 80:
            block = clip(block, chars - 80)
        blocks.append(block)
        used += len(block) + 1
    left = len(records) - len(blocks)
    head = f"{len(records)} cell(s) run in this kernel, oldest first"
    if left:
        head += f"; the {left} oldest left out"
    return "\n".join([head + ":", *reversed(blocks)])


def failures(records: Iterable[CellRecord]) -> list[CellRecord]:
    """The records whose run ended in an error."""
    return [record for record in records if record.error]


_AGENT_CELL = re.compile(r"\A\s*%%?agent\b")


def is_agent_cell(source: str) -> bool:
    """Whether a cell is an ``%agent``/``%%agent`` cell (left out of what the history shows)."""
    return bool(_AGENT_CELL.match(source))


#: Words of a question about what ran in the notebook (its cells, outputs, errors, variables).
_ABOUT_THE_KERNEL = re.compile(
    r"\b(cells?|last|error|errors|fail(s|ed|ing)?|traceback|exception|raises?|ran|run|output|printed|"
    r"prints?|kernel|notebook|dataframe|df|variable|plot|figure|chart|result)\b",
    re.IGNORECASE,
)
#: The share of the head start the cells run may take when the question is about them.
HEAD_START_SHARE = 0.4


def about_the_kernel(question: str) -> bool:
    """Whether a question is about what ran in the notebook ("Why does the last cell fail?")."""
    return bool(_ABOUT_THE_KERNEL.search(question))
