"""PromptCounter: the estimate stands on the server's last count and counts only what changed."""

from __future__ import annotations

from typing import Any

import pytest

from twinny_magics.budget import PromptCounter, TokenEstimator, message_text

TOOLS = [{"type": "function", "function": {"name": "grep", "description": "d" * 300, "parameters": {}}}]


def msg(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": content}


def exact_counter(rendered: list[dict[str, Any]], per_char: float = 0.25) -> PromptCounter:
    counter = PromptCounter(TokenEstimator())
    for m in rendered:
        counter.exact[message_text(m)] = round(len(message_text(m)) * per_char)
    return counter


def test_with_nothing_counted_yet_it_sums_its_message_estimates_and_the_tools() -> None:
    counter = PromptCounter(TokenEstimator())
    rendered = [msg("system", "s" * 330), msg("user", "q" * 33)]
    assert counter.count(rendered) == TokenEstimator().tokens(330 + 16) + TokenEstimator().tokens(33 + 16)
    assert counter.count(rendered, TOOLS) > counter.count(rendered)


def test_a_request_that_adds_a_message_is_the_last_count_plus_that_message() -> None:
    first = [msg("system", "s" * 400), msg("user", "q" * 100)]
    counter = exact_counter(first)
    counter.observe(first, None, 140)
    added = msg("user", "r" * 800)
    counter.exact[message_text(added)] = 200
    assert counter.count([*first, added]) == 140 + 200 + counter.message_overhead


def test_a_trimmed_message_is_taken_off_at_its_own_count_and_its_stub_added() -> None:
    rendered = [msg("system", "s" * 400), msg("user", "x" * 4000), msg("user", "q" * 40)]
    counter = exact_counter(rendered)
    counter.observe(rendered, None, 1200)
    stub = msg("user", "x\n[trimmed]")
    counter.exact[message_text(stub)] = 4
    trimmed = [rendered[0], stub, rendered[2]]
    expected = 1200 - (1000 + counter.message_overhead) + (4 + counter.message_overhead) + 0
    assert counter.count(trimmed) == expected


def test_the_per_message_overhead_is_learned_from_exact_counts() -> None:
    first = [msg("system", "s" * 400), msg("user", "q" * 100)]
    counter = exact_counter(first)
    counter.observe(first, None, 135)
    added = [msg("assistant", "a" * 200), msg("user", "b" * 200)]
    for m in added:
        counter.exact[message_text(m)] = 50
    counter.observe([*first, *added], None, 135 + 100 + 2 * 5)
    assert counter.message_overhead == 5


def test_tools_a_template_ignores_are_neither_counted_nor_learned_from() -> None:
    first = [msg("system", "s" * 400), msg("user", "q" * 100)]
    counter = exact_counter(first)
    counter.exact[message_text({"content": ""})] = 0
    import json

    counter.exact[json.dumps(TOOLS, ensure_ascii=False, separators=(", ", ": "))] = 90
    counter.observe(first, TOOLS, 100 + 25 + 2 * 6)  # no room left for the 90 tokens of tools
    assert counter.tools_rendered is False
    assert counter.count([*first, msg("user", "x")], None) <= counter.count([*first, msg("user", "x")], TOOLS)
    assert counter.count(first, TOOLS) == 137


@pytest.mark.parametrize("rendered_tools", [True, False])
def test_a_new_turn_that_offers_the_tools_again_does_not_spoil_the_ratio(rendered_tools: bool) -> None:
    first = [msg("system", "s" * 400), msg("user", "q" * 100)]
    counter = PromptCounter(TokenEstimator())
    counter.tools_rendered = rendered_tools
    counter.observe(first, None, 160)  # the last request of a turn: no tools
    ratio = counter.estimator.ratio
    again = [first[0], msg("user", "next question " * 30)]
    tools_tokens = counter.tools_tokens(TOOLS) if rendered_tools else 0
    counter.observe(again, TOOLS, 160 - 35 + 120 + tools_tokens)
    assert abs(counter.estimator.ratio - ratio) < 2.5
    assert counter.estimator.ratio > 2.0
