"""A reply that says what it will do and stops ("I'll read the notebook…") has not looked yet: it goes back
once to carry out its first step. An answer, small talk, or a reply after a tool ran is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from twinny_magics.agent import Agent
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.unanswered import (
    announces_a_plan,
    copies_the_loop,
    counts_nothing,
    names_no_line,
    only_cites,
    promises_a_result,
    tells_how_not_what,
)

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


PROMISE = "The maximum is what the cell gives:\n```python\ny.max()\n```\nThis will return the maximum in y."


@pytest.mark.parametrize(
    ("text", "promise"),
    [
        (PROMISE, True),
        ("```\nlen(rows)\n```\nRunning it will give the number of rows.", True),
        ("```\nlen(rows)\n```\nThe output will show how many rows there are.", True),
        # The run put first (a 1.5B model's closing under a counting script):
        ("```python\nprint(count)\n```\n\nWhen you run this code, it will output the number of rows.", True),
        ("```\nlen(rows)\n```\nIf you run the cell, it will print 12.", False),
        # A call restated from the question is not the value (a 1.5B model's counting script's closing):
        (
            "```\nf()\n```\nWhen you run this code, it will output the count in the first class of B(k=4).",
            True,
        ),
        ("```\nf()\n```\nIt will print the count, 52, for B(y, k=4).", False),
        (PROMISE.replace("the maximum in y", "4111.45"), False),  # the value given
        ("```\nf()\n```\nIt will return a dict.", False),  # a kind of value is an answer
        ("```\nf()\n```\nIt will return the string 'done'.", False),
        ("This will return the maximum value.", False),  # no code shown: a description, not a promise
        ("```\ny.max()\n```\nThis will return the maximum value. It is 4111.45 (nb.ipynb:48).", False),
        ("The port is 8080 (app.py:1).", False),
    ],
)
def test_a_promised_result_is_told_from_an_answer(text: str, promise: bool) -> None:
    assert promises_a_result(text) is promise


def test_a_promised_result_goes_back_once_for_the_value(workspace: Path) -> None:
    server = ScriptedServer([PROMISE, "The maximum is 8080.", "unused"])
    reply = Agent(server=server, workspace=workspace, mode="native").run(
        "What is the largest port in app.py?"
    )
    assert reply.text == "The maximum is 8080."
    assert reply.steps[0].problems == [
        "said what its code would return without the value: asked for the value"
    ]
    assert "the value itself" in server.requests[1].messages[-1]["content"]
    again = ScriptedServer([PROMISE, PROMISE])  # a second promise is the answer: asked once a reply
    assert (
        Agent(server=again, workspace=workspace, mode="native").run("What is the largest port?").text
        == PROMISE.strip()
    )
    assert len(again.requests) == 2


@pytest.mark.parametrize(
    ("question", "answer", "how"),
    [
        (
            "What is the largest value of the example data?",
            "```\ny = load()\n```\nThe largest value can be found by calling the `max` function on `y`.",
            True,
        ),
        ("What is the largest value?", "It is 4111.45; it can be found by calling y.max().", False),
        ("What is the maximum?", "From line 15 on: the maximum can be found by calling `y.max()`.", True),
        ("What is the maximum?", "In `nb/01_a.ipynb`, the maximum can be found by calling `y.max()`.", True),
        ("What does fold do?", "Its steps can be found by reading toolz/sandbox/parallel.py.", False),
        ("What is the largest value?", "The largest value is in the notebook's output.", False),
    ],
)
def test_an_answer_that_tells_how_to_find_the_value_is_told_from_one_that_gives_it(
    question: str, answer: str, how: bool
) -> None:
    assert tells_how_not_what(question, answer) is how


def test_an_answer_that_tells_how_to_find_the_value_goes_back_once(workspace: Path) -> None:
    how = "The largest port can be found by reading app.py with read_file."
    server = ScriptedServer([how, "The largest port is 8080."])
    reply = Agent(server=server, workspace=workspace, mode="native").run(
        "What is the largest port in app.py?"
    )
    assert reply.text == "The largest port is 8080."
    assert reply.steps[0].problems == ["said how to find the value instead of giving it: asked for the value"]


def test_a_promise_to_small_talk_is_left_alone(workspace: Path) -> None:
    server = ScriptedServer([PROMISE])
    assert Agent(server=server, workspace=workspace).run("thanks!").text == PROMISE.strip()


@pytest.mark.parametrize(
    ("question", "answer", "nothing"),
    [
        ("How many cells ran?", "The cells that ran are listed in the notebook's outputs.", True),
        ("What is the number of classes?", "The classes are printed by res.counts.", True),
        ("How many cells ran?", "17 cells ran.", False),
        ("How many cells ran?", "Seventeen.", False),
        ("How many errors are there?", "None: no cell failed.", False),
        ("How many cells ran?", "", False),  # no answer at all is another matter
        ("Which cells ran?", "The cells that ran are listed in the outputs.", False),  # not a how-many
        ("What does count() return?", "A dictionary of counts.", False),
    ],
)
def test_a_how_many_answer_without_a_number_is_told_from_one_with(
    question: str, answer: str, nothing: bool
) -> None:
    assert counts_nothing(question, answer) is nothing


def test_a_how_many_answer_without_a_number_goes_back_once(workspace: Path) -> None:
    where = "The counts are printed on the line where app.py sets PORT."
    server = ScriptedServer([where, "There is 1 port: 8080."])
    reply = Agent(server=server, workspace=workspace, mode="native").run("How many ports does app.py set?")
    assert reply.text == "There is 1 port: 8080."
    assert reply.steps[0].problems == ["answered a how-many question with no number: asked for it"]
    assert "gives no number" in server.requests[1].messages[-1]["content"]
    again = ScriptedServer([where, where])
    assert (
        Agent(server=again, workspace=workspace, mode="native").run("How many ports are set?").text == where
    )
    assert len(again.requests) == 2


LISTING = (
    "To find the line, I looked at the file. The relevant part is:\n\n```\n589: _HookCaller = HookCaller\n"
    '590: \n591: \n592: class _SubsetHookCaller(HookCaller):\n593:     """A proxy."""\n```'
)


@pytest.mark.parametrize(
    ("question", "answer", "none"),
    [
        ("On which line is class X defined? Give the line number.", LISTING, True),
        ("What line of app.py sets PORT?", "591: x = 1\n592: PORT = 8080\n", True),  # a bare listing
        ("On which line is class X defined?", "The class X line is where the file defines it.", True),
        ("On which line is class X defined?", LISTING + "\n\nIt is line 592.", False),
        ("On which line is class X defined?", "Line 592: `class X:`", False),
        ("On which line is class X defined?", "```\n592: class X(Base):\n```", False),  # one line copied
        ("What does line 5 of app.py say?", LISTING, False),  # asks what a line says, not which line
        ("On which line is class X defined?", "", False),
    ],
)
def test_a_which_line_answer_without_a_line_number_of_its_own_is_told_from_one_with(
    question: str, answer: str, none: bool
) -> None:
    assert names_no_line(question, answer) is none


def test_a_which_line_answer_that_only_copies_numbered_lines_goes_back_once(workspace: Path) -> None:
    server = ScriptedServer([LISTING, "The class is defined on line 592."])
    question = "On which line of app.py is PORT set? Give the line number."
    reply = Agent(server=server, workspace=workspace, mode="native").run(question)
    assert reply.text == "The class is defined on line 592."
    assert reply.steps[0].problems == ["answered a which-line question with no line number: asked for it"]
    assert "a copy of numbered lines is not an answer" in server.requests[1].messages[-1]["content"]
    again = ScriptedServer([LISTING, LISTING])
    assert Agent(server=again, workspace=workspace, mode="native").run(question).text == LISTING
    assert len(again.requests) == 2


PARROT = (
    "The loop found 1 part of the file notebooks/log.ipynb that best matches the question's words. It is a "
    "start, not the whole workspace: read_file reads any file in full, grep searches for exact text."
)


@pytest.mark.parametrize(
    ("answer", "copied"),
    [
        (PARROT, True),
        (
            "The loop found in the workspace for this question. It is a start, not the whole workspace: "
            "read_file reads any file in full, grep searches for exact text.",
            True,
        ),
        ("Found by the loop before your first step (not by you): the parts of files.", True),
        ("The loop found in the workspace for this question.", True),
        ("The loop found in the workspace for this question: 8080.", False),  # a value of its own
        ("The loop found in the workspace that PORT is 8080.", False),
        ("The port is 8080, set on line 1 of app.py (PORT = 8080), which the server reads at start.", False),
        # A phrase of the loop's words beside an answer of its own is an answer.
        ("The best matches for the question's words show it: PORT is 8080 in app.py.", False),
        (
            PARROT + " In app.py, PORT is set to 8080 on line 1, and the server module reads it when it "
            "starts; nothing else overrides it.",
            False,
        ),
        ("", False),
    ],
)
def test_an_answer_that_says_the_loops_own_words_back_is_told_from_one_that_answers(
    answer: str, copied: bool
) -> None:
    assert copies_the_loop(answer) is copied


def test_an_answer_that_says_the_loops_own_words_back_goes_back_once(workspace: Path) -> None:
    server = ScriptedServer([PARROT, "PORT is 8080 (app.py:1)."])
    reply = Agent(server=server, workspace=workspace, mode="native").run("What is PORT in app.py?")
    assert reply.text == "PORT is 8080 (app.py:1)."
    assert reply.steps[0].problems == [
        "said the loop's own words back instead of answering: asked for the answer"
    ]
    assert "does not answer the question" in server.requests[1].messages[-1]["content"]
    again = ScriptedServer([PARROT, PARROT])
    assert Agent(server=again, workspace=workspace, mode="native").run("What is PORT in app.py?").text
    assert len(again.requests) == 2


@pytest.mark.parametrize(
    ("question", "answer", "place_only"),
    [
        ("Which names does app.py import from os?", "app.py:1", True),
        ("Which names does app.py import from os?", "`app.py:1`.", True),
        ("What is PORT set to?", "Line 4 of app.py", True),
        ("Which names does app.py import from os?", "os.path and sep (app.py:1)", False),
        ("What is PORT set to?", "8080, app.py:4", False),
        ("Which Python versions does setup.cfg allow?", "3.8", False),  # a version is no file name
        ("Which Python versions does setup.cfg allow?", "`>=3.8`", False),
        # A question that asks where is answered by a place.
        ("On which line is PORT set?", "app.py:4", False),
        ("Which file defines serve?", "app.py", False),
        ("Where is PORT set?", "app.py:4", False),
        ("Which modules import os?", "app.py:1, web.py:2", False),
        ("Set PORT to 9000 in app.py.", "(app.py)", False),  # a change, not a question
        ("What is PORT set to?", "", False),
    ],
)
def test_an_answer_that_is_only_a_place_is_told_from_one_that_says_what(
    question: str, answer: str, place_only: bool
) -> None:
    assert only_cites(question, answer) is place_only


def test_an_answer_that_is_only_a_place_goes_back_once(workspace: Path) -> None:
    server = ScriptedServer(["app.py:1", "PORT is 8080 (app.py:1)."])
    reply = Agent(server=server, workspace=workspace, mode="native").run("What value does app.py give PORT?")
    assert reply.text == "PORT is 8080 (app.py:1)."
    assert reply.steps[0].problems == ["answered with only a file:line, not what is there: asked for it"]
    assert "it asks what" in server.requests[1].messages[-1]["content"]
    again = ScriptedServer(["app.py:1", "app.py:1"])
    assert (
        Agent(server=again, workspace=workspace, mode="native").run("What value does app.py give PORT?").text
    )
    assert len(again.requests) == 2
