"""One kernel variable looked at closely: ``inspect_variable {name}``.

``kernel_variables`` lists every variable in a line; this describes one: a table's shape, columns with
their dtypes and nulls and its first rows, an array's statistics, a container's first items, a function's
signature. A small model asks about the ``df`` the user named instead of guessing (run_command cannot
see the kernel at all).

Reading a variable must not run the user's program. What runs:

- pandas, polars and NumPy on their own objects (never ``LazyFrame.collect``: a lazy frame shows its
  schema only). They are found in ``sys.modules`` and never imported here: a library nobody imported
  cannot have made the object.
- Built-in containers and strings through the built-in type's own methods (``list.__len__(x)``), never
  a subclass's override; no other object's ``__len__`` or ``__iter__`` is called.
- User code only under a time bound (`bounded`: a daemon thread waited for `REPR_SECONDS` in all for one
  variable, then asked to stop and left to itself): an object's own ``_repr_llm_(self) -> str`` hook
  (used first), ``repr`` and ``str`` of objects of no known kind (a cell, an item, the object itself),
  `inspect.signature`. A hook or repr that raises or hangs is reported ("repr raised ValueError", "the
  repr of x took too long (over 2 s), so x is shown by type instead; the repr may still be running in
  the background"): the tool never waits on it. At most `LEFT_RUNNING` such calls are left running;
  while that many are, no more user code is run (the object is shown by type and size).
- Nothing else of the object is asked: its type is ``type(x)``, never ``x.__class__`` (``isinstance``
  asks that of an object whose type is not the class, and a property there is the user's code); a
  type's name and module are read by ``type``'s own descriptors (a metaclass may define either as a
  property); a library is looked up in its module's ``__dict__`` (a lazy module answers any name by
  importing). And the whole description runs under a bound of its own (`describe`), so a library's
  object whose subclass lies (a ``__len__``, a ``shape``) cannot hold the tool either.

Everything shown is cut — cells, items, heads, reprs, and the whole answer at `INSPECT_CHARS` on a line
boundary — so a frame of a million rows or ten thousand columns, a 100 MB string or a list that holds
itself costs the same few hundred characters. Text is masked (`redact.mask_secrets`) before it is cut,
so a key cut in two cannot slip past the mask; a variable named like a secret (``api_key``) shows its
type and size only, a dict's secret-named keys show no value, and `Workspace.run` masks the answer again.
"""

from __future__ import annotations

import collections
import difflib
import inspect
import itertools
import re
import types
from collections.abc import Iterable, Mapping
from typing import Any

from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import mask_secrets, secret_name
from twinny_magics.tools.base import call_text, cut_line
from twinny_magics.tools.kernel.bounded import (
    LEFT_BEHIND,
    MODULE_DICT,
    REPR_SECONDS,
    ROUTINES,
    Budget,
    bounded,
    class_name,
    has_type,
    raised,
)
from twinny_magics.tools.kernel.libraries import Described, library_description
from twinny_magics.tools.kernel.rendering import (
    HEAD_CHARS,
    ITEM_CHARS,
    ITEMS,
    MASK_SPAN,
    REPR_CHARS,
    as_any,
    cap,
    clip_lines,
    first_items,
    quoted,
    render_value,
    sequence_base,
    size_note,
    value_for,
)
from twinny_magics.tools.kernel.variables import IPYTHON_NAMES

#: The whole answer is cut to this many characters, on a line boundary.
INSPECT_CHARS = 4000

#: The whole description's bound is the user code's and this much more (the library's own work).
DESCRIBE_SLACK_SECONDS = 1.0

TYPE_SAMPLE = 1000

HOOK_CHARS = 3000

_HOOK = "_repr_llm_"


def inspect_variable(namespace: Mapping[str, Any] | None, name: str) -> str:
    """The description of the kernel variable ``name``, or a `WorkspaceError` saying what to ask instead:
    no kernel, a name of the kernel's own (``_x``, ``In``), a name that does not exist (the closest
    names, and kernel_variables)."""
    if namespace is None:
        raise WorkspaceError(
            "There is no kernel here: inspect_variable works when the agent runs inside a Jupyter or "
            "IPython kernel. Read the files instead."
        )
    given = name.strip().strip("`'\"").strip()
    if not given:
        raise WorkspaceError(
            'inspect_variable needs the name of a variable, e.g. {"name": "df"}; kernel_variables {} '
            "lists them."
        )
    if given.startswith("_") or given in IPYTHON_NAMES:
        raise WorkspaceError(
            f"{cut_line(given, 60)!r} is the kernel's or IPython's own, not one of the user's variables; "
            "kernel_variables {} lists those."
        )
    note = ""
    if given not in namespace:
        # "df.head()", "df['a']": the variable is the name before the first dot, bracket or paren.
        base = re.match(r"[A-Za-z_][A-Za-z0-9_]*", given)
        if base is None or base.group(0) not in namespace or base.group(0).startswith("_"):
            raise WorkspaceError(_missing(namespace, given))
        note = f"(inspect_variable takes a variable's name only: this is {base.group(0)}.)\n"
        given = base.group(0)
    return note + describe(namespace[given], given)


def _missing(namespace: Mapping[str, Any], name: str) -> str:
    """No such variable: the closest names, a call to copy, and kernel_variables."""
    names = [
        n
        for n in itertools.islice(namespace, 20_000)
        if type(n) is str and not n.startswith("_") and n not in IPYTHON_NAMES
    ]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    text = f"No variable named {cut_line(name, 60)!r} in the kernel."
    if close:
        text += f" Did you mean {', '.join(close)}? {call_text('inspect_variable', {'name': close[0]})}"
    return text + " kernel_variables {} lists every variable."


def describe(value: object, name: str = "value") -> str:
    """``value`` described for the agent as plain text, cut to `INSPECT_CHARS`: its own ``_repr_llm_``
    text when it has one, else by kind. Never raises, whatever the object does, and returns within
    `REPR_SECONDS` and `DESCRIBE_SLACK_SECONDS`: past that it is shown by type and size only."""
    seconds = REPR_SECONDS + DESCRIBE_SLACK_SECONDS
    text, why = bounded(lambda: _describe(value, name), seconds)
    if text is not None:
        return text
    if why == LEFT_BEHIND:
        why = (
            f"took too long (over {seconds:g} s: its own code ran, or a library's on it), so it is shown "
            "by type and size only; that code may still be running in the background"
        )
    return f"{name}: {class_name(type(value))}{size_note(value, libraries=False)}. Describing it {why}."


def _describe(value: object, name: str) -> str:
    budget = Budget(name=name)
    kind = type(value)
    head = f"{name}: {class_name(kind)}"
    if issubclass(kind, type):
        head = f"{name}: class" + ("" if kind is type else f" (metaclass {class_name(kind)})")
    if secret_name(name):
        size = size_note(value)
        return f"{head}{size}. Its value is hidden: the name reads like a secret's."
    lines: list[str] = []
    if _has_hook(kind):
        text, why = bounded(lambda: _hook_text(value), budget.left())
        if text is not None:
            return cap(f"{head} (described by its own {_HOOK}):\n{text}", INSPECT_CHARS)
        lines.append(f"(its {_HOOK} {why}; described without it)")
    try:
        summary, body = _by_kind(value, budget)
    except Exception as exc:  # a library describing its own object failed: say so, show the type
        summary, body = "", [f"(could not be described: {raised(exc)})"]
    first = head + (f", {summary}" if summary else "")
    return cap("\n".join([first, *lines, *body]), INSPECT_CHARS)


def _has_hook(kind: type) -> bool:
    """Whether the type defines ``_repr_llm_``, looked up statically: an object's ``__getattr__`` (a
    proxy, a Mock) answers any name and is not asked."""
    try:
        return inspect.getattr_static(kind, _HOOK, None) is not None
    except Exception:
        return False


def _hook_text(value: object) -> str:
    text = getattr(value, _HOOK)()
    if not isinstance(text, str):
        raise TypeError(f"it returned a {type(text).__name__}, not a str")
    head = str.__getitem__(text, slice(0, HOOK_CHARS * 2))
    return cap(mask_secrets(head).strip("\n"), HOOK_CHARS)


def _by_kind(value: object, budget: Budget) -> Described:
    """A summary for the header line ('' for none) and the lines that follow it."""
    kind = type(value)
    described = library_description(value, kind, budget)
    if described is not None:
        return described
    if issubclass(kind, str):
        return _string(value)
    if issubclass(kind, bytes | bytearray):
        return _bytes(value)
    if issubclass(kind, dict):
        return _mapping(value, budget)
    base = sequence_base(kind)
    if base is not None:
        return _sequence(value, base, budget)
    if issubclass(kind, types.ModuleType):
        return _module(value)
    if issubclass(kind, (type, *ROUTINES)):
        return _code(value, budget)
    return _other(value, budget)


def _string(value: object) -> Described:
    text: str = value  # type: ignore[assignment]
    size = str.__len__(text)
    lines = str.count(text, "\n") + 1 if size else 0
    head = str.__getitem__(text, slice(0, MASK_SPAN))
    summary = f"{size:,} characters, {lines:,} line{'s' if lines != 1 else ''}"
    return summary, [("starts: " if size > HEAD_CHARS else "value: ") + quoted(head, size, HEAD_CHARS)]


def _bytes(value: object) -> Described:
    base: Any = bytes if has_type(value, bytes) else bytearray
    size = base.__len__(value)
    head = bytes(base.__getitem__(value, slice(0, MASK_SPAN)))
    text = _utf8_head(head, complete=size <= MASK_SPAN)
    if text is None:
        # Escaped, a byte takes up to four characters: a quarter as many bytes make the same length.
        shown_bytes = HEAD_CHARS // 4
        escaped = mask_secrets(head.decode("latin-1"))[:shown_bytes].encode("latin-1", "replace")
        shown = repr(escaped) + ("…" if size > shown_bytes else "")
        start = "starts" if size > shown_bytes else "value"
        return f"{size:,} bytes, not UTF-8 text", [f"{start} (escaped): {shown}"]
    # The length in characters is known only when the text is all there; else it goes on past its head.
    length = len(text) if size <= MASK_SPAN else size
    start = "starts" if length > HEAD_CHARS else "value"
    return f"{size:,} bytes, UTF-8 text", [f"{start} (as text): {quoted(text, length, HEAD_CHARS)}"]


def _utf8_head(head: bytes, *, complete: bool) -> str | None:
    """``head`` as UTF-8 text (a character cut at its end allowed when it is only the start); else None."""
    for drop in range(1 if complete else 4):
        try:
            return head[: len(head) - drop].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def _mapping(value: object, budget: Budget) -> Described:
    base: Any = collections.OrderedDict if has_type(value, collections.OrderedDict) else dict
    size: int = base.__len__(value)
    items = base.items(value)
    lines = []
    if size:
        keys = _type_counts(k for k, _ in itertools.islice(items, TYPE_SAMPLE))
        values = _type_counts(v for _, v in itertools.islice(items, TYPE_SAMPLE))
        sample = f" (of the first {TYPE_SAMPLE:,})" if size > TYPE_SAMPLE else ""
        lines.append(f"key types: {keys}; value types: {values}{sample}")
    first = list(itertools.islice(items, ITEMS))

    def render() -> list[str]:
        return [f"  {render_value(k, 60)}: {value_for(k, v, ITEM_CHARS)}" for k, v in first]

    return f"{size:,} key{'s' if size != 1 else ''}", lines + first_items(render, size, "first items", budget)


def _sequence(value: object, base: Any, budget: Budget) -> Described:
    size: int = base.__len__(value)
    lines = []
    if size and base is not range:
        counted = _type_counts(itertools.islice(base.__iter__(value), TYPE_SAMPLE))
        sample = f" (of the first {TYPE_SAMPLE:,})" if size > TYPE_SAMPLE else ""
        lines.append(f"item types: {counted}{sample}")
    first = list(itertools.islice(base.__iter__(value), ITEMS))
    ordered = base not in (set, frozenset)

    def render() -> list[str]:
        return [
            f"  [{i}] {render_value(v, ITEM_CHARS)}" if ordered else f"  {render_value(v, ITEM_CHARS)}"
            for i, v in enumerate(first)
        ]

    return f"{size:,} item{'s' if size != 1 else ''}", lines + first_items(
        render, size, "first items", budget
    )


def _type_counts(values: Iterable[object]) -> str:
    counts = collections.Counter(class_name(type(v)) for v in values)
    if not counts:
        return "none"
    shown = [f"{name} ({n:,})" if len(counts) > 1 else name for name, n in counts.most_common(6)]
    return ", ".join(shown) + (f", … {len(counts) - 6} more types" if len(counts) > 6 else "")


def _module(value: object) -> Described:
    namespace = MODULE_DICT.__get__(value)  # the module's own dict: a subclass's __dict__ is not asked
    if not has_type(namespace, dict):
        return "", []
    name, path = dict.get(namespace, "__name__"), dict.get(namespace, "__file__")
    public = sum(1 for key in dict.__iter__(namespace) if type(key) is str and not key.startswith("_"))
    summary = f"named {cut_line(name, 80) if type(name) is str else '?'}"
    if type(path) is str:
        summary += f", file {cut_line(path.replace(chr(92), '/').rsplit('/', 1)[-1], 60)}"
    else:
        summary += ", built in"
    return f"{summary}, {public:,} public names", []


def _code(value: object, budget: Budget) -> Described:
    """A function, method or class: its signature and the first line of its docstring (a class's
    metaclass or ``__signature__`` is its own code, so under the time bound)."""
    is_class = has_type(value, type)

    def facts() -> list[str]:
        named = str(getattr(value, "__qualname__", None) or getattr(value, "__name__", "?"))
        out = []
        if is_class:
            bases = [class_name(b) for b in type.__dict__["__bases__"].__get__(value) if b is not object]
            if bases:
                out.append("bases: " + ", ".join(bases[:6]))
        try:
            out.append(
                f"signature: {cut_line(mask_secrets(f'{named}{inspect.signature(as_any(value))}'), 300)}"
            )
        except (TypeError, ValueError):
            out.append("signature: (not available)")
        doc = getattr(value, "__doc__", None)
        if isinstance(doc, str) and doc.strip():
            out.append(f"doc: {cut_line(mask_secrets(doc.strip().splitlines()[0].strip()), 200)}")
        if is_class:
            own = type.__dict__["__dict__"].__get__(value)
            names = sorted(k for k in own if isinstance(k, str) and not k.startswith("_"))
            if names:
                more = f", … {len(names) - 20} more" if len(names) > 20 else ""
                out.append(f"attributes: {', '.join(names[:20])}{more}")
        return out

    lines, why = bounded(facts, budget.left())
    return "", lines if lines is not None else [f"(its signature {why})"]


def _other(value: object, budget: Budget) -> Described:
    """A bounded repr, and an instance's own attributes by type."""
    if type(value) in (int, float, bool, complex, type(None)):
        return "", [f"value: {render_value(value, REPR_CHARS)}"]

    def attributes() -> str:
        own = object.__getattribute__(value, "__dict__")
        if not isinstance(own, dict) or not own:
            return ""
        pairs = [
            f"{k} ({class_name(type(v))})"
            for k, v in itertools.islice(dict.items(own), 20)
            if isinstance(k, str) and not k.startswith("_")
        ]
        size = dict.__len__(own)
        return "attributes: " + ", ".join(pairs) + (f", … {size - 20} more" if size > 20 else "")

    text, why = bounded(lambda: clip_lines(repr(value), REPR_CHARS), budget.left())
    if text is not None:
        shown = text
    elif why == LEFT_BEHIND:
        name = budget.name
        shown = (
            f"not shown: the repr of {name} took too long (over {budget.seconds:g} s), so {name} is shown "
            "by type instead; the repr may still be running in the background"
        )
    else:
        shown = f"(repr {why})"
    lines = [f"repr: {shown}"]
    if budget.left() > 0:
        attrs, _ = bounded(attributes, budget.left())
        if attrs:
            lines.append(attrs)
    return "", lines
