"""An answer written in a call's shape — ``{"name": "ValueError", "arguments": {"message": …}}`` after a
sentence of prose — is the answer, written as what it says; a call of a tool that does not exist in any
other shape still goes back to the model, as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from twinny_magics.agent import Agent
from twinny_magics.engine.question import Question, call_as_prose
from twinny_magics.servers.scripted import ScriptedServer

QUESTION = "Which exception does make_hook raise for a hook that is both early and late?"
ANSWER = (
    "To answer the question, I looked at the code of make_hook in hooks.py.\n\n"
    "Therefore, the exception raised for a hook both early and late is:\n"
    '```json\n{\n    "name": "ValueError",\n    "arguments": {\n'
    '        "message": "cannot be early and late"\n    }\n}\n```'
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "hooks.py").write_text(
        "def make_hook(early, late):\n"
        "    if early and late:\n"
        "        raise ValueError('cannot be early and late')\n"
    )
    return tmp_path


def test_an_answer_in_a_calls_shape_is_the_answer_written_as_prose(workspace: Path) -> None:
    server = ScriptedServer([ANSWER])
    reply = Agent(server=server, workspace=workspace, mode="text", steps=3).run(QUESTION)
    assert len(server.requests) == 1
    assert reply.text.endswith('is:\nValueError ("cannot be early and late")')
    assert '"name"' not in reply.text
    assert not reply.steps[0].problems


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"name": "ValueError", "arguments": {"message": "x"}}\n```',  # no prose: a call
        'Let me look.\n```json\n{"name": "search", "arguments": {"q": "make_hook"}}\n```',  # a tool's name
        'I will call it now, as the question asks me to do here:\n{"name": "make_hook", "arguments": {}}',
    ],
)
def test_other_calls_of_missing_tools_still_go_back(workspace: Path, text: str) -> None:
    server = ScriptedServer([text, "ValueError."])
    reply = Agent(server=server, workspace=workspace, mode="text", steps=3).run(QUESTION)
    assert len(server.requests) == 2
    assert reply.steps[0].problems
    assert reply.text == "ValueError."


def test_the_check_reads_only_unknown_tool_problems_and_bounded_text() -> None:
    question = Question.read(QUESTION)
    unknown = 'There is no tool called "ValueError". The tools you can call are: grep.'
    assert question.answers_in_a_call([unknown], ANSWER)
    assert not question.answers_in_a_call([], ANSWER)
    assert not question.answers_in_a_call([unknown, "I could not read your tool call: x"], ANSWER)
    assert not question.answers_in_a_call([unknown], ANSWER + " word" * 10_000)


@pytest.mark.parametrize(
    ("text", "prose"),
    [
        ('It is:\n{"name": "KeyError", "arguments": {"key": "a", "n": 2}}', 'It is:\nKeyError ("a", 2)'),
        ('It is:\n```\n{"name": "Missing"}\n```', "It is:\nMissing"),
        ("It is {not json} at all", "It is {not json} at all"),
        ('It is:\n{"name": ["x"]}', 'It is:\n{"name": ["x"]}'),
        ("{" * 5000 + "}" * 4999, "{" * 5000 + "}" * 4999),
    ],
)
def test_call_as_prose_writes_only_call_shaped_json(text: str, prose: str) -> None:
    assert call_as_prose(text) == prose
