"""What a question names — files and definitions — and what a chunk gains for holding them.

Pure: no I/O. ``named_in`` reads a question's named files (``a/b.py``) and definitions (``merge_with``,
``X.y``, ``the class curry``); the ranked search (`tools.search_index`) adds candidates by
``named_queries`` and scores them with ``named_bonus``; ``hop_names`` gives the names a
second look should find. Split from `retrieval`, whose words and chunks it uses.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .retrieval import STOPWORDS, identifier_parts

_WORD = re.compile(r"\w+")

#: A file as a question names it: a path with a folder, or a file name with a known extension.
_NAMED_PATH = re.compile(
    # Each part starts as a name does: "-s/--strict" is an option's two spellings, not a path.
    r"(?<![\w/.-])(?:[\w.][\w.-]*/)+(?:[\w.][\w.-]*)?\w|(?<![\w/.-])[\w.-]*\w\.(?:py|pyi|ipynb|cfg|toml|ini|rst|md|txt|json|ya?ml|"
    r"js|ts|jsx|tsx|go|rs|java|c|h|cpp|hpp|rb|sh|r|jl|sql)(?![\w])",
    re.IGNORECASE,
)
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(])")
#: A name after the word that says what it is ("the class curry", "function fold", "def f", "constant K").
_KIND_NAME = re.compile(
    r"\b(?:class|def|function|method|constant|variable|exception|sentinel|decorator|fixture|enum|struct)"
    r"\s+`?([A-Za-z_]\w*)`?",
    re.IGNORECASE,
)
#: A name said to be defined ("is groupby defined") or to act ("does memoize raise").
_DEFINED_NAME = re.compile(
    r"\b([A-Za-z_]\w*)`?\s+(?:is\s+)?(?:defined|declared|set)\b|\bdoes\s+`?([A-Za-z_]\w*)`?\s+(?:raise|warn)\b"
    r"|\btests\s+(?:for|of)\s+(?:the\s+\w+\s+)?`?([A-Za-z_]\w*)"
)
#: "X in a/b.py" and "a/b.py's X".
_IN = rf"`?\s+(?:in|of|from)\s+`?(?:{_NAMED_PATH.pattern})"
_NAME_IN_PATH = re.compile(rf"(?<![\w.])(?P<name>[A-Za-z_][\w.]*){_IN}")
_PATHS_NAME = re.compile(rf"(?:{_NAMED_PATH.pattern})`?'s\s+`?(?P<name>[A-Za-z_][\w.]*)")
_QUOTED = re.compile(r"`([A-Za-z_][\w.]*)(?:\(\))?`")
#: A function written as called with nothing: "which format does cli() set".
_CALLED = re.compile(r"(?<![\w.`])([A-Za-z_]\w*)\(\)")
_ASKS_DEFINITION = re.compile(r"\bdefin(?:es|ed|ing)\b|\bdefinition\s+of\b", re.IGNORECASE)
_HYPHENATED = re.compile(r"(?<![\w./-])[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+(?![\w/-])")
_NOT_HYPHENATED = frozenset(
    """non so well built top one two three read write self e multi sub semi up co re pre post first
    second third last high low long short full half all""".split()  # noqa: SIM905 (a word list)
)
_NOT_NAMES = STOPWORDS | frozenset({"it", "which", "this", "that", "one", "each"})
#: Plural words for kinds of things in code: "the special commands in a/b.py" names no ``commands``
#: (written so, lowercase; ``COMMANDS in a.py`` is a name).
_KIND_PLURALS = frozenset(
    """commands functions classes methods tests options rules keys settings lines files imports calls
    exceptions errors constants variables fields hooks plugins cells notebooks modules tables columns
    values entries items arguments parameters definitions names strings messages warnings words types
    decorators fixtures subclasses""".split()  # noqa: SIM905 (a word list)
)
#: Words after a kind's word that say what it does, not its name ("the variable names a file").
_VERBS = frozenset(
    """names holds has had sets gets takes returns calls uses reads writes raises gives keeps stores points
    refers means contains lists says shows""".split()  # noqa: SIM905 (a word list)
)


@dataclass(frozen=True)
class Named:
    """What a question names: files (as written) and definitions, each a chain outer first
    (``PluginManager.register`` is ``("PluginManager", "register")``)."""

    paths: tuple[str, ...] = ()
    names: tuple[tuple[str, ...], ...] = ()
    #: The question asks where a name is defined ("which class defines it?"), not what a file does.
    definition: bool = False

    def __bool__(self) -> bool:
        return bool(self.names)

    def names_file(self, path: str) -> bool:
        """Whether ``path`` is a file the question names (its whole path, or a tail of it)."""
        return any(path == p or path.endswith("/" + p.lstrip("./")) for p in self.paths)


#: A folder as a question names it without a path: "tests/", "the rules folder", "the docs directory".
_FOLDER_WORDS = re.compile(
    r"(?<![\w/.-])([\w.-]*\w)/(?![\w/])|`?\b([\w.-]*\w)`?\s+(?:folder|directory|dir|subfolder|package)\b",
    re.IGNORECASE,
)


def named_folders(question: str, paths: Sequence[str]) -> list[str]:
    """The workspace folders a question names (``yamllint/rules``, ``tests/``, "the docs folder"): each as
    the folder's whole path, from the workspace's file ``paths``."""
    written_as = [*named_in(question).paths]
    written_as += [m.group(1) or m.group(2) for m in _FOLDER_WORDS.finditer(question)]
    found: list[str] = []
    for written in dict.fromkeys(w for w in written_as if w.lower() not in _NOT_NAMES):
        tail = written.strip("/").lstrip("./")
        if not tail or any(p == tail or p.endswith("/" + tail) for p in paths):
            continue  # a file, not a folder
        for path in paths:
            at = path.find(tail + "/")
            if at == 0 or (at > 0 and path[at - 1] == "/"):
                folder = path[: at + len(tail)]
                if folder not in found:
                    found.append(folder)
                break
    return found


def named_in(question: str) -> Named:
    """The files and definitions a question names: a path (``a/b.py``, ``setup.cfg``); a name written as
    code (``merge_with``, ``EqualityHashKey``, ``MAX_SIZE``), dotted (``X.y``), quoted in backticks, called
    (``cli()``), after the word for its kind (``the class curry``, ``constant K``) or said to be defined
    (``is groupby defined``)."""
    paths = tuple(dict.fromkeys(m.group(0).strip(".") for m in _NAMED_PATH.finditer(question)))
    chains: list[tuple[str, ...]] = []
    for pattern in (_NAME_IN_PATH, _PATHS_NAME):
        for match in pattern.finditer(question):
            name = match.group("name")
            if name.lower() not in _NOT_NAMES and name not in _KIND_PLURALS:
                chains.append(tuple(name.split(".")))
    rest = _NAMED_PATH.sub(" ", question)
    for match in _DOTTED.finditer(rest):
        chains.append(tuple(match.group(1).split(".")))
    rest = _DOTTED.sub(" ", rest)
    for pattern in (_QUOTED, _CALLED, _KIND_NAME, _DEFINED_NAME):
        for match in pattern.finditer(rest):
            name = match.group(match.lastindex or 1)
            if name.lower() not in _NOT_NAMES and not (pattern is _KIND_NAME and name in _VERBS):
                chains.append(tuple(name.split(".")))
    for token in _WORD.findall(rest):
        if len(token) > 2 and ("_" in token or token[1:] != token[1:].lower()) and not token.isdigit():
            chains.append((token,))
    # A hyphenated name: a YAML or TOML key, a rule's id, a package ("line-length", "requires-python"); not
    # an option (``--max``, read apart) and not English ("built-in", "non-empty", "top-level").
    for found in _HYPHENATED.finditer(rest):
        if found.group(0).split("-", 1)[0].lower() not in _NOT_HYPHENATED:
            chains.append((found.group(0),))
    return Named(paths, tuple(dict.fromkeys(chains))[:6], _ASKS_DEFINITION.search(question) is not None)


#: A file's kind as a question says it after the file's name ("the session log notebook").
_KIND_WORDS = {".ipynb": ("notebook",), ".py": ("module", "script", "file"), ".md": ("file", "document")}


def named_by_words(question: str, paths: Sequence[str]) -> tuple[str, ...]:
    """The files a question names in words rather than as a path: the name's words followed by its kind
    ("the session log notebook" for ``notebooks/session_log.ipynb``, "the tutorial notebook", "the
    slow log module", "the config file"); the words alone are a topic ("which key bindings" is not
    ``key_bindings.py``). At most three; none when several files share the words (it did not say which)."""
    said = " " + " ".join(_WORD.findall(question.lower())) + " "
    found: list[str] = []
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        stem, dot, suffix = name.rpartition(".")
        stem, suffix = (stem, "." + suffix.lower()) if dot and stem else (name, "")
        parts = [p for p in re.split(r"[_\-.\s]+", stem.lower()) if p]
        if not parts or any(not p.isalnum() for p in parts):
            continue
        words = " ".join(parts)
        kinds = (*_KIND_WORDS.get(suffix, ()), "file")
        if all(len(p) > 1 for p in parts) and any(f" {words} {kind} " in said for kind in kinds):
            found.append(path)
        elif "/" not in path.strip("/").removeprefix("docs/") and (
            any(
                said_kind in said and stem.upper().startswith(names)
                for said_kind, names in _FILE_KINDS.items()
            )
            or (
                _ASKS_RELEASE.search(said) is not None and stem.upper().startswith(_FILE_KINDS[" changelog "])
            )
        ):
            found.append(path)  # "according to the changelog": CHANGELOG.rst, at the top or in docs/
    return tuple(found) if len(found) <= 3 else ()


#: "In which release did it add --list-files", "since which version is X deprecated": the changelog.
_ASKS_RELEASE = re.compile(
    r" (?:which|what) (?:release|version) (?:\w+ ){0,6}?(?:add|added|adds|introduce[sd]?|remove[sd]?|"
    r"deprecate[sd]?|drop(?:ped|s)?|fix(?:ed|es)?|change[sd]?|rename[sd]?|support(?:ed|s)?) "
    r"|(?:added|introduced|removed|deprecated|dropped|fixed) in (?:which|what) (?:release|version) "
)
#: Files a question names by what they are: the project's changelog, its readme, its licence.
_FILE_KINDS = {
    " changelog ": ("CHANGELOG", "CHANGES", "HISTORY", "NEWS", "RELEASE"),
    " change log ": ("CHANGELOG", "CHANGES", "HISTORY", "NEWS"),
    " release notes ": ("CHANGELOG", "CHANGES", "HISTORY", "NEWS", "RELEASE"),
    " readme ": ("README",),
    " license ": ("LICENSE", "LICENCE", "COPYING"),
    " licence ": ("LICENSE", "LICENCE", "COPYING"),
}


@functools.lru_cache(maxsize=256)
def _definition_pattern(name: str) -> re.Pattern[str]:
    n = re.escape(name)
    return re.compile(
        rf"^[ \t]*(?:(?:async[ \t]+)?def|class|function|const|let|var|fn|func|struct|enum|type)[ \t]+{n}\b"
        # An assignment at the top, in a class body or a section: one deeper is a local of a method (a
        # question's "the commands in a.py" is no ``commands = …`` inside LiteCli.run_cli).
        rf"|^(?:\t|[ ]{{0,4}}){n}[ \t]*(?::[^=\n]*)?=(?!=)"
        # A key: of a dict literal ('replay_dir': …, a configuration's defaults), of YAML, or a field.
        rf"|^[ \t]*(?:(['\"]){n}\1|{n})[ \t]*:(?![:=])",
        re.MULTILINE,
    )


def defining_line(lines: Sequence[str], name: str) -> int | None:
    """The index in ``lines`` of the first line that defines ``name`` (a def, a class, an assignment)."""
    pattern = _definition_pattern(name)
    for index, line in enumerate(lines):
        if name in line and pattern.match(line):
            return index
    return None


#: What a chunk gains for defining what the question names: more than BM25 gives (about 5-20) and more
#: than a top-level definition of a searched word (20), in the file the question names most.
NAMED_BONUS = 30.0
NAMED_FILE_BONUS = 15.0
#: A chunk of the named file that uses a named name (the question asks what that file does with it).
NAMED_USE_BONUS = 25.0
NAMED_ELSEWHERE_BONUS = 0.0
#: A chunk of the file a question names when it names no definition ("in a.ipynb, how many … each
#: class?"): the question is about that file, so its best chunk comes before another file's docstring
#: with more of the question's words (BM25 alone ranked a library's docstring over the notebook named).
NAMED_PATH_BONUS = 15.0


def named_bonus(named: Named, path: str, lines: Sequence[str], enclosing: str | None) -> float:
    """What a chunk of ``path`` (its ``lines``; ``enclosing``: the top-level definition it lies in) gains
    for what the question names. In a file it names: most for defining a named name (for ``X.y``, ``y``
    inside ``X``), some for using one, a little for being there. Elsewhere: for defining one, less when
    the question named a file (it asks about that file: "what does a.ipynb pass to f" wants the call)."""
    in_file = named.names_file(path)
    defines = uses = False
    for chain in named.names:
        last = chain[-1]
        if not any(last in line for line in lines):
            continue
        uses = uses or any(re.search(rf"(?<!\w){re.escape(last)}(?!\w)", line) for line in lines)
        outer = chain[:-1]
        if outer and enclosing not in outer and not any(o.lower() in path.lower() for o in outer):
            continue
        defines = defines or defining_line(lines, last) is not None
    if in_file:
        # A chunk inside a named definition (its body goes on past the def's chunk) is as good as a use.
        inside = enclosing is not None and any(chain[-1] == enclosing for chain in named.names)
        return NAMED_BONUS + NAMED_FILE_BONUS if defines else NAMED_USE_BONUS if uses or inside else 3.0
    if defines:  # a question naming a file asks about it, unless it asks where the name is defined
        return NAMED_ELSEWHERE_BONUS if named.paths and not named.definition else NAMED_BONUS
    return 0.0


def named_queries(named: Named) -> list[str]:
    """FTS5 MATCH expressions for chunks that may define what the question names, the most specific
    first: its words in the file named, its words beside its owner's (``X.y``), a definition's name."""
    if not named.names:
        return []
    words = " OR ".join(_quoted(chain[-1]) for chain in named.names)
    queries = []
    paths = [p.rsplit("/", 1)[-1].split(".")[0] for p in named.paths]
    paths = [p for p in paths if p and p.replace("_", "").replace("-", "").isalnum()]
    if paths:
        queries.append(f"(words : ({words})) AND (path : ({' OR '.join(_quoted(p) for p in paths)}))")
    outer = [chain for chain in named.names if len(chain) > 1]
    if outer:
        inner = " OR ".join(_quoted(chain[-1]) for chain in outer)
        owners = " OR ".join(_quoted(part) for chain in outer for part in chain[:-1])
        queries.append(f"(words : ({inner})) AND (words : ({owners}) OR path : ({owners}))")
    queries.append(f"names : ({words})")
    return queries


def _quoted(word: str) -> str:  # an FTS5 string: no word is read as an operator
    return '"' + identifier_parts(word)[0].replace('"', '""') + '"'


_BASES = re.compile(r"^\s*class\s+(\w+)\s*\(([^)]*)\)")
_ASSIGNED = re.compile(r"^\s*(?:\w+\.)*(\w+)\s*(?::[^=]*)?=\s*([A-Za-z_][\w.]*)\s*(?:#.*)?$")


def hop_names(named: Named, lines: Sequence[str]) -> tuple[list[str], list[str]]:
    """Names a second look should find, from lines that define what the question names: the name a
    named attribute is set to (``self._run = _multicall``: what it *is*), and the base classes of a
    named class (what it builds on)."""
    wanted = {chain[-1] for chain in named.names}
    values: list[str] = []
    bases: list[str] = []
    for line in lines:
        if (found := _BASES.match(line)) and found.group(1) in wanted:
            bases += [b.strip().rsplit(".", 1)[-1] for b in found.group(2).split(",") if "=" not in b]
        elif (assigned := _ASSIGNED.match(line)) and assigned.group(1) in wanted:
            values.append(assigned.group(2).rsplit(".", 1)[-1])
    return [_hop_name(n, wanted) for n in dict.fromkeys(values) if _hop_name(n, wanted)], [
        n for n in dict.fromkeys(bases) if _hop_name(n, wanted)
    ]


def _hop_name(name: str, wanted: set[str]) -> str:
    return name if name.isidentifier() and name not in wanted and name != "object" else ""


#: Top-level folders that are never the project's package.
_NOT_PROJECT = frozenset(
    {"tests", "test", "testing", "docs", "doc", "examples", "benchmarks", "scripts", "src"}
)


def project_names(paths: Sequence[str]) -> frozenset[str]:
    """The names of the workspace's own packages, lower case: each folder at the top (or under
    ``src/``) that holds an ``__init__.py`` (``cookiecutter``, ``pluggy`` for ``src/pluggy``)."""
    found = set()
    for path in paths:
        parts = path.split("/")
        if parts[-1] != "__init__.py":
            continue
        if len(parts) == 2 or (len(parts) == 3 and parts[0] == "src"):
            found.add(parts[-2].lower())
    return frozenset(found - _NOT_PROJECT)


def project_words(terms: Sequence[str], question: str, projects: frozenset[str]) -> set[str]:
    """The ``terms`` that are the project's name written as a word, not as code (not `` `x` ``, ``x()``,
    ``x.y``): "which replies does cookiecutter accept" asks about the project, not its function
    ``cookiecutter``; every file of it holds the word, so it tells no chunk from another."""
    said = set()
    for term in terms:
        written = re.findall(rf"(?<![\w.]){re.escape(term)}(?!\w)", question, re.IGNORECASE)
        if any(w not in (w.lower(), w.capitalize()) for w in written):
            continue  # written as a class's name ("the LiteCli class"), not the project's
        if term in projects and not re.search(
            rf"`{re.escape(term)}\b|\b{re.escape(term)}(?:\(|\.\w)", question, re.I
        ):
            said.add(term)
    return said
