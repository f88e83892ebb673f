"""``mode="auto"`` learns from the first replies whether a model calls tools natively or as text.

The learner is pure (a table of what a step showed); the loop is run on the scripted model and, for the
memory across sessions of one server and model, through the real adapter on httpx's MockTransport.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from test_lazy_grammar import BROKEN, PROSE, REST, FakeLlamaCpp, LlamaCpp, connected
from test_loop import Tools, fenced, grep, run

from twinny_magics.agent import Agent
from twinny_magics.loop import Loop, LoopSettings
from twinny_magics.modes import LEARNED_MODES, TEXT_HABIT, Ground, ModeChoice, ModeLearner, ModeMemory
from twinny_magics.servers import ServerInfo
from twinny_magics.servers.scripted import Scripted, ScriptedServer

WORKSPACE_QUESTION = "Where is the server created?"

# --- the learner -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seen", "decided"),
    [
        ([(True, False, True)], "native"),
        ([(False, True, True)], "text"),
        ([(True, True, True)], "native"),  # native calls win: the server read them as such
        ([(False, False, True)], None),
        ([(False, False, True)] * 2, "text"),
        ([(False, False, False)] * 5, None),  # small talk answered: nothing learned
        ([(False, False, True), (True, False, True)], "native"),
    ],
)
def test_what_the_steps_show_decides_the_mode(
    seen: list[tuple[bool, bool, bool]], decided: str | None
) -> None:
    learner = ModeLearner()
    choice = None
    for step, (native, text, needed) in enumerate(seen, 1):
        choice = learner.observe(step, native_call=native, text_call=text, needed_a_tool=needed) or choice
        if choice:
            break
    assert (choice.mode if choice else None) == decided


def test_without_a_limit_answers_never_switch_the_mode() -> None:
    learner = ModeLearner()
    assert all(
        learner.observe(n, native_call=False, text_call=False, needed_a_tool=True, text_after=0) is None
        for n in range(20)
    )


def test_the_memory_keeps_a_choice_per_server_and_model() -> None:
    memory = ModeMemory()
    choice = ModeChoice("text", "the server refused native tools")
    memory.remember(("http://a", "m"), choice)
    memory.remember(None, ModeChoice("native", "no URL: not kept"))
    assert memory.get(("http://a", "m")) is choice
    assert memory.get(("http://a", "other")) is None
    assert memory.get(None) is None
    assert len(memory) == 1
    memory.clear()
    assert memory.get(("http://a", "m")) is None


# --- the loop, on the scripted model -----------------------------------------------------------------------


@dataclass
class AtUrl(ScriptedServer):
    """A scripted server with an address, so what auto learns about it is remembered by URL and model."""

    url: str = "http://127.0.0.1:11434"
    info: Any = field(init=False)

    def __post_init__(self) -> None:
        self.info = ServerInfo(self.url, "ollama", self.model)


def mode_notices(reply: Any) -> list[str]:
    return [n.text for n in reply.notices if n.kind == "mode"]


def test_a_native_call_settles_auto_on_native_and_says_why() -> None:
    server = ScriptedServer([Scripted("", (grep("main"),)), "In main.py.", "Still native."])
    loop = Loop(server, Tools(), memory=ModeMemory())
    reply, _ = run(loop, WORKSPACE_QUESTION)
    assert loop.mode == "native"
    assert loop.mode_choice == ModeChoice(
        "native", "the model made a native tool call in step 1", "native call"
    )
    assert loop.learner is None
    assert mode_notices(reply) == [
        "Mode auto chose native tool calls: the model made a native tool call in step 1."
    ]
    again, _ = run(loop, WORKSPACE_QUESTION)
    assert mode_notices(again) == []
    assert server.requests[-1].tools is not None


def test_a_call_written_as_text_under_native_tools_runs_and_switches_to_text() -> None:
    server = ScriptedServer([fenced("grep", pattern="main"), "In main.py."])
    tools = Tools()
    loop = Loop(server, tools, memory=ModeMemory())
    reply, _ = run(loop, WORKSPACE_QUESTION)
    assert [c.arguments for c in tools.ran] == [{"pattern": "main"}]
    assert loop.mode == "text"
    first, second = server.requests
    assert first.tools is not None
    assert second.tools is None
    assert "grep {pattern, path?}" in second.messages[0]["content"]  # the tools, listed as text
    assert second.messages[-2]["content"] == fenced("grep", pattern="main")
    assert second.messages[-1]["content"].startswith('<tool_result name="grep">')
    [said] = mode_notices(reply)
    assert said.startswith("Mode auto chose tools as text: the model wrote its tool call as text")
    assert reply.requests[1].mode == "text"
    assert reply.text == "In main.py."


def test_a_broken_text_call_under_native_tools_also_switches_and_gets_the_example() -> None:
    broken = 'Searching.\n```tool\n{"name": "grep", "arguments": {"pattern": "x"\n```'
    server = ScriptedServer([broken, "ok"])
    loop = Loop(server, Tools(), memory=ModeMemory())
    run(loop, WORKSPACE_QUESTION)
    assert loop.mode == "text"
    assert "```tool" in server.requests[1].messages[-1]["content"]
    assert server.requests[1].tools is None


def test_answers_without_any_call_to_workspace_questions_try_text_after_two() -> None:
    server = ScriptedServer(["A guess.", "Another guess.", fenced("grep", pattern="x"), "Found."])
    agent = Agent(server=server, tools=Tools())
    first = agent.run(WORKSPACE_QUESTION)
    assert agent.mode == "native"
    assert mode_notices(first) == []
    second = agent.run("Which port does it listen on?")
    [said] = mode_notices(second)
    assert "no tool call with native tools in 2 steps that needed the workspace" in said
    assert agent.mode == "text"
    third = agent.run("And where is it configured?")
    assert server.requests[2].tools is None
    assert "grep {pattern, path?}" in server.requests[2].messages[0]["content"]
    assert third.text == "Found."


def test_small_talk_answered_without_a_call_teaches_nothing() -> None:
    server = ScriptedServer(["Hello!", "You are welcome.", "Bye!"])
    loop = Loop(server, Tools(), memory=ModeMemory())
    for question in ("hi", "thanks!", "bye"):
        run(loop, question)
    assert loop.mode == "native"
    assert loop.learner is not None


@pytest.mark.parametrize("mode", ["native", "text"])
def test_an_explicit_mode_is_never_changed_by_what_the_model_writes(mode: str) -> None:
    writes = fenced("grep", pattern="x") if mode == "native" else Scripted("", (grep("x"),))
    server = ScriptedServer([writes, "ok", "A guess.", "Another.", "More."])
    loop = Loop(server, Tools(), mode=mode, memory=ModeMemory())  # type: ignore[arg-type]
    for question in (WORKSPACE_QUESTION, "Where is it?", "Which file has it?", "What does it do?"):
        reply, _ = run(loop, question)
        assert mode_notices(reply) == []
    assert loop.mode == mode
    assert loop.learner is None


def test_a_server_that_refuses_tools_decides_text_and_the_choice_is_kept() -> None:
    memory = ModeMemory()
    server = AtUrl([fenced("grep", pattern="main"), "Done."], refuse_tools=True, model="m")
    loop = Loop(server, Tools(), memory=memory)
    reply, _ = run(loop, WORKSPACE_QUESTION)
    assert loop.mode == "text"
    assert memory.get((server.url, "m")) == ModeChoice("text", "the server refused native tools")
    assert any(n.kind == "fallback" for n in reply.notices)
    later = Loop(AtUrl(["Hi."], refuse_tools=True, model="m"), Tools(), memory=memory)
    assert later.mode == "text"


def _text_session(memory: ModeMemory, model: str = "m") -> Loop:
    """A session whose model writes its call as text: auto switches it to text."""
    loop = Loop(AtUrl([fenced("grep", pattern="x"), "ok"], model=model), Tools(), memory=memory)
    run(loop, WORKSPACE_QUESTION)
    assert loop.mode == "text"
    return loop


def _native_session(memory: ModeMemory, model: str = "m") -> Loop:
    loop = Loop(AtUrl([Scripted("", (grep("x"),)), "ok"], model=model), Tools(), memory=memory)
    run(loop, WORKSPACE_QUESTION)
    assert loop.mode == "native"
    return loop


def test_one_call_written_as_text_switches_its_session_only() -> None:
    memory = ModeMemory()
    _text_session(memory)
    later_server = AtUrl([Scripted("", (grep("y"),)), "In main.py."], model="m")
    later = Loop(later_server, Tools(), memory=memory)
    assert later.mode == "native"
    assert later.learner is not None  # learns afresh
    reply, _ = run(later, WORKSPACE_QUESTION)
    assert later_server.requests[0].tools is not None
    assert mode_notices(reply) == [
        "Mode auto chose native tool calls: the model made a native tool call in step 1."
    ]


def test_a_native_call_is_not_carried_either_a_later_session_still_switches_on_a_text_call() -> None:
    memory = ModeMemory()
    _native_session(memory)
    later = Loop(AtUrl([fenced("grep", pattern="z"), "ok"], model="m"), Tools(), memory=memory)
    assert later.learner is not None
    run(later, WORKSPACE_QUESTION)
    assert later.mode == "text"


def test_text_is_carried_once_it_is_a_habit_of_the_model_and_said_why() -> None:
    memory = ModeMemory()
    for _ in range(TEXT_HABIT - 1):
        _text_session(memory)
        assert memory.get((AtUrl([]).url, "m")) is None
    _text_session(memory)
    same = AtUrl(["An answer."], model="m")
    later = Loop(same, Tools(), memory=memory)
    assert later.mode == "text"
    reply, _ = run(later, WORKSPACE_QUESTION)
    [said] = mode_notices(reply)
    assert said.startswith(
        f"Tools as text, as learned earlier in this process for this server and model: {TEXT_HABIT} "
        "sessions in a row chose text, none native (the latest: the model wrote its tool call as text"
    )
    assert same.requests[0].tools is None
    assert mode_notices(run(later, WORKSPACE_QUESTION)[0]) == []  # said once
    other_model = Loop(AtUrl(["x"], model="other"), Tools(), memory=memory)
    other_url = Loop(AtUrl(["x"], model="m", url="http://10.0.0.2:11434"), Tools(), memory=memory)
    assert other_model.mode == other_url.mode == "native"
    assert other_model.learner is not None


def test_a_native_call_between_text_sessions_starts_the_count_again() -> None:
    memory = ModeMemory()
    key = (AtUrl([]).url, "m")
    for _ in range(TEXT_HABIT - 1):
        _text_session(memory)
    _native_session(memory)
    for _ in range(TEXT_HABIT - 1):
        _text_session(memory)
    assert memory.get(key) is None
    _text_session(memory)
    assert memory.get(key) == ModeChoice("text", memory.get(key).reason, "text call")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("grounds", "kept"),
    [
        ([], None),
        (["text call"], None),
        (["text call"] * TEXT_HABIT, "text"),
        (["no call"] * TEXT_HABIT, "text"),  # answered without a call in every one: the same habit
        (["text call", "no call", "text call"], "text"),
        (["text call"] * TEXT_HABIT + ["native call"], None),  # a native call forgets the habit
        (["text call", "native call"] + ["text call"] * (TEXT_HABIT - 1), None),
        (["native call"] * 5, None),  # native is where a session starts anyway: nothing to carry
        (["server"], "text"),  # the server refused native tools: a fact, kept
        (["server", "native call", "native call"], "text"),
    ],
)
def test_what_a_later_session_starts_with(grounds: list[Ground], kept: str | None) -> None:
    memory = ModeMemory()
    for ground in grounds:
        memory.remember(
            ("http://a", "m"), ModeChoice("native" if ground == "native call" else "text", "r", ground)
        )
    choice = memory.get(("http://a", "m"))
    assert (choice.mode if choice else None) == kept


def test_a_server_without_an_address_is_remembered_only_by_its_session() -> None:
    memory = ModeMemory()
    loop = Loop(ScriptedServer([fenced("grep", pattern="x"), "ok"]), Tools(), memory=memory)
    run(loop, WORKSPACE_QUESTION)
    assert loop.mode == "text"
    assert len(memory) == 0


def test_setting_a_mode_on_a_live_session_stops_learning_and_auto_again_keeps_what_was_learned() -> None:
    server = ScriptedServer([fenced("grep", pattern="x"), "ok", "fine", Scripted("", (grep("y"),)), "done"])
    agent = Agent(server=server, tools=Tools())
    agent.run(WORKSPACE_QUESTION)
    assert agent.mode == "text"
    agent.configure(mode="auto")  # every cell passes its mode: the same setting changes nothing
    assert agent.mode == "text"
    agent.configure(mode="native")
    agent.run(WORKSPACE_QUESTION)
    assert agent.mode == "native"
    assert server.requests[-1].tools is not None


def test_by_default_sessions_of_one_process_share_what_auto_learned() -> None:
    for _ in range(TEXT_HABIT):
        Agent(server=AtUrl([fenced("grep", pattern="x"), "ok"], model="m"), tools=Tools()).run(
            WORKSPACE_QUESTION
        )
    assert LEARNED_MODES.get(("http://127.0.0.1:11434", "m")) is not None
    agent = Agent(server=AtUrl(["An answer."], model="m"), tools=Tools())
    reply = agent.run(WORKSPACE_QUESTION)
    assert agent.mode == "text"
    assert mode_notices(reply)


# --- with the lazy grammar on llama.cpp, over http ---------------------------------------------------------


async def test_on_llama_cpp_auto_moves_to_text_where_the_lazy_grammar_shapes_the_call() -> None:
    fake = FakeLlamaCpp(["A guess.", "Another guess.", PROSE + BROKEN, REST, "In app.py."])
    memory = ModeMemory()
    tools = Tools()
    loop = Loop(connected(fake), tools, memory=memory)
    for question in (WORKSPACE_QUESTION, "Which port does it listen on?"):
        await loop.reply(question)
    assert loop.mode == "text"
    reply = await loop.reply("And where is createServer?")
    assert [b.get("tools") is None for b in fake.bodies] == [False, False, True, True, True]
    assert fake.bodies[3]["messages"][-1] == {"role": "assistant", "content": PROSE + "```tool"}
    assert [c.arguments for c in tools.ran] == [{"pattern": "createServer"}]
    assert reply.requests[0].continued
    assert loop.mode_choice is not None
    assert loop.mode_choice.ground == "no call"
    # One session's choice: a new session of the same server and model learns afresh, natively.
    fake.replies.append("Hello.")
    later = Loop(connected(fake), Tools(), memory=memory)
    said = await later.reply("What is this project?")
    assert later.mode == "native"
    assert mode_notices(said) == []
    assert "tools" in fake.bodies[-1]


def test_the_switch_needs_llama_cpp_only_for_the_grammar() -> None:
    # On any server, a text call under native tools moves auto to text; only llama.cpp adds the grammar.
    server = LlamaCpp([PROSE + BROKEN, "ok", PROSE + BROKEN, REST, "done"])
    loop = Loop(server, Tools(), settings=LoopSettings(), memory=ModeMemory())
    run(loop, WORKSPACE_QUESTION)
    assert loop.mode == "text"
    assert "grammar" not in server.requests[0].extra  # native: no grammar
    reply, _ = run(loop, WORKSPACE_QUESTION)
    assert reply.requests[0].continued
