"""The conversation as plain data: tool calls, tool results and messages.

Pure: no I/O. The loop keeps one `list[Message]` per reply; the budget trims it, the protocol and the
server adapters render it for a request. A tool result is kept apart from how it is said to the model
(a native ``tool`` message, or a ``<tool_result>`` user turn in text mode) so that a conversation can be
re-rendered in the other mode when a server refuses native tools.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for: a tool name and its arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        """The arguments as compact JSON, as a native request carries them."""
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned, as the model sees it.

    ``output`` is the text sent to the model (already cut to the plan's ``result_chars``);
    ``original`` keeps the full text when it was cut or trimmed, so a display can still show it.
    ``step`` is the step of the reply that produced it; the budget trims older steps first.
    """

    call: ToolCall
    output: str
    step: int
    original: str | None = None
    cut_chars: int = 0
    trimmed: bool = False
    is_error: bool = False

    @property
    def full_text(self) -> str:
        """The output before any cut or trim."""
        return self.original if self.original is not None else self.output


@dataclass(frozen=True)
class Message:
    """One message of a request.

    ``calls`` are the native tool calls of an assistant message; ``result`` marks a tool result
    (role ``tool`` in native mode; rendered as a user turn in text mode). ``content`` of a result
    message is unused: the text is ``result.output``.
    """

    role: Role
    content: str = ""
    calls: tuple[ToolCall, ...] = ()
    result: ToolResult | None = None

    @property
    def text(self) -> str:
        """The text this message contributes, whatever its kind."""
        if self.result is not None:
            return self.result.output
        return self.content

    def with_result(self, result: ToolResult) -> Message:
        """This message carrying a changed result (used by trimming)."""
        return replace(self, result=result)


def system(text: str) -> Message:
    """A system message."""
    return Message("system", text)


def user(text: str) -> Message:
    """A user message."""
    return Message("user", text)


def assistant(text: str, calls: tuple[ToolCall, ...] = ()) -> Message:
    """An assistant message, with native calls when it made any."""
    return Message("assistant", text, calls)


def tool_result(result: ToolResult) -> Message:
    """A message carrying one tool result."""
    return Message("tool", "", result=result)


Mode = Literal["native", "text"]


# What a tool result must not carry as it is (its text comes from files, commands and servers): the
# text-mode wrapper's own tags, which would end the result early or start a fake one (`</tool_result>`
# then "User: …"), and chat-template control tokens (`<|im_end|>`, `<|start_header_id|>`, `<｜…｜>`,
# `<end_of_turn>`, `</s>`, `[INST]`, `[TOOL_CALLS]`…), which a server that parses special tokens in
# message text (llama.cpp does) would read as the end of the turn. Each keeps its letters and loses
# its opening bracket to an HTML entity — `&lt;/tool_result>`, `&lt;|im_end|>`, `&#91;INST]` — which a
# model reads as the literal text, and which is no tag or token.
_WRAPPER_TAG = re.compile(r"<(?=\s*/?\s*tool_result\b)", re.IGNORECASE)
_CONTROL_TOKEN = re.compile(
    r"<(?=[|｜]|/?s>|(?:start|end)_of_turn>|/?(?:tool_call|tool_response|function)\b)"
    r"|\[(?=/?(?:INST|TOOL_CALLS|TOOL_RESULTS|AVAILABLE_TOOLS|SYSTEM_PROMPT)\])"
)
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def inert(text: str) -> str:
    """``text`` unable to open or close a ``<tool_result>`` wrapper or to end a chat turn (see above)."""
    if "<" not in text and "[" not in text:
        return text
    text = _WRAPPER_TAG.sub("&lt;", text)
    return _CONTROL_TOKEN.sub(lambda m: "&lt;" if m.group(0) == "<" else "&#91;", text)


def result_name(name: str) -> str:
    """A tool name as an attribute value: only name characters (the model wrote it; it may hold a quote)."""
    return _NAME_UNSAFE.sub("_", name)[:64] or "tool"


def result_turn(result: ToolResult) -> str:
    """A tool result as text mode says it: a user turn wrapped in ``<tool_result>`` (its text `inert`)."""
    return f'<tool_result name="{result_name(result.call.name)}">\n{inert(result.output)}\n</tool_result>'


def render(messages: list[Message], mode: Mode) -> list[dict[str, Any]]:
    """The messages as OpenAI-style chat dicts for a request in ``mode``.

    Native: assistant calls become ``tool_calls`` and results ``tool`` messages. Text: results are user
    turns (the model wrote its calls as text, which its ``content`` already holds), and consecutive user
    turns are joined, since several chat templates refuse two user messages in a row.
    """
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if mode == "native":
            if message.result is not None:
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": message.result.call.id or f"call_{index}",
                        "name": message.result.call.name,
                        "content": inert(message.result.output),
                    }
                )
            elif message.calls:
                out.append(
                    {
                        "role": "assistant",
                        "content": message.content or None,
                        "tool_calls": [
                            {
                                "id": call.id or f"call_{index}_{n}",
                                "type": "function",
                                "function": {"name": call.name, "arguments": call.arguments_json()},
                            }
                            for n, call in enumerate(message.calls)
                        ],
                    }
                )
            else:
                out.append({"role": message.role, "content": message.content})
            continue
        role = "user" if message.result is not None else message.role
        text = result_turn(message.result) if message.result is not None else message.content
        if role == "assistant" and message.calls and not text:
            # A native call being re-said in text mode (the fallback): write it in the text protocol.
            text = "\n".join(
                f'```tool\n{{"name": "{c.name}", "arguments": {c.arguments_json()}}}\n```'
                for c in message.calls
            )
        if out and role == "user" and out[-1]["role"] == "user":
            out[-1]["content"] += "\n\n" + text
        else:
            out.append({"role": role, "content": text})
    return out
