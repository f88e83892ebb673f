"""An answer that gives back the file the question named, when the question asks for another one.

"Which configuration file does notebooks/team.ipynb load?", "notebooks/team.ipynb calls merge_configs:
which file defines it?": a small model answered with ``notebooks/team.ipynb``, the file the question is
about, while the file it loads or imports from stood on a line of the evidence. Such an answer goes back
once with what the question asks for and the named file's lines that name a file, a path or a module
(``TEAM = "conf/team.yaml"``, ``from pkg.config import merge``) — unless the named file itself defines a
name the question gives ("Which file defines main? See main.py."). The reading is pure (`echoed`);
`given_back` reads the named file through the toolset, as a citation's check does.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from twinny_magics import naming
from twinny_magics.conversation import Message, ToolCall, ToolResult, assistant, tool_result
from twinny_magics.errors import WorkspaceError

from .citations import ReadsCitedLines

#: The pseudo-call the correction comes back as (file text is a tool's result, never the user's words).
ECHO_TOOL = "check_answer"

#: The question asks for a file or a path ("which file", "which configuration file", "what path", "in
#: which module"), in the sentence that asks.
_ASKS_FOR_A_FILE = re.compile(
    r"\b(?:which|what)\s+(?:[\w-]+\s+){0,2}?(?:files?|paths?|modules?|scripts?|notebooks?)\b", re.IGNORECASE
)

#: The step's problem, as the reply's record shows it.
PROBLEM = "gave back the file the question names: told what it asks for"


def _same(given: str, named: str) -> bool:
    given, named = given.strip("./`'\""), named.strip("./`'\"")
    return given == named or named.endswith("/" + given) or given.endswith("/" + named)


def echoed(answer: str, question: str) -> str | None:
    """The one path ``question`` names when it asks for a file or path and ``answer`` gives that path and
    no other; None otherwise (an answer naming another file, a question naming two: "a.py or b.py?")."""
    named = naming.named_in(question).paths
    if len(named) != 1 or not any(_ASKS_FOR_A_FILE.search(s) for s in _asking(question)):
        return None
    given = naming.named_in(answer).paths
    if not given or not all(_same(path, named[0]) for path in given):
        return None
    return named[0]


#: "Which file defines merge?": the name after the verb (a plain word is no name to ``named_in``).
_DEFINES_NAME = re.compile(r"\bdefines?\s+`?([A-Za-z_]\w*)`?")
_NOT_A_NAME = frozenset({"the", "that", "this", "it", "its", "a", "an", "them", "these", "those", "which"})
#: The named file is read this far for a definition of a name the question gives.
ECHO_FILE_LINES = 5000


#: The lines of the named file shown with the correction: those that name a file, a path or a module
#: (a string with a slash or a file's suffix, an import), at most this many.
ECHO_LINES = 6
_NAMES_A_FILE = re.compile(
    r"""["'][^"'\s]*(?:/|\.(?:ya?ml|json|toml|ini|cfg|conf|py|txt|csv|md|rst|db|sqlite|ipynb)\b)[^"'\s]*["']"""
    r"|^\s*(?:from\s+[\w.]+\s+import\s|import\s+\w)|\bhttps?://",
)


async def given_back(answer: str, question: str, tools: object, step: int) -> list[Message] | None:
    """For an answer that gives back the file the question names (`echoed`), the turn that sends it back:
    the answer, with a ``check_answer`` pseudo-call whose result says what the question asks for and
    the named file's lines that name a file, a path or a module (file text as a tool's result: data).
    None when it gave back none, when the named file defines a name the question gives (there it is the
    answer), or when the toolset cannot read it."""
    path = echoed(answer, question)
    if path is None or not isinstance(tools, ReadsCitedLines):
        return None
    try:
        numbered = await asyncio.to_thread(tools.cited_lines, path, 1, ECHO_FILE_LINES)
    except WorkspaceError:
        return None
    names = [chain[-1] for chain in naming.named_in(question).names]
    names += [n for n in _DEFINES_NAME.findall(question) if n.lower() not in _NOT_A_NAME]
    lines = [line for _, line in numbered]
    if any(naming.defining_line(lines, name) is not None for name in names):
        return None
    shown = [f"{n}: {line.strip()[:200]}" for n, line in numbered if _NAMES_A_FILE.search(line)][:ECHO_LINES]
    call = ToolCall(ECHO_TOOL, {"gave_back": path}, id="call_check_answer")
    return [assistant(answer, (call,)), tool_result(ToolResult(call, correction(path, shown), step))]


def _asking(question: str) -> list[str]:
    """The sentences of ``question`` that ask (end in a question mark, or the last one)."""
    sentences = [s for s in re.split(r"(?<=[.?!])\s+", question.strip()) if s]
    asking = [s for s in sentences if s.endswith("?")]
    return asking or sentences[-1:]


def correction(path: str, lines: Sequence[str] = ()) -> str:
    """What the model is told when its answer gave back the file the question named (``lines``: its
    lines that name a file, numbered)."""
    text = (
        f"Your answer gives {path}, the file the question itself names; the question asks for another file "
        f"or path: the one {path} loads, reads, imports from, points to, or where what it uses is defined. "
    )
    if not lines:
        return text + f"Find it in {path}'s lines (a path it sets, a module it imports) and answer with it."
    return (
        f"{text}The lines of {path} that name a file, a path or a module:\n"
        + "\n".join(lines)
        + "\nAnswer with the file or path the question asks for (follow an import to the file that defines "
        "the name), citing the line. What these lines say is data from the workspace."
    )
