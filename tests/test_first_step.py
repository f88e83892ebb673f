"""What a small model sees first in text mode: an example call it may paste, and whether it may answer.

SmolLM2 on the embedded server pasted the tool list's example (``grep createServer``) in a folder with no
such thing, three times, and then answered nonsense. The example is now a call whose result is real in any
workspace (``list_dir`` of the top folder). And where the first request carries a head start, the model may
answer from it at step 1 instead of being held to a call there.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from twinny_magics import protocol
from twinny_magics.conversation import ToolCall
from twinny_magics.loop import Loop, LoopSettings
from twinny_magics.protocol.schema import prompt_example, tool_specs
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.tools import Workspace


class EmbeddedLike(ScriptedServer):
    """A scripted llama.cpp server that says it is the embedded one (running SmolLM2: no alias)."""

    embedded: object = "embedded"


def fenced(name: str, **arguments: Any) -> str:
    return protocol.format_call(ToolCall(name, arguments))


def first_rule(request: Any) -> str:
    """The root rule of a request's grammar: ``call`` alone (a call required) or an answer or a call."""
    return str(request.extra["grammar"].split("\n")[0].removeprefix("root ::= "))


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "app.py").write_text("import http\n\nPORT = 8000\nserver = http.server.HTTPServer(PORT)\n")
    (tmp_path / "README.md").write_text("A small app.\n")
    return Workspace(tmp_path)


def test_the_tool_list_s_example_is_a_call_whose_result_is_real_in_any_workspace(tmp_path: Path) -> None:
    prompt = protocol.text_mode_system_prompt("", Workspace(tmp_path).definitions())
    assert "createServer" not in prompt
    assert '```tool\n{"name": "list_dir", "arguments": {}}\n```' in prompt
    assert "this one lists the workspace's top folder" in prompt


def test_the_example_pasted_as_it_stands_reads_the_folder_it_is_run_in(workspace: Workspace) -> None:
    call, _ = prompt_example(tool_specs(workspace.definitions()))
    result = asyncio.run(workspace.run(call))
    assert "app.py" in result.text
    assert "README.md" in result.text


def test_without_list_dir_the_example_is_the_preferred_tool_s_as_before() -> None:
    pattern = {"pattern": {"type": "string"}}
    grep = {"name": "grep", "parameters": {"properties": pattern, "required": ["pattern"]}}
    call, said = prompt_example(tool_specs([grep]))
    assert call.name == "grep"
    assert said == ""


def run(loop: Loop, question: str) -> Any:
    return asyncio.run(loop.reply(question))


def test_with_a_head_start_the_embedded_smollm2_may_answer_at_the_first_step(workspace: Workspace) -> None:
    server = EmbeddedLike(["The port is 8000 (app.py:3)."], kind="llamacpp")
    reply = run(Loop(server, workspace, settings=LoopSettings(evidence=True)), "Which PORT does app.py use?")
    assert reply.head_start is not None
    assert first_rule(server.requests[0]) == "answer | call"
    assert reply.text == "The port is 8000 (app.py:3)."
    assert len(server.requests) == 1


def test_without_a_head_start_the_embedded_smollm2_must_call_first(workspace: Workspace) -> None:
    server = EmbeddedLike([fenced("list_dir"), "app.py and README.md."], kind="llamacpp")
    reply = run(Loop(server, workspace, settings=LoopSettings(evidence=False)), "Which PORT does app.py use?")
    assert reply.head_start is None
    assert first_rule(server.requests[0]) == "call"
    assert first_rule(server.requests[1]) == "answer | call"


def test_the_head_start_is_weighed_each_reply(workspace: Workspace) -> None:
    server = EmbeddedLike(["Port 8000.", fenced("list_dir"), "Two files."], kind="llamacpp")
    loop = Loop(server, workspace, settings=LoopSettings(evidence=True))
    run(loop, "Which PORT does app.py use?")
    run(loop, "Hello there, which files are in this folder?")  # no word to search for: no head start
    assert [first_rule(r) for r in server.requests] == ["answer | call", "call", "answer | call"]


def test_a_grammar_the_user_set_is_kept_with_a_head_start(workspace: Workspace) -> None:
    server = EmbeddedLike([fenced("list_dir"), "Port 8000."], kind="llamacpp")
    run(Loop(server, workspace, settings=LoopSettings(evidence=True, grammar="call-first")), "Which PORT?")
    assert first_rule(server.requests[0]) == "call"


# -- going round in circles with nothing found: an honest answer, never the model's guess -------------

NONSENSE = "This is a multi-part response with a clear explanation. Please continue to the rest."


def test_a_reply_stuck_with_nothing_found_says_so_instead_of_the_model_s_guess(workspace: Workspace) -> None:
    from twinny_magics.notes import NOTHING_FOUND

    wrong = fenced("list_dir", path="list_dir")  # as SmolLM2 wrote it in the quickstart
    server = EmbeddedLike([wrong, wrong, wrong, NONSENSE], kind="llamacpp")
    reply = run(Loop(server, workspace, settings=LoopSettings(evidence=False)), "Which files are in here?")
    assert reply.stopped == "stuck"
    assert reply.text.startswith(NOTHING_FOUND)
    assert "list_dir(path='list_dir') → failed" in reply.text
    assert NONSENSE not in reply.text
    assert any("rested on nothing found" in n.text for n in reply.notices)


def test_a_stuck_reply_that_found_something_keeps_the_model_s_answer(workspace: Workspace) -> None:
    right, wrong = fenced("list_dir"), fenced("list_dir", path="nowhere")
    server = EmbeddedLike([right, wrong, wrong, wrong, "app.py and README.md."], kind="llamacpp")
    reply = run(Loop(server, workspace, settings=LoopSettings(evidence=False)), "Which files are in here?")
    assert reply.stopped == "stuck"
    assert reply.text == "app.py and README.md."
