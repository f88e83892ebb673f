"""Properties of the text protocol on arbitrary text, including text built from call-marker fragments."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from twinny_magics.conversation import ToolCall
from twinny_magics.protocol import (
    StreamDetector,
    displayable_length,
    format_call,
    parse_reply,
    parse_tool_calls,
)
from twinny_magics.protocol.parse import MAX_PROBLEMS, _Reader
from twinny_magics.protocol.schema import tool_specs

STR = {"type": "string"}
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "grep",
            "description": "Search.",
            "parameters": {
                "type": "object",
                "properties": {"pattern": STR, "path": STR},
                "required": ["pattern"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read.",
            "parameters": {
                "type": "object",
                "properties": {"path": STR, "start_line": {"type": "integer"}},
                "required": ["path"],
            },
        },
    },
]

FRAGMENTS = [
    *("```", "```tool\n", "```json\n", "```python\n", "\n", " ", "\t", "`", "``"),
    *(
        "<tool_call>",
        "</tool_call>",
        "<tool_ca",
        "<function=",
        "<function=grep>",
        "<function name=",
        "</function>",
    ),
    *("<parameter=", "<parameter=pattern>", "<parameter=path>", "</parameter>", "<arg_key>", "</arg_value>"),
    *(
        "[TOOL_CALLS]",
        "[TOOL_CA",
        "[ARGS]",
        "[/TOOL_CALLS]",
        "<|python_tag|>",
        "<|python_start|>",
        "<|python_end|>",
    ),
    *("<|tool_call_start|>", "<|tool_call_end|>", "<think>", "</think>", "<thi", "<response>", "<xml>"),
    *('{"name": ', '{"name"', '"grep"', '"read_file"', '"search"', '"arguments": ', '"parameters": ', '{"'),
    *(
        "<start_function_call>",
        "<start_funct",
        "<end_function_call>",
        "<start_function_response>",
        "call:",
        "call:grep{",
        "pattern:",
        "path:",
        "<escape>",
        "<esc",
    ),
    *('{"tool_calls": [', '{"thought": ', '"tool_calls": ', '[{"name": ', "[\n    ", "```\n[", "[]"),
    *("{", "}", "[", "]", "(", ")", '"', "'", '"""', "\\", "\\n", ",", ";", ":", "=", "<", ">"),
    *(
        "grep(",
        "read_file(",
        "grep {",
        'path="a.py"',
        "pattern='x'",
        "start_line=3",
        "x",
        "1",
        "null",
        "True",
    ),
]
marker_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=40).map("".join)
any_text = st.one_of(st.text(max_size=300), marker_text)
tools_or_none = st.sampled_from([None, TOOLS])


@settings(max_examples=300)
@given(any_text, tools_or_none)
def test_parse_reply_never_raises_and_returns_well_formed_calls(
    text: str, tools: list[dict[str, Any]] | None
) -> None:
    reply = parse_reply(text, tools)
    assert all(isinstance(call, ToolCall) and isinstance(call.arguments, dict) for call in reply.calls)
    assert len(reply.problems) <= MAX_PROBLEMS
    assert isinstance(reply.content, str)
    if tools is not None:
        assert {call.name for call in reply.calls} <= {"grep", "read_file"}


@settings(max_examples=300)
@given(any_text)
def test_parsing_stays_within_its_work_budget(text: str) -> None:
    reader = _Reader(text, tool_specs(TOOLS))
    reader.read()
    assert not reader.scan.exhausted


@settings(max_examples=300)
@given(any_text)
def test_displayable_length_is_a_length_of_the_text_that_only_grows_as_text_arrives(text: str) -> None:
    shown = displayable_length(text)
    assert 0 <= shown <= displayable_length(text, final=True) <= len(text)
    for cut in range(0, len(text), 7):
        assert displayable_length(text[:cut]) <= shown


@settings(max_examples=200)
@given(any_text, st.data())
def test_streaming_in_any_chunking_shows_and_reads_what_one_pass_does(text: str, data: st.DataObject) -> None:
    detector = StreamDetector(TOOLS)
    shown, at = "", 0
    while at < len(text):
        size = data.draw(st.integers(min_value=1, max_value=13), label="chunk")
        shown += detector.feed(text[at : at + size])
        at += size
        assert shown == text[: displayable_length(text[:at])]
    assert shown == text[: displayable_length(text)]
    shown += detector.flush()
    assert shown == text[: displayable_length(text, final=True)]
    assert detector.finish() == parse_reply(text, TOOLS)


# One call of grep in each dialect, as a model would write it.
MARKED_CALLS = [
    '```tool\n{"name": "grep", "arguments": {"pattern": "x"}}\n```',
    '```json\n[{"name": "grep", "arguments": {"pattern": "x"}}]\n```',
    '<tool_call>\n{"name": "grep", "arguments": {"pattern": "x"}}\n</tool_call>',
    "<function=grep>\n<parameter=pattern>\nx\n</parameter>\n</function>",
    '[TOOL_CALLS][{"name": "grep", "arguments": {"pattern": "x"}}]',
    '<|python_tag|>{"name": "grep", "parameters": {"pattern": "x"}}',
    '{"name": "grep", "arguments": {"pattern": "x"}}',
    "<start_function_call>call:grep{pattern:<escape>x<escape>}<end_function_call>",
    '[{"name": "grep", "arguments": {"pattern": "x"}}]',
    '[\n    {"name": "grep", "arguments": {"pattern": "x"}}\n]',
    '{"tool_calls": [{"name": "grep", "arguments": {"pattern": "x"}}]}',
    '{"thought": "Searching.", "tool_calls": [{"name": "grep", "arguments": {"pattern": "x"}}]}',
]
# Prose with none of the characters a marker starts with, so any text held back belongs to the call.
prose = st.text(st.sampled_from("abcdefgh xyz.,:;!?'-\n"), max_size=60)


@settings(max_examples=200)
@given(prose, st.sampled_from(MARKED_CALLS), st.sampled_from(["", " ", "\n"]))
def test_streaming_never_shows_any_part_of_a_call_marker(before: str, call: str, gap: str) -> None:
    text = before + gap + call
    start = len(before + gap)
    for cut in range(start, len(text) + 1):
        assert displayable_length(text[:cut]) <= start
    assert displayable_length(text, final=True) <= start
    assert parse_reply(text, TOOLS).calls == [ToolCall("grep", {"pattern": "x"})]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200)
@given(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True),
    st.dictionaries(st.text(min_size=1, max_size=10), json_values, max_size=4),
)
def test_a_formatted_call_always_reads_back_as_the_same_call(name: str, arguments: dict[str, Any]) -> None:
    call = ToolCall(name, arguments)
    assert parse_tool_calls(format_call(call)) == [call]
    assert parse_tool_calls("Some prose first.\n\n" + format_call(call) + "\n") == [call]
