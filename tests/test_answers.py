"""Replies that answer: a call written where the answer belongs is never shown as the answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.notes import NO_ANSWER, looks_like_a_call, no_answer_summary
from twinny_magics.servers.scripted import Scripted, ScriptedServer

GREP_JSON = '{"name": "grep", "arguments": {"pattern": "PORT"}}'
GREP_CALL = f"```tool\n{GREP_JSON}\n```"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text("PORT = 8080\nserve(PORT)\n")
    return tmp_path


def ask(workspace: Path, *replies: Scripted | str, steps: int = 2, mode: str = "native") -> Agent:
    agent = Agent(server=ScriptedServer(list(replies)), workspace=workspace, steps=steps, mode=mode)  # type: ignore[arg-type]
    agent.run("Which port does the app use?")
    return agent


@pytest.mark.parametrize(
    "last",
    [
        f"```tool\n{GREP_JSON}\n```",
        GREP_JSON,
        f"<tool_call>{GREP_JSON}</tool_call>",
        '{"name": "grep", "arguments": {"pattern": "PORT"',  # cut off: could not be read
        '{"name": "search_code", "arguments": {"q": "PORT"}}',  # a tool that does not exist
        'grep(pattern="PORT")',
        "",
    ],
)
def test_a_call_written_on_the_last_request_is_never_shown_as_the_answer(workspace: Path, last: str) -> None:
    agent = ask(workspace, GREP_CALL, last, mode="text")
    reply = agent.replies[-1]
    assert reply.text.startswith(NO_ANSWER)
    assert '"arguments"' not in reply.text
    assert "grep(pattern='PORT') → app.py:1: PORT = 8080" in reply.text
    if last:
        assert any("tool call instead of its answer" in n.text for n in reply.notices)


def test_a_native_call_on_the_last_request_is_not_the_answer_either(workspace: Path) -> None:
    first = Scripted("", (ToolCall("read_file", {"path": "app.py"}),))
    again = Scripted("", (ToolCall("grep", {"pattern": "PORT"}),))
    agent = ask(workspace, first, again)
    reply = agent.replies[-1]
    assert reply.text.startswith(NO_ANSWER)
    assert "read_file(path='app.py') → app.py (2 lines): · 1: PORT = 8080 · 2: serve(PORT)" in reply.text


def test_prose_before_a_call_on_the_last_request_is_kept_as_the_answer(workspace: Path) -> None:
    agent = ask(workspace, GREP_CALL, f"The app listens on port 8080.\n{GREP_CALL}", mode="text")
    assert agent.replies[-1].text == "The app listens on port 8080."


def test_a_plain_answer_is_left_alone(workspace: Path) -> None:
    agent = ask(workspace, "It uses port 8080 (app.py, line 1).", steps=3)
    assert agent.replies[-1].text == "It uses port 8080 (app.py, line 1)."


def test_an_answer_that_mentions_braces_is_not_taken_for_a_call() -> None:
    assert not looks_like_a_call("The config is a dict like {'a': 1}.")
    assert not looks_like_a_call("Call serve(PORT) to start it.")
    assert looks_like_a_call('{"name": "grep"')
    assert looks_like_a_call("read_file(path='a.py')")


def test_the_summary_lists_the_newest_calls_one_line_each_and_masks_secrets() -> None:
    from twinny_magics.conversation import ToolResult

    results = [
        ToolResult(ToolCall("grep", {"pattern": f"p{n}"}), f"hit {n}\nmore", n, is_error=n == 9)
        for n in range(12)
    ]
    results.append(ToolResult(ToolCall("read_file", {"path": ".env"}), "API_KEY=sk-" + "a" * 40, 12))
    text = no_answer_summary(results)
    lines = text.splitlines()
    assert lines[1] == "- (5 earlier calls not listed)"
    assert len(lines) == 2 + 8
    assert "grep(pattern='p9') → failed: hit 9" in text
    assert "sk-aaaa" not in text
    assert no_answer_summary([]).endswith("No tool ran in this reply.")


def test_the_cell_shows_what_the_steps_found_when_the_model_did_not_answer(workspace: Path) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    from twinny_magics.display import ReplyView

    start_ipython() or InteractiveShell.instance()
    agent = Agent(server=ScriptedServer([GREP_CALL, GREP_CALL]), workspace=workspace, steps=2, mode="text")
    with capture_output() as captured:
        view = ReplyView("q")
        view.start()
        agent.run("Which port?", on_event=view.handle)
    shown = "\n".join(o.data.get("text/plain", "") for o in captured.outputs)
    assert NO_ANSWER in shown
    assert "grep(pattern='PORT') → app.py:1: PORT = 8080" in shown
    assert GREP_JSON not in shown


# -- look before answering ------------------------------------------------------------------------------


def test_a_first_answer_without_looking_is_sent_back_once_with_a_nudge(workspace: Path) -> None:
    server = ScriptedServer(["It is 3000.", GREP_CALL, "It uses port 8080 (app.py, line 1)."])
    agent = Agent(server=server, workspace=workspace, mode="text", look_first=True)
    reply = agent.run("Which port does the app use in app_config?")
    assert reply.text == "It uses port 8080 (app.py, line 1)."
    assert reply.steps[0].problems == ["answered without looking: nudged to call a tool first"]
    nudge = server.requests[1].messages[-1]["content"]
    assert "You answered without looking at the workspace" in nudge
    assert '"pattern": "app_config"' in nudge  # the example searches the question's own name
    assert [c.name for s in reply.steps for c in s.calls] == ["grep"]


def test_the_nudge_is_given_once_and_a_second_answer_is_accepted(workspace: Path) -> None:
    server = ScriptedServer(["It is 3000.", "Still 3000."])
    agent = Agent(server=server, workspace=workspace, mode="native", look_first=True)
    reply = agent.run("Which port does the app use?")
    assert reply.text == "Still 3000."
    assert len(server.requests) == 2
    assert "```tool" not in server.requests[1].messages[-1]["content"]  # native mode: no text-call example


@pytest.mark.parametrize("question", ["thanks!", "hi", "ok"])
def test_small_talk_is_not_nudged(workspace: Path, question: str) -> None:
    server = ScriptedServer(["You're welcome."])
    agent = Agent(server=server, workspace=workspace, look_first=True)
    assert agent.run(question).text == "You're welcome."
    assert len(server.requests) == 1


def test_without_look_first_a_first_answer_stands(workspace: Path) -> None:
    server = ScriptedServer(["It is 3000."])
    assert Agent(server=server, workspace=workspace).run("Which port does the app use?").text == "It is 3000."


def test_a_problem_messages_example_call_is_aimed_at_the_questions_word() -> None:
    """A 1.5B model copied the protocol's example (grep createServer) from a problem message four times."""
    from twinny_magics.engine.question import _CANONICAL_EXAMPLE, about_the_question

    problem = f"There is no tool called x. Call one of them like this:\n{_CANONICAL_EXAMPLE}"
    aimed = about_the_question(problem, "Which file of this project defines the function countby?")
    assert "createServer" not in aimed
    assert '{"name": "grep", "arguments": {"pattern": "countby"}}' in aimed
    # No word worth a search (small talk), or no canonical example: unchanged unless a fallback is given.
    assert about_the_question(problem, "thanks!") == problem
    listing = '```tool\n{"name": "list_dir", "arguments": {}}\n```'
    assert about_the_question(problem, "What is in this folder?", listing).endswith(listing)
    assert about_the_question("Arguments must be JSON.", "Where is countby?") == "Arguments must be JSON."


def test_a_call_of_a_name_the_question_gives_is_aimed_at_its_definition() -> None:
    """A 1.5B model called the method it was asked about (get_legend_classes) as a tool, three times."""
    from twinny_magics.engine.question import _CANONICAL_EXAMPLE, about_the_question

    question = "notebooks/02.ipynb calls get_legend_classes on a classifier. In which class is it defined?"
    problem = f'There is no tool called "get_legend_classes". Call one like this:\n{_CANONICAL_EXAMPLE}'
    aimed = about_the_question(problem, question)
    assert r'{"name": "grep", "arguments": {"pattern": "(?:def|class) get_legend_classes\\b"}}' in aimed
    assert "not a tool" in aimed
    # A made-up tool name the question does not give: the example is aimed at the question's word.
    other = f'There is no tool called "search_code". Call one like this:\n{_CANONICAL_EXAMPLE}'
    assert "not a tool" not in about_the_question(other, question)
    assert "(?:def|class)" not in about_the_question(other, question)


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ('```tool\n{"name": "grep", "arguments": {"pattern": x}}\n```', "I could not read your tool call"),
        ('```tool\n{"name": "search", "arguments": {"q": "x"}}\n```', 'There is no tool called "search"'),
    ],
)
def test_no_search_word_a_problem_shows_a_listing_to_copy(workspace: Path, bad: str, said: str) -> None:
    """The quickstart's question names no word to search: the problem message's example must not be a grep
    for a word this workspace does not have."""
    server = ScriptedServer([bad, "app.py serves."])
    Agent(server=server, workspace=workspace, mode="text", evidence=False).run("What is in this folder?")
    told = str(server.requests[1].messages[-1]["content"])
    assert said in told
    assert "createServer" not in told
    assert told.endswith('```tool\n{"name": "list_dir", "arguments": {}}\n```')


# -- asked for a change, make it -------------------------------------------------------------------------

EDIT_JSON = (
    '{"name": "edit_file", "arguments": {"path": "app.py", "find": "PORT = 8080", "replace": "PORT = 9090"}}'
)
EDIT_CALL = f"```tool\n{EDIT_JSON}\n```"


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("In app.py, change the port to 9090.", True),
        ('In setup.py, raise python_requires to ">=3.9".', True),
        ("The docstring of fold in toolz/sandbox/parallel.py names `binops`. Fix that line.", True),
        ("Can you rename serve to start in app.py?", True),
        ("Please add a test for PORT to the test file.", True),
        ("Can you rename serve to start?", False),  # no file named: it may be a question of code
        ("Write a Python function that adds two numbers, in a code block.", False),
        ("How do I change the port?", False),
        ("Which port does the app use?", False),
        ("Why does the last cell fail? Propose the fix.", False),
        ("What would changing the port break?", False),
        # No file named, but something of the project's: an option, a default, a rule, a name as code.
        ("Make the cookiecutter command's --accept-hooks option default to ask instead of yes.", True),
        ("Disable the truthy rule in the default configuration.", True),
        ("Make line-length a warning instead of an error.", True),
        ("Rename get_config to load_config and update its callers.", True),
        ("Make a function that adds two numbers.", False),
        ("Write a test for parse_args.", False),  # code in the answer: "write" makes something new
        ("Make a step-by-step plan.", False),
        ("What does the default config set?", False),
        # A file named and a verb that turns something on or off, or lets it be.
        ("In the relaxed configuration (conf/relaxed.yaml), allow up to 2 spaces inside braces.", True),
        ("In conf/default.yaml, enable the float-values and octal-values rules.", True),
        ("Does conf/default.yaml enable the truthy rule?", False),
    ],
)
def test_a_request_for_a_change_is_told_from_a_question(question: str, asks: bool) -> None:
    from twinny_magics.notes import asks_for_a_change

    assert asks_for_a_change(question) is asks


def test_a_change_described_instead_of_made_is_sent_back_once_to_make_it(workspace: Path) -> None:
    server = ScriptedServer(["Open app.py and set PORT = 9090.", EDIT_CALL, "Done: PORT is 9090."])
    agent = Agent(server=server, workspace=workspace, mode="text", edits="apply")
    reply = agent.run("In app.py, change the port to 9090.")
    assert reply.text == "Done: PORT is 9090."
    assert reply.steps[0].problems == ["answered a request for a change without making it: nudged to edit"]
    nudge = server.requests[1].messages[-1]["content"]
    assert "describing the change does not make it" in nudge
    assert '"name": "edit_file"' in nudge
    assert (workspace / "app.py").read_text().startswith("PORT = 9090")


def test_the_edit_nudge_is_given_once_and_not_after_an_edit(workspace: Path) -> None:
    server = ScriptedServer(["I changed it.", "I really did."])
    agent = Agent(server=server, workspace=workspace, mode="native")
    assert agent.run("In app.py, change the port to 9090.").text == "I really did."
    assert len(server.requests) == 2
    # An edit proposed in the reply: its answer stands.
    server = ScriptedServer([EDIT_CALL, "Proposed: PORT = 9090."])
    agent = Agent(server=server, workspace=workspace, mode="text")
    assert agent.run("In app.py, change the port to 9090.").text == "Proposed: PORT = 9090."
    # A question, or the option off: no nudge.
    server = ScriptedServer(["8080."])
    assert Agent(server=server, workspace=workspace).run("Which port does the app use?").text == "8080."
    server = ScriptedServer(["Set PORT = 9090."])
    agent = Agent(server=server, workspace=workspace, edit_first=False)
    assert agent.run("In app.py, change the port to 9090.").text == "Set PORT = 9090."
