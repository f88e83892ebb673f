"""A reply that says what it will do and stops ("I'll read the notebook…") has not looked yet: it goes back
once to carry out its first step. An answer, small talk, or a reply after a tool ran is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from twinny_magics.agent import Agent
from twinny_magics.notes import announces_a_plan
from twinny_magics.servers.scripted import ScriptedServer

GREP = '```tool\n{"name": "grep", "arguments": {"pattern": "PORT"}}\n```'


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text("PORT = 8080\n")
    return tmp_path


@pytest.mark.parametrize(
    ("text", "plan"),
    [
        ("I'll follow these steps:\n1. Read notebooks/orders.ipynb\n2. Find the ids.", True),
        ("Let me check app.py for the port.", True),
        ("Sure. I will search for PORT first.", True),
        ("1. Read app.py\n2. Report the port.", True),
        ("First, I need to look at app.py.", True),
        ("The app uses port 8080 (app.py:1).", False),
        ("8080.", False),
        ("1. PORT is 8080\n2. HOST is localhost", False),
        ("Lettuce is not in the code.", False),
    ],
)
def test_a_plan_is_told_from_an_answer(text: str, plan: bool) -> None:
    assert announces_a_plan(text) is plan


def test_a_plan_goes_back_once_to_be_carried_out(workspace: Path) -> None:
    server = ScriptedServer(["I'll read app.py to find the port.", GREP, "It uses port 8080."])
    reply = Agent(server=server, workspace=workspace, mode="text").run("Which port does app_config use?")
    assert reply.text == "It uses port 8080."
    assert reply.steps[0].problems == ["announced what it would do without doing it: nudged to do it"]
    nudge = server.requests[1].messages[-1]["content"]
    assert "Do it now" in nudge
    assert '"pattern": "app_config"' in nudge


def test_a_second_plan_is_the_answer(workspace: Path) -> None:
    server = ScriptedServer(["Let me look at app.py.", "Let me look at app.py again."])
    reply = Agent(server=server, workspace=workspace, mode="native").run("Which port does the app use?")
    assert reply.text == "Let me look at app.py again."
    assert len(server.requests) == 2


def test_a_plan_after_a_tool_ran_is_left_alone(workspace: Path) -> None:
    server = ScriptedServer([GREP, "Let me sum up: port 8080."])
    reply = Agent(server=server, workspace=workspace, mode="text").run("Which port does the app use?")
    assert reply.text == "Let me sum up: port 8080."
    assert len(server.requests) == 2


def test_small_talk_is_never_nudged(workspace: Path) -> None:
    server = ScriptedServer(["Let me know if you need more."])
    assert Agent(server=server, workspace=workspace).run("thanks!").text == "Let me know if you need more."
