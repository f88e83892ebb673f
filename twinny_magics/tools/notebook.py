"""The notebook-native views: a ``.ipynb`` as its cells, and the kernel's variables.

A notebook's JSON is mostly escaping, ids and base64 images; a small model reading it raw spends its
window on noise and is tempted to edit the JSON. So read_file and grep see the notebook as cells (the
source, with outputs summarized in a line or two), and the edit tools refuse notebooks altogether.

The variables view must be read-only: it looks at values without calling into them beyond ``repr``
(itself cut short through `reprlib`) and a ``shape`` attribute, and never at modules or functions.
"""

from __future__ import annotations

import inspect
import json
import reprlib
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from twinny_magics.errors import WorkspaceError
from twinny_magics.tools.base import cut_line

# Outputs are summarized, not shown: a few lines tell the model what a cell printed.
OUTPUT_LINES = 3
OUTPUT_CHARS = 120
IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
REPR_CHARS = 100


def notebook_lines(path: Path, rel: str) -> list[str]:
    """A notebook as text lines: ``# cell N [kind]`` headers, each cell's source, outputs summarized."""
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise WorkspaceError(f"{rel} is not a valid notebook ({exc}); it cannot be shown as cells.") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise WorkspaceError(f"{rel} is not a valid notebook (it has no list of cells).")
    lines: list[str] = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type", "?")
        count = cell.get("execution_count")
        header = f"# cell {number} [{kind}]"
        if kind == "code" and isinstance(count, int):
            header += f" (ran as [{count}])"
        lines.append(header)
        lines.extend(_text(cell.get("source")).splitlines())
        for output in cell.get("outputs") or []:
            if isinstance(output, dict):
                lines.extend(_output_summary(output))
    return lines


def _text(value: object) -> str:
    """A notebook string field, which nbformat stores as a string or a list of lines."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def _output_summary(output: dict[str, Any]) -> list[str]:
    """One output in at most a few short lines, prefixed so it cannot be mistaken for source."""
    kind = output.get("output_type")
    if kind == "stream":
        label, text = f"out ({output.get('name', 'stream')})", _text(output.get("text"))
    elif kind == "error":
        label = "error"
        text = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
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


def kernel_variables(namespace: Mapping[str, Any] | None, limit: int) -> str:
    """The user's variables: name, type, shape or length, and a short repr, one a line."""
    if namespace is None:
        return (
            "There is no kernel here: kernel_variables works when the agent runs inside a Jupyter or "
            "IPython kernel. Read the files instead."
        )
    rows = []
    for name, value in sorted(dict(namespace).items(), key=lambda item: item[0].lower()):
        if name.startswith("_") or name in IPYTHON_NAMES or _skipped(value):
            continue
        rows.append(_describe(name, value))
    if not rows:
        return "The kernel has no user variables yet."
    head = f"{len(rows)} variable(s) in the kernel (read-only view):"
    if len(rows) > limit:
        return "\n".join([head, *rows[:limit], f"[… {len(rows) - limit} more not shown]"])
    return "\n".join([head, *rows])


def _skipped(value: object) -> bool:
    """Modules, functions and classes are code, not data; the model can read their source instead."""
    return isinstance(value, types.ModuleType | type) or inspect.isroutine(value)


def _describe(name: str, value: object) -> str:
    """One variable's line; nothing here may raise, whatever the object does."""
    kind = type(value)
    module = getattr(kind, "__module__", "")
    type_name = kind.__qualname__ if module in ("builtins", "") else f"{module}.{kind.__qualname__}"
    facts = [type_name]
    shape = _shape(value)
    if shape is not None:
        facts.append("shape " + "×".join(str(n) for n in shape) if shape else "shape ()")
    else:
        size = _builtin_len(value)
        if size is not None:
            facts.append(f"len {size}")
    return f"{name} ({', '.join(facts)}): {_short_repr(value)}"


_SIZED: tuple[type[Any], ...] = (list, tuple, dict, set, frozenset, str, bytes, bytearray, range)


def _builtin_len(value: object) -> int | None:
    """The length of a built-in container; a subclass's own ``__len__`` could do anything, so not that."""
    for base in _SIZED:
        if isinstance(value, base) and type(value).__len__ is base.__len__:
            return len(value)
    return None


def _shape(value: object) -> tuple[int, ...] | None:
    """An array-like's ``shape`` when it is a plain tuple of ints (numpy, pandas, torch…)."""
    try:
        shape = getattr(value, "shape", None)
    except Exception:
        return None
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return shape
    return None


_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 6
_REPR.maxstring = 80
_REPR.maxother = REPR_CHARS


def _short_repr(value: object) -> str:
    """``repr`` through reprlib (which never walks a big container whole), on one short line."""
    try:
        text = _REPR.repr(value)
    except Exception as exc:
        return f"<repr failed: {type(exc).__name__}>"
    text = " ".join(text.split())
    return cut_line(text, REPR_CHARS)
