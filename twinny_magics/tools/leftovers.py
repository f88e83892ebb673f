"""What an edit leaves for the model to finish, said with the edit's result: the uses of a renamed name
still in the file (a small model renames a definition and stops, its calls left), or, for a setting
given a new value, another setting the request names that still has the old one.

Pure functions over strings, used by ``tools/edits.py`` after `matching.match` placed the edit.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Collection, Sequence

from twinny_magics.tools.base import call_text
from twinny_magics.tools.matching import WORDS, line_call
from twinny_magics.tools.search_focus import PROSE_PATH

#: A name an edit renames: an identifier, not a number or a one- or two-letter word.
_NAME = re.compile(r"\b[A-Za-z_]\w{2,}\b")
#: At most this many line numbers named for a name left in the file.
LEFT_LINES = 6


#: Words an edit may take out without renaming anything: a value's (``False`` for ``True``), a keyword's.
_NOT_NAMES = frozenset(keyword.kwlist) | {"true", "false", "null", "none", "yes"}


def _names(text: str) -> set[str]:
    return {name for name in _NAME.findall(text) if name not in _NOT_NAMES}


def _swapped(find: str, replace: str) -> tuple[set[str], set[str]]:
    """The names ``find`` has and ``replace`` does not, and the reverse: a rename takes one and brings one."""
    before, after = _names(find), _names(replace)
    return before - after, after - before


def still_there(  # noqa: PLR0917 (the edit's parts, then what the request says)
    find: str, replace: str, after: str, rel: str = "", request: Collection[str] = (), asked: str = ""
) -> str:
    """A note on the names the edit took out (words of ``find`` that ``replace`` no longer has, while it
    brings a new one: a rename) that ``after`` (the file as the tools show it, after the edit) still
    has, with their lines: a small model renames a function's definition and stops, its calls left.
    With the file's path ``rel`` and one name for one, the ready call that renames the first use left
    (its whole line, when that line is once in the file). '' when there are none.

    A setting's new value (``float-values: enable`` for ``float-values: disable``) is no rename: the old
    value on other lines is no use of a name (told it was, a model set ``document-end`` too). What is
    left then is another setting the ``request``'s words name with the same old value (the request
    enabled two rules), with its ready call — not when the request (``asked``, as written) gives the old
    value too, or words for both ways ("turn multi_line on and destructive_warning off")."""
    setting = _setting_change(find, replace)
    if setting is not None and (setting[1] == ":" or _CONFIG_FILE.search(rel)):
        return _named_setting_left(setting, after, rel, request, asked)
    gone, brought = _swapped(find, replace)
    if not gone or not brought:
        return ""
    notes = []
    rows = after.split("\n")
    first = ""
    one = next(iter(brought)) if len(gone) == 1 and len(brought) == 1 else ""
    for name in sorted(gone)[:3]:
        word = re.compile(rf"\b{name}\b")
        lines = [n for n, line in enumerate(rows, 1) if word.search(line) and _code_use(line, name)]
        if lines:
            shown = ", ".join(map(str, lines[:LEFT_LINES])) + (", …" if len(lines) > LEFT_LINES else "")
            where = "line" if len(lines) == 1 else "lines"
            notes.append(f"{name} is still on {where} {shown}")
            if one and not first:
                line = rows[lines[0] - 1].strip()
                renamed = re.sub(rf"\b{re.escape(name)}\b", one, line)
                first = line_call(rel, after, line, renamed, f", starting with line {lines[0]}: ")
    if not notes:
        return ""
    return f"{'; '.join(notes)} of this file: if each use should change too, edit those as well{first}"


def renamed_function(find: str, replace: str) -> tuple[str, str] | None:
    """``(old, new)`` when the edit renames a function or a class: one name gone, one brought, and the
    old one defined (``def``, ``class``) or called (``name(``) in ``find`` — not a parameter or a local
    (renamed in its function alone, its word elsewhere is another thing)."""
    gone, brought = _swapped(find, replace)
    if len(gone) != 1 or len(brought) != 1:
        return None
    old = next(iter(gone))
    if not re.search(rf"\b(?:def|class)\s+{old}\b|(?<![\w]){old}\s*\(", find):
        return None
    return old, next(iter(brought))


def used_elsewhere(old: str, new: str, rows: Sequence[str], rel: str) -> str:
    """The note on a renamed function's uses in other files, from grep's ``rows`` (``path:line: text``)
    over the workspace: the code files and lines that still use ``old`` as code (not docs or notebooks),
    and the call that renames the first ('' when none), the file that defines it first. A model renamed
    the test's call and stopped, the definition left."""
    found: dict[str, list[tuple[int, str]]] = {}
    for row in rows:
        path, sep, rest = row.partition(":")
        number, sep2, text = rest.partition(": ")
        if not (sep and sep2 and number.isdigit()) or path == rel or PROSE_PATH.search(path):
            continue
        text = _ANNOTATION.sub("", text)  # grep's "[in class X]", "[under A > B]": not the file's text
        if not _code_use(text, old):
            continue
        found.setdefault(path, []).append((int(number), text.strip()))
    if not found:
        return ""
    defines = re.compile(rf"^(?:async\s+)?(?:def|class)\s+{re.escape(old)}\b")
    found = dict(sorted(found.items(), key=lambda item: not any(defines.match(t) for _, t in item[1])))
    places = [
        f"{path} ({'line' if len(at) == 1 else 'lines'} {', '.join(str(n) for n, _ in at[:LEFT_LINES])})"
        for path, at in list(found.items())[:ELSEWHERE_FILES]
    ]
    more = f" and {len(found) - ELSEWHERE_FILES} more files" if len(found) > ELSEWHERE_FILES else ""
    first, at = next(iter(found.items()))
    line_number, line = at[0]
    call = call_text(
        "edit_file", {"path": first, "find": line, "replace": re.sub(rf"\b{re.escape(old)}\b", new, line)}
    )
    return (
        f"{old} is also used in {', '.join(places)}{more}; starting with {first} line {line_number}: {call}"
    )


_ANNOTATION = re.compile(r"  \[(?:in class|under) [^\]]*\]$")
#: At most this many other files are named for a renamed function's uses.
ELSEWHERE_FILES = 4


_SETTING_LINE = re.compile(r"^[ \t]*(?:-[ \t]+)?([\w][\w.-]*)[ \t]*([:=])[ \t]*(\S.*?)[ \t]*$")


#: A setting's value: a word, a number, a quoted string (no call, no expression).
_SCALAR = re.compile(r"[\w.+-]+|\"[^\"\n]*\"|'[^'\n]*'")
#: A configuration file by its name (its ``key = value`` lines are settings, not code).
_CONFIG_FILE = re.compile(r"\.(?:ini|cfg|conf|toml|ya?ml|properties|env)$|(?:^|/)\.?\w+rc$", re.IGNORECASE)


#: Words that set a switch each way: a request with both turns some settings on and others off.
_BOTH_WAYS = (("on", "off"), ("enable", "disable"), ("true", "false"), ("yes", "no"), ("enabled", "disabled"))


def _setting_change(find: str, replace: str) -> tuple[str, str, str, str] | None:
    """``(key, separator, old value, new value)`` when ``find`` and ``replace`` are one setting's line
    each (``key: value``, ``key = value``) with the same key and another value; else None."""
    if "\n" in find.strip() or "\n" in replace.strip():
        return None
    old, new = _SETTING_LINE.match(find.strip()), _SETTING_LINE.match(replace.strip())
    if old is None or new is None or old.group(1) != new.group(1) or old.group(3) == new.group(3):
        return None
    if not (_SCALAR.fullmatch(old.group(3)) and _SCALAR.fullmatch(new.group(3))):
        return None  # ``x = head_tail([1])`` -> ``x = _head_tail([1])`` renames a call
    return old.group(1), old.group(2), old.group(3), new.group(3)


def _named_setting_left(
    setting: tuple[str, str, str, str], after: str, rel: str, request: Collection[str], asked: str
) -> str:
    """The note on the first other setting whose key the request's words name and whose value is still
    the changed one's old value, with the call that gives it the new value; '' when there is none."""
    key, separator, old, new = setting
    said = set(re.findall(r"[a-z0-9]+", asked.lower()))
    if old.lower().strip("'\"") in said or any(a in said and b in said for a, b in _BOTH_WAYS):
        return ""  # the request gives the old value, or both ways, to its settings: each has its own
    done = set(WORDS.findall(key.lower()))
    wanted = set(request) - done - set(WORDS.findall(f"{old} {new}".lower()))
    if not wanted:
        return ""
    for number, line in enumerate(after.split("\n"), 1):
        other = _SETTING_LINE.match(line)
        if other is None or other.group(1) == key or other.group(2) != separator or other.group(3) != old:
            continue
        if not set(WORDS.findall(other.group(1).lower())) & wanted:
            continue
        stripped = line.strip()
        renamed = stripped[: len(stripped) - len(old)] + new
        call = line_call(rel, after, stripped, renamed, ": ")
        return f"the request also names {other.group(1)}, still {stripped!r} on line {number}{call}"
    return ""


#: A word before a name that makes it prose ("a list of ingredients", "look at the ingredients"), unless
#: the name is set off as code (":param ingredients:", "f(ingredients)").
_PROSE_BEFORE = re.compile(r"(?:^|[\s])([a-z]+)\s+$")


def _code_use(line: str, name: str) -> bool:
    """Whether ``name`` is on ``line`` as code at least once: next to a symbol (``(``, ``=``, ``:``, ``.``,
    a quote), after a keyword (``return ingredients``), alone on its line; not as a word of prose between
    words ("have a look at the ingredients and …", "a list of ingredients") — a rename leaves those."""
    for found in re.finditer(rf"\b{re.escape(name)}\b", line):
        before, after = line[: found.start()], line[found.end() :]
        prose = _PROSE_BEFORE.search(before)
        if (
            prose is None
            or keyword.iskeyword(prose.group(1))
            or not re.match(r"\s|$|[.,;!?]\s|[.,;!?]$", after)
        ):
            return True
    return False
