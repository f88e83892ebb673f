"""outline: a file's top-level definitions, for Python (ast, a regex when it does not parse), notebooks
(at the cell view's line numbers, as read_file shows them) and the tree-sitter languages."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from twinny_magics.outline import (
    MAX_DEFINITIONS,
    MAX_MEMBERS,
    NAME_CHARS,
    OUTLINE_CHARS,
    Definition,
    grammar_available,
    outline,
    python_outline,
)
from twinny_magics.tools.notebook import notebook_lines

# -- Python -----------------------------------------------------------------------------------------------

PYTHON = '''\
"""A module."""

import os

MAX_SIZE = 10
limit: int = 3
a = b = 1


class Store:
    """Keeps things."""

    kind = "store"

    def __init__(self):
        self.items = []

    async def load(self):
        return None

    class Inner:
        pass


async def fetch(url):
    return url


def helper():
    x = 1
    return x


if __name__ == "__main__":
    helper()
'''


def by_name(found: list[Definition]) -> dict[str, Definition]:
    return {d.name: d for d in found}


def test_python_classes_functions_and_constants_at_their_lines() -> None:
    found = outline("pkg/store.py", PYTHON)
    lines = PYTHON.splitlines()
    names = by_name(found)
    assert [d.name for d in found] == ["MAX_SIZE", "limit", "a", "b", "Store", "fetch", "helper"]
    assert names["Store"].kind == "class"
    assert names["Store"].members == ("__init__", "load", "Inner")  # methods, async ones, nested classes
    assert names["fetch"].kind == "def"  # an async def is a def
    assert names["helper"].kind == "def"
    assert names["helper"].members == ()
    assert {names[n].kind for n in ("MAX_SIZE", "limit", "a", "b")} == {"const"}
    for d in found:
        # 1-based, as read_file numbers lines: the line shown is the one that defines the name.
        assert d.name in lines[d.line - 1], d
    assert names["a"].line == names["b"].line == 7
    # A class's attributes, a function's locals and what an if-block assigns are not top-level names.
    assert not {"kind", "x", "items"} & set(names)


def test_python_stub_and_windows_script_suffixes_are_python() -> None:
    for path in ("m.pyi", "tool.pyw", "UPPER.PY"):
        assert [d.name for d in outline(path, "def f(): ...\n")] == ["f"]


def test_broken_python_falls_back_to_the_lines_that_start_a_definition() -> None:
    broken = (
        "import os\n"
        "\n"
        "LIMIT = 5\n"
        "\n"
        "class Half:\n"
        "    def method(self):\n"
        "        return (\n"  # never closed: a file mid-edit
        "\n"
        "async def later():\n"
        "    pass\n"
        "\n"
        "def   spaced(x):\n"
        "total: int = 3\n"
        "x == 2\n"  # a comparison is not an assignment
    )
    found = outline("half.py", broken)
    assert [(d.kind, d.name, d.line) for d in found] == [
        ("const", "LIMIT", 3),
        ("class", "Half", 5),
        ("def", "later", 9),
        ("def", "spaced", 12),
        ("const", "total", 13),
    ]


def test_python_outline_offsets_line_numbers() -> None:
    assert python_outline("def f():\n    pass\n", offset=10) == [Definition("def", "f", 11)]
    assert python_outline("def f(:\n", offset=10) == [Definition("def", "f", 11)]  # the fallback too


def test_empty_and_blank_sources_have_no_definitions() -> None:
    for path in ("a.py", "a.ipynb", "a.js", "a.go", "notes.txt", "Makefile", "noext"):
        assert outline(path, "") == []
        assert outline(path, "\n\n   \n") == []


def test_unknown_languages_are_listed_without_definitions() -> None:
    assert outline("notes.txt", "def f():\n    pass\n") == []
    assert outline("README.md", "# Title\n\n## Part\n") == []  # headings only in notebooks
    assert outline("archive.tar.gz", "def f(): pass") == []
    assert outline("dir.py/Makefile", "def f(): pass") == []  # a suffix is the file name's own
    assert not grammar_available("txt")
    assert grammar_available("py")
    assert grammar_available("ipynb")


# -- notebooks --------------------------------------------------------------------------------------------


@pytest.fixture
def real_notebook(tmp_path: Path) -> Path:
    nbformat = pytest.importorskip("nbformat")
    v4 = nbformat.v4
    nb = v4.new_notebook()
    code = v4.new_code_cell(
        "%matplotlib inline\n!pip install toolz\nimport math\n\nRATE = 0.5\n\n"
        "def area(r):\n    return math.pi * r * r"
    )
    code.execution_count = 3
    code.outputs = [
        v4.new_output("stream", name="stdout", text="done\nline two\n"),
        v4.new_output("execute_result", data={"text/plain": "3.14"}, execution_count=3),
    ]
    nb.cells = [
        v4.new_markdown_cell("# Analysis\n\nSome text.\n\n## Loading the data\n\n####### not a heading"),
        code,
        v4.new_markdown_cell("Plain prose, no heading."),
        v4.new_code_cell(
            "class Model:\n    def fit(self):\n        pass\n\n    async def predict(self):\n        pass"
        ),
        v4.new_raw_cell("def not_code():\n    pass"),
        v4.new_code_cell("def broken(:\n    pass\n\ndef still_found():\n    pass"),
        v4.new_markdown_cell("### Results " + "x" * 300),
    ]
    path = tmp_path / "analysis.ipynb"
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    return path


def test_notebook_definitions_are_at_the_lines_read_file_shows(real_notebook: Path) -> None:
    lines = notebook_lines(real_notebook, "analysis.ipynb")
    found = outline("analysis.ipynb", "\n".join(lines))
    shown = [(d.kind, d.name) for d in found]
    assert shown == [
        ("#", "Analysis"),
        ("##", "Loading the data"),
        ("const", "RATE"),
        ("def", "area"),
        ("class", "Model"),
        ("def", "broken"),
        ("def", "still_found"),
        ("###", found[-1].name),
    ]
    for d in found:
        line = lines[d.line - 1]
        if d.kind.startswith("#"):
            assert line.startswith(d.kind + " ")
            assert line[len(d.kind) + 1 :].startswith(d.name.rstrip("…"))
        else:
            assert d.name in line, (d, line)
            assert not line.startswith("# cell")
    assert by_name(found)["Model"].members == ("fit", "predict")
    # A raw cell is neither markdown nor code; the magics and shell lines did not break the parse.
    assert "not_code" not in by_name(found)
    heading = found[-1]
    assert heading.name.startswith("Results xxx")
    assert len(heading.name) <= NAME_CHARS
    assert heading.name.endswith("…")


def test_a_notebook_with_no_cells_or_only_outputs_has_no_definitions() -> None:
    assert outline("empty.ipynb", "") == []
    assert outline("nb.ipynb", "# cell 1 [code] (ran as [1])\n# out: 3\n# out (stdout): x = 1") == []
    # Text before the first cell header (never in a real cell view) is ignored.
    assert outline("nb.ipynb", "def stray():\n    pass") == []


# -- the tree-sitter languages ------------------------------------------------------------------------

LANGUAGES = [
    pytest.param(
        "tree_sitter_javascript",
        "app.js",
        "import x from 'y';\n"
        "export function greet(name) {\n"
        "  return name;\n"
        "}\n"
        "class Animal {\n"
        "  constructor() {}\n"
        "  speak() {}\n"
        "}\n"
        "const MAX_SIZE = 10;\n",
        [
            ("function", "greet", 2, ()),
            ("class", "Animal", 5, ("constructor", "speak")),
            ("const", "MAX_SIZE", 9, ()),
        ],
        id="javascript",
    ),
    pytest.param(
        "tree_sitter_typescript",
        "shapes.ts",
        "export interface Shape {\n"
        "  area(): number;\n"
        "}\n"
        "type Id = string;\n"
        "export class Circle implements Shape {\n"
        "  area() { return 3; }\n"
        "}\n"
        "function helper(): void {}\n"
        "enum Color { Red, Green }\n",
        [
            ("interface", "Shape", 1, ("area",)),
            ("type", "Id", 4, ()),
            ("class", "Circle", 5, ("area",)),
            ("function", "helper", 8, ()),
            ("enum", "Color", 9, ()),
        ],
        id="typescript",
    ),
    pytest.param(
        "tree_sitter_typescript",
        "view.tsx",
        "export function View(): JSX.Element {\n  return <div>hi</div>;\n}\n",
        [("function", "View", 1, ())],
        id="tsx",
    ),
    pytest.param(
        "tree_sitter_go",
        "main.go",
        'package main\n\nimport "fmt"\n\ntype Server struct {\n\tport int\n}\n\n'
        "func (s *Server) Start() {}\n\nfunc main() {\n\tfmt.Println(1)\n}\n\n"
        'const Version = "1"\n',
        [
            ("type", "Server", 5, ()),
            ("method", "Start", 9, ()),
            ("function", "main", 11, ()),
            ("const", "Version", 15, ()),
        ],
        id="go",
    ),
    pytest.param(
        "tree_sitter_rust",
        "lib.rs",
        "use std::io;\n\npub struct Point { x: i32 }\n\npub fn distance() -> i32 { 0 }\n\n"
        "enum Kind { A, B }\ntrait Shape { fn area(&self); }\nconst MAX: i32 = 3;\n",
        [
            ("struct", "Point", 3, ()),
            ("function", "distance", 5, ()),
            ("enum", "Kind", 7, ("A", "B")),
            ("trait", "Shape", 8, ("area",)),
            ("const", "MAX", 9, ()),
        ],
        id="rust",
    ),
    pytest.param(
        "tree_sitter_java",
        "Greeter.java",
        "package p;\n\nimport java.util.List;\n\npublic class Greeter {\n    private int count;\n"
        "    public Greeter() {}\n    public String greet(String n) { return n; }\n}\n\n"
        "interface Speaker { void speak(); }\n",
        [("class", "Greeter", 5, ("Greeter", "greet")), ("interface", "Speaker", 11, ("speak",))],
        id="java",
    ),
    pytest.param(
        "tree_sitter_c",
        "util.c",
        "#include <stdio.h>\n#define MAX 10\n\nstruct point { int x; };\n\n"
        "static int add(int a, int b) { return a + b; }\n\nint main(void) {\n  return add(1, 2);\n}\n",
        [
            ("define", "MAX", 2, ()),
            ("struct", "point", 4, ()),
            ("function", "add", 6, ()),
            ("function", "main", 8, ()),
        ],
        id="c",
    ),
    pytest.param(
        "tree_sitter_cpp",
        "widget.cpp",
        "#include <vector>\n\nnamespace geo {\nclass Shape {};\n}\n\nclass Widget {\n public:\n"
        "  int size() const { return 0; }\n};\n\n"
        "template <typename T> T maxOf(T a, T b) { return a > b ? a : b; }\n",
        [
            ("namespace", "geo", 3, ("Shape",)),
            ("class", "Widget", 7, ("size",)),
            ("function", "maxOf", 12, ()),
        ],
        id="cpp",
    ),
]


@pytest.mark.parametrize(("module", "path", "source", "expected"), LANGUAGES)
def test_each_tree_sitter_language(
    module: str, path: str, source: str, expected: list[tuple[str, str, int, tuple[str, ...]]]
) -> None:
    pytest.importorskip("tree_sitter")
    pytest.importorskip(module)
    found = outline(path, source)
    assert [(d.kind, d.name, d.line, d.members) for d in found] == expected
    lines = source.splitlines()
    for d in found:
        assert d.name in lines[d.line - 1]


def test_rust_impl_blocks_and_their_methods_are_outlined() -> None:
    pytest.importorskip("tree_sitter")
    pytest.importorskip("tree_sitter_rust")
    source = "pub struct Point { x: i32 }\n\nimpl Point {\n    pub fn new() -> Self { Point { x: 0 } }\n}\n"
    found = outline("lib.rs", source)
    assert any("new" in d.members for d in found if d.line == 3), found


def test_names_are_one_line_even_when_the_source_splits_them() -> None:
    pytest.importorskip("tree_sitter")
    pytest.importorskip("tree_sitter_cpp")
    found = outline("w.cpp", "int\nWidget   ::\n   size2() { return 1; }\n")
    assert [d.name for d in found] == ["Widget :: size2"]
    long_c = outline("a.cpp", "int " + "x" * 500 + "(void) { return 0; }\n")
    assert len(long_c) == 1
    assert len(long_c[0].name) == NAME_CHARS
    assert long_c[0].name.endswith("…")


# -- hostile input: fewer definitions, never an error --------------------------------------------------


def test_a_file_over_the_outline_limit_is_not_parsed() -> None:
    text = "def f():\n    pass\n" * (OUTLINE_CHARS // 18 + 1)
    assert len(text) > OUTLINE_CHARS
    assert outline("big.py", text) == []


def test_definitions_and_members_are_capped() -> None:
    many = "".join(f"def f{i}():\n    pass\n" for i in range(MAX_DEFINITIONS + 50))
    found = outline("many.py", many)
    assert len(found) == MAX_DEFINITIONS
    assert found[-1].name == f"f{MAX_DEFINITIONS - 1}"
    members = "class C:\n" + "".join(f"    def m{i}(self): pass\n" for i in range(MAX_MEMBERS + 10))
    assert len(outline("c.py", members)[0].members) == MAX_MEMBERS


def test_minified_javascript_gives_at_most_the_cap_and_no_error() -> None:
    pytest.importorskip("tree_sitter")
    pytest.importorskip("tree_sitter_javascript")
    minified = ";".join(f"function f{i}(a){{return a+{i}}}" for i in range(20_000))  # one line, ~650 KB
    assert "\n" not in minified
    assert len(minified) < OUTLINE_CHARS
    found = outline("bundle.min.js", minified)
    assert len(found) == MAX_DEFINITIONS
    assert all(d.line == 1 for d in found)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("deep.py", "(" * 200_000),
        ("deep.py", "x = " + "[" * 50_000 + "]" * 50_000 + "\n"),
        (
            "nested.py",
            "def f():\n"
            + "".join("    " * (i + 1) + "if x:\n" for i in range(400))
            + "    " * 401
            + "pass\n",
        ),
        ("deep.js", "[" * 300_000),
        ("deep.js", "function f(){" * 20_000 + "}" * 20_000),
        ("deep.c", "int f() {" + "{" * 100_000),
        ("deep.rs", "fn f() {" + "(" * 100_000),
        ("deep.ipynb", "# cell 1 [code]\n" + "(" * 200_000),
        ("bytes.go", "package \x00\x01\udcff main\nfunc \ufffd() {}\n"),
        ("mixed.ts", "\ud800 class \U0001f600 {}"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None,
)
def test_pathological_input_gives_few_definitions_and_never_raises(path: str, text: str) -> None:
    suffix = path.rsplit(".", 1)[-1]
    if suffix not in ("py", "ipynb"):
        pytest.importorskip("tree_sitter")
        pytest.importorskip(importlib.import_module("twinny_magics.outline").GRAMMARS[suffix][0])
    found = outline(path, text)
    assert len(found) <= 2
    for d in found:
        assert "\n" not in d.name
        assert len(d.name) <= NAME_CHARS


SUFFIXES = ["py", "ipynb", "js", "ts", "tsx", "go", "rs", "java", "c", "cpp", "h", "txt"]
_TOKENS = st.sampled_from(
    [
        "def ", "class ", "async ", "function ", "fn ", "func ", "struct ", "impl ", "interface ",
        "const ", "let ", "type ", "enum ", "#define ", "# cell 1 [code]", "# cell 2 [markdown]",
        "# ", "## ", "(", ")", "{", "}", "[", "]", ":", ";", "=", "==", "<", ">", "::", ",", " ",
        "\n", "\t", "    ", "x", "Name", "snake_case", "\u00e9t\u00e9", "\U0001f600", "\x00", "\\",
        '"', "'", "/*", "*/", "//", "template <typename T>", "export ", "pub ",
    ]
)  # fmt: skip


@given(suffix=st.sampled_from(SUFFIXES), pieces=st.lists(_TOKENS | st.text(max_size=5), max_size=80))
def test_any_text_gives_well_formed_definitions(suffix: str, pieces: list[str]) -> None:
    text = "".join(pieces)
    if suffix not in ("py", "ipynb", "txt") and not grammar_available(suffix):
        return
    found = outline(f"f.{suffix}", text)
    count = max(1, len(text.splitlines()))
    assert len(found) <= MAX_DEFINITIONS
    for d in found:
        assert isinstance(d, Definition)
        assert d.name
        assert "\n" not in d.name
        assert "\r" not in d.name
        assert len(d.name) <= NAME_CHARS
        assert 1 <= d.line <= count + 1, (d, count)
        assert len(d.members) <= MAX_MEMBERS
        assert all("\n" not in m and len(m) <= NAME_CHARS for m in d.members)
