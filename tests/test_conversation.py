"""Rendering a conversation for a request, in native and text mode."""

from __future__ import annotations

from twinny_magics.conversation import ToolCall, ToolResult, assistant, render, system, tool_result, user


def sample() -> list:  # type: ignore[type-arg]
    call = ToolCall("grep", {"pattern": "x"}, id="c1")
    return [
        system("sys"),
        user("q"),
        assistant("looking", (call,)),
        tool_result(ToolResult(call, "a.py:1: x", 1)),
    ]


def test_native_render_carries_tool_calls_and_tool_messages() -> None:
    out = render(sample(), "native")
    assert out[2]["tool_calls"][0] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "grep", "arguments": '{"pattern": "x"}'},
    }
    assert out[3] == {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": "a.py:1: x"}


def test_text_render_says_results_as_user_turns_and_joins_user_turns() -> None:
    out = render([*sample(), user("next")], "text")
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[3]["content"] == '<tool_result name="grep">\na.py:1: x\n</tool_result>\n\nnext'


def test_text_render_writes_a_native_call_in_the_text_protocol() -> None:
    call = ToolCall("list_dir", {"path": "src"})
    out = render([assistant("", (call,))], "text")
    assert out[0]["content"] == '```tool\n{"name": "list_dir", "arguments": {"path": "src"}}\n```'
