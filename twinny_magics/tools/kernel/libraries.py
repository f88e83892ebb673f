"""pandas, polars and NumPy objects described by their own libraries: a table's shape, columns and first
rows, a series' values, an array's statistics. A library is found in ``sys.modules``, never imported."""

from __future__ import annotations

import itertools
import sys
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from twinny_magics.redact import MASK, secret_name
from twinny_magics.tools.kernel.bounded import Budget, bounded, has_type, library_class
from twinny_magics.tools.kernel.rendering import (
    ITEM_CHARS,
    ITEMS,
    bytes_size,
    cell_text,
    first_items,
    render_value,
)

#: A table's first rows and columns shown, the columns listed with their dtypes, a cell's characters.
ROWS = 10

COLUMNS = 12

LISTED_COLUMNS = 30

CELL_CHARS = 20

#: NumPy statistics are skipped past this many elements (a NaN-safe mean copies the array).
STATS_ELEMENTS = 10_000_000

Described = tuple[str, list[str]]


def _pandas(value: object, kind: type, budget: Budget) -> Described | None:
    frame, series = library_class("pandas", "DataFrame"), library_class("pandas", "Series")
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
            return [f"  {cell_text(i, ITEM_CHARS // 2)}: {cell_text(v, ITEM_CHARS)}" for i, v in pairs]

        summary = _series_summary(s.name, size, s.dtype, nulls_)
        return summary, first_items(values, size, "first values (index: value)", budget, hidden=s.name)
    return None


def _frame_summary(rows: int, width: int) -> str:
    return f"{rows:,} row{'s' if rows != 1 else ''} × {width:,} column{'s' if width != 1 else ''}"


def _series_summary(name: object, size: int, dtype: object, nulls: int) -> str:
    named = f"named {render_value(name, 60)}, " if type(name) in (str, int, float) else ""
    return f"{named}{size:,} values, dtype {dtype}" + (f", {nulls:,} null" if nulls else "")


def _polars(value: object, kind: type, budget: Budget) -> Described | None:
    lazy = library_class("polars", "LazyFrame")
    frame, series = library_class("polars", "DataFrame"), library_class("polars", "Series")
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
            return [f"  {i}: {cell_text(v, ITEM_CHARS)}" for i, v in enumerate(first)]

        summary = _series_summary(s.name, size, s.dtype, nulls_)
        return summary, first_items(values, size, "first values", budget, hidden=s.name)
    return None


def _numpy(value: object, kind: type, budget: Budget) -> Described | None:
    array_type = library_class("numpy", "ndarray")
    if array_type is None or not issubclass(kind, array_type):
        return None
    np: Any = sys.modules["numpy"]
    # The base class's view: a subclass's own min or mean is its code, not NumPy's.
    arr: Any = np.asarray(value)
    shape = "×".join(str(n) for n in arr.shape) if arr.shape else "() (a single value)"
    summary = f"shape {shape}, dtype {arr.dtype}, {arr.size:,} elements ({bytes_size(arr.nbytes)})"
    stats = _stats(np, arr)
    first = arr.flat[:ITEMS]

    def values() -> list[str]:
        return [f"  {cell_text(v, ITEM_CHARS)}" for v in first.tolist()]

    what = "first values (flattened)" if arr.ndim > 1 else "first values"
    return summary, ([stats] if stats else []) + first_items(values, int(arr.size), what, budget)


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
    budget: Budget,
) -> list[str]:
    """The listed columns, one a line: ``name: dtype, N null``."""

    def lines() -> list[str]:
        counts: Iterable[int] = nulls if nulls is not None else itertools.repeat(0)
        return [
            f"  {cell_text(label, 40)}: {dtype}" + (f", {n:,} null" if n else "")
            for label, dtype, n in zip(labels(), dtypes, counts, strict=False)
        ]

    shown, why = bounded(lines, budget.left())
    head = "columns (name: dtype, nulls):" if nulls is not None else "columns (name: dtype):"
    if shown is None:
        return [head, f"  (not shown: their names' repr {why})"]
    more = [f"  … {width - len(shown):,} more columns"] if width > len(shown) else []
    return [head, *(shown or ["  (none)"]), *more]


def _table(
    parts: Callable[[], tuple[list[Any], list[Any], list[list[Any]]]], rows: int, width: int, budget: Budget
) -> list[str]:
    """The first rows as a plain text table: the index, then one column each, every cell cut; a column
    named like a secret's shows no values."""

    def render() -> list[str]:
        index, labels, columns = parts()
        heads, cols = [""], [[cell_text(i, CELL_CHARS) for i in index]]
        for label, values in zip(labels, columns, strict=False):
            heads.append(cell_text(label, CELL_CHARS))
            hidden = has_type(label, str) and secret_name(str.__str__(label))
            cols.append([MASK if hidden else cell_text(v, CELL_CHARS) for v in values])
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


def library_description(value: object, kind: type, budget: Budget) -> Described | None:
    """``value`` described by pandas, polars or NumPy when it is one of theirs; None when it is not."""
    for describer in (_pandas, _polars, _numpy):
        described = describer(value, kind, budget)
        if described is not None:
            return described
    return None
