"""PromptCounter: the estimate stands on the server's last count and counts only what changed."""

from __future__ import annotations

from typing import Any

import pytest

from twinny_magics.budget import PromptCounter, TokenEstimator, message_text, tools_text

SYSTEM = "You read files and answer. " * 12
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
    rendered = [msg("system", SYSTEM), msg("user", "Where is the server started?")]
    expected = sum(counter.text.tokens(m["content"]) + counter.message_overhead for m in rendered)
    assert counter.count(rendered) == expected
    assert counter.count(rendered, TOOLS) == expected + counter.text.tokens(tools_text(TOOLS))


def test_without_exact_counts_a_trimmed_result_is_taken_off_at_what_it_was_measured_to_weigh() -> None:
    counter = PromptCounter(TokenEstimator())
    first = [msg("system", SYSTEM), msg("user", "Where is the server started?")]
    counter.observe(first, None, 90)
    result = msg("user", "server.py:12: def start_server(port: int) -> None:\n" * 40)
    estimated = counter.message_tokens(result)
    grown = [*first, msg("assistant", "grep start_server"), result]
    counter.observe(grown, None, 90 + 12 + 3000)  # the result weighed far more than its estimate
    assert counter.message_tokens(result) > 2 * estimated  # the ledger now holds its measured weight
    stub = msg("user", "server.py:12: def start_server(port: int) -> None:\n[trimmed]")
    trimmed = [*grown[:3], stub]
    # Taken off at its measured weight: the estimate of what is left is near the 102 tokens before it.
    assert counter.count(trimmed) < 102 + counter.message_tokens(stub) + 25


def test_without_exact_counts_tools_the_template_drops_are_told_apart_by_the_count() -> None:
    counter = PromptCounter(TokenEstimator())
    first = [msg("system", SYSTEM), msg("user", "Where is the server started?")]
    tools = [{"type": "function", "function": {"name": "grep", "description": "Find text. " * 80}}]
    counter.observe(first, tools, counter.count(first))  # nothing left over for the tool definitions
    assert counter.tools_rendered is False
    assert counter.count(first, tools) == counter.count(first, None)
    other = PromptCounter(TokenEstimator())
    other.observe(first, tools, other.count(first, tools))
    assert other.tools_rendered is True


def test_the_features_factor_learns_a_denser_vocabulary_from_the_counts() -> None:
    counter = PromptCounter(TokenEstimator())
    first = [msg("system", SYSTEM), msg("user", "Where is the server started?")]
    counter.observe(first, None, 90)
    before = counter.text.factor
    text = "The server starts in main.py and listens on port 8080 for requests. " * 60
    added = [msg("assistant", "read main.py"), msg("user", text)]
    weight = counter.message_tokens(added[1])
    counter.observe([*first, *added], None, 90 + 10 + 3 * weight)  # three times what was estimated
    assert counter.text.factor > before
    assert counter.message_tokens(msg("user", text + " again")) > 1.3 * weight


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


def test_old_steps_are_taken_off_at_what_the_counts_measured_not_at_the_estimate() -> None:
    # The server adds 2 tokens around each message and 5 at the start; the estimate believes 9.
    def true_count(rendered: list[dict[str, Any]]) -> int:
        return 5 + sum(round(len(message_text(m)) * 0.25) + 2 for m in rendered)

    request = [msg("system", "s" * 400), msg("user", "q" * 100)]
    counter = exact_counter(request)
    counter.observe(request, None, true_count(request))
    for step in range(8):
        added = [msg("assistant", f"call {step} " + "a" * 80), msg("user", f"result {step} " + "r" * 800)]
        for m in added:
            counter.exact[message_text(m)] = round(len(message_text(m)) * 0.25)
        request = [*request, *added]
        counter.observe(request, None, true_count(request))
    counter.message_overhead = 9  # mislearned (rounded up at every step, say)
    note = msg("user", "[Earlier steps of this reply were dropped to fit the window (steps 1-6).]")
    counter.exact[message_text(note)] = round(len(message_text(note)) * 0.25)
    dropped = [request[0], request[1], note, *request[14:]]  # twelve old messages go, one note comes
    # Taken off at the estimate (9 a message) the request would be believed 84 tokens smaller than it is.
    assert counter.count(dropped) >= true_count(dropped)
    assert counter.count(dropped) <= true_count(dropped) + 9


def native_step(n: int, size: int) -> list[dict[str, Any]]:
    """A step of a native conversation: a message with one call, and its result (``size`` lines)."""
    call = {
        "id": f"c{n}",
        "type": "function",
        "function": {"name": "read_file", "arguments": f'{{"path": "src/m{n}.py"}}'},
    }
    lines = "".join(
        f"def handler_{n}_{i}(request, retries=3):\n    return route(request)\n" for i in range(size)
    )
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": lines},
    ]


def template_count(counter: PromptCounter, rendered: list[dict[str, Any]], per_call: int) -> int:
    """A server's count: every text as the features weigh it (a vocabulary they fit), 6 tokens a
    message, and ``per_call`` tokens for each native call (0: the template does not render calls)."""
    total = 0
    for m in rendered:
        total += round(counter.text.raw(str(m.get("content") or ""))) + 6
        total += per_call * len(m.get("tool_calls") or ())
    return total


@pytest.mark.parametrize("per_call", [0, 30, 60])
def test_without_exact_counts_what_a_call_weighs_is_learned_and_a_trim_takes_off_the_result_s_weight(
    per_call: int,
) -> None:
    # SmolLM2's template drops the calls; Qwen's wraps each in JSON between tags. Counted only as whole
    # prompts, a step's growth used to be shared by the estimates, and trimming a result took off the
    # wrong weight (the bench measured the estimate 10-24% over at those requests).
    counter = PromptCounter(TokenEstimator())
    rendered = [msg("system", SYSTEM), msg("user", "Where are requests routed?")]
    counter.observe(rendered, None, template_count(counter, rendered, per_call))
    for n, size in enumerate([12, 3, 20, 6, 15, 2, 9], start=1):
        rendered += native_step(n, size)
        counter.observe(rendered, None, template_count(counter, rendered, per_call))
    raw_call = counter._calls_raw(rendered[2])
    assert counter.call_share * raw_call == pytest.approx(per_call, abs=8)
    # Three results trimmed to their first line: the estimate stays within 5% of the count.
    trimmed = list(rendered)
    for index in (3, 5, 7):
        trimmed[index] = {**trimmed[index], "content": trimmed[index]["content"].split("\n")[0]}
    true = template_count(counter, trimmed, per_call)
    assert abs(counter.count(trimmed) - true) <= 0.05 * true


def test_text_mode_counts_learn_nothing_about_calls() -> None:
    counter = PromptCounter(TokenEstimator())
    first = [msg("system", SYSTEM), msg("user", "Where is the server started?")]
    counter.observe(first, None, 90)
    counter.observe([*first, msg("assistant", "```tool\n{}\n```"), msg("user", "x = 1\n" * 50)], None, 400)
    assert counter.calls.cc == 0
    assert counter.call_share == pytest.approx(counter.text.factor)
