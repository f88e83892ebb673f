"""The edit a request for a change asks for, when its words pin it down in a file: the ready call the edit
nudge offers a model that described the change instead of making it.

Pure functions over the request and a file's text (as the tools show it). Three shapes of request, each
common and each mechanical once the place is found:

- a rename ("rename the function X to Y"): the line that defines X, with Y for X (what the rename
  leaves, the edit's result then says, as for any rename);
- a value "from A to B" (or "to B", "up to B" with one number): the line that sets a setting the
  request names (``max-spaces-inside: 1``, ``'max': 80``, ``batch_size=100``) to A, with B for it;
- "enable" or "disable" the rules or settings it names: the first named setting whose value is the
  opposite word, given the asked one (the edit's result names the next one).

None when the request is of no such shape, names nothing the file sets, or the place is not one line
the tool would find once. The call is only offered: the model makes it (or not), through edit_file and
its review, like any edit. All is pure but `for_request`, which reads the files the request names
through the workspace's confinement (as the tools show them, secrets masked).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from twinny_magics.errors import WorkspaceError
from twinny_magics.naming import defining_line, named_by_words, named_in
from twinny_magics.redact import MASK
from twinny_magics.tools import files
from twinny_magics.tools.matching import WORDS, enclosing, request_words
from twinny_magics.tools.paths import Confinement

_RENAME = re.compile(
    r"\brename\s+(?:the\s+)?(?:(?:function|method|class|variable|constant|parameter|argument|attribute|"
    r"setting|option|key|field)\s+)?`?([A-Za-z_][\w.]*)`?(?:\(\))?\s+(?:to|as|into)\s+`?([A-Za-z_]\w*)`?",
    re.IGNORECASE,
)
_FROM_TO = re.compile(r"\bfrom\s+`?(-?\d+(?:\.\d+)?)`?\s+to\s+`?(-?\d+(?:\.\d+)?)`?")
_TO_QUOTED = re.compile(r"\bto\s+(['\"`])([^'\"`\n]{1,80})\1")
_TO_NUMBER = re.compile(r"\b(?:up\s+)?to\s+`?(-?\d+(?:\.\d+)?)`?(?![\w.%-])")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_SWITCH = re.compile(r"\b(enable|disable)\b", re.IGNORECASE)
#: Names a request gives a setting by: hyphenated (``max-spaces-inside``), snake_case, camelCase,
#: capitals (``DEFAULT``), or in backticks.
_NAMES = re.compile(
    r"`([^`\s]+)`|(?<![\w-])([a-z][a-z0-9]*(?:-[a-z0-9]+)+)(?![\w-])|\b([a-z]+_[a-z0-9_]+)\b"
    r"|\b([a-z]+[A-Z]\w*)\b|\b([A-Z][A-Z0-9_]{2,})\b"
)
#: The opposite of each switch word, as configuration files write them.
_OPPOSITE = {"enable": ("disable", "disabled"), "disable": ("enable", "enabled")}
#: A line longer than this is no find to offer.
LINE_CHARS = 300


#: At most this many files the request names are read for a proposal, each this far.
PROPOSAL_FILES = 3
PROPOSAL_CHARS = 400_000


def for_request(conf: Confinement, paths: Sequence[str], request: str) -> dict[str, str] | None:
    """The edit tool's arguments for the edit ``request`` pins down in a file it names (of ``paths``, the
    workspace's files), or None. Never raises for a file it cannot read: it is only an offer."""
    named = named_in(request)
    chosen = [p for p in paths if named.names_file(p)] or list(named_by_words(request, paths))
    for rel in [p for p in chosen if not p.endswith(".ipynb")][:PROPOSAL_FILES]:
        try:
            reader = files.TextLines(conf.resolve(rel), keep=LINE_CHARS * 4, budget=PROPOSAL_CHARS)
            lines = [head for head, _ in reader]
        except (OSError, WorkspaceError, ValueError):
            continue
        if reader.truncated:
            continue
        found = propose(request, rel, files.shown_text("\n".join(lines)))
        if found is not None:
            return {"path": rel, "find": found[0], "replace": found[1]}
    return None


def propose(request: str, rel: str, text: str) -> tuple[str, str] | None:
    """``(find, replace)`` for the edit ``request`` asks of the file ``rel`` (its ``text`` as the tools show
    it), or None (see the module)."""
    lines = text.split("\n")
    rename = _RENAME.search(request)
    if rename:
        return _renamed(lines, text, rename.group(1).rsplit(".", 1)[-1], rename.group(2))
    names = _named(request)
    span = _FROM_TO.search(request)
    quoted = _TO_QUOTED.search(request)
    numbers = _NUMBER.findall(_without_names_and_paths(request))
    if span:
        old, new = span.group(1), span.group(2)
    elif quoted:
        old, new = None, quoted.group(2)
    elif (one := _TO_NUMBER.search(request)) and len(numbers) == 1:
        old, new = None, one.group(1)
    else:
        switch = _SWITCH.search(request)
        return _switched(lines, text, names, switch.group(1).lower()) if switch and names else None
    # A setting named as a plain word ("the default chunksize of fold", "the default hinge") is a key too.
    return _valued(lines, text, names, request, old=old, new=new)


def _without_names_and_paths(request: str) -> str:
    """The request without paths and names (``python3.11``, ``rules/line_length.py``): its numbers alone."""
    return re.sub(r"\S*[/\\]\S*|\S+\.\w+\S*|[\w-]*[A-Za-z][\w-]*\d[\w-]*", " ", request)


def _named(request: str) -> list[str]:
    found = []
    for match in _NAMES.finditer(request):
        name = next(group for group in match.groups() if group)
        if "/" not in name and not re.search(r"\.\w{1,4}$", name):  # a path is no setting
            found.append(name.strip("'\""))
    return list(dict.fromkeys(found))


def _shown(line: str) -> bool:
    """Whether ``line`` can be offered as a find: short, with no hidden value."""
    stripped = line.strip()
    return bool(stripped) and len(stripped) <= LINE_CHARS and MASK not in stripped


def _once(text: str, line: str) -> bool:
    return _shown(line) and text.count(line.strip()) == 1


def _renamed(lines: Sequence[str], text: str, old: str, new: str) -> tuple[str, str] | None:
    if old == new or len(old) < 2:
        return None
    at = defining_line(lines, old)
    word = re.compile(rf"(?<![\w]){re.escape(old)}(?!\w)")
    if at is None:
        at = next((k for k, line in enumerate(lines) if word.search(line)), None)
    if at is None or not _once(text, lines[at]):
        return None
    line = lines[at].strip()
    return line, word.sub(new, line)


def _setting(name: str) -> re.Pattern[str]:
    """A line that sets ``name``: ``name: v``, ``name = v``, ``'name': v``, ``name=v`` in a call or a
    signature, ``name: int = v``; the value a number or a word, or anything in quotes (see `_value`)."""
    n = re.escape(name)
    return re.compile(
        rf"(?<![\w-])(?:['\"]{n}['\"]|{n})(?:\s*:\s*[A-Za-z_][\w.\[\], |]*?\s*=(?!=)|\s*:|\s*=(?!=))"
        rf"\s*(?:(?P<q>['\"])(?P<value>[^'\"\n]*)(?P=q)|(?P<bare>-?[\w.]+)(?![\w.-]))"
    )


def _value(match: re.Match[str]) -> tuple[str, tuple[int, int]]:
    """A setting's value and where it is on the line (inside its quotes, when quoted)."""
    group = "value" if match.group("q") else "bare"
    return match.group(group), match.span(group)


def _scored(lines: Sequence[str], names: Sequence[str], words: frozenset[str], k: int) -> int:
    """How strongly line ``k`` is a place the request names: a name on the line itself counts more than
    a name or a word of the request on the lines that hold it (a YAML key's parents, the dict a key is in:
    ``braces:`` above ``max-spaces-inside: 1`` for "spaces inside braces")."""

    def names_on(line: str) -> int:
        return sum(1 for name in names if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", line))

    def words_on(line: str) -> int:
        return len(words & set(WORDS.findall(line.lower())))

    # The holders as the edit tool reads them when it picks one of several matches (`matching.enclosing`).
    held = enclosing(lines, k)
    return 3 * names_on(lines[k]) + words_on(lines[k]) + sum(names_on(h) + words_on(h) for h in held)


def _best(found: list[tuple[int, int]]) -> int | None:
    """The line of the best score, when one is best (a tie is no place); None otherwise."""
    found.sort(key=lambda pair: -pair[1])
    if not found or found[0][1] == 0 or (len(found) > 1 and found[1][1] == found[0][1]):
        return None
    return found[0][0]


def _valued(
    lines: Sequence[str], text: str, names: Sequence[str], request: str, *, old: str | None, new: str
) -> tuple[str, str] | None:
    """The line that sets a setting the request names (or a plain word of it: "the default chunksize")
    to ``old`` (any value when None), with ``new`` for that value; else, for "from A to B", the line
    with A after a ``:`` or ``=`` whose own words or holders the request names. Ranked by `_scored`, a
    line that sets a named key before one that only has the number (a docstring's "(default 1.5)")."""
    words = request_words(request) - {w for name in names for w in WORDS.findall(name.lower())}
    keys = [*names, *sorted(words)]
    found: list[tuple[int, int]] = []
    spans: dict[int, tuple[int, int]] = {}
    for k, line in enumerate(lines):
        sets = False
        for key in keys:
            setting = _setting(key).search(line)
            if setting is None:
                continue
            value, where = _value(setting)
            if value != new and (old is None or value == old):
                spans[k], sets = where, True
                break
        else:
            # A value the request gives ("from 80 to 120") next to a key it does not name (``'max': 80`` in
            # the ``DEFAULT`` it names): the number on a line that, or whose holders, name something.
            number = re.search(rf"(?<![\w.]){re.escape(old)}(?![\w.])", line) if old else None
            if number is None or not re.search(r"[:=]", line[: number.start()]):
                continue
            spans[k] = number.span()
        found.append((k, _scored(lines, names, words, k) + (SETS_KEY if sets else 0)))
    at = _best(found)
    # A line the file has more than once (``max-spaces-inside: 1`` under two keys) is offered too: the
    # tool takes the one whose holders the request names, as this did.
    if at is None or not _shown(lines[at]):
        return None
    line = lines[at]
    start, end = spans[at]
    return line.strip(), (line[:start] + new + line[end:]).strip()


#: What a line that sets a key the request names scores over one that only has the value.
SETS_KEY = 3


def _switched(lines: Sequence[str], text: str, names: Sequence[str], verb: str) -> tuple[str, str] | None:
    for name in names:
        setting = _setting(name)
        for line in lines:
            found = setting.search(line)
            if found is None:
                continue
            value, (start, end) = _value(found)
            if value.lower() in _OPPOSITE[verb] and _once(text, line):
                word = verb + ("d" if value.lower().endswith("d") else "")
                return line.strip(), (line[:start] + word + line[end:]).strip()
    return None
