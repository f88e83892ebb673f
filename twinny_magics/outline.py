"""A source file's top-level definitions: what the workspace map lists and the search index weighs.

Pure: text in, definitions out, no I/O. Python (and a notebook's Python cells) is read by Python's own
``ast``; other languages by tree-sitter's official grammar packages when they are installed
(``pip install twinny_magics[outline]``: JavaScript, TypeScript, Go, Rust, Java, C, C++), else their
files are listed without definitions. One rule serves every grammar: a top-level node with a ``name``
field (or a C-style ``declarator`` leading to one, or a first child that has one: ``const X = …``,
``type T struct``) is a definition, and the named members of a class-like body are its members.

Text is attacker text: a parse that fails, recurses too deep or meets bytes it cannot read gives fewer
definitions, never an error; a file over `OUTLINE_CHARS` is not parsed at all.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

#: Files longer than this are listed without definitions (a parse of a huge or minified file costs more
#: than the map is worth).
OUTLINE_CHARS = 1_000_000
#: At most this many definitions a file, and members a definition, are kept.
MAX_DEFINITIONS = 400
MAX_MEMBERS = 40
NAME_CHARS = 80


@dataclass(frozen=True)
class Definition:
    """One top-level definition: its kind (``def``, ``class``, ``const``, ``function``, ``heading``…),
    its name, the line it starts on (1-based, as read_file numbers lines) and the names of its members."""

    kind: str
    name: str
    line: int
    members: tuple[str, ...] = ()


def file_suffix(path: str) -> str:
    """The lower-case suffix of a workspace path's file name (``py`` for ``a/b.PY``), '' for none."""
    return path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""


def outline(path: str, text: str) -> list[Definition]:
    """The top-level definitions of ``text``, the content of the workspace file ``path``.

    For a notebook, ``text`` is its cell view (read_file's lines: ``# cell N [kind]`` headers and each
    cell's source), so that the line numbers are the ones read_file shows.
    """
    if len(text) > OUTLINE_CHARS:
        return []
    suffix = file_suffix(path)
    try:
        if suffix in ("py", "pyi", "pyw"):
            found = python_outline(text)
        elif suffix == "ipynb":
            found = notebook_outline(text)
        else:
            found = _tree_sitter_outline(suffix, text)
    except (RecursionError, MemoryError, ValueError, SyntaxError):
        found = []
    return found[:MAX_DEFINITIONS]


# -- Python ----------------------------------------------------------------------------------------------

_PY_DEF = re.compile(r"^(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)
_PY_CONST = re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)", re.MULTILINE)


def python_outline(text: str, offset: int = 0) -> list[Definition]:
    """Top-level classes (with their methods), functions and assigned names of Python source.

    Source that does not parse (a file mid-edit) falls back to lines that start a definition.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _python_lines(text, offset)
    out: list[Definition] = []
    for node in tree.body:
        line = node.lineno + offset
        if isinstance(node, ast.ClassDef):
            members = tuple(
                _name(child.name)
                for child in node.body
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            )
            out.append(Definition("class", _name(node.name), line, members[:MAX_MEMBERS]))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(Definition("def", _name(node.name), line))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.extend(Definition("const", _name(t.id), line) for t in targets if isinstance(t, ast.Name))
    return out


def _python_lines(text: str, offset: int) -> list[Definition]:
    found = [(m.start(), Definition(m.group(1), _name(m.group(2)), 0)) for m in _PY_DEF.finditer(text)]
    found += [(m.start(), Definition("const", _name(m.group(1)), 0)) for m in _PY_CONST.finditer(text)]
    found.sort(key=lambda pair: pair[0])
    out = []
    for start, definition in found:
        line = text.count("\n", 0, start) + 1 + offset
        out.append(Definition(definition.kind, definition.name, line))
    return out


# -- notebooks --------------------------------------------------------------------------------------------

_CELL_HEADER = re.compile(r"^# cell \d+ \[(\w+)\]")
_HEADING = re.compile(r"^(#{1,6})\s+(\S.*)$")


def notebook_outline(text: str) -> list[Definition]:
    """A notebook's markdown headings and its code cells' definitions, at their cell-view line numbers."""
    out: list[Definition] = []
    for kind, first, lines in _cells(text.splitlines()):
        if kind == "markdown":
            for n, line in enumerate(lines):
                heading = _HEADING.match(line)
                if heading:
                    level = len(heading.group(1))
                    out.append(
                        Definition("#" * level, _name(heading.group(2).strip(), NAME_CHARS), first + n)
                    )
        elif kind == "code":
            # IPython's magics and shell lines are not Python: blanked, so the line numbers stay.
            source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)
            out.extend(python_outline(source, first - 1))
    return out


def _cells(lines: Sequence[str]) -> Iterator[tuple[str, int, list[str]]]:
    """(kind, first source line number, source lines) of each cell of a notebook's cell view."""
    kind, first, body = "", 0, list[str]()
    for number, line in enumerate(lines, start=1):
        header = _CELL_HEADER.match(line)
        if header:
            if kind:
                yield kind, first, body
            kind, first, body = header.group(1), number + 1, []
        elif kind:
            body.append(line)
    if kind:
        yield kind, first, body


# -- other languages: tree-sitter -------------------------------------------------------------------------

#: File suffix -> (grammar package, the function that returns its language).
GRAMMARS: dict[str, tuple[str, str]] = {
    "js": ("tree_sitter_javascript", "language"),
    "mjs": ("tree_sitter_javascript", "language"),
    "cjs": ("tree_sitter_javascript", "language"),
    "jsx": ("tree_sitter_javascript", "language"),
    "ts": ("tree_sitter_typescript", "language_typescript"),
    "mts": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rs": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "h": ("tree_sitter_c", "language"),
    "cc": ("tree_sitter_cpp", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "cxx": ("tree_sitter_cpp", "language"),
    "hpp": ("tree_sitter_cpp", "language"),
    "hh": ("tree_sitter_cpp", "language"),
}
_PARSERS: dict[str, Any] = {}
#: Node types that only wrap a definition (``export function f``, ``template <…> class C``).
_WRAPPERS = frozenset({"export_statement", "template_declaration", "decorated_definition"})
#: Node kinds shown as the word a reader expects.
_KIND_WORDS = (
    ("method", "method"),
    ("function", "function"),
    ("class", "class"),
    ("interface", "interface"),
    ("struct", "struct"),
    ("enum", "enum"),
    ("trait", "trait"),
    ("type", "type"),
    ("const", "const"),
    ("static", "static"),
    ("mod", "mod"),
    ("namespace", "namespace"),
    ("preproc_def", "define"),
    ("preproc_function_def", "define"),
    ("lexical", "const"),
    ("variable", "var"),
    ("var_", "var"),
    ("macro", "macro"),
    ("impl", "impl"),
)


def grammar_available(suffix: str) -> bool:
    """Whether files ending in ``.suffix`` can be outlined here (Python and notebooks always can)."""
    return suffix in ("py", "pyi", "pyw", "ipynb") or _parser(suffix) is not None


def _parser(suffix: str) -> Any:
    if suffix not in GRAMMARS:
        return None
    if suffix not in _PARSERS:
        module_name, function = GRAMMARS[suffix]
        try:
            import tree_sitter  # noqa: PLC0415 (optional)

            module = importlib.import_module(module_name)
            language: Callable[[], Any] = getattr(module, function)
            _PARSERS[suffix] = tree_sitter.Parser(tree_sitter.Language(language()))
        except (ImportError, AttributeError, ValueError, TypeError):
            _PARSERS[suffix] = None
    return _PARSERS[suffix]


def _tree_sitter_outline(suffix: str, text: str) -> list[Definition]:
    parser = _parser(suffix)
    if parser is None:
        return []
    tree = parser.parse(text.encode("utf-8", "replace"))
    out: list[Definition] = []
    for node in tree.root_node.named_children:
        found = _definition(node)
        if found is not None:
            out.append(found)
        if len(out) >= MAX_DEFINITIONS:
            break
    return out


def _definition(node: Any, depth: int = 0) -> Definition | None:
    if node.type in _WRAPPERS and depth < 3:
        inner = [
            c
            for c in node.named_children
            if c.type not in ("comment", "decorator", "template_parameter_list")
        ]
        return _definition(inner[-1], depth + 1) if inner else None
    name = _name_of(node)
    if name is None:
        return None
    body = node.child_by_field_name("body")
    members: list[str] = []
    if body is not None:
        for child in body.named_children:
            member = _name_of(child, deep=False)
            if member is not None and child.type not in ("field_declaration", "comment"):
                members.append(member)
            if len(members) >= MAX_MEMBERS:
                break
    return Definition(_kind(node.type), name, node.start_point[0] + 1, tuple(members))


def _name_of(node: Any, *, deep: bool = True) -> str | None:
    """The name a definition node declares: its ``name`` field, its declarator's, or its first child's."""
    current = node
    for _ in range(6):
        named = current.child_by_field_name("name")
        if named is not None and named.type not in ("template_argument_list",):
            text = _text(named)
            return text if text else None
        declarator = current.child_by_field_name("declarator")
        if declarator is None:
            break
        if declarator.type in ("identifier", "field_identifier", "type_identifier", "qualified_identifier"):
            return _text(declarator)
        current = declarator
    if node.type == "impl_item":  # Rust: `impl Point` and `impl Display for Point` are named by their type
        implemented = node.child_by_field_name("type")
        if implemented is not None:
            return _text(implemented)
    if deep and current is node and node.named_child_count:
        first = node.named_children[0]
        if first.type.endswith(("_spec", "_declarator", "declarator")):
            return _name_of(first, deep=False)
    return None


def _text(node: Any) -> str:
    raw: bytes = node.text or b""
    return _name(raw.decode("utf-8", "replace"))


def _kind(node_type: str) -> str:
    for key, word in _KIND_WORDS:
        if key in node_type:
            return word
    return node_type.split("_", 1)[0]


def _name(name: str, limit: int = NAME_CHARS) -> str:
    """A name as shown: one line, at most ``limit`` characters."""
    flat = " ".join(name.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
