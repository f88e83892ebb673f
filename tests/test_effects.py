"""What a call did beyond its text (it changed the workspace, it edited, it settles the reply) comes from
the call's outcome or from its toolset's declaration, never from the tool's name."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twinny_magics.contracts import DeclaresEffects, Effects, ToolEffects, effects_of
from twinny_magics.conversation import ToolCall
from twinny_magics.loop import Loop
from twinny_magics.servers.scripted import Scripted, ScriptedServer
from twinny_magics.tools import Workspace
from twinny_magics.tools.base import ToolOutput
from twinny_magics.tools.registry import TOOLS


@dataclass(frozen=True)
class Plain:
    """An outcome that says nothing of what its call did."""

    text: str
    is_error: bool = False
    pending: object | None = None


def definition(name: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"what": {"type": "string"}}, "required": []}
    return {"type": "function", "function": {"name": name, "description": name, "parameters": schema}}


@dataclass
class Silent:
    """A toolset that declares nothing: ``look`` reads, the others answer plain text."""

    names: tuple[str, ...] = ("look", "touch")
    ran: list[str] = field(default_factory=list)

    def definitions(self) -> list[dict[str, Any]]:
        return [definition(name) for name in self.names]

    async def run(self, call: ToolCall) -> Plain:
        self.ran.append(call.name)
        return Plain(f"{call.name} ran")


@dataclass
class Declaring(Silent):
    """The same tools, with ``touch`` declared as changing the workspace."""

    changing: frozenset[str] = frozenset({"touch"})

    def effects(self, name: str) -> Effects:
        return Effects(changes_workspace=name in self.changing)


def look() -> Scripted:
    return Scripted("", (ToolCall("look", {"what": "x"}),))


def ran_after(tools: Silent, middle: str) -> list[str]:
    """The tools run for: look, ``middle``, the same look again, then an answer."""
    server = ScriptedServer([look(), Scripted("", (ToolCall(middle, {}),)), look(), "ok"])
    asyncio.run(Loop(server, tools).reply("Look."))
    return tools.ran


def test_a_tool_its_toolset_declares_as_changing_lets_earlier_calls_run_again_whatever_its_name() -> None:
    assert ran_after(Declaring(), "touch") == ["look", "touch", "look"]
    assert ran_after(Declaring(names=("look", "grep"), changing=frozenset({"grep"})), "grep") == [
        "look",
        "grep",
        "look",
    ]


def test_a_name_says_nothing_a_toolset_that_declares_nothing_is_not_taken_to_change_anything() -> None:
    # A built-in tool's name on a toolset of its own: not the built-in tool's flags.
    assert ran_after(Silent(names=("look", "run_command")), "run_command") == ["look", "run_command"]
    assert ran_after(Declaring(changing=frozenset()), "touch") == ["look", "touch"]


def test_what_an_outcome_says_comes_first_then_the_toolset_then_a_change_left_for_review() -> None:
    call = ToolCall("touch", {})
    said = ToolOutput("x", changes_workspace=False, edits=False, settles=True)
    assert effects_of(Declaring(), call, said) is said
    assert effects_of(Declaring(), call, Plain("x")) == Effects(changes_workspace=True)
    assert effects_of(Silent(), call, Plain("x")) == Effects()
    proposed = Plain("x", pending=object())
    assert effects_of(Silent(), call, proposed) == Effects(changes_workspace=True, edits=True)
    assert isinstance(Declaring(), DeclaresEffects)
    assert not isinstance(Silent(), DeclaresEffects)


def test_the_workspace_declares_each_tools_flags_and_stamps_them_on_its_outputs(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    assert isinstance(workspace, DeclaresEffects)
    for name, tool in TOOLS.items():
        assert workspace.effects(name) == Effects(changes_workspace=tool.changes_workspace, edits=tool.edits)
    assert workspace.effects("no_such_tool") == Effects()
    assert {n for n in TOOLS if workspace.effects(n).edits} == {"edit_file", "create_file"}
    assert {n for n in TOOLS if workspace.effects(n).changes_workspace} == {
        "edit_file",
        "create_file",
        "run_command",
    }
    (tmp_path / "a.py").write_text("x = 1\n")
    out = asyncio.run(workspace.run(ToolCall("edit_file", {"path": "a.py", "find": "x", "replace": "y"})))
    assert isinstance(out, ToolEffects)
    assert (out.changes_workspace, out.edits) == (True, True)
