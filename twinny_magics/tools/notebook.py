"""A ``.ipynb`` as the file tools see it: its cells, with outputs summarized (`notebook_lines`).

A notebook's JSON is mostly escaping, ids and base64 images; a small model reading it raw spends its
window on noise and is tempted to edit the JSON. So read_file and grep see the notebook as cells (the
source, with outputs summarized in a line or two), and the edit tools refuse notebooks altogether.

A notebook is parsed defensively: a malformed one (not JSON, nested past the parser's depth, fields
of the wrong type) is a `WorkspaceError` naming it, so grep skips it and goes on; one past
`NOTEBOOK_BYTES` is refused before it is read whole. The kernel's variables are in `kernel.variables`.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import IO, Any

from twinny_magics.errors import WorkspaceError
from twinny_magics.tools.base import cut_line

# Outputs are summarized, not shown whole: their first lines tell the model what a cell printed. Twelve
# hold a small table (a classifier's intervals and counts, a frame's head, describe()): with three, the
# answers of questions about what a notebook shows were never on screen (4 of 4 mapclassify notebook
# tasks failed so; a long output still ends in "… N more lines").
OUTPUT_LINES = 12
OUTPUT_CHARS = 120
# A notebook is parsed whole (JSON has no streaming parser here); past this size it is refused. Notebooks
# with many plots reach a few MB; the JSON parse of this much takes about 0.3 s and a few times its size.
NOTEBOOK_BYTES = 32 * 1024 * 1024


def notebook_lines(source: Path | IO[bytes], rel: str) -> list[str]:
    """A notebook as text lines: ``# cell N [kind]`` headers, each cell's source, outputs summarized.

    ``source`` is the notebook's path or a binary file already open on it (read at most
    `NOTEBOOK_BYTES` + 1 bytes). A malformed notebook is a `WorkspaceError` naming it.
    """
    if isinstance(source, Path):
        with source.open("rb") as handle:
            raw = _read_capped(handle)
    else:
        raw = _read_capped(source)
    if raw is None:
        raise WorkspaceError(
            f"{rel} is too large to show as cells (over {NOTEBOOK_BYTES // (1024 * 1024)} MB); "
            "ask the user about it, or look at a smaller part with run_command."
        )
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else cut_line(str(exc), 80)
        raise WorkspaceError(f"{rel} is not a valid notebook ({why}); it cannot be shown as cells.") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise WorkspaceError(f"{rel} is not a valid notebook (it has no list of cells).")
    lines: list[str] = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            continue
        kind = _field(cell.get("cell_type", "?"))
        count = cell.get("execution_count")
        header = f"# cell {number} [{kind}]"
        if kind == "code" and isinstance(count, int) and not isinstance(count, bool):
            header += f" (ran as [{count}])"
        lines.append(header)
        lines.extend(_text(cell.get("source")).splitlines())
        outputs = cell.get("outputs")
        for output in outputs if isinstance(outputs, list) else []:
            if isinstance(output, dict):
                lines.extend(_output_summary(output))
    return lines


def _read_capped(handle: IO[bytes]) -> bytes | None:
    """The notebook's bytes, or None when it is over `NOTEBOOK_BYTES` (by its size, or by reading).

    It reads at most the size the file has (+1): ``read(n)`` allocates ``n`` bytes before reading.
    """
    try:
        size = os.fstat(handle.fileno()).st_size
    except (OSError, ValueError, io.UnsupportedOperation):
        size = NOTEBOOK_BYTES  # not a real file: the bounded read below decides
    if size > NOTEBOOK_BYTES:
        return None
    raw = handle.read(size + 1)
    return None if len(raw) > NOTEBOOK_BYTES else raw


def _field(value: object) -> str:
    """A short notebook field that should be a string (a cell type, an output name), shown on one line."""
    text = value if isinstance(value, str) else type(value).__name__
    return cut_line(" ".join(text.split()), 40)


def _text(value: object) -> str:
    """A notebook string field, which nbformat stores as a string or a list of lines."""
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _output_summary(output: dict[str, Any]) -> list[str]:
    """One output in at most a few short lines, prefixed so it cannot be mistaken for source."""
    kind = output.get("output_type")
    if kind == "stream":
        label, text = f"out ({_field(output.get('name', 'stream'))})", _text(output.get("text"))
    elif kind == "error":
        label = "error"
        text = f"{_field(output.get('ename', 'Error'))}: {_text(output.get('evalue', ''))}"
    elif kind in ("execute_result", "display_data"):
        data = output.get("data")
        if not isinstance(data, dict):
            data = {}
        if "text/plain" in data:
            label, text = "out", _text(data["text/plain"])
        else:
            return [f"# out: [{', '.join(sorted(data)) or 'empty'}]"]
    else:
        return []
    body = [line for line in text.splitlines() if line.strip()]
    shown = [f"# {label}: {cut_line(line, OUTPUT_CHARS)}" for line in body[:OUTPUT_LINES]]
    if len(body) > OUTPUT_LINES:
        shown.append(f"# {label}: … {len(body) - OUTPUT_LINES} more lines")
    return shown
