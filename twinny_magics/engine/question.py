"""The question of one reply, read once: what kind of question it is and the words worth searching for.

Pure. A reply asks several things of its question (whether to give a head start, whether an answer made
without looking is a guess, whether a reply that edits nothing has done what was asked, which word a
problem message's example call should search for); each reads this one value, made when the reply starts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from twinny_magics.notes import asks_for_a_change, needs_the_workspace
from twinny_magics.protocol.schema import example_call, format_call
from twinny_magics.retrieval import query_terms

#: The protocol's canonical example call, and that call as a problem message shows it for the model to copy.
_CANONICAL = example_call(None)
_CANONICAL_EXAMPLE = format_call(_CANONICAL)


@dataclass(frozen=True)
class Question:
    """A question as the reply reads it."""

    text: str
    #: Likely about the workspace (not small talk): an answer before any tool ran is a guess.
    about_workspace: bool
    #: Asks for a change to the files, not for an answer about them.
    asks_change: bool
    #: The words worth searching for, most specific first (none when not about the workspace).
    terms: tuple[str, ...]

    @classmethod
    def read(cls, text: str) -> Question:
        """``text`` read once."""
        about = needs_the_workspace(text)
        return cls(text, about, asks_for_a_change(text), tuple(query_terms(text)) if about else ())

    def aim(self, problem: str, fallback: str = "") -> str:
        """``problem`` with its canonical example call aimed at this question's own word instead: a small
        model copies the example as it is, and a search for the example's word in a project without it
        helps nobody. With no word worth a search, the example becomes ``fallback`` (a call whose result
        is real anywhere, such as listing the top folder) when one is given."""
        if _CANONICAL_EXAMPLE not in problem:
            return problem
        if name := self._name_called(problem):
            pattern = rf"(?:def|class) {name}\b"
            aimed = replace(_CANONICAL, arguments=dict.fromkeys(_CANONICAL.arguments, pattern))
            note = f"(`{name}` is a name from the question, in the code, not a tool: this grep finds where "
            note += "it is defined.)"
            return problem.replace(_CANONICAL_EXAMPLE, f"{format_call(aimed)}\n{note}")
        if self.terms:
            aimed = replace(_CANONICAL, arguments=dict.fromkeys(_CANONICAL.arguments, self.terms[0]))
            return problem.replace(_CANONICAL_EXAMPLE, format_call(aimed))
        return problem.replace(_CANONICAL_EXAMPLE, fallback) if fallback else problem

    def answers_in_a_call(self, problems: list[str], text: str) -> bool:
        """Whether a reply whose every problem is a call of a tool that does not exist is an answer in a
        call's shape: the name a class's or an exception's (``{"name": "ValueError", "arguments":
        {"message": …}}``), which no tool is and the question does not give, after a sentence of prose
        ("Therefore, the exception raised … is:"). Sent back, the model wrote it again, then nothing."""
        names = [_UNKNOWN.match(p) for p in problems]
        if (
            len(text) > ANSWER_CHARS
            or not names
            or any(n is None or not n.group(1)[:1].isupper() for n in names)
        ):
            return False
        if any(_named_in_text(n.group(1), self.text) for n in names if n is not None):
            return False
        prose = re.sub(r"```.*?(?:```|$)|\{.*\}", " ", text, flags=re.DOTALL)
        return len(re.findall(r"[A-Za-z]{2,}", prose)) >= PROSE_WORDS

    def _name_called(self, problem: str) -> str | None:
        """The name of a tool that does not exist which a problem reports, when it is a name the question
        itself gives (a small model calls the function it was asked about as if it were a tool)."""
        unknown = _UNKNOWN.match(problem)
        if unknown is None or not _named_in_text(unknown.group(1), self.text):
            return None
        return unknown.group(1)


#: Words of prose outside a call's block that make a reply an answer (see `Question.answers_in_a_call`).
PROSE_WORDS = 8
#: A reply longer than this is never read as an answer in a call's shape.
ANSWER_CHARS = 20_000
#: The protocol's message for a call of a tool not offered, and the name it reports.
_UNKNOWN = re.compile(r'^There is no tool called "([A-Za-z_]\w{0,59})"')


def _named_in_text(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def about_the_question(problem: str, question: str, fallback: str = "") -> str:
    """``problem`` with its example call aimed at ``question``'s word (see :meth:`Question.aim`)."""
    return Question.read(question).aim(problem, fallback)


_BLOCK = re.compile(r"```[\w-]*\s*(\{.*?\})\s*```|(\{.*\})", re.DOTALL)


def call_as_prose(text: str) -> str:
    """``text`` with each block shaped as a call (``{"name": "ValueError", "arguments": {"message":
    "…"}}``) written as what it says: ``ValueError ("…")``. Blocks that are not such JSON stay."""

    def prose(found: re.Match[str]) -> str:
        try:
            data = json.loads(found.group(1) or found.group(2))
        except ValueError:
            return found.group(0)
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return found.group(0)
        arguments = data.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        said = ", ".join(json.dumps(v) if not isinstance(v, str) else f'"{v}"' for v in arguments.values())
        return f"{data['name']}" + (f" ({said})" if said else "")

    return _BLOCK.sub(prose, text)
