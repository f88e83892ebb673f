"""The loop on the real llama.cpp server (SmolLM2, a 2,048-token window): real counts, real refusals."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from twinny_magics.agent import Agent
from twinny_magics.budget import Fit, fit, trim
from twinny_magics.contracts import ChatRequest, Usage
from twinny_magics.conversation import (
    Message,
    ToolCall,
    ToolResult,
    assistant,
    render,
    system,
    tool_result,
    user,
)
from twinny_magics.servers import ConnectedServer
from twinny_magics.servers.scripted import ReplayServer, Scripted

pytestmark = pytest.mark.server


def workspace(root: Path) -> Path:
    """A small project whose files are each a good part of a 2,048-token window."""
    (root / "src").mkdir()
    for n in range(6):
        body = "\n".join(
            f"def handler_{n}_{i}(request, config):\n"
            f"    '''Answer route {i} of service {n}.'''\n"
            f"    return {{'status': 200, 'route': {i}, 'service': {n}, 'debug': config.get('debug')}}\n"
            for i in range(30)
        )
        (root / "src" / f"service{n}.py").write_text(body)
    (root / "README.md").write_text("# demo\n\nServices live in src/. createServer is in src/service3.py.\n")
    return root


def trajectory(mode: str) -> list[Scripted | str]:
    def call(name: str, **arguments: str) -> Scripted:
        if mode == "native":
            return Scripted("", (ToolCall(name, arguments),))
        return Scripted("```tool\n" + json.dumps({"name": name, "arguments": arguments}) + "\n```")

    steps: list[Scripted | str] = []
    for n in range(6):
        steps.append(call("read_file", path=f"src/service{n}.py"))
        steps.append(call("grep", pattern=f"handler_{n}_1", path="src"))
    steps.append("The handlers are in src/service*.py; each service answers 30 routes.")
    return steps


def report(agent: Agent) -> list[dict[str, Any]]:
    return [
        {
            "step": r.step,
            "estimated": r.estimated_tokens,
            "real": r.prompt_tokens,
            "limit": r.limit,
            "trimmed": r.trimmed,
            "retried": r.retried,
        }
        for reply in agent.replies
        for r in reply.requests
    ]


@pytest.mark.parametrize("mode", ["native", "text"])
def test_a_long_trajectory_at_2048_tokens_keeps_every_request_inside_the_window(
    llama_server: Any, tmp_path: Path, mode: str
) -> None:
    server = ReplayServer(ConnectedServer(llama_server.info), trajectory(mode))
    agent = Agent(server=server, workspace=workspace(tmp_path), steps=14, mode=mode)  # type: ignore[arg-type]
    reply = agent.run("Where are the handlers, and how many routes does each service answer?")
    rows = report(agent)
    print(json.dumps(rows, indent=1))
    assert reply.error is None, rows
    assert reply.text.startswith("The handlers are in src/service*.py")
    assert len(reply.requests) == 13
    plan_reply_share = 409
    for row in rows:
        assert row["retried"] is None, rows
        assert row["real"] is not None
        assert row["real"] <= 2048 - plan_reply_share, rows
    assert sum(row["trimmed"] for row in rows) >= 6
    # The first estimate is the server's count of the whole prompt, the later ones stand on the last
    # count and /tokenize: within 5% of the real prompt, and never under it by more than 2%.
    errors = [(r["estimated"] - r["real"]) / r["real"] for r in rows]
    assert max(abs(e) for e in errors) <= 0.05, rows
    assert min(errors) >= -0.02, rows


def test_smollm2_free_form_in_text_mode_runs_to_an_answer_inside_the_window(
    llama_server: Any, tmp_path: Path
) -> None:
    agent = Agent(
        server=ConnectedServer(llama_server.info),
        workspace=workspace(tmp_path),
        mode="text",
        steps=3,
        temperature=0.0,
    )
    reply = agent.run("List the files in src.")
    assert reply.error is None
    assert reply.stopped in {"answer", "steps"}
    assert all(r.prompt_tokens is not None and r.prompt_tokens <= 2048 for r in reply.requests)
    assert all(r.mode == "text" for r in reply.requests)


def test_with_the_call_grammar_smollm2_makes_a_well_formed_call_that_runs(
    llama_server: Any, tmp_path: Path
) -> None:
    agent = Agent(
        server=ConnectedServer(llama_server.info),
        workspace=workspace(tmp_path),
        mode="text",
        grammar="call-first",
        steps=3,
        temperature=0.0,
    )
    reply = agent.run("Which files are in src?")
    assert reply.error is None
    first = reply.steps[0]
    assert first.problems == []
    assert len(first.calls) == 1
    assert first.calls[0].name in {"list_dir", "find_files", "read_file", "grep", "create_file", "edit_file"}
    assert first.results


def _usage(server: ConnectedServer, messages: list[Message], **extra: Any) -> Usage:
    request = ChatRequest(render(messages, "text"), max_tokens=1, temperature=0.0, extra=extra)

    async def ask() -> Usage:
        usage = None
        async for event in server.stream(request):
            if isinstance(event, Usage):
                usage = event
        assert usage is not None
        return usage

    return asyncio.run(ask())


def test_a_trim_costs_llama_cpp_only_the_note_and_without_cache_reuse_everything_below_it(
    llama_server: Any,
) -> None:
    # A trim keeps a result's first line and adds nothing in its place (the note goes at the end of the
    # request): to the server a deletion, and the loop asks it (n_cache_reuse) to shift what it has cached
    # past one instead of reading it again.
    server = ConnectedServer(llama_server.info)

    def count(ms: Sequence[Message]) -> int:
        return len(json.dumps(render(list(ms), "text"))) // 3

    def conversation(name: str) -> tuple[list[Message], Fit]:
        """Three grep steps, and the same with the first two trimmed (by ``fit``)."""
        messages = [system("You answer questions about code."), user(f"Where is {name} read?")]
        for step in range(1, 4):
            call = ToolCall("grep", {"pattern": f"{name}_{step}"})
            lines = "\n".join(f"src/m{step}.py:{i}: {name}_{step}_{i} = read('key_{i}')" for i in range(16))
            messages += [assistant("", (call,)), tool_result(ToolResult(call, lines, step))]
        two = [
            m.with_result(trim(m.result) or m.result) if m.result and m.result.step < 3 else m
            for m in messages
        ]
        trimmed = fit(messages, limit=count(messages) - 1, target=count(two) + 60, count=count)
        assert [t.step for t in trimmed.trims] == [1, 2]
        return messages, trimmed

    # Each conversation's own words: llama.cpp also keeps earlier prompts in RAM and restores the best.
    messages, trimmed = conversation("config")
    whole = _usage(server, messages)
    assert whole.prompt_tokens is not None
    assert whole.prompt_tokens > 1000
    reused = _usage(server, trimmed.messages)
    assert reused.prompt_tokens is not None
    assert reused.cached_tokens is not None
    # Read afresh: the note and the turn's last tokens, not the third result below the trims.
    assert reused.prompt_tokens - reused.cached_tokens <= 60, (reused, whole)
    messages, trimmed = conversation("timeout")
    _usage(server, messages)
    again = _usage(server, trimmed.messages, n_cache_reuse=0)
    assert again.prompt_tokens is not None
    assert again.cached_tokens is not None
    # Without reuse the server reads again everything from the first trim on: the third result too.
    assert again.prompt_tokens - again.cached_tokens >= 300, (again, whole)
