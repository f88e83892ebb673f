"""A very small model's answer is shown only when it rests on what the model read.

SmolLM2-135M, the model that runs when nothing else is configured, listed the quickstart's folder right
and then wrote "the output is a Python module" or "a web-based web environment" around it, or nothing of
the folder at all. On the embedded SmolLM2 an answer about the workspace that says what nothing it read
says gives way to an honest reply with what the head start and the steps found; the model's text stays in
the reply's steps. Other models' answers are never touched.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from twinny_magics import protocol
from twinny_magics.conversation import ToolCall
from twinny_magics.display import ReplyView
from twinny_magics.engine.supported import content_words, support, vocabulary
from twinny_magics.loop import Loop, LoopSettings
from twinny_magics.notes import UNSUPPORTED_ANSWER
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.tools import Workspace

LISTING = (
    "the workspace root (6 entries):\nsessions/\ncontext_budget.ipynb  (23.3 KB)\n"
    "kernel_agent.ipynb  (7.2 KB)\nprompt_tuning.ipynb  (11.6 KB)\nquickstart.ipynb  (6.5 KB)\n"
    "tool_protocol.ipynb  (15.9 KB)"
)
READ = vocabulary(["Which files are in this folder?", LISTING])


class EmbeddedLike(ScriptedServer):
    """A scripted llama.cpp server that says it is the embedded one (running SmolLM2: no alias)."""

    embedded: object = "embedded"


def fenced(name: str, **arguments: Any) -> str:
    return protocol.format_call(ToolCall(name, arguments))


# -- the measure, alone ---------------------------------------------------------------------------------


def test_names_are_words_whole_in_their_path_steps_and_in_parts() -> None:
    words = content_words("See context_budget.ipynb and getUserName in src/app.py, port 8000.")
    for word in ("context_budget.ipynb", "getusername", "user", "src/app.py", "app.py", "src", "8000"):
        assert word in words
    assert "see" not in words
    assert "and" not in words
    # The forms of a word are one word.
    assert content_words("matches") == content_words("matched") == content_words("match")
    assert content_words("combined") == content_words("combine")


@pytest.mark.parametrize(
    "answer",
    [
        "The workspace root contains the following files:\n- sessions/\n- context_budget.ipynb\n"
        "- kernel_agent.ipynb\n- prompt_tuning.ipynb\n- quickstart.ipynb\n- tool_protocol.ipynb",
        "Six entries: context_budget.ipynb, kernel_agent.ipynb, prompt_tuning.ipynb, quickstart.ipynb, "
        "tool_protocol.ipynb and a sessions/ folder.",
        "quickstart.ipynb is the quickstart.",
    ],
)
def test_an_answer_from_what_was_read_holds(answer: str) -> None:
    assert support(answer, READ).holds


@pytest.mark.parametrize(
    "answer",
    [
        # What SmolLM2 wrote for the quickstart's question (default sampling, and greedy).
        "The workspace root is a Python module, and the output is a Python module. The output is a Python "
        "module. The output is a Python module.",
        "The output is a list of files located in the workspace root folder that contain the shell code "
        "module, which is part of the Python interactive Python module.",
        "You're out of tool calls for this reply. You've already called a tool, but no more you will.",
        # Sampled live at 7fd32c0, kept by a laxer bar (60% a sentence, number words not claims).
        "The workspace root has 6 files, and the list of files is a tuple.",
        "The workspace root contains three files: sessions/ and kernel_agent.ipynb, which is a context "
        "buffer in Python.",
        "The folder has 9 entries, each of them a web-based Python module.",  # a count nothing said
        "",
    ],
)
def test_an_answer_that_says_what_nothing_read_says_does_not_hold(answer: str) -> None:
    assert not support(answer, READ).holds


def test_a_sentence_said_again_is_left_out() -> None:
    said = support("- quickstart.ipynb\n" * 9, READ)
    assert said.holds
    assert said.cut
    assert said.kept == "- quickstart.ipynb"


def test_the_beginning_up_to_the_first_made_up_sentence_is_kept() -> None:
    answer = (
        "The workspace root contains the following files:\n- sessions/\n- context_budget.ipynb\n"
        "The kernel agent is a Python module that allows you to run Python scripts in a web-based "
        "environment. And quickstart.ipynb."
    )
    said = support(answer, READ)
    assert said.holds
    assert said.kept == answer.split("\nThe kernel", maxsplit=1)[0]
    # Sentences on one line stay on one line.
    said = support("It has quickstart.ipynb. It has kernel_agent.ipynb. It runs a web server on Mars.", READ)
    assert said.kept == "It has quickstart.ipynb. It has kernel_agent.ipynb."
    # An answer with nothing left out is kept as it was written.
    assert support("  quickstart.ipynb  \n\n", READ).kept == "quickstart.ipynb"
    assert not support("  quickstart.ipynb  \n\n", READ).cut
    # A made-up first sentence leaves nothing.
    assert not support("It is a web server on Mars. quickstart.ipynb is there.", READ).holds


def test_the_measure_is_linear_on_a_long_answer() -> None:
    import time

    answer = "The quickstart.ipynb file lists tool_protocol.ipynb. " * 20_000
    started = time.perf_counter()
    support(answer, READ)
    assert time.perf_counter() - started < 5


# -- in the loop --------------------------------------------------------------------------------------


QUESTION = "Which files are in this folder?"


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    for name in ("context_budget.ipynb", "kernel_agent.ipynb", "quickstart.ipynb", "tool_protocol.ipynb"):
        (tmp_path / name).write_text("{}\n")
    (tmp_path / "prompt_tuning_with_a_long_name.ipynb").write_text("{}\n")
    (tmp_path / "sessions").mkdir()
    return Workspace(tmp_path)


def run(server: ScriptedServer, workspace: Workspace, question: str = QUESTION) -> Any:
    return asyncio.run(Loop(server, workspace, settings=LoopSettings(evidence=False)).reply(question))


MADE_UP = "The workspace root is a Python module, and the output is a web-based environment."


def test_on_the_embedded_smollm2_a_made_up_answer_gives_way_to_what_was_found(workspace: Workspace) -> None:
    server = EmbeddedLike([fenced("list_dir"), MADE_UP], kind="llamacpp")
    reply = run(server, workspace)
    assert reply.text.startswith(UNSUPPORTED_ANSWER)
    assert "list_dir() →" in reply.text
    for name in ("context_budget.ipynb", "kernel_agent.ipynb", "quickstart.ipynb", "sessions/"):
        assert name in reply.text
    assert "prompt_tuning_with_a_long_name.ipynb" in reply.text
    assert "…" not in reply.text  # the listing whole: what was found is the answer now
    assert MADE_UP not in reply.text
    assert reply.steps[-1].text == MADE_UP  # the model's own text is kept, to inspect
    assert any("%agent pull" in n.text for n in reply.notices)


def test_on_the_embedded_smollm2_an_answer_from_what_was_read_stands(workspace: Workspace) -> None:
    good = "The folder has context_budget.ipynb, kernel_agent.ipynb, quickstart.ipynb and sessions/."
    reply = run(EmbeddedLike([fenced("list_dir"), good], kind="llamacpp"), workspace)
    assert reply.text == good


def test_on_the_embedded_smollm2_an_answer_that_strays_is_cut_where_it_strays(workspace: Workspace) -> None:
    wrote = "The folder has quickstart.ipynb and sessions/.\nThe kernel agent runs a web-based environment."
    reply = run(EmbeddedLike([fenced("list_dir"), wrote], kind="llamacpp"), workspace)
    assert reply.text == "The folder has quickstart.ipynb and sessions/."
    assert reply.steps[-1].text == wrote
    assert any("reply shows its beginning" in n.text for n in reply.notices)


def test_the_closing_answer_is_checked_too(workspace: Workspace) -> None:
    server = EmbeddedLike([fenced("list_dir"), fenced("list_dir", path="sessions"), MADE_UP], kind="llamacpp")
    reply = asyncio.run(
        Loop(server, workspace, settings=LoopSettings(evidence=False, steps=3)).reply("Which files are here?")
    )
    assert reply.text.startswith(UNSUPPORTED_ANSWER)


def test_small_talk_is_not_checked(workspace: Workspace) -> None:
    reply = run(EmbeddedLike(["You're welcome!"], kind="llamacpp"), workspace, "thanks!")
    assert reply.text == "You're welcome!"


def test_another_model_s_answer_is_never_touched(workspace: Workspace) -> None:
    reply = run(ScriptedServer([fenced("list_dir"), MADE_UP], kind="llamacpp"), workspace)
    assert reply.text == MADE_UP


def test_a_named_other_model_on_the_embedded_server_is_not_checked(workspace: Workspace) -> None:
    class EmbeddedQwen(ScriptedServer):
        class embedded:
            alias = "qwen2.5-coder-1.5b"

    reply = run(EmbeddedQwen([fenced("list_dir"), MADE_UP], kind="llamacpp"), workspace)
    assert reply.text == MADE_UP


def test_what_was_found_is_shown_masked_and_inert(tmp_path: Path) -> None:
    """The summary quotes file text: a secret in it is masked; markup in a name stays text in the view."""
    key = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    (tmp_path / "settings.py").write_text(f'OPENAI_API_KEY = "{key}"\n')
    (tmp_path / "<img src=x onerror=alert(1)>.md").write_text("hi\n")
    server = EmbeddedLike([fenced("read_file", path="settings.py"), MADE_UP], kind="llamacpp")
    reply = run(server, Workspace(tmp_path), "Which key does settings.py set?")
    assert reply.text.startswith(UNSUPPORTED_ANSWER)
    assert key not in reply.text
    server = EmbeddedLike([fenced("list_dir"), MADE_UP], kind="llamacpp")
    view = ReplyView("q")
    reply = asyncio.run(
        Loop(server, Workspace(tmp_path), settings=LoopSettings(evidence=False)).reply(
            "Which files are in this folder?", emit=view.handle
        )
    )
    assert "onerror" in reply.text
    html = "".join(item._repr_mimebundle_()["text/html"] for item in view.texts.values())
    assert "<img" not in html


def test_the_embedded_smollm2_writes_a_short_reply(workspace: Workspace) -> None:
    """Its right answers are a sentence or a short list; past that it loops until the cap."""
    from twinny_magics.engine.offer import TINY_MODEL_REPLY_TOKENS

    server = EmbeddedLike([fenced("list_dir"), "quickstart.ipynb."], kind="llamacpp")
    run(server, workspace)
    assert [r.max_tokens for r in server.requests] == [TINY_MODEL_REPLY_TOKENS] * 2
    other = ScriptedServer([fenced("list_dir"), "quickstart.ipynb."], kind="llamacpp")
    run(other, workspace)
    assert all((r.max_tokens or 0) > TINY_MODEL_REPLY_TOKENS for r in other.requests)


def test_the_view_shows_the_honest_answer_in_place_of_the_streamed_text(workspace: Workspace) -> None:
    view = ReplyView("q")
    server = EmbeddedLike([fenced("list_dir"), MADE_UP], kind="llamacpp")
    reply = asyncio.run(
        Loop(server, workspace, settings=LoopSettings(evidence=False)).reply(
            "Which files are in this folder?", emit=view.handle
        )
    )
    last = view.texts[len(reply.steps)]
    assert last.body == reply.text
    assert MADE_UP not in last.body
