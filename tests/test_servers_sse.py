"""The stream decoders: SSE, the OpenAI chunk stream, Ollama's NDJSON. Pure, so tables and properties."""

from __future__ import annotations

import json

import pytest
from fakes import scripted_chat, sse
from hypothesis import given, settings
from hypothesis import strategies as st

from twinny_magics.errors import AuthRefused, MalformedStream, PromptTooLong, ServerError, StreamCut
from twinny_magics.servers import (
    Finish,
    OllamaStreamParser,
    OpenAIStreamParser,
    SSEDecoder,
    SSEEvent,
    TextChunk,
    ToolCallDelta,
    ToolCalls,
    Usage,
)


def decode(*chunks: bytes) -> tuple[list[SSEEvent], SSEDecoder]:
    decoder = SSEDecoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)]
    return events + decoder.close(), decoder


def parse(body: bytes, pieces: int = 1) -> list[object]:
    parser = OpenAIStreamParser()
    size = max(1, len(body) // pieces)
    events: list[object] = []
    for start in range(0, len(body), size):
        events += parser.feed(body[start : start + size])
    return events + parser.finish()


# --- SSE -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"data: a\n\ndata: b\n\n", ["a", "b"]),
        (b"data: a\r\n\r\ndata: b\r\n\r\n", ["a", "b"]),
        (b"data: a\r\rdata: b\r\r", ["a", "b"]),
        (b"data: line one\ndata: line two\n\n", ["line one\nline two"]),
        (b": keep-alive\n\ndata: x\n\n", ["x"]),
        (b"data:nospace\n\n", ["nospace"]),
        (b"data:  two spaces\n\n", [" two spaces"]),
        (b"\xef\xbb\xbfdata: after bom\n\n", ["after bom"]),
        (b"event: ping\n\ndata: real\n\n", ["real"]),
        (b"data: [DONE]", ["[DONE]"]),
        (b"data\n\n", [""]),
    ],
)
def test_sse_decoder_reads_the_standard_forms(body: bytes, expected: list[str]) -> None:
    events, _ = decode(body)
    assert [e.data for e in events] == expected


def test_a_crlf_split_between_two_chunks_is_one_line_end() -> None:
    events, _ = decode(b"data: a\r", b"\ndata: b\r\n\r\n")
    assert [e.data for e in events] == ["a\nb"]


def test_llama_cpp_error_lines_become_error_events() -> None:
    events, _ = decode(b'error: {"code": 500, "message": "boom"}\n\n')
    assert events == [SSEEvent('{"code": 500, "message": "boom"}', "error")]


def test_lines_that_are_not_sse_are_skipped_and_counted() -> None:
    events, decoder = decode(b"<html>oops</html>\ndata: x\n\ngarbage\n\n")
    assert [e.data for e in events] == ["x"]
    assert decoder.skipped == 2
    assert decoder.first_skipped == "<html>oops</html>"


def test_a_line_that_never_ends_is_refused_before_it_fills_memory() -> None:
    decoder = SSEDecoder(max_line=1000)
    with pytest.raises(MalformedStream, match="ran past 1,000 characters"):
        decoder.feed(b"data: " + b"x" * 2000)


def test_invalid_utf8_is_replaced_not_refused() -> None:
    events, _ = decode(b"data: caf\xff\n\n")
    assert events[0].data == "caf\ufffd"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_sse_decoder_gives_the_same_events_whatever_the_chunking(body: bytes, cuts: list[int]) -> None:
    whole, _ = decode(body)
    points = sorted({c for c in cuts if c <= len(body)})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    split, _ = decode(*pieces)
    assert split == whole


_lines = st.sampled_from(
    [
        "data: x",
        "data:",
        "",
        ": comment",
        "event: e",
        "id: 7",
        "retry: 10",
        "garbage",
        'data: {"a": 1}',
        "error: {}",
        "\ufeff",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_lines, max_size=20), st.sampled_from(["\n", "\r\n", "\r"]), st.integers(1, 7))
def test_sse_decoder_gives_the_same_events_whatever_the_line_ends(
    lines: list[str], end: str, size: int
) -> None:
    reference, _ = decode("".join(line + "\n" for line in lines).encode())
    body = "".join(line + end for line in lines).encode()
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    assert decode(*pieces)[0] == reference


# --- the OpenAI chunk stream --------------------------------------------------------------------------


def test_a_streamed_reply_gives_text_usage_and_finish_in_order() -> None:
    events = parse(scripted_chat("Hello there."))
    assert events == [TextChunk("Hello"), TextChunk(" there."), Usage(11, 2, None), Finish("stop")]


def test_llama_cpp_usage_chunk_with_empty_choices_and_cached_tokens_is_read() -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
        {
            "choices": [],
            "usage": {
                "completion_tokens": 8,
                "prompt_tokens": 32,
                "total_tokens": 40,
                "prompt_tokens_details": {"cached_tokens": 30},
            },
            "timings": {"prompt_n": 2},
        },
        "[DONE]",
    )
    assert parse(body) == [TextChunk("Hi"), Usage(32, 8, 30), Finish("length")]


def test_litellm_usage_chunk_with_an_empty_delta_is_read() -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {"choices": [{"finish_reason": "stop", "index": 0, "delta": {}}]},
        {"choices": [{"index": 0, "delta": {}}], "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
        "[DONE]",
    )
    assert parse(body) == [TextChunk("Hi"), Usage(5, 1, None), Finish("stop")]


def _tool_stream(arguments: list[str], *, name: str = "grep") -> bytes:
    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}
    chunks: list[dict[str, object] | str] = [{"choices": [{"index": 0, "delta": {"tool_calls": [first]}}]}]
    for fragment in arguments:
        piece = {"index": 0, "function": {"arguments": fragment}}
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]})
    chunks += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}, "[DONE]"]
    return sse(*chunks)


def test_tool_call_deltas_are_assembled_by_index_and_parsed_at_the_end() -> None:
    events = parse(_tool_stream(['{"pat', 'tern": "create', 'Server"}']))
    assert events[0] == ToolCallDelta(index=0, arguments="", name="grep", id="call_1")
    assert [e.arguments for e in events if isinstance(e, ToolCallDelta)][1:] == [
        '{"pat',
        'tern": "create',
        'Server"}',
    ]
    calls = next(e for e in events if isinstance(e, ToolCalls))
    assert calls.calls[0].name == "grep"
    assert calls.calls[0].arguments == {"pattern": "createServer"}
    assert calls.calls[0].id == "call_1"
    assert calls.errors == [None]
    assert events[-1] == Finish("tool_calls")


def test_broken_tool_call_json_is_kept_as_text_with_the_reason_not_raised() -> None:
    events = parse(_tool_stream(['{"pattern": "x"']))
    calls = next(e for e in events if isinstance(e, ToolCalls))
    assert calls.calls[0].arguments == {}
    assert calls.arguments_text == ['{"pattern": "x"']
    assert calls.errors[0] is not None
    assert "not valid JSON" in calls.errors[0]
    assert calls.readable == []


def test_two_parallel_tool_calls_are_kept_apart_by_index() -> None:
    a = {"index": 0, "id": "a", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
    b = {"index": 1, "id": "b", "function": {"name": "grep", "arguments": '{"pattern": "x"}'}}
    body = sse(
        {"choices": [{"index": 0, "delta": {"tool_calls": [a]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [b]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        "[DONE]",
    )
    calls = next(e for e in parse(body) if isinstance(e, ToolCalls))
    assert [(c.name, c.arguments) for c in calls.calls] == [
        ("read_file", {"path": "a.py"}),
        ("grep", {"pattern": "x"}),
    ]


def test_arguments_encoded_twice_or_sent_as_an_object_are_read() -> None:
    twice = parse(_tool_stream([json.dumps('{"pattern": "x"}')]))
    assert next(e for e in twice if isinstance(e, ToolCalls)).calls[0].arguments == {"pattern": "x"}
    piece = {"index": 0, "id": "c", "function": {"name": "grep", "arguments": {"pattern": "y"}}}
    body = sse(
        {"choices": [{"index": 0, "delta": {"tool_calls": [piece]}, "finish_reason": "tool_calls"}]}, "[DONE]"
    )
    assert next(e for e in parse(body) if isinstance(e, ToolCalls)).calls[0].arguments == {"pattern": "y"}


def test_a_stream_that_stops_before_finishing_is_a_stream_cut() -> None:
    body = sse({"choices": [{"index": 0, "delta": {"content": "Hal"}}]})
    with pytest.raises(StreamCut, match="before the reply was finished"):
        parse(body)


def test_a_finish_reason_without_done_counts_as_finished() -> None:
    body = sse({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})
    assert parse(body) == [TextChunk("ok"), Finish("stop")]


def test_a_data_line_that_is_not_json_is_malformed_and_named() -> None:
    with pytest.raises(MalformedStream, match=r"not JSON: '\{broken'"):
        parse(b"data: {broken\n\n")


def test_an_answer_that_is_no_event_stream_at_all_is_malformed() -> None:
    with pytest.raises(MalformedStream, match="not an event stream; it began: '<html>"):
        parse(b"<html><body>Bad gateway</body></html>\n")


def test_an_error_sent_after_the_headers_is_raised_as_its_type() -> None:
    body = sse(
        {
            "error": {
                "code": 400,
                "message": "request (3031 tokens) exceeds the available context size (2048 tokens)",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 3031,
                "n_ctx": 2048,
            }
        }
    )
    with pytest.raises(PromptTooLong) as caught:
        parse(body)
    assert (caught.value.prompt_tokens, caught.value.window) == (3031, 2048)
    with pytest.raises(ServerError, match="boom"):
        parse(b'error: {"code": 500, "message": "boom"}\n\n')


def test_nothing_after_done_is_read() -> None:
    body = sse({"choices": [{"index": 0, "delta": {"content": "ok"}}]}, "[DONE]") + b"data: {broken\n\n"
    assert parse(body) == [TextChunk("ok"), Finish("stop")]


def test_a_whole_completion_from_a_server_that_ignored_stream_is_read() -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Let me look.",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "grep", "arguments": '{"pattern": "a"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9},
    }
    events = OpenAIStreamParser().completion(json.dumps(body))
    assert events[0] == TextChunk("Let me look.")
    assert next(e for e in events if isinstance(e, ToolCalls)).calls[0].arguments == {"pattern": "a"}
    assert events[-2:] == [Usage(20, 9, None), Finish("tool_calls")]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 50))
def test_the_chunk_parser_raises_nothing_but_our_stream_errors_on_any_bytes(body: bytes, size: int) -> None:
    parser = OpenAIStreamParser()
    try:
        for start in range(0, len(body), size):
            parser.feed(body[start : start + size])
        parser.finish()
    except (MalformedStream, StreamCut):
        pass


_chunk_lines = st.sampled_from(
    [
        b'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {"content": "\\u00e9"}}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {"tool_calls": '
        b'[{"index": 0, "function": {"name": "g", "arguments": "{"}}]}}]}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {"tool_calls": '
        b'[{"index": 0, "function": {"arguments": "}"}}]}}]}\n\n',
        b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}\n\n',
        b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n',
        b": ping\r\n\r\n",
        b"data: [DONE]\n\n",
        b"data: not json\n\n",
        b"junk line\n",
        b"data: 42\n\n",
        b'data: {"error": {"message": "nope"}}\n\n',
    ]
)


def _outcome(body: bytes, size: int) -> tuple[str, object]:
    parser = OpenAIStreamParser()
    events: list[object] = []
    try:
        for start in range(0, len(body), size):
            events += parser.feed(body[start : start + size])
        events += parser.finish()
    except ServerError as exc:
        return type(exc).__name__, events
    return "ok", events


@settings(max_examples=300, deadline=None)
@given(st.lists(_chunk_lines, max_size=12), st.integers(1, 40))
def test_the_chunk_parser_gives_the_same_events_and_errors_whatever_the_chunking(
    lines: list[bytes], size: int
) -> None:
    body = b"".join(lines)
    whole = _outcome(body, len(body) or 1)
    split = _outcome(body, size)
    assert split[0] == whole[0]
    if whole[0] == "ok":
        assert split[1] == whole[1]
    else:
        # Events before an error may arrive in fewer pieces, never different ones.
        assert split[1] == whole[1][: len(split[1])] or whole[1] == split[1][: len(whole[1])]


# --- Ollama's NDJSON ------------------------------------------------------------------------------


def _ndjson(*lines: dict[str, object]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def test_ollama_stream_gives_text_tool_calls_usage_and_finish() -> None:
    body = _ndjson(
        {"model": "llama3", "message": {"role": "assistant", "content": "Looking"}, "done": False},
        {
            "model": "llama3",
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "grep", "arguments": {"pattern": "x"}}}],
            },
            "done": False,
        },
        {
            "model": "llama3",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 26,
            "eval_count": 9,
        },
    )
    parser = OllamaStreamParser()
    events = [e for i in range(0, len(body), 5) for e in parser.feed(body[i : i + 5])] + parser.finish()
    assert events[0] == TextChunk("Looking")
    assert events[1] == ToolCallDelta(index=0, arguments='{"pattern": "x"}', name="grep", id=None)
    calls = events[2]
    assert isinstance(calls, ToolCalls)
    assert calls.calls[0].arguments == {"pattern": "x"}
    assert events[3:] == [Usage(26, 9, None), Finish("stop")]


def test_ollama_stream_without_done_is_a_stream_cut() -> None:
    parser = OllamaStreamParser()
    parser.feed(_ndjson({"message": {"role": "assistant", "content": "Hal"}, "done": False}))
    with pytest.raises(StreamCut):
        parser.finish()


def test_ollama_error_line_and_garbage_are_our_errors() -> None:
    with pytest.raises(AuthRefused):
        OllamaStreamParser(lambda status, text: AuthRefused(text)).feed(b'{"error": "unauthorized"}\n')
    with pytest.raises(MalformedStream, match="not JSON"):
        OllamaStreamParser().feed(b"<html>\n")
