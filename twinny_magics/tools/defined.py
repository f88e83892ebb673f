"""The head start's definitions block, for a question that asks where something is defined or what it
derives from ("notebooks/a.ipynb calls merge_configs. Which file defines that function?", "the commands
in a/b.py are registered with a decorator: which file defines it?", "which class defines the method
get_legend_classes?", "what does X derive from?"): the lines that define each name the question gives,
found by grep over the whole workspace, with the class a method is in; for a name set to another
(``self._inner = _multicall``) or a class built on others, their definitions too: the second hop. For a
question that names a file and asks about "the decorator" without naming it, the names are the
decorators that file applies.

The ranked evidence fills a small window with the file the question names (a notebook's cell that
imports the function, the module that uses the decorator) and the model answered with that file. The
block is a few lines, before the evidence, within its share of the head start. Files are read through
the workspace's confinement, secrets masked, as every tool reads them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from twinny_magics import naming, tally
from twinny_magics.errors import WorkspaceError
from twinny_magics.retrieval import Chunk
from twinny_magics.tools import files, grep
from twinny_magics.tools.base import ToolLimits
from twinny_magics.tools.paths import Confinement
from twinny_magics.tools.search_focus import COPIES, TEST_PATH

#: "defines", "defined", "definition", "derives from", "base class", "inherits", "subclass of".
_ASKS = re.compile(
    r"\bdefin(?:e|es|ed|ing|ition)\b|\bderiv(?:e|es|ed|ing)\b|\b(?:base|parent|super)[ -]?class(?:es)?\b"
    r"|\binherit(?:s|ed|ing)?\b|\bsubclass(?:es|ed)?\b",
    re.IGNORECASE,
)
_BASES_ASKED = re.compile(r"\bderiv|\b(?:base|parent|super)[ -]?class|\binherit|\bsubclass", re.IGNORECASE)
_DECORATOR = re.compile(r"\bdecorat(?:or|ors|ed|es)\b", re.IGNORECASE)
_APPLIED = re.compile(r"^\s*@([A-Za-z_][\w.]*)")
#: At most this many names are looked up (the question's first), each shown at most DEFINED_EACH times,
#: in at most DEFINED_LINES lines and DEFINED_SHARE of the head start.
DEFINED_NAMES = 3
DEFINED_EACH = 2
DEFINED_LINES = 8
DEFINED_SHARE = 0.15
#: The grep looks at this many matching lines at most.
DEFINED_SCAN = 200
DEFINED_SECONDS = 2.0
#: A decorator named by a file is read from its first this many lines.
DECORATOR_FILE_LINES = 5000

#: Source code, where a definition is code (not a config's ``commands = …`` or a doc's example).
CODE_FILE = re.compile(
    r"\.(?:py|pyi|pyx|js|mjs|ts|tsx|jsx|go|rs|java|kt|scala|rb|php|c|h|cc|cpp|hpp|cs|swift|jl|r|lua)$",
    re.IGNORECASE,
)
_ASSIGNED_NAME = re.compile(r"=\s*([A-Za-z_]\w*)\s*(?:#.*)?$")
_CLASS_BASES = re.compile(r"^\s*class\s+\w+\s*\(([^)]*)\)")


def asks_definition(question: str) -> bool:
    """Whether ``question`` asks where something is defined, or what a class derives from."""
    return _ASKS.search(question) is not None


def definitions(conf: Confinement, limits: ToolLimits, question: str, chars: int) -> tuple[str, Chunk | None]:
    """The definitions block for ``question`` within ``chars`` ('' when it asks no such thing, names
    nothing, or nothing it names is defined in the workspace) and, with a block, for "the decorator" of a
    file it names, that decorator's definition as a chunk to lead the evidence (`_applied_definition`)."""
    if not asks_definition(question) or tally.asks_count(question):  # a count has its own block
        return "", None
    named = naming.named_in(question)
    chains = [chain for chain in named.names if chain[-1].isidentifier() and len(chain[-1]) >= 3]
    applied = _decorators(conf, named.paths) if _DECORATOR.search(question) else []
    chains += [(name,) for name in applied]
    tests = re.search(r"\btests?\b", question, re.IGNORECASE) is not None
    bases = _BASES_ASKED.search(question) is not None
    rows: list[str] = []
    seen: set[str] = set()
    looked = 0
    # What each name's grep found, kept for the lead (which looks outside the tests): one grep a name.
    known: dict[str, list[str]] = {}
    for chain in dict.fromkeys(chains):
        if looked >= DEFINED_NAMES:
            break
        seen.add(chain[-1])
        found = _defined(conf, limits, chain, tests)
        if len(chain) == 1 and not tests:
            known[chain[0]] = found
        looked += bool(found)
        rows += [row for row in found if row not in rows]
        # The second hop: what a name is set to; what a class is built on, when that is asked.
        for name in _next_hop(found, bases):
            if name not in seen:
                seen.add(name)
                rows += [row for row in _defined(conf, limits, (name,), tests) if row not in rows]
    if not rows:
        return "", None
    lead = (
        "Where the names the question gives are defined, found by the loop with grep over the whole "
        "workspace (a method after its class; then what a name is set to or built on):"
    )
    text = "\n".join([lead, *rows[:DEFINED_LINES]])
    if len(text) > chars:
        cut = text.rfind("\n", 0, chars + 1)  # a row that ends at chars fits
        text = text[:cut] if cut > len(lead) else ""
    return (text, _applied_definition(conf, limits, applied, known)) if text else ("", None)


_DEF_OR_CLASS = re.compile(r"\s*(?:async\s+def|def|class)\s")
_NOT_HOPS = frozenset({"object", "None", "True", "False", "Exception", "self", "cls"})


def _next_hop(rows: Sequence[str], bases: bool) -> list[str]:
    """The names ``rows`` (definitions) point on to: an assignment's plain name, a class's bases."""
    out: list[str] = []
    for row in rows:
        text = row.split(": ", 1)[-1]
        if (assigned := _ASSIGNED_NAME.search(text)) and not _DEF_OR_CLASS.match(text):
            out.append(assigned.group(1))
        if bases and (found := _CLASS_BASES.match(text)):
            out += [b.strip().rsplit(".", 1)[-1] for b in found.group(1).split(",") if "=" not in b]
    return [n for n in dict.fromkeys(out) if n.isidentifier() and n not in _NOT_HOPS]


def _definition_grep(name: str) -> str:
    n = re.escape(name)
    # A def or class at any depth; an assignment at the top level or to an attribute (grep shows neither
    # indent nor what holds an assignment: a local ``commands = []`` is no definition).
    return rf"^\s*(?:async\s+def|def|class)\s+{n}\b|^(?:\s*(?:self|cls)\.)?{n}\s*(?::[^=\n]*)?=(?!=)"


def _defined(conf: Confinement, limits: ToolLimits, chain: tuple[str, ...], tests: bool) -> list[str]:
    """The rows (``path:line: text``, a method's with its class) that define ``chain``'s last name: in
    code files (not docs, notebooks, configuration or build copies; tests only when asked); in a file the
    chain names when some are; a def or class (top-level first) and only then an assignment; at most
    `DEFINED_EACH`."""
    name, owners = chain[-1], [o.lower() for o in chain[:-1]]
    wide = replace(limits, grep_matches=DEFINED_SCAN, grep_per_file=DEFINED_SCAN)
    try:
        found = grep.grep(conf, wide, _definition_grep(name), None, call_seconds=DEFINED_SECONDS)
    except WorkspaceError:
        return []
    places: list[tuple[int, str, str, str]] = []
    for row in found.splitlines():
        path, sep, rest = row.partition(":")
        number, sep2, text = rest.partition(": ")
        if not (sep and sep2 and number.isdigit()) or not CODE_FILE.search(path) or COPIES.search(path):
            continue
        if TEST_PATH.search(path) and not tests:
            continue
        # grep shows a line without its indent, a def inside another with "[in class X]" after it.
        inside = "  [in " in text or text.startswith(("self.", "cls."))
        places.append(((0 if _DEF_OR_CLASS.match(text) else 2) + inside, path, number, text))
    if any(p[0] < 2 for p in places):  # a def or class: not the names set to it elsewhere
        places = [p for p in places if p[0] < 2]
    in_owner = [p for p in places if owners and any(o in p[1].lower() for o in owners)]
    best = sorted(in_owner or places, key=lambda p: p[0])[:DEFINED_EACH]
    return [f"{path}:{number}: {text}" for _, path, number, text in best]


#: The decorator's definition leads the evidence with at most this many of its lines.
LEAD_LINES = 14


def _applied_definition(
    conf: Confinement, limits: ToolLimits, applied: Sequence[str], known: dict[str, list[str]]
) -> Chunk | None:
    """The first definition (a def or class) of the decorators a named file ``applied``, as a chunk to
    lead the evidence (its lines to its body's end, at most `LEAD_LINES`): the ranking knows the name only
    from the file (the question gives none), and with the named file's chunks first the model answered
    with that file. ``known``: the rows the block's grep found outside the tests, by name. None when
    there is none."""
    for name in applied:
        rows = known[name] if name in known else _defined(conf, limits, (name,), tests=False)
        for row in rows:
            path, _, rest = row.partition(":")
            number = int(rest.partition(":")[0])
            if not _DEF_OR_CLASS.match(rest.partition(": ")[2]):
                continue
            try:
                reader = files.TextLines(conf.resolve(path), keep=400)
                lines = [head for _, (head, _) in zip(range(number - 1 + LEAD_LINES), reader, strict=False)]
            except (OSError, WorkspaceError, ValueError):
                return None
            body = lines[number - 1 :]
            indent = len(body[0]) - len(body[0].lstrip()) if body else 0
            end = next(
                (
                    k
                    for k, line in enumerate(body[1:], 1)
                    if line.strip()
                    and len(line) - len(line.lstrip()) <= indent
                    and not line.lstrip().startswith((")", "]", "}"))
                ),
                len(body),
            )
            shown = tuple(files.shown_text("\n".join(body[:end])).split("\n"))
            return Chunk(path, number, number + len(shown) - 1, shown, (name,))
    return None


def _decorators(conf: Confinement, paths: Sequence[str]) -> list[str]:
    """The decorators the named files apply, the most applied first (their last dotted part)."""
    applied: Counter[str] = Counter()
    for path in paths:
        try:
            reader = files.TextLines(conf.resolve(path), keep=400)
            lines = [head for _, (head, _) in zip(range(DECORATOR_FILE_LINES), reader, strict=False)]
        except (OSError, WorkspaceError, ValueError):
            continue
        for line in lines:
            if found := _APPLIED.match(line):
                applied[found.group(1).rsplit(".", 1)[-1]] += 1
    skip = {"property", "staticmethod", "classmethod", "abstractmethod", "wraps", "dataclass", "cache"}
    return [name for name, _ in applied.most_common() if name not in skip and name.isidentifier()][:2]
