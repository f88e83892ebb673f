"""What the head start adds to the ranked evidence, made by the loop: the counts a count question asks
for (`counts`, from `tally`); the lines that import, call or use the name a "which modules import X"
question gives (`uses`, from grep); the code's strings with the words of a question for a message's
exact words (`strings`, from grep); and the one-line definitions of the constants the best chunk uses
but does not define (`constants`: ``USER_CONFIG_PATH = …``, ``LARGE_ORDER = 250``). The strings and the
uses come before the evidence (a model listed the evidence's files as the importers, with the right
lines after it), and so do the counts (a model counted the three calls a chunk showed, not the block's
five after it; on the development count tasks 18 of 27 before, 13 after), each within its share of the
head start; the constants right
after the chunk that uses them. Each file is read through the workspace's confinement, secrets masked as
in every tool output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from twinny_magics import naming, retrieval, tally
from twinny_magics.errors import WorkspaceError
from twinny_magics.retrieval import Chunk
from twinny_magics.tools import files, grep
from twinny_magics.tools.base import ToolLimits
from twinny_magics.tools.paths import Confinement
from twinny_magics.tools.search_focus import (
    COPIES,
    PROSE_PATH,
    TEST_PATH,
    excludes_tests,
    literal_words,
    message_literals,
)

#: A count question's head start gives the counts of at most this many of the files (and folders) it
#: names, in at most this share of the head start's room; a line longer than TALLY_LINE_CHARS is cut (its
#: file then may not parse as Python, and gives fewer counts).
TALLY_FILES = 2
TALLY_SHARE = 0.3
TALLY_LINE_CHARS = 4000
#: A "which modules import X" question's lines: at most this many, in at most this share.
USES_LINES = 12
USES_SHARE = 0.3
COUNTS_LEAD = (
    "Counted by the loop over the whole file or folder (exact: use these numbers, do not count lines shown):"
)


def counts(
    conf: Confinement, question: str, terms: Sequence[str], survey: retrieval.Survey, chars: int
) -> str:
    """For a question that asks how many and names a file or folder, the counts of what it holds
    (`tally`), made over the whole of it, within ``chars``; '' otherwise (``terms``: its words)."""
    if not tally.asks_count(question):
        return ""
    named = naming.named_in(question)
    every = [f.path for f in survey.files]
    by_words = naming.named_by_words(question, every)
    paths = [p for p in every if named.names_file(p) or p in by_words][:TALLY_FILES]
    wanted = [*(chain[-1] for chain in named.names), *terms]
    blocks = [
        "\n".join([f"{folder}/ (a folder):", *(f"- {line}" for line in tally.folder_counts(folder, every))])
        for folder in naming.named_folders(question, every)[:TALLY_FILES]
    ]
    for path in paths:
        try:
            reader = files.TextLines(conf.resolve(path), keep=TALLY_LINE_CHARS, budget=tally.TALLY_CHARS)
            lines = [head for head, _ in reader]
        except (OSError, WorkspaceError, ValueError):
            continue
        counted = tally.tally(path, lines, wanted, question)
        if reader.truncated:
            counted = [f"the first {len(lines)} lines (the file goes on): " + counted[0], *counted[1:]]
        blocks.append("\n".join([f"{path}:", *(f"- {line}" for line in counted)]))
    return _within(COUNTS_LEAD, blocks, chars)


#: "Which modules import X", "which functions call X", "where is X used": the verb and the name.
_VERB_NAME = re.compile(r"\b(import|call|use|refer)(?:s|ed|d)?\s+`?([A-Za-z_]\w*)`?(?:\(\))?", re.IGNORECASE)
_NAME_VERB = re.compile(
    r"\b([A-Za-z_]\w*)`?(?:\(\))?\s+(?:is\s+|are\s+|gets\s+|get\s+)?(import|call|use|refer)(?:ed|d)\b",
    re.IGNORECASE,
)
#: The question asks for the places, not for what the name does ("which modules", "where", "every").
_ASKS_PLACES = re.compile(
    r"\b(?:which|what|where|every|all|list|name)\b[^?]*\b(?:modules?|files?|functions?|methods?|classes?|places?)\b"
    r"|\bwhere\b|\bevery\s+(?:module|file|place)\b",
    re.IGNORECASE,
)


_DEFINES = re.compile(r"\bdefin(?:e|es|ed|ition)\b", re.IGNORECASE)


def asks_uses(question: str) -> tuple[str, str] | None:
    """``(verb, name)`` when ``question`` asks which places import, call or use a name it gives as code
    ("which modules import get_user_config"); None otherwise."""
    names = {chain[-1] for chain in naming.named_in(question).names}
    # The sentence that asks for the places names the verb ("notebook.ipynb calls f. Which file defines
    # it?" asks where f is defined, not who calls it).
    for sentence in re.split(r"(?<=[.?!])\s+", question):
        if not _ASKS_PLACES.search(sentence) or _DEFINES.search(sentence):
            continue
        for found in (*_VERB_NAME.finditer(sentence), *_NAME_VERB.finditer(sentence)):
            verb, name = found.group(1, 2) if found.re is _VERB_NAME else found.group(2, 1)
            if name in names:
                return verb.lower(), name
    return None


def uses_pattern(verb: str, name: str) -> str:
    """The grep pattern for the lines that ``verb`` (import, call, use) ``name``."""
    n = re.escape(name)
    if verb == "import":
        return rf"^\s*(?:from\s+\S+\s+)?import\b.*\b{n}\b"
    if verb == "call":
        return rf"\b{n}\s*\("
    return rf"\b{n}\b"


def uses(conf: Confinement, limits: ToolLimits, question: str, chars: int) -> str:
    """For a question asking which places import, call or use a name, the lines that do, found by grep
    over the workspace (not the name's own definitions; not the tests when the question leaves them out),
    within ``chars``; '' otherwise."""
    asked = asks_uses(question)
    if asked is None:
        return ""
    verb, name = asked
    try:
        found = grep.grep(conf, limits, uses_pattern(verb, name), None)
    except WorkspaceError:
        return ""
    no_tests = excludes_tests(question)
    defining = re.compile(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b")
    rows = []
    for row in found.splitlines():
        path, sep, rest = row.partition(":")
        number, sep2, text = rest.partition(": ")
        if not (sep and sep2 and number.isdigit()) or defining.match(text):
            continue
        if no_tests and TEST_PATH.search(path):
            continue
        rows.append(row)
    if not rows:
        return ""
    what = {"import": "import", "call": "call", "use": "use", "refer": "use"}[verb]
    where = ", outside the tests" if no_tests else ""
    more = f" (the first {USES_LINES} of {len(rows)})" if len(rows) > USES_LINES else ""
    lead = (
        f"Every line that {what}s {name}, found by the loop with grep over the whole workspace{where}{more}:"
    )
    return _within(lead, rows[:USES_LINES], chars)


#: A question for a message's exact words ("what error message does it give when …", "quote it exactly").
_ASKS_WORDING = re.compile(
    r"\b(?:(?:error|warning|log|exception)\s+)?messages?\b|\bquote\b|\bexact(?:ly)?\s+(?:words?|wording|text)\b"
    r"|\bwording\b",
    re.IGNORECASE,
)
#: A question's words that say what is asked, not what the message says.
_FRAME_WORDS = frozenset(
    """message messages error errors warning warnings quote exactly exact wording text give gives given
    report reports print prints show shows say says raise raises string""".split()  # noqa: SIM905
)
_HYPHENATED = re.compile(r"(?<![\w-])[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+(?![\w-])")
#: At most this many strings, in at most this share of the head start.
STRINGS_LINES = 6
STRINGS_SHARE = 0.2
#: The strings' grep looks at this many matching lines at most.
STRINGS_SCAN = 400


def strings(
    conf: Confinement,
    limits: ToolLimits,
    question: str,
    terms: Sequence[str],
    chars: int,
    *,
    projects: frozenset[str] = frozenset(),
) -> str:
    """For a question that asks for a message's words, the code's string literals that hold two of its
    words or more (most first; not docs, nor tests unless asked), found by grep, within ``chars``; ''
    otherwise. The message is a string in the code, while the ranked evidence brought the README's
    example and the docs that talk about the same thing (the model quoted them, or made one up)."""
    if not _ASKS_WORDING.search(question):
        return ""
    # A key the question writes hyphenated (``ignore-from-file``) is a name: its words are the message's.
    parts = {p.lower() for name in _HYPHENATED.findall(question) for p in name.split("-") if len(p) >= 3}
    plain = {t.lower() for t in terms if len(t) >= 3 and t.isalpha()}
    words = sorted((plain | parts) - _FRAME_WORDS - projects)
    if len(words) < 2:
        return ""
    # Two of the words inside one quoted string, over every file (the tool's caps are for a model's call).
    either = "|".join(map(re.escape, words))
    pattern = rf"(?i)[\"'][^\"'\n]*\b({either})\b[^\"'\n]*\b(?!\1\b)(?:{either})\b"
    wide = replace(limits, grep_matches=STRINGS_SCAN, grep_per_file=STRINGS_SCAN)
    try:
        found = grep.grep(conf, wide, pattern, None)
    except WorkspaceError:
        return ""
    tests = re.search(r"\btests?\b", question, re.IGNORECASE) is not None
    scored: list[tuple[int, int, str]] = []
    for row in found.splitlines():
        path, sep, rest = row.partition(":")
        number, sep2, text = rest.partition(": ")
        if not (sep and sep2 and number.isdigit()) or PROSE_PATH.search(path) or COPIES.search(path):
            continue
        if TEST_PATH.search(path) and not tests:
            continue
        # A string with no space is a key, a path, a name: no message.
        said = [literal_words(literal) for literal in message_literals(text) if " " in literal.strip()]
        best = max((len(found & set(words)) for found in said), default=0)
        if best >= 2:
            scored.append((-best, len(scored), row))
    if not scored:
        return ""
    rows = [line for _, _, row in sorted(scored)[:STRINGS_LINES] for line in _continued(conf, row)]
    lead = (
        "Strings in the code with the question's words, found by the loop with grep (the most words first):"
    )
    return _within(lead, rows, chars)


#: A line that ends in a string literal, the next one may go on with it (Python joins them).
_ENDS_IN_STRING = re.compile(r"[\"']\s*\+?\s*\(?$")
_STARTS_WITH_STRING = re.compile(r"^\s*[rbfu]{0,2}[\"']", re.IGNORECASE)
#: A message split over lines is followed this far.
STRING_LINES_ON = 3


def _continued(conf: Confinement, row: str) -> list[str]:
    """``row`` (``path:number: text``) and the lines after it that go on with its string (a message
    written as ``'… cannot be '`` then ``'used together'``), as rows of their own."""
    path, _, rest = row.partition(":")
    number = int(rest.partition(":")[0])
    if not _ENDS_IN_STRING.search(row):
        return [row]
    try:
        reader = files.TextLines(conf.resolve(path), keep=400)
        lines = [head for _, (head, _) in zip(range(number + STRING_LINES_ON), reader, strict=False)]
    except (OSError, WorkspaceError, ValueError):
        return [row]
    out = [row]
    at = number  # the next line's index (0-based)
    while at < len(lines) and len(out) <= STRING_LINES_ON and _STARTS_WITH_STRING.match(lines[at]):
        out.append(f"{path}:{at + 1}: {lines[at].strip()}")
        if not _ENDS_IN_STRING.search(lines[at]):
            break
        at += 1
    return out


def _within(lead: str, blocks: Sequence[str], chars: int) -> str:
    """``lead`` and ``blocks`` one a line, cut at a line to ``chars``; '' when none fits."""
    if not blocks:
        return ""
    text = "\n".join([lead, *blocks])
    if len(text) <= chars:
        return text
    cut = text.rfind("\n", 0, chars)
    return text[:cut] if cut > len(lead) else ""


#: A constant as code writes it: capitals, digits and underscores, with a letter after the first.
_CONSTANT = re.compile(r"(?<![\w.])([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]|[A-Z]{4,})(?![\w(])")
#: At most this many constants a head start, each one line; the file is read this far for them.
CONSTANTS = 3
CONSTANT_SCAN_LINES = 3000


def constants(conf: Confinement, chunks: Sequence[Chunk]) -> list[Chunk]:
    """``chunks`` with, before the first, the line of its file that defines each constant the first chunk
    uses and no chunk shows defined (at most `CONSTANTS`, each a one-line chunk headed by its name): the
    value a threshold, a default path or a limit has is often the answer, and it sits at the file's top,
    far from its use (and past the part of a long chunk that fits)."""
    if not chunks:
        return list(chunks)
    best = chunks[0]
    shown = [line for c in chunks for line in c.lines]
    used = [
        n
        for n in dict.fromkeys(_CONSTANT.findall("\n".join(best.lines)))
        if naming.defining_line(shown, n) is None
    ]
    if not used:
        return list(chunks)
    try:
        reader = files.TextLines(conf.resolve(best.path), keep=400)
        lines = [head for _, (head, _) in zip(range(CONSTANT_SCAN_LINES), reader, strict=False)]
    except (OSError, WorkspaceError, ValueError):
        return list(chunks)
    found: list[Chunk] = []
    for name in used:
        at = naming.defining_line(lines, name)
        if at is not None and len(found) < CONSTANTS and _one_line(lines[at]):
            found.append(Chunk(best.path, at + 1, at + 1, (lines[at],), (name,)))
    return [*sorted(found, key=lambda c: c.start), best, *chunks[1:]]


def _one_line(line: str) -> bool:
    """Whether a definition is whole on its line (``DEFAULT = {`` goes on: one line of it says nothing)."""
    opened = sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
    return opened <= 0 and not line.rstrip().endswith("\\")
