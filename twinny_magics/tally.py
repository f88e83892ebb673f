"""What a file holds, counted: the numbers a count question asks for, made by the loop, not the model.

Pure: a file's lines in, short lines of counts out, no I/O. A small model counts what it is shown badly:
it counts the two definitions a chunk shows of six, or stops at twenty of thirty-one names. For a
question that asks how many and names a file, the head start gives the file's counts over the whole of
it (`tally`): for Python (by ``ast``) its top-level functions (and those named ``test_*``), its classes
and what each derives from directly, the methods of each class, the functions each decorator marks,
and the items of each list, tuple, set or dict assigned a name; for a notebook (its cell view) its
cells by kind; for Markdown its headings by level; for reStructuredText its section titles by
underline; for INI and TOML its sections with their settings; for YAML its keys, the keys under each
mapping and the items of each list; for any text its lines. Python counts also say how often a function
calls the same thing (``parser.add_argument`` 12 times in ``run``). A folder the question names gets its
files counted (`folder_counts`). Each count shows a few of the names it counts, so the model can tell
which count is the one asked for; the counts whose words the question uses come first.

Text is attacker text: a parse that fails or recurses too deep gives fewer counts, never an error; a
name is cut to `NAME_CHARS` and made one line.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence

from twinny_magics.outline import file_suffix
from twinny_magics.sections import markdown_titles, rst_titles

#: A question that asks for a count; not one for a measure ("above how many seconds", "how many bytes").
ASKS_COUNT = re.compile(r"\bhow\s+many\b|\bnumber\s+of\b|\bcount\b", re.IGNORECASE)
#: A setting whose value is a number ("the default number of classes", "the maximum number of retries").
_A_SETTING = re.compile(r"\b(?:default|maximum|minimum|max|min)\s+number\s+of\b", re.IGNORECASE)
_MEASURE = re.compile(
    r"\bhow\s+many\s+(?:milli|micro|nano)?(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|bytes?|"
    r"[kmgt]i?b|kilobytes?|megabytes?|characters?|chars?|pixels?|percent|degrees?|dollars?|euros?)\b",
    re.IGNORECASE,
)
#: Files longer than this (characters) are counted by their lines only.
TALLY_CHARS = 1_000_000
#: At most this many count lines a file (the first lines are the file's broadest counts).
MAX_LINES = 14
#: At most this many names shown beside a count (the first ones and the last).
SHOWN_NAMES = 4
NAME_CHARS = 40


def asks_count(question: str) -> bool:
    """Whether ``question`` asks how many of something there are."""
    if (_MEASURE.search(question) or _A_SETTING.search(question)) and len(ASKS_COUNT.findall(question)) == 1:
        return False
    return ASKS_COUNT.search(question) is not None


def tally(path: str, lines: Sequence[str], names: Collection[str] = (), question: str = "") -> list[str]:
    """Counts of what the file ``path`` holds, one line each, broadest first: ``lines`` is the file as
    read_file shows it (a notebook's cell view). Counts of a definition in ``names`` (names the question
    gives) come before the others of their kind; a notebook's outputs and collections are counted for a
    ``question`` about what it finds, shows or lists."""
    text = "\n".join(lines)
    blank = sum(1 for line in lines if not line.strip())
    out = [f"lines: {len(lines)} ({len(lines) - blank} not blank)"]
    if len(text) > TALLY_CHARS:
        return out
    suffix = file_suffix(path)
    wanted = {name.lower() for name in names}
    counted: list[tuple[str, str]] = []  # (the name a count is about, or '' for the file's broad counts)
    try:
        if suffix in ("py", "pyi", "pyw"):
            counted = python_counts(text, wanted)
        elif suffix == "ipynb":
            counted = notebook_counts(lines, _ASKS_FOUND.search(question) is not None)
        elif suffix in ("md", "markdown"):
            counted = markdown_counts(lines)
        elif suffix == "rst":
            counted = rst_counts(lines)
        elif suffix in ("ini", "cfg", "conf", "toml") or _looks_ini(lines):
            counted = ini_counts(lines)
        elif suffix in ("yaml", "yml") or (suffix not in _NOT_YAML and _looks_yaml(lines)):
            counted = yaml_counts(lines)
    except (RecursionError, MemoryError, ValueError, SyntaxError):
        counted = []
    # The broad counts, then those of a name the question gives, then the rest in the file's order; in
    # each group, first the counts that say more of the question's words ("how many test functions":
    # the functions named test* before all functions).
    said = {_stem(word) for name in wanted for word in _WORDS.findall(name)}
    said |= {_stem(w) for w in _WORDS.findall(question.lower()) if len(w) >= 4} - _FRAME

    def order(pair: tuple[str, str]) -> tuple[int, int]:
        about = pair[0].lower()
        group = 0 if not about else 1 if about in wanted or about.rsplit(".", 1)[-1] in wanted else 2
        # What is counted, not where: a function's name ("in test_run_on_strings") says nothing of it.
        label = _IN_FUNCTION.sub("", pair[1].split(":", 1)[0])
        return group, -sum(1 for w in {_stem(word) for word in _WORDS.findall(label.lower())} if w in said)

    counted.sort(key=order)
    # The file's line count is asked for as lines; else it only stands first where the count asked for
    # should (a model answered "29 lines" for "how many rules does relaxed.yaml configure").
    if counted and question and not re.search(r"\blines?\b", question, re.IGNORECASE):
        return [line for _, line in counted][: MAX_LINES - 1] + out
    out += [line for _, line in counted]
    return out[:MAX_LINES]


_WORDS = re.compile(r"[a-z0-9]+")
#: A question's words that ask, not what is counted.
_FRAME = frozenset({"many", "does", "define", "defined", "there", "have", "whole", "file", "count", "number"})
_IN_FUNCTION = re.compile(r" (?:in \S+|at the top level)$")


def _stem(word: str) -> str:
    """A word without its plural ending, and a longer one without ``ed``/``or``: "tests" and "test",
    "decorators" and "decorated" are one word here."""
    word = word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
    return word[:-2] if len(word) > 6 and word.endswith(("ed", "or")) else word


def _name(text: str) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= NAME_CHARS else one[: NAME_CHARS - 1] + "…"


def _some(names: Sequence[str]) -> str:
    """A few of ``names``: all when few, else the first ones, '…' and the last."""
    shown = [_name(n) for n in names]
    if len(shown) <= SHOWN_NAMES + 1:
        return ", ".join(shown)
    return ", ".join(shown[:SHOWN_NAMES]) + ", …, " + shown[-1]


def _count(what: str, names: Sequence[str], at: str = "") -> str:
    where = f" {at}" if at else ""
    return f"{what}{where}: {len(names)}" + (f" ({_some(names)})" if names else "")


# -- Python ------------------------------------------------------------------------------------------------


def python_counts(text: str, wanted: Collection[str] = ()) -> list[tuple[str, str]]:
    """Counts of Python source, each with the name it is about ('' for the file's own): functions,
    classes by direct base, decorated functions, the items of each collection literal assigned a name
    (at the top level or in a class), the methods of each class, and what a function calls often (of
    the functions in ``wanted``, lower-case names the question gives, and the `CALL_LINES` most)."""
    tree = ast.parse(text)
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    names = [f.name for f in functions]
    tests = [name for name in names if name.startswith("test")]
    out = [("", _count("top-level functions (def)", names))]
    if tests and len(tests) != len(names):
        out.append(("", _count("top-level functions named test*", tests)))
    if classes:
        out.append(("", _count("top-level classes", [c.name for c in classes])))
    by_base: dict[str, list[str]] = {}
    for c in classes:
        for base in c.bases:
            by_base.setdefault(_dotted(base), []).append(c.name)
    out += [(b, _count("classes deriving directly from", found, b)) for b, found in by_base.items() if b]
    decorated: dict[str, list[str]] = {}
    for node in _functions(tree):
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            decorated.setdefault(_dotted(target), []).append(node.name)
    out += [(d, _count("functions decorated", found, "@" + d)) for d, found in decorated.items() if d]
    out += _collections(tree)
    every = list(_calls(tree))  # (function, times, callee)
    made = [m for m in every if m[1] >= LOCAL_ITEMS]
    most = sorted((m for m in made if m[0].lower() not in wanted), key=lambda m: m[1], reverse=True)
    calls = [
        (name, f"calls to {callee}() {_where(name)}: {times}")
        for name, times, callee in made
        if name.lower() in wanted or (name, times, callee) in most[:CALL_LINES]
    ]
    for c in classes:  # last: a file of many small classes would fill the lines with them
        methods = [n.name for n in c.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if methods:
            out.append((c.name, _count(f"methods of class {_name(c.name)}", methods)))
            methods_tests = [m for m in methods if m.startswith("test")]
            if methods_tests and len(methods_tests) != len(methods):
                out.append((c.name, _count(f"methods of class {_name(c.name)} named test*", methods_tests)))
    return out + _raised(tree) + calls + _across(every)  # last: every function that calls one thing often


def _raised(tree: ast.Module) -> list[tuple[str, str]]:
    """``raise`` statements by the exception they raise (``raise X(...)`` and ``raise X``), for each
    raised twice or more: "how many times does config.py raise ConfigError"."""
    raised: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            raised[_dotted(exc)] += 1
    return [
        (name, f"raise statements of {name} in the file: {n}")
        for name, n in raised.items()
        if name and n >= 2
    ]


def _where(function: str) -> str:
    return f"in {_name(function)}" if function else "at the top level"


def _across(every: list[tuple[str, int, str]]) -> list[tuple[str, str]]:
    """For a callee called in two functions or more, `LOCAL_ITEMS` times or more in one of them, the
    whole file's count; for a method called on several objects in one function (``parser.add_argument``
    and ``group.add_argument``), `LOCAL_ITEMS` times or more in all, its count whatever the object."""
    out = []
    by_callee: dict[str, list[tuple[str, int]]] = {}
    by_method: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for function, times, callee in every:
        by_callee.setdefault(callee, []).append((function or "the top level", times))
        if "." in callee:
            owner, method = callee.rsplit(".", 1)
            by_method.setdefault((function, method), []).append((owner, times))
    for callee, places in by_callee.items():
        if len(places) >= 2 and max(n for _, n in places) >= LOCAL_ITEMS:
            total, parts = sum(n for _, n in places), _some([f"{f} {n}" for f, n in places])
            out.append((callee, f"calls to {callee}() in the whole file: {total} ({parts})"))
    for (function, method), owners in by_method.items():
        if len(owners) >= 2 and sum(n for _, n in owners) >= LOCAL_ITEMS:
            total, parts = sum(n for _, n in owners), _some([f"{o} {n}" for o, n in owners])
            out.append((method, f"calls to .{method}() on any object {_where(function)}: {total} ({parts})"))
    return out


def _functions(tree: ast.Module) -> Iterable[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The top-level functions and the methods of top-level classes."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` for a name or an attribute chain; '' for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return _name(".".join(reversed(parts)))


#: Of the functions a question does not name, at most this many lines of calls (a test file's every test
#: calls its helper three times).
CALL_LINES = 3


#: Calls of Python's own functions (``len``, ``list``) are no count anyone asks for.
_BUILTINS = frozenset(dir(builtins))


def _calls(tree: ast.Module) -> Iterator[tuple[str, int, str]]:
    """``(function, times, callee)`` for each thing a function (or the module's own statements, function
    '') calls: "register_special_command" five times in one method is five commands registered,
    ``parser.add_argument`` twelve times is twelve options."""
    scopes: list[tuple[str, list[ast.AST]]] = [
        (
            "",
            [
                n
                for n in tree.body
                if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            ],
        )
    ]
    scopes += [(function.name, list(function.body)) for function in _functions(tree)]  # not its decorators
    for name, nodes in scopes:
        called: Counter[str] = Counter()
        for node in nodes:
            called.update(_dotted(n.func) for n in ast.walk(node) if isinstance(n, ast.Call))
        for callee, n in called.items():
            if callee and callee not in _BUILTINS:
                yield name, n, callee


_KINDS = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set", ast.Dict: "dict"}


#: A collection inside a function is counted from this many items (a function's small tuples are noise).
LOCAL_ITEMS = 3


def _collections(tree: ast.Module) -> Iterator[tuple[str, str]]:
    """``(name, count line)`` for each list, tuple, set or dict literal assigned (or added) to a name: at
    the top level, in a class, and (of `LOCAL_ITEMS` or more) in a function, under the function's name
    ("the list in check_if_sqlitedotcommand")."""
    bodies: list[tuple[str, str, list[ast.stmt]]] = [("", "", tree.body)]
    bodies += [("", f"{n.name}.", n.body) for n in tree.body if isinstance(n, ast.ClassDef)]
    for function in _functions(tree):
        inner = [n for n in ast.walk(function) if isinstance(n, ast.stmt) and n is not function]
        bodies.append((function.name, "", inner))
    for local, owner, body in bodies:
        for node in body:
            if isinstance(node, ast.Assign):
                targets, value, verb = node.targets, node.value, "="
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value, verb = [node.target], node.value, "="
            elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
                targets, value, verb = [node.target], node.value, "+="
            else:
                continue
            kind = _KINDS.get(type(value))
            items = value.keys if isinstance(value, ast.Dict) else getattr(value, "elts", [])
            # `found = []` starts a collection: it lists nothing.
            if kind is None or not items or (local and len(items) < LOCAL_ITEMS):
                continue
            shown = [_item(item) for item in items]
            noun = "keys" if kind == "dict" else "items"
            at = f"line {node.lineno}, in {_name(local)}" if local else f"line {node.lineno}"
            for target in targets:
                if isinstance(target, ast.Name):
                    name = owner + target.id
                    what = f"{_name(name)} {verb} a {kind} of {len(items)} {noun} ({at})"
                    yield local or target.id, what + (f": {_some(shown)}" if shown else "")


def _item(node: ast.expr | None) -> str:
    if isinstance(node, ast.Constant):
        return repr(node.value) if isinstance(node.value, str) else str(node.value)
    if node is None:
        return "**"
    return _dotted(node) or type(node).__name__.lower()


# -- notebooks, Markdown, reStructuredText, INI ------------------------------------------------------------

_CELL = re.compile(r"^# cell (\d+) \[(\w+)\]")
_RAN = re.compile(r"^# cell \d+ \[code\] \(ran as \[\d+\]\)$")


#: A question about what a notebook found, shows or lists (its outputs' items are the count).
_ASKS_FOUND = re.compile(
    r"\b(?:finds?|found|shows?|shown|outputs?|prints?|printed|lists?|listed|returns?|returned|gives?|results?)\b",
    re.IGNORECASE,
)


def notebook_counts(lines: Sequence[str], found: bool = False) -> list[tuple[str, str]]:
    """A notebook's cells by kind, from its cell view (only headers numbered in order count: a cell's
    source cannot add a cell by writing a header)."""
    kinds: Counter[str] = Counter()
    ran = 0
    for line in lines:
        header = _CELL.match(line)
        if header and int(header.group(1)) == sum(kinds.values()) + 1:
            kinds[header.group(2)] += 1
            ran += _RAN.match(line) is not None
    if not kinds:
        return []
    # One line a kind, the kind's name by its number ("code cells: 7"): written "cells: 12 (7 code, 5
    # markdown)", the question's "how many code cells" was answered 12.
    out = [("", f"{kind} cells: {n}") for kind, n in kinds.most_common()]
    out.append(("", f"cells in all: {sum(kinds.values())}"))
    if kinds["code"]:
        out.append(("", f"code cells that ran (have an execution count): {ran}"))
    return out + _cell_collections(lines) if found else out


_OUT = "# out: "


def _cell_collections(lines: Sequence[str]) -> list[tuple[str, str]]:
    """What a notebook's code cells hold and show: each collection a cell assigns (as in a module), and
    each output that is a list, tuple, set or dict written out whole ("cell 3's output: a list of 4
    items"), read as a literal, never run."""
    out: list[tuple[str, str]] = []
    cell, kind = 0, ""
    source: list[str] = []

    def flush() -> None:
        if kind != "code" or not source:
            return
        try:
            tree = ast.parse("\n".join(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        for name, line in _collections(tree):
            out.append((name, re.sub(r"\(line (\d+)", rf"(cell {cell}", line, count=1)))

    outputs: list[tuple[int, str]] = []
    for number, line in enumerate(lines):
        header = _CELL.match(line)
        if header:
            flush()
            cell, kind, source = int(header.group(1)), header.group(2), []
        elif line.startswith(_OUT):
            alone = not any(
                0 <= k < len(lines) and lines[k].startswith(_OUT) for k in (number - 1, number + 1)
            )
            value = _literal(line[len(_OUT) :]) if alone else None  # an output of one line, whole
            if isinstance(value, (list, tuple, set, dict)) and value:
                noun = "keys" if isinstance(value, dict) else "items"
                shown = [repr(v) if isinstance(v, str) else _name(str(v)) for v in value]
                kind_ = type(value).__name__
                outputs.append(
                    (len(value), f"cell {cell}'s output: a {kind_} of {len(value)} {noun}: {_some(shown)}")
                )
        elif kind == "code" and not line.lstrip().startswith(("%", "!")):
            source.append(line)
    flush()
    # A few: the collections first assigned, the outputs that list the most (in the notebook's order); a
    # notebook of forty cells would fill the counts with them.
    most = sorted(outputs, key=lambda pair: -pair[0])[:NOTEBOOK_LINES]
    return [*out[:NOTEBOOK_LINES], *(("output", what) for size, what in outputs if (size, what) in most)]


#: At most this many of a notebook's collections, and as many of its outputs, among its counts.
NOTEBOOK_LINES = 3


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError):
        return None


def markdown_counts(lines: Sequence[str]) -> list[tuple[str, str]]:
    """Markdown headings by level (outside fenced code)."""
    levels: dict[int, list[str]] = {}
    for _, level, title in markdown_titles(lines):
        levels.setdefault(level, []).append(title)
    return [("", _titles(f"level-{n} headings ({'#' * n})", names)) for n, names in sorted(levels.items())]


def rst_counts(lines: Sequence[str]) -> list[tuple[str, str]]:
    """reStructuredText section titles by their adornment: the underline's character, and whether the
    title is overlined too, in order of first use, which is the level: the first is the top."""
    by_style: dict[tuple[str, bool], list[str]] = {}
    for _, adornment, title in rst_titles(lines):
        by_style.setdefault(adornment, []).append(title)
    out = []
    for (char, over), names in by_style.items():
        style = "over- and underlined" if over else "underlined"
        out.append(("", _titles(f"section titles {style} with {char!r}", names)))
    return out


_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*\b")


def _titles(what: str, names: Sequence[str]) -> str:
    """A count of headings, saying so when every one of them names a version (a changelog's releases)."""
    versions = len(names) > 1 and all(_VERSION.search(name) for name in names)
    return _count(what + (", each naming a version (a release)" if versions else ""), names)


#: Suffixes whose files are never read as YAML when they look like it.
_NOT_YAML = frozenset({"json", "txt", "csv", "tsv", "ipynb", "md", "rst", "html", "xml", "sql"})
_YAML_KEY = re.compile(
    r"""^(?:-\s+)?('[^']*'|"[^"]*"|[^\s#'"{\[\]&*!|>%@`-][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s+(.*))?$"""
)
_YAML_BLOCK = re.compile(r"^[|>][-+0-9]*\s*(?:#.*)?$")


def _looks_yaml(lines: Sequence[str]) -> bool:
    """Whether a file without a YAML suffix (``.yamllint``, ``.clang-format``) starts as YAML does: a
    document marker or two keys at the start of their lines before anything else."""
    keys = 0
    for line in lines[:40]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped == "---":
            return True
        if line[:1].isspace() or not _YAML_KEY.match(line):
            return keys >= 2
        keys += 1
    return keys >= 2


def yaml_counts(lines: Sequence[str]) -> list[tuple[str, str]]:
    """YAML (block style, read line by line, never loaded): the top-level keys, the keys under each
    mapping and the items of each list, each under the key that holds it ("keys under rules: 23"), and
    the keys under a mapping that share a value ("keys under rules set to disable: 6")."""
    keys: dict[tuple[str, ...], list[str]] = {}
    items: dict[tuple[str, ...], int] = {}
    # What is open: (indent, the key's path or None inside a list item, whether it is a list item).
    stack: list[tuple[int, tuple[str, ...] | None, bool]] = []
    block: int | None = None  # the indent of a key whose value is a block of text (`|`, `>`)
    seen: dict[tuple[str, ...], None] = {}  # the paths in the order the file shows them
    values: dict[tuple[str, ...], dict[str, list[str]]] = {}  # under each path, the keys by their value
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if block is not None and indent > block:
            continue
        block = None
        if stripped in ("---", "...") or stripped.startswith("%"):
            stack.clear()
            continue
        item = stripped == "-" or stripped.startswith("- ")
        while stack and (stack[-1][0] > indent or (stack[-1][0] == indent and (not item or stack[-1][2]))):
            stack.pop()
        parent = stack[-1][1] if stack else ()
        if parent is None:
            continue  # inside a list item: its own keys are not the mapping's
        seen.setdefault(parent)
        if item:
            items[parent] = items.get(parent, 0) + 1
            stack.append((indent, None, True))
            continue
        match = _YAML_KEY.match(stripped)
        if match is None:
            continue
        key, value = match.group(1).strip("'\""), (match.group(2) or "").strip()
        keys.setdefault(parent, []).append(key)
        if value and not value.startswith(("#", "|", ">", "&", "*", "{", "[")):
            values.setdefault(parent, {}).setdefault(value.split(" #", 1)[0].strip(), []).append(key)
        if not value or value.startswith("#"):
            stack.append((indent, (*parent, key), False))
        elif _YAML_BLOCK.match(value):
            block = indent
    out = []
    if keys.get(()):
        out.append(("", _count("top-level keys", keys[()])))
    if items.get(()):
        out.append(("", f"top-level list items: {items[()]}"))
    for path in seen:
        if not path:
            continue
        dotted = _name(".".join(path))
        if keys.get(path):
            out.append((path[-1], _count(f"keys under {dotted}", keys[path])))
            # "How many rules does it disable": the keys that share a value, by value (twice or more).
            shared = [(v, found) for v, found in values.get(path, {}).items() if len(found) >= 2]
            out += [
                (path[-1], _count(f"keys under {dotted} set to {_name(v)}", found)) for v, found in shared
            ]
        if items.get(path):
            out.append((path[-1], f"items in the list under {dotted}: {items[path]}"))
    return out


def folder_counts(folder: str, paths: Sequence[str]) -> list[str]:
    """The files in the workspace folder ``folder`` (``paths``: the workspace's files): those directly in
    it by kind, its subfolders, and all the files below it."""
    prefix = folder.strip("/") + "/"
    below = [p[len(prefix) :] for p in paths if p.startswith(prefix)]
    direct = [p for p in below if "/" not in p]
    folders = sorted({p.split("/", 1)[0] for p in below if "/" in p})
    kinds = Counter(file_suffix(p) or "no suffix" for p in direct)
    by_kind = ", ".join(f"{n} .{k}" if k != "no suffix" else f"{n} {k}" for k, n in kinds.most_common())
    out = [f"files directly in it: {len(direct)}" + (f" ({by_kind})" if by_kind else "")]
    for suffix in kinds:
        if suffix != "no suffix" and len(kinds) > 1:
            out.append(_count(f"its .{suffix} files", sorted(p for p in direct if file_suffix(p) == suffix)))
    if len(kinds) == 1 and direct:
        out.append(_count("their names", sorted(direct)))
    out.append(_count("subfolders", folders))
    out.append(f"files in it and its subfolders: {len(below)}")
    return out[:MAX_LINES]


_SECTION = re.compile(r"^\s*\[\[?([^\]\n]+)\]\]?\s*(?:[#;].*)?$")
_SETTING = re.compile(r"^\s*([^\s#;=:\[][^=:]*?)\s*[=:]")


def _looks_ini(lines: Sequence[str]) -> bool:
    return any(_SECTION.match(line) for line in lines[:50]) and any(
        _SETTING.match(line) for line in lines[:80]
    )


def ini_counts(lines: Sequence[str]) -> list[tuple[str, str]]:
    """INI or TOML sections, and the settings each holds (not commented out; a continuation line is not
    a setting)."""
    sections: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for line in lines:
        section = _SECTION.match(line)
        if section:
            current = []
            sections.append((section.group(1).strip(), current))
            continue
        setting = _SETTING.match(line)
        if setting and current is not None and not line[:1].isspace():
            current.append(setting.group(1).strip())
    if not sections:
        return []
    out = [("", _count("sections", [name for name, _ in sections]))]
    return out + [(name, _count(f"settings in [{_name(name)}]", keys)) for name, keys in sections]
