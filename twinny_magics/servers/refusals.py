"""What a server's refusal or a failed connection means, as one of our error types. Pure.

Servers word the same refusal differently; the patterns below are the ones seen or documented:

- too long: llama.cpp ``exceed_context_size_error`` (``n_prompt_tokens``, ``n_ctx``); LiteLLM
  ``litellm.ContextWindowExceededError: … request (N tokens) exceeds the available context size (M
  tokens)``; vLLM/OpenAI ``This model's maximum context length is N tokens. However, you requested M
  tokens (P in the messages, …)``; LM Studio ``Trying to keep the first N tokens … context length of M
  tokens``; Ollama ``the input length exceeds the context length``.
- tools: Ollama ``… does not support tools``; vLLM ``"auto" tool choice requires
  --enable-auto-tool-choice``; servers that reject unknown fields (``tools``).
- model: Ollama ``model "x" not found``; vLLM/OpenAI ``The model `x` does not exist``; LiteLLM ``Invalid
  model name passed in model=x``.

Nothing a server says reaches a message unmasked: the session's API key (``secret``) and anything shaped
like a credential (``redact.mask_value``) are hidden before the text is shortened, so a 401 that echoes
the key (or dumps the request's ``Authorization`` header) shows ``[secret hidden]`` instead, in the cell,
in ``Reply.error`` and in the saved notebook. Numbers in a refusal are checked (``numbers``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

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
from twinny_magics.redact import mask_value
from twinny_magics.servers.base import read_json
from twinny_magics.servers.numbers import token_count, window_size

_BODY_CHARS = 500

_TOO_LONG_WORDS = re.compile(
    r"ContextWindowExceeded|context_length_exceeded|exceed_context_size|exceeds? (?:the )?(?:available )?"
    r"context|maximum context length|context length of|context window|prompt is too long|too many tokens"
    r"|input length exceeds",
    re.IGNORECASE,
)
_PAIRS = (
    # (prompt, window) in the order the server says them
    (re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"), "pw"),
    (re.compile(r"keep the first (\d+) tokens.*?context length of (\d+) tokens", re.DOTALL), "pw"),
)
_WINDOW = re.compile(r"maximum context length is (\d+) tokens|context (?:length|size|window) (?:is|of) (\d+)")
_PROMPT = (
    re.compile(r"\((\d+) in the messages"),
    re.compile(r"your (?:messages|prompt) resulted in (\d+) tokens"),
    re.compile(r"request has (\d+) input tokens"),
    re.compile(r"you requested (\d+) tokens"),
    re.compile(r"prompt (?:has|is|of) (\d+) tokens"),
)
_MODEL_MISSING = re.compile(
    r"model\b.{0,120}?\b(?:not found|does not exist)|model_not_found|invalid model name|unknown model"
    r"|no such model|not a valid model",
    re.IGNORECASE | re.DOTALL,
)


#: Characters past a cut that are masked too, so a key that starts before the cut is hidden whole.
_MASK_MARGIN = 4096


def shorten(text: str, limit: int = _BODY_CHARS) -> str:
    """``text`` cut to ``limit`` characters, marked when cut."""
    return text if len(text) <= limit else text[:limit] + "…"


def masked(text: str, secret: str | None = None, limit: int = _BODY_CHARS) -> str:
    """``text`` with ``secret`` and every credential shape hidden, then cut to ``limit`` characters.

    Masked before it is cut (a key cut in half no longer has the shape that finds it), and only the part
    that can be shown (plus a margin), so a body of megabytes costs no more than a short one.
    """
    return shorten(mask_value(text[: limit + _MASK_MARGIN], secret), limit)


def hide_secret(error: ServerError, secret: str | None) -> ServerError:
    """``error`` with ``secret`` and every credential shape masked in its message and body (in place)."""
    if error.args and isinstance(error.args[0], str):
        error.args = (mask_value(error.args[0], secret), *error.args[1:])
    if error.body is not None:
        error.body = mask_value(error.body, secret)
    return error


def error_message(text: str) -> tuple[str, dict[str, Any]]:
    """The human message in an error body, and its JSON error object (``{}`` when there is none)."""
    try:
        body: Any = read_json(text)
    except ValueError:
        return text.strip(), {}
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            message = error.get("message")
            return (message if isinstance(message, str) else json.dumps(error)), error
        if isinstance(error, str):
            return error, body
        for key in ("message", "detail"):
            value = body.get(key)
            if isinstance(value, str):
                return value, body
            if value is not None:
                return json.dumps(value), body
    if isinstance(body, str):
        return body, {}
    return text.strip(), {}


def _status(code: Any) -> int:
    """The HTTP status an error sent inside a begun stream names in its ``code``, else 500.

    Only a real status counts: ``"²"`` passes ``str.isdigit`` and ``int()`` still refuses it, and a code
    of thousands of digits is past what ``int()`` converts.
    """
    if isinstance(code, str) and code.isascii() and code.isdigit() and len(code) == 3:
        code = int(code)
    return code if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599 else 500


def too_long_numbers(message: str, error: dict[str, Any]) -> tuple[int | None, int | None] | None:
    """``(prompt_tokens, window)`` if ``message`` says the prompt is too long (numbers when given)."""
    if error.get("type") == "exceed_context_size_error" or "n_prompt_tokens" in error:
        return token_count(error.get("n_prompt_tokens")), window_size(error.get("n_ctx"))
    for pattern, _order in _PAIRS:
        found = pattern.search(message)
        if found:
            return token_count(found.group(1)), window_size(found.group(2))
    if not _TOO_LONG_WORDS.search(message):
        return None
    window_match = _WINDOW.search(message)
    window = window_size(next(g for g in window_match.groups() if g)) if window_match else None
    prompt = None
    for pattern in _PROMPT:
        found = pattern.search(message)
        if found:
            prompt = token_count(found.group(1))
            break
    return prompt, window


def error_from_response(
    status: int,
    text: str,
    *,
    url: str | None = None,
    model: str | None = None,
    had_tools: bool = False,
    had_tool_history: bool = False,
    secret: str | None = None,
) -> ServerError:
    """The error a refused request (HTTP ``status``, body ``text``) means, with a message to act on.

    ``secret`` (the session's API key) and credential shapes are masked in the message and the body.
    """
    message, error = error_message(text)
    if status < 400:
        # An error sent inside a stream that had begun (HTTP 200): its own code says what it was.
        status = _status(error.get("code"))
    said = masked(message or f"HTTP {status}", secret)
    body = masked(text, secret)
    url = mask_value(url, secret) if url else url
    where = f"The server at {url}" if url else "The server"
    error_type = str(error.get("type") or "")
    if status in (401, 403) or error_type in ("auth_error", "no_db_connection"):
        # LiteLLM without a database answers a key that is not its master key with "No connected db."
        return AuthRefused(
            f"{where} refused the API key (HTTP {status}): {said}. Pass the right key with `api_key=` "
            "(or `--api-key` on the magic line).",
            status=status,
            body=body,
        )
    numbers = too_long_numbers(message, error)
    if numbers is not None:
        prompt, window = numbers
        sizes = ""
        if prompt is not None and window is not None:
            sizes = f" ({prompt:,} tokens; the window holds {window:,})"
        elif window is not None:
            sizes = f" (the window holds {window:,} tokens)"
        elif prompt is not None:
            sizes = f" ({prompt:,} tokens)"
        return PromptTooLong(
            f"The prompt is longer than the model's window{sizes}: {said}",
            prompt_tokens=prompt,
            window=window,
            status=status,
            body=body,
        )
    if _MODEL_MISSING.search(message) or (status == 404 and "model" in message.lower()):
        name = f" {model!r}" if model else ""
        return ModelNotFound(
            f"{where} has no model{name}: {said}. Check the model name (the server's model list "
            "shows what it has).",
            status=status,
            body=body,
        )
    if status == 404:
        return ServerError(
            f"{where} has no such route (HTTP 404): {said}. Is the base URL right?", status=status, body=body
        )
    mentions_tools = re.search(r"\btools?\b|tool_c|tool choice|function call", message, re.IGNORECASE)
    if had_tools and status in (400, 422, 500, 501) and mentions_tools:
        return ToolsRefused(f"{where} will not take tools with this model: {said}", status=status, body=body)
    if (
        had_tool_history
        and not had_tools
        and status in (400, 422, 500)
        and (mentions_tools or re.search(r"roles? must alternate", message, re.IGNORECASE))
    ):
        return ToolHistoryRefused(
            f"{where} refused tool calls in the history of a request without tools: {said}",
            status=status,
            body=body,
        )
    if status == 429:
        return ServerError(f"{where} is rate limiting requests (HTTP 429): {said}", status=status, body=body)
    return ServerError(f"{where} refused the request (HTTP {status}): {said}", status=status, body=body)


def error_from_exception(
    exc: Exception, *, url: str, started: bool, timeout: float | None = None, secret: str | None = None
) -> ServerError:
    """The error a failed connection means; ``started`` tells whether the reply had begun streaming."""
    detail = masked(str(exc) or type(exc).__name__, secret)
    url = mask_value(url, secret)
    seconds = f" within {timeout:g} s" if timeout else ""
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return ServerTimeout(f"No connection to {url}{seconds}: is the server running and reachable?")
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        if started:
            return ServerTimeout(f"The server at {url} stopped sending the reply: nothing came{seconds}.")
        return ServerTimeout(
            f"The server at {url} did not answer{seconds}; it may still be loading the model."
        )
    if isinstance(exc, httpx.ConnectError):
        return ServerUnreachable(f"Nothing answered at {url} ({detail}). Is the server running?")
    if isinstance(exc, httpx.DecodingError):
        return MalformedStream(f"The reply from {url} could not be decoded: {detail}")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError | httpx.NetworkError):
        if started:
            return StreamCut(
                f"The connection to {url} dropped in the middle of the reply ({detail}); the server may "
                "have stopped or crashed."
            )
        return ServerUnreachable(f"The server at {url} closed the connection without answering ({detail}).")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return ServerUnreachable(f"{url} is not an address the client can use ({detail}).")
    return ServerError(f"Talking to {url} failed: {detail}")
