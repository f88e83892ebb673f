"""The call markers: one table of the texts that open (and close) a tool call, in every dialect read.

Pure: no imports beyond the standard library. Three readers take their markers from ``MARKERS`` and
nowhere else:

- the parser (``parse``, ``dialects``): where a tag or token call starts (``tag_pattern``), what closes
  it, whether its body must be a call (``strong``), which reader reads the body (``dialect``), which
  fence languages hold calls;
- the stream hold-back (``stream``): what it stops showing at while a reply streams (``held``), so a
  half-written marker is never shown;
- the lazy grammar (``grammar``): the openers it can take over at and finish the call (``grammar``).

A fence is a marker too: ```` ```tool ```` is the protocol's own, written at a line start (up to three
spaces in, three or more backticks). JSON calls (``{"name"…``), Python-style calls and ``<think>`` have
no fixed marker; the parser and the stream hold-back find those themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "FENCE",
    "FUNCTION",
    "GEMMA",
    "MARKERS",
    "MISTRAL",
    "TAG",
    "Marker",
    "fence_languages",
    "function_pattern",
    "grammar_openers",
    "held_prefixes",
    "marker",
    "tag_markers",
    "tag_pattern",
]

# The readers a marker's body goes to.
FENCE = "fence"  # a fenced block whose language says it holds calls
TAG = "tag"  # a tag or special token around JSON, Python-style or XML calls
MISTRAL = "mistral"  # ``[TOOL_CALLS]``: a JSON list, or ``name[ARGS]{…}``
GEMMA = "gemma"  # FunctionGemma's ``call:NAME{…}`` (or, failing that, what a tag holds)
FUNCTION = "function"  # Qwen3-coder's ``<function=NAME>`` / ``<function name="NAME">``, closers optional


@dataclass(frozen=True)
class Marker:
    """One way a call is opened, as the model writes it.

    ``opener``: the text that opens the call (for a fence, the backticks and the language).
    ``closer``: what ends it (None: nothing does; for a fence, the closing backticks).
    ``dialect``: the reader of what follows (``FENCE``, ``TAG``, ``MISTRAL``, ``GEMMA``, ``FUNCTION``).
    ``strong``: the opener alone means a call, so a body that cannot be read is a problem for the model;
    a weak one (``<tools>``, ``<xml>``…, a ```` ```json ```` fence) also occurs around data and prose.
    ``special``: a special token that never reaches the content, whether or not a call could be read.
    ``held``: what the stream hold-back stops showing at: the opener, or a shorter stem (``<tool_call``
    covers ``<tool_calls>`` and ``<tool_call name=…>`` too); None where the stream shows it (weak tags,
    which prose uses; a JSON call inside one is still held back).
    ``grammar``: a lazy grammar can take over at this opener and finish the call (``grammar``).
    """

    opener: str
    closer: str | None
    dialect: str
    strong: bool = True
    special: bool = False
    held: str | None = None
    grammar: bool = False


def _call(
    opener: str,
    closer: str | None,
    dialect: str = TAG,
    *,
    strong: bool = True,
    special: bool = False,
    stem: str | None = None,
    grammar: bool = False,
) -> Marker:
    """A tag or token marker: held back while streaming when it is strong (at ``stem`` if given)."""
    held = (stem or opener) if strong else None
    return Marker(opener, closer, dialect, strong=strong, special=special, held=held, grammar=grammar)


def _fence(language: str, *, strong: bool = True, held: bool = True, grammar: bool = False) -> Marker:
    opener = "```" + language
    return Marker(opener, "```", FENCE, strong=strong, held=opener if held else None, grammar=grammar)


#: Every call marker the parser reads, in one place.
MARKERS: tuple[Marker, ...] = (
    # The protocol's own fence (what the text-mode prompt asks for) and the languages models write for it.
    _fence("tool", grammar=True),
    _fence("tool_call"),
    _fence("tool_code"),
    _fence("tool_calls"),
    # Read as calls, but not held back while streaming: the stream shows these fences as code.
    _fence("function", held=False),
    _fence("function_call", held=False),
    # A JSON fence holds calls only when its whole body is calls: data stays data.
    _fence("json", strong=False),
    # Hermes-style templates (Qwen2.5 among them): small models drift to it, so a lazy grammar takes over.
    _call("<tool_call>", "</tool_call>", stem="<tool_call", grammar=True),
    _call("<tool_calls>", "</tool_calls>"),
    _call("<function_call>", "</function_call>"),
    _call("<|python_start|>", "<|python_end|>", special=True),
    _call("<|tool_call_start|>", "<|tool_call_end|>", special=True),
    _call("<|python_tag|>", None, special=True),
    _call("[TOOL_CALLS]", "[/TOOL_CALLS]", MISTRAL, special=True),
    _call("<start_function_call>", "<end_function_call>", GEMMA, special=True),
    # Tags some templates wrap a call in that also occur in ordinary prose.
    _call("<tool>", "</tool>", strong=False),
    _call("<tools>", "</tools>", strong=False),
    _call("<response>", "</response>", strong=False),
    _call("<json>", "</json>", strong=False),
    _call("<JSON>", "</JSON>", strong=False),
    _call("<xml>", "</xml>", strong=False),
    # Qwen3-coder's function tag, read by its own reader (its closers are optional).
    _call("<function=", "</function>", FUNCTION),
    _call("<function ", "</function>", FUNCTION),
)


def marker(opener: str) -> Marker:
    """The marker ``opener`` opens (KeyError for an opener not in the table)."""
    for found in MARKERS:
        if found.opener == opener:
            return found
    raise KeyError(opener)


def tag_markers() -> dict[str, Marker]:
    """The markers that are tags or tokens around a call (all but fences and ``<function…``), by opener."""
    return {m.opener: m for m in MARKERS if m.dialect in (TAG, MISTRAL, GEMMA)}


def _alternatives(openers: list[str]) -> str:
    # Grouped by first character, so a search rejects most positions at one character.
    firsts: dict[str, list[str]] = {}
    for opener in openers:
        firsts.setdefault(opener[0], []).append(opener[1:])
    return "|".join(
        re.escape(first) + "(?:" + "|".join(re.escape(rest) for rest in rests) + ")"
        for first, rests in firsts.items()
    )


def tag_pattern() -> str:
    """A regex matching the opener of any tag or token call (see ``tag_markers``)."""
    return _alternatives(list(tag_markers()))


def function_pattern() -> str:
    """A regex matching the opener of a ``FUNCTION`` call."""
    return _alternatives([m.opener for m in MARKERS if m.dialect == FUNCTION])


def fence_languages(*, strong: bool | None = None, held: bool | None = None) -> tuple[str, ...]:
    """The languages of the call fences: all, or those that are (not) strong / (not) held back."""
    return tuple(
        m.opener.removeprefix("```")
        for m in MARKERS
        if m.dialect == FENCE
        and (strong is None or m.strong == strong)
        and (held is None or (m.held is not None) == held)
    )


def held_prefixes(limit: int, *, fences: bool = False) -> tuple[str, ...]:
    """What the stream hold-back stops at, each cut to its first ``limit`` characters (a longer marker is
    distinctive enough by then); fences (found only at a line start or as ```` ```tool ````) on request."""
    found: list[str] = []
    for m in MARKERS:
        if m.held is not None and (m.dialect == FENCE) == fences and m.held[:limit] not in found:
            found.append(m.held[:limit])
    return tuple(found)


def grammar_openers() -> tuple[Marker, ...]:
    """The markers a lazy grammar can take over at, the protocol's own fence first."""
    return tuple(m for m in MARKERS if m.grammar)
