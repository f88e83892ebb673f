"""How a reply is shown in a notebook or a terminal.

- ``reprs``    rich reprs of what a person inspects (the plan, the estimator, a reply, the session) and
               the HTML helpers every display shares; light, so loading the extension can register them
- ``items``    the pieces (status line, request window bar, call, text, notice, edit, approval), each
               with ``text/plain`` and ``text/html`` — pure rendering
- ``buttons``  the widgets: Apply/Discard, Run/Don't run, and routing approval clicks to a subshell
- ``view``     `ReplyView`, which turns the loop's events into those pieces, live

The names below load on first use, so that ``reprs`` (imported when the extension loads) brings in
neither the markdown renderer nor the view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twinny_magics._lazy import lazy_names

if TYPE_CHECKING:
    from twinny_magics.display.items import Bundle, Item
    from twinny_magics.display.view import EditPanel, ReplyView

__all__ = ["Bundle", "EditPanel", "Item", "ReplyView"]

_LAZY = {
    "Bundle": "twinny_magics.display.items",
    "Item": "twinny_magics.display.items",
    "EditPanel": "twinny_magics.display.view",
    "ReplyView": "twinny_magics.display.view",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())
