"""What every tool shares: the limits it keeps to and the output it returns.

Kept apart from the tools so that the registry, the edits and the loop can import these small types
and helpers without importing each other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twinny_magics.changes import PendingChange


@dataclass(frozen=True)
class ToolLimits:
    """How much one tool call may return or spend (defaults: see docs/tools.md).

    The limits are per call, not per file: a small model's window holds only a few results, so each one
    must stay small and say how to ask for more.
    """

    read_lines: int = 150
    line_chars: int = 200
    grep_matches: int = 40
    grep_per_file: int = 10
    list_entries: int = 150
    find_results: int = 100
    command_timeout: float = 120.0
    command_tail: int = 4000
    # A walk (find, grep, name suggestions) stops after this many entries, so a workspace that turns
    # out to be a whole home folder cannot stall the kernel.
    scan_entries: int = 20_000
    # grep skips files bigger than this; read_file reads at most files.READ_SCAN_CHARS of any file.
    grep_file_bytes: int = 5_000_000
    variables: int = 60


@dataclass(frozen=True)
class ToolOutput:
    """What a tool call returned: the text the model reads, whether it failed, and a pending edit."""

    text: str
    is_error: bool = False
    pending: PendingChange | None = None
    #: Whether the reply should end after this (the next request is the last): a kernel run that hit
    #: its time limit.
    settles: bool = False
    #: A warning for the user, said among the reply's notices ('' for none): kernel code still running.
    notice: str = ""
    #: Whether the call may have changed what other tools return (set from the tool by the workspace).
    changes_workspace: bool = False
    #: Whether the call made or proposed an edit of a file (set from the tool by the workspace).
    edits: bool = False
    #: What an edit left undone that the request may want ('' for nothing): a renamed name still used.
    unfinished: str = ""


def cut_line(line: str, limit: int) -> str:
    """``line`` cut to ``limit`` characters, with a marker saying how much was left out."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]} …[+{len(line) - limit} chars]"


def call_text(name: str, arguments: Mapping[str, object]) -> str:
    """A call as a message shows it for the model to copy: the JSON object a text-mode ```tool block holds.

    One line, in the same shape as the text protocol's own example, so a model in either mode can send it
    back as it is.
    """
    return json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)
