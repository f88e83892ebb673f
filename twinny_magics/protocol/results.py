"""Tool results the model wrote itself: an imitation is never an answer, and never evidence.

Pure: no I/O. Only the loop writes a tool result, after running a call; a small model that has seen a few
will write one of its own (``<tool_result name="grep" pattern="X">…</tool_result>``, a template's
``<tool_response>``, a ReAct ``Observation:``) and go on as if it were real. What it holds is made up, so
it is neither shown as the answer nor read as a result. What it *asks for* may be real: a wrapper that
names an offered tool and its arguments (attributes, or a JSON body with ``"name"`` and ``"arguments"``)
is read as the call it has the shape of.

Where the wrappers come from (one table, ``RESULT_WRAPPERS``): this protocol's own text-mode wrapper
(``conversation.result_turn``), and the result turns of the chat templates whose call dialects the parser
reads — Hermes/Qwen's ``<tool_response>``, Mistral's ``[TOOL_RESULTS]``, FunctionGemma's
``<start_function_response>``, Llama 3's ``ipython`` header, ChatML's ``tool`` role, Granite's
``tool_response`` role, GLM's ``<|observation|>``, DeepSeek's tool outputs, LFM's ``<|tool_response_start|>``
— and ReAct's ``Observation:`` line. A wrapper quoted in inline code (`` `<tool_result>` ``) is prose
about the protocol, not an imitation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from twinny_magics.conversation import ToolCall
from twinny_magics.protocol.parse import parse_reply
from twinny_magics.protocol.schema import format_call, tool_specs
from twinny_magics.retrieval import HEAD_START_LEAD

__all__ = ["LOOP_WRAPPERS", "RESULT_WRAPPERS", "Imitation", "held_result_prefixes", "imitated_results"]

#: Tag names that wrap a result (written ``<name attr="…">…</name>``, any case, closer optional).
RESULT_TAGS = (
    "tool_result",
    "tool_results",
    "tool_response",
    "tool_output",
    "tool_outputs",
    "function_result",
    "function_results",
    "function_response",
    "function_output",
)
#: Tokens and role headers that open a result turn, and what closes it (None: it runs to the reply's end).
RESULT_WRAPPERS: tuple[tuple[str, str | None], ...] = (
    ("<|tool_result|>", None),
    ("<|tool_response|>", None),
    ("<|tool_output|>", None),
    ("<|tool_response_start|>", "<|tool_response_end|>"),
    ("<|observation|>", None),
    ("<|ipython|>", None),
    ("[TOOL_RESULTS]", "[/TOOL_RESULTS]"),
    ("<start_function_response>", "<end_function_response>"),
    ("<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>"),
    ("<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>"),
    ("<|start_header_id|>ipython<|end_header_id|>", "<|eot_id|>"),
    ("<|start_header_id|>tool<|end_header_id|>", "<|eot_id|>"),
    ("<|im_start|>tool", "<|im_end|>"),
    ("<|im_start|>ipython", "<|im_end|>"),
    ("<|im_start|>function", "<|im_end|>"),
    ("<|start_of_role|>tool_response<|end_of_role|>", "<|end_of_text|>"),
    ("<|start_of_role|>tool<|end_of_role|>", "<|end_of_text|>"),
    ("<start_of_turn>tool", "<end_of_turn>"),
)
#: The loop's own words that open what it found before the first step (the head start's turn): a reply
#: that writes them copies the loop's turn, it does not answer ("The message is:\nFirst, what the loop
#: found…", seen on pluggy in text mode). Read as an imitated result that runs to the reply's end; not held
#: back while streaming (the hold-back starts at < and [ only), since the reply's answer drops it after.
LOOP_WRAPPERS = (HEAD_START_LEAD,)
_CLOSERS = dict(RESULT_WRAPPERS)
#: Attributes that name the tool a wrapper says it is the result of.
_NAME_KEYS = ("name", "tool", "tool_name", "function")
#: Attributes (or JSON keys) that hold the arguments as one JSON object.
_ARGUMENT_KEYS = ("arguments", "args", "parameters", "input")
#: Attributes that describe a result rather than ask for anything.
_NOT_ARGUMENTS = frozenset(
    (
        "id",
        "call_id",
        "tool_call_id",
        "status",
        "type",
        "step",
        "index",
        "is_error",
        "error",
        "ok",
        "exit_code",
        "code",
        "lines",
        "chars",
        "cut",
        "truncated",
        "result",
        "output",
        "content",
    )
)
_TAGS = "|".join(sorted(RESULT_TAGS, key=len, reverse=True))
_OPENER = re.compile(
    rf"<\s*(?P<tag>{_TAGS})\b(?P<attrs>[^<>\n]{{0,2000}}?)(?:(?P<self>/?)>|(?P<open>$))"
    rf"|(?P<token>{'|'.join(re.escape(o) for o, _ in RESULT_WRAPPERS)})"
    rf"|(?P<loop>{'|'.join(re.escape(o) for o in LOOP_WRAPPERS)})"
    r"|^[ \t]*(?P<react>Observation[ \t]*:)",
    re.IGNORECASE | re.MULTILINE,
)
_ATTRIBUTE = re.compile(r"""([A-Za-z_][\w.-]{0,63})\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>/]+))""")


def held_result_prefixes(limit: int) -> tuple[str, ...]:
    """What the stream hold-back stops showing at, as for a call marker: the openers of imitated results,
    each cut to its first ``limit`` characters (a made-up result is not shown while it streams either)."""
    openers = (
        [f"<{tag}" for tag in RESULT_TAGS] + [opener for opener, _ in RESULT_WRAPPERS] + list(LOOP_WRAPPERS)
    )
    return tuple(dict.fromkeys(opener[:limit] for opener in openers))


@dataclass(frozen=True)
class Imitation:
    """A reply read for results it wrote itself.

    ``content``: the reply without them (the model's own words); ``calls``: the calls they have the
    shape of (offered tools with arguments, as ``parse_reply`` reads them); ``wrappers``: how each was
    opened, for the message to the model.
    """

    content: str
    calls: tuple[ToolCall, ...]
    wrappers: tuple[str, ...]


def imitated_results(text: str, tools: list[dict[str, Any]] | None = None) -> Imitation | None:
    """The tool results ``text`` imitates, and the calls they ask for; None when it imitates none."""
    spans: list[tuple[int, int]] = []
    calls: list[ToolCall] = []
    wrappers: list[str] = []
    pos = 0
    while pos < len(text):
        match = _OPENER.search(text, pos)
        if match is None:
            break
        start = match.start()
        if text.count("`", text.rfind("\n", 0, start) + 1, start) % 2 == 1:
            pos = match.end()  # quoted in inline code on its line: prose about a wrapper
            continue
        end, body = _extent(text, match)
        wrappers.append(match.group(0).strip()[:60])
        call = _asked(match, body, tools)
        if call is not None:
            calls.append(call)
        spans.append((start, end))
        pos = max(end, match.end())
    if not spans:
        return None
    pieces, last = [], 0
    for start, end in spans:
        pieces.append(text[last:start].strip())
        last = end
    pieces.append(text[last:].strip())
    return Imitation("\n\n".join(p for p in pieces if p), tuple(calls), tuple(wrappers))


def _extent(text: str, match: re.Match[str]) -> tuple[int, str]:
    """Where an imitated result ends (its closer, else the reply's end), and its body."""
    tag, token = match.group("tag"), match.group("token")
    begin = match.end()
    if tag is not None:
        if match.group("self"):
            return begin, ""
        closer = re.compile(rf"<\s*/\s*{re.escape(tag)}\s*>", re.IGNORECASE).search(text, begin)
        return (closer.end(), text[begin : closer.start()]) if closer else (len(text), text[begin:])
    if token is not None:
        closing = next((c for o, c in RESULT_WRAPPERS if o.lower() == token.lower()), None)
        at = text.find(closing, begin) if closing else -1
        return (at + len(closing), text[begin:at]) if closing and at >= 0 else (len(text), text[begin:])
    return len(text), text[begin:]  # ReAct: what follows an observation rests on it


def _asked(match: re.Match[str], body: str, tools: list[dict[str, Any]] | None) -> ToolCall | None:
    """The call an imitated result has the shape of: an offered tool named, with arguments; else None."""
    name: str | None = None
    arguments: dict[str, Any] = {}
    attrs = match.group("attrs")
    if attrs:
        found = {
            m.group(1).lower(): next(g for g in m.groups()[1:] if g is not None)
            for m in _ATTRIBUTE.finditer(attrs)
        }
        name = next((found[k] for k in _NAME_KEYS if found.get(k)), None)
        packed = next((found[k] for k in _ARGUMENT_KEYS if k in found), None)
        if packed is not None:
            arguments = _object(packed) or {}
        else:
            arguments = {k: v for k, v in found.items() if k not in _NAME_KEYS and k not in _NOT_ARGUMENTS}
        embedded = _embedded(attrs)  # <tool_result name="grep" "arguments": {"pattern": "x"}}>
        if embedded is not None and not arguments:
            inner = next((embedded[k] for k in _ARGUMENT_KEYS if isinstance(embedded.get(k), dict)), None)
            arguments = inner if inner is not None else embedded
            named = embedded.get("name")
            name = name or (named if isinstance(named, str) else None)
    if not arguments:
        obj = _object(body.strip())
        if obj is not None:
            named = obj.get("name") or obj.get("tool") or obj.get("tool_name")
            packed_args = next((obj[k] for k in _ARGUMENT_KEYS if isinstance(obj.get(k), dict)), None)
            if isinstance(named, str) and packed_args:
                name, arguments = named, packed_args
    if not name or not arguments:
        return None
    parsed = parse_reply(format_call(ToolCall(name, arguments)), tools)
    if len(parsed.calls) != 1 or parsed.problems:
        return None
    call = parsed.calls[0]
    spec = tool_specs(tools).get(call.name)
    if spec is not None and not (
        set(call.arguments) <= set(spec.params) and spec.required <= set(call.arguments)
    ):
        return None  # a description of a result ("lines", "matches"), not the arguments of a call
    return call


def _embedded(text: str) -> dict[str, Any] | None:
    """The first JSON object written inside a tag's attributes (what follows it is ignored), or None."""
    at = text.find("{")
    if at < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text, at)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _object(text: str) -> dict[str, Any] | None:
    """``text`` as one JSON object, or None (a result's body is data: anything else is not asked for)."""
    if not text.startswith("{") or len(text) > 20_000:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
