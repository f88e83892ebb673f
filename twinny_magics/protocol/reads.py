"""What reading one position of a reply gives (``Read``: calls, ``Problem``s, where it stopped), and the
making of a call from a name and arguments read in any dialect: the name resolved against the tools
offered, positional arguments named, values coerced to their schema, and the problem a model is told
when its call cannot be read (with an example call to copy).

Pure: no I/O. ``dialects.DialectReader`` reads the dialects on top of this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from twinny_magics.conversation import ToolCall
from twinny_magics.protocol.scan import TextScan
from twinny_magics.protocol.schema import (
    OfferedTool,
    coerce_text,
    coerce_value,
    example_call,
    format_call,
    preferred_example,
    resolve_name,
)

_BAD_NAME = re.compile(r"[\n\r\t<>{}()\[\]]")


@dataclass
class Problem:
    """A call the model meant but that could not be read (or names a tool not offered)."""

    pos: int
    message: str
    unknown: str | None = None


@dataclass
class Read:
    """What a reader found at one position, and where it stopped.

    ``said`` is text the model wrote inside the call's syntax for the user to read (xLAM's "thought"):
    it stands in the content where the call was.
    """

    end: int
    calls: list[ToolCall] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    said: list[str] = field(default_factory=list)

    def take(self, other: Read) -> None:
        """Add what ``other`` found after this, and end where it ends."""
        self.calls.extend(other.calls)
        self.problems.extend(other.problems)
        self.said.extend(other.said)
        self.end = other.end


class CallReader:
    """One text and the tools offered, and how a call read in it is made (or why it cannot be)."""

    def __init__(self, text: str, specs: dict[str, OfferedTool]) -> None:
        self.text = text
        self.n = len(text)
        self.specs = specs
        self.scan = TextScan(text)

    def _one_call(self, end: int, outcome: ToolCall | Problem) -> Read:
        if isinstance(outcome, Problem):
            return Read(end, problems=[outcome])
        return Read(end, calls=[outcome])

    def _make_call(
        self,
        pos: int,
        raw_name: str,
        keywords: dict[str, Any],
        *,
        positional: list[Any] | None = None,
        call_id: str | None = None,
        text_values: bool = False,
    ) -> ToolCall | Problem:
        name = raw_name.strip()
        if not name or len(name) > 128 or _BAD_NAME.search(name):
            return self._format(pos, f"{name[:60]!r} is not a tool name")
        spec: OfferedTool | None = None
        if self.specs:
            resolved = resolve_name(name, self.specs)
            if resolved is None:
                return self._unknown(pos, name)
            name, spec = resolved, self.specs[resolved]
        arguments = dict(keywords)
        if positional:
            if spec is None:
                return self._format(pos, f"name the arguments of {name}, like {name}(path=...)")
            if len(positional) > len(spec.params):
                listed = ", ".join(spec.params) or "no arguments"
                return self._format(
                    pos, f"{name} takes at most {len(spec.params)} arguments ({listed})", name
                )
            named = dict(zip(spec.params, positional, strict=False))
            twice = sorted(set(named) & set(arguments))
            if twice:
                return self._format(pos, f"{name} was given {twice[0]} twice", name)
            arguments = {**named, **arguments}
        if spec is not None:
            for key, value in arguments.items():
                schema = spec.schemas.get(key)
                if schema is not None:
                    arguments[key] = (
                        coerce_text(value, schema)
                        if text_values and isinstance(value, str)
                        else coerce_value(value, schema)
                    )
        return ToolCall(name, arguments, call_id)

    def _example(self, tool: str | None) -> str:
        spec = self.specs.get(resolve_name(tool, self.specs) or "") if tool and self.specs else None
        return format_call(example_call(spec or preferred_example(self.specs)))

    def _format(self, pos: int, why: str, tool: str | None = None) -> Problem:
        message = (
            f"I could not read your tool call: {why}. "
            f"Write one call as one fenced block, exactly like this:\n{self._example(tool)}"
        )
        return Problem(pos, message)

    def _unknown(self, pos: int, name: str) -> Problem:
        offered = ", ".join(self.specs)
        message = (
            f'There is no tool called "{name[:60]}". The tools you can call are: {offered}. '
            f"Call one of them as one fenced block, like this:\n{self._example(None)}"
        )
        return Problem(pos, message, unknown=name)
