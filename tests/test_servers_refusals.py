"""Servers' refusals and failed connections, read as our error types (bodies as the servers send them)."""

from __future__ import annotations

import json

import httpx
import pytest

from twinny_magics.errors import (
    AuthRefused,
    MalformedStream,
    ModelNotFound,
    PromptTooLong,
    ServerError,
    ServerTimeout,
    ServerUnreachable,
    StreamCut,
    ToolHistoryRefused,
    ToolsRefused,
)
from twinny_magics.servers.refusals import error_from_exception, error_from_response

LLAMA_TOO_LONG = json.dumps(
    {
        "error": {
            "code": 400,
            "message": "request (7530 tokens) exceeds the available context size (4096 tokens), try "
            "increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 7530,
            "n_ctx": 4096,
        }
    }
)
LITELLM_TOO_LONG = json.dumps(
    {
        "error": {
            "message": "litellm.ContextWindowExceededError: litellm.BadRequestError: "
            "ContextWindowExceededError: OpenAIException - request (3031 tokens) exceeds the available "
            "context size (2048 tokens), try increasing it\nmodel=smollm2. context_window_fallbacks=None. "
            "fallbacks=None.\n\nSet "
            "'context_window_fallback' - https://docs.litellm.ai/docs/routing#fallbacks",
            "type": "invalid_request_error",
            "param": None,
            "code": "400",
        }
    }
)
VLLM_TOO_LONG = json.dumps(
    {
        "object": "error",
        "message": "This model's maximum context length is 16384 tokens. However, you requested 17000 "
        "tokens (16000 in the messages, 1000 in the completion). Please reduce the length of the messages "
        "or completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
)
OPENAI_TOO_LONG = json.dumps(
    {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130512 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
)
LMSTUDIO_TOO_LONG = json.dumps(
    {
        "error": "Trying to keep the first 5120 tokens when context the overflows. However, the model is "
        "loaded with context length of 4096 tokens, which is not enough. Try to load the model with a "
        "larger context length, or provide a shorter input"
    }
)
OLLAMA_TOO_LONG = json.dumps({"error": "the input length exceeds the context length"})


@pytest.mark.parametrize(
    ("status", "body", "prompt", "window"),
    [
        (400, LLAMA_TOO_LONG, 7530, 4096),
        (400, LITELLM_TOO_LONG, 3031, 2048),
        (400, VLLM_TOO_LONG, 16000, 16384),
        (400, OPENAI_TOO_LONG, 130512, 128000),
        (400, LMSTUDIO_TOO_LONG, 5120, 4096),
        (400, OLLAMA_TOO_LONG, None, None),
        (400, '{"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum"}}', None, None),
    ],
)
def test_too_long_refusals_carry_the_servers_numbers(
    status: int, body: str, prompt: int | None, window: int | None
) -> None:
    error = error_from_response(status, body, url="http://127.0.0.1:8080/v1/chat/completions")
    assert isinstance(error, PromptTooLong)
    assert (error.prompt_tokens, error.window) == (prompt, window)
    assert error.status == 400
    assert error.body is not None


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, '{"error": "registry.ollama.ai/library/gemma:2b does not support tools"}'),
        (400, '{"error": {"message": "gemma:2b does not support tools", "type": "api_error"}}'),
        (
            400,
            '{"object": "error", "message": "\\"auto\\" tool choice requires --enable-auto-tool-choice and '
            '--tool-call-parser to be set", "type": "BadRequestError", "code": 400}',
        ),
        (
            422,
            '{"detail": [{"type": "extra_forbidden", "loc": ["body", "tools"], '
            '"msg": "Extra inputs are not permitted"}]}',
        ),
    ],
)
def test_a_refusal_that_mentions_tools_on_a_request_with_tools_is_tools_refused(
    status: int, body: str
) -> None:
    assert isinstance(error_from_response(status, body, url="u", had_tools=True), ToolsRefused)


def test_the_same_words_without_tools_in_the_request_are_not_tools_refused() -> None:
    body = '{"error": "gemma:2b does not support tools"}'
    assert type(error_from_response(400, body, url="u")) is ServerError


@pytest.mark.parametrize(
    "body",
    [
        '{"error": {"message": "Unexpected message role: tool", "type": "invalid_request_error"}}',
        '{"error": {"message": "Conversation roles must alternate user/assistant/user/assistant/..."}}',
    ],
)
def test_a_refusal_of_tool_messages_without_tools_offered_is_tool_history_refused(body: str) -> None:
    error = error_from_response(400, body, url="u", had_tool_history=True)
    assert isinstance(error, ToolHistoryRefused)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (404, '{"error": "model \\"llama3\\" not found, try pulling it first"}'),
        (404, '{"object": "error", "message": "The model `gpt-5` does not exist.", "type": "NotFoundError"}'),
        (
            400,
            '{"error": {"message": "/chat/completions: Invalid model name passed in model=nope. Call '
            '`/v1/models` to view available models for your key.", "type": "invalid_request_error", '
            '"code": "400"}}',
        ),
        (404, '{"error": {"message": "The model `x` does not exist", "code": "model_not_found"}}'),
    ],
)
def test_a_missing_model_is_model_not_found(status: int, body: str) -> None:
    error = error_from_response(status, body, url="u", model="llama3")
    assert isinstance(error, ModelNotFound)
    assert "'llama3'" in str(error)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (401, '{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}'),
        (403, "Forbidden"),
        (400, '{"error": {"message": "No connected db.", "type": "no_db_connection", "code": "400"}}'),
    ],
)
def test_a_refused_key_is_auth_refused_and_says_how_to_pass_one(status: int, body: str) -> None:
    error = error_from_response(status, body, url="u")
    assert isinstance(error, AuthRefused)
    assert "api_key" in str(error)


def test_a_404_that_is_not_about_a_model_asks_whether_the_url_is_right() -> None:
    error = error_from_response(
        404, '{"error":{"message":"File Not Found","type":"not_found_error","code":404}}', url="u"
    )
    assert type(error) is ServerError
    assert "base URL" in str(error)


def test_any_other_refusal_is_a_server_error_with_the_servers_words() -> None:
    error = error_from_response(500, "<html>Internal Server Error</html>", url="http://x")
    assert type(error) is ServerError
    assert "HTTP 500" in str(error)
    assert "Internal Server Error" in str(error)


def test_a_long_body_is_shortened() -> None:
    error = error_from_response(500, "x" * 5000, url="u")
    assert error.body is not None
    assert len(error.body) <= 501


def _request() -> httpx.Request:
    return httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")


@pytest.mark.parametrize(
    ("exc", "started", "kind"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), False, ServerUnreachable),
        (httpx.ConnectTimeout("timed out"), False, ServerTimeout),
        (httpx.ReadTimeout("timed out"), False, ServerTimeout),
        (httpx.ReadTimeout("timed out"), True, ServerTimeout),
        (
            httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
            True,
            StreamCut,
        ),
        (httpx.ReadError("connection reset"), True, StreamCut),
        (
            httpx.RemoteProtocolError("Server disconnected without sending a response."),
            False,
            ServerUnreachable,
        ),
        (httpx.DecodingError("bad gzip"), True, MalformedStream),
        (
            httpx.UnsupportedProtocol("Request URL is missing an 'http://' or 'https://' protocol."),
            False,
            ServerUnreachable,
        ),
    ],
)
def test_failed_connections_are_our_error_types(
    exc: Exception, started: bool, kind: type[ServerError]
) -> None:
    error = error_from_exception(exc, url="http://127.0.0.1:1", started=started, timeout=1.5)
    assert type(error) is kind
    assert "127.0.0.1:1" in str(error)
