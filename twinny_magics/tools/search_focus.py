"""What a question asks of a named definition, as the lines a chunk of it should hold to come first.

Pure: regular expressions over a question and chunks. The search (``search_index``) ranks a chunk of a
definition the question names (or of the file it names) first when it holds what is asked: the raise
or warning for "what does ``memoize`` raise", the parameter's default for "the default hinge of
``BoxPlot``"; and a chunk of a test file that uses a named name for "the tests for ``countby``". Each
measured on the development tasks (``benchmarks/bench_ranking.py``; see docs/performance.md).
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

from twinny_magics.naming import Named, defining_line
from twinny_magics.outline import Definition
from twinny_magics.retrieval import Chunk

#: What a chunk of a named definition (or of the named file) that raises or warns gains when the question
#: asks what is raised: above a definition's own bonus, so the raising line 60 lines below a ``def`` and
#: its docstring comes first (measured: 45 and 60 place fewer, 90-200 the same).
RAISE_BONUS = 90.0
_ASKS_RAISE = re.compile(r"\b(?:raises?|exception|error|message|warns?|warning)\b", re.IGNORECASE)
_RAISES = re.compile(r"^[ \t]*(?:raise\b|(?:warnings\.)?warn\()", re.MULTILINE)
#: What a chunk of a test file that uses a named name gains when the question asks for its tests: above
#: the name's own definition (+30, +20 as a top-level one), which is not what is asked (30: no change).
TESTS_BONUS = 60.0
ASKS_TESTS = re.compile(r"\btest(?:s|ed| file| files)?\b", re.IGNORECASE)
#: A question that leaves the tests out ("which modules of the package (not its tests) import X"): its
#: "tests" asks for no test file, and none is shown.
_NOT_TESTS = re.compile(
    r"\b(?:not|excluding|except|other\s+than|outside(?:\s+of)?|apart\s+from|besides|without)\s+"
    r"(?:(?:its|the|their|any|of|\w+'s)\s+){0,2}tests?\b",
    re.IGNORECASE,
)
#: What a test file's chunk loses when the question does not ask about tests: a test repeats the names and
#: words of what it tests, so BM25 ranks it beside (or above) the code that answers.
TEST_PENALTY = 4.0
TEST_PATH = re.compile(r"(?:^|/)(?:tests?|testing)/|(?:^|/)test_[^/]*$|_test\.py$")


def named_uses(named: Named, body: str) -> bool:
    """Whether ``body`` uses one of the names the question names (as a whole word)."""
    return any(re.search(rf"(?<!\w){re.escape(chain[-1])}(?!\w)", body) for chain in named.names)


_ASKS_DEFAULT = re.compile(r"\bdefaults?\b", re.IGNORECASE)
_SAID_PARAMETER = re.compile(
    r"`?(\w+)`?\s+(?:parameter|argument|keyword|option)\b|\b(?:parameter|argument)\s+`?(\w+)", re.IGNORECASE
)
#: Question words that are no parameter's name.
_NOT_PARAMETERS = frozenset({"default", "defaults", "value", "argument", "parameter", "classifier", "number"})


def from_focus(chunks: list[Chunk], focus: re.Pattern[str] | None) -> list[Chunk]:
    """Each chunk whose focus line is far down, shown from a few lines before it (a 40-line chunk is cut
    by the evidence's room before its last lines; the numbers stay the file's own)."""
    if focus is None:
        return chunks
    out = []
    for chunk in chunks:
        at = next((k for k, line in enumerate(chunk.lines) if focus.search(line)), None)
        if at is None or at <= FOCUS_BEFORE * 2:
            out.append(chunk)
            continue
        cut = at - FOCUS_BEFORE
        out.append(Chunk(chunk.path, chunk.start + cut, chunk.end, chunk.lines[cut:], (), chunk.score))
    return out


#: Lines kept before a focus line when a chunk is shown from it.
FOCUS_BEFORE = 4


def focus_of(words: str, terms: list[str], named: Named) -> re.Pattern[str] | None:
    """The lines a chunk of a named definition should hold to come first: a raise or a warning when the
    question asks what is raised, a parameter's default (``hinge=1.5``) when it asks for a default."""
    options = sorted(set(_OPTION.findall(words)))
    # "The --liteclirc option's default", "the help of --strict": its declaration.
    if options and (_ASKS_DEFAULT.search(words) or (len(options) == 1 and not named.paths)):
        return _declares(options)
    if _ASKS_ENV.search(words):  # the line that reads it, far down a long function
        return _READS_ENV
    if not named:
        return None
    if _ASKS_RAISE.search(words):
        return _RAISES
    if not _ASKS_DEFAULT.search(words):
        return None
    said = [m.group(1) or m.group(2) for m in _SAID_PARAMETER.finditer(words)]
    own = {chain[-1].lower() for chain in named.names}
    # A named name the question calls a parameter ("the keyword_casing parameter of X.__init__") is the
    # one: not the words it is made of ("casing" would find ``casing=self.keyword_casing``).
    params = [p.lower() for p in said if p.lower() in own] or [
        t for t in terms if len(t) >= 3 and t not in own and t not in _NOT_PARAMETERS
    ]
    if not params:
        return None
    return re.compile(rf"\b(?:{'|'.join(map(re.escape, params))})\s*=(?!=)", re.IGNORECASE)


def assigned_focus(named: Named) -> re.Pattern[str] | None:
    """The line that sets a named attribute of an object to a name (``self._inner_hookexec = _multicall``)."""
    names = "|".join(re.escape(chain[-1]) for chain in named.names)
    if not names:
        return None
    return re.compile(rf"^[ \t]*(?:\w+\.)+(?:{names})[ \t]*(?::[^=\n]*)?=[ \t]*[A-Za-z_]")


def written_as(name: str, question: str) -> bool:
    """Whether a question that has ``name``'s word wrote it as that name: a name with capitals only when
    the question keeps them ("the LiteCli class"), since the same word in lower case names the project
    ("litecli's default configuration file"), not the class ``LiteCli``. A question not given: yes."""
    if not question or name == name.lower():
        return True
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", question) is not None


#: A question about an application's defaults or settings that names no definition ("which key bindings
#: does it use by default?", "which table format does the default configuration file set?"): the answer
#: is a line of a configuration file, which BM25 ranked below the code that reads the setting.
_ASKS_SETTING = re.compile(
    r"\bby\s+default\b|\bdefault\s+(?:config(?:uration)?|settings?)\b|\b(?:config(?:uration)?|settings?)\s+files?\b",
    re.IGNORECASE,
)
#: A configuration file by its name: ``setup.cfg``, ``tox.ini``, ``pyproject.toml``, ``default.yaml``,
#: ``liteclirc``, ``.pylintrc``.
_CONFIG_NAME = re.compile(r"\.(?:ini|cfg|conf|toml|ya?ml|properties)$|^\.?\w+rc$", re.IGNORECASE)
#: What a chunk of a configuration file (not a test's copy) gains for such a question: about what BM25
#: gives a chunk with two of its words.
SETTING_BONUS = 8.0


def setting_bonus(question: str, named: Named | None, path: str) -> float:
    """What a chunk of ``path`` gains for a question about defaults or settings that names no definition."""
    if named or not _ASKS_SETTING.search(question) or TEST_PATH.search(path):
        return 0.0
    return SETTING_BONUS if _CONFIG_NAME.search(path.rsplit("/", 1)[-1]) else 0.0


#: A question for a message's words ("what message does it print when …? Quote it exactly."): the answer
#: is a string in the code, which BM25 ranked below docstrings that talk about the same thing.
_ASKS_MESSAGE = re.compile(r"\b(?:messages?|warnings?|quote|exact(?:ly)?|wording)\b", re.IGNORECASE)
#: A one-line string literal (not a docstring's quotes) of eight characters or more.
_LITERAL = re.compile(r"(?<![\w\\])([\"'])((?:(?!\1)[^\\\n]|\\.){8,})\1")
#: A string that is an option's or a command's description (``help="Warn before running a destructive
#: query."``), which the program never says when it runs.
_DESCRIBES = re.compile(r"\b(?:help|description|metavar|epilog|usage)\s*=\s*[\w.]*\(?\s*$")
#: What a chunk with a string that has two of the question's words or more gains for such a question.
MESSAGE_BONUS = 8.0


def message_bonus(question: str, body: str, terms: set[str]) -> float:
    """What a chunk gains for a question for a message's words, when a string in it (a one-line literal,
    not a docstring) holds at least two of the question's words. A question that names something asks
    for it too ("what message does the line-length rule report": the rule's id names it; its message is
    in a string of its module, below the README's example)."""
    if not _ASKS_MESSAGE.search(question):
        return 0.0
    for line in body.splitlines():
        if any(len(literal_words(text) & terms) >= 2 for text in message_literals(line)):
            return MESSAGE_BONUS
    return 0.0


def message_literals(line: str) -> Iterator[str]:
    """The one-line string literals of ``line`` that a program may say (not a docstring's line, not an
    option's ``help=`` that describes it), their text without the quotes."""
    if '"""' in line or "'''" in line:
        return
    for literal in _LITERAL.finditer(line):
        if not _DESCRIBES.search(line[: literal.start()]):
            yield literal.group(2)


def literal_words(text: str) -> set[str]:
    """A string's words of three letters or more, lower case."""
    return {w.lower() for w in re.findall(r"[A-Za-z]{3,}", text)}


#: A package's build metadata, a copy of its README (``PKG-INFO``, ``x.egg-info/PKG-INFO``) and lists
#: of its files: they repeat the README's words, and three copies of its example filled the evidence.
COPIES = re.compile(r"(?:^|/)[^/]+\.(?:egg|dist)-info/|(?:^|/)PKG-INFO$")
#: Docs, notes and notebooks: a name or a string there is prose about the code, not the code.
PROSE_PATH = re.compile(r"\.(?:md|markdown|rst|txt|ipynb|html?)$", re.IGNORECASE)
_ASKS_METADATA = re.compile(r"PKG-INFO|egg-info|dist-info|\bmetadata\b", re.IGNORECASE)


def copy_penalty(question: str, path: str) -> float:
    """What a chunk of build metadata loses when the question does not ask about it (as a test's does)."""
    return TEST_PENALTY if COPIES.search(path) and not _ASKS_METADATA.search(question) else 0.0


def excludes_tests(question: str) -> bool:
    """Whether a question leaves the tests out ("not its tests", "excluding the tests")."""
    return _NOT_TESTS.search(question) is not None


#: A command-line option a question names (``--liteclirc``, ``--max-warnings``).
_OPTION = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
#: What a chunk that declares an option the question names gains (its default, help and type are there):
#: as much as a chunk that defines a name the question names.
OPTION_BONUS = 30.0


#: What a chunk with a line that names every option the question names gains (BM25 sees only common
#: words: "config", "file", "default").
OPTIONS_BONUS = 15.0


def _named_option(option: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(option)}(?![\w-])")


def _declares(options: list[str]) -> re.Pattern[str]:
    """A line that declares one of ``options`` as a quoted string (``"--liteclirc",``, ``'-c, --config'``)."""
    said = "|".join(re.escape(o) for o in options)
    return re.compile(rf"[\"'](?:-\w,\s*)?(?:{said})[\"'=\s,]")


def option_bonus(question: str, body: str) -> float:
    """What a chunk gains for declaring a command-line option the question names ("which file does the
    --liteclirc option default to": ``@click.option("--liteclirc", default=…)``, ``add_argument("-c",
    "--config", …)``), when it is the one option the question names ("which format does cli() set for
    --execute when neither --csv nor --table is given" asks about the code that reads them); a test's argv
    that passes it declares nothing."""
    options = sorted(set(_OPTION.findall(question)))
    if len(options) > 1:  # the line that names them all (a changelog's entry, a help text), else none:
        # several named are the context of a question about the code that reads them
        together = (line for line in body.splitlines() if all(_named_option(o).search(line) for o in options))
        return OPTIONS_BONUS if any(together) else 0.0
    if not options:
        return 0.0
    declared = rf"(?:option|argument)\(\s*(?:[\"'][^\"'\n]*[\"'],\s*)*{_declares(options).pattern}"
    return OPTION_BONUS if re.search(declared, body) else 0.0


_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")
#: Lines read for calls from the focus line on (an option's declaration spans a few).
CALLED_LINES = 4


def called_near(focus: re.Pattern[str], lines: Sequence[str]) -> list[str]:
    """The functions called on the first line ``focus`` finds and the few after it (what an option's
    default calls: ``default=config_location() + "config"``), for a second look at their definitions."""
    at = next((k for k, line in enumerate(lines) if focus.search(line)), None)
    if at is None:
        return []
    names = [m.group(1) for line in lines[at : at + CALLED_LINES] for m in _CALL.finditer(line)]
    return [name for name in dict.fromkeys(names) if name not in _NOT_CALLS][:3]


#: Calls that are Python's own, never a workspace definition worth a second look.
_NOT_CALLS = frozenset(keyword.kwlist) | frozenset(dir(builtins))


#: A question about an environment variable ("which environment variable does it read the password
#: from?"), and a line that reads one: the answer is the name in that line, and the question's words
#: ("environment", "variable") are rarely in it.
_ASKS_ENV = re.compile(r"\benv(?:ironment)?\s+var(?:iable)?s?\b|\benv\s+vars?\b", re.IGNORECASE)
_READS_ENV = re.compile(r"\bos\.environ\b|\bgetenv\s*\(|\bprocess\.env\b|\benv::var\b|\bENV\[")
#: What such a chunk gains: about what BM25 gives a chunk with two of the question's words.
ENV_BONUS = 8.0


def env_bonus(question: str, body: str) -> float:
    """What a chunk that reads an environment variable gains for a question about one."""
    return ENV_BONUS if _ASKS_ENV.search(question) and _READS_ENV.search(body) else 0.0


#: What a chunk that defines a name of the question gains over its BM25 score (-rank: about 5 to 20 on
#: a small library), by the definition's kind: a function or a class of that name comes first.
DEFINES_BONUS = dict.fromkeys(("const", "var", "let"), 3.0) | dict.fromkeys(("define", "#", "##", "###"), 6.0)
DEFINES_BONUS |= dict.fromkeys(
    ("def", "class", "function", "method", "struct", "interface", "type", "trait", "enum"), 20.0
)


def defines_bonus(defined: Iterable[Definition], wanted: Collection[str], question: str) -> float:
    """What a chunk gains for defining a name the question asks about (``wanted``: its words): it is what
    the question asks for (before a test of it, or a line that uses it), while BM25 sees only that the
    word occurs there. A function or a class of that name counts more than an assignment to it
    (``countby = curry(countby)`` re-exports the function; it does not define it)."""
    return max(
        (
            DEFINES_BONUS.get(d.kind, 3.0)
            for d in defined
            if d.name.lower() in wanted and written_as(d.name, question)
        ),
        default=0.0,
    )


class _Ranked(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def body(self) -> str: ...


_R = TypeVar("_R", bound=_Ranked)


def spread(ranked: Sequence[_R], per_file: int) -> list[_R]:
    """``ranked`` with at most ``per_file`` chunks a file and none the same as a better one: a file's
    copy (``PKG-INFO`` and ``x.egg-info/PKG-INFO``) says nothing new."""
    kept: Counter[str] = Counter()
    bodies: set[str] = set()
    out = []
    for chunk in ranked:
        if kept[chunk.path] < per_file and chunk.body not in bodies:
            kept[chunk.path] += 1
            bodies.add(chunk.body)
            out.append(chunk)
    return out


#: The kinds of definition a chunk that starts in one is said to be in (a method's class, a long function).
_ENCLOSING = frozenset({"class", "def", "async def", "function", "struct", "impl", "interface"})


def enclosing_of(lines: Sequence[str], outline: Sequence[Definition], first: int) -> str:
    """``"class X"`` for a chunk (its ``lines`` from line ``first``) that starts inside the definition X of
    the file's ``outline`` without showing X's line: its first line with text is indented. '' else."""
    text = next((line for line in lines if line.strip()), "")
    if not text[:1].isspace():
        return ""
    before = [d for d in outline if d.line < first]
    outer = max(before, key=lambda d: d.line) if before else None
    return f"{outer.kind} {outer.name}" if outer and outer.kind in _ENCLOSING else ""


def with_whole(named: Named, whole: Chunk, found: Sequence[Chunk], n: int) -> list[Chunk]:
    """The ``n`` chunks with a short named file ``whole``: first; second, after the best chunk, when the
    question asks where a name it gives is defined, that chunk defines it and the file does not (a
    notebook that imports the function led, and the model answered with the notebook)."""
    rest = [c for c in found if c.path != whole.path]
    names = [chain[-1] for chain in named.names] if named.definition and rest else []
    defined = [n for n in names if defining_line(rest[0].lines, n) is not None] if names else []
    if defined and not any(defining_line(whole.lines, name) is not None for name in names):
        return [rest[0], whole, *rest[1:]][:n]
    return [whole, *rest][:n]
