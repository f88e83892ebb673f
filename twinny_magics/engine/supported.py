"""Whether a very small model's answer rests on what it read (pure).

SmolLM2-135M, the model that runs when nothing else is configured, reads a listing right and then writes
"the output is a Python module" or "a web-based web environment" around it. An answer from such a model is
kept only when what it says comes from what it read: the question, the head start and the tool results.
Each sentence (or list line) is weighed by the share of its content words found there; a sentence said
before is said once. The answer stands when most of it is supported and it names something it read;
otherwise the reply says so and shows what the steps found (see ``notes.no_answer_summary``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: A sentence is supported when at least this share of its content words is in what the model read...
SENTENCE_SUPPORT = 0.6
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
    yours i me my one two three four five six seven eight nine ten following contains contain containing
    named called includes include including listed list lists shown show shows see found find there's it's
    let here's answer question folder folders file files thing things
    """
_STOP = frozenset(_STOP_WORDS.split())


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry its claims, lower-cased: names whole and split into their parts
    (``context_budget.ipynb`` gives ``context_budget.ipynb``, ``context``, ``budget``, ``ipynb``)."""
    words: list[str] = []
    for token in _TOKEN.findall(text):
        whole = token.lower().strip("./-")
        if token[0].isdigit():
            words.append(whole)  # a number is a claim: a count, a port, a line
            continue
        parts = [p.lower() for p in _PARTS.findall(token)]
        if len(parts) > 1 or (whole and whole not in parts):
            words.append(whole)
        words.extend(_stem(p) for p in parts if len(p) > 2 and p not in _STOP and not p.isdigit())
    return [w for w in words if w and w not in _STOP]


def _stem(word: str) -> str:
    """``word`` without the endings that leave its sense alone (``matches``, ``matched``, ``matching``)."""
    for ending in ("ing", "es", "ed", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


@dataclass(frozen=True)
class Read:
    """What the model read, as words: every content word, and those that are names (a file, a path, a
    dotted or underscored name, anything with a digit)."""

    words: frozenset[str]
    names: frozenset[str]


def vocabulary(texts: Iterable[str]) -> Read:
    """What the model read in ``texts``."""
    words: set[str] = set()
    names: set[str] = set()
    for text in texts:
        words.update(content_words(text))
        names.update(
            token.lower().strip("./-")
            for token in _TOKEN.findall(text)
            if any(c in token for c in "._/0123456789")
        )
    names.discard("")
    return Read(frozenset(words), frozenset(names))


def _units(answer: str) -> list[str]:
    """The answer's sentences and list lines, in order."""
    units: list[str] = []
    for line in answer.splitlines():
        units.extend(part.strip() for part in _SENTENCE_END.split(line.strip()) if part.strip())
    return units


@dataclass(frozen=True)
class Support:
    """How far an answer rests on what the model read."""

    #: Content words of the answer found in what was read, and all its content words (repeats counted once).
    found: int
    words: int
    #: Sentences whose words were mostly not in what was read, and sentences said again.
    unsupported: int
    repeated: int
    #: Whether it names something it read (a file, a path, a dotted or underscored name).
    names_something: bool

    @property
    def share(self) -> float:
        """The supported share of the answer's content words (1.0 for an answer with none)."""
        return self.found / self.words if self.words else 1.0

    @property
    def holds(self) -> bool:
        """Whether the answer stands: mostly supported, no sentence mostly made up, and it names something."""
        return self.names_something and self.unsupported == 0 and self.share >= ANSWER_SUPPORT


def support(answer: str, read: Read) -> Support:
    """How far ``answer`` rests on ``read``."""
    seen_units: set[str] = set()
    seen_words: set[str] = set()
    unsupported = repeated = 0
    named = False
    for unit in _units(answer):
        key = " ".join(_LIST_MARK.sub("", unit).lower().split())
        if key in seen_units:
            repeated += 1
            continue
        seen_units.add(key)
        words = set(content_words(unit))
        if not words:
            continue
        inside = words & read.words
        named = named or bool(words & read.names)
        if len(inside) / len(words) < SENTENCE_SUPPORT:
            unsupported += 1
        seen_words |= words
    found = len(seen_words & read.words)
    return Support(found, len(seen_words), unsupported, repeated, named)
