"""twinny_magics: a coding agent for small local models inside Jupyter.

``%load_ext twinny_magics``, then a ``%%agent`` cell. The public names below are what outside code
imports; the heavier ones (the session, the server probes) load on first use, so that loading the
extension stays quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import version
from ._lazy import lazy_names
from .budget import ContextPlan, TokenEstimator, plan_context
from .conversation import ToolCall

if TYPE_CHECKING:
    from .agent import Agent
    from .events import Reply
    from .protocol import displayable_length, parse_tool_calls
    from .servers import probe_context_window
    from .servers.scripted import ScriptedServer

__version__ = version.__version__

__all__ = [
    "Agent",
    "ContextPlan",
    "Reply",
    "ScriptedServer",
    "TokenEstimator",
    "ToolCall",
    "displayable_length",
    "load_ipython_extension",
    "parse_tool_calls",
    "plan_context",
    "probe_context_window",
    "unload_ipython_extension",
]

_LAZY = {
    "Agent": "twinny_magics.agent",
    "Reply": "twinny_magics.events",
    "displayable_length": "twinny_magics.protocol",
    "parse_tool_calls": "twinny_magics.protocol",
    "probe_context_window": "twinny_magics.servers",
    "ScriptedServer": "twinny_magics.servers.scripted",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext twinny_magics``: register ``%%agent`` and ``%agent``."""
    from .magic import load_ipython_extension as load  # noqa: PLC0415 - the magic loads with the extension

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext twinny_magics``."""
    from .magic import unload_ipython_extension as unload  # noqa: PLC0415

    unload(ipython)
