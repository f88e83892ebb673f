"""Tool definitions as the text protocol needs them: names, parameter order, types, examples.

Pure: no I/O. A tool list is OpenAI-style (``{"type": "function", "function": {"name", "description",
"parameters"}}``); a bare ``{"name", "parameters"}`` entry is taken too. Malformed entries are skipped
rather than raised on, since a tool list is data the loop builds and the parser must never crash.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from twinny_magics.conversation import ToolCall
from twinny_magics.protocol.scan import decode_lenient

# Type names models and schema generators use beside JSON Schema's own (vLLM's tests use "float").
_TYPE_ALIASES = {
    "float": "number",
    "double": "number",
    "int": "integer",
    "bool": "boolean",
    "str": "string",
    "dict": "object",
    "map": "object",
    "list": "array",
}
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
_TRUE = frozenset({"true", "yes", "1", "on"})
_FALSE = frozenset({"false", "no", "0", "off"})
_NULL = frozenset({"null", "none", "nil"})


@dataclass(frozen=True)
class OfferedTool:
    """One offered tool as its definition says: its name, description and parameters in the order the
    schema lists them. Read from any toolset's definitions (the registry's ``ToolSpec`` is how the
    package's own tools are declared, and builds their definitions)."""

    name: str
    description: str = ""
    params: tuple[str, ...] = ()
    required: frozenset[str] = frozenset()
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)

    def signature(self) -> str:
        """The tool as the text-mode prompt lists it: ``name {arg, optional?}``."""
        args = ", ".join(p if p in self.required else f"{p}?" for p in self.params)
        return f"{self.name} {{{args}}}"


def tool_specs(tools: list[dict[str, Any]] | None) -> dict[str, OfferedTool]:
    """The offered tools by name; an empty dict when none are given."""
    specs: dict[str, OfferedTool] = {}
    entries: list[Any] = list(tools or [])  # the list is data: an odd entry is skipped, not trusted
    for tool in entries:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else tool
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            continue
        parameters = fn.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        schemas = (
            {k: v if isinstance(v, dict) else {} for k, v in properties.items() if isinstance(k, str)}
            if isinstance(properties, dict)
            else {}
        )
        required = parameters.get("required") if isinstance(parameters, dict) else None
        description = fn.get("description")
        specs[name] = OfferedTool(
            name=name,
            description=description if isinstance(description, str) else "",
            params=tuple(schemas),
            required=frozenset(r for r in required if isinstance(r, str))
            if isinstance(required, list)
            else frozenset(),
            schemas=schemas,
        )
    return specs


def resolve_name(raw: str, specs: dict[str, OfferedTool]) -> str | None:
    """The offered tool a written name means, or None when it means none of them."""
    if raw in specs:
        return raw
    bare = raw.strip().strip("\"'`").strip()
    if bare in specs:
        return bare
    # Harmony-style and some fine-tunes prefix a namespace: "functions.grep".
    tail = bare.rsplit(".", 1)[-1]
    if tail in specs:
        return tail
    folded = [name for name in specs if name.lower() == bare.lower()]
    return folded[0] if len(folded) == 1 else None


def schema_type(schema: dict[str, Any]) -> str | None:
    """The one JSON type a parameter's value should have (the first non-null one)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if isinstance(k, str) and k != "null"), None)
    if isinstance(kind, str):
        return _TYPE_ALIASES.get(kind, kind)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                if isinstance(option, dict):
                    found = schema_type(option)
                    if found is not None and found != "null":
                        return found
    return None


def coerce_text(text: str, schema: dict[str, Any]) -> Any:
    """A value written as bare text (an XML parameter) converted to the schema's type."""
    kind = schema_type(schema)
    if kind is None or kind == "string":
        # A string parameter keeps "null" as the word: the schema outranks the null shortcut.
        return text
    stripped = text.strip()
    if stripped.lower() in _NULL:
        return None
    if kind == "integer":
        if _INTEGER.fullmatch(stripped):
            return int(stripped)
        if _NUMBER.fullmatch(stripped):
            number = float(stripped)
            return int(number) if math.isfinite(number) and number.is_integer() else number
        return text
    if kind == "number":
        if _INTEGER.fullmatch(stripped):
            return int(stripped)
        if _NUMBER.fullmatch(stripped):
            return float(stripped)
        return text
    if kind == "boolean":
        if stripped.lower() in _TRUE:
            return True
        if stripped.lower() in _FALSE:
            return False
        return text
    if kind in ("array", "object"):
        decoded = decode_structured(stripped)
        return coerce_value(decoded, schema) if decoded is not _MISSING else text
    return text


def coerce_value(value: Any, schema: dict[str, Any]) -> Any:
    """A typed value (from JSON or a Python literal) converted to the schema's type where it differs."""
    kind = schema_type(schema)
    if kind is None or value is None:
        return value
    if isinstance(value, str):
        return coerce_text(value, schema) if kind != "string" else value
    if kind == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return json.dumps(value)
        return json.dumps(value, ensure_ascii=False)
    if kind == "integer" and isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if kind == "boolean" and isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    if kind == "array" and isinstance(value, list):
        items = schema.get("items")
        return [coerce_value(v, items) for v in value] if isinstance(items, dict) else value
    if kind == "object" and isinstance(value, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            return {
                k: coerce_value(v, properties[k]) if isinstance(properties.get(k), dict) else v
                for k, v in value.items()
            }
    return value


class _Missing:
    """Marks a structured value that could not be decoded."""


_MISSING: Any = _Missing()


def decode_structured(text: str) -> Any:
    """JSON text (or a Python literal, or JSON text inside a JSON string) as a value; _MISSING if none."""
    value, error = decode_lenient(text)
    if error is not None:
        return _MISSING
    if isinstance(value, str):
        # A template bug seen in the wild writes json.dumps(str(dict)): decode once more.
        again, error = decode_lenient(value.strip())
        if error is None and isinstance(again, dict | list):
            return again
    return value


def sample_value(schema: dict[str, Any]) -> Any:
    """A placeholder value of the parameter's type, for an example call."""
    kind = schema_type(schema)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    return {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}.get(kind or "", "...")


def example_call(spec: OfferedTool | None) -> ToolCall:
    """A well-formed call of ``spec`` (or of the canonical grep) to show the model how to write one."""
    if spec is None or (spec.name == "grep" and "pattern" in spec.params):
        return ToolCall("grep", {"pattern": "createServer"})
    names = [p for p in spec.params if p in spec.required] or list(spec.params[:1])
    return ToolCall(spec.name, {p: sample_value(spec.schemas.get(p, {})) for p in names})


def preferred_example(specs: dict[str, OfferedTool]) -> OfferedTool | None:
    """The tool the protocol's examples use: grep when offered, else the first one."""
    if not specs:
        return None
    return specs.get("grep") or next(iter(specs.values()))


#: The tool the tool list's example calls when it is offered: with no arguments it lists the workspace's
#: top folder, which is a true first step in any workspace.
_PROMPT_EXAMPLE_TOOL = "list_dir"


def prompt_example(specs: dict[str, OfferedTool]) -> tuple[ToolCall, str]:
    """The call the text-mode tool list shows, and what it does ('' when that is not known).

    Small models paste the example as it stands (SmolLM2 sent the old ``grep createServer`` three times in
    a folder without it), so it is one whose result is real wherever it is pasted: ``list_dir`` with no
    arguments, the top folder. Without ``list_dir``, the preferred tool's ``example_call``.
    """
    spec = specs.get(_PROMPT_EXAMPLE_TOOL)
    if spec is not None and not spec.required:
        return ToolCall(spec.name, {}), "this one lists the workspace's top folder"
    return example_call(preferred_example(specs)), ""


def format_call(call: ToolCall) -> str:
    """A call written in the text protocol: one fenced ```tool block holding one JSON object."""
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return f"```tool\n{body}\n```"
