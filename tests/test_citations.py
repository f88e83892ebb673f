"""Grounded answers: each file:line an answer cites is checked against the file; a wrong one goes back
once with what the lines say; a citation outside the workspace, of a denied file or of an absurd line
is not checked, and nothing is read for it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from twinny_magics.agent import Agent
from twinny_magics.engine import citations
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.tools.workspace import Workspace

APP = "import os\n\n\nPORT = 8080\nHOST = 'localhost'\n\n\ndef serve(port=PORT):\n    return port\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "app.py").write_text(APP)
    (root / ".env").write_text("API_KEY=sk-live-1234567890abcdef\n")
    (tmp_path / "outside.txt").write_text("PORT = 1\n")
    return root


def ask(workspace: Path, *replies: str, steps: int = 4) -> tuple[Agent, ScriptedServer]:
    server = ScriptedServer(list(replies))
    agent = Agent(server=server, workspace=workspace, mode="text", steps=steps)
    agent.run("Which port does app.py use (the constant PORT)?")
    return agent, server


@pytest.mark.parametrize(
    ("text", "pairs"),
    [
        ("PORT is 8080 (app.py:4).", [("app.py", 4)]),
        ("See `app.py:4-5` and src/x.py:10.", [("app.py", 4), ("src/x.py", 10)]),
        ("It is on line 4 of app.py.", [("app.py", 4)]),
        ("app.py, line 4 sets it", [("app.py", 4)]),
        ("In `app.py` (line 4).", [("app.py", 4)]),
        ("Line 4.", []),
        ("Version 3.8 of python.", []),
    ],
)
def test_the_citations_an_answer_writes_are_read(text: str, pairs: list[tuple[str, int]]) -> None:
    assert citations.find_citations(text) == pairs


def test_a_citation_that_holds_is_kept_as_checked_and_nothing_goes_back(workspace: Path) -> None:
    agent, server = ask(workspace, "PORT is 8080 (app.py:4).")
    reply = agent.replies[-1]
    assert reply.text == "PORT is 8080 (app.py:4)."
    assert [(c.path, c.line, c.status) for c in reply.citations] == [("app.py", 4, "holds")]
    assert len(server.requests) == 1
    assert citations.summary(reply.citations) == "Citations: app.py:4 checked"


def test_a_citation_one_line_off_still_holds(workspace: Path) -> None:
    agent, _ = ask(workspace, "PORT = 8080, see app.py:5.")
    assert agent.replies[-1].citations[0].status == "holds"


def test_a_citation_a_few_lines_off_is_near_and_does_not_go_back(workspace: Path) -> None:
    """What the answer says (8080) is 3 lines below the line cited: the answer rests on what it read and
    only the number is off; sent back, such right answers came back as talk about line numbers."""
    agent, server = ask(workspace, "PORT is 8080 (app.py:1).")
    reply = agent.replies[-1]
    assert reply.text == "PORT is 8080 (app.py:1)."
    assert len(server.requests) == 1
    [cited] = reply.citations
    assert (cited.status, cited.why) == ("near", "what the answer says is at line 4, 3 off")
    assert cited.found == "3: \n4: PORT = 8080\n5: HOST = 'localhost'"
    assert (
        citations.summary(reply.citations)
        == "Citations: app.py:1 near: what the answer says is at line 4, 3 off"
    )


def test_only_what_the_answer_itself_says_makes_a_citation_near(tmp_path: Path) -> None:
    """A name the question asks about a few lines away is not enough (it is in the question, not a claim),
    nor a value further than NEAR_LINES away."""
    (tmp_path / "c.py").write_text("".join(f"x{n} = {n}\n" for n in range(1, 30)) + "PORT = 8080\n")
    ws = Workspace(tmp_path)
    question = "What is PORT in c.py?"
    [far] = asyncio.run(citations.check("PORT is 8080 (c.py:20).", question, ws))
    assert far.status == "wrong"  # line 30 is 10 lines away
    [named] = asyncio.run(citations.check("It is x (c.py:27).", "What is PORT in c.py?", ws))
    assert named.status == "wrong"  # only the question's PORT is at line 30: not the answer's claim
    [near] = asyncio.run(citations.check("PORT is 8080 (c.py:26).", question, ws))
    assert (near.status, near.why) == ("near", "what the answer says is at line 30, 4 off")


def test_a_wrong_citation_goes_back_once_with_what_the_lines_say(workspace: Path) -> None:
    agent, server = ask(workspace, "PORT is 9090 (app.py:1).", "PORT is 8080 (app.py:4).")
    reply = agent.replies[-1]
    assert reply.text == "PORT is 8080 (app.py:4)."
    assert [c.status for c in reply.citations] == ["holds"]
    told = server.requests[1].messages[-1]["content"]
    assert "app.py:1: the line does not hold what the answer says" in told
    assert "1: import os" in told
    assert '<tool_result name="check_citations">' in told  # file text comes back as data
    assert reply.steps[0].problems == [
        "a cited line does not hold what the answer says: told what the lines say"
    ]


def test_a_second_wrong_citation_is_kept_as_wrong_without_another_turn(workspace: Path) -> None:
    agent, server = ask(workspace, "PORT is 9090 (app.py:1).", "Still app.py:1, PORT = 9090.")
    reply = agent.replies[-1]
    assert reply.text == "Still app.py:1, PORT = 9090."
    assert [c.status for c in reply.citations] == ["wrong"]
    assert len(server.requests) == 2
    assert citations.summary(reply.citations) == "Citations: app.py:1 does not hold"


def test_a_wrong_citation_on_the_closing_request_is_kept_as_wrong(workspace: Path) -> None:
    grep = '```tool\n{"name": "grep", "arguments": {"pattern": "PORT"}}\n```'
    agent, server = ask(workspace, grep, "PORT is 9090 (app.py:1).", steps=2)
    reply = agent.replies[-1]
    assert reply.text == "PORT is 9090 (app.py:1)."
    assert [c.status for c in reply.citations] == ["wrong"]
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("cited", "why"),
    [
        ("../outside.txt:1", "above the workspace"),
        (".env:1", ""),
        ("app.py:99999999999", "no file has a line"),
        ("missing.py:3", "does not exist"),
    ],
)
def test_a_hostile_citation_is_not_checked_and_nothing_is_read_for_it(
    workspace: Path, cited: str, why: str
) -> None:
    agent, server = ask(workspace, f"PORT = 8080 ({cited}).")
    reply = agent.replies[-1]
    (found,) = reply.citations
    assert found.status == "unchecked"
    assert why in found.why
    assert found.found == ""
    assert len(server.requests) == 1  # not sent back: nothing was read to tell
    assert "sk-live" not in repr(reply)


def test_an_absolute_path_is_not_read(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    agent, _ = ask(workspace, f"PORT = 1 ({outside}:1).")
    assert [c.status for c in agent.replies[-1].citations] == ["unchecked"]


def test_a_huge_line_number_reads_nothing() -> None:
    class Spy:
        read = 0

        def cited_lines(self, path: str, first: int, last: int) -> list[tuple[int, str]]:
            Spy.read += 1
            return []

    found = asyncio.run(citations.check("x (a.py:1000001) and b.py:0", "q", Spy()))
    assert [c.status for c in found] == ["unchecked", "unchecked"]
    assert Spy.read == 0


def test_at_most_eight_citations_are_checked() -> None:
    text = " ".join(f"a.py:{n}" for n in range(1, 40))
    assert len(citations.find_citations(text)) == citations.MAX_CITATIONS


def test_the_lines_told_back_have_secrets_masked(tmp_path: Path) -> None:
    (tmp_path / "conf.py").write_text("TOKEN = 'ghp_0123456789abcdefghijABCDEFGHIJ012345'\nX = 1\n")
    found = asyncio.run(citations.check("X = 1 (conf.py:2)", "what is X?", Workspace(tmp_path)))
    assert found[0].status == "holds"
    wrong = asyncio.run(citations.check("Y is 2 (conf.py:1)", "what is Y?", Workspace(tmp_path)))
    assert wrong[0].status == "wrong"
    assert "ghp_0123456789" not in wrong[0].found


def test_a_notebook_is_checked_as_its_cell_view(tmp_path: Path) -> None:
    import json

    cell = {
        "cell_type": "code",
        "source": ["LIMIT = 250\n"],
        "metadata": {},
        "outputs": [],
        "execution_count": 1,
    }
    (tmp_path / "n.ipynb").write_text(
        json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    lines = Workspace(tmp_path).cited_lines("n.ipynb", 1, 3)
    assert any("LIMIT = 250" in text for _, text in lines)


def test_the_replys_text_repr_says_which_citations_were_checked(workspace: Path) -> None:
    from twinny_magics.display.reprs import reply_text

    agent, _ = ask(workspace, "PORT is 8080 (app.py:4), not .env:1.")
    assert reply_text(agent.replies[-1]).endswith("Citations: app.py:4 checked; .env:1 not checked")


@pytest.mark.parametrize(
    "text", ["a" * 20_000, "a." * 10_000, "a/" * 10_000, "a.a/" * 5_000, "line 1 of " * 2_000, "a.b:" * 5_000]
)
def test_a_long_degenerate_answer_is_read_in_linear_time(text: str) -> None:
    import time

    started = time.perf_counter()
    citations.find_citations(text)
    citations.answer_tokens(text, "Which port?")
    assert time.perf_counter() - started < 1.0


def test_a_wrong_citation_near_the_asked_names_definition_is_told_where_it_is(tmp_path: Path) -> None:
    """A which-line answer that cites a chunk's first line, not the def five lines below: the model is
    told what its line says and where the name it was asked about is defined."""
    (tmp_path / "config.py").write_text(
        "".join(f"x{n} = {n}\n" for n in range(1, 47))
        + "def upgrade(config):\n    return config\n\n\n\ndef get_config(path=None):\n    return path\n"
    )
    ws = Workspace(tmp_path)
    question = "On which line of config.py is get_config defined?"
    [cited] = asyncio.run(citations.check("It is defined at config.py:47.", question, ws))
    assert cited.status == "wrong"
    assert cited.why == "the line does not define get_config; get_config is defined at line 52"
    told = citations.correction([cited])
    assert "47: def upgrade(config):" in told
    assert "52: def get_config(path=None):" in told
    # Further than DEFINED_LINES away, or a name only used there: what the cited line says, no more.
    [far] = asyncio.run(citations.check("It is defined at config.py:20.", question, ws))
    assert far.why == "the line does not define get_config"
    (tmp_path / "use.py").write_text("import config\n\n\n\nvalue = config.get_config()\n")
    [used] = asyncio.run(citations.check("It is at use.py:1.", "Where is get_config defined in use.py?", ws))
    assert used.why == "the line does not define get_config"


def test_an_answer_to_a_which_line_question_must_cite_the_line_itself(tmp_path: Path) -> None:
    """One line off holds for other questions (the answer rests on what it read); for a line number it is
    the answer that is wrong: told where the name is defined (a 1.5B model gave get_config's 52 as 53)."""
    (tmp_path / "config.py").write_text("x = 1\n\n\ndef get_config(path=None):\n    return path\n")
    ws = Workspace(tmp_path)
    question = "On which line of config.py is get_config defined? Give the line number."
    [off] = asyncio.run(citations.check("get_config is on line 5 of config.py.", question, ws))
    assert off.status == "wrong"
    assert off.why.endswith("get_config is defined at line 4")
    [right] = asyncio.run(citations.check("get_config is on line 4 of config.py.", question, ws))
    assert right.status == "holds"
    [other] = asyncio.run(
        citations.check("get_config is at config.py:5.", "What does get_config return?", ws)
    )
    assert other.status == "holds"


def test_a_line_that_only_uses_the_name_does_not_answer_where_it_is_defined(tmp_path: Path) -> None:
    """ "Which file defines expand?" answered with a test's line that calls it: the line holds the name,
    but not its definition; the model is told so. A line that defines it holds."""
    (tmp_path / "repo.py").write_text("def expand(x):\n    return x\n")
    (tmp_path / "test_repo.py").write_text(
        "from repo import expand\n\n\ndef test_it():\n    assert expand(1)\n"
    )
    ws = Workspace(tmp_path)
    question = "Which file defines the function expand?"
    [used] = asyncio.run(citations.check("It is test_repo.py:5.", question, ws))
    assert (used.status, used.why) == ("wrong", "the line does not define expand")
    [defined] = asyncio.run(citations.check("It is repo.py:1.", question, ws))
    assert defined.status == "holds"
    [other] = asyncio.run(citations.check("It is called at test_repo.py:5.", "Where is expand called?", ws))
    assert other.status == "holds"


def test_the_cited_file_itself_is_not_what_its_line_must_hold() -> None:
    """'merge is defined in lib.py (lib.py:1)': the line is in lib.py; it cannot hold its own file name."""
    tokens = citations.answer_tokens(
        "merge is defined in pkg/lib.py (pkg/lib.py:1).", "Which file defines merge?"
    )
    assert "pkg/lib.py" not in tokens
    assert "lib.py" not in tokens
    # Another file the answer names is still a token (its line may import it).
    assert "other.py" in citations.answer_tokens("It comes from other.py (pkg/lib.py:3).", "Where?")
