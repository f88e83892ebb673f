"""Where edit_file's ``find`` matches a file's text: exactly once, else loosely, and what replaces it.

Pure functions over strings. Small models copy text with other indentation, other quotes or spaces
around punctuation: one match that differs only so is taken (and said), two are refused with their
lines, none with the lines that come closest — or, when ``replace`` is there already, with a note that
the change looks made. `own_text` and `in_file` place a match in the text as shown (secrets masked)
back in the real text, where that is the file's own text (see ``tools/edits.py``).
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Collection, Sequence

from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import MASK
from twinny_magics.retrieval import STOPWORDS
from twinny_magics.tools.base import call_text, cut_line

_NUMBERED = re.compile(r"^\s*\d+: ")
_UNESCAPED_NOTE = " (find matched only with its backslash escapes read as plain characters)"
#: ``self.`` or ``cls.`` before a name at a line's start (a class body assigns it bare).
_QUALIFIED = re.compile(r"(?m)^([ \t]*)(?:self|cls)\.(?=[A-Za-z_])")
_UNQUALIFIED_NOTE = " (find matched only without its self.: the class body writes the name bare)"


def match(
    rel: str, text: str, find: str, replace: str, request: Collection[str] = ()
) -> tuple[int, int, str, str]:
    """Where ``find`` matches ``text`` once (exactly, else loosely), what replaces it there and a note
    on how loose the match was; else a `WorkspaceError` saying why, with the lines that come closest.

    Of several exact matches, the one whose line and enclosing lines name what the user's ``request``
    (its words, lower case) names and no other match's do is taken, and said: ``max: 80`` under the
    ``line-length:`` key a request for "line-length's max" names."""
    count = text.count(find)
    if count == 1:
        start = text.index(find)
        return start, start + len(find), replace, ""
    if count > 1:
        starts = [m.start() for m in re.finditer(re.escape(find), text)]
        picked = _by_request(text, starts, find, replace, request)
        if picked is not None:
            start, where = picked
            note = f" (find matched {len(starts)} times; this is the one {where}, which the request names)"
            return start, start + len(find), replace, note
        lines = _line_numbers(text, starts)
        raise WorkspaceError(
            f"find matches {count} times in {rel}; it must match exactly once. Add a neighbouring "
            f"line to find so it is unique. The matches start at:\n{_show_lines(text, lines)}"
            + _one_by_one(rel, text, find, replace, lines[0])
        )
    plain = _unescaped(find)
    if plain != find:
        # Small models escape find as if it were a regex, or a JSON string twice (\[\"salt\", \"pepper\"]):
        # where the plain text matches lines with no backslash, it is meant, in find and replace alike.
        try:
            start, end, new, note = match(rel, text, plain, _unescaped(replace))
        except WorkspaceError:
            pass
        else:
            if "\\" not in text[start:end]:
                return start, end, new, _UNESCAPED_NOTE + note
    spans = _loose_spans(text, find)
    if len(spans) == 1:
        start, end = spans[0]
        note = " (find matched only when ignoring differences in whitespace and indentation)"
        return (
            start,
            end,
            _line_by_line(replace, find, text, start, end) or _reindent(replace, find, text, start),
            note,
        )
    if spans or len(looser := _looser_spans(text, find)) != 1:
        if not spans and not looser and (bare := _unqualified(rel, text, find, replace)) is not None:
            return bare
        if not spans and not looser and (quoted := _unquoted(text, find, replace)) is not None:
            return quoted
        raise WorkspaceError(_not_found(rel, text, find, spans, replace))
    # Small models write 'x' for "x" and x = 1 for x=1: one match that differs only so is it.
    start, end = looser[0]
    note = " (find matched only when ignoring quote style and spaces around punctuation)"
    matched = text[start:end]
    return start, end, _same_quotes(_same_spacing(replace, find, matched), find, matched), note


#: A word of a request, lower case, three letters or more.
WORDS = re.compile(r"[a-z][a-z0-9]{2,}")
_SECTION = re.compile(r"^\[\[?[^\]\n]+\]\]?\s*(?:[#;].*)?$")
#: Of more matches than this, none is picked by the request (a find that common is no place).
PICK_MATCHES = 50
#: At most this many enclosing lines (a key's parents, a method's class, an INI section) name a match.
ENCLOSING_LINES = 6


def request_words(request: str) -> frozenset[str]:
    """The words of a user's request that can tell one match from another (lower case, three letters or
    more, not a common word): "line-length" gives ``line`` and ``length``."""
    return frozenset(WORDS.findall(request.lower())) - STOPWORDS


def _by_request(
    text: str, starts: list[int], find: str, replace: str, request: Collection[str]
) -> tuple[int, str] | None:
    """The one of several matches (their ``starts``) whose own line and enclosing lines hold more of the
    ``request``'s words than any other's (words of find and replace aside), with where it is; None when
    no match's do, or two tie."""
    wanted = set(request) - set(WORDS.findall((find + " " + replace).lower()))
    # A bare name or word found several times is no place (replay_dir → a path: made at one of them, it
    # broke the file); a setting written whole (``max: 2``, ``hinge=1.5``) is.
    if not wanted or len(starts) > PICK_MATCHES or re.fullmatch(r"\s*[\w.-]+\s*", find):
        return None
    rows = text.split("\n")
    scored = []
    for start in starts:
        number = text.count("\n", 0, start)
        context = [rows[number], *enclosing(rows, number)]
        said = wanted & set(WORDS.findall(" ".join(context).lower()))
        scored.append((len(said), start, number, context))
    scored.sort(key=lambda row: -row[0])
    best = scored[0]
    if best[0] == 0 or (len(scored) > 1 and scored[1][0] == best[0]):
        return None
    _, start, number, context = best
    under = f", under {cut_line(context[1].strip(), 60)!r}" if len(context) > 1 else ""
    return start, f"at line {number + 1}{under}"


def enclosing(rows: Sequence[str], number: int) -> list[str]:
    """The lines that hold row ``number``: each earlier line less indented than the last one taken (a
    YAML key's parents, a method's class) and, at the left edge, the INI or TOML section it is in."""
    out: list[str] = []
    indent = len(rows[number]) - len(rows[number].lstrip())
    for row in reversed(rows[:number]):
        stripped = row.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(out) >= ENCLOSING_LINES or (indent == 0 and out):
            break
        if indent == 0 and _SECTION.match(row):
            out.append(stripped)
            break
        here = len(row) - len(row.lstrip())
        if here < indent:
            out.append(stripped)
            indent = here
    return out


def _unqualified(rel: str, text: str, find: str, replace: str) -> tuple[int, int, str, str] | None:
    """``self.max_len_prompt = 45`` for a class's own ``max_len_prompt = 45``, found nowhere else: the
    name as the class body writes it, at a line's start, in find and replace alike; else None."""
    bare = _QUALIFIED.sub(r"\1", find)
    if bare == find:
        return None
    try:
        start, end, new, note = match(rel, text, bare, _QUALIFIED.sub(r"\1", replace))
    except WorkspaceError:
        return None
    if text[:start].rsplit("\n", 1)[-1].strip():  # inside a line (``self.y = y`` for ``y = y``)
        return None
    return start, end, new, _UNQUALIFIED_NOTE + note


#: A setting's line whose value is quoted: its indent, key and separator, quote, value and what follows.
_QUOTED_SETTING = re.compile(
    r"^([ \t]*)([^\s\"'#:=][^\"'#:=]*?[ \t]*[:=][ \t]*)([\"'])(.*)\3([ \t]*(?:#.*)?)$"
)
_UNQUOTED_NOTE = " (find matched only without the quotes the file writes around the value; they are kept)"


def _unquoted(text: str, find: str, replace: str) -> tuple[int, int, str, str] | None:
    """``key: value`` for the file's one line ``key: "value"`` (YAML, TOML, INI quote a value or not):
    that whole line, the replacement's value written in the file's quotes; else None."""
    if "\n" in find.strip() or "\n" in replace.strip():
        return None
    plain = find.strip()
    found = []
    offset = 0
    for line in text.split("\n"):
        setting = _QUOTED_SETTING.match(line)
        if setting and f"{setting.group(2).strip()} {setting.group(4)}".replace(" =", "=") == " ".join(
            plain.split()
        ).replace(" =", "="):
            found.append((offset, line, setting))
        offset += len(line) + 1
    if len(found) != 1:
        return None
    start, line, setting = found[0]
    new = re.match(r"^\s*([^\"'#:=]+?)\s*([:=])\s*(.*?)\s*$", replace)
    if (
        new is None
        or new.group(3)[:1] in "\"'"
        or new.group(1).strip() != setting.group(2).strip()[:-1].strip()
    ):
        return None
    indent, key, quote, _, rest = setting.groups()
    return start, start + len(line), f"{indent}{key}{quote}{new.group(3)}{quote}{rest}", _UNQUOTED_NOTE


def line_call(rel: str, text: str, line: str, new: str, lead: str) -> str:
    """``lead`` and the edit_file call that changes one whole ``line`` of ``text`` to ``new``, when the
    line is once in the text (a find the tool takes) and short; '' otherwise."""
    if not rel or len(line) > 300 or text.count(line) != 1:
        return ""
    return lead + call_text("edit_file", {"path": rel, "find": line, "replace": new})


def _one_by_one(rel: str, text: str, find: str, replace: str, number: int) -> str:
    """The call that makes the change at the first of several matches, its whole line as ``find`` (a
    small model that replaced a name found three times repeated the call), when that line is unique."""
    line = text.split("\n")[number - 1].strip()
    if "\n" in find or find not in line:
        return ""
    lead = f"\nTo change them one at a time, start with line {number}: "
    return line_call(rel, text, line, line.replace(find, replace, 1), lead)


def own_text(content: str, seen: str) -> list[tuple[int, int, int]]:
    """The stretches of ``seen`` (the file as shown, secrets masked: as many lines as the file) that
    are the file's own text: ``(start, end, shift)``, ``seen[start:end] == content[start + shift :
    end + shift]``, in order.

    Line by line: a line shown as it is; of a line that shows masks, the text before the first and
    after the last (where the file's line has them); a line that differs otherwise, or an empty one
    after a mask that ran to the end of its line (a private key's hidden lines), is hidden whole. The
    line end after a mask that ends a line is hidden too: it may lie inside the value.
    """
    real_lines, shown_lines = content.split("\n"), seen.split("\n")
    if len(real_lines) != len(shown_lines):
        return []
    runs: list[tuple[int, int, int]] = []

    def own(start: int, end: int, shift: int) -> None:
        if start >= end:
            return
        if runs and runs[-1][1] == start and runs[-1][2] == shift:
            runs[-1] = (runs[-1][0], end, shift)
        else:
            runs.append((start, end, shift))

    real = at = 0
    hidden_on = False
    last = len(real_lines) - 1
    for number, (mine, shown) in enumerate(zip(real_lines, shown_lines, strict=True)):
        line_end = 1 if number < last else 0
        if MASK in shown:
            head, tail = shown.split(MASK, 1)[0], shown.rsplit(MASK, 1)[1]
            fits = len(head) + len(tail) <= len(mine) and mine.startswith(head) and mine.endswith(tail)
            if fits:
                own(at, at + len(head), real - at)
                if tail:
                    shift = real + len(mine) - (at + len(shown))
                    own(at + len(shown) - len(tail), at + len(shown) + line_end, shift)
            hidden_on = not (fits and tail)
        elif not (shown == "" and hidden_on) and mine == shown:
            own(at, at + len(shown) + line_end, real - at)
            hidden_on = False
        real += len(mine) + 1
        at += len(shown) + 1
    return runs


def in_file(runs: list[tuple[int, int, int]], start: int, end: int) -> tuple[int, int] | None:
    """Where ``seen[start:end]`` is in the file, when all of it is the file's own text (`own_text`)."""
    index = bisect.bisect_right([first for first, _, _ in runs], start) - 1
    if index < 0 or end > runs[index][1]:
        return None
    shift = runs[index][2]
    return start + shift, end + shift


#: A backslash before punctuation: a regex's or an extra JSON escape (never \n, \t or a letter's).
_ESCAPED = re.compile(r"\\([\[\](){}.*+?^$|\\\"'/-])")


def _unescaped(text: str) -> str:
    r"""``text`` with each backslash before punctuation dropped (``\[`` -> ``[``, ``\"`` -> ``"``)."""
    return _ESCAPED.sub(r"\1", text)


def _loose_spans(content: str, find: str) -> list[tuple[int, int]]:
    """Where ``find`` occurs when every run of whitespace (indentation, line ends) may differ."""
    tokens = find.split()
    if not tokens:
        return []
    loose = re.compile(r"\s+".join(re.escape(token) for token in tokens))
    return [m.span() for m in loose.finditer(content)]


def _looser_spans(content: str, find: str) -> list[tuple[int, int]]:
    """Where ``find`` occurs when ' and " are one and spaces may come and go around punctuation
    (``chunksize = 128`` finds ``chunksize=128``); two words stay apart by some whitespace."""
    pieces = re.findall(r"\s+|\w+|.", find.strip(), flags=re.DOTALL)
    pattern = []
    for n, piece in enumerate(pieces):
        if piece.isspace():
            before, after = pieces[n - 1], pieces[n + 1]  # strip(): a space is never first or last
            words = (before[-1].isalnum() or before[-1] == "_") and (after[0].isalnum() or after[0] == "_")
            pattern.append(r"\s+" if words else r"\s*")
        elif piece in ("'", '"'):
            pattern.append(r"['\"]")
        elif piece[0].isalnum() or piece[0] == "_":
            pattern.append(re.escape(piece))
        else:
            pattern.append(r"[ \t]*" + re.escape(piece) + r"[ \t]*")
    if not pattern:
        return []
    return [m.span() for m in re.finditer("".join(pattern), content)][:10]


def _same_quotes(replace: str, find: str, matched: str) -> str:
    """``replace`` with its quotes turned to the file's where find's quotes were of the other kind."""
    for mine, theirs in (("'", '"'), ('"', "'")):
        if mine in find and theirs not in find and theirs in matched and mine not in matched:
            return replace.replace(mine, theirs)
    return replace


def _pieces(text: str) -> tuple[list[str], list[str]]:
    """``text``'s tokens (words and single punctuation characters) and the gaps before each token after
    the first (the whitespace between them, '' where they touch)."""
    tokens: list[str] = []
    gaps: list[str] = []
    gap = ""
    for piece in re.findall(r"\s+|\w+|.", text.strip(), flags=re.DOTALL):
        if piece.isspace():
            gap = piece
            continue
        if tokens:
            gaps.append(gap)
        tokens.append(piece)
        gap = ""
    return tokens, gaps


def _key(token: str) -> str:
    """A token as the loose match compares it: ' and " are one."""
    return '"' if token == "'" else token


def _same_spacing(replace: str, find: str, matched: str) -> str:
    """``replace`` with the file's spacing around punctuation where ``find`` had another
    (``hinge = 3.0`` for a file that writes ``hinge=1.5``, found by ``hinge = 1.5``).

    A gap of ``replace`` between two tokens takes the file's gap between the same two tokens in the
    match; between a punctuation token and a new one, the file's gap beside that punctuation. A gap with
    a line end, in ``replace`` or in the file, is left as it is."""
    file_tokens, file_gaps = _pieces(matched)
    file_keys = [_key(t) for t in file_tokens]
    if [_key(t) for t in _pieces(find)[0]] != file_keys:
        return replace
    by_pair: dict[tuple[str, str], str] = {}
    after: dict[str, str] = {}
    before: dict[str, str] = {}
    for k, gap in enumerate(file_gaps):
        left, right = file_keys[k], file_keys[k + 1]
        by_pair.setdefault((left, right), gap)
        after.setdefault(left, gap)
        before.setdefault(right, gap)
    tokens, gaps = _pieces(replace)
    out = tokens[:1]
    for k, written in enumerate(gaps):
        last, token = _key(tokens[k]), _key(tokens[k + 1])
        wanted = by_pair.get((last, token))
        if wanted is None and not _wordy(last):
            wanted = after.get(last)
        if wanted is None and not _wordy(token):
            wanted = before.get(token)
        if wanted is None or "\n" in wanted or "\n" in written:
            wanted = written
        out += [wanted, tokens[k + 1]]
    # The match leaves out find's outer whitespace: replace keeps only the outer whitespace it adds.
    head = replace[: len(replace) - len(replace.lstrip())] if find == find.lstrip() else ""
    tail = replace[len(replace.rstrip()) :] if find == find.rstrip() else ""
    return head + "".join(out) + tail


def _wordy(token: str) -> bool:
    return token[0].isalnum() or token[0] == "_"


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _line_by_line(replace: str, find: str, content: str, start: int, end: int) -> str:
    """``replace`` for a whitespace-loose match of ``find`` that spans as many lines as ``find`` does:
    a line ``replace`` keeps from ``find`` is the file's line as it stands, a changed line takes the
    indentation of the file's line in its place (plus what ``replace`` adds to ``find``'s). A model that
    wrote a dict's continuation lines 14 spaces in, where the file has 11, changed one value and must
    not re-indent the rest. '' when the lines do not pair up (the caller shifts them all alike)."""
    line_start = content.rfind("\n", 0, start) + 1
    lead = content[line_start:start]
    if lead.strip():
        return ""  # the match starts mid-line: its first line has no indentation of its own
    theirs = (lead + content[start:end]).split("\n")
    mine = [row.rstrip() for row in find.strip("\n").split("\n")]
    while mine and not mine[0].strip():
        mine.pop(0)
    new = [row.rstrip() for row in replace.strip("\n").split("\n")]
    if len(theirs) != len(mine) or len(mine) < 2 or not new:
        return ""
    out = []
    used: set[int] = set()
    for k, line in enumerate(new):
        if not line.strip():
            out.append("")
            continue
        same = [j for j, kept in enumerate(mine) if kept == line and j not in used]
        if same:
            j = k if k in same else same[0]
            used.add(j)
            out.append(theirs[j])
            continue
        j = min(k, len(mine) - 1)
        shift = len(_indent(line)) - len(_indent(mine[j]))
        base = _indent(theirs[j])
        indent = base + " " * shift if shift >= 0 else base[: max(0, len(base) + shift)]
        out.append(indent + line.lstrip(" \t"))
    out[0] = out[0][len(lead) :] if out[0].startswith(lead) else out[0].lstrip(" \t")
    return "\n".join(out)


def _reindent(replace: str, find: str, content: str, start: int) -> str:
    """``replace`` shifted from ``find``'s indentation to the file's, for a whitespace-loose match.

    The match starts at the first non-blank character, after the file's own indentation, so the first
    line loses its leading blanks and later lines trade ``find``'s indentation for the file's.
    """
    line_start = content.rfind("\n", 0, start) + 1
    file_indent = content[line_start:start]
    if file_indent.strip():
        file_indent = ""  # the match starts mid-line: there is no indentation to carry over
    first = next((line for line in find.splitlines() if line.strip()), "")
    find_indent = first[: len(first) - len(first.lstrip())]
    lines = replace.strip().split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        if not line.strip():
            out.append(line.strip(" \t"))
        elif line.startswith(find_indent):
            out.append(file_indent + line[len(find_indent) :])
        else:
            out.append(line)
    return "\n".join(out)


def _line_numbers(content: str, offsets: list[int]) -> list[int]:
    return [content.count("\n", 0, offset) + 1 for offset in offsets]


def _show_lines(content: str, numbers: list[int]) -> str:
    lines = content.splitlines()
    return "\n".join(f"  {n}: {cut_line(lines[n - 1].strip(), 120)}" for n in numbers[:8])


def _not_found(rel: str, content: str, find: str, spans: list[tuple[int, int]], replace: str = "") -> str:
    """Why ``find`` did not match once, with the lines that come closest (or, when ``replace`` is
    there already, that the change seems made: small models repeat an edit that has just worked)."""
    if not spans and _made_already(content, find, replace):
        where = content.find(replace.strip())
        at = f" (line {content.count(chr(10), 0, where) + 1})" if where >= 0 else ""
        return (
            f"find is not in {rel}, but replace is{at}: this change looks made already, by an earlier edit. "
            "Do not make it again. If that was all the user asked, answer now."
        )
    if spans:
        lines = _line_numbers(content, [start for start, _ in spans])
        return (
            f"find is not in {rel} exactly; ignoring whitespace it matches {len(spans)} times, so it is "
            f"ambiguous. Copy the text exactly from read_file and add a neighbouring line. Matches at:\n"
            f"{_show_lines(content, lines)}"
        )
    hint = ""
    if any(_NUMBERED.match(line) for line in find.splitlines()):
        hint = " find must not include the line numbers that read_file shows."
    first = next((line.strip() for line in find.splitlines() if line.strip()), find.strip())
    stripped = [line.strip() for line in content.splitlines()]
    close = difflib.get_close_matches(first, stripped, n=3, cutoff=0.5)
    numbers = sorted({stripped.index(line) + 1 for line in close})
    message = f"find was not found in {rel}.{hint}"
    if numbers:
        message += f" The closest lines are:\n{_show_lines(content, numbers)}\n"
        again = max(1, numbers[0] - 5)
        message += f"Read them again (read_file {rel} start_line={again}) and copy the text exactly."
    else:
        message += f" Read the file again (read_file {rel}) and copy the text exactly."
    return message


def _made_already(content: str, find: str, replace: str) -> bool:
    """Whether a replace of some substance (not a word that could be anywhere, not part of find, no
    line numbers copied into find) is in the file as it stands."""
    text = replace.strip()
    if len(text) < 6 or text in find or any(_NUMBERED.match(line) for line in find.splitlines()):
        return False
    return text in content or len(_looser_spans(content, text)) == 1
