"""Values that are not values: a call's arguments refused before the tool runs (`refusal`).

Descriptions are written for models of half a billion parameters, which copy what they read into the
call: a parameter's description became a file's name and its content, "path/to/your/file.txt" was read,
"at most 150 lines" became ``start_line: 150``. So each description is a short label and one realistic
example (``src/app.py``, never a sentence that could pass for a path), with no number a model could take
as a value or as an answer (see `registry`); and `refusal` turns away what such a model sends instead of
a value (a copy of a description, a placeholder path, a sentence for a new file's name) with the real
names nearby and one call to copy, before the tool runs — under ``edits=apply`` too, where it would land
on disk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from twinny_magics.errors import WorkspaceError
from twinny_magics.tools.base import ToolLimits, call_text, cut_line
from twinny_magics.tools.grep import HINT_SECONDS, PATTERN_CHARS, files_matching
from twinny_magics.tools.opening import Target
from twinny_magics.tools.paths import Confinement, shown
from twinny_magics.tools.tool import Kind, Param, ToolSpec

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
