"""Grounded strings: a message or value an answer quotes as from the code is looked for in the workspace.

A small model asked what an error says often answers from what such errors usually say
(``TypeError: unhashable type: 'list'``) without looking, and the code says something else. An answer
to a question about the workspace that quotes a string — in double quotes or backticks, two words or
more, not code — which is in no file the tools may read, nor in anything this reply was shown (the
question, the results, the head start), goes back once: the model is told that no file has it and to
look the text up. The quotes are model text: at most :data:`MAX_QUOTES` are looked for, each at most
:data:`MAX_QUOTE_CHARS`, escaped (a literal, never a pattern the model wrote), through the toolset's own
search (:class:`FindsText`: the workspace's grep, with its deny list, limits and masked secrets).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from itertools import islice
from typing import Protocol, runtime_checkable

from twinny_magics.conversation import Message
from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import mask_secrets

#: Quoted strings looked for in one answer, and the longest one looked for.
MAX_QUOTES = 4
MAX_QUOTE_CHARS = 200
#: Quoted spans (and exception lines) read in one answer, first ones first.
MAX_SPANS = 200
#: Words of a quote that are looked for (a message the code formats goes on with values).
LEAD_WORDS = 4

#: Quoted spans, each pair taken whole left to right (a short one is skipped, never read across).
_QUOTE = re.compile(r'"([^"\n]{0,400})"|`([^`\n]{0,400})`|“([^”\n]{0,400})”')
#: A line that opens or closes a fenced block.
_FENCE_LINE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
#: An exception's name written before its message (``TypeError: …``): the message is what is looked for.
_RAISED = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Warning)|raise \w+\()\s*[:(]\s*")
#: A line that is an exception as Python prints it (``TypeError: unhashable type: 'list'``).
_EXCEPTION_LINE = re.compile(
    r"^[ \t>*-]*`?[A-Za-z_][\w.]{0,80}(?:Error|Exception|Warning): ([^\n`]{1,400})", re.M
)
#: A quote that is code, not a message: a call, an assignment, a path, a keyword's line.
_CODE = re.compile(r"[(){}\[\]=<>]|^\s*(?:def|class|import|from|return|raise|assert|if|for)\b|/|\w\.\w")
_WORD = re.compile(r"[A-Za-z]{2,}")


@runtime_checkable
class FindsText(Protocol):
    """A toolset that can say whether any file it may show has text matching a pattern."""

    def finds_text(self, pattern: str) -> bool:
        """Whether a file the tools may read has a line matching ``pattern`` (a regex). Blocking."""
        ...


def quotes(answer: str) -> list[str]:
    """The strings an answer quotes as messages or values (not code), and the messages of the exception
    lines it writes (``TypeError: …``), in order, without repeats."""
    found: list[str] = []
    # Strings inside a fenced block are the model's own code (a snippet, a proposed change), not a
    # quote of the workspace's: blanked out, same length, so positions keep their order.
    prose = _outside_fences(answer)
    quoted = islice(_QUOTE.finditer(prose), MAX_SPANS)
    spans = [(m.start(), _RAISED.sub("", _span(m)).strip(" '\"`."), False) for m in quoted]
    lines = islice(_EXCEPTION_LINE.finditer(answer), MAX_SPANS)
    spans += [(m.start(), m.group(1).strip(" '\"`."), True) for m in lines]
    for _, text, raised in sorted(spans):
        if not 8 <= len(text) <= MAX_QUOTE_CHARS or " " not in text or len(_WORD.findall(text)) < 2:
            continue
        if (_CODE.search(text) and not raised) or text in found:
            continue
        found.append(text)
        if len(found) == MAX_QUOTES:
            break
    return found


def _outside_fences(text: str) -> str:
    """``text`` with every fenced block's lines blanked (same length); an unclosed fence runs to the end."""
    lines = text.splitlines(keepends=True)
    fence = ""
    for number, line in enumerate(lines):
        opener = _FENCE_LINE.match(line)
        inside = bool(fence)
        if opener and not fence:
            fence = opener.group(1)
        elif opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
            fence = ""
        if inside or fence:
            body = line.rstrip("\n")
            lines[number] = " " * len(body) + line[len(body) :]
    return "".join(lines)


def _span(match: re.Match[str]) -> str:
    return next(g for g in match.groups() if g is not None).strip()


def pattern_of(quote: str) -> str:
    """A case-blind literal pattern for the first :data:`LEAD_WORDS` words of ``quote`` (any spacing)."""
    words = quote.split()[:LEAD_WORDS]
    return "(?i)" + r"\s+".join(re.escape(w) for w in words)


def _seen(quote: str, shown: str) -> bool:
    return re.search(pattern_of(quote), shown) is not None


async def ungrounded(answer: str, question: str, messages: Sequence[Message], tools: object) -> list[str]:
    """The quotes of ``answer`` that no file has and nothing the reply was shown has."""
    found = quotes(answer)
    if not found or not isinstance(tools, FindsText):
        return []
    shown = "\n".join([question, *(m.text for m in messages if m.role != "system")])
    out = []
    for quote in found:
        if _seen(quote, shown):
            continue
        try:
            there = await asyncio.to_thread(tools.finds_text, pattern_of(quote))
        except WorkspaceError:
            continue
        if not there:
            out.append(quote)
    return out


def correction(missing: Sequence[str], mode: str) -> str:
    """What the model is told about quotes no file has."""
    said = ", ".join(f'"{mask_secrets(q)}"' for q in missing)
    text = (
        f"Your answer quotes {said} as if from the code, but no file in the workspace contains that text. "
        "Do not answer from memory: look the text up (grep for a distinctive word of it, or read the code "
        "that raises or defines it) and answer with the exact text the files have, citing the file:line."
    )
    return text if mode != "text" else text + " Write one tool call to look."
