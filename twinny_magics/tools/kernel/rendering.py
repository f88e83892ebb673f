"""Values as short, masked text: built-in values through their built-in type's own methods, anything
else by its repr under the time bound; a value's length or shape when it is not shown."""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable
from typing import Any

from twinny_magics.redact import MASK, mask_secrets, secret_name
from twinny_magics.tools.base import cut_line
from twinny_magics.tools.kernel.bounded import Budget, bounded, class_name, has_type, library_class

#: A container's first items shown (one a line), and the elements whose types are counted.
ITEMS = 10

#: Characters of a string's or bytes' head, of one item or repr, of a ``_repr_llm_`` text.
HEAD_CHARS = 300

ITEM_CHARS = 160

REPR_CHARS = 800

# Inline, a nested container shows this many items and this many levels.
_INLINE_ITEMS = 6

_INLINE_LEVELS = 2

# What a text is masked over before it is cut: a key straddling the cut is still caught whole.
MASK_SPAN = 2000


def bounded_repr(value: object, chars: int = REPR_CHARS, seconds: float | None = None) -> str:
    """``repr(value)`` masked and cut to ``chars`` (at most a few lines), run under the time bound;
    ``repr took too long`` or ``repr raised X: …`` instead of raising."""
    text, why = bounded(lambda: clip_lines(repr(value), chars), seconds)
    return f"(repr {why})" if text is None else text


def first_items(
    lines: Callable[[], list[str]], size: int, what: str, budget: Budget, hidden: object = None
) -> list[str]:
    """The first items, rendered under the time bound (they may be any objects); none for a series
    named like a secret's (``hidden``)."""
    if size == 0:
        return ["(empty)"]
    if has_type(hidden, str) and secret_name(str.__str__(hidden)):
        return [f"(values hidden: the name reads like a secret's {MASK})"]
    label = f"{what}:" if size > ITEMS else f"{what.replace('first ', '')}:"
    shown, why = bounded(lines, budget.left())
    if shown is None:
        return [f"{label} not shown (their repr {why})"]
    more = [f"  … {size - len(shown):,} more"] if size > len(shown) else []
    return [label, *shown, *more]


def render_value(x: object, chars: int, level: int = 0) -> str:
    """One value on one line, cut to ``chars``: built-in values through their built-in type's own methods
    (a subclass's name before them), anything else by its repr — so call it under the time bound."""
    kind, value = type(x), as_any(x)
    if kind is int and int.bit_length(value) > 4000:
        return f"<int of {int.bit_length(value):,} bits>"
    if kind in (int, float, bool, complex, type(None)):
        return repr(x)
    if issubclass(kind, str):
        return quoted(str.__getitem__(value, slice(0, MASK_SPAN)), str.__len__(value), chars)
    if issubclass(kind, bytes | bytearray):
        base: Any = bytes if issubclass(kind, bytes) else bytearray
        head = bytes(base.__getitem__(value, slice(0, min(chars, MASK_SPAN))))
        more = "…" if base.__len__(value) > len(head) else ""
        return cut_line(repr(head) + more, chars)
    prefix = "" if kind in (dict, list, tuple, set) else class_name(kind)
    if issubclass(kind, dict):
        if level >= _INLINE_LEVELS:
            return prefix + "{…}"
        size = dict.__len__(value)
        pairs = [
            f"{render_value(k, 40, level + 1)}: {value_for(k, v, 60, level + 1)}"
            for k, v in itertools.islice(dict.items(value), _INLINE_ITEMS)
        ]
        if size > _INLINE_ITEMS:
            pairs.append(f"… {size - _INLINE_ITEMS} more")
        body = "{" + ", ".join(pairs) + "}"
        return cut_line(f"{prefix}({body})" if prefix else body, chars)
    sequence: Any = sequence_base(kind)
    if sequence is not None and sequence is not range:
        brackets = {list: "[]", tuple: "()", collections.deque: "[]"}.get(sequence, "{}")
        opening, closing = brackets[0], brackets[1]
        if level >= _INLINE_LEVELS:
            return f"{prefix}{opening}…{closing}"
        size = sequence.__len__(value)
        parts = [
            render_value(v, 40, level + 1) for v in itertools.islice(sequence.__iter__(value), _INLINE_ITEMS)
        ]
        if size > _INLINE_ITEMS:
            parts.append(f"… {size - _INLINE_ITEMS} more")
        elif sequence is tuple and size == 1:
            parts[0] += ","
        body = f"{opening}{', '.join(parts)}{closing}"
        if prefix or (sequence is set and not parts):
            body = f"{prefix or 'set'}({body if parts else ''})"
        return cut_line(body, chars)
    return clip_lines(repr(x), chars, one_line=True)


def as_any(x: object) -> Any:
    """``x`` for the built-in types' own methods, which the checks before each call make fit."""
    return x


def value_for(key: object, value: object, chars: int, level: int = 0) -> str:
    """A dict's value, or `MASK` when its key is a secret's name (``{"password": …}``)."""
    if isinstance(key, str) and secret_name(str.__str__(key)):
        return MASK
    return render_value(value, chars, level)


def cell_text(x: object, chars: int) -> str:
    """A table cell or a label: strings bare, missing values as pandas shows them, anything else by
    ``str`` (a Timestamp, a Decimal, a user's object: call it under the time bound); one line, cut."""
    kind = type(x)
    if kind is float and x != x:  # noqa: PLR0124 (NaN is the one value not equal to itself)
        return "NaN"
    if kind in (int, float, bool, type(None)):
        return repr(x)
    if issubclass(kind, str):
        text = str.__getitem__(as_any(x), slice(0, MASK_SPAN))
    elif issubclass(kind, bytes | list | tuple | dict | set | frozenset):
        text = render_value(x, chars)
    else:
        text = str(x)
    text = " ".join(mask_secrets(text[:MASK_SPAN]).split())
    return text if len(text) <= chars else text[: chars - 1] + "…"


def quoted(head: str, size: int, chars: int) -> str:
    """A string's head, masked, quoted by the built-in repr; ``…`` after the quote when it goes on."""
    masked = mask_secrets(head)
    if len(masked) <= chars and size <= len(head):
        return repr(masked)
    return repr(masked[:chars]) + "…"


def clip_lines(text: str, chars: int, *, one_line: bool = False) -> str:
    """A repr masked and cut: to one line, or to at most a dozen lines, and to ``chars``."""
    head = mask_secrets(text[: max(chars * 4, MASK_SPAN)])
    if one_line:
        return cut_line(" ".join(head.split()), chars)
    lines = head.strip("\n").splitlines()
    shown = "\n".join(cut_line(line, 200) for line in lines[:12])
    if len(lines) > 12:
        shown += "\n…"
    return shown if len(shown) <= chars else shown[:chars] + "…"


def cap(text: str, chars: int) -> str:
    """``text`` cut to about ``chars`` on a line boundary, with a note of how much was left out."""
    if len(text) <= chars:
        return text
    cut = text.rfind("\n", 0, chars - 60)
    if cut <= 0:
        cut = chars - 60
    return text[:cut] + f"\n[… {len(text) - cut:,} more characters not shown]"


def sequence_base(kind: type) -> type | None:
    for base in (list, tuple, set, frozenset, collections.deque, range):
        if issubclass(kind, base):
            return base
    return None


def size_note(value: object, *, libraries: bool = True) -> str:
    """A built-in's length or an array-like's shape, for a value not shown; '' when unknown safely.
    ``libraries``: False asks nothing of a library's object (a subclass's ``shape`` is its own code)."""
    kind = type(value)
    for base in (str, bytes, bytearray, dict, list, tuple, set, frozenset):
        if issubclass(kind, base):
            return f", length {base.__len__(as_any(value)):,}"
    if not libraries:
        return ""
    for module, name in (("pandas", "DataFrame"), ("pandas", "Series"), ("numpy", "ndarray")):
        cls = library_class(module, name)
        if cls is not None and issubclass(kind, cls):
            shape: Any = value.shape  # type: ignore[attr-defined]
            return ", shape " + "×".join(str(n) for n in shape)
    return ""


def bytes_size(n: int) -> str:
    if n < 1024:
        return f"{n:,} bytes"
    size = float(n)
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            break
    return f"{size:.1f} {unit}"
