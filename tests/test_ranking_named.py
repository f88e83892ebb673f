"""A question that names a file and a definition gets that definition's chunk first in the evidence, with
the file's own line numbers (at a file's start, after a decorator, after blank lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from twinny_magics.tools import Workspace

EVIDENCE_CHARS = 2027  # the head start's share of a 4,096-token window


def _class(name: str, body_lines: int, *, method: str = "run", default: str = "1") -> str:
    doc = "\n".join(
        f"    shape notes {name.lower()} {k}: area, size, shape of the figure." for k in range(body_lines)
    )
    head = f'class {name}(Shape):\n    """A {name}.\n\n{doc}\n    """\n\n'
    return f"{head}    def {method}(self, size={default}):\n        return size\n\n\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TWINNY_MAGICS_INDEX_DIR", str(tmp_path / "index"))
    root = tmp_path / "work"
    (root / "pkg").mkdir(parents=True)
    shapes = "class Shape:\n    size = 1\n\n\n" + "".join(
        _class(name, 8 if name != "Ellipse" else 50, method="__init__", default=str(n + 2))
        for n, name in enumerate(["Square", "Circle", "Triangle", "Ellipse", "Hexagon"])
    )
    (root / "pkg" / "shapes.py").write_text(shapes)
    # Chunks about the number of shapes before the constant: a plain-word search fills its share of the
    # file with them (and a one-letter name is no search word at all).
    parts = "".join(
        f"def shapes_part_{k}(number):\n"
        + "    # the default number of shapes, and the number set\n" * 6
        + "\n\n"
        for k in range(8)
    )
    (root / "pkg" / "consts.py").write_text(f"{parts}K = 5  # the size of a page\nKIND = 'area'\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_shapes.py").write_text(
        "".join(
            f"def test_shape_{k}():\n    assert Triangle and Circle and Square  # shape size area\n\n\n"
            for k in range(12)
        )
    )
    return root


def evidence(root: Path, question: str) -> list[tuple[str, list[tuple[int, str]]]]:
    """The head start's chunks as the model reads them: each path and its numbered lines."""
    text = Workspace(root).head_start(question, EVIDENCE_CHARS, map=False, evidence=True)
    chunks: list[tuple[str, list[tuple[int, str]]]] = []
    for line in text.split("(ranked search):", 1)[1].splitlines():
        row = re.match(r"^\s*(\d+): (.*)$", line)
        if row and chunks:
            chunks[-1][1].append((int(row.group(1)), row.group(2)))
        elif line.endswith(":") and not line.startswith("["):
            chunks.append((line.split(" (")[0].rstrip(":"), []))
    return chunks


def line_of(root: Path, rel: str, start: str) -> int:
    return next(
        n for n, line in enumerate((root / rel).read_text().splitlines(), 1) if line.startswith(start)
    )


@pytest.mark.parametrize(
    "question",
    [
        "On which line of pkg/shapes.py is the class Triangle defined?",
        "the class Triangle line in pkg/shapes.py",
        "Triangle in pkg/shapes.py: which line?",
        "pkg/shapes.py's Triangle: where does it start?",
    ],
)
def test_a_named_class_in_a_named_file_comes_first_with_its_own_line_number(
    project: Path, question: str
) -> None:
    chunks = evidence(project, question)
    path, rows = chunks[0]
    assert path == "pkg/shapes.py"
    n = line_of(project, "pkg/shapes.py", "class Triangle")
    assert (n, "class Triangle(Shape):") in rows


def test_a_named_method_of_a_named_class_comes_first(project: Path) -> None:
    question = "Change the default size of Ellipse.__init__ (in pkg/shapes.py) from 5 to 7."
    path, rows = evidence(project, question)[0]
    assert path == "pkg/shapes.py"
    n = line_of(project, "pkg/shapes.py", "class Ellipse")
    init = next(
        k
        for k, line in enumerate((project / "pkg/shapes.py").read_text().splitlines(), 1)
        if k > n and "def __init__" in line
    )
    assert (init, "    def __init__(self, size=5):") in rows


def test_a_one_letter_constant_named_in_a_file_comes_first(project: Path) -> None:
    path, rows = evidence(project, "What default number of shapes (the constant K) does pkg/consts.py set?")[
        0
    ]
    assert path == "pkg/consts.py"
    assert (line_of(project, "pkg/consts.py", "K = 5"), "K = 5  # the size of a page") in rows


def test_a_named_file_that_uses_a_name_comes_before_the_names_definition(project: Path) -> None:
    (project / "pkg" / "render.py").write_text(
        'def render_shape(shape, fmt="{}"):\n    return fmt.format(shape)\n'
    )
    (project / "pkg" / "report.py").write_text(
        'from pkg.render import render_shape\n\nTITLE = "report"\nrender_shape(3, fmt="{:.0f}")\n'
    )
    path, rows = evidence(project, "Which format does pkg/report.py pass to render_shape?")[0]
    assert path == "pkg/report.py"
    assert (4, 'render_shape(3, fmt="{:.0f}")') in rows


def test_where_a_name_a_short_named_file_uses_is_defined_its_definition_leads(project: Path) -> None:
    (project / "pkg" / "render.py").write_text(
        'def render_shape(shape, fmt="{}"):\n    return fmt.format(shape)\n'
    )
    (project / "pkg" / "report.py").write_text(
        'from pkg.render import render_shape\n\nTITLE = "report"\nrender_shape(3, fmt="{:.0f}")\n'
    )
    chunks = evidence(project, "pkg/report.py calls render_shape. Which file defines that function?")
    assert [path for path, _ in chunks[:2]] == ["pkg/render.py", "pkg/report.py"]
    assert (1, 'def render_shape(shape, fmt="{}"):') in chunks[0][1]
    # A named file that defines it itself stays first.
    (project / "pkg" / "report.py").write_text("def render_shape(x):\n    return x\n\nrender_shape(3)\n")
    chunks = evidence(project, "pkg/report.py calls render_shape. Which file defines that function?")
    assert chunks[0][0] == "pkg/report.py"


def test_a_named_file_comes_first_when_the_question_names_no_definition(project: Path) -> None:
    # Another file says the question's words more often (a library's docstring); the question asks
    # about the file it names, which says them once, beside the numbers asked for.
    (project / "pkg" / "pooled.py").write_text(
        "".join(
            f"def pooled_{k}(data):\n"
            + '    """The global classifier puts observations in each class (global, class, count)."""\n' * 4
            + "    return data\n\n\n"
            for k in range(6)
        )
    )
    long = "".join(f"note_{k} = {k}  # unrelated setting\n" for k in range(60))
    (project / "pkg" / "run_report.py").write_text(
        f"{long}res = pooled(data, k=4)\nres.global_classifier.counts  # each class: [15, 15, 15, 15]\n"
    )
    question = (
        "In pkg/run_report.py, with k=4, how many observations does the global classifier put in each class?"
    )
    path, rows = evidence(project, question)[0]
    assert path == "pkg/run_report.py"
    assert (62, "res.global_classifier.counts  # each class: [15, 15, 15, 15]") in rows


def test_a_file_named_in_words_lends_its_name_words_to_no_other_file(project: Path) -> None:
    # "the session log notebook": "session" and "log" name the file; a module full of log lines is not
    # what the question asks about, the notebook's query and its output are.
    (project / "pkg" / "logs.py").write_text(
        "".join(f"log = logging.getLogger('session {k}')  # session log\n" for k in range(30))
    )
    (project / "notebooks").mkdir()
    (project / "notebooks" / "session_log.py").write_text(
        "log = [('select * from orders', 3725)]\nslow = {q: took(s) for q, s in log}\n"
        "# out: {'select * from orders': '1 hour 2 min 5 sec'}\n"
    )
    question = "In the session log file, how long did the query select * from orders take?"
    paths = [path for path, _ in evidence(project, question)]
    assert paths[0] == "notebooks/session_log.py"
    assert "pkg/logs.py" not in paths


@pytest.mark.parametrize(
    ("source", "question", "start"),
    [
        ("def first():\n    return 1\n", "Where is def first in pkg/edge.py?", "def first"),
        (
            "import os\n\n\n@property\n@staticmethod\ndef decorated():\n    return os.sep\n",
            "On which line of pkg/edge.py is decorated defined?",
            "def decorated",
        ),
        ("\n\n\n\nCONSTANT_VALUE = 3\n", "What is CONSTANT_VALUE in pkg/edge.py?", "CONSTANT_VALUE"),
        (
            "x = 1\n" * 45 + "\n\ndef late_one():\n    pass\n",
            "On which line of pkg/edge.py is late_one defined?",
            "def late_one",
        ),
    ],
)
def test_every_line_number_the_evidence_shows_is_the_files_own(
    project: Path, source: str, question: str, start: str
) -> None:
    (project / "pkg" / "edge.py").write_text(source)
    lines = source.splitlines()
    chunks = evidence(project, question)
    assert chunks[0][0] == "pkg/edge.py"
    for path, rows in chunks:
        own = (project / path).read_text().splitlines()
        assert all(own[n - 1].startswith(text.removesuffix(" …")) for n, text in rows), path
    n = next(k for k, line in enumerate(lines, 1) if line.startswith(start))
    assert n in [k for k, _ in chunks[0][1]]


def test_a_second_look_shows_the_function_a_named_attribute_is_set_to(project: Path) -> None:
    (project / "pkg" / "manager.py").write_text(
        "from pkg.callers import _multicall\n\n\nclass Manager:\n    def __init__(self):\n"
        "        self._inner_hookexec = _multicall\n"
    )
    (project / "pkg" / "callers.py").write_text(
        "".join(f"def helper_{k}(x):\n    return x + {k}\n\n\n" for k in range(6))
        + "def _multicall(hooks, args):\n    return [h(*args) for h in hooks]\n"
    )
    chunks = evidence(
        project, "Manager keeps a function as _inner_hookexec. Which file defines that function?"
    )
    assert chunks[0][0] == "pkg/manager.py"
    assert chunks[1][0] == "pkg/callers.py"
    assert (line_of(project, "pkg/callers.py", "def _multicall"), "def _multicall(hooks, args):") in chunks[
        1
    ][1]


@pytest.mark.parametrize(("tests", "whole"), [(8, True), (30, False)])
def test_a_count_over_a_short_named_file_shows_it_whole(project: Path, tests: int, whole: bool) -> None:
    body = "".join(f"def test_case_{k}():\n    assert True\n\n\n" for k in range(tests))
    (project / "tests" / "test_count.py").write_text("import pytest\n\n\n" + body)
    path, rows = evidence(project, "How many test functions does tests/test_count.py define?")[0]
    assert path == "tests/test_count.py"
    numbers = [n for n, _ in rows]
    assert (numbers[0] == 1 and numbers[-1] >= 3 + 4 * tests - 2) is whole


def test_a_long_named_file_gets_chunks_not_the_whole_file(project: Path) -> None:
    filler = "# a line of notes\n" * 65
    (project / "tests" / "test_count.py").write_text(
        f"import pytest\n{filler}def test_case_one():\n    assert True\n"
    )
    _, rows = evidence(project, "On which line of tests/test_count.py is test_case_one defined?")[0]
    assert rows[0] == (67, "def test_case_one():")


def test_a_value_deep_in_a_short_named_file_is_shown(project: Path) -> None:
    # As toolz's _version.py: a short header chunk, the value further down; another file full of the
    # question's words takes the rest of the evidence.
    head = (
        '"""The version of pkg, generated from git."""\n\nimport json\n\n\n'
        "def get_versions():\n    return json.loads(DATA)\n"
    )
    data = (
        'DATA = """\n{\n "date": "2024-10-04",\n "dirty": false,\n "full-revisionid": "07f30a9",\n'
        ' "version": "1.0.0"\n}\n"""\n'
    )
    (project / "pkg" / "_version.py").write_text(head + "\n\n" + data)
    revision = "def git_revision_{}():\n    # the full git revision id the version was generated from\n"
    (project / "versioneer.py").write_text(
        "".join(revision.format(k) + "    return 'x'\n\n\n" for k in range(30))
    )
    path, rows = evidence(
        project, "From which git revision (the full revision id) was pkg/_version.py generated?"
    )[0]
    assert path == "pkg/_version.py"
    n = line_of(project, "pkg/_version.py", ' "full-revisionid"')
    assert (n, ' "full-revisionid": "07f30a9",') in rows


def test_what_a_named_function_raises_comes_before_its_docstring(project: Path) -> None:
    doc = "".join(f"    memo notes {k}: a cache of calls, keyed by the arguments given.\n" for k in range(45))
    (project / "pkg" / "memo.py").write_text(
        f'def memoize(func):\n    """Cache func.\n\n{doc}    """\n    cache = {{}}\n\n    def memof(*args):\n'
        "        try:\n            return cache[args]\n        except TypeError:\n"
        '            raise TypeError("Arguments to memoized function must be hashable")\n\n    return memof\n'
    )
    path, rows = evidence(
        project, "What error message does memoize raise for arguments that are not hashable?"
    )[0]
    assert path == "pkg/memo.py"
    n = line_of(project, "pkg/memo.py", '            raise TypeError("Arguments')
    assert n in [k for k, _ in rows]


def test_the_default_of_a_named_classs_parameter_is_shown_not_its_docstring(project: Path) -> None:
    path, rows = evidence(project, "What is the default size of the class Ellipse?")[0]
    assert path == "pkg/shapes.py"
    n = line_of(project, "pkg/shapes.py", "class Ellipse")
    init = next(
        k
        for k, line in enumerate((project / "pkg/shapes.py").read_text().splitlines(), 1)
        if k > n and "def __init__" in line
    )
    assert (init, "    def __init__(self, size=5):") in rows


def test_a_question_for_a_names_tests_gets_the_test_file_that_uses_it(project: Path) -> None:
    path, _ = evidence(project, "Which test file has the tests for Triangle?")[0]
    assert path == "tests/test_shapes.py"


def test_a_named_attribute_set_deep_in_a_long_chunk_is_shown_from_its_line(project: Path) -> None:
    doc = "".join(f"        # the manager keeps hooks, part {k}: plugins, names, calls.\n" for k in range(30))
    (project / "pkg" / "manager.py").write_text(
        f"class Manager:\n    def __init__(self):\n{doc}        self._inner_hookexec = _multicall\n"
    )
    (project / "pkg" / "callers.py").write_text(
        "".join(f"def helper_{k}(x):\n    return x + {k}\n\n\n" for k in range(6))
        + "def _multicall(hooks, args):\n"
        + "".join(f"    # step {k} of calling the hooks in order\n" for k in range(30))
        + "    return [h(*args) for h in hooks]\n"
    )
    chunks = evidence(
        project, "Manager keeps a function as _inner_hookexec. Which file defines that function?"
    )
    assert chunks[0][0] == "pkg/manager.py"
    assert chunks[0][1][0][0] > 20  # shown from near the assignment, not from the class line
    assert chunks[1][0] == "pkg/callers.py"
