"""Whether a very small model's answer rests on what it read (pure).

SmolLM2-135M, the model that runs when nothing else is configured, reads a listing right and then writes
"the output is a Python module" or "a web-based web environment" around it. An answer from such a model is
kept only when what it says comes from what it read: the question, the head start and the tool results.
Each sentence (or list line) is weighed by the share of its content words found there. The answer is
read up to its first sentence mostly not found there (a sentence said again is left out); that beginning
is the answer when it names something it read and most of its words were read. Otherwise the reply says
so and shows what the steps found (see ``notes.unsupported_answer``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from twinny_magics.conversation import ToolResult
from twinny_magics.notes import NOTES_TOOL, unsupported_answer

#: A sentence is supported when at least this share of its content words is in what the model read (a
#: strict bar: a right answer taken for a made-up one still shows what was found; the other way round shows
#: nonsense)...
SENTENCE_SUPPORT = 0.8
#: ...and the answer stands when at least this share of its content words, over all its sentences, is.
ANSWER_SUPPORT = 0.75

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*[A-Za-z0-9/]|[A-Za-z]|\d+(?:\.\d+)*")
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'`(\[]?[A-Z])")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")
#: Words that carry no claim of their own: what is said is in the other words.
_STOP_WORDS = """
    a about above after again all also an and any are as at be been being below between both but by can
    could did do does doing done each few for from further had has have having here how if in into is it
    its itself just may might more most much must no nor not now of off on once only or other our out over
    own same should so some such than that the their them then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would yes you your
    yours i me my one following contains contain containing
    named called includes include including listed list lists shown show shows see found find there's it's
    let here's answer question folder folders file files thing things
    """
_STOP = frozenset(_STOP_WORDS.split())


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry its claims, lower-cased: names whole, each part of a path, and
    split into their parts (``src/context_budget.ipynb`` gives ``src/context_budget.ipynb``, ``src``,
    ``context_budget.ipynb``, ``context``, ``budget``, ``ipynb``); prose words stemmed."""
    words: list[str] = []
    for token in _TOKEN.findall(text):
        whole = token.lower().strip("./-")
        if token[0].isdigit():
            words.append(whole)  # a number is a claim: a count, a port, a line
            continue
        parts = [p.lower() for p in _PARTS.findall(token)]
        if len(parts) > 1 or (whole and whole not in parts):
            words.append(whole)
            words.extend(step for step in whole.split("/") if step and step != whole)
        words.extend(_stem(p) for p in parts if len(p) > 2 and p not in _STOP and not p.isdigit())
    return [w for w in words if w and w not in _STOP]


def _stem(word: str) -> str:
    """``word`` cut to what its forms share (``match``, ``matches``, ``matched``; ``combine``,
    ``combined``): one ending off, then at most five letters."""
    for ending in ("ing", "ed", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[: -len(ending)]
            break
    return word[:5]


@dataclass(frozen=True)
class Read:
    """What the model read, as words: every content word, and those that are names (a file, a path or a
    part of one, a dotted or underscored name, anything with a digit)."""

    words: frozenset[str]
    names: frozenset[str]


def vocabulary(texts: Iterable[str]) -> Read:
    """What the model read in ``texts``."""
    words: set[str] = set()
    names: set[str] = set()
    for text in texts:
        words.update(content_words(text))
        for token in _TOKEN.findall(text):
            if any(c in token for c in "._/0123456789"):
                whole = token.lower().strip("./-")
                names.add(whole)
                names.update(step for step in whole.split("/") if any(c in step for c in "._0123456789"))
    names.discard("")
    return Read(frozenset(words), frozenset(names))


@dataclass(frozen=True)
class _Unit:
    """A sentence or a list line of an answer, and the line it is on."""

    text: str
    line: int


def _units(answer: str) -> list[_Unit]:
    """The answer's sentences and list lines, in order."""
    return [
        _Unit(part.strip(), number)
        for number, line in enumerate(answer.splitlines())
        for part in _SENTENCE_END.split(line.strip())
        if part.strip()
    ]


@dataclass(frozen=True)
class Support:
    """How far an answer rests on what the model read, and its beginning that does."""

    #: The answer's beginning up to its first sentence mostly not in what was read (a sentence said
    #: again left out): what may be shown.
    kept: str
    #: Whether anything was left out (a sentence said again, or all from a made-up one on).
    cut: bool
    #: Content words of ``kept`` found in what was read, and all its content words (each counted once).
    found: int
    words: int
    #: Whether ``kept`` names something it read (a file, a path, a dotted or underscored name, a number).
    names_something: bool

    @property
    def share(self) -> float:
        """The supported share of the kept words (1.0 when there are none)."""
        return self.found / self.words if self.words else 1.0

    @property
    def holds(self) -> bool:
        """Whether the kept beginning stands as the answer: it names something read, and three quarters
        of its words were read."""
        return bool(self.kept) and self.names_something and self.share >= ANSWER_SUPPORT


def support(answer: str, read: Read) -> Support:
    """How far ``answer`` rests on ``read``: its beginning up to the first made-up sentence, weighed."""
    seen_units: set[str] = set()
    seen_words: set[str] = set()
    kept: list[_Unit] = []
    cut = False
    named = False
    for unit in _units(answer):
        key = " ".join(_LIST_MARK.sub("", unit.text).lower().split())
        if key in seen_units:
            cut = True
            continue
        seen_units.add(key)
        words = set(content_words(unit.text))
        if words and len(words & read.words) / len(words) < SENTENCE_SUPPORT:
            cut = True
            break
        kept.append(unit)
        named = named or bool(words & read.names)
        seen_words |= words
    text = answer.strip() if not cut else _joined(kept)
    return Support(text, cut, len(seen_words & read.words), len(seen_words), named)


def _joined(units: list[_Unit]) -> str:
    """``units`` written back: on one line as sentences, on new lines where they were."""
    lines: list[str] = []
    last = -1
    for unit in units:
        if unit.line == last:
            lines[-1] += " " + unit.text
        else:
            lines.append(unit.text)
        last = unit.line
    return "\n".join(lines)


#: The notices that say what became of the model's answer.
CUT_NOTICE = (
    "The model's answer went on to say what nothing it read says (or said it again): the reply shows its "
    "beginning; the whole text is in the reply's last step."
)
REPLACED_NOTICE = (
    "The model's answer said what nothing it read says (a 135M model often does): the reply shows what it "
    "found instead. A larger model answers: %agent pull qwen2.5-coder-1.5b."
)


@dataclass(frozen=True)
class Settled:
    """The answer to show, and the notice that says why it is not the model's text as written."""

    text: str
    notice: str | None = None


def settle(
    answer: str, question: str, read: Sequence[ToolResult], head_start: ToolResult | None = None
) -> Settled:
    """``answer`` as what the model read supports it: as written, cut before its first made-up sentence,
    or, when what is left names nothing read, the honest reply with what the head start and the calls
    (``read``, the conversation's results) found."""
    found = [head_start, *read] if head_start is not None and head_start not in read else list(read)
    said = support(answer, vocabulary([question, *(r.output for r in found)]))
    if said.holds:
        return Settled(said.kept, CUT_NOTICE) if said.cut else Settled(answer)
    return Settled(unsupported_answer([r for r in found if r.call.name != NOTES_TOOL]), REPLACED_NOTICE)
