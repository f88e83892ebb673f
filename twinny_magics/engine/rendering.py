"""Rendering a conversation for its requests, each part once.

A request sends the whole conversation, but from one request to the next only a few messages are new
or changed (the step's call and results, a trimmed result, the note that says so). ``conversation.render``
is compositional: natively each message becomes one dict, and in text mode each run of user turns (tool
results are user turns there) becomes one. So a :class:`Renderer` renders each such group on its own,
keeps it by the identity of its messages (they are frozen: the same objects render the same), and gives
a conversation back as the groups it has, rendering only those it has not seen. What it returns is
exactly what rendering the whole list would (``tests/test_engine.py`` checks it over random edits).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from twinny_magics.conversation import Message, Mode

Rendered = list[dict[str, Any]]
_Key = tuple[object, ...]


def groups(messages: Sequence[Message], mode: Mode) -> list[tuple[int, int]]:
    """Where each dict of ``messages`` rendered in ``mode`` comes from: spans of messages, in order."""
    if mode == "native":
        return [(i, i + 1) for i in range(len(messages))]
    spans: list[tuple[int, int]] = []
    for i, message in enumerate(messages):
        if spans and _user_turn(message) and _user_turn(messages[i - 1]):
            spans[-1] = (spans[-1][0], i + 1)  # text mode joins consecutive user turns
        else:
            spans.append((i, i + 1))
    return spans


def _user_turn(message: Message) -> bool:
    """Whether a message is a user turn in text mode (a tool result is said as one)."""
    return message.result is not None or message.role == "user"


def _named(message: Message) -> bool:
    """Whether every call and result of a message has its id (one without is named by its place)."""
    result = message.result
    return (result is None or bool(result.call.id)) and all(call.id for call in message.calls)


class Renderer:
    """Renders lists of messages, each group once, with ``render`` (``conversation.render``'s shape).

    A group is kept while it was used since the turn before last (see :meth:`turn`), so what it holds is
    about one conversation, whatever the session's length.
    """

    def __init__(self, render: Callable[[Sequence[Message], Mode], Rendered]) -> None:
        self._render = render
        # Each entry keeps its messages, so that their ids stay theirs while the entry lives.
        self._current: dict[_Key, tuple[tuple[Message, ...], dict[str, Any]]] = {}
        self._previous: dict[_Key, tuple[tuple[Message, ...], dict[str, Any]]] = {}

    def __call__(self, messages: Sequence[Message], mode: Mode) -> Rendered:
        """``messages`` rendered in ``mode``: exactly ``render(messages, mode)``."""
        out: Rendered = []
        for start, end in groups(messages, mode):
            group = tuple(messages[start:end])
            if mode == "native" and not _named(group[0]) and start:
                # Its calls are named by their place: only the whole list says how.
                return self._render(messages, mode)
            key: _Key = (
                (mode, *map(id, group)) if start or mode == "text" or _named(group[0]) else (0, id(group[0]))
            )
            entry = self._current.get(key)
            if entry is None:
                entry = self._previous.get(key)
                if entry is None:
                    (rendered,) = self._render(group, mode)
                    entry = (group, rendered)
                self._current[key] = entry
            out.append(entry[1])
        return out

    def turn(self) -> None:
        """A new request: groups unused since the one before are let go."""
        self._previous, self._current = self._current, {}
