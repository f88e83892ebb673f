"""The workspace tools: list, find, read, grep, edit, create, run, and the notebook-native views.

The agent loop needs only `Workspace` (``definitions()`` to offer the tools, ``await run(call)`` to call
one), `ToolOutput`, `ToolLimits` and `PendingEdit`. The modules, one concept each:

- ``context``   what a tool may ask of the toolset it runs in (`ToolContext`)
- ``paths``     confinement to the workspace root and the hidden/ignored rules
- ``files``     list_dir, find_files, read_file, grep
- ``notebook``  a .ipynb as its cells; the kernel's variables
- ``variables`` one kernel variable up close (inspect_variable), user code only under a time bound
- ``edits``     edit_file, create_file, pending review, atomic writes
- ``commands``  run_command as a process group that is always stopped
- ``search_index`` the ranked search's index of the workspace (SQLite FTS5), kept out of it
- ``registry``  the definitions the model sees and the checking of its arguments
- ``workspace`` the `Workspace` that puts them together
"""

from __future__ import annotations

from twinny_magics.tools.base import ToolLimits, ToolOutput
from twinny_magics.tools.edits import PendingEdit
from twinny_magics.tools.workspace import Approve, CommandsMode, EditsMode, Workspace

__all__ = ["Approve", "CommandsMode", "EditsMode", "PendingEdit", "ToolLimits", "ToolOutput", "Workspace"]
