"""The buttons: Apply/Discard under a proposed edit, Run/Don't run for a command waiting for approval.

Why approvals need a detour. A ``%%agent`` cell blocks the kernel's main thread while the reply runs on
a worker thread, and button clicks reach the kernel as comm messages on the shell channel, which the
main thread handles — so a click made while the cell runs would wait until the cell is over (checked
on ipykernel 7.4: it does). ipykernel 7 has *subshells*: a subshell is a thread with its own loop that
handles shell messages, and a comm may name the subshell its messages go to (``_reply_subshell_for``,
which ipykernel uses to route a widget's replies to the subshell that sent it). So the approval buttons'
comms are routed to a subshell of our own, where the click is handled at once while the cell still
runs. Where that is not possible — an older ipykernel, a terminal, or a cell run by a frontend that
takes no input while it runs (``allow_stdin`` False: nbclient and other headless runs) — nobody can
answer and the command is not run. Apply/Discard need none of this: they are used after the cell has
finished.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_subshells: dict[int, str | None] = {}
_subshell_lock = threading.Lock()
SUBSHELL_REPLY_MS = 2000


def kernel_subshell(kernel: Any) -> str | None:
    """A subshell of this kernel for approval clicks (made once; None when the kernel has none).

    Made the way ipykernel answers a frontend's ``create_subshell_request``: one request on the
    control-to-shell-channel pair. Call it from the main thread, before any reply runs.
    """
    if kernel is None:
        return None
    with _subshell_lock:
        if id(kernel) in _subshells:
            return _subshells[id(kernel)]
        subshell: str | None = None
        try:
            if getattr(kernel, "_supports_kernel_subshells", False):
                socket = kernel.shell_channel_thread.manager.control_to_shell_channel.from_socket
                socket.send_json({"type": "create"})
                if socket.poll(SUBSHELL_REPLY_MS):
                    reply = socket.recv_json()
                    if reply.get("status") == "ok":
                        subshell = str(reply["subshell_id"])
        except Exception:
            log.warning("could not make a subshell for approvals", exc_info=True)
        _subshells[id(kernel)] = subshell
        return subshell


def route_to_subshell(widget: Any, subshell: str) -> None:
    """Have the frontend's messages to ``widget`` handled on ``subshell`` (see the module docstring)."""
    comm = getattr(widget, "comm", None)
    if comm is not None:
        comm._reply_subshell_for = lambda data, default: subshell


def approval_buttons(on_answer: Callable[[bool], None], subshell: str | None, *, cell: bool = False) -> Any:
    """Run / Don't run buttons (Insert / Discard for a proposed cell); ``on_answer`` gets the choice
    once (on the subshell's thread)."""
    import ipywidgets as widgets  # noqa: PLC0415

    # Made disabled, and enabled once routed: a click sent before the route is set would go to the main
    # shell, which is busy with this very cell.
    yes, no = ("Insert", "Discard") if cell else ("Run", "Don't run")
    run = widgets.Button(
        description=yes, button_style="success" if cell else "warning", icon="plus" if cell else "play"
    )
    skip = widgets.Button(description=no, icon="times" if cell else "ban")
    run.disabled = skip.disabled = True
    box = _Buttons(
        [run, skip], fallback=f"{yes} / {no} buttons (only live while the cell runs in a live notebook)"
    )

    def answer(approved: bool) -> None:
        run.disabled = skip.disabled = True
        on_answer(approved)

    run.on_click(lambda _: answer(True))
    skip.on_click(lambda _: answer(False))
    if subshell is not None:
        for button in (run, skip):
            route_to_subshell(button, subshell)
    run.disabled = skip.disabled = False
    return box


def edit_buttons(on_apply: Callable[[], object], on_discard: Callable[[], object]) -> Any:
    """Apply / Discard buttons for one proposed edit."""
    import ipywidgets as widgets  # noqa: PLC0415

    apply = widgets.Button(description="Apply", button_style="success", icon="check")
    discard = widgets.Button(description="Discard", icon="times")
    apply.on_click(lambda _: on_apply())
    discard.on_click(lambda _: on_discard())
    return _Buttons([apply, discard], fallback="Apply / Discard buttons (or %agent apply / %agent discard)")


def disable(box: Any) -> None:
    """Grey out every button in a box."""
    for child in getattr(box, "children", ()):
        child.disabled = True


@functools.cache
def _buttons_class() -> Any:
    import ipywidgets as widgets  # noqa: PLC0415

    class Buttons(widgets.HBox):  # type: ignore[misc]
        """A row of buttons whose text twin says what they are and how to do without them."""

        fallback = "buttons"

        def __repr__(self) -> str:
            return self.fallback

    return Buttons


def _Buttons(children: list[Any], fallback: str) -> Any:
    box = _buttons_class()(children)
    box.fallback = fallback
    return box
