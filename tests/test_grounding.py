"""Grounded strings: an answer about the workspace that quotes a message no file has (and nothing the reply
was shown has) goes back once to look it up; a quote the files have, code, a second time, a request for a
change and hostile quotes (patterns, secrets, huge text) are left alone or looked for as literals."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from twinny_magics.agent import Agent
from twinny_magics.engine import grounding
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.tools.workspace import Workspace

APP = (
    "def memoize(func):\n"
    "    try:\n"
    "        return cache[args]\n"
    "    except TypeError:\n"
    '        raise TypeError("Arguments to memoized function must be hashable")\n'
)
QUESTION = "What message does memoize in app.py raise for arguments that cannot be hashed?"
WRONG = "It raises:\nTypeError: unhashable type: 'list'"
RIGHT = 'It raises TypeError("Arguments to memoized function must be hashable") (app.py:5).'


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "app.py").write_text(APP)
    (root / ".env").write_text("TOKEN=the secret words are here\n")
    return root


def ask(
    workspace: Path, *replies: str, question: str = QUESTION, mode: str = "text"
) -> tuple[Agent, ScriptedServer]:
    server = ScriptedServer(list(replies))
    agent = Agent(server=server, workspace=workspace, mode=mode, steps=4, evidence=False, workspace_map=False)  # type: ignore[arg-type]
    agent.run(question)
    return agent, server


def test_a_message_quoted_from_memory_goes_back_once_to_look_it_up(workspace: Path) -> None:
    agent, server = ask(workspace, WRONG, RIGHT)
    reply = agent.replies[-1]
    assert reply.text == RIGHT
    told = server.requests[1].messages[-1]["content"]
    assert '"unhashable type: \'list"' in told
    assert "no file in the workspace contains that text" in told
    assert reply.steps[0].problems == ["quoted a string that no file has: told to look it up"]


def test_only_once_a_reply(workspace: Path) -> None:
    agent, server = ask(workspace, WRONG, WRONG)
    assert agent.replies[-1].text == WRONG
    assert len(server.requests) == 2


def test_a_quote_the_files_have_stands(workspace: Path) -> None:
    _agent, server = ask(workspace, 'It says "arguments to memoized function must be hashable".')
    assert len(server.requests) == 1
    _agent, server = ask(workspace, "TypeError: Arguments to memoized function must be hashable")
    assert len(server.requests) == 1


def test_a_quote_from_the_question_or_code_or_a_change_request_stands(workspace: Path) -> None:
    _, server = ask(workspace, 'You asked about "arguments that cannot be hashed" here.')
    assert len(server.requests) == 1
    _, server = ask(workspace, "It calls `cache.get(key, default)` first.")
    assert len(server.requests) == 1
    _, server = ask(
        workspace, 'I would write "values must be hashable" there.', question="Change app.py's message."
    )
    assert len(server.requests) <= 2
    assert all("no file in the workspace" not in m["content"] for r in server.requests for m in r.messages)


def test_a_denied_file_does_not_ground_a_quote(workspace: Path) -> None:
    _agent, server = ask(workspace, 'The token is "the secret words are here".', RIGHT)
    assert len(server.requests) == 2


def test_a_quote_is_looked_for_as_a_literal_not_a_pattern(workspace: Path) -> None:
    ws = Workspace(workspace)
    # ".*" would match anything as a pattern; as the literal it is, no file has it.
    found = grounding.quotes('It says "Arguments .* must be" there.')
    assert found == ["Arguments .* must be"]
    assert not ws.finds_text(grounding.pattern_of(found[0]))
    assert ws.finds_text(grounding.pattern_of("ARGUMENTS to  memoized function"))


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("`fold` takes `binop` and `seq` as its arguments", []),  # never read across two code spans
        ("TypeError: unhashable type: 'list'", ["unhashable type: 'list"]),
        (
            '- ValueError: "cannot have a historic firstresult hook"',
            ["cannot have a historic firstresult hook"],
        ),
        (
            'It raises ValueError("cannot have a historic firstresult hook").',
            ["cannot have a historic firstresult hook"],
        ),
        ('A path "src/app/main.py" and a call "f(x, y)" are not messages.', []),
        ('"one"', []),
        # A string inside the model's own fenced code is its code, not a quote of the workspace's.
        (
            'Run:\n```python\nprint("a fenced block of the model\'s own")\n```\nIt says "must be hashable".',
            ["must be hashable"],
        ),
        ('```\nx = "an unclosed fence runs to the end"', []),
        ("```\nTypeError: unhashable type: 'list'\n```", ["unhashable type: 'list"]),
    ],
)
def test_what_counts_as_a_quoted_message(text: str, found: list[str]) -> None:
    assert grounding.quotes(text) == found


def test_at_most_four_quotes_and_long_ones_are_skipped() -> None:
    text = " ".join(f'"message number {n} here"' for n in range(10)) + ' "' + "very long words " * 40 + '"'
    assert len(grounding.quotes(text)) == grounding.MAX_QUOTES
    assert all(len(q) <= grounding.MAX_QUOTE_CHARS for q in grounding.quotes(text))


def test_a_long_degenerate_answer_is_read_quickly() -> None:
    text = '"' * 20_000 + "`" * 20_000 + "Error: " * 5_000
    started = time.perf_counter()
    grounding.quotes(text)
    assert time.perf_counter() - started < 1.0


def test_the_correction_masks_secret_shaped_text() -> None:
    told = grounding.correction(["key sk-live-1234567890abcdef1234 is used"], "native")
    assert "sk-live-1234567890abcdef1234" not in told
