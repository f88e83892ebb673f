"""What a reply leaves for the next one: turn notes, and the closing prompt of a reply's last request.

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from .conversation import Message, ToolCall, user

#: Said on the last request of a reply, which offers no tools. The last sentence is there because a
#: model told only to "answer now" tends to describe the edit it was about to make as made.
FINAL_ANSWER_PROMPT = (
    "You are out of tool calls for this reply. Without calling a tool, tell the user what you found or "
    "changed and what is still left to do. Do not describe a change you did not make as made."
)

NOTE_MIN_CHARS = 200
NOTE_MAX_CHARS = 1200
NOTES_HEADER = (
    "Notes from earlier in this session: the tools that ran and what they returned (clipped). "
    "Run a tool again if you need more."
)


@dataclass(frozen=True)
class NoteEntry:
    """One call that ran in an earlier reply, and its output as the model saw it."""

    call: ToolCall
    output: str


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + "…"


def _entry_text(entry: NoteEntry, limit: int) -> str:
    # The call line gets at most a third, so a call with long arguments still leaves room for its output.
    arguments = json.dumps(entry.call.arguments, ensure_ascii=False)
    head = _clip(f"- {entry.call.name} {arguments}", max(60, limit // 3))
    body = entry.output.strip()
    if not body:
        return head
    return f"{head}\n{_clip(body, limit - len(head) - 1)}"


def turn_notes(entries: Sequence[NoteEntry], notes_chars: int) -> str:
    """The notes put ahead of the next question: newest calls kept first, the whole inside ``notes_chars``.

    Each entry (the call with its arguments, then its output) is clipped to an equal share of
    ``notes_chars``, but never under 200 nor over 1,200 characters; when not all fit, the oldest go.
    """
    if not entries or notes_chars <= 0:
        return ""
    share = max(NOTE_MIN_CHARS, min(NOTE_MAX_CHARS, notes_chars // len(entries)))
    kept: list[str] = []
    used = len(NOTES_HEADER)
    for entry in reversed(entries):
        text = _entry_text(entry, share)
        if used + len(text) + 1 > notes_chars:
            break
        kept.append(text)
        used += len(text) + 1
    if not kept:
        return ""
    return "\n".join([NOTES_HEADER, *reversed(kept)])


def question_with_notes(question: str, notes: str) -> str:
    """The next user turn: the notes first, then the question."""
    if not notes:
        return question
    return f"{notes}\n\nThe user's question:\n{question}"


def with_closing_prompt(messages: Sequence[Message], prompt: str = FINAL_ANSWER_PROMPT) -> list[Message]:
    """The messages of a reply's last request: the closing prompt merged into a last user message.

    Merged rather than appended where the last message is the user's, since several chat templates
    refuse two user turns in a row.
    """
    out = list(messages)
    if out and out[-1].role == "user" and out[-1].result is None:
        last = out[-1]
        out[-1] = Message("user", f"{last.content}\n\n{prompt}")
    else:
        out.append(user(prompt))
    return out
