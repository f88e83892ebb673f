"""The section a line of a document stands in: its headings, outermost first.

A grep row that finds a changelog's entry shows only that line; the release it belongs to is a heading
tens of lines above (``pluggy 1.4.0 (2024-01-24)`` over ``Features`` over the entry). `section_of` gives
that chain, so the row can say where it stands. Markdown headings (``#`` to ``######``, outside fenced
code) rank by their ``#``s; reStructuredText titles (a line underlined, or over- and underlined, with
one punctuation character repeated) by the order their adornment is first used, as docutils ranks them.
Pure: the file's lines in, headings out; the names are the file's own words, cut short, and a caller
shows them as data.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from twinny_magics.outline import file_suffix

#: Suffixes read as Markdown, and as reStructuredText (plain text and names with no suffix, such as
#: ``CHANGES`` or ``NEWS``, are usually written in its style).
MARKDOWN = frozenset({"md", "markdown", "mdown", "mkd"})
RST = frozenset({"rst", "rest", "txt", ""})
#: At most this many headings named (the innermost ones: a changelog's release and its part, not the
#: document's title), each cut to this many characters.
MAX_DEPTH = 2
TITLE_CHARS = 60

_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(\S.*?)[ \t]*#*[ \t]*$")
_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}[ \t]*$")


@dataclass(frozen=True)
class Heading:
    """One heading: the 0-based index of its title line, its rank (1 is the top) and its title."""

    index: int
    rank: int
    title: str


def is_document(path: str) -> bool:
    """Whether a file's name says it is Markdown or reStructuredText (or plain text), whose lines stand in
    sections."""
    return file_suffix(path) in MARKDOWN | RST


def headings(path: str, lines: Sequence[str]) -> list[Heading]:
    """The headings of a document, in order; none for a file that is not Markdown or reStructuredText
    by its name."""
    suffix = file_suffix(path)
    if suffix in MARKDOWN:
        return _markdown(lines)
    if suffix in RST:
        return _rst(lines)
    return []


def section_of(found: Sequence[Heading], index: int) -> list[str]:
    """The titles of the headings line ``index`` stands under, outermost first: the nearest heading
    above it, then each nearer-the-top heading above that one (at most `MAX_DEPTH`, the innermost).
    A heading's own line stands under its parents, not under itself."""
    at = bisect.bisect_left(found, index, key=lambda h: h.index)
    chain: list[str] = []
    rank = found[at].rank if at < len(found) and found[at].index == index else None
    for heading in reversed(found[:at]):
        if rank is None or heading.rank < rank:
            chain.append(heading.title)
            rank = heading.rank
            if rank == 1 or len(chain) == MAX_DEPTH:
                break
    return chain[::-1]


def _title(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def _markdown(lines: Sequence[str]) -> list[Heading]:
    return [Heading(k, level, _title(title)) for k, level, title in markdown_titles(lines)]


def _rst(lines: Sequence[str]) -> list[Heading]:
    styles: dict[tuple[str, bool], int] = {}
    return [
        Heading(k, styles.setdefault(style, len(styles) + 1), _title(title))
        for k, style, title in rst_titles(lines)
    ]


def markdown_titles(lines: Sequence[str]) -> Iterator[tuple[int, int, str]]:
    """Markdown headings outside fenced code: each title line's index, its level (its ``#``s), its title."""
    fenced = False
    for k, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = None if fenced else _MD_HEADING.match(line)
        if match:
            yield k, len(match.group(1)), match.group(2)


def rst_titles(lines: Sequence[str]) -> Iterator[tuple[int, tuple[str, bool], str]]:
    """reStructuredText section titles: each title line's index, its adornment (the underline's
    character, and whether the title is overlined too — a style of its own, as docutils reads it) and
    its title."""
    for k in range(1, len(lines)):
        mark = _UNDERLINE.match(lines[k])
        title = lines[k - 1].strip()
        if not mark or not title or _UNDERLINE.match(lines[k - 1]) or len(lines[k].strip()) < len(title):
            continue
        over = k >= 2 and lines[k - 2].strip() == lines[k].strip()
        yield k - 1, (mark.group(1), over), title
