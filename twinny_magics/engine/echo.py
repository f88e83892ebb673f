"""An answer that gives back the file the question named, when the question asks for another one.

"Which configuration file does notebooks/team.ipynb load?", "notebooks/team.ipynb calls merge_configs:
which file defines it?": a small model answered with ``notebooks/team.ipynb``, the file the question is
about, while the file it loads or imports from stood on a line of the evidence. Such an answer goes back
once with what the question asks for — unless the named file itself defines a name the question gives
("Which file defines main? See main.py."). The reading is pure (`echoed`); `given_back` reads the named
file through the toolset, as a citation's check does.
"""

from __future__ import annotations

import asyncio
import re

from twinny_magics import naming
from twinny_magics.errors import WorkspaceError

from .citations import ReadsCitedLines

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


async def given_back(answer: str, question: str, tools: object) -> str | None:
    """`echoed`, when the named file does not define a name the question gives (there the named file is
    the answer); None too when the toolset cannot read it."""
    path = echoed(answer, question)
    if path is None or not isinstance(tools, ReadsCitedLines):
        return None
    names = [chain[-1] for chain in naming.named_in(question).names]
    names += [n for n in _DEFINES_NAME.findall(question) if n.lower() not in _NOT_A_NAME]
    if names:
        try:
            numbered = await asyncio.to_thread(tools.cited_lines, path, 1, ECHO_FILE_LINES)
        except WorkspaceError:
            return None
        lines = [line for _, line in numbered]
        if any(naming.defining_line(lines, name) is not None for name in names):
            return None
    return path


def _asking(question: str) -> list[str]:
    """The sentences of ``question`` that ask (end in a question mark, or the last one)."""
    sentences = [s for s in re.split(r"(?<=[.?!])\s+", question.strip()) if s]
    asking = [s for s in sentences if s.endswith("?")]
    return asking or sentences[-1:]


def correction(path: str) -> str:
    """What the model is told when its answer gave back the file the question named."""
    return (
        f"Your answer gives {path}, the file the question itself names; the question asks for another file "
        f"or path: the one {path} loads, reads, imports from, points to, or where what it uses is defined. "
        f"Find it in {path}'s lines (a path it sets, a module it imports; the evidence shows them) and "
        "follow it, then answer with that file's path."
    )
