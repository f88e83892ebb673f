"""The tools, each one object (`Tool`), and the checking of the arguments the model sends.

A tool is its definition (name, description, parameters, example call: what the model is told), its
implementation (``run``: the workspace and the checked arguments in, a `ToolOutput` out) and its flags:
whether it may change the workspace, which session setting asks the user first or turns it off
(``approval``), what it needs to be offered (``needs``) and whether a small window goes without it
(``roomy``). `TOOLS` holds them in the order they are offered; `Workspace` dispatches by looking a call up
there, and the loop learns what a call did from its output, never from its name. Adding a tool is adding
one `Tool` to `TOOLS`.

Definitions are OpenAI-style JSON schemas with properties in the order a call is written; descriptions
are short because the whole list travels in every native request of a small window. Arguments are
checked here, before any tool runs, so a wrong call comes back as a message with the expected call
shape and an example rather than as an exception.

Descriptions are written for models of half a billion parameters, which copy what they read into the
call: a parameter's description became a file's name and its content, "path/to/your/file.txt" was read,
"at most 150 lines" became ``start_line: 150``. So each description is a short label and one realistic
example (``src/app.py``, never a sentence that could pass for a path), with no number a model could take
as a value or as an answer; and `refusal` turns away what such a model sends instead of a value (a copy
of a description, a placeholder path, a sentence for a new file's name) with the real names nearby and
one call to copy, before the tool runs — under ``edits=apply`` too, where it would land on disk.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from twinny_magics.errors import WorkspaceError
from twinny_magics.tools import files, notebook, variables
from twinny_magics.tools.base import ToolLimits, ToolOutput, call_text, cut_line
from twinny_magics.tools.context import ToolContext
from twinny_magics.tools.files import HINT_SECONDS, PATTERN_CHARS, files_matching
from twinny_magics.tools.paths import Confinement, Target, shown

# What a parameter's value is, for the checks of `refusal`: a path that must exist (file, folder or
# either), a new file's path, a glob, a regex, text to write or find, a command, a line number.
Kind = Literal["file", "folder", "path", "new", "glob", "regex", "text", "command", "line"]


@dataclass(frozen=True)
class Param:
    """One argument of a tool."""

    name: str
    type: Literal["string", "integer"]
    description: str
    required: bool = True
    # Names small models often use instead (taken only when the real name is absent).
    aliases: tuple[str, ...] = ()
    kind: Kind = "text"


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name, description, arguments and an example call."""

    name: str
    description: str
    params: tuple[Param, ...]
    example: dict[str, Any]

    def definition(self, extra: str = "") -> dict[str, Any]:
        """The OpenAI-style definition; ``extra`` is appended to the description."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description + extra,
                "parameters": {
                    "type": "object",
                    "properties": {
                        p.name: {"type": p.type, "description": p.description} for p in self.params
                    },
                    "required": [p.name for p in self.params if p.required],
                },
            },
        }

    def shape(self) -> str:
        """The call shape as the text protocol writes it, e.g. ``read_file {path, start_line?}``."""
        names = ", ".join(p.name + ("" if p.required else "?") for p in self.params)
        return f"{self.name} {{{names}}}" + f", e.g. {json.dumps(self.example)}"


#: The session setting that asks the user before a tool goes ahead (or turns it off): ``edits``
#: (review/apply), ``commands`` (ask/allow/off), ``kernel`` (ask/allow/off), ``cells`` (review/insert).
Approval = Literal["edits", "commands", "kernel", "cells"]
#: What a tool needs to be offered: the kernel's namespace, the notebook kernel, the ranked search.
Needs = Literal["namespace", "kernel", "search"]
#: A tool's implementation: what it may ask of the toolset (`ToolContext`) and the checked arguments in,
#: the output out.
Run = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolOutput]]


@dataclass(frozen=True, kw_only=True)
class Tool(ToolSpec):
    """One tool: its definition (the `ToolSpec` fields), its implementation and its flags."""

    run: Run
    #: Whether its success may change what other tools return (earlier calls may then run again).
    changes_workspace: bool = False
    #: The setting that asks the user first, and turns it off where it can be ``off``.
    approval: Approval | None = None
    #: Appended to the description while that setting asks (``review``/``ask``).
    asking_note: str = ""
    #: The answer to a call while that setting is ``off`` (the tool is not offered then).
    off_text: str = ""
    #: Offered only with this.
    needs: Needs | None = None
    #: Left out in a small window (see ``workspace.ROOMY_WINDOW``).
    roomy: bool = False

    @property
    def edits(self) -> bool:
        """Whether it makes or proposes an edit of a file (held for review under ``edits=review``)."""
        return self.approval == "edits"


async def _list_dir(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(files.list_dir(ctx.conf, ctx.limits, args.get("path")))


async def _find_files(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(await _stoppable(files.find_files, ctx.conf, ctx.limits, args["pattern"]))


async def _read_file(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    path, start, end = args["path"], args.get("start_line"), args.get("end_line")
    return ToolOutput(files.read_file(ctx.conf, ctx.limits, path, start, end))


async def _search(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(await asyncio.to_thread(ctx.search_text, args["words"]))


async def _grep(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(await _stoppable(files.grep, ctx.conf, ctx.limits, args["pattern"], args.get("path")))


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
    return ToolOutput(await asyncio.to_thread(notebook.kernel_variables, ctx.namespace, ctx.limits.variables))


async def _inspect_variable(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    # On a worker thread: an object's own repr or _repr_llm_ may take up to its time bound.
    return ToolOutput(await asyncio.to_thread(variables.inspect_variable, ctx.namespace, args["name"]))


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


def declared_effects(name: str) -> tuple[bool, bool]:
    """Whether a call of the tool ``name`` may change the workspace, and whether it edits a file (for a
    toolset whose outputs do not say: the built-in tool of that name's flags; no such tool, neither)."""
    tool = TOOLS.get(name)
    return (tool.changes_workspace, tool.edits) if tool is not None else (False, False)


def bind(spec: ToolSpec, arguments: object) -> dict[str, Any]:
    """The arguments checked against ``spec`` (numbers in strings converted), or a `WorkspaceError`.

    Unknown extra arguments are ignored: small models add them, and refusing the call would cost a step
    for nothing.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise WorkspaceError(f"The arguments of {spec.name} must be an object. Call it as {spec.shape()}.")
    bound: dict[str, Any] = {}
    for param in spec.params:
        key = next((k for k in (param.name, *param.aliases) if k in arguments), None)
        value = arguments.get(key) if key is not None else None
        if value is None:
            if param.required:
                unknown = [k for k in arguments if k not in {p.name for p in spec.params}]
                extra = f" (it got {', '.join(map(str, unknown))} instead)" if unknown else ""
                raise WorkspaceError(f"{spec.name} needs {param.name}{extra}. Call it as {spec.shape()}.")
            continue
        bound[param.name] = _convert(spec, param, value)
    return bound


def _convert(spec: ToolSpec, param: Param, value: object) -> Any:
    """One argument converted to its schema type, or why it cannot be."""
    if param.type == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
    elif isinstance(value, str):
        return value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    got = json.dumps(value) if isinstance(value, str | int | float | bool) else type(value).__name__
    kind = "an integer" if param.type == "integer" else "a string"
    raise WorkspaceError(f"{spec.name}: {param.name} must be {kind} (got {got}). Call it as {spec.shape()}.")


# --- values that are not values -------------------------------------------------------------------

# What a value of each kind is called in a refusal, and what to give instead when no real name fits.
_NOUN: dict[Kind, str] = {
    "file": "file",
    "folder": "folder",
    "path": "file or folder",
    "new": "file name",
    "glob": "glob",
    "regex": "pattern",
    "text": "text",
    "command": "command",
    "line": "line",
}
_INSTEAD: dict[str, str] = {
    "new": "Give a short path with an extension",
    "glob": "Search for a name or a glob",
    "regex": "Search for a word from the question",
    "command": "Give the command itself",
    "find": "Copy the exact text from the file, which this shows",
    "replace": "Write the new text itself; this shows the file",
    "content": "Write the file's own text in content",
    "code": "Write the Python code itself",
}
# What stands for a text in a call to copy: to be filled in, and refused as content if sent as it is.
_ELIDED = "..."
_SHOWN_CHARS = 200
_PATHS: frozenset[Kind] = frozenset({"file", "folder", "path", "new"})

# An example in a description ("e.g. src/app.py"), which is a value and may be copied as one.
_EXAMPLE = re.compile(r"(?i)\b(?:e\.g\.|for example|such as)\s.*?(?=[;)]|\.\s|\.?$)")
_CLAUSE = re.compile(r"[.;:,()](?:\s|$)|\s[-–—]\s")
_WORD = re.compile(r"[a-z0-9]+")

# Placeholders that are never a real path: path/to/…, your_…, <path>, {file}, ${FILE}, …, FILE_PATH,
# file.ext, and a bare name of the argument (path, filename, folder).
_PATH_TO = re.compile(r"(?i)(?:^|[/\\])path[/\\]to(?:[/\\]|$)|(?:^|[/\\])path[_-]to[_-]")
_YOUR = re.compile(
    r"(?i)(?:^|[^a-z])your(?:$|[^a-z]|file|folder|dir|module|script|project|repo|path|name|code)"
)
_SLOT = re.compile(r"<[^<>]*>|\{\w*\}|\$\{\w+\}|\$[A-Z_]{3,}")
_SHOUTED = re.compile(
    r"(?:[A-Z]+_)*(?:PATH|FILE|FILENAME|FILEPATH|DIR|DIRECTORY|FOLDER)(?:_[A-Z]+)*(?:\.\w+)?"
)
_ARGUMENT_NAMES = frozenset(
    {
        "path", "file", "filename", "file_name", "filepath", "file_path", "folder", "folder_name", "dir",
        "dirname", "dir_name", "directory", "directory_name", "some/path", "relative/path", "path/here",
        "file/path", "the/path", "path/file",
    }
)  # fmt: skip
# A pattern, a command or a text is a placeholder only as a whole slot (<pattern>, your_regex): the
# same words inside a real regex are a real search, and <name> or <string> are real XML to grep for.
_SLOT_WORDS: dict[str, str] = {
    "regex": r"pattern|regexp?|search[ _-]?term|keyword|class[ _-]?name|function[ _-]?name|your[ _-]?\w+",
    "command": r"[\w -]+",
    "text": r"content|text|new[ _-]?text|old[ _-]?text|code|file[ _-]?content|replacement|your[ _-]?\w+",
}
_YOUR_SLOT = re.compile(
    r"(?i)your[_-]?(?:pattern|regexp?|query|search[_-]?term|keyword|command|cmd|content|text)"
)
# Names that stand for "some file" when no such file exists (a new file may well be called example.py).
_STAND_INS = frozenset(
    {
        "file", "filename", "file_name", "myfile", "my_file", "example", "sample", "foo", "bar", "baz",
        "test_file", "some_file", "somefile", "new_file", "newfile", "yourfile", "module_name",
        "script_name", "my_script", "my_module",
    }
)  # fmt: skip
_STAND_IN_FOLDERS = frozenset(
    {"folder", "dir", "directory", "subfolder", "subdir", "some", "somewhere", "relative", "absolute", "home"}
)
_EXTENSION = re.compile(r"\.[A-Za-z0-9_+-]{1,10}$")


def refusal(
    spec: ToolSpec,
    arguments: dict[str, Any],
    described: Iterable[str],
    conf: Confinement,
    limits: ToolLimits,
) -> str | None:
    """Why a call's bound ``arguments`` are not values, as one line and a call to copy; None if fine.

    ``described`` is every description the model was shown (a tuned one included). A path that exists is
    never refused; a stand-in name (``example.py``) only when it does not exist, and never for a new
    file, which may well be called that.
    """
    texts = tuple(described)
    found: dict[str, str] = {}
    for param in spec.params:
        value = arguments.get(param.name)
        if not isinstance(value, str) or param.kind == "line":
            continue
        why = _not_a_value(spec, param, value, texts)
        if why is None:
            continue
        strong, reason = why
        if param.kind in ("file", "folder", "path"):
            exists = _exists(conf, value)
            if exists or (exists is None and not strong):
                continue  # a real path, or one the tool's own checks explain better (hidden, outside)
        found[param.name] = reason
    if not found:
        return None
    first = next(p for p in spec.params if p.name in found)
    names = []
    if first.kind in _PATHS:
        names = _real_names(conf, limits, arguments[first.name], first.kind, arguments.get("find"))
    tool, call = spec.name, _fixed_call(spec, arguments, found, names)
    if first.name in ("find", "replace") and "path" not in found:
        # The text to find or to write comes from the file: the call to copy is the read that shows it.
        tool, call = "read_file", {"path": arguments["path"]}
    given = arguments[first.name].strip()
    # An absolute path is never quoted back (see paths.shown), even one the model made up.
    absolute = shown(given) == shown("/")
    quoted = "(an absolute path)" if absolute else repr(cut_line(given, 60))
    if names:
        plural = {"file": "files", "folder": "folders"}.get(first.kind, "names")
        instead = f"Real {plural} here: {', '.join(names)}"
    else:
        instead = _INSTEAD.get(first.name) or _INSTEAD.get(first.kind) or f"Give a real {_NOUN[first.kind]}"
        if first.kind != "text":
            instead += f", like {spec.example[first.name]}"
    said = f"{spec.name}: {first.name} {quoted} is {found[first.name]}"
    return f"{said}. {instead}: {call_text(tool, call)}"


def _fixed_call(
    spec: ToolSpec, arguments: dict[str, Any], found: dict[str, str], names: list[str]
) -> dict[str, Any]:
    """The call with its refused arguments put right: a path by the nearest real name (or the example),
    a text by ``...`` to fill in (refused if sent as it is), an optional one left out (grep then
    searches everything, list_dir lists the top folder); a long text the model gave is elided too."""
    call: dict[str, Any] = {}
    for param in spec.params:
        given = arguments.get(param.name)
        if param.name not in found and given is not None:
            call[param.name] = _ELIDED if isinstance(given, str) and len(given) > _SHOWN_CHARS else given
        elif not param.required:
            continue
        elif param.kind in _PATHS and names and param.name == next(iter(found)):
            call[param.name] = names[0].rstrip("/")
        elif param.kind == "text":
            call[param.name] = _ELIDED
        else:
            call[param.name] = spec.example[param.name]
    return call


def _not_a_value(
    spec: ToolSpec, param: Param, value: str, described: Sequence[str]
) -> tuple[bool, str] | None:
    """Why ``value`` is not a value of ``param`` and whether that is sure (it holds for any path), or None.

    Sure: a copy of a description, a placeholder, a sentence. Not sure: a stand-in name (``example.py``,
    the tool's own example), which only a path that does not exist makes a placeholder.
    """
    text = value.strip()
    kind = param.kind
    noun = _NOUN[kind]
    placeholder = (True, "a placeholder" + ("" if kind == "text" else f", not a real {noun}"))
    if _copied(text, described, loose=kind in ("regex", "glob", "text")):
        return True, "copied from the tool's description"
    if kind in _PATHS or kind == "glob":
        if _PATH_TO.search(text) or _YOUR.search(text) or _SLOT.search(text) or "..." in text or "…" in text:
            return placeholder
    elif kind in _SLOT_WORDS:
        words = _SLOT_WORDS[kind]
        if _YOUR_SLOT.fullmatch(text) or re.fullmatch(rf"(?i)[<{{\[]\s*(?:{words})\s*[>}}\]]", text):
            return placeholder
        # "..." is real text to find or to put in (a stub's body), but never a whole file or a command.
        if text in (_ELIDED, "…") and param.name in ("content", "command"):
            return placeholder
    if kind not in _PATHS:
        return None
    if (
        _SHOUTED.fullmatch(text)
        or text.strip("/").lower() in _ARGUMENT_NAMES
        or ("." in text and text.rsplit(".", 1)[-1].lower() in ("ext", "extension"))
    ):
        return placeholder
    if _prose(text, file=kind in ("file", "new")):
        return True, f"a sentence, not a {noun}"
    if kind == "new":
        return None
    parts = text.strip("/").lower().split("/")
    if parts[-1].split(".", 1)[0] in _STAND_INS or (len(parts) > 1 and parts[0] in _STAND_IN_FOLDERS):
        return False, f"a placeholder, not a real {noun}"
    if text == spec.example.get(param.name):
        return False, f"the example from the tool's description, and there is no such {noun} here"
    return None


def _copied(value: str, described: Sequence[str], *, loose: bool) -> bool:
    """Whether ``value`` is a description, a clause of one, its start, or a run of its words.

    Compared by words (case and punctuation aside). The description's examples are values, so a run of
    words counts only outside them: ``src/app.py`` is the example of "File to read, e.g. src/app.py".
    A search or a text to write (``loose``) may well be a few of the same words ("read-only", "shell
    command", "a text file"), so for them a clause must have three words and a start or a run four.
    """
    words = _WORD.findall(value.lower())
    if len(words) < 2 or not re.search(r"\s", value.strip()):
        return False
    least = 3 + loose
    said = " ".join(words)
    for text in described:
        whole = " ".join(_WORD.findall(text.lower()))
        prose = _EXAMPLE.sub(" , ", text)
        clauses = [" ".join(_WORD.findall(c.lower())) for c in _CLAUSE.split(prose)]
        clauses = [c for c in clauses if len(c.split()) >= 2 + loose]
        bare = " ".join(_WORD.findall(prose.lower()))
        if said == whole or said in clauses:
            return True
        if len(words) >= least and (
            f"{whole} ".startswith(f"{said} ")
            or f" {bare} ".find(f" {said} ") >= 0
            or any(len(c.split()) >= 3 and f"{said} ".startswith(f"{c} ") for c in clauses)
        ):
            return True
    return False


def _prose(text: str, *, file: bool) -> bool:
    """Whether a path reads as a sentence: spaces and a full stop or comma, or (for a file) several words
    and no extension."""
    if not re.search(r"\s", text):
        return False
    if re.search(r"[.,;:!?](?:\s|$)", text):
        return True
    last = text.rstrip("/").rsplit("/", 1)[-1]
    return file and len(last.split()) >= 2 and _EXTENSION.search(last) is None


def _exists(conf: Confinement, value: str) -> bool | None:
    """Whether a path exists in the workspace; None when it cannot be used at all (the tool will say why)."""
    try:
        return conf.resolve(value).real.exists()
    except WorkspaceError:
        return None


def _real_names(
    conf: Confinement, limits: ToolLimits, value: str, kind: Kind, find: object = None
) -> list[str]:
    """Up to three existing names to offer instead of ``value``: for an edit, the files that hold its
    ``find`` text; the closest names; then the shallowest of the same extension, then any of the right
    kind (a folder for list_dir, a file for read_file)."""
    if kind == "new":
        return []

    def fits(name: str) -> bool:
        return kind == "path" or name.endswith("/") == (kind == "folder")

    names: list[str] = []
    if isinstance(find, str) and find.strip() and len(find) <= PATTERN_CHARS:
        root = Target(conf.root, ".", conf.root)
        names = files_matching(
            conf, limits, root, re.escape(find), stop=None, seconds=HINT_SECONDS, max_files=3
        ).files
    names += [n for n in conf.suggestions(value, limits.scan_entries) if fits(n) and n not in names]
    if len(names) < 3:
        walk = conf.walk(Target(conf.root, ".", conf.root), limits.scan_entries)
        seen = [e.rel + ("/" if e.is_dir else "") for e in walk]
        suffix = _EXTENSION.search(value.strip())
        wanted = suffix.group(0).lower() if suffix else ""
        ranked = sorted(
            (n for n in seen if fits(n) and n not in names),
            key=lambda n: (not (wanted and n.lower().endswith(wanted)), n.count("/") - n.endswith("/"), n),
        )
        names += ranked[: 3 - len(names)]
    return names[:3]
