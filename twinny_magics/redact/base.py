"""What every masking pass shares: the mask, a tool's line prefix, spans replaced, a value's mix of cases."""

from __future__ import annotations

MASK = "[secret hidden]"

# A line's prefix in a tool's answer: read_file's `  12: `, grep's `path:12: `, `cat -n`'s `    12\t`,
# grep -n's context `12-`, a table's `12 │ `; then indentation (a cell's lines in cell_history).
LINE_PREFIX = r"[ \t]{0,40}+(?:(?:[^\s:]{1,300}+:)?[0-9]{1,9}+(?:[:\t\-|│]|[ \t]{1,4}+[|│])[ \t]{0,40}+)?"
LINE_SPAN = 400  # a prefix or a neighbouring line read at most this far


def mixed(value: str, *, digits: int = 1, cases: int = 2) -> bool:
    """Whether ``value`` has at least ``digits`` digits and letters of ``cases`` cases (1 or 2)."""
    upper = any(c.isupper() for c in value)
    lower = any(c.islower() for c in value)
    return sum(c.isdigit() for c in value) >= digits and (upper + lower) >= cases


def replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each of the (sorted, disjoint) ``spans`` replaced by the mask."""
    if not spans:
        return text
    out, done = [], 0
    for start, end in spans:
        out.append(text[done:start])
        out.append(MASK)
        done = end
    out.append(text[done:])
    return "".join(out)
