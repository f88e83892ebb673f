"""A tool as one object (`Tool`): its definition, its implementation, its flags; and `bind`, the checking
of the arguments the model sends against a definition.

A tool is its definition (name, description, parameters, example call: what the model is told), its
implementation (``run``: what it may ask of the toolset, a `ToolContext`, and the checked arguments in,
a `ToolOutput` out) and its flags: whether it may change the workspace, which session setting asks the
user first or turns it off (``approval``), what it needs to be offered (``needs``) and whether a small
window goes without it (``roomy``). The tools themselves are in `registry.TOOLS`.

Definitions are OpenAI-style JSON schemas with properties in the order a call is written. Arguments are
checked (`bind`) before any tool runs, so a wrong call comes back as a message with the expected call
shape and an example rather than as an exception.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from twinny_magics.contracts import Effects
from twinny_magics.errors import WorkspaceError
from twinny_magics.tools.base import ToolOutput
from twinny_magics.tools.context import ToolContext

# What a parameter's value is, for the checks of `refusal.refusal`: a path that must exist (file, folder or
# either), a new file's path, a glob, a regex, text to write or find, a command, a line number.
Kind = Literal["file", "folder", "path", "new", "glob", "regex", "text", "command", "line"]


@dataclass(frozen=True)
class Param:
    """One argument of a tool."""

    name: str
    type: Literal["string", "integer"]
    description: str
    required: bool = True
    # Names small models often use instead (taken only when the real name is absent).
    aliases: tuple[str, ...] = ()
    kind: Kind = "text"


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name, description, arguments and an example call."""

    name: str
    description: str
    params: tuple[Param, ...]
    example: dict[str, Any]

    def definition(self, extra: str = "") -> dict[str, Any]:
        """The OpenAI-style definition; ``extra`` is appended to the description."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description + extra,
                "parameters": {
                    "type": "object",
                    "properties": {
                        p.name: {"type": p.type, "description": p.description} for p in self.params
                    },
                    "required": [p.name for p in self.params if p.required],
                },
            },
        }

    def shape(self) -> str:
        """The call shape as the text protocol writes it, e.g. ``read_file {path, start_line?}``."""
        names = ", ".join(p.name + ("" if p.required else "?") for p in self.params)
        return f"{self.name} {{{names}}}" + f", e.g. {json.dumps(self.example)}"


#: The session setting that asks the user before a tool goes ahead (or turns it off): ``edits``
#: (review/apply), ``commands`` (ask/allow/off), ``kernel`` (ask/allow/off), ``cells`` (review/insert).
Approval = Literal["edits", "commands", "kernel", "cells"]
#: What a tool needs to be offered: the kernel's namespace, the notebook kernel, the ranked search.
Needs = Literal["namespace", "kernel", "search"]
#: A tool's implementation: what it may ask of the toolset (`ToolContext`) and the checked arguments in,
#: the output out.
Run = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolOutput]]


@dataclass(frozen=True, kw_only=True)
class Tool(ToolSpec):
    """One tool: its definition (the `ToolSpec` fields), its implementation and its flags."""

    run: Run
    #: Whether its success may change what other tools return (earlier calls may then run again).
    changes_workspace: bool = False
    #: The setting that asks the user first, and turns it off where it can be ``off``.
    approval: Approval | None = None
    #: Appended to the description while that setting asks (``review``/``ask``).
    asking_note: str = ""
    #: The answer to a call while that setting is ``off`` (the tool is not offered then).
    off_text: str = ""
    #: Offered only with this.
    needs: Needs | None = None
    #: Left out in a small window (see ``workspace.ROOMY_WINDOW``).
    roomy: bool = False

    @property
    def edits(self) -> bool:
        """Whether it makes or proposes an edit of a file (held for review under ``edits=review``)."""
        return self.approval == "edits"

    @property
    def effects(self) -> Effects:
        """What a call of it does beyond its text, as its flags say (what the loop reads; a kernel run
        past its time limit settles the reply by its output, not by its tool)."""
        return Effects(changes_workspace=self.changes_workspace, edits=self.edits)


def bind(spec: ToolSpec, arguments: object) -> dict[str, Any]:
    """The arguments checked against ``spec`` (numbers in strings converted), or a `WorkspaceError`.

    Unknown extra arguments are ignored: small models add them, and refusing the call would cost a step
    for nothing.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise WorkspaceError(f"The arguments of {spec.name} must be an object. Call it as {spec.shape()}.")
    bound: dict[str, Any] = {}
    for param in spec.params:
        key = next((k for k in (param.name, *param.aliases) if k in arguments), None)
        value = arguments.get(key) if key is not None else None
        if value is None:
            if param.required:
                unknown = [k for k in arguments if k not in {p.name for p in spec.params}]
                extra = f" (it got {', '.join(map(str, unknown))} instead)" if unknown else ""
                raise WorkspaceError(f"{spec.name} needs {param.name}{extra}. Call it as {spec.shape()}.")
            continue
        bound[param.name] = _convert(spec, param, value)
    return bound


def _convert(spec: ToolSpec, param: Param, value: object) -> Any:
    """One argument converted to its schema type, or why it cannot be."""
    if param.type == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
    elif isinstance(value, str):
        return value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    got = json.dumps(value) if isinstance(value, str | int | float | bool) else type(value).__name__
    kind = "an integer" if param.type == "integer" else "a string"
    raise WorkspaceError(f"{spec.name}: {param.name} must be {kind} (got {got}). Call it as {spec.shape()}.")
