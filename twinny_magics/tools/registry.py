"""The tools the model is offered, in order: `TOOLS`, one `tool.Tool` each, and their implementations.

`TOOLS` holds them in the order they are offered; `Workspace` dispatches by looking a call up there, and
the loop learns what a call did from its output, never from its name. Adding a tool is adding one `Tool`
to `TOOLS` (the type, and the checking of arguments, are in `tool`).

Descriptions are short because the whole list travels in every native request of a small window, and
they are written for models of half a billion parameters, which copy what they read into the call: each
is a short label and one realistic example (``src/app.py``, never a sentence that could pass for a path),
with no number a model could take as a value or as an answer. What such a model sends instead of a value
is turned away by `refusal`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from twinny_magics.tools import files, grep, listing
from twinny_magics.tools.base import ToolOutput
from twinny_magics.tools.context import ToolContext
from twinny_magics.tools.kernel.inspection import inspect_variable
from twinny_magics.tools.kernel.variables import kernel_variables
from twinny_magics.tools.tool import Param, Tool


async def _list_dir(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(listing.list_dir(ctx.conf, ctx.limits, args.get("path")))


async def _find_files(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(await _stoppable(listing.find_files, ctx.conf, ctx.limits, args["pattern"]))


async def _read_file(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    path, start, end = args["path"], args.get("start_line"), args.get("end_line")
    return ToolOutput(files.read_file(ctx.conf, ctx.limits, path, start, end))


async def _search(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(await asyncio.to_thread(ctx.search_text, args["words"]))


async def _grep(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(await _stoppable(grep.grep, ctx.conf, ctx.limits, args["pattern"], args.get("path")))


async def _stoppable(search: Callable[..., str], *args: Any) -> str:
    """A search on a worker thread: grep and find_files (which looks inside files when no name matches)
    release the GIL and are bounded in time, and a cancelled reply (the stop button) is not kept
    waiting; the event set on the way out ends the thread's search."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(search, *args, stop=stop)
    finally:
        stop.set()


async def _edit_file(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ctx.edit_file(args["path"], args["find"], args["replace"])


async def _create_file(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ctx.create_file(args["path"], args["content"])


async def _run_command(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return await ctx.run_command(args["command"])


async def _kernel_variables(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    # On a worker thread: each variable's repr is bounded in time, the listing's wait is not free.
    return ToolOutput(await asyncio.to_thread(kernel_variables, ctx.namespace, ctx.limits.variables))


async def _inspect_variable(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    # On a worker thread: an object's own repr or _repr_llm_ may take up to its time bound.
    return ToolOutput(await asyncio.to_thread(inspect_variable, ctx.namespace, args["name"]))


async def _cell_history(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ctx.cell_history()


async def _run_python(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return await ctx.run_python(args["code"])


async def _propose_cell(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return await ctx.propose_cell(args["code"], str(args.get("why") or ""))


_PATH_ALIASES = ("file_path", "filepath", "file", "filename", "dir", "directory", "folder")

COMMANDS_OFF = "run_command is off in this session (commands=off). Ask the user to run the command."
KERNEL_OFF = "run_python is off in this session (kernel=off). Propose the code as a cell with propose_cell."

# Each parameter's description is a label and the example of ToolSpec.example ("e.g. ..."): a model that
# copies the example copies a value of the right shape, and a copy of the label is refused. The integers
# have no example: any number written there is read back as the value.
TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "list_dir",
            "List a folder's files and subfolders, e.g. src; subfolders end with /. Without path: the "
            "top folder.",
            (Param("path", "string", "Folder to list, e.g. src", False, _PATH_ALIASES, "folder"),),
            {"path": "src"},
            run=_list_dir,
        ),
        Tool(
            "find_files",
            "Find files by name, e.g. **/*.py or config. Names only: to search inside files use grep.",
            (
                Param(
                    "pattern",
                    "string",
                    "Glob or part of a file name, e.g. **/*.py",
                    aliases=("glob", "name", "query"),
                    kind="glob",
                ),
            ),
            {"pattern": "**/*.py"},
            run=_find_files,
        ),
        Tool(
            "read_file",
            "Read a text file with line numbers, e.g. src/app.py (a .ipynb notebook as its cells). A long "
            "file comes in parts: start_line and end_line pick the lines.",
            (
                Param("path", "string", "File to read, e.g. src/app.py", aliases=_PATH_ALIASES, kind="file"),
                Param(
                    "start_line",
                    "integer",
                    "Line to start at; leave out to start at the top",
                    False,
                    kind="line",
                ),
                Param("end_line", "integer", "Line to stop at; leave out to read on", False, kind="line"),
            ),
            {"path": "src/app.py", "start_line": 1},
            run=_read_file,
        ),
        Tool(
            "search",
            "Search the workspace by words, e.g. merge dicts; answers the best-matching lines of files, "
            "ranked. For exact text or a regex use grep.",
            (
                Param(
                    "words",
                    "string",
                    "Words to look for, e.g. merge dicts",
                    aliases=("query", "text", "keywords", "q", "terms"),
                ),
            ),
            {"words": "merge dicts"},
            run=_search,
            needs="search",
        ),
        Tool(
            "grep",
            "Search inside files for a Python regex, e.g. def main; answers file:line: text. Without "
            "path: every file.",
            (
                Param(
                    "pattern",
                    "string",
                    "Regex to search for, e.g. def main",
                    aliases=("regex", "query"),
                    kind="regex",
                ),
                Param(
                    "path", "string", "File or folder to search in, e.g. src", False, _PATH_ALIASES, "path"
                ),
            ),
            {"pattern": "def main", "path": "src"},
            run=_grep,
        ),
        Tool(
            "edit_file",
            "Replace text in a file: find must occur exactly once (copy it from read_file, without the line "
            "numbers); it is replaced by replace.",
            (
                Param(
                    "path", "string", "File to change, e.g. src/app.py", aliases=_PATH_ALIASES, kind="file"
                ),
                Param(
                    "find",
                    "string",
                    "Exact text now in the file, e.g. DEBUG = False",
                    aliases=("old_str", "old_string", "search"),
                ),
                Param(
                    "replace",
                    "string",
                    "Text to put in its place, e.g. DEBUG = True",
                    aliases=("new_str", "new_string", "replacement"),
                ),
            ),
            {"path": "src/app.py", "find": "DEBUG = False", "replace": "DEBUG = True"},
            run=_edit_file,
            changes_workspace=True,
            approval="edits",
            asking_note=" The user reviews each edit before it is written.",
        ),
        Tool(
            "create_file",
            "Create a new file, e.g. notes/todo.md, with this content; to change an existing file use "
            "edit_file.",
            (
                Param(
                    "path",
                    "string",
                    "Path of the new file, e.g. notes/todo.md",
                    aliases=_PATH_ALIASES,
                    kind="new",
                ),
                Param(
                    "content",
                    "string",
                    "Full text of the new file, e.g. # To do",
                    aliases=("text", "contents", "file_text"),
                ),
            ),
            {"path": "notes/todo.md", "content": "# To do\n"},
            run=_create_file,
            changes_workspace=True,
            approval="edits",
            asking_note=" The user reviews it before it is written.",
        ),
        Tool(
            "run_command",
            "Run a shell command in the workspace folder, e.g. python -m pytest -q; answers its exit code "
            "and the end of its output.",
            (
                Param(
                    "command",
                    "string",
                    "Shell command, e.g. python -m pytest -q",
                    aliases=("cmd",),
                    kind="command",
                ),
            ),
            {"command": "python -m pytest -q"},
            run=_run_command,
            changes_workspace=True,
            approval="commands",
            asking_note=" The user approves each command first.",
            off_text=COMMANDS_OFF,
        ),
        Tool(
            "kernel_variables",
            "Show the notebook kernel's variables (name, type, shape or length, short value). Read-only.",
            (),
            {},
            run=_kernel_variables,
            needs="namespace",
        ),
        Tool(
            "inspect_variable",
            "Look closely at one kernel variable by name, e.g. df: a table's columns and first rows, an "
            "array's statistics, a list's first items, a function's signature. Read-only.",
            (Param("name", "string", "Variable's name, e.g. df", aliases=("variable", "var")),),
            {"name": "df"},
            run=_inspect_variable,
            needs="namespace",
        ),
        Tool(
            "cell_history",
            "Show the cells run in the notebook's kernel, newest last: each cell's code, value, printed "
            "output and error. Read-only.",
            (),
            {},
            run=_cell_history,
            needs="kernel",
            roomy=True,
        ),
        Tool(
            "run_python",
            "Run Python in the notebook's kernel like a new cell (names it defines stay); answers the "
            "last line's value, what it printed and any error.",
            (
                Param(
                    "code",
                    "string",
                    "Python to run, e.g. df.describe()",
                    aliases=("source", "python", "cell", "command"),
                ),
            ),
            {"code": "df.describe()"},
            run=_run_python,
            approval="kernel",
            asking_note=" The user approves each run first.",
            off_text=KERNEL_OFF,
            needs="kernel",
            roomy=True,
        ),
        Tool(
            "propose_cell",
            "Propose a new code cell for the user's notebook; it is not run. The user inserts it below the "
            "question or discards it.",
            (
                Param(
                    "code",
                    "string",
                    "Code of the new cell, e.g. df = df.dropna()",
                    aliases=("source", "python", "cell", "content"),
                ),
                Param("why", "string", "What it does, in a line, e.g. drop empty rows", False, ("reason",)),
            ),
            {"code": "df = df.dropna()", "why": "drop empty rows"},
            run=_propose_cell,
            approval="cells",
            needs="kernel",
            roomy=True,
        ),
    )
}
