"""The GBNF that holds a llama.cpp reply to an answer or one good call: its language, then the real server.

The pure tests read the grammar with a small GBNF reader written here (the subset ``grammar`` writes:
literals, classes, rule references, groups, ``|``, ``? * +`` and ``{m,n}``), so they check the language
the text describes: which replies it admits, and that every reply it can produce parses cleanly.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fixtures_servers import RunningServer
from hypothesis import given, settings
from hypothesis import strategies as st

from twinny_magics import protocol
from twinny_magics.loop import DEFAULT_SYSTEM_PROMPT
from twinny_magics.protocol.grammar import DEFAULT_STRING_CHARS, tool_call_grammar
from twinny_magics.servers import ChatRequest, ConnectedServer, Finish, TextChunk
from twinny_magics.tools import Workspace

# --- a reader for the GBNF subset the module writes ------------------------------------------------------

Node = tuple[Any, ...]
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}
_TOKEN = re.compile(r'\s+|"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|[A-Za-z0-9-]+|\{\d+(?:,\d*)?\}|[()|?*+]')


def _unescape(text: str, i: int) -> tuple[str, int]:
    """The character at ``text[i]`` (an escape or itself) and the index after it."""
    if text[i] != "\\":
        return text[i], i + 1
    kind = text[i + 1]
    if kind in "xuU":
        width = {"x": 2, "u": 4, "U": 8}[kind]
        return chr(int(text[i + 2 : i + 2 + width], 16)), i + 2 + width
    return _ESCAPES[kind], i + 2


def _literal(token: str) -> Node:
    out, i = [], 1
    while i < len(token) - 1:
        char, i = _unescape(token, i)
        out.append(char)
    return ("lit", "".join(out))


def _class(token: str) -> Node:
    body = token[1:-1]
    negate = body.startswith("^")
    i, ranges = (1 if negate else 0), []
    while i < len(body):
        low, i = _unescape(body, i)
        high = low
        if i + 1 < len(body) and body[i] == "-":
            high, i = _unescape(body, i + 1)
        ranges.append((ord(low), ord(high)))
    return ("cls", negate, tuple(ranges))


def _parse_body(tokens: list[str]) -> Node:
    pos = 0

    def alternatives() -> Node:
        nonlocal pos
        options = [sequence()]
        while pos < len(tokens) and tokens[pos] == "|":
            pos += 1
            options.append(sequence())
        return ("alt", tuple(options))

    def sequence() -> Node:
        nonlocal pos
        items: list[Node] = []
        while pos < len(tokens) and tokens[pos] not in "|)":
            token = tokens[pos]
            pos += 1
            if token == "(":
                item = alternatives()
                assert tokens[pos] == ")"
                pos += 1
            elif token.startswith('"'):
                item = _literal(token)
            elif token.startswith("["):
                item = _class(token)
            else:
                item = ("ref", token)
            while pos < len(tokens) and (tokens[pos] in "?*+" or tokens[pos].startswith("{")):
                low, high = {"?": (0, 1), "*": (0, None), "+": (1, None)}.get(tokens[pos], (0, 0))
                if tokens[pos].startswith("{"):
                    numbers = tokens[pos][1:-1].split(",")
                    low = int(numbers[0])
                    high = low if len(numbers) == 1 else (int(numbers[1]) if numbers[1] else None)
                item = ("rep", item, low, high)
                pos += 1
            items.append(item)
        return ("seq", tuple(items))

    node = alternatives()
    assert pos == len(tokens), tokens[pos:]
    return node


@dataclass
class Grammar:
    """A parsed GBNF grammar: whether it admits a text, and random texts it admits."""

    rules: dict[str, Node]

    @classmethod
    def parse(cls, text: str) -> Grammar:
        rules: dict[str, Node] = {}
        for line in text.splitlines():
            name, _, body = line.partition(" ::= ")
            assert name not in rules, f"rule {name} defined twice"
            tokens, pos = [], 0
            while pos < len(body):
                match = _TOKEN.match(body, pos)
                assert match is not None, f"cannot read {body[pos:]!r}"
                pos = match.end()
                if not match.group().isspace():
                    tokens.append(match.group())
            rules[name] = _parse_body(tokens)
        return cls(rules)

    def ends(
        self, node: Node, text: str, pos: int, memo: dict[tuple[int, int], frozenset[int]]
    ) -> frozenset[int]:
        key = (id(node), pos)
        if key in memo:
            return memo[key]
        memo[key] = frozenset()  # no left recursion in these grammars; a guard all the same
        kind = node[0]
        found: set[int] = set()
        if kind == "lit":
            if text.startswith(node[1], pos):
                found.add(pos + len(node[1]))
        elif kind == "cls":
            if pos < len(text) and _in_class(node, text[pos]):
                found.add(pos + 1)
        elif kind == "ref":
            found |= self.ends(self.rules[node[1]], text, pos, memo)
        elif kind == "alt":
            for option in node[1]:
                found |= self.ends(option, text, pos, memo)
        elif kind == "seq":
            current = {pos}
            for item in node[1]:
                current = {e for p in current for e in self.ends(item, text, p, memo)}
            found = current
        else:
            _, item, low, high = node
            current, count, seen = {pos}, 0, set[int]()
            while current and (high is None or count <= high):
                if count >= low:
                    found |= current
                if high is not None and count == high:
                    break
                step = {e for p in current for e in self.ends(item, text, p, memo)} - seen
                seen |= step
                current, count = step, count + 1
        memo[key] = frozenset(found)
        return memo[key]

    def admits(self, text: str) -> bool:
        return len(text) in self.ends(self.rules["root"], text, 0, {})

    def sample(self, rng: random.Random, node: Node | None = None, depth: int = 0) -> str:
        node = node or self.rules["root"]
        kind = node[0]
        if kind == "lit":
            return str(node[1])
        if kind == "cls":
            return rng.choice(_pool_in(node))
        if kind == "ref":
            return self.sample(rng, self.rules[node[1]], depth + 1)
        if kind == "alt":
            return self.sample(rng, rng.choice(node[1]), depth + 1)
        if kind == "seq":
            return "".join(self.sample(rng, item, depth + 1) for item in node[1])
        _, item, low, high = node
        # Mostly short, sometimes up to the bound; deep in a recursive value, as short as allowed.
        top = low if depth > 40 else (high if high is not None else low + 4)
        count = rng.choice([low, min(low + 1, top), rng.randint(low, top), top])
        return "".join(self.sample(rng, item, depth + 1) for _ in range(count))


def _in_class(node: Node, char: str) -> bool:
    inside = any(low <= ord(char) <= high for low, high in node[2])
    return inside is not bool(node[1])


# Characters to draw from: the ones every reader trips on, not only letters.
_POOL = list("aZ09 _-./\\\"'`{}[]()<>:,;=!?#*|~\n\t\r\x00\x1f\x7féß€漢😀") + list("abcdefxyz")


@cache
def _pool_in(node: Node) -> list[str]:
    return [c for c in _POOL if _in_class(node, c)]


# --- the tools the tests offer -----------------------------------------------------------------------------


def tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An OpenAI-style tool definition."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
GREP = tool("grep", {"pattern": STR, "path": STR}, ["pattern"])
READ = tool("read_file", {"path": STR, "start_line": INT, "end_line": INT}, ["path"])
LIST = tool("list_dir", {"path": STR}, [])
RICH = tool(
    "configure",
    {
        "mode": {"type": "string", "enum": ["fast", "safe", 'a "quoted" one', "emoji 😀"]},
        "level": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "verbose": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "limits": {
            "type": "object",
            "properties": {"low": INT, "high": INT},
            "required": ["high"],
        },
        "note": {"type": ["string", "null"]},
        "anything": {},
    },
    ["mode"],
)
NOTHING = tool("ping", {}, [])


def workspace_tools(root: Path) -> list[dict[str, Any]]:
    """The real workspace's tool definitions."""
    return Workspace(root).definitions()


def fenced(call: dict[str, Any] | str) -> str:
    """A call written as the protocol asks (a JSON object given as text is kept as written)."""
    body = call if isinstance(call, str) else json.dumps(call, ensure_ascii=False)
    return f"```tool\n{body}\n```"


@cache
def _grammar(key: str, require_call: bool) -> Grammar:
    return Grammar.parse(tool_call_grammar(json.loads(key), require_call=require_call))


def grammar_of(tools: list[dict[str, Any]], *, require_call: bool = False) -> Grammar:
    """The parsed grammar for these tools (cached: the tables ask for the same ones often)."""
    return _grammar(json.dumps(tools), require_call)


def valid_call(text: str, tools: list[dict[str, Any]]) -> bool:
    """Whether ``text`` parses as exactly one call of an offered tool with schema-valid arguments."""
    parsed = protocol.parse_reply(text, tools)
    if parsed.problems or len(parsed.calls) != 1:
        return False
    call = parsed.calls[0]
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    if call.name not in schemas:
        return False
    schema = {**schemas[call.name], "additionalProperties": False}
    return not list(jsonschema.Draft202012Validator(schema).iter_errors(call.arguments))


# --- the language ------------------------------------------------------------------------------------------

CALLS = [
    # (tools, reply, admitted)
    ([GREP], fenced({"name": "grep", "arguments": {"pattern": "createServer"}}), True),
    ([GREP], fenced('{"name":"grep","arguments":{"pattern":"x","path":"src"}}'), True),
    ([GREP], fenced('{ "name": "grep", "arguments": { "pattern": "a\\"b\\\\c\\n" } }'), True),
    ([GREP], fenced({"name": "grep", "arguments": {"pattern": "x" * DEFAULT_STRING_CHARS}}), True),
    ([GREP], fenced({"name": "grep", "arguments": {"pattern": "漢字 ünï"}}), True),
    ([GREP], fenced({"name": "grep", "arguments": {}}), False),
    ([GREP], fenced({"name": "grep", "arguments": {"path": "src"}}), False),
    ([GREP], fenced({"name": "grep", "arguments": {"path": "src", "pattern": "x"}}), False),
    ([GREP], fenced({"name": "grep", "arguments": {"pattern": 3}}), False),
    ([GREP], fenced({"name": "grep", "arguments": {"pattern": ""}}), False),
    ([GREP], fenced({"name": "grep", "arguments": {"pattern": "x", "flags": "i"}}), False),
    ([GREP], fenced({"name": "grep", "arguments": {"pattern": "x" * (DEFAULT_STRING_CHARS + 1)}}), False),
    ([GREP], fenced('{"name": "grep", "arguments": {"pattern":  "x"}}'), False),
    ([GREP], fenced('{"name": "grep", "arguments": {"pattern": "\\u0041"}}'), False),
    ([GREP], fenced('{"name": "grep", "arguments": {"pattern": "a\tb"}}'), False),
    ([GREP], fenced('{"arguments": {"pattern": "x"}, "name": "grep"}'), False),
    ([GREP], fenced({"name": "find", "arguments": {"pattern": "x"}}), False),
    ([GREP], '```json\n{"name": "grep", "arguments": {"pattern": "x"}}\n```', False),
    ([GREP], fenced({"name": "grep", "arguments": {"pattern": "x"}}) + "\nDone.", False),
    ([GREP], "Let me look.\n" + fenced({"name": "grep", "arguments": {"pattern": "x"}}), False),
    ([GREP], '<tool_call>{"name": "grep", "arguments": {"pattern": "x"}}</tool_call>', False),
    (
        [READ],
        fenced({"name": "read_file", "arguments": {"path": "a.py", "start_line": 1, "end_line": 20}}),
        True,
    ),
    ([READ], fenced({"name": "read_file", "arguments": {"path": "a.py", "end_line": 20}}), True),
    ([READ], fenced({"name": "read_file", "arguments": {"path": "a.py", "start_line": -3}}), True),
    (
        [READ],
        fenced({"name": "read_file", "arguments": {"path": "a.py", "end_line": 2, "start_line": 1}}),
        False,
    ),
    ([READ], fenced({"name": "read_file", "arguments": {"path": "a.py", "start_line": "1"}}), False),
    ([READ], fenced({"name": "read_file", "arguments": {"path": "a.py", "start_line": 1.5}}), False),
    ([READ], fenced({"name": "read_file", "arguments": {"path": "a.py", "start_line": 1e3}}), False),
    ([READ], fenced({"name": "read_file", "arguments": {"path": "a.py", "start_line": 12345678901}}), False),
    ([LIST], fenced({"name": "list_dir", "arguments": {}}), True),
    ([LIST], fenced('{"name": "list_dir", "arguments": { }}'), True),
    ([LIST], fenced({"name": "list_dir", "arguments": {"path": "src"}}), True),
    ([NOTHING], fenced({"name": "ping", "arguments": {}}), True),
    ([NOTHING], fenced({"name": "ping", "arguments": {"x": 1}}), False),
    ([GREP, READ], fenced({"name": "read_file", "arguments": {"path": "b"}}), True),
    ([GREP, READ], fenced({"name": "grep", "arguments": {"path": "b"}}), False),
    ([RICH], fenced({"name": "configure", "arguments": {"mode": "fast"}}), True),
    ([RICH], fenced({"name": "configure", "arguments": {"mode": 'a "quoted" one'}}), True),
    ([RICH], fenced({"name": "configure", "arguments": {"mode": "emoji 😀"}}), True),
    ([RICH], fenced({"name": "configure", "arguments": {"mode": "slow"}}), False),
    (
        [RICH],
        fenced(
            {
                "name": "configure",
                "arguments": {
                    "mode": "safe",
                    "level": 3,
                    "ratio": -0.25e-3,
                    "verbose": False,
                    "tags": ["a", "b", "c"],
                    "limits": {"high": 2, "low": 1},
                    "note": None,
                    "anything": {"k": [1, "two", {"three": True}]},
                },
            }
        ),
        True,
    ),
    ([RICH], fenced({"name": "configure", "arguments": {"mode": "fast", "level": 0}}), False),
    (
        [RICH],
        fenced({"name": "configure", "arguments": {"mode": "fast", "tags": ["a", "b", "c", "d"]}}),
        False,
    ),
    ([RICH], fenced({"name": "configure", "arguments": {"mode": "fast", "tags": [1]}}), False),
    ([RICH], fenced({"name": "configure", "arguments": {"mode": "fast", "limits": {"low": 1}}}), False),
    ([RICH], fenced({"name": "configure", "arguments": {"mode": "fast", "verbose": "yes"}}), False),
    ([RICH], fenced({"name": "configure", "arguments": {"mode": "fast", "note": "hi"}}), True),
    ([RICH], fenced({"name": "configure", "arguments": {"mode": "fast", "anything": "hi"}}), True),
]


@pytest.mark.parametrize(("tools", "reply", "admitted"), CALLS)
def test_the_call_branch_admits_exactly_the_calls_the_schema_allows(
    tools: list[dict[str, Any]], reply: str, admitted: bool
) -> None:
    assert grammar_of(tools, require_call=True).admits(reply) is admitted
    assert grammar_of(tools).admits(reply) is admitted
    if admitted:
        assert valid_call(reply, tools)


ANSWERS = [
    ("The handlers are in src/service3.py.", True),
    ("Use `grep` on `src/app.py`: it finds createServer.", True),
    ("Two things:\n\n- one\n- two, indented\n    - three", True),
    ('Numbers 1) and 2) are fine; so is a > b, 100% & "quotes" and ünïcödé 漢字.', True),
    ("Ends with a line break\n", True),
    (" starts with a space", False),
    ("", False),
    ("```python\nprint(1)\n```", False),
    ("See grep(pattern) for that.", False),
    ('{"name": "grep", "arguments": {"pattern": "x"}}', False),
    ('[{"name": "grep"}]', False),
    ("<tool_call>grep</tool_call>", False),
    ("a `{json}` span", False),
    ("a `multi\nline` span", False),
    ("three\n\n\nline breaks", False),
    ("spaces" + " " * 5 + "run", False),
    ("x" * 101, False),
]


@pytest.mark.parametrize(("reply", "admitted"), ANSWERS)
def test_the_answer_branch_admits_prose_without_any_call_marker(reply: str, admitted: bool) -> None:
    assert grammar_of([GREP]).admits(reply) is admitted
    assert grammar_of([]).admits(reply) is admitted
    assert not grammar_of([GREP], require_call=True).admits(reply)
    if admitted:
        parsed = protocol.parse_reply(reply, [GREP])
        assert not parsed.calls
        assert not parsed.problems


def test_without_tools_the_grammar_is_the_answer_alone() -> None:
    text = tool_call_grammar([])
    assert text.startswith("root ::= answer\n")
    assert "```tool" not in text
    assert tool_call_grammar(None) == text


def test_requiring_a_call_with_no_tool_offered_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one offered tool"):
        tool_call_grammar([], require_call=True)


@pytest.mark.parametrize(
    "tools",
    [
        [GREP, READ, LIST, NOTHING],
        [tool("my.tool", {"a b": STR}, ["a b"]), tool("My_Tool", {}, []), tool("my-tool", {"x": INT}, [])],
        [tool("root", {}, []), tool("string", {"string": STR}, ["string"]), tool("call", {}, [])],
    ],
)
def test_rule_names_are_unique_dashed_and_every_reference_is_defined(tools: list[dict[str, Any]]) -> None:
    text = tool_call_grammar(tools)
    names = [line.split(" ::= ")[0] for line in text.splitlines()]
    assert names[0] == "root"
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", name) for name in names)
    grammar = Grammar.parse(text)  # fails on an undefined reference when a rule is read
    for node in grammar.rules.values():
        assert all(ref in grammar.rules for ref in _refs(node))
    for spec in tools:
        name = spec["function"]["name"]
        required = spec["function"]["parameters"]["required"]
        arguments = dict.fromkeys(required, "v")
        assert grammar.admits(fenced({"name": name, "arguments": arguments})), name


def _refs(node: Node) -> list[str]:
    if node[0] == "ref":
        return [node[1]]
    if node[0] in ("alt", "seq"):
        return [r for child in node[1] for r in _refs(child)]
    if node[0] == "rep":
        return _refs(node[1])
    return []


def test_a_schema_may_lower_the_string_bound_and_the_caller_may_raise_it() -> None:
    short = tool("tag", {"label": {"type": "string", "maxLength": 5}}, ["label"])
    grammar = grammar_of([short], require_call=True)
    assert grammar.admits(fenced({"name": "tag", "arguments": {"label": "abcde"}}))
    assert not grammar.admits(fenced({"name": "tag", "arguments": {"label": "abcdef"}}))
    long = Grammar.parse(tool_call_grammar([GREP], require_call=True, string_chars=500))
    assert long.admits(fenced({"name": "grep", "arguments": {"pattern": "x" * 500}}))


@pytest.fixture(scope="module")
def offered(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The workspace's tools and two with every kind of parameter or none."""
    return [*workspace_tools(tmp_path_factory.mktemp("workspace")), RICH, NOTHING]


@settings(max_examples=200, deadline=None)
@given(rng=st.randoms(use_true_random=False))
def test_every_reply_the_grammar_can_produce_parses_as_an_answer_or_one_valid_call(
    offered: list[dict[str, Any]], rng: random.Random
) -> None:
    tools = offered
    grammar = grammar_of(tools)
    reply = grammar.sample(rng)
    assert grammar.admits(reply)
    parsed = protocol.parse_reply(reply, tools)
    assert not parsed.problems, reply
    if reply.startswith("```tool"):
        assert valid_call(reply, tools), reply
    else:
        assert not parsed.calls, reply
        assert parsed.content.strip() == reply.strip()


# --- the real llama.cpp server ------------------------------------------------------------------------------

PROMPTS = [
    "Where is createServer defined?",
    "List the files in src.",
    "Show me lines 1-20 of app.py.",
    "Find TODO comments.",
]


async def ask(server: RunningServer, messages: list[dict[str, Any]], grammar: str) -> tuple[str, str | None]:
    """One reply through the loop's own adapter, constrained by ``grammar``: its text and finish reason."""
    request = ChatRequest(
        messages=messages,
        model=server.model,
        max_tokens=128,
        temperature=0.0,
        extra={"grammar": grammar, "seed": 7},
    )
    parts: list[str] = []
    reason: str | None = None
    async for event in ConnectedServer(server.info).stream(request):
        if isinstance(event, TextChunk):
            parts.append(event.text)
        elif isinstance(event, Finish):
            reason = event.reason
    return "".join(parts), reason


def conversation(tools: list[dict[str, Any]], question: str) -> list[dict[str, Any]]:
    """The text-mode system prompt the loop sends, and one question."""
    system = protocol.text_mode_system_prompt(DEFAULT_SYSTEM_PROMPT, tools)
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


@pytest.mark.server
async def test_llama_cpp_accepts_the_grammar_for_every_kind_of_schema(llama_server: RunningServer) -> None:
    tools = [GREP, READ, LIST, RICH, NOTHING]
    messages = [{"role": "user", "content": "Configure it: mode safe, level 3, tags a and b."}]
    text, reason = await ask(llama_server, messages, tool_call_grammar(tools, require_call=True))
    assert reason == "stop", text
    assert valid_call(text, tools), text


@pytest.mark.server
@pytest.mark.parametrize("question", PROMPTS)
async def test_smollm2_under_a_required_call_writes_exactly_one_valid_call(
    llama_server: RunningServer, tmp_path: Path, question: str
) -> None:
    tools = workspace_tools(tmp_path)
    text, reason = await ask(
        llama_server, conversation(tools, question), tool_call_grammar(tools, require_call=True)
    )
    assert reason == "stop", text
    assert valid_call(text, tools), text


@pytest.mark.server
@pytest.mark.parametrize("question", PROMPTS)
async def test_smollm2_under_the_free_grammar_writes_an_answer_or_one_valid_call(
    llama_server: RunningServer, tmp_path: Path, question: str
) -> None:
    tools = workspace_tools(tmp_path)
    text, _ = await ask(llama_server, conversation(tools, question), tool_call_grammar(tools))
    parsed = protocol.parse_reply(text, tools)
    assert not parsed.problems, text
    assert not parsed.calls or valid_call(text, tools), text
