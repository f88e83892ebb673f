"""The stream decoders under hypothesis: whatever bytes a server sends, in whatever chunking, only our errors.

``test_servers_sse.py`` holds the decoders' behaviour; here every decoder (SSE, the OpenAI chunk stream,
Ollama's NDJSON, the line decoder) and every reader of a server's words (call arguments, refusals, the
window answer) is fed arbitrary bytes and hostile JSON: deep nesting, codes that are not numbers, lone
surrogates, huge numbers, wrong types where objects belong. Nothing but a ``ServerError`` may come out,
and what does come out stays well formed. Seeded (``derandomize``) so a run is the same every time.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twinny_magics.errors import MalformedStream, ServerError
from twinny_magics.servers import (
    Finish,
    OllamaStreamParser,
    OpenAIStreamParser,
    SSEDecoder,
    TextChunk,
    ToolCallDelta,
    ToolCalls,
    Usage,
)
from twinny_magics.servers.asking import json_of, positive
from twinny_magics.servers.base import read_arguments
from twinny_magics.servers.refusals import error_from_response, error_message, too_long_numbers
from twinny_magics.servers.sse import LineDecoder

SEEDED = settings(derandomize=True, deadline=None, max_examples=200, database=None)
EVENT_TYPES = (TextChunk, ToolCallDelta, ToolCalls, Usage, Finish)

# --- hostile JSON -------------------------------------------------------------------------------------

#: Strings a hostile or broken server may send where a number, a name or text belongs.
ODD_STRINGS = [
    "\ud800",
    "a\udfffb",
    "\u00b2",
    "\u0663",
    "1" * 5000,
    "NaN",
    "-1",
    "",
    " ",
    "[DONE]",
    "\x00",
    "stop",
    "tool_calls",
    "grep",
    '{"pattern": "x"}',
    '{"pattern": ',
    "[" * 3000,
]
#: Raw JSON texts that json.loads reads into odd values, or refuses in odd ways (nesting too deep).
ODD_JSON_TEXTS = [
    "[" * 5000 + "]" * 5000,
    "[" * 100_000,
    '{"a":' * 3000 + "1" + "}" * 3000,
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "9" * 5000,
    '"\\ud800"',
    '"\\udfff\\ud800"',
    '"\\u0000"',
    "null",
    "true",
    "[]",
    "{}",
]
KEYS = [
    "choices",
    "delta",
    "message",
    "content",
    "tool_calls",
    "function",
    "name",
    "arguments",
    "id",
    "index",
    "finish_reason",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_details",
    "cached_tokens",
    "error",
    "code",
    "type",
    "n_prompt_tokens",
    "n_ctx",
    "done",
    "done_reason",
    "prompt_eval_count",
    "eval_count",
    "detail",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(ODD_STRINGS),
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(KEYS), children, max_size=5)
    ),
    max_leaves=25,
)


def dumps(value: Any) -> str:
    """JSON text of ``value`` (NaN written as NaN, lone surrogates as escapes, as Python writes them)."""
    return json.dumps(value)


json_texts = st.one_of(json_values.map(dumps), st.sampled_from(ODD_JSON_TEXTS))

# --- streams built from them -----------------------------------------------------------------------


def _chunk(*, content: Any, name: Any, arguments: Any, reason: Any, usage: Any, index: Any) -> dict[str, Any]:
    """A chat-completion chunk of the real shape with hostile values where its fields go."""
    call = {"index": index, "id": content, "function": {"name": name, "arguments": arguments}}
    choice = {"index": 0, "delta": {"content": content, "tool_calls": [call]}, "finish_reason": reason}
    return {"choices": [choice], "usage": usage}


def _usage_of(prompt: Any, completion: Any, cached: Any) -> dict[str, Any]:
    details = {"cached_tokens": cached}
    return {"prompt_tokens": prompt, "completion_tokens": completion, "prompt_tokens_details": details}


shaped_chunks = st.builds(
    _chunk,
    content=json_values,
    name=json_values,
    arguments=st.one_of(json_values, json_texts),
    reason=json_values,
    usage=st.one_of(json_values, st.builds(_usage_of, json_values, json_values, json_values)),
    index=st.one_of(st.integers(min_value=-3, max_value=3), json_values),
).map(dumps)
sse_lines = st.one_of(
    shaped_chunks.map(lambda text: f"data: {text}"),
    json_texts.map(lambda text: f"data: {text}"),
    json_texts.map(lambda text: f"error: {text}"),
    st.sampled_from(
        [
            "data: [DONE]",
            "",
            ": keep-alive",
            "event: error",
            "event: message",
            "id: 3",
            "retry: x",
            "garbage",
            "data:",
            "<html>",
        ]
    ),
    st.text(max_size=30),
)
sse_streams = st.tuples(st.lists(sse_lines, max_size=12), st.sampled_from(["\n", "\r\n", "\r", "\n\n"])).map(
    lambda parts: "".join(line + parts[1] for line in parts[0]).encode("utf-8", "surrogatepass")
)


def _ollama_chunk(
    *, content: Any, name: Any, arguments: Any, done: Any, counts: Any, call_id: Any
) -> dict[str, Any]:
    """An ``/api/chat`` chunk of the real shape with hostile values where its fields go."""
    call = {"id": call_id, "function": {"name": name, "arguments": arguments}}
    message = {"role": "assistant", "content": content, "tool_calls": [call]}
    return {
        "message": message,
        "done": done,
        "done_reason": content,
        "prompt_eval_count": counts,
        "eval_count": counts,
    }


shaped_lines = st.builds(
    _ollama_chunk,
    content=json_values,
    name=json_values,
    arguments=st.one_of(json_values, json_texts),
    done=st.sampled_from([False, True, None, "true", 1]),
    counts=json_values,
    call_id=json_values,
).map(dumps)
ndjson_streams = st.lists(
    st.one_of(shaped_lines, json_texts, st.text(max_size=30), st.just("")), max_size=12
).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass"))
any_bytes = st.binary(max_size=600)


def chunked(body: bytes, cuts: list[int]) -> list[bytes]:
    """``body`` split at ``cuts`` (taken modulo its length, so any cut is a cut)."""
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


cut_lists = st.lists(st.integers(min_value=0, max_value=10**6), max_size=10)


def run_parser(parser: OpenAIStreamParser | OllamaStreamParser, pieces: list[bytes]) -> tuple[str, list[Any]]:
    """Feed every piece, then finish: ``("ok", events)`` or the name of the ServerError and the events so far.

    Any other exception escapes, and fails the test that called this.
    """
    events: list[Any] = []
    failure: ServerError | None = None
    try:
        for piece in pieces:
            events += parser.feed(piece)
        events += parser.finish()
    except ServerError as error:
        failure = error
    if failure is None:
        return "ok", events
    assert str(failure), "a ServerError must say something a person can act on"
    return type(failure).__name__, events


def assert_well_formed(events: list[Any], outcome: str) -> None:
    """Events are ours, Finish comes once and last, and every call has a name and a dict of arguments."""
    assert all(isinstance(e, EVENT_TYPES) for e in events)
    finishes = [n for n, e in enumerate(events) if isinstance(e, Finish)]
    assert len(finishes) <= 1
    if outcome == "ok":
        assert finishes == [len(events) - 1]
    for e in events:
        if isinstance(e, TextChunk):
            assert isinstance(e.text, str)
            assert e.text
        if isinstance(e, ToolCallDelta):
            assert isinstance(e.arguments, str)
            assert isinstance(e.index, int)
        if isinstance(e, ToolCalls):
            assert all(isinstance(c.name, str) and isinstance(c.arguments, dict) for c in e.calls)
            assert len(e.calls) == len(e.errors) == len(e.arguments_text)
        if isinstance(e, Usage):
            assert all(n is None or type(n) is int for n in (e.prompt_tokens, e.completion_tokens))


# --- the OpenAI chunk stream ----------------------------------------------------------------------------


@SEEDED
@given(any_bytes, cut_lists)
def test_the_openai_parser_raises_only_server_errors_on_any_bytes_in_any_chunking(
    body: bytes, cuts: list[int]
) -> None:
    outcome, events = run_parser(OpenAIStreamParser(), chunked(body, cuts))
    assert_well_formed(events, outcome)


@SEEDED
@given(sse_streams, cut_lists)
def test_the_openai_parser_raises_only_server_errors_on_hostile_json_events(
    body: bytes, cuts: list[int]
) -> None:
    outcome, events = run_parser(OpenAIStreamParser(), chunked(body, cuts))
    assert_well_formed(events, outcome)


@SEEDED
@given(sse_streams, cut_lists)
def test_the_openai_parser_ends_the_same_way_whatever_the_chunking(body: bytes, cuts: list[int]) -> None:
    whole = run_parser(OpenAIStreamParser(), [body])
    split = run_parser(OpenAIStreamParser(), chunked(body, cuts))
    assert split[0] == whole[0]
    if whole[0] == "ok":
        assert split[1] == whole[1]


@SEEDED
@given(json_texts)
def test_a_whole_completion_of_any_json_is_read_or_refused_as_malformed(text: str) -> None:
    parser = OpenAIStreamParser()
    try:
        events = parser.completion(text)
    except ServerError:
        return
    assert_well_formed(events, "ok")


@SEEDED
@given(json_values)
def test_a_whole_completion_with_hostile_fields_is_read_or_refused_as_malformed(value: Any) -> None:
    completion = {"choices": [{"index": 0, "message": value, "finish_reason": value}], "usage": value}
    try:
        events = OpenAIStreamParser().completion(dumps(completion))
    except ServerError:
        return
    assert_well_formed(events, "ok")


# --- Ollama's NDJSON -----------------------------------------------------------------------------------


@SEEDED
@given(any_bytes, cut_lists)
def test_the_ollama_parser_raises_only_server_errors_on_any_bytes_in_any_chunking(
    body: bytes, cuts: list[int]
) -> None:
    outcome, events = run_parser(OllamaStreamParser(), chunked(body, cuts))
    assert_well_formed(events, outcome)


@SEEDED
@given(ndjson_streams, cut_lists)
def test_the_ollama_parser_raises_only_server_errors_on_hostile_json_lines(
    body: bytes, cuts: list[int]
) -> None:
    outcome, events = run_parser(OllamaStreamParser(), chunked(body, cuts))
    assert_well_formed(events, outcome)


@SEEDED
@given(ndjson_streams, cut_lists)
def test_the_ollama_parser_ends_the_same_way_whatever_the_chunking(body: bytes, cuts: list[int]) -> None:
    whole = run_parser(OllamaStreamParser(), [body])
    split = run_parser(OllamaStreamParser(), chunked(body, cuts))
    assert split[0] == whole[0]
    if whole[0] == "ok":
        assert split[1] == whole[1]


def _ollama_line(value: Any, done: Any) -> bytes:
    chunk = {"message": {"role": "assistant", "content": value, "tool_calls": value}, "done": done}
    return (dumps(chunk) + "\n").encode("utf-8", "surrogatepass")


@SEEDED
@given(st.lists(st.tuples(json_values, st.sampled_from([False, True, None, "true", 1])), max_size=6))
def test_ollama_chunks_with_hostile_fields_give_well_formed_events_or_our_errors(
    lines: list[tuple[Any, Any]],
) -> None:
    body = b"".join(_ollama_line(value, done) for value, done in lines)
    outcome, events = run_parser(OllamaStreamParser(), [body])
    assert_well_formed(events, outcome)


# --- the plain decoders -----------------------------------------------------------------------------


@SEEDED
@given(any_bytes, cut_lists)
def test_the_line_decoder_gives_the_same_lines_whatever_the_chunking(body: bytes, cuts: list[int]) -> None:
    def lines(pieces: list[bytes]) -> list[str]:
        decoder = LineDecoder()
        return [line for piece in pieces for line in decoder.feed(piece)] + decoder.close()

    whole = lines([body])
    assert lines(chunked(body, cuts)) == whole
    assert all("\n" not in line for line in whole)


@SEEDED
@given(any_bytes, cut_lists, st.integers(min_value=1, max_value=64))
def test_the_sse_decoder_raises_only_malformed_stream_for_a_line_too_long(
    body: bytes, cuts: list[int], max_line: int
) -> None:
    decoder = SSEDecoder(max_line=max_line)
    failure: MalformedStream | None = None
    try:
        for piece in chunked(body, cuts):
            decoder.feed(piece)
        decoder.close()
    except MalformedStream as error:
        failure = error
    assert failure is None or f"ran past {max_line:,} characters" in str(failure)


@pytest.mark.parametrize(("decoder", "megabytes"), [(SSEDecoder, 1), (LineDecoder, 4)])
def test_a_line_that_never_ends_costs_time_in_proportion_to_its_length(decoder: Any, megabytes: int) -> None:
    """A server trickling one endless line in small pieces must not make each piece rescan all before it.

    Both decoders refuse a line past 8 MB; before that, a line sent a kilobyte at a time cost time in the
    square of its length (an 8 MB line: minutes of CPU on the reply's thread).
    """
    lines = decoder()
    piece = b"x" * 1024
    started = time.perf_counter()
    lines.feed(b"data: ")
    for _ in range(megabytes * 1024):
        lines.feed(piece)
    assert time.perf_counter() - started < 0.5


# --- reading a server's words --------------------------------------------------------------------------


@SEEDED
@given(st.one_of(json_texts, st.text(max_size=60)))
def test_call_arguments_of_any_text_are_a_dict_or_a_reason(text: str) -> None:
    arguments, error = read_arguments(text)
    assert isinstance(arguments, dict)
    assert error is None or (isinstance(error, str) and not arguments)


@SEEDED
@given(st.integers(min_value=0, max_value=999), st.one_of(json_texts, st.text(max_size=60)))
def test_any_refusal_body_with_any_status_is_one_of_our_errors_with_a_message(status: int, text: str) -> None:
    error = error_from_response(status, text, url="http://127.0.0.1:1/v1/chat/completions", had_tools=True)
    assert isinstance(error, ServerError)
    assert str(error)
    message, found = error_message(text)
    assert isinstance(message, str)
    assert isinstance(found, dict)
    numbers = too_long_numbers(message, found)
    assert numbers is None or all(n is None or isinstance(n, int) for n in numbers)


@SEEDED
@given(json_values, st.sampled_from(["error", "detail", "message"]))
def test_an_error_object_with_hostile_fields_sent_inside_a_stream_is_one_of_our_errors(
    value: Any, key: str
) -> None:
    body = dumps({"error": {"code": value, "message": value, "type": value, key: value}})
    assert isinstance(error_from_response(200, body), ServerError)


@SEEDED
@given(json_values)
def test_a_window_value_of_any_json_is_a_positive_int_or_none(value: Any) -> None:
    found = positive(value)
    assert found is None or (isinstance(found, int) and found > 0)


@SEEDED
@given(st.one_of(json_texts, st.binary(max_size=100).map(lambda b: b.decode("latin-1"))))
def test_a_window_answer_of_any_body_is_read_or_none(text: str) -> None:
    response = httpx.Response(200, content=text.encode("utf-8", "surrogatepass"))
    json_of(response)  # any value, or None; never an exception
