"""The package's floor plan, read from its source: the layers, no import circle, no import that climbs.

Every module's imports are read with `ast` — at the top of the file, inside a function (a late import)
and under ``if TYPE_CHECKING:`` alike, since a type-only import still says which module knows which —
and checked against ``LAYERS``, the stack that ``docs/architecture.md`` shows (a test checks the two
tables are one). A module may import its own layer and the layers below it; a package's ``__init__``
re-exporting its own modules is not an import between modules.

Offenders that work in progress still has to remove may be listed in the ``KNOWN_*`` constants (all three
are empty now: no circle, no climb, no module over 600 lines): a new offender fails at once, the "none at
all" tests are expected to fail while a list is not empty, and a list entry that is no longer true fails
too, so the lists only shrink. Nor do the engine, the loop or the contracts name a tool: what a call did is
asked of its outcome or its toolset.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from twinny_magics.tools.registry import TOOLS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "twinny_magics"
DOC = ROOT / "docs" / "architecture.md"

#: The longest a module may be: one a person can hold in their head.
MAX_LINES = 600

#: The stack, lowest layer first. A name ending in ``/`` is a folder (every module in it); ``twinny_magics``
#: is the package's own ``__init__``. A module imports only from its own layer and the ones below.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "_lazy",
        "version",
        "errors",
        "redact/",
        "inert",
        "conversation",
        "text_tokens",
        "estimate",
        "budget",
        "window_warning",
        "changes",
        "events",
        "usage",
        "contracts",
        "notes",
        "unanswered",
        "modes",
        "protocol/",
        "options",
        "outline",
        "retrieval",
        "naming",
        "tally",
        "sections",
        "cells",
    ),
    ("engine/",),
    ("servers/", "tools/", "models/", "cell_log"),
    ("settings", "loop"),
    ("sessions/",),
    ("display/",),
    ("agent",),
    ("experiment/",),
    ("magic", "magic_line", "twinny_magics"),
)

# --- what other work in progress still has to remove (the integrator empties these) -------------------

#: Import circles known today, each as the modules it may span (a circle inside one of these is known).
KNOWN_CIRCLES: tuple[frozenset[str], ...] = ()

#: Imports that climb known today: (importing module, imported module).
KNOWN_CLIMBS: frozenset[tuple[str, str]] = frozenset()

#: Modules over MAX_LINES known today (paths inside twinny_magics/), each with whoever splits it.
KNOWN_LARGE: frozenset[str] = frozenset()


# --- reading the imports --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arrow:
    """``source`` imports ``target``; ``kind`` is ``top``, ``late`` (in a function) or ``typing``."""

    source: str
    target: str
    kind: str
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({self.kind}, line {self.line})"


def module_name(package: Path, path: Path) -> str:
    """``twinny_magics.tools.files`` for ``twinny_magics/tools/files.py``; a package is its ``__init__``."""
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_of(package: Path) -> dict[str, Path]:
    """Every module of the package, by name."""
    return {module_name(package, path): path for path in sorted(package.rglob("*.py"))}


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """The package's module that importing ``name`` runs last: ``name`` or the nearest package above it."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: Mapping[str, Path]
) -> set[str]:
    if isinstance(node, ast.Import):
        found = (_known(alias.name, modules) for alias in node.names)
        return {name for name in found if name}
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        stem = ".".join([*base, *([node.module] if node.module else [])])
    else:
        stem = node.module or ""
    out = set()
    for alias in node.names:
        # `from a import b`: the module a.b when there is one, else a name a holds.
        name = _known(f"{stem}.{alias.name}", modules)
        if name is not None and name != _known(stem, modules):
            out.add(name)
        elif (holder := _known(stem, modules)) is not None:
            out.add(holder)
    return out


def arrows_of(package: Path) -> list[Arrow]:
    """Every import between the package's modules, its kind and line (a package's own re-exports left out)."""
    modules = modules_of(package)
    found: list[Arrow] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        _walk(tree, module, path.name == "__init__.py", modules, found, late=False, typing=False)
    return found


def _walk(
    node: ast.AST,
    module: str,
    is_package: bool,
    modules: Mapping[str, Path],
    found: list[Arrow],
    *,
    late: bool,
    typing: bool,
) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for inner in child.body:
                _walk_one(inner, module, is_package, modules, found, late=late, typing=True)
            for inner in child.orelse:
                _walk_one(inner, module, is_package, modules, found, late=late, typing=typing)
        else:
            _walk_one(child, module, is_package, modules, found, late=late, typing=typing)


def _walk_one(
    node: ast.AST,
    module: str,
    is_package: bool,
    modules: Mapping[str, Path],
    found: list[Arrow],
    *,
    late: bool,
    typing: bool,
) -> None:
    if isinstance(node, ast.Import | ast.ImportFrom):
        kind = "typing" if typing else "late" if late else "top"
        for target in sorted(_targets(node, module, is_package, modules)):
            reexport = is_package and target.startswith(module + ".")
            if target != module and not reexport:
                found.append(Arrow(module, target, kind, node.lineno))
    function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    _walk(node, module, is_package, modules, found, late=late or function, typing=typing)


def circles(modules: Iterable[str], arrows: Iterable[Arrow]) -> list[frozenset[str]]:
    """The import circles: each set of two or more modules that all reach one another (Tarjan)."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for arrow in arrows:
        graph.setdefault(arrow.source, set()).add(arrow.target)
        graph.setdefault(arrow.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(frozenset(group))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def unit(module: str) -> str:
    """The layer table's name for a module: ``tools/`` for ``twinny_magics.tools.files``, ``agent``…"""
    parts = module.split(".")
    if len(parts) == 1:
        return parts[0]
    folder = PACKAGE / parts[1]
    return f"{parts[1]}/" if folder.is_dir() else parts[1]


def layer_of(units: Iterable[Iterable[str]]) -> dict[str, int]:
    """Each table name's layer, the lowest 0."""
    return {name: number for number, names in enumerate(units) for name in names}


def climbs(arrows: Iterable[Arrow], layers: Mapping[str, int]) -> list[Arrow]:
    """The imports from a layer to one above it."""
    return [a for a in arrows if layers[unit(a.target)] > layers[unit(a.source)]]


def line_counts(package: Path) -> dict[str, int]:
    """Lines of each module, by its path inside the package."""
    return {
        str(path.relative_to(package)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(package.rglob("*.py"))
    }


MODULES = modules_of(PACKAGE)
ARROWS = arrows_of(PACKAGE)
LAYER = layer_of(LAYERS)


def _within_known(circle: frozenset[str]) -> bool:
    return any(circle <= known for known in KNOWN_CIRCLES)


# --- the reader itself ----------------------------------------------------------------------------------


def test_the_reader_sees_top_level_late_and_type_only_imports_and_the_circles_they_make(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from pkg import a\n")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def f():\n    from pkg.sub import c\n")
    (package / "sub" / "__init__.py").write_text("from .c import thing\n")
    (package / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import x\nthing = 1\n"
    )
    (package / "d.py").write_text("import pkg.sub.c\nfrom pkg.sub import thing\n")
    arrows = arrows_of(package)
    assert {(a.source, a.target, a.kind) for a in arrows} == {
        ("pkg.a", "pkg.b", "top"),
        ("pkg.b", "pkg.sub.c", "late"),
        ("pkg.sub.c", "pkg.a", "typing"),
        ("pkg.d", "pkg.sub.c", "top"),
        ("pkg.d", "pkg.sub", "top"),
    }
    assert circles(modules_of(package), arrows) == [frozenset({"pkg.a", "pkg.b", "pkg.sub.c"})]


def test_an_import_of_a_higher_layer_is_a_climb() -> None:
    layers = layer_of((("conversation",), ("agent",)))
    up = Arrow("twinny_magics.conversation", "twinny_magics.agent", "typing", 1)
    down = Arrow("twinny_magics.agent", "twinny_magics.conversation", "top", 1)
    assert climbs([up, down], layers) == [up]


# --- the layer table ------------------------------------------------------------------------------------


def test_every_module_has_one_layer_and_the_table_names_only_modules_there_are() -> None:
    names = [name for layer in LAYERS for name in layer]
    assert len(names) == len(set(names)), "a name is in two layers"
    units = {unit(module) for module in MODULES}
    assert sorted(units - set(names)) == [], "modules without a layer: add them to LAYERS and the doc's table"
    assert sorted(set(names) - units) == [], "LAYERS names modules the package no longer has"


def doc_layers(text: str) -> tuple[tuple[str, ...], ...]:
    """The layers the doc's table shows (top row highest), lowest first."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"^\| \d+ \|", line)]
    numbered = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        numbered[int(cells[0])] = tuple(re.findall(r"`([^`]+)`", cells[1]))
    assert sorted(numbered) == list(range(1, len(numbered) + 1)), (
        "the layers are numbered 1, 2, … from the bottom"
    )
    return tuple(numbered[number] for number in sorted(numbered))


def test_the_layer_table_in_the_architecture_doc_is_this_one() -> None:
    assert doc_layers(DOC.read_text(encoding="utf-8")) == LAYERS


# --- circles --------------------------------------------------------------------------------------------


def test_no_new_import_circle() -> None:
    new = [sorted(c) for c in circles(MODULES, ARROWS) if not _within_known(c)]
    ties = [str(a) for a in ARROWS if any(a.source in c and a.target in c for c in new)]
    assert not new, "import circles:\n" + "\n".join(ties)


@pytest.mark.xfail(bool(KNOWN_CIRCLES), reason="KNOWN_CIRCLES: work in progress", strict=True)
def test_no_import_circle_at_all() -> None:
    assert circles(MODULES, ARROWS) == []


def test_every_known_circle_is_still_there() -> None:
    found = circles(MODULES, ARROWS)
    gone = [sorted(k) for k in KNOWN_CIRCLES if not any(c <= k for c in found)]
    assert not gone, f"no longer a circle, take it out of KNOWN_CIRCLES: {gone}"


# --- climbs ---------------------------------------------------------------------------------------------


def test_no_new_import_that_climbs() -> None:
    new = [str(a) for a in climbs(ARROWS, LAYER) if (a.source, a.target) not in KNOWN_CLIMBS]
    assert not new, "imports from a lower layer to a higher one:\n" + "\n".join(new)


@pytest.mark.xfail(bool(KNOWN_CLIMBS), reason="KNOWN_CLIMBS: work in progress", strict=True)
def test_no_import_that_climbs_at_all() -> None:
    assert [str(a) for a in climbs(ARROWS, LAYER)] == []


def test_every_known_climb_is_still_there() -> None:
    found = {(a.source, a.target) for a in climbs(ARROWS, LAYER)}
    assert sorted(KNOWN_CLIMBS - found) == [], "no longer climbs, take it out of KNOWN_CLIMBS"


# --- sizes ----------------------------------------------------------------------------------------------


def test_no_new_module_over_600_lines() -> None:
    large = {path: lines for path, lines in line_counts(PACKAGE).items() if lines > MAX_LINES}
    new = {path: lines for path, lines in large.items() if path not in KNOWN_LARGE}
    assert not new, f"modules over {MAX_LINES} lines: {new}"


@pytest.mark.xfail(bool(KNOWN_LARGE), reason="KNOWN_LARGE: work in progress", strict=True)
def test_no_module_over_600_lines_at_all() -> None:
    assert {path: n for path, n in line_counts(PACKAGE).items() if n > MAX_LINES} == {}


def test_every_known_large_module_is_still_large() -> None:
    counts = line_counts(PACKAGE)
    assert sorted(p for p in KNOWN_LARGE if counts.get(p, 0) <= MAX_LINES) == [], "take it out of KNOWN_LARGE"


# --- the loop names no tool ------------------------------------------------------------------------------


def test_the_engine_and_the_loop_key_nothing_on_a_tools_name() -> None:
    # What a call did comes from its outcome or its toolset (contracts.effects_of), never from a name.
    sources = [*sorted((PACKAGE / "engine").glob("*.py")), PACKAGE / "loop.py", PACKAGE / "contracts.py"]
    named = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}"
        for path in sources
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in TOOLS
    ]
    assert named == [], "a tool's name in the engine:\n" + "\n".join(named)
