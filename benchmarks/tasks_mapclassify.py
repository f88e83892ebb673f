"""A development code base: mapclassify 2.8.1, a data project whose notebooks matter.

The workspace is the sdist of ``mapclassify==2.8.1`` from PyPI (BSD-3), pinned by sha256 and unpacked at
run time: eight tutorial notebooks (``notebooks/01_maximum_breaks.ipynb`` … ``08_manual_coloring``) that
use the package and keep their outputs (tables of class intervals and counts, arrays, and large embedded
images: ``08_manual_coloring.ipynb`` is 5 MB), beside ``mapclassify/classifiers.py`` (2,997 lines, 16
classifiers on one base class), a small API module, tests and docs. Notebook answers are read from the
notebooks' own outputs by the graders, never written here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tasks_common import (
    Answer,
    Edit,
    Sdist,
    Source,
    Task,
    Where,
    check_unique,
    count_task,
    edit_task,
    line_task,
    located,
    name_term,
    number_term,
    regex_term,
    text_term,
)

PIN = Sdist("mapclassify", "2.8.1", "306f4cb99ad1ea166b3efd7180c0a199d240bd801de7937327973d829673bc82")


def build_workspace(root: Path) -> Path:
    """The workspace at ``root``: the cached sdist unpacked."""
    return PIN.unpack(PIN.cached(), root)


def output_of(cells: list[dict[str, Any]], source: str) -> str:
    """The text/plain output of the one code cell whose source is ``source``."""
    found = [c for c in cells if c["cell_type"] == "code" and c["source"].strip() == source]
    if len(found) != 1:
        raise ValueError(f"{len(found)} cells are {source!r}")
    for output in found[0].get("outputs", []):
        text = output.get("data", {}).get("text/plain") or output.get("text")
        if text:
            return "".join(text) if isinstance(text, list) else str(text)
    raise ValueError(f"the cell {source!r} has no text output")


def build_tasks(root: Path) -> list[Task]:
    """Every task, made from the workspace at ``root`` (facts read from its files and checked there)."""
    src = Source(root)
    path = src.path
    classifiers = "mapclassify/classifiers.py"
    nb1, nb2, nb4, nb6 = (
        "notebooks/01_maximum_breaks.ipynb",
        "notebooks/02_legends.ipynb",
        "notebooks/04_pooled.ipynb",
        "notebooks/06_api.ipynb",
    )
    tasks: list[Task] = []
    add = tasks.append

    add(
        Task(
            "locate-Pooled",
            "locate",
            "Which file of this project defines the class Pooled?",
            Answer(
                [path("mapclassify/pooling.py", bare=True)],
                [path(classifiers, bare=True), path("mapclassify/__init__.py")],
            ),
            right=("mapclassify/pooling.py", "Pooled is defined in `pooling.py`."),
            wrong=("mapclassify/classifiers.py", "mapclassify/__init__.py"),
            quick=True,
        )
    )
    add(
        Task(
            "locate-load_example",
            "locate",
            "Which file defines the function load_example?",
            Answer(
                [path(classifiers, bare=True)],
                [path("mapclassify/datasets/calemp/data.py"), path("mapclassify/util.py")],
            ),
            right=(classifiers, "load_example is in classifiers.py."),
            wrong=("mapclassify/datasets/calemp/data.py", "mapclassify/util.py"),
        )
    )
    k = int(re.search(r"^K = (\d+)", src.text(classifiers), re.M).group(1))  # type: ignore[union-attr]
    add(
        Task(
            "value-default-K",
            "value",
            "What default number of classes (the constant K) does mapclassify/classifiers.py set?",
            Answer([number_term(k)], [number_term(k - 1), number_term(k + 1), number_term(10)]),
            right=(str(k), f"K = {k}"),
            wrong=(str(k + 1), "10"),
        )
    )
    src.has(classifiers, "def __init__(self, y, hinge=1.5):")
    add(
        Task(
            "value-boxplot-hinge",
            "value",
            "What is the default hinge of the BoxPlot classifier?",
            Answer(
                [regex_term("1.5", r"(?<![\w.])1\.50?(?![\d])")],
                [
                    regex_term("3.0", r"(?<![\w.])3(?:\.0)?(?![\d.])"),
                    regex_term("1.0", r"(?<![\w.])1\.0(?![\d])"),
                ],
            ),
            right=("1.5", "hinge=1.5"),
            wrong=("3.0", "1.0"),
            quick=True,
        )
    )
    add(
        line_task(
            src,
            "line-MaxP",
            classifiers,
            "class MaxP(",
            what="the class MaxP",
            other=src.line_of(classifiers, "class UserDefined("),
        )
    )
    names = re.findall(r'"(\w+)"', src.text(classifiers).split("CLASSIFIERS = (", 1)[1].split(")", 1)[0])
    add(
        count_task(
            "count-CLASSIFIERS",
            "count",
            "How many classifier names does the CLASSIFIERS tuple in mapclassify/classifiers.py list?",
            len(names),
            said="names",
        )
    )
    testers = [f for f in src.files if "/tests/" in f and f.endswith(".py") and "greedy(" in src.text(f)]
    assert testers == ["mapclassify/tests/test_greedy.py"], testers
    add(
        Task(
            "cross-tests-greedy",
            "cross-file",
            "Which test file has the tests for the greedy coloring function?",
            Answer(
                [path("mapclassify/tests/test_greedy.py", bare=True)],
                [
                    path("mapclassify/greedy.py", bare=True),
                    path("mapclassify/tests/test_mapclassify.py", bare=True),
                ],
            ),
            right=("mapclassify/tests/test_greedy.py", "test_greedy.py"),
            wrong=("mapclassify/greedy.py", "mapclassify/tests/test_mapclassify.py"),
        )
    )
    src.has(
        classifiers, '"Numba not installed. Using slow pure python version.",\n                UserWarning,'
    )
    add(
        Task(
            "grep-numba-warning",
            "grep-read",
            "Which warning category does FisherJenks warn with when numba is not installed?",
            Answer(
                [name_term("UserWarning")],
                [name_term("RuntimeWarning"), name_term("ImportWarning"), name_term("DeprecationWarning")],
            ),
            right=("UserWarning", "warnings.warn('Numba not installed…', UserWarning)"),
            wrong=("RuntimeWarning", "ImportWarning"),
        )
    )
    src.has(classifiers, "def __init__(self, y, k=K, initial=1000, seed1=0, seed2=1):")
    add(
        Task(
            "big-maxp-initial",
            "big-file",
            "In mapclassify/classifiers.py, what is the default number of initial solutions (initial) of "
            "the MaxP classifier?",
            Answer([number_term(1000)], [number_term(10), number_term(100), number_term(1000000)]),
            right=("1000", "initial=1000"),
            wrong=("10", "100"),
            quick=True,
        )
    )

    # notebook: the answers are the notebooks' own outputs
    cells1 = src.notebook(nb1)
    table = output_of(cells1, "mc.MaximumBreaks(y, k=4)")
    first = int(re.findall(r"\|\s*(\d+)", table)[0])
    counts = [int(n) for n in re.findall(r"\|\s*(\d+)", table)]
    add(
        Task(
            "nb-maxbreaks-first-class",
            "notebook",
            f"In {nb1}, how many observations fall in the first class of MaximumBreaks(y, k=4)?",
            Answer([number_term(first)], [number_term(n) for n in {*counts[1:], sum(counts)} if n != first]),
            right=(str(first), f"{first} counties are in the first class."),
            wrong=(str(counts[1]), str(sum(counts))),
            quick=True,
        )
    )
    top = output_of(cells1, "y.max()").strip()
    add(
        Task(
            "nb-example-max",
            "notebook",
            f"What is the largest value of the example data, as {nb1} shows it?",
            Answer(
                [regex_term(top, rf"(?<![\d.]){re.escape(top)}(?![\d])")],
                [text_term("0.13"), text_term("2417.15")],
            ),
            right=(top, f"y.max() is {top}"),
            wrong=("0.13", "2417.15"),
        )
    )
    legend = re.search(
        r'get_legend_classes\(fmt="([^"]+)"\)', "\n".join(c["source"] for c in src.notebook(nb2))
    )
    assert legend is not None
    fmt = legend.group(1)
    add(
        Task(
            "nb-legend-integer-format",
            "notebook",
            f"Which format string does {nb2} pass to get_legend_classes to show the classes as integers?",
            Answer([text_term(fmt)], [text_term("{:.2f}"), text_term("{:.1f}"), text_term("{:d}")]),
            right=(f'"{fmt}"', f'fmt="{fmt}"'),
            wrong=("{:.2f}", "{:d}"),
        )
    )
    pooled = [
        int(n) for n in re.findall(r"\d+", output_of(src.notebook(nb4), "res.global_classifier.counts"))
    ]
    assert len(set(pooled)) == 1, pooled
    add(
        Task(
            "nb-pooled-global-counts",
            "notebook",
            f"In {nb4}, with k=4, how many observations does the global classifier put in each class?",
            Answer([number_term(pooled[0])], [number_term(5), number_term(20), number_term(12)]),
            right=(str(pooled[0]), f"array([{', '.join(map(str, pooled))}])"),
            wrong=("5", "20"),
        )
    )

    # multi-hop
    assert any("mapclassify.classify(" in c["source"] for c in src.notebook(nb6))
    src.has("mapclassify/_classify_API.py", "def classify(")
    add(
        Task(
            "hop-notebook-classify",
            "multi-hop",
            f"{nb6} calls mapclassify.classify. Which file of the project defines that function?",
            Answer(
                [path("mapclassify/_classify_API.py", bare=True)],
                [path(classifiers, bare=True), path("mapclassify/__init__.py"), path("mapclassify/util.py")],
            ),
            right=(
                "mapclassify/_classify_API.py",
                "classify is defined in _classify_API.py (imported in __init__.py).",
            ),
            wrong=("mapclassify/__init__.py", "mapclassify/classifiers.py"),
            quick=True,
        )
    )
    src.has(classifiers, "class Quantiles(MapClassifier):")
    src.has(classifiers, "    def get_legend_classes(self, fmt=FMT):")
    add(
        Task(
            "hop-legend-method-class",
            "multi-hop",
            f"{nb2} calls get_legend_classes on a Quantiles classifier. In which class is that method "
            "defined?",
            Answer(
                [name_term("MapClassifier")],
                [name_term("Quantiles"), name_term("KClassifiers"), name_term("Pooled")],
            ),
            right=(
                "MapClassifier",
                "In the base class MapClassifier (classifiers.py), which Quantiles extends.",
            ),
            wrong=("Quantiles", "Pooled"),
        )
    )

    # exact
    message = src.has(classifiers, 'f"Fewer unique values ({nu}) than specified classes ({k})."')
    add(
        Task(
            "exact-fisherjenks-message",
            "exact",
            "What message does FisherJenks raise when the data has fewer unique values than classes? Quote "
            "it as the code writes it.",
            Answer(
                [regex_term("Fewer unique values", r"Fewer unique values\s*\(")],
                [text_term("Not enough unique values")],
            ),
            right=(message, "Fewer unique values ({nu}) than specified classes ({k})."),
            wrong=("Not enough unique values in array to form {k} classes.",),
        )
    )

    # file-count
    code_cells = sum(c["cell_type"] == "code" for c in src.notebook(nb2))
    add(
        count_task(
            "fcount-legends-code-cells",
            "file-count",
            f"How many code cells does {nb2} have?",
            code_cells,
            said="code cells",
        )
    )
    subclasses = src.count(classifiers, r"^class \w+\(MapClassifier\):")
    add(
        count_task(
            "fcount-mapclassifier-subclasses",
            "file-count",
            "How many classes in mapclassify/classifiers.py derive directly from MapClassifier?",
            subclasses,
            said="classes",
        )
    )

    # edits
    add(
        edit_task(
            src,
            "edit-boxplot-hinge",
            "Change the default hinge of BoxPlot.__init__ (in mapclassify/classifiers.py) from 1.5 to 3.0.",
            [
                (
                    Edit(
                        classifiers, "def __init__(self, y, hinge=1.5):", "def __init__(self, y, hinge=3.0):"
                    ),
                    r"def __init__\(self, y, hinge=3\.0?\):",
                )
            ],
            wrong_edits=[
                [Edit(classifiers, "def __init__(self, y, hinge=1.5):", "def __init__(self, y, hinge=1.3):")],
                [Edit(classifiers, "self.hinge = hinge", "self.hinge = 3.0")],
            ],
            quick=True,
        )
    )
    add(
        edit_task(
            src,
            "medit-rename-head_tail_breaks",
            "In mapclassify/classifiers.py, rename the function head_tail_breaks to _head_tail_breaks and "
            "update every call of it.",
            [
                (
                    Edit(
                        classifiers,
                        "def head_tail_breaks(values, cuts):",
                        "def _head_tail_breaks(values, cuts):",
                    ),
                    r"def _head_tail_breaks\(values, cuts\):",
                ),
                (
                    Edit(
                        classifiers,
                        "return head_tail_breaks(values[values > mean], cuts)",
                        "return _head_tail_breaks(values[values > mean], cuts)",
                    ),
                    r"return _head_tail_breaks\(values\[values > mean\], cuts\)",
                ),
                (
                    Edit(
                        classifiers, "bins = head_tail_breaks(x, bins)", "bins = _head_tail_breaks(x, bins)"
                    ),
                    r"bins = _head_tail_breaks\(x, bins\)",
                ),
            ],
            wrong_edits=[
                [
                    Edit(
                        classifiers,
                        "def head_tail_breaks(values, cuts):",
                        "def _head_tail_breaks(values, cuts):",
                    )
                ],
                [
                    Edit(
                        classifiers,
                        "def head_tail_breaks(values, cuts):",
                        "def _head_tail_breaks(values, cuts):",
                    ),
                    Edit(
                        classifiers, "bins = head_tail_breaks(x, bins)", "bins = _head_tail_breaks(x, bins)"
                    ),
                ],
            ],
        )
    )
    check_unique(tasks)
    return located(tasks, WHERE)


_CLS = "mapclassify/classifiers.py"
_NB1, _NB2 = "notebooks/01_maximum_breaks.ipynb", "notebooks/02_legends.ipynb"
#: Where each answer stands (the lines it rests on, notebooks as their cell view), by task; line and edit
#: tasks carry their own.
WHERE: dict[str, list[Where]] = {
    "locate-Pooled": [Where("mapclassify/pooling.py", "class Pooled")],
    "locate-load_example": [Where(_CLS, "def load_example(")],
    "value-default-K": [Where(_CLS, "K = 5")],
    "value-boxplot-hinge": [Where(_CLS, "def __init__(self, y, hinge=1.5)")],
    "count-CLASSIFIERS": [Where(_CLS, "CLASSIFIERS = (", until=")")],
    "cross-tests-greedy": [Where("mapclassify/tests/test_greedy.py", "from ..greedy import greedy")],
    "grep-numba-warning": [Where(_CLS, "Numba not installed", until="UserWarning")],
    "big-maxp-initial": [Where(_CLS, "initial=1000")],
    "nb-maxbreaks-first-class": [Where(_NB1, "# out: array([52,")],
    "nb-example-max": [Where(_NB1, "# out: 4111.45")],
    "nb-legend-integer-format": [Where(_NB2, 'get_legend_classes(fmt="{:.0f}")')],
    "nb-pooled-global-counts": [Where("notebooks/04_pooled.ipynb", "# out: array([15, 15, 15, 15])")],
    "hop-notebook-classify": [
        Where("notebooks/06_api.ipynb", "mapclassify.classify(y"),
        Where("mapclassify/_classify_API.py", "def classify("),
    ],
    "hop-legend-method-class": [
        Where(_NB2, "get_legend_classes"),
        Where(_CLS, "def get_legend_classes("),
        Where(_CLS, "class MapClassifier:"),
    ],
    "exact-fisherjenks-message": [Where(_CLS, "Fewer unique values")],
    "fcount-legends-code-cells": [Where(_NB2, "[code]", every=True)],
    "fcount-mapclassifier-subclasses": [Where(_CLS, "(MapClassifier):", every=True)],
}
