"""The tools as the model is told about them, and the checking of the arguments it sends.

Definitions are OpenAI-style JSON schemas with properties in the order a call is written; descriptions
are short because the whole list travels in every native request of a small window. Arguments are
checked here, before any tool runs, so a wrong call comes back as a message with the expected call
shape and an example rather than as an exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from twinny_magics.errors import WorkspaceError


@dataclass(frozen=True)
class Param:
    """One argument of a tool."""

    name: str
    type: Literal["string", "integer"]
    description: str
    required: bool = True
    # Names small models often use instead (taken only when the real name is absent).
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name, description, arguments and an example call."""

    name: str
    description: str
    params: tuple[Param, ...]
    example: dict[str, Any]

    def definition(self, extra: str = "", **numbers: int) -> dict[str, Any]:
        """The OpenAI-style definition; ``numbers`` fill the description's limits, ``extra`` is appended."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description.format(**numbers) + extra,
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


_PATH_ALIASES = ("file_path", "filepath", "file", "filename", "dir", "directory", "folder")

TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "list_dir",
            "List a folder of the workspace (default: the root). Folders end with /.",
            (Param("path", "string", "Folder, relative to the workspace root.", False, _PATH_ALIASES),),
            {"path": "src"},
        ),
        ToolSpec(
            "find_files",
            "Find files by glob (e.g. **/*.py, tests/*.py) or by part of a name (e.g. config).",
            (Param("pattern", "string", "A glob or a name fragment.", aliases=("glob", "name", "query")),),
            {"pattern": "**/*.py"},
        ),
        ToolSpec(
            "read_file",
            "Read a text file with line numbers, {read_lines} lines a call; start_line/end_line pick "
            "the lines. A .ipynb notebook is shown as its cells.",
            (
                Param("path", "string", "File, relative to the workspace root.", aliases=_PATH_ALIASES),
                Param("start_line", "integer", "First line to show (from 1).", False),
                Param("end_line", "integer", "Last line to show.", False),
            ),
            {"path": "src/app.py", "start_line": 1},
        ),
        ToolSpec(
            "grep",
            "Search files for a Python regular expression; answers file:line: text.",
            (
                Param(
                    "pattern",
                    "string",
                    "Python regex, e.g. def main or (?i)todo.",
                    aliases=("regex", "query"),
                ),
                Param(
                    "path", "string", "File or folder to search (default: everything).", False, _PATH_ALIASES
                ),
            ),
            {"pattern": "def main", "path": "src"},
        ),
        ToolSpec(
            "edit_file",
            "Replace text in a file: find must occur exactly once (copy it from read_file, without the line "
            "numbers); it is replaced by replace.",
            (
                Param("path", "string", "File to change.", aliases=_PATH_ALIASES),
                Param(
                    "find",
                    "string",
                    "The exact text to replace.",
                    aliases=("old_str", "old_string", "search"),
                ),
                Param("replace", "string", "The new text.", aliases=("new_str", "new_string", "replacement")),
            ),
            {"path": "src/app.py", "find": "x = 1", "replace": "x = 2"},
        ),
        ToolSpec(
            "create_file",
            "Create a new file with this content (for an existing file use edit_file).",
            (
                Param("path", "string", "New file, relative to the workspace root.", aliases=_PATH_ALIASES),
                Param(
                    "content",
                    "string",
                    "The whole text of the file.",
                    aliases=("text", "contents", "file_text"),
                ),
            ),
            {"path": "notes/todo.md", "content": "# To do\n"},
        ),
        ToolSpec(
            "run_command",
            "Run a shell command in the workspace folder; answers its exit code and the end of its output.",
            (Param("command", "string", "The shell command line.", aliases=("cmd",)),),
            {"command": "python -m pytest -q"},
        ),
        ToolSpec(
            "kernel_variables",
            "Show the notebook kernel's variables (name, type, shape or length, short value). Read-only.",
            (),
            {},
        ),
    )
}


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
