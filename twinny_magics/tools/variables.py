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
import contextlib
import ctypes
import difflib
import inspect
import itertools
import re
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import MASK, mask_secrets, secret_name
from twinny_magics.tools.base import call_text, cut_line
from twinny_magics.tools.notebook import IPYTHON_NAMES

#: The whole answer is cut to this many characters, on a line boundary.
INSPECT_CHARS = 4000
#: How long the user code run for one variable (hook, reprs, signature) may take in all.
REPR_SECONDS = 2.0
#: The whole description's bound is the user code's and this much more (the library's own work).
DESCRIBE_SLACK_SECONDS = 1.0
#: Calls of user code left running past their bound (a repr in a loop that swallows the stop, one
#: blocked in C): while this many run on, no more user code is started.
LEFT_RUNNING = 4
#: A table's first rows and columns shown, the columns listed with their dtypes, a cell's characters.
ROWS = 10
COLUMNS = 12
LISTED_COLUMNS = 30
CELL_CHARS = 20
#: A container's first items shown (one a line), and the elements whose types are counted.
ITEMS = 10
TYPE_SAMPLE = 1000
#: Characters of a string's or bytes' head, of one item or repr, of a ``_repr_llm_`` text.
HEAD_CHARS = 300
ITEM_CHARS = 160
REPR_CHARS = 800
HOOK_CHARS = 3000
#: NumPy statistics are skipped past this many elements (a NaN-safe mean copies the array).
STATS_ELEMENTS = 10_000_000
# Inline, a nested container shows this many items and this many levels.
_INLINE_ITEMS = 6
_INLINE_LEVELS = 2
# What a text is masked over before it is cut: a key straddling the cut is still caught whole.
_MASK_SPAN = 2000
_HOOK = "_repr_llm_"

T = TypeVar("T")

# Threads of user code left running past their bound (pruned of those that ended).
_left: list[threading.Thread] = []
_left_lock = threading.Lock()
#: What `bounded` says of a call it left running (the callers' messages test for it).
LEFT_BEHIND = "took too long and may still be running in the background"


def _still_left() -> int:
    """How many calls of user code left past their bound are still running."""
    with _left_lock:
        _left[:] = [thread for thread in _left if thread.is_alive()]
        return len(_left)


def _is(value: object, kind: type | tuple[type, ...]) -> bool:
    """``isinstance`` by the value's real type: never its ``__class__`` (its own code, maybe a lie)."""
    return issubclass(type(value), kind)


def is_code(value: object) -> bool:
    """Whether ``value`` is a module, a class or a routine, by its real type: asks the value nothing
    (``isinstance`` and ``inspect.isroutine`` ask its ``__class__``, its type's ``__get__``)."""
    return issubclass(type(value), (types.ModuleType, type, *_ROUTINES))


def type_name(value: object) -> str:
    """The name of ``value``'s type (`_type_name`), read without asking the value or its metaclass."""
    return _type_name(type(value))


class _Stopped(BaseException):
    """Raised inside a worker that ran past its time (a BaseException: user code's ``except
    Exception`` cannot swallow it)."""


class _Budget:
    """The time left for the user code of one variable (``name``); every `bounded` call of it shares the
    deadline."""

    def __init__(self, seconds: float | None = None, name: str = "value") -> None:
        self.seconds = REPR_SECONDS if seconds is None else seconds
        self.deadline = time.monotonic() + self.seconds
        self.name = name

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


def bounded(call: Callable[[], T], seconds: float | None = None) -> tuple[T | None, str | None]:
    """``call()`` on a daemon thread waited for ``seconds`` (`REPR_SECONDS`): ``(result, None)``, or
    ``(None, why)`` with why `LEFT_BEHIND` or "raised ValueError: …" (or, with no time left or too many
    calls left running, why it was not run). Never raises, and never waits past ``seconds``.

    A call still running at the deadline is left to its thread and asked to stop (an exception raised
    in it at its next Python instruction), so a ``while True`` in a repr does not spin forever; one
    blocked in C (a sleep, a lock), or one that swallows the stop, runs on: it is counted, and while
    `LEFT_RUNNING` run on, nothing more is started.
    """
    wait = REPR_SECONDS if seconds is None else seconds
    if wait <= 0:
        return None, "was not run: no time was left for this variable"
    left = _still_left()
    if left >= LEFT_RUNNING:
        return None, (
            f"was not run: {left} earlier calls of user code (reprs) are still running in the background"
        )
    box: list[tuple[bool, Any]] = []
    lock = threading.Lock()

    def work() -> None:
        try:
            try:
                outcome: tuple[bool, Any] = (True, call())
            except _Stopped:
                raise
            except BaseException as exc:
                outcome = (False, "raised " + _raised(exc))
            with lock:
                box.append(outcome)
        except _Stopped:
            pass

    thread = threading.Thread(target=work, name="twinny-inspect", daemon=True)
    thread.start()
    thread.join(wait)
    with lock:
        if not box:
            _stop(thread)
            with _left_lock:
                _left.append(thread)
            return None, LEFT_BEHIND
    ok, value = box[0]
    return (value, None) if ok else (None, value)


def _stop(thread: threading.Thread) -> None:
    """Ask a worker past its time to stop (CPython; elsewhere it is left to finish)."""
    if thread.ident is None or not hasattr(ctypes, "pythonapi"):
        return
    with contextlib.suppress(Exception):
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Stopped))


def _raised(exc: BaseException) -> str:
    """``ValueError: message`` on one short line (the message is the exception's own code: this runs on
    the worker)."""
    kind = _type_name(type(exc)).rsplit(".", 1)[-1]
    try:
        message = " ".join(str(exc).split())
    except Exception:
        return kind
    return f"{kind}: {cut_line(message, 120)}" if message else kind


def bounded_repr(value: object, chars: int = REPR_CHARS, seconds: float | None = None) -> str:
    """``repr(value)`` masked and cut to ``chars`` (at most a few lines), run under the time bound;
    ``repr took too long`` or ``repr raised X: …`` instead of raising."""
    text, why = bounded(lambda: _clip_lines(repr(value), chars), seconds)
    return f"(repr {why})" if text is None else text


# --- the tool -------------------------------------------------------------------------------------


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
    return f"{name}: {_type_name(type(value))}{_size(value, libraries=False)}. Describing it {why}."


def _describe(value: object, name: str) -> str:
    budget = _Budget(name=name)
    kind = type(value)
    head = f"{name}: {_type_name(kind)}"
    if issubclass(kind, type):
        head = f"{name}: class" + ("" if kind is type else f" (metaclass {_type_name(kind)})")
    if secret_name(name):
        size = _size(value)
        return f"{head}{size}. Its value is hidden: the name reads like a secret's."
    lines: list[str] = []
    if _has_hook(kind):
        text, why = bounded(lambda: _hook_text(value), budget.left())
        if text is not None:
            return _cap(f"{head} (described by its own {_HOOK}):\n{text}", INSPECT_CHARS)
        lines.append(f"(its {_HOOK} {why}; described without it)")
    try:
        summary, body = _by_kind(value, budget)
    except Exception as exc:  # a library describing its own object failed: say so, show the type
        summary, body = "", [f"(could not be described: {_raised(exc)})"]
    first = head + (f", {summary}" if summary else "")
    return _cap("\n".join([first, *lines, *body]), INSPECT_CHARS)


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
    return _cap(mask_secrets(head).strip("\n"), HOOK_CHARS)


Described = tuple[str, list[str]]


def _by_kind(value: object, budget: _Budget) -> Described:
    """A summary for the header line ('' for none) and the lines that follow it."""
    kind = type(value)
    for describer in (_pandas, _polars, _numpy):
        described = describer(value, kind, budget)
        if described is not None:
            return described
    if issubclass(kind, str):
        return _string(value)
    if issubclass(kind, bytes | bytearray):
        return _bytes(value)
    if issubclass(kind, dict):
        return _mapping(value, budget)
    base = _sequence_base(kind)
    if base is not None:
        return _sequence(value, base, budget)
    if issubclass(kind, types.ModuleType):
        return _module(value)
    if issubclass(kind, (type, *_ROUTINES)):
        return _code(value, budget)
    return _other(value, budget)


# --- pandas, polars, NumPy ------------------------------------------------------------------------


def _library_class(module: str, name: str) -> type | None:
    """``module.name`` when that module is already imported and it is a class; never imports, and never
    asks the module for the name (a lazy module's ``__getattr__`` imports, a lookalike's may hang): its
    ``__dict__`` is read."""
    loaded = sys.modules.get(module)
    if not _is(loaded, types.ModuleType):
        return None
    namespace = _MODULE_DICT.__get__(loaded)
    found = dict.get(namespace, name) if _is(namespace, dict) else None
    return found if _is(found, type) else None


_MODULE_DICT: Any = vars(cast(Any, types.ModuleType))["__dict__"]


def _pandas(value: object, kind: type, budget: _Budget) -> Described | None:
    frame, series = _library_class("pandas", "DataFrame"), _library_class("pandas", "Series")
    if frame is not None and issubclass(kind, frame):
        df: Any = value
        rows, width = df.shape
        listed = df.iloc[:, :LISTED_COLUMNS]
        dtypes = [str(d) for d in listed.dtypes.tolist()]
        nulls = [int(n) for n in listed.isna().sum().tolist()]
        head = df.iloc[:ROWS, :COLUMNS]

        def table() -> tuple[list[Any], list[Any], list[list[Any]]]:
            columns = [head.iloc[:, j].tolist() for j in range(head.shape[1])]
            return head.index.tolist(), head.columns.tolist(), columns

        lines = _columns(listed.columns.tolist, dtypes, nulls, width, budget)
        return _frame_summary(rows, width), lines + _table(table, rows, width, budget)
    if series is not None and issubclass(kind, series):
        s: Any = value
        size, nulls_ = len(s), int(s.isna().sum())
        first = s.iloc[:ITEMS]

        def values() -> list[str]:
            pairs = zip(first.index.tolist(), first.tolist(), strict=False)
            return [f"  {_cell(i, ITEM_CHARS // 2)}: {_cell(v, ITEM_CHARS)}" for i, v in pairs]

        summary = _series_summary(s.name, size, s.dtype, nulls_)
        return summary, _items(values, size, "first values (index: value)", budget, hidden=s.name)
    return None


def _frame_summary(rows: int, width: int) -> str:
    return f"{rows:,} row{'s' if rows != 1 else ''} × {width:,} column{'s' if width != 1 else ''}"


def _series_summary(name: object, size: int, dtype: object, nulls: int) -> str:
    named = f"named {_render(name, 60)}, " if type(name) in (str, int, float) else ""
    return f"{named}{size:,} values, dtype {dtype}" + (f", {nulls:,} null" if nulls else "")


def _polars(value: object, kind: type, budget: _Budget) -> Described | None:
    lazy = _library_class("polars", "LazyFrame")
    frame, series = _library_class("polars", "DataFrame"), _library_class("polars", "Series")
    if lazy is not None and issubclass(kind, lazy):
        lf: Any = value
        # The schema only: collect() would run the whole query (files read, joins computed).
        resolve = lf.collect_schema if hasattr(type(lf), "collect_schema") else lambda: lf.schema
        schema, why = bounded(lambda: list(resolve().items()), budget.left())
        summary = "a lazy query, not run (its rows are unknown until it is collected)"
        if schema is None:
            return summary, [f"(its schema {why})"]
        names = [n for n, _ in schema[:LISTED_COLUMNS]]
        dtypes = [str(d) for _, d in schema[:LISTED_COLUMNS]]
        return f"{summary}, {len(schema):,} columns", _columns(
            lambda: names, dtypes, None, len(schema), budget
        )
    if frame is not None and issubclass(kind, frame):
        df: Any = value
        rows, width = df.shape
        names = df.columns[:LISTED_COLUMNS]
        dtypes = [str(d) for d in df.dtypes[:LISTED_COLUMNS]]
        nulls = [int(n) for n in df.select(names).null_count().row(0)] if names else []
        head = df.select(df.columns[:COLUMNS]).head(ROWS)

        def table() -> tuple[list[Any], list[Any], list[list[Any]]]:
            return list(range(head.height)), list(head.columns), [head[c].to_list() for c in head.columns]

        lines = _columns(lambda: names, dtypes, nulls, width, budget)
        return _frame_summary(rows, width), lines + _table(table, rows, width, budget)
    if series is not None and issubclass(kind, series):
        s: Any = value
        size, nulls_ = s.len(), int(s.null_count())
        first = s.head(ITEMS).to_list()

        def values() -> list[str]:
            return [f"  {i}: {_cell(v, ITEM_CHARS)}" for i, v in enumerate(first)]

        summary = _series_summary(s.name, size, s.dtype, nulls_)
        return summary, _items(values, size, "first values", budget, hidden=s.name)
    return None


def _numpy(value: object, kind: type, budget: _Budget) -> Described | None:
    array_type = _library_class("numpy", "ndarray")
    if array_type is None or not issubclass(kind, array_type):
        return None
    np: Any = sys.modules["numpy"]
    # The base class's view: a subclass's own min or mean is its code, not NumPy's.
    arr: Any = np.asarray(value)
    shape = "×".join(str(n) for n in arr.shape) if arr.shape else "() (a single value)"
    summary = f"shape {shape}, dtype {arr.dtype}, {arr.size:,} elements ({_bytes_size(arr.nbytes)})"
    stats = _stats(np, arr)
    first = arr.flat[:ITEMS]

    def values() -> list[str]:
        return [f"  {_cell(v, ITEM_CHARS)}" for v in first.tolist()]

    what = "first values (flattened)" if arr.ndim > 1 else "first values"
    return summary, ([stats] if stats else []) + _items(values, int(arr.size), what, budget)


def _stats(np: Any, arr: Any) -> str:
    """min, max and mean of a numeric array, NaN left out; '' when not numeric."""
    kind = arr.dtype.kind
    if kind not in "biuf" or arr.size == 0:
        return ""
    if arr.size > STATS_ELEMENTS:
        return f"(no statistics: over {STATS_ELEMENTS:,} elements)"
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if kind == "b":
            true = int(np.count_nonzero(arr))
            return f"{true:,} True, {int(arr.size) - true:,} False"
        if kind in "iu":
            return f"min {arr.min()}, max {arr.max()}, mean {float(arr.mean()):.6g}"
        nan = int(np.isnan(arr).sum())
        if nan == arr.size:
            return "every value is NaN"
        low, high, mean = float(np.nanmin(arr)), float(np.nanmax(arr)), float(np.nanmean(arr))
        return f"min {low:.6g}, max {high:.6g}, mean {mean:.6g}" + (f" ({nan:,} NaN left out)" if nan else "")


def _columns(
    labels: Callable[[], list[Any]],
    dtypes: list[str],
    nulls: list[int] | None,
    width: int,
    budget: _Budget,
) -> list[str]:
    """The listed columns, one a line: ``name: dtype, N null``."""

    def lines() -> list[str]:
        counts: Iterable[int] = nulls if nulls is not None else itertools.repeat(0)
        return [
            f"  {_cell(label, 40)}: {dtype}" + (f", {n:,} null" if n else "")
            for label, dtype, n in zip(labels(), dtypes, counts, strict=False)
        ]

    shown, why = bounded(lines, budget.left())
    head = "columns (name: dtype, nulls):" if nulls is not None else "columns (name: dtype):"
    if shown is None:
        return [head, f"  (not shown: their names' repr {why})"]
    more = [f"  … {width - len(shown):,} more columns"] if width > len(shown) else []
    return [head, *(shown or ["  (none)"]), *more]


def _table(
    parts: Callable[[], tuple[list[Any], list[Any], list[list[Any]]]], rows: int, width: int, budget: _Budget
) -> list[str]:
    """The first rows as a plain text table: the index, then one column each, every cell cut; a column
    named like a secret's shows no values."""

    def render() -> list[str]:
        index, labels, columns = parts()
        heads, cols = [""], [[_cell(i, CELL_CHARS) for i in index]]
        for label, values in zip(labels, columns, strict=False):
            heads.append(_cell(label, CELL_CHARS))
            hidden = _is(label, str) and secret_name(str.__str__(label))
            cols.append([MASK if hidden else _cell(v, CELL_CHARS) for v in values])
        widths = [max([len(h), *(len(c) for c in col)]) for h, col in zip(heads, cols, strict=False)]
        out = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=False)).rstrip()]
        for r in range(len(index)):
            out.append("  ".join(col[r].ljust(w) for col, w in zip(cols, widths, strict=False)).rstrip())
        return out

    if rows == 0:
        return ["(no rows)"]
    what = f"first {ROWS} rows" if rows > ROWS else "rows"
    if width > COLUMNS:
        what += f", first {COLUMNS} of {width:,} columns"
    table, why = bounded(render, budget.left())
    if table is None:
        return [f"{what}: not shown (their repr {why})"]
    return [f"{what}:", *table]


def _items(
    lines: Callable[[], list[str]], size: int, what: str, budget: _Budget, hidden: object = None
) -> list[str]:
    """The first items, rendered under the time bound (they may be any objects); none for a series
    named like a secret's (``hidden``)."""
    if size == 0:
        return ["(empty)"]
    if _is(hidden, str) and secret_name(str.__str__(hidden)):
        return [f"(values hidden: the name reads like a secret's {MASK})"]
    label = f"{what}:" if size > ITEMS else f"{what.replace('first ', '')}:"
    shown, why = bounded(lines, budget.left())
    if shown is None:
        return [f"{label} not shown (their repr {why})"]
    more = [f"  … {size - len(shown):,} more"] if size > len(shown) else []
    return [label, *shown, *more]


# --- built-in values ------------------------------------------------------------------------------


def _string(value: object) -> Described:
    text: str = value  # type: ignore[assignment]
    size = str.__len__(text)
    lines = str.count(text, "\n") + 1 if size else 0
    head = str.__getitem__(text, slice(0, _MASK_SPAN))
    summary = f"{size:,} characters, {lines:,} line{'s' if lines != 1 else ''}"
    return summary, [("starts: " if size > HEAD_CHARS else "value: ") + _quoted(head, size, HEAD_CHARS)]


def _bytes(value: object) -> Described:
    base: Any = bytes if _is(value, bytes) else bytearray
    size = base.__len__(value)
    head = bytes(base.__getitem__(value, slice(0, _MASK_SPAN)))
    text = _utf8_head(head, complete=size <= _MASK_SPAN)
    if text is None:
        # Escaped, a byte takes up to four characters: a quarter as many bytes make the same length.
        shown_bytes = HEAD_CHARS // 4
        escaped = mask_secrets(head.decode("latin-1"))[:shown_bytes].encode("latin-1", "replace")
        shown = repr(escaped) + ("…" if size > shown_bytes else "")
        start = "starts" if size > shown_bytes else "value"
        return f"{size:,} bytes, not UTF-8 text", [f"{start} (escaped): {shown}"]
    # The length in characters is known only when the text is all there; else it goes on past its head.
    length = len(text) if size <= _MASK_SPAN else size
    start = "starts" if length > HEAD_CHARS else "value"
    return f"{size:,} bytes, UTF-8 text", [f"{start} (as text): {_quoted(text, length, HEAD_CHARS)}"]


def _utf8_head(head: bytes, *, complete: bool) -> str | None:
    """``head`` as UTF-8 text (a character cut at its end allowed when it is only the start); else None."""
    for drop in range(1 if complete else 4):
        try:
            return head[: len(head) - drop].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def _mapping(value: object, budget: _Budget) -> Described:
    base: Any = collections.OrderedDict if _is(value, collections.OrderedDict) else dict
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
        return [f"  {_render(k, 60)}: {_value_for(k, v, ITEM_CHARS)}" for k, v in first]

    return f"{size:,} key{'s' if size != 1 else ''}", lines + _items(render, size, "first items", budget)


def _sequence_base(kind: type) -> type | None:
    for base in (list, tuple, set, frozenset, collections.deque, range):
        if issubclass(kind, base):
            return base
    return None


def _sequence(value: object, base: Any, budget: _Budget) -> Described:
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
            f"  [{i}] {_render(v, ITEM_CHARS)}" if ordered else f"  {_render(v, ITEM_CHARS)}"
            for i, v in enumerate(first)
        ]

    return f"{size:,} item{'s' if size != 1 else ''}", lines + _items(render, size, "first items", budget)


def _type_counts(values: Iterable[object]) -> str:
    counts = collections.Counter(_type_name(type(v)) for v in values)
    if not counts:
        return "none"
    shown = [f"{name} ({n:,})" if len(counts) > 1 else name for name, n in counts.most_common(6)]
    return ", ".join(shown) + (f", … {len(counts) - 6} more types" if len(counts) > 6 else "")


# --- code -----------------------------------------------------------------------------------------


_ROUTINES: tuple[type, ...] = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
)


def _module(value: object) -> Described:
    namespace = _MODULE_DICT.__get__(value)  # the module's own dict: a subclass's __dict__ is not asked
    if not _is(namespace, dict):
        return "", []
    name, path = dict.get(namespace, "__name__"), dict.get(namespace, "__file__")
    public = sum(1 for key in dict.__iter__(namespace) if type(key) is str and not key.startswith("_"))
    summary = f"named {cut_line(name, 80) if type(name) is str else '?'}"
    if type(path) is str:
        summary += f", file {cut_line(path.replace(chr(92), '/').rsplit('/', 1)[-1], 60)}"
    else:
        summary += ", built in"
    return f"{summary}, {public:,} public names", []


def _code(value: object, budget: _Budget) -> Described:
    """A function, method or class: its signature and the first line of its docstring (a class's
    metaclass or ``__signature__`` is its own code, so under the time bound)."""
    is_class = _is(value, type)

    def facts() -> list[str]:
        named = str(getattr(value, "__qualname__", None) or getattr(value, "__name__", "?"))
        out = []
        if is_class:
            bases = [_type_name(b) for b in type.__dict__["__bases__"].__get__(value) if b is not object]
            if bases:
                out.append("bases: " + ", ".join(bases[:6]))
        try:
            out.append(
                f"signature: {cut_line(mask_secrets(f'{named}{inspect.signature(_as_any(value))}'), 300)}"
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


# --- anything else --------------------------------------------------------------------------------


def _other(value: object, budget: _Budget) -> Described:
    """A bounded repr, and an instance's own attributes by type."""
    if type(value) in (int, float, bool, complex, type(None)):
        return "", [f"value: {_render(value, REPR_CHARS)}"]

    def attributes() -> str:
        own = object.__getattribute__(value, "__dict__")
        if not isinstance(own, dict) or not own:
            return ""
        pairs = [
            f"{k} ({_type_name(type(v))})"
            for k, v in itertools.islice(dict.items(own), 20)
            if isinstance(k, str) and not k.startswith("_")
        ]
        size = dict.__len__(own)
        return "attributes: " + ", ".join(pairs) + (f", … {size - 20} more" if size > 20 else "")

    text, why = bounded(lambda: _clip_lines(repr(value), REPR_CHARS), budget.left())
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


# --- rendering ------------------------------------------------------------------------------------


def _render(x: object, chars: int, level: int = 0) -> str:
    """One value on one line, cut to ``chars``: built-in values through their built-in type's own methods
    (a subclass's name before them), anything else by its repr — so call it under the time bound."""
    kind, value = type(x), _as_any(x)
    if kind is int and int.bit_length(value) > 4000:
        return f"<int of {int.bit_length(value):,} bits>"
    if kind in (int, float, bool, complex, type(None)):
        return repr(x)
    if issubclass(kind, str):
        return _quoted(str.__getitem__(value, slice(0, _MASK_SPAN)), str.__len__(value), chars)
    if issubclass(kind, bytes | bytearray):
        base: Any = bytes if issubclass(kind, bytes) else bytearray
        head = bytes(base.__getitem__(value, slice(0, min(chars, _MASK_SPAN))))
        more = "…" if base.__len__(value) > len(head) else ""
        return cut_line(repr(head) + more, chars)
    prefix = "" if kind in (dict, list, tuple, set) else _type_name(kind)
    if issubclass(kind, dict):
        if level >= _INLINE_LEVELS:
            return prefix + "{…}"
        size = dict.__len__(value)
        pairs = [
            f"{_render(k, 40, level + 1)}: {_value_for(k, v, 60, level + 1)}"
            for k, v in itertools.islice(dict.items(value), _INLINE_ITEMS)
        ]
        if size > _INLINE_ITEMS:
            pairs.append(f"… {size - _INLINE_ITEMS} more")
        body = "{" + ", ".join(pairs) + "}"
        return cut_line(f"{prefix}({body})" if prefix else body, chars)
    sequence: Any = _sequence_base(kind)
    if sequence is not None and sequence is not range:
        brackets = {list: "[]", tuple: "()", collections.deque: "[]"}.get(sequence, "{}")
        opening, closing = brackets[0], brackets[1]
        if level >= _INLINE_LEVELS:
            return f"{prefix}{opening}…{closing}"
        size = sequence.__len__(value)
        parts = [_render(v, 40, level + 1) for v in itertools.islice(sequence.__iter__(value), _INLINE_ITEMS)]
        if size > _INLINE_ITEMS:
            parts.append(f"… {size - _INLINE_ITEMS} more")
        elif sequence is tuple and size == 1:
            parts[0] += ","
        body = f"{opening}{', '.join(parts)}{closing}"
        if prefix or (sequence is set and not parts):
            body = f"{prefix or 'set'}({body if parts else ''})"
        return cut_line(body, chars)
    return _clip_lines(repr(x), chars, one_line=True)


def _as_any(x: object) -> Any:
    """``x`` for the built-in types' own methods, which the checks before each call make fit."""
    return x


def _value_for(key: object, value: object, chars: int, level: int = 0) -> str:
    """A dict's value, or `MASK` when its key is a secret's name (``{"password": …}``)."""
    if isinstance(key, str) and secret_name(str.__str__(key)):
        return MASK
    return _render(value, chars, level)


def _cell(x: object, chars: int) -> str:
    """A table cell or a label: strings bare, missing values as pandas shows them, anything else by
    ``str`` (a Timestamp, a Decimal, a user's object: call it under the time bound); one line, cut."""
    kind = type(x)
    if kind is float and x != x:  # noqa: PLR0124 (NaN is the one value not equal to itself)
        return "NaN"
    if kind in (int, float, bool, type(None)):
        return repr(x)
    if issubclass(kind, str):
        text = str.__getitem__(_as_any(x), slice(0, _MASK_SPAN))
    elif issubclass(kind, bytes | list | tuple | dict | set | frozenset):
        text = _render(x, chars)
    else:
        text = str(x)
    text = " ".join(mask_secrets(text[:_MASK_SPAN]).split())
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _quoted(head: str, size: int, chars: int) -> str:
    """A string's head, masked, quoted by the built-in repr; ``…`` after the quote when it goes on."""
    masked = mask_secrets(head)
    if len(masked) <= chars and size <= len(head):
        return repr(masked)
    return repr(masked[:chars]) + "…"


def _clip_lines(text: str, chars: int, *, one_line: bool = False) -> str:
    """A repr masked and cut: to one line, or to at most a dozen lines, and to ``chars``."""
    head = mask_secrets(text[: max(chars * 4, _MASK_SPAN)])
    if one_line:
        return cut_line(" ".join(head.split()), chars)
    lines = head.strip("\n").splitlines()
    shown = "\n".join(cut_line(line, 200) for line in lines[:12])
    if len(lines) > 12:
        shown += "\n…"
    return shown if len(shown) <= chars else shown[:chars] + "…"


def _cap(text: str, chars: int) -> str:
    """``text`` cut to about ``chars`` on a line boundary, with a note of how much was left out."""
    if len(text) <= chars:
        return text
    cut = text.rfind("\n", 0, chars - 60)
    if cut <= 0:
        cut = chars - 60
    return text[:cut] + f"\n[… {len(text) - cut:,} more characters not shown]"


def _type_name(kind: type) -> str:
    """``DataFrame`` as pandas.DataFrame, a built-in as its bare name, anything else module.Qualname —
    read by ``type``'s own descriptors: a metaclass may define ``__module__`` as a property (its code)."""
    try:
        module, name = _TYPE_MODULE.__get__(kind), _TYPE_QUALNAME.__get__(kind)
    except Exception:
        return "?"
    if type(name) is not str:
        return "?"
    if type(module) is not str:
        return f"?.{name}"
    if module in ("builtins", ""):
        return name
    top = module.split(".", 1)[0]
    if top in ("pandas", "polars", "numpy") and _library_class(top, name) is kind:
        return f"{top}.{name}"
    return f"{module}.{name}"


_TYPE_MODULE: Any = type.__dict__["__module__"]
_TYPE_QUALNAME: Any = type.__dict__["__qualname__"]


def _size(value: object, *, libraries: bool = True) -> str:
    """A built-in's length or an array-like's shape, for a value not shown; '' when unknown safely.
    ``libraries``: False asks nothing of a library's object (a subclass's ``shape`` is its own code)."""
    kind = type(value)
    for base in (str, bytes, bytearray, dict, list, tuple, set, frozenset):
        if issubclass(kind, base):
            return f", length {base.__len__(_as_any(value)):,}"
    if not libraries:
        return ""
    for module, name in (("pandas", "DataFrame"), ("pandas", "Series"), ("numpy", "ndarray")):
        cls = _library_class(module, name)
        if cls is not None and issubclass(kind, cls):
            shape: Any = value.shape  # type: ignore[attr-defined]
            return ", shape " + "×".join(str(n) for n in shape)
    return ""


def _bytes_size(n: int) -> str:
    if n < 1024:
        return f"{n:,} bytes"
    size = float(n)
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            break
    return f"{size:.1f} {unit}"
