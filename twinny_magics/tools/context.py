"""What a tool's implementation may ask of the toolset it runs in: the `ToolContext` protocol.

A tool's ``run`` takes a `ToolContext` and its checked arguments. The context is the confinement to the
workspace root (paths, reading, the deny list), the limits of a call, the kernel's namespace, and the
actions whose state the toolset holds: the edits waiting for review, the user's approval, the search
index and the notebook kernel. `workspace.Workspace` is the one the session uses; declaring what a tool
needs here, below both, keeps the tools from importing the class that dispatches them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from twinny_magics.tools.base import ToolLimits, ToolOutput
    from twinny_magics.tools.paths import Confinement


class ToolContext(Protocol):
    """What a tool reads and asks for while it runs (`workspace.Workspace` is one)."""

    @property
    def conf(self) -> Confinement:
        """The confinement to the workspace root every tool reads and writes through."""
        ...

    @property
    def limits(self) -> ToolLimits:
        """How much one call may return or spend."""
        ...

    @property
    def namespace(self) -> Mapping[str, Any] | None:
        """The kernel's variables; None outside a kernel."""
        ...

    def search_text(self, words: str) -> str:
        """search: the best-matching chunks of files for ``words``, ranked. Blocking."""
        ...

    def edit_file(self, path: str, find: str, replace: str) -> ToolOutput:
        """edit_file: replace ``find`` by ``replace``, held for review or written."""
        ...

    def create_file(self, path: str, content: str) -> ToolOutput:
        """create_file: a new file with ``content``, held for review or written."""
        ...

    async def run_command(self, command: str) -> ToolOutput:
        """run_command: ask (when asked to ask), then run the command."""
        ...

    def cell_history(self) -> ToolOutput:
        """cell_history: the cells run in the kernel, newest last."""
        ...

    async def run_python(self, code: str) -> ToolOutput:
        """run_python: ask (when asked to ask), then run ``code`` in the kernel."""
        ...

    async def propose_cell(self, code: str, why: str) -> ToolOutput:
        """propose_cell: a cell for the notebook, inserted as the cells setting says, never run."""
        ...
