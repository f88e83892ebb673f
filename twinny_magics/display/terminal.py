"""What reaches a terminal, and how a command is shown before it runs. Pure functions over strings.

In terminal IPython the view prints model text, tool output, diffs and notices to stdout, and a
terminal obeys what it is sent: an OSC 52 sequence in a file the model read writes the user's
clipboard, OSC 0 sets the window title, OSC 8 makes a link whose text differs from its target, cursor
moves and ``\\r`` overwrite what was printed. :func:`inert` (from the neutral :mod:`twinny_magics.inert`,
which the tools use too) removes every escape sequence and makes every remaining control and bidi
control visible; ``ReplyView`` passes everything it prints through it.

A command waiting for approval is shown exactly (:func:`command_lines`): each line on its own line,
every control, bidi and invisible character as a marker such as ``⟨U+202E⟩`` (:func:`visible`), and
its size stated (:func:`command_shape`), so that neither a newline, a right-to-left override nor a
zero-width character can make the command look like another.
"""

from __future__ import annotations

from twinny_magics.inert import (
    MARK_CLOSE,
    MARK_OPEN,
    hidden,
    inert,
    marker,
    strip_escapes,
    visible,
    visible_parts,
)

__all__ = [
    "MARK_CLOSE",
    "MARK_OPEN",
    "command_lines",
    "command_shape",
    "hidden",
    "inert",
    "marker",
    "strip_escapes",
    "visible",
    "visible_parts",
]


def command_lines(command: str) -> list[str]:
    """The command's lines as the shell splits them (on ``\\n`` only), each made :func:`visible`."""
    return [visible(line) for line in command.split("\n")]


def command_shape(command: str) -> str:
    """``1 line, 16 characters`` / ``3 lines, 120 characters, 1 hidden character shown as ⟨U+…⟩``."""
    lines = command.count("\n") + 1
    chars = len(command)
    shape = f"{lines:,} line{_s(lines)}, {chars:,} character{_s(chars)}"
    marked = sum(1 for char in command if hidden(char))
    if marked:
        shape += f", {marked:,} hidden character{_s(marked)} shown as {MARK_OPEN}U+…{MARK_CLOSE}"
    return shape


def _s(count: int) -> str:
    return "" if count == 1 else "s"
