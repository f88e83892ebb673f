"""The workspace tools: list, find, read, grep, edit, create, run, and the notebook-native views.

The agent loop needs only `Workspace` (``definitions()`` to offer the tools, ``await run(call)`` to call
one), `ToolOutput`, `ToolLimits` and `PendingEdit`. The modules, one concept each:

- ``base``         what every tool shares: its limits (`ToolLimits`) and its output (`ToolOutput`)
- ``context``      what a tool may ask of the toolset it runs in (`ToolContext`)
- ``tool``         a tool as one object (`Tool`) and the checking of its arguments (`bind`)
- ``registry``     the tools offered (`TOOLS`) and their implementations
- ``refusal``      arguments that are not values (a copied description, a placeholder path), refused
- ``paths``        confinement to the workspace root and the hidden/ignored rules (``ignores``: git's)
- ``opening``      opening a file or folder without following links
- ``denied``       the deny list of secret files; ``unwritable``: the files never written
- ``files``        a file as the tools read it (binary or text, its lines, masked), read_file
- ``listing``      list_dir, find_files
- ``grep``         grep, and the bounded search behind the hints
- ``notebook``     a .ipynb as its cells
- ``search_index`` the ranked search's index of the workspace (SQLite FTS5), kept out of it
  (``search_focus``: what a question asks of a named definition)
- ``edits``        edit_file, create_file, pending review, atomic writes (``matching``: where find matches)
- ``commands``     run_command as a process group that is always stopped (``supervise``)
- ``kernel/``      the notebook kernel's tools: cell_history, run_python, propose_cell, the variables
- ``workspace``    the `Workspace` that puts them together
"""

from __future__ import annotations

from twinny_magics.tools.base import ToolLimits, ToolOutput
from twinny_magics.tools.edits import PendingEdit
from twinny_magics.tools.workspace import Approve, CommandsMode, EditsMode, Workspace

__all__ = ["Approve", "CommandsMode", "EditsMode", "PendingEdit", "ToolLimits", "ToolOutput", "Workspace"]
