"""inspect_variable: one kernel variable described by kind, within a size and a time bound, never running
the user's code except an object's own ``_repr_llm_`` and reprs under the time bound."""

from __future__ import annotations

import collections
import json
import math
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest

from twinny_magics.conversation import ToolCall
from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import MASK
from twinny_magics.tools import Workspace
from twinny_magics.tools.kernel import bounded as bounded_module
from twinny_magics.tools.kernel import inspection
from twinny_magics.tools.kernel.bounded import bounded
from twinny_magics.tools.kernel.inspection import INSPECT_CHARS, describe, inspect_variable
from twinny_magics.tools.kernel.rendering import bounded_repr
from twinny_magics.tools.registry import TOOLS

OPENAI = "sk-proj-" + "A1b2C3d4E5f6G7h8" * 3


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short time bound, so the tests of hanging code do not wait the full one."""
    monkeypatch.setattr(bounded_module, "REPR_SECONDS", 0.3)
    monkeypatch.setattr(inspection, "REPR_SECONDS", 0.3)


def lines_of(text: str) -> list[str]:
    return text.splitlines()


# --- pandas ---------------------------------------------------------------------------------------


def test_a_dataframe_shows_shape_dtypes_nulls_and_its_first_rows() -> None:
    df = pd.DataFrame(
        {
            "id": [1, 2, 3],
            "name": ["ann", None, "a very long name that goes on and on"],
            "price": [1.5, float("nan"), 3.0],
        }
    )
    out = describe(df, "df")
    assert lines_of(out) == [
        "df: pandas.DataFrame, 3 rows × 3 columns",
        "columns (name: dtype, nulls):",
        "  id: int64",
        f"  name: {df['name'].dtype}, 1 null",
        "  price: float64, 1 null",
        "rows:",
        "   id  name                  price",
        "0  1   ann                   1.5",
        "1  2   NaN                   NaN",
        "2  3   a very long name th…  3.0",
    ]


def test_a_million_rows_and_ten_thousand_columns_cost_a_few_hundred_characters() -> None:
    tall = pd.DataFrame({"a": np.arange(1_000_000), "b": np.zeros(1_000_000)})
    out = describe(tall, "tall")
    assert out.startswith("tall: pandas.DataFrame, 1,000,000 rows × 2 columns")
    assert "first 10 rows:" in out
    assert len(lines_of(out)) == 1 + 3 + 1 + 11
    assert len(out) < 1000

    wide = pd.DataFrame(np.zeros((3, 10_000)))
    out = describe(wide, "wide")
    assert out.startswith("wide: pandas.DataFrame, 3 rows × 10,000 columns")
    assert "  … 9,970 more columns" in out
    assert "rows, first 12 of 10,000 columns:" in out
    table = out.split("rows, first 12 of 10,000 columns:\n")[1].splitlines()
    assert table[0].split() == [str(n) for n in range(12)]
    assert len(out) <= INSPECT_CHARS


def test_a_series_shows_name_dtype_nulls_and_first_values() -> None:
    s = pd.Series([10.0, None, 30.0] * 10, name="price", index=[f"r{i}" for i in range(30)])
    out = describe(s, "s")
    assert lines_of(out)[:4] == [
        "s: pandas.Series, named 'price', 30 values, dtype float64, 10 null",
        "first values (index: value):",
        "  r0: 10.0",
        "  r1: NaN",
    ]
    assert lines_of(out)[-1] == "  … 20 more"


def test_secret_named_columns_and_series_show_no_values() -> None:
    df = pd.DataFrame({"user": ["bob"], "password": ["hunter22"]})
    out = describe(df, "df")
    assert "hunter22" not in out
    assert MASK in out
    assert "bob" in out
    assert "hunter22" not in describe(df["password"], "s")


def test_an_object_column_is_shown_through_the_time_bound(quick: None) -> None:
    """A cell holding a user's object is user code: a hanging one costs the table, not the call."""
    release = threading.Event()

    class Slow:
        def __str__(self) -> str:
            release.wait(10)
            return "slow"

    df = pd.DataFrame({"a": [1, 2], "obj": [Slow(), Slow()]})
    try:
        out = describe(df, "df")
    finally:
        release.set()
    assert out.startswith("df: pandas.DataFrame, 2 rows × 2 columns")
    assert "  obj: object" in out
    assert "rows: not shown (their repr took too long and may still be running in the background)" in out


# --- polars, without polars -----------------------------------------------------------------------


def fake_polars(monkeypatch: pytest.MonkeyPatch) -> type:
    """A module named polars, with a LazyFrame whose collect() fails the test."""
    polars = types.ModuleType("polars")

    class LazyFrame:
        __module__ = "polars"
        __qualname__ = "LazyFrame"

        def collect_schema(self) -> dict[str, str]:
            return {"id": "Int64", "name": "String", **{f"c{i}": "Float64" for i in range(40)}}

        def collect(self) -> None:
            pytest.fail("a LazyFrame was collected")

        def __len__(self) -> int:
            raise AssertionError("len() of a LazyFrame")

        def __repr__(self) -> str:
            pytest.fail("repr() of a LazyFrame (it may describe the plan at length)")

    polars.LazyFrame = LazyFrame  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "polars", polars)
    return LazyFrame


def test_a_lazy_frame_shows_its_schema_and_is_never_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = fake_polars(monkeypatch)()
    out = describe(lazy, "lf")
    assert lines_of(out)[:4] == [
        "lf: polars.LazyFrame, a lazy query, not run (its rows are unknown until it is collected), "
        "42 columns",
        "columns (name: dtype):",
        "  id: Int64",
        "  name: String",
    ]
    assert lines_of(out)[-1] == "  … 12 more columns"


def test_without_the_library_imported_a_lookalike_is_just_an_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """pandas and polars are looked up in sys.modules only: absent, nothing is taken for their types."""
    lazy = fake_polars(monkeypatch)
    monkeypatch.delitem(sys.modules, "polars")
    monkeypatch.setattr(lazy, "__repr__", lambda self: "<a lazy lookalike>")
    out = describe(lazy(), "lf")
    assert out.splitlines() == ["lf: polars.LazyFrame", "repr: <a lazy lookalike>"]


def test_reading_a_variable_imports_no_library() -> None:
    """Describing values never imports pandas, polars or NumPy to check what they are."""
    code = (
        "import sys\n"
        "from twinny_magics.tools.kernel.inspection import describe\n"
        "describe([1, {'a': 2}], 'x'); describe(object(), 'o'); describe(b'x', 'b')\n"
        "print(sorted(m for m in ('pandas', 'polars', 'numpy') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_real_polars_frame_and_series(monkeypatch: pytest.MonkeyPatch) -> None:
    """With polars installed (it is optional, and not in the test requirements), its real objects."""
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"a": list(range(100)), "b": ["x", None] * 50})
    out = describe(df, "df")
    assert out.splitlines()[:4] == [
        "df: polars.DataFrame, 100 rows × 2 columns",
        "columns (name: dtype, nulls):",
        "  a: Int64",
        "  b: String, 50 null",
    ]
    assert "first 10 rows:" in out
    assert describe(df["b"], "s").startswith("s: polars.Series, named 'b', 100 values, dtype String, 50 null")
    monkeypatch.setattr(pl.LazyFrame, "collect", lambda *a, **k: pytest.fail("collected"))
    lazy = describe(df.lazy().filter(pl.col("a") > 3), "lf")
    assert lazy.splitlines()[2:] == ["  a: Int64", "  b: String"]


# --- NumPy ----------------------------------------------------------------------------------------


def test_an_array_shows_shape_dtype_and_nan_safe_statistics() -> None:
    arr = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    assert lines_of(describe(arr, "arr"))[:3] == [
        "arr: numpy.ndarray, shape 2×3, dtype float64, 6 elements (48 bytes)",
        "min 1, max 6, mean 3.8 (1 NaN left out)",
        "values (flattened):",
    ]
    assert "every value is NaN" in describe(np.full(4, np.nan), "a")
    assert "min 0, max 999999, mean 500000" in describe(np.arange(1_000_000), "a")
    assert "2 True, 1 False" in describe(np.array([True, False, True]), "a")
    assert "shape () (a single value)" in describe(np.array(7), "a")


def test_an_object_array_has_no_statistics_and_its_items_are_bounded(quick: None) -> None:
    """min or mean of objects would call their __lt__ and __add__: not computed."""

    class Touchy:
        def __lt__(self, other: object) -> bool:
            pytest.fail("compared")

        def __add__(self, other: object) -> Touchy:
            pytest.fail("added")

        def __repr__(self) -> str:
            return "Touchy()"

    arr = np.empty(100_000, dtype=object)
    arr[:] = [Touchy() for _ in range(100_000)]
    out = describe(arr, "arr")
    assert lines_of(out)[:3] == [
        "arr: numpy.ndarray, shape 100000, dtype object, 100,000 elements (781.2 KB)",
        "first values:",
        "  Touchy()",
    ]
    assert len(out) < 600


# --- built-in values ------------------------------------------------------------------------------


class Counted(list[int]):
    """A list whose own __len__ and __iter__ raise: the view must use list's."""

    def __len__(self) -> int:
        raise RuntimeError("len called")

    def __iter__(self) -> Any:
        raise RuntimeError("iter called")


def test_containers_show_length_element_types_and_first_items() -> None:
    out = describe([1, "two", 3.0, None], "items")
    assert lines_of(out) == [
        "items: list, 4 items",
        "item types: int (1), str (1), float (1), NoneType (1)",
        "items:",
        "  [0] 1",
        "  [1] 'two'",
        "  [2] 3.0",
        "  [3] None",
    ]
    config = {"lr": 0.1, "layers": [64, 32], "password": "hunter22"}
    assert lines_of(describe(config, "config")) == [
        "config: dict, 3 keys",
        "key types: str; value types: float (1), list (1), str (1)",
        "items:",
        "  'lr': 0.1",
        "  'layers': [64, 32]",
        f"  'password': {MASK}",
    ]
    big = set(range(5000))
    out = describe(big, "big")
    assert lines_of(out)[:2] == ["big: set, 5,000 items", "item types: int (of the first 1,000)"]
    assert lines_of(out)[-1] == "  … 4,990 more"
    assert describe((7,), "t").splitlines()[-1] == "  [0] 7"
    assert describe(collections.deque([1, 2]), "q").startswith("q: collections.deque, 2 items")
    assert describe([], "empty").splitlines() == ["empty: list, 0 items", "(empty)"]


def test_a_subclass_own_len_and_iter_are_never_called() -> None:
    out = describe(Counted([1, 2, 3]), "c")
    assert out.startswith(f"c: {__name__}.Counted, 3 items")
    assert "  [2] 3" in out
    nested = describe({"c": Counted([5])}, "d")
    assert f"'c': {__name__}.Counted([5])" in nested


def test_a_recursive_list_and_dict_cost_a_bounded_few_lines() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    out = describe(loop, "loop")
    assert "  [1] [1, [1, […]]]" in out
    tree: dict[str, Any] = {"name": "root"}
    tree["self"] = tree
    out = describe(tree, "tree")
    assert len(out) < 600
    assert "'self': {'name': 'root', 'self': {'name': 'root', 'self': {…}}}" in out


def test_a_ten_megabyte_string_shows_its_length_and_head() -> None:
    text = "line\n" * 2_000_000
    out = describe(text, "text")
    assert lines_of(out)[0] == "text: str, 10,000,000 characters, 2,000,001 lines"
    assert lines_of(out)[1].startswith("starts: 'line\\nline\\n")
    assert out.endswith("'…")
    assert len(out) < 500
    assert describe("hi", "s").splitlines() == ["s: str, 2 characters, 1 line", "value: 'hi'"]


def test_bytes_are_shown_as_text_or_escaped() -> None:
    raw = b"\x80\xff\x00abc" * 1000
    out = describe(raw, "raw")
    assert lines_of(out)[0] == "raw: bytes, 6,000 bytes, not UTF-8 text"
    assert lines_of(out)[1].startswith("starts (escaped): b'\\x80\\xff\\x00abc")
    assert len(out) < 400
    assert describe("é".encode() * 3, "u").splitlines() == [
        "u: bytes, 6 bytes, UTF-8 text",
        "value (as text): 'ééé'",
    ]
    cut = ("x" * 2999 + "é").encode()  # the head's last character is cut in two
    assert "UTF-8 text" in describe(cut, "u").splitlines()[0]
    assert "not UTF-8" in describe(bytearray(b"\xc3"), "b")


def test_functions_classes_methods_and_modules() -> None:
    def scale(values: list[float], factor: float = 2.0) -> list[float]:
        """Multiply every value.

        Longer text."""
        return [v * factor for v in values]

    class Point:
        """A point in the plane."""

        def __init__(self, x: int, y: int) -> None:
            self.x, self.y = x, y

        def norm(self) -> float:
            return math.hypot(self.x, self.y)

    assert lines_of(describe(scale, "scale"))[1:] == [
        # Annotations stay the strings they are here (evaluating them would run code).
        "signature: test_functions_classes_methods_and_modules.<locals>.scale(values: 'list[float]', "
        "factor: 'float' = 2.0) -> 'list[float]'",
        "doc: Multiply every value.",
    ]
    out = describe(Point, "Point")
    assert lines_of(out)[0] == "Point: class"
    assert "signature: test_functions_classes_methods_and_modules.<locals>.Point(x: 'int', y: 'int')" in out
    assert "doc: A point in the plane." in out
    assert "attributes: norm" in out
    method = describe(Point(3, 4).norm, "m")
    assert method.startswith("m: method\nsignature: ")
    assert method.splitlines()[1].endswith("Point.norm() -> 'float'")
    assert describe(math, "math").startswith("math: module, named math, file math.")
    assert describe(math, "math").endswith(" public names")
    assert describe(len, "len").splitlines()[1] == "signature: len(obj, /)"


def test_anything_else_shows_its_type_repr_and_attributes() -> None:
    class Model:
        def __init__(self) -> None:
            self.weights = [0.1] * 3
            self.name = "tiny"

        def __repr__(self) -> str:
            return "Model(tiny)\n  layers: 3"

    assert lines_of(describe(Model(), "m")) == [
        f"m: {__name__}.test_anything_else_shows_its_type_repr_and_attributes.<locals>.Model",
        "repr: Model(tiny)",
        "  layers: 3",
        "attributes: weights (list), name (str)",
    ]
    assert describe(42, "n").splitlines() == ["n: int", "value: 42"]
    huge = describe(mock.sentinel.x, "s")
    assert huge.splitlines()[1] == "repr: sentinel.x"


# --- the hook and hostile objects -----------------------------------------------------------------


class Described:
    def _repr_llm_(self) -> str:
        return "A table of 3 orders; columns id, total."

    def __repr__(self) -> str:
        pytest.fail("repr was called although the object describes itself")


class BadHook:
    def _repr_llm_(self) -> str:
        raise ValueError("no description today")

    def __repr__(self) -> str:
        return "BadHook()"


def test_an_object_that_describes_itself_is_taken_at_its_word() -> None:
    assert describe(Described(), "orders") == (
        f"orders: {__name__}.Described (described by its own _repr_llm_):\n"
        "A table of 3 orders; columns id, total."
    )


def test_a_hook_that_raises_or_returns_no_text_falls_back() -> None:
    assert lines_of(describe(BadHook(), "b"))[:3] == [
        f"b: {__name__}.BadHook",
        "(its _repr_llm_ raised ValueError: no description today; described without it)",
        "repr: BadHook()",
    ]

    class NotText:
        def _repr_llm_(self) -> object:
            return 42

    assert "(its _repr_llm_ raised TypeError: it returned a int, not a str;" in describe(NotText(), "n")


def test_a_long_hook_text_is_cut() -> None:
    class Chatty:
        def _repr_llm_(self) -> str:
            return "\n".join(f"line {i} " + "x" * 50 for i in range(100_000))

    out = describe(Chatty(), "c")
    assert len(out) <= INSPECT_CHARS
    assert out.endswith("more characters not shown]")


def test_an_object_answering_every_attribute_is_not_asked_for_the_hook() -> None:
    """The hook is looked up on the type, statically: a Mock (or a proxy's __getattr__) is not called."""
    thing = mock.MagicMock()
    describe(thing, "thing")
    assert "_repr_llm_" not in thing._mock_children
    assert thing.mock_calls == []


class Grumpy:
    def __repr__(self) -> str:
        raise ValueError("no repr for you")


class Sized:
    """Not a built-in: its __len__ and __iter__ are its own code and never called."""

    def __len__(self) -> int:
        raise RuntimeError("len called")

    def __iter__(self) -> Any:
        raise RuntimeError("iter called")

    def __repr__(self) -> str:
        return "Sized()"


def test_a_repr_that_raises_is_reported() -> None:
    assert describe(Grumpy(), "g").splitlines()[1] == "repr: (repr raised ValueError: no repr for you)"
    assert (
        describe([Grumpy()], "g").splitlines()[-1]
        == "items: not shown (their repr raised ValueError: no repr for you)"
    )
    assert describe(Sized(), "s").splitlines() == [f"s: {__name__}.Sized", "repr: Sized()"]


def test_a_repr_that_hangs_is_left_behind_at_the_time_bound(quick: None) -> None:
    """describe returns while the repr is still sleeping: the answer does not wait for it."""
    started, finished = threading.Event(), threading.Event()

    class Hangs:
        def __repr__(self) -> str:
            started.set()
            time.sleep(10)
            finished.set()
            return "never seen"

    out = describe(Hangs(), "h")
    assert started.is_set()
    assert not finished.is_set()
    assert out.splitlines()[1] == (
        "repr: not shown: the repr of h took too long (over 0.3 s), so h is shown by type instead; the "
        "repr may still be running in the background"
    )


def test_a_repr_that_spins_is_stopped(quick: None) -> None:
    """A busy loop in a repr is interrupted after the bound, so no thread spins on in the kernel."""
    spinning: list[threading.Thread] = []

    class Spins:
        def __repr__(self) -> str:
            spinning.append(threading.current_thread())
            while True:
                pass

    assert describe(Spins(), "s").splitlines()[1].startswith("repr: not shown: the repr of s took too long")
    (thread,) = spinning
    thread.join(5)
    assert not thread.is_alive()


def test_a_hook_that_hangs_leaves_no_time_for_more_user_code(quick: None) -> None:
    """The time bound is for the whole variable: after a hanging hook, its repr is not even tried."""
    release = threading.Event()

    class Stuck:
        def _repr_llm_(self) -> str:
            release.wait(10)
            return "late"

        def __repr__(self) -> str:
            pytest.fail("repr was run after the time was used up")

    try:
        out = describe(Stuck(), "s")
    finally:
        release.set()
    assert out.splitlines()[1:] == [
        "(its _repr_llm_ took too long and may still be running in the background; described without it)",
        "repr: (repr was not run: no time was left for this variable)",
    ]


def test_bounded_reports_and_never_raises(quick: None) -> None:
    assert bounded(lambda: 1 + 1) == (2, None)
    assert bounded(lambda: 1 // 0) == (None, "raised ZeroDivisionError: integer division or modulo by zero")
    assert bounded_repr(Grumpy()) == "(repr raised ValueError: no repr for you)"

    class LongRepr:
        def __repr__(self) -> str:
            return "x" * 1_000_000

    assert len(bounded_repr(LongRepr(), chars=100)) == 101


# --- the tool -------------------------------------------------------------------------------------


def test_a_missing_name_suggests_the_closest_and_kernel_variables() -> None:
    namespace = {"df_sales": 1, "df_users": 2, "model": 3}
    with pytest.raises(WorkspaceError) as caught:
        inspect_variable(namespace, "df_sale")
    message = str(caught.value)
    assert message.startswith("No variable named 'df_sale' in the kernel. Did you mean df_sales, df_users? ")
    call = json.loads(message.split("? ", 1)[1].partition(" kernel_variables")[0])
    assert call == {"name": "inspect_variable", "arguments": {"name": "df_sales"}}
    assert message.endswith("kernel_variables {} lists every variable.")
    with pytest.raises(WorkspaceError, match=r"^No variable named 'zzz' in the kernel\. kernel_variables"):
        inspect_variable(namespace, "zzz")


@pytest.mark.parametrize("name", ["_private", "_", "__builtins__", "In", "get_ipython"])
def test_the_kernels_own_names_are_refused(name: str) -> None:
    with pytest.raises(WorkspaceError, match="not one of the user's variables"):
        inspect_variable({name: 1}, name)


def test_an_expression_is_read_as_the_variable_it_starts_with() -> None:
    out = inspect_variable({"df": [1, 2]}, "df.head()")
    assert out.splitlines()[:2] == [
        "(inspect_variable takes a variable's name only: this is df.)",
        "df: list, 2 items",
    ]
    assert inspect_variable({"df": [1]}, " `df` ").startswith("df: list")


def test_a_secret_named_variable_shows_its_type_and_size_only() -> None:
    out = inspect_variable({"OPENAI_API_KEY": OPENAI}, "OPENAI_API_KEY")
    assert out == (
        f"OPENAI_API_KEY: str, length {len(OPENAI)}. Its value is hidden: the name reads like a secret's."
    )
    frame = pd.DataFrame({"a": [1, 2]})
    assert "shape 2×1" in inspect_variable({"db_password": frame}, "db_password")


async def test_the_tool_through_the_workspace(tmp_path: Path) -> None:
    df = pd.DataFrame({"city": ["Oslo", "Lima"], "note": ["key " + OPENAI, "ok"]})
    ws = Workspace(tmp_path, namespace={"df": df, "cities": ["Oslo"]})
    assert ws.tool_names().index("inspect_variable") == ws.tool_names().index("kernel_variables") + 1
    out = await ws.run(ToolCall("inspect_variable", {"name": "df"}))
    assert not out.is_error
    assert out.text.startswith("df: pandas.DataFrame, 2 rows × 2 columns")
    assert "Oslo" in out.text
    assert OPENAI[:20] not in out.text
    aliased = await ws.run(ToolCall("inspect_variable", {"variable": "cities"}))
    assert aliased.text.startswith("cities: list, 1 item")
    missing = await ws.run(ToolCall("inspect_variable", {"name": "dff"}))
    assert missing.is_error
    assert "Did you mean df?" in missing.text
    unnamed = await ws.run(ToolCall("inspect_variable", {}))
    assert unnamed.is_error
    assert unnamed.text.startswith("inspect_variable needs name.")


async def test_without_a_kernel_the_tool_is_not_offered(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    assert "inspect_variable" not in ws.tool_names()
    out = await ws.run(ToolCall("inspect_variable", {"name": "df"}))
    assert out.is_error
    assert out.text.startswith("There is no kernel here")


async def test_a_hanging_repr_through_the_workspace_returns(tmp_path: Path, quick: None) -> None:
    release = threading.Event()

    class Hangs:
        def __repr__(self) -> str:
            release.wait(10)
            return "late"

    ws = Workspace(tmp_path, namespace={"h": Hangs()})
    try:
        out = await ws.run(ToolCall("inspect_variable", {"name": "h"}))
    finally:
        release.set()
    assert not out.is_error
    assert "repr: not shown: the repr of h took too long" in out.text


def test_the_definition_follows_the_registry_rules() -> None:
    """A short description with one example, a label and the same example for the name, no number."""
    spec = TOOLS["inspect_variable"]
    assert list(TOOLS).index("inspect_variable") == list(TOOLS).index("kernel_variables") + 1
    assert len(spec.description) <= 200
    assert not any(char.isdigit() for char in spec.description)
    (param,) = spec.params
    assert param.description == "Variable's name, e.g. df"
    assert spec.example == {"name": "df"}
    assert param.aliases == ("variable", "var")
