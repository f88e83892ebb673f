"""How a reply is shown in a notebook or a terminal.

- ``items``    the pieces (status line, request window bar, call, text, notice, edit, approval), each
               with ``text/plain`` and ``text/html`` — pure rendering
- ``buttons``  the widgets: Apply/Discard, Run/Don't run, and routing approval clicks to a subshell
- ``view``     `ReplyView`, which turns the loop's events into those pieces, live
"""

from __future__ import annotations

from twinny_magics.display.items import Bundle, Item
from twinny_magics.display.view import EditPanel, ReplyView

__all__ = ["Bundle", "EditPanel", "Item", "ReplyView"]
