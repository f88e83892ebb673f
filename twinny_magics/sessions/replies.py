"""A reply as JSON and back: its steps, calls, results (full and as the model saw them), requests,
notices, head start and edits.

Shared by saved sessions and saved experiment results, so that a reply is kept one way. An edit is kept
as data — its path, diff and status — and comes back as a `SavedEdit`, which can be shown and read but
never written: the file it was computed against may have changed since, so applying it is left to a new
request.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from twinny_magics.conversation import ToolCall, ToolResult
from twinny_magics.events import Notice, Reply, RequestRecord, Step
from twinny_magics.sessions.reading import Reader

if TYPE_CHECKING:
    from twinny_magics.changes import ProposedChange

_MODES = ("native", "text")


@dataclass
class SavedEdit:
    """An edit as it was saved: where, what (a unified diff) and what had become of it."""

    path: str
    diff: str = ""
    status: str = "pending"
    creates: bool = False

    def to_json(self) -> dict[str, Any]:
        """The edit as JSON."""
        return asdict(self)


def edit_to_json(edit: ProposedChange | Mapping[str, Any]) -> dict[str, Any]:
    """A pending edit (a live `PendingEdit`, a `SavedEdit`, or a tool's own record) as JSON data."""
    if isinstance(edit, SavedEdit):
        return edit.to_json()
    if isinstance(edit, Mapping):  # a toolset of one's own may keep its edits as plain data
        return SavedEdit(str(edit.get("path", "?")), str(edit.get("diff", ""))).to_json()
    # The contract's four fields, as text and a flag whatever a toolset of one's own keeps them as.
    return SavedEdit(str(edit.path), str(edit.diff), str(edit.status), bool(edit.creates)).to_json()


def call_to_json(call: ToolCall) -> dict[str, Any]:
    """A tool call as JSON."""
    return {"name": call.name, "arguments": call.arguments, "id": call.id}


def result_to_json(result: ToolResult) -> dict[str, Any]:
    """A tool result as JSON: what the model saw (``output``), the full text when it was cut or trimmed."""
    data = asdict(result)
    data["call"] = call_to_json(result.call)
    return data


def reply_to_json(reply: Reply) -> dict[str, Any]:
    """A reply as JSON: steps with their calls and results, requests, notices, head start, edits."""
    return {
        "question": reply.question,
        "text": reply.text,
        "stopped": reply.stopped,
        "error": reply.error,
        "steps": [
            {
                "number": step.number,
                "text": step.text,
                "calls": [call_to_json(call) for call in step.calls],
                "results": [result_to_json(result) for result in step.results],
                "problems": list(step.problems),
            }
            for step in reply.steps
        ],
        "requests": [asdict(request) for request in reply.requests],
        "notices": [asdict(notice) for notice in reply.notices],
        "pending": [edit_to_json(edit) for edit in reply.pending],
        "head_start": result_to_json(reply.head_start) if reply.head_start is not None else None,
        "seconds": reply.seconds,
    }


def call_from_json(data: Reader) -> ToolCall:
    """A tool call as :func:`call_to_json` wrote it."""
    return ToolCall(data.text("name"), data.raw_dict("arguments"), data.opt_text("id"))


def result_from_json(data: Reader) -> ToolResult:
    """A tool result as :func:`result_to_json` wrote it."""
    return ToolResult(
        call=call_from_json(data.obj("call")),
        output=data.text("output"),
        step=data.whole("step", 0),
        original=data.opt_text("original"),
        cut_chars=data.whole("cut_chars", 0),
        trimmed=data.flag("trimmed", False),
        is_error=data.flag("is_error", False),
    )


def request_from_json(data: Reader) -> RequestRecord:
    """A request record as :func:`reply_to_json` wrote it."""
    return RequestRecord(
        step=data.whole("step"),
        mode=data.choice("mode", _MODES),  # type: ignore[arg-type]  # checked to be a Mode
        window=data.whole("window"),
        limit=data.whole("limit"),
        target=data.whole("target"),
        estimated_tokens=data.whole("estimated_tokens"),
        chars=data.whole("chars"),
        trimmed=data.whole("trimmed", 0),
        prompt_tokens=data.opt_whole("prompt_tokens"),
        completion_tokens=data.opt_whole("completion_tokens"),
        cached_tokens=data.opt_whole("cached_tokens"),
        finish_reason=data.opt_text("finish_reason"),
        last=data.flag("last", False),
        retried=data.opt_text("retried"),
        continued=data.flag("continued", False),
        first_token_seconds=data.opt_real("first_token_seconds"),
    )


def edit_from_json(data: Reader) -> SavedEdit:
    """An edit as :func:`edit_to_json` wrote it."""
    return SavedEdit(
        path=data.text("path"),
        diff=data.text("diff", ""),
        status=data.text("status", "pending"),
        creates=data.flag("creates", False),
    )


def reply_from_json(data: dict[str, Any] | Reader) -> Reply:
    """A reply as :func:`reply_to_json` wrote it; a field of the wrong type raises `SessionFileError`."""
    r = data if isinstance(data, Reader) else Reader(data, "reply")
    head_start = r.opt_obj("head_start")
    return Reply(
        question=r.text("question", ""),
        text=r.text("text", ""),
        stopped=r.text("stopped", "answer"),
        error=r.opt_text("error"),
        steps=[
            Step(
                number=s.whole("number"),
                text=s.text("text", ""),
                calls=[call_from_json(c) for c in s.objs("calls", [])],
                results=[result_from_json(x) for x in s.objs("results", [])],
                problems=s.texts("problems", []),
            )
            for s in r.objs("steps", [])
        ],
        requests=[request_from_json(q) for q in r.objs("requests", [])],
        notices=[Notice(n.text("kind"), n.text("text")) for n in r.objs("notices", [])],
        pending=[edit_from_json(e) for e in r.objs("pending", [])],
        head_start=result_from_json(head_start) if head_start is not None else None,
        seconds=r.opt_real("seconds"),
    )
