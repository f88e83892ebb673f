"""Private keys' bodies without their armour in sight: line by line, under any tool's line prefix, or
joined by ``\\n`` escapes in one string; left alone beside the armour of something public.
"""

from __future__ import annotations

import re

from .base import LINE_PREFIX, LINE_SPAN, mixed, replace_spans

# A private key's body without its armour in sight (read_file from a later line, one grep hit, a cut
# result): lines of base64 as wide as PEM (64) or OpenSSH (70) writes them, each with upper and lower
# case letters and digits, in a run — or alone — and the shorter last line of the run. A run next to the
# armour of something public (`-----END CERTIFICATE-----`) is left alone.
_BODY_WIDTHS = (64, 70)
_BODY_SUFFIX = r"(?:\\n)?[\"']?[ \t]{0,8}[,+)]?[ \t]{0,8}\r?"
_BODY_LINE = re.compile(
    LINE_PREFIX + r"(?:[bBrRuU]?[\"'])?(?P<body>[A-Za-z0-9+/]{64,70}+={0,2})" + _BODY_SUFFIX
)
_LAST_BODY = re.compile(
    LINE_PREFIX + r"(?:[bBrRuU]?[\"'])?(?P<body>[A-Za-z0-9+/]{4,69}={0,2})" + _BODY_SUFFIX
)
_ARMOUR = re.compile(r"-----(?:BEGIN|END) ([A-Z0-9 ]{1,60})-----")
# The same body in one string with `\n` escapes (a service account's JSON, a key in a Python literal).
_ESCAPED_BODY = re.compile(r"\\n(?P<body>[A-Za-z0-9+/]{70}|[A-Za-z0-9+/]{64})(?=\\n)")
_ESCAPED_EDGE = re.compile(r"[A-Za-z0-9+/]{1,70}+={0,2}")
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


def mask_key_bodies(text: str) -> str:
    """``text`` with private key bodies hidden, line by line and inside ``\\n``-joined strings."""
    text = _mask_key_lines(text)
    if "\\n" in text:
        text = _mask_escaped_bodies(text)
    return text


def _mask_key_lines(text: str) -> str:
    """Private key bodies (see `_BODY_LINE`) hidden line by line, armour or not; linear in the text."""
    spans: list[tuple[int, int]] = []
    block: list[tuple[int, int]] = []  # the full-width lines of the block being read
    block_end = -1  # where the block's last line ends (its newline)
    start = 0
    for line in text.split("\n"):
        end = start + len(line)
        # A body line is 64 or 70 wide, with a prefix and quotes at most LINE_SPAN in all.
        if 64 <= len(line) <= LINE_SPAN + 80:
            found = _BODY_LINE.fullmatch(text, start, end)
            if found is not None and _full_width(found.group("body")):
                if block and start != block_end + 1:
                    spans.extend(_settled(text, block, block_end))
                    block = []
                block.append(found.span("body"))
                block_end = end
        start = end + 1
    spans.extend(_settled(text, block, block_end))
    return replace_spans(text, spans)


def _full_width(body: str) -> bool:
    """Whether a run of base64 is a whole line of a key: as wide as PEM or OpenSSH writes, and mixed."""
    return (len(body) in _BODY_WIDTHS or len(body.rstrip("=")) in _BODY_WIDTHS) and mixed(body)


def _settled(text: str, block: list[tuple[int, int]], block_end: int) -> list[tuple[int, int]]:
    """The spans to hide of a block of full-width body lines: each of them, and the shorter last line
    after them — none when the line before or after is the armour of something public."""
    if not block:
        return []
    spans = list(block)
    after_start = block_end + 1
    after = _line_at(text, after_start)
    if after is not None:
        last = _LAST_BODY.fullmatch(text, after_start, after)
        if last is not None:
            spans.append(last.span("body"))
            after_start = after + 1
            after = _line_at(text, after_start)
    first_line_start = text.rfind("\n", max(0, block[0][0] - LINE_SPAN), block[0][0]) + 1
    before_end = first_line_start - 1
    before_start = text.rfind("\n", max(0, before_end - LINE_SPAN), before_end) + 1 if before_end > 0 else 0
    neighbours = [text[before_start:before_end] if before_end > 0 else ""]
    if after is not None:
        neighbours.append(text[after_start:after])
    for line in neighbours:
        armour = _ARMOUR.search(line)
        if armour is not None and "PRIVATE" not in armour.group(1):
            return []  # a certificate's, a public key's or a signature's body: public, and useful
    return spans


def _line_at(text: str, start: int) -> int | None:
    """Where the line starting at ``start`` ends (within `LINE_SPAN`), or None past the text."""
    if start > len(text):
        return None
    end = text.find("\n", start, start + LINE_SPAN)
    if end < 0:
        return len(text) if len(text) - start <= LINE_SPAN else None
    return end


def _mask_escaped_bodies(text: str) -> str:
    """Key bodies inside one string, lines joined by ``\\n`` escapes (`_ESCAPED_BODY`), hidden."""
    spans: list[tuple[int, int]] = []
    run: list[re.Match[str]] = []
    for found in _ESCAPED_BODY.finditer(text):
        if not mixed(found.group("body")):
            continue
        if run and found.start() != run[-1].end():
            spans.extend(_escaped_run(text, run))
            run = []
        run.append(found)
    spans.extend(_escaped_run(text, run))
    return replace_spans(text, spans)


def _escaped_run(text: str, run: list[re.Match[str]]) -> list[tuple[int, int]]:
    """One span for a run of escaped full-width body lines, with a line cut short before it (a grep
    window's edge) and the shorter line after it; none when the armour beside it names something public."""
    if not run:
        return []
    first = run[0].start()  # the backslash of the `\\n` before the first full line
    start = _cut_line_start(text, first)
    end = run[-1].end()
    if text.startswith("\\n", end):
        tail = _ESCAPED_EDGE.match(text, end + 2)
        if tail is not None:
            end = tail.end()
    before = text[max(0, start - 80) : start]
    near = (before[before.rfind("-----BEGIN") :] if "-----BEGIN" in before else "", text[end : end + 80])
    for side in near:
        armour = _ARMOUR.search(side)
        if armour is not None and "PRIVATE" not in armour.group(1):
            return []
    return [(start, end)]


def _cut_line_start(text: str, index: int) -> int:
    """Where a body line cut short and ending at ``index`` starts (a window's edge: ``…xY3/q\\n``), or
    ``index + 2`` (past the ``\\n``) when what is before is not one."""
    start = index
    floor = max(0, index - 70)
    while start > floor and text[start - 1] in _BASE64_CHARS:
        start -= 1
    if start in (index, floor) or (start > 0 and text[start - 1] == "\\"):
        return index + 2  # nothing, longer than a line, or a whole line after a `\\n` of its own
    return start
