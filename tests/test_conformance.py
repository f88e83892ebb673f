"""The parser against the conformance corpora: real model outputs from public parser test suites.

Two corpora beside this file: ``conformance_toolcalls.json`` (140 cases from the parser test suites of
vLLM, SGLang, Ollama, llama.cpp, OpenHands and Continue) and ``conformance_dialects.json`` (41 cases:
FunctionGemma from vLLM's and Ollama's parser tests, the xLAM/Hammer JSON lists from vLLM's tests and
the Hammer and xLAM repositories), in the same format, each case naming its source.
Every case is run. ``name+args`` cases must give the same names and arguments (compared as JSON text,
so key order and 1 / 1.0 / true stay distinct; where upstream checks only some arguments we check them
all), ``name_only`` cases the same names in the same number, ``parse_success_only`` cases must not raise
(and give as many calls as the case lists, when it lists them: such a test checks a count), and negatives
must give no call. Content is compared where the case gives it, ignoring whitespace at the two ends
(decision 3 in ``twinny_magics.protocol``: every upstream ``content_match`` mode is a stricter form of
this). Where this protocol decides otherwise, the case is listed below with the reason and our behaviour
is asserted instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from twinny_magics.protocol import parse_reply

CORPUS = Path(__file__).parent / "conformance_toolcalls.json"
DIALECTS = Path(__file__).with_name("conformance_dialects.json")

# Cases where this protocol deliberately reads differently from the upstream test (see the decisions in
# the docstring of twinny_magics.protocol). OURS holds the calls we give instead.
DELIBERATE = {
    "vllm-hermes-bare-string-arguments": "arguments must be a JSON object: a bare string is a problem (5)",
    "vllm-qwen3-nested-literal-unknown-function": "a tool that was not offered is a problem, not a call (1)",
    "vllm-mistral-v11-truncated-json": "JSON that never closes is a problem, not a call with raw text (6)",
    "ollama-json-non-call-then-call": "a JSON object that is not a call does not hide the call after it (2)",
    "vllm-functiongemma-stream-escaped-number": "<escape>10<escape> is text: no schema keeps it '10' (4)",
}
OURS: dict[str, list[dict[str, Any]]] = {
    "vllm-hermes-bare-string-arguments": [],
    "vllm-qwen3-nested-literal-unknown-function": [
        {
            "name": "write_file",
            "arguments": {
                "path": "fixture.py",
                "content": 'template = """\n<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n'
                '</function>\n</tool_call>\n"""',
            },
        }
    ],
    "vllm-mistral-v11-truncated-json": [],
    "ollama-json-non-call-then-call": [
        {"name": "get_conditions", "arguments": {"location": "San Francisco"}}
    ],
    "vllm-functiongemma-stream-escaped-number": [
        {"name": "search", "arguments": {"query": "python", "limit": "10", "sort": "relevance"}}
    ],
}
# Continue's own TOOL_NAME:/BEGIN_ARG: protocol is not a dialect we read (the corpus calls it informative).
NOT_READ = {
    "continue-codeblock-after-prose": "Continue's block protocol is not read",
    "continue-bare-tool-name-no-fence": "Continue's block protocol is not read",
    "continue-codeblock-mid-message": "Continue's block protocol is not read",
    "continue-codeblock-json-values": "Continue's block protocol is not read",
    "continue-codeblock-then-text": "Continue's block protocol is not read",
}
# Calls agree but the text around them does not: (reason, the content we give).
CONTENT_DIFFERS = {
    "vllm-llama3json-surrounding-text": (
        "prose around a bare JSON call is kept (2)",
        "Here is the result:  Would you like to know more?",
    ),
    "vllm-mistral-pre-v11-trailing-data-nonstreaming": (
        "text after a Mistral call list is kept (3), as vLLM's own streaming path does",
        "extra trailing data",
    ),
    "vllm-mistral-v11-name-without-args": (
        "an unreadable call stays in the content; only the [TOOL_CALLS] token goes",
        "toolname_no_args",
    ),
    "vllm-xlam-think-then-list": ("a think block goes to .thinking, not content (7)", ""),
    "ollama-list-unknown-name-swallowed": (
        "a call that could not be read stays in the content",
        '[{"name": "search", "arguments": {"query": "What is the capital of Canada?"}}',
    ),
    "ollama-qwen3-implicit-thinking-then-call": (
        "the reply alone cannot show that the prompt opened a think block",
        "Let me think",
    ),
    "llamacpp-commandr-plus-action-fence": ("'Action:' before a fence is prose to us", "Action:"),
}


def _load(path: Path) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["cases"]
    return cases


def _cases() -> list[Any]:
    # Loaded at collection: a missing corpus is an error, never a skip.
    return [pytest.param(case, id=case["id"]) for case in [*_load(CORPUS), *_load(DIALECTS)]]


def _as_json(calls: list[dict[str, Any]]) -> list[str]:
    return [json.dumps({"name": c["name"], "arguments": c["arguments"]}) for c in calls]


def test_the_corpora_hold_all_their_cases_and_every_listed_exception_names_one_of_them() -> None:
    shared, dialects = _load(CORPUS), _load(DIALECTS)
    ids = {case["id"] for case in [*shared, *dialects]}
    assert (len(shared), len(dialects), len(ids)) == (140, 41, 181)
    assert all(set(case["source"]) >= {"repo", "path", "test", "commit"} for case in dialects)
    assert set(DELIBERATE) == set(OURS)
    assert set(DELIBERATE) | set(NOT_READ) | set(CONTENT_DIFFERS) <= ids
    assert len(DELIBERATE) <= 5


@pytest.mark.parametrize("case", _cases())
def test_corpus_case_reads_as_upstream_expects_or_as_we_decided(case: dict[str, Any]) -> None:
    reply = parse_reply(case["raw_text"], case["tools"])
    got = [{"name": call.name, "arguments": call.arguments} for call in reply.calls]
    case_id, expected = case["id"], case["expected_calls"]

    if case_id in DELIBERATE:
        assert _as_json(got) == _as_json(OURS[case_id]), DELIBERATE[case_id]
        refused = len(OURS[case_id]) < len(expected)
        assert bool(reply.problems) == refused, "a call we refuse to read is reported to the model"
        return
    if case_id in NOT_READ:
        assert got == []
        fenced = "```tool" in case["raw_text"]
        assert bool(reply.problems) == fenced, "a ```tool fence we cannot read gets a message with an example"
        return

    if case["asserted"] == "name+args" and expected is not None:
        assert _as_json(got) == _as_json(expected)
    elif case["asserted"] == "name_only" and expected is not None:
        assert [c["name"] for c in got] == [c["name"] for c in expected]
    elif expected:
        assert len(got) == len(expected)

    if case_id in CONTENT_DIFFERS:
        assert reply.content.strip() == CONTENT_DIFFERS[case_id][1].strip(), CONTENT_DIFFERS[case_id][0]
        return
    if case["expected_content"] is not None:
        assert reply.content.strip() == case["expected_content"].strip()
    for part in case.get("expected_content_contains") or []:
        assert part in reply.content


def test_calls_inside_an_unclosed_think_block_are_not_read_and_the_block_is_thinking() -> None:
    reply = parse_reply("<think><tool_call>nah uhg</tool_call>")
    assert reply.calls == []
    assert reply.problems == []
    assert reply.thinking == "<tool_call>nah uhg</tool_call>"


def test_a_think_block_before_a_call_list_is_kept_as_thinking() -> None:
    text = '<think>I\'ll help you with that.</think>[{"name": "f", "arguments": {"a": 1}}]'
    reply = parse_reply(text)
    assert reply.thinking == "I'll help you with that."
    assert reply.content == ""
