"""The notebook-native views: a ``.ipynb`` as its cells, and the kernel's variables.

A notebook's JSON is mostly escaping, ids and base64 images; a small model reading it raw spends its
window on noise and is tempted to edit the JSON. So read_file and grep see the notebook as cells (the
source, with outputs summarized in a line or two), and the edit tools refuse notebooks altogether.

The variables view must be read-only: it looks at values without calling into them beyond ``repr``
(itself cut short through `reprlib`) and a ``shape`` attribute, both under a time bound, and never at
modules or functions; what kind a value is and its type's name come from its real type. A
variable named like a secret (``api_key``, ``OPENAI_TOKEN``, ``db_password``: `redact.secret_name`)
shows its type and length only, and every repr shown has secret-shaped text masked
(`redact.mask_secrets`): the view goes to the model server.

A notebook is parsed defensively: a malformed one (not JSON, nested past the parser's depth, fields
of the wrong type) is a `WorkspaceError` naming it, so grep skips it and goes on; one past
`NOTEBOOK_BYTES` is refused before it is read whole.
"""

from __future__ import annotations

import functools
import io
import json
import os
import reprlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import MASK, mask_secrets, secret_name
from twinny_magics.tools.base import cut_line

# Outputs are summarized, not shown: a few lines tell the model what a cell printed.
OUTPUT_LINES = 3
OUTPUT_CHARS = 120
IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
REPR_CHARS = 100
#: The time the whole variable listing may spend in objects' own reprs and shapes (one at most 1 s).
LISTING_SECONDS = 3.0
# A notebook is parsed whole (JSON has no streaming parser here); past this size it is refused. Notebooks
# with many plots reach a few MB; the JSON parse of this much takes about 0.3 s and a few times its size.
NOTEBOOK_BYTES = 32 * 1024 * 1024
# What a repr'd string is masked over before it is cut: a key straddling the cut is still caught whole.
_MASK_SPAN = 2000


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


def kernel_variables(namespace: Mapping[str, Any] | None, limit: int) -> str:
    """The user's variables: name, type, shape or length, and a short repr, one a line."""
    if namespace is None:
        return (
            "There is no kernel here: kernel_variables works when the agent runs inside a Jupyter or "
            "IPython kernel. Read the files instead."
        )
    # Imported here: the variables module imports this one (IPYTHON_NAMES).
    from twinny_magics.tools.variables import bounded, is_code, type_name  # noqa: PLC0415

    # Modules, functions and classes are code, not data (the model can read their source). Outside the
    # time bound nothing of a value is asked (`is_code`, `type_name`: its real type only, never its
    # __class__), and a name is read as plain text (a str subclass could answer .lower() itself).
    named = [
        (str.__str__(key), value) for key, value in dict(namespace).items() if issubclass(type(key), str)
    ]
    rows = []
    deadline = time.monotonic() + LISTING_SECONDS
    for name, value in sorted(named, key=lambda item: item[0].lower()):
        if name.startswith("_") or name in IPYTHON_NAMES or is_code(value):
            continue
        hidden = secret_name(name)
        # An object's repr or shape is its own code: each under the time left for the whole listing.
        left = deadline - time.monotonic()
        line: str | None
        why: str | None = None
        if type(value) in _PLAIN:  # no code of the user's to wait for: shown whatever time is left
            line = _describe(name, value, hidden=hidden)
        else:
            line, why = bounded(functools.partial(_describe, name, value, hidden=hidden), min(left, 1.0))
        if line is None:
            line = f"{name} ({type_name(value)}): (not shown: its repr or shape {why})"
        rows.append(line)
    if not rows:
        return "The kernel has no user variables yet."
    head = f"{len(rows)} variable(s) in the kernel (read-only view):"
    if len(rows) > limit:
        return "\n".join([head, *rows[:limit], f"[… {len(rows) - limit} more not shown]"])
    return "\n".join([head, *rows])


def _describe(name: str, value: object, *, hidden: bool = False) -> str:
    """One variable's line; nothing here may raise, whatever the object does.

    ``hidden`` (a name like a secret's): the type and the length or shape, and `MASK` for the value.
    """
    from twinny_magics.tools.variables import type_name  # noqa: PLC0415

    facts = [type_name(value)]
    shape = _shape(value)
    if shape is not None:
        facts.append("shape " + "×".join(str(n) for n in shape) if shape else "shape ()")
    else:
        size = _builtin_len(value)
        if size is not None:
            facts.append(f"len {size}")
    return f"{name} ({', '.join(facts)}): {MASK if hidden else _short_repr(value)}"


#: Values whose line runs none of the user's code (a subclass's would: its own repr, __len__).
_PLAIN: frozenset[type] = frozenset({int, float, complex, bool, str, bytes, type(None)})
_SIZED: tuple[type[Any], ...] = (list, tuple, dict, set, frozenset, str, bytes, bytearray, range)


def _builtin_len(value: object) -> int | None:
    """The length of a built-in container; a subclass's own ``__len__`` could do anything, so not that."""
    for base in _SIZED:
        kind: Any = type(value)
        if issubclass(kind, base) and kind.__len__ is base.__len__:
            return base.__len__(value)  # type: ignore[no-any-return]
    return None


def _shape(value: object) -> tuple[int, ...] | None:
    """An array-like's ``shape`` when it is a plain tuple of ints (numpy, pandas, torch…)."""
    try:
        shape = getattr(value, "shape", None)
    except Exception:
        return None
    if issubclass(type(shape), tuple) and all(type(n) is int for n in tuple.__iter__(shape)):  # type: ignore[arg-type]
        return tuple(tuple.__iter__(shape))  # type: ignore[arg-type]
    return None


class _MaskingRepr(reprlib.Repr):
    """reprlib's short repr, with strings and bytes masked before they are cut (a key cut in two by
    reprlib's ``head...tail`` would slip past the masking of the result) and bytes never repr'd whole."""

    def repr_str(self, x: str, level: int) -> str:
        return self._cut(mask_secrets(x[:_MASK_SPAN]), len(x))

    def repr_bytes(self, x: bytes, level: int) -> str:
        return "b" + self._cut(mask_secrets(x[:_MASK_SPAN].decode("latin-1")), len(x))

    def repr_bytearray(self, x: bytearray, level: int) -> str:
        return f"bytearray(b{self._cut(mask_secrets(bytes(x[:_MASK_SPAN]).decode('latin-1')), len(x))})"

    def _cut(self, masked: str, length: int) -> str:
        """The head of a masked string, quoted; ``…`` after the quote when it was longer."""
        if len(masked) <= self.maxstring and length <= _MASK_SPAN:
            return repr(masked)
        return repr(masked[: self.maxstring]) + "…"


_REPR = _MaskingRepr()
_REPR.maxlevel = 2
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 6
_REPR.maxstring = 80
_REPR.maxother = REPR_CHARS


def _short_repr(value: object) -> str:
    """``repr`` through reprlib (which never walks a big container whole), on one short line, masked."""
    try:
        text = _REPR.repr(value)
    except Exception as exc:
        return f"<repr failed: {type(exc).__name__}>"
    text = mask_secrets(" ".join(text[: _MASK_SPAN * 4].split()))
    return cut_line(text, REPR_CHARS)
