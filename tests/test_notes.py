"""Turn notes and the closing prompt."""

from __future__ import annotations

import pytest

from twinny_magics.conversation import Message, ToolCall, ToolResult, assistant, system, tool_result, user
from twinny_magics.notes import (
    FINAL_ANSWER_PROMPT,
    NOTES_HEADER,
    NOTES_TOOL,
    NoteEntry,
    notes_messages,
    turn_notes,
    with_closing_prompt,
)


def entry(n: int, size: int = 50) -> NoteEntry:
    return NoteEntry(ToolCall("grep", {"pattern": f"p{n}"}), f"out{n}:" + "o" * size)


def test_closing_prompt_is_the_spec_text() -> None:
    assert FINAL_ANSWER_PROMPT == (
        "You are out of tool calls for this reply. Without calling a tool, tell the user what you found or "
        "changed and what is still left to do. Do not describe a change you did not make as made."
    )


def test_no_entries_make_no_notes() -> None:
    assert turn_notes([], 1200) == ""
    assert notes_messages("") == []


def test_notes_list_each_call_with_arguments_and_output_in_order() -> None:
    notes = turn_notes([entry(1), entry(2)], 6000)
    assert notes.startswith(NOTES_HEADER)
    assert notes.index('grep {"pattern": "p1"}') < notes.index('grep {"pattern": "p2"}')
    assert "out2:ooo" in notes


@pytest.mark.parametrize(
    ("notes_chars", "count", "share"), [(6000, 2, 1200), (1200, 12, 200), (3000, 5, 600)]
)
def test_each_note_is_clipped_to_its_share_between_200_and_1200(
    notes_chars: int, count: int, share: int
) -> None:
    entries = [entry(n, 5000) for n in range(count)]
    notes = turn_notes(entries, notes_chars)
    assert len(notes) <= notes_chars
    bodies = notes.split("\n- ")[1:]
    assert bodies
    assert all(len("- " + body) <= share for body in bodies)


def test_newest_notes_are_kept_when_not_all_fit() -> None:
    entries = [entry(n, 5000) for n in range(20)]
    notes = turn_notes(entries, 1200)
    assert '"p19"' in notes
    assert '"p0"' not in notes
    assert len(notes) <= 1200


def test_notes_come_back_as_the_result_of_a_call_never_as_a_user_turn() -> None:
    call, result = notes_messages("NOTES")
    assert call.role == "assistant"
    assert [c.name for c in call.calls] == [NOTES_TOOL]
    assert result.result is not None
    assert result.result.call == call.calls[0]
    assert result.text == "NOTES"
    assert all(m.role != "user" for m in (call, result))


def test_closing_prompt_is_merged_into_a_last_user_message() -> None:
    messages = [system("s"), user("question")]
    closed = with_closing_prompt(messages)
    assert len(closed) == 2
    assert closed[-1] == Message("user", f"question\n\n{FINAL_ANSWER_PROMPT}")
    assert messages[-1] == user("question")


def test_closing_prompt_follows_a_tool_result_as_its_own_user_message() -> None:
    call = ToolCall("list_dir", {})
    messages = [system("s"), user("q"), assistant("", (call,)), tool_result(ToolResult(call, "a.py", 1))]
    closed = with_closing_prompt(messages)
    assert closed[-1] == user(FINAL_ANSWER_PROMPT)
    assert closed[:-1] == messages
