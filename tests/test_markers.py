"""The one table of call markers, and the three readers that take their markers from it agreeing with it.

The parser reads a call in every marker of the table (a strong one's unreadable body is a problem, a
special token never reaches the content); the stream hold-back holds back every held marker while it is
half-written and shows the rest; the lazy grammar takes over at exactly the markers marked for it.
"""

from __future__ import annotations

import pytest

from twinny_magics.protocol import HOLD, displayable_length, parse_reply
from twinny_magics.protocol.grammar import CALL_OPENERS, FENCE_OPENER, call_opener, may_open_call
from twinny_magics.protocol.markers import FENCE, FUNCTION, GEMMA, MARKERS, Marker, marker

GREP = {
    "type": "function",
    "function": {
        "name": "grep",
        "description": "Search.",
        "parameters": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}},
            "required": ["pattern"],
        },
    },
}
JSON_CALL = '{"name": "grep", "arguments": {"pattern": "x"}}'
IDS = [m.opener for m in MARKERS]


def written(m: Marker, body: str | None = None) -> str:
    """A grep call written in marker ``m`` (or ``m`` around ``body``)."""
    if m.dialect == FENCE:
        return f"{m.opener}\n{JSON_CALL if body is None else body}\n{m.closer}"
    if body is None and m.dialect == GEMMA:
        body = "call:grep{pattern:<escape>x<escape>}"
    if body is None and m.dialect == FUNCTION:
        body = ("grep>" if m.opener.endswith("=") else 'name="grep">') + "<parameter=pattern>x</parameter>"
    return m.opener + (JSON_CALL if body is None else body) + (m.closer or "")


def test_the_table_is_well_formed() -> None:
    openers = [m.opener for m in MARKERS]
    assert len(set(openers)) == len(openers)
    # No tag opener begins another: the parser's alternation of them matches at most one at a position.
    # (A fence's language is read as a whole word, so ```tool and ```tool_call are told apart.)
    tags = [m.opener for m in MARKERS if m.dialect != FENCE]
    assert not [(a, b) for a in tags for b in tags if a != b and b.startswith(a)]
    for m in MARKERS:
        assert marker(m.opener) is m
        assert m.held is None or m.opener.startswith(m.held)
        assert not m.special or m.strong
        assert not m.grammar or m.closer is not None


@pytest.mark.parametrize("m", MARKERS, ids=IDS)
def test_the_parser_reads_a_call_in_every_marker(m: Marker) -> None:
    reply = parse_reply("Looking.\n" + written(m), [GREP])
    assert [(c.name, c.arguments) for c in reply.calls] == [("grep", {"pattern": "x"})]
    assert reply.content == "Looking."
    assert not reply.problems


@pytest.mark.parametrize("m", [m for m in MARKERS if m.dialect != FUNCTION], ids=lambda m: m.opener)
def test_a_strong_marker_means_a_call_and_a_special_one_is_never_content(m: Marker) -> None:
    reply = parse_reply("Looking.\n" + written(m, "%%%"), [GREP])
    assert bool(reply.problems) is m.strong
    assert (m.opener not in reply.content) is m.special


@pytest.mark.parametrize("m", MARKERS, ids=IDS)
def test_the_stream_holds_back_exactly_the_held_markers(m: Marker) -> None:
    before = "Looking.\n"  # a line start, where a fence counts
    if m.held is None:
        text = before + m.opener
        assert displayable_length(text) == len(text)
        return
    stem = m.held[:HOLD]
    for cut in range(1, len(stem) + 1):
        assert displayable_length(before + stem[:cut]) == len(before), stem[:cut]
    # Whole, it is a call's start even when the reply ends there.
    assert displayable_length(before + m.opener, final=True) == len(before)
    assert displayable_length(before + written(m), final=True) == len(before)


def test_the_grammar_takes_over_at_exactly_the_grammar_markers() -> None:
    assert list(CALL_OPENERS) == [m.opener for m in MARKERS if m.grammar]
    assert marker(FENCE_OPENER).dialect == FENCE
    for m in MARKERS:
        for cut in range(1, len(m.opener)):
            assert may_open_call(m.opener[:cut]) is (any(o.startswith(m.opener[:cut]) for o in CALL_OPENERS))
        # A reply that writes ```tool_call is taken over at ```tool: the grammar finishes the call from there.
        expected = next((o for o in CALL_OPENERS if m.opener.startswith(o)), None)
        assert call_opener(written(m)) == expected
        assert not m.grammar or expected == m.opener
