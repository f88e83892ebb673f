"""The kernel's variables, a line each: ``kernel_variables``.

The view must be read-only: it looks at values without calling into them beyond ``repr`` (itself cut
short through `reprlib`) and a ``shape`` attribute, both under a time bound, and never at modules or
functions; what kind a value is and its type's name come from its real type. A variable named like a
secret (``api_key``, ``OPENAI_TOKEN``, ``db_password``: `redact.secret_name`) shows its type and length
only, and every repr shown has secret-shaped text masked (`redact.mask_secrets`): the view goes to the
model server. One variable up close is `inspection`'s.
"""

from __future__ import annotations

import functools
import reprlib
import time
from collections.abc import Mapping
from typing import Any

from twinny_magics.redact import MASK, mask_secrets, secret_name
from twinny_magics.tools.base import cut_line
from twinny_magics.tools.kernel.bounded import bounded, is_code, type_name

#: Names IPython puts in the namespace: the kernel's own, not the user's variables.
IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
REPR_CHARS = 100
#: The time the whole variable listing may spend in objects' own reprs and shapes (one at most 1 s).
LISTING_SECONDS = 3.0
# What a repr'd string is masked over before it is cut: a key straddling the cut is still caught whole.
_MASK_SPAN = 2000


def kernel_variables(namespace: Mapping[str, Any] | None, limit: int) -> str:
    """The user's variables: name, type, shape or length, and a short repr, one a line."""
    if namespace is None:
        return (
            "There is no kernel here: kernel_variables works when the agent runs inside a Jupyter or "
            "IPython kernel. Read the files instead."
        )
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
