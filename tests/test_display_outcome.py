"""The status line says what really ended a reply.

A reply is "settled" — its next request the last — by an edit waiting for review and also by code
run in the kernel past its time limit. The status line said "An edit waits for review" for both; a run
past its limit, with no edit anywhere, now says so (an edit's reply still says it waits: test_display.py).
The replies are real (an Agent over a scripted
model, a real IPython shell running the code on this, its main thread); the view is fed their events.
"""

from __future__ import annotations

import io
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.display import ReplyView
from twinny_magics.events import Event
from twinny_magics.servers.scripted import Scripted, ScriptedServer

SLOW = "import time\ntime.sleep(5)"


def last_status_line(events: list[Event]) -> str:
    out = io.StringIO()
    view = ReplyView("q", style="text", write=out.write)
    view.start()
    for event in events:
        view.handle(event)
    view.close()
    return out.getvalue().rstrip().splitlines()[-1]


def reply_events(tmp_path: Path, call: ToolCall, **options: object) -> list[Event]:
    server = ScriptedServer([Scripted("", calls=(call,)), "Done.", "Done."])
    events: list[Event] = []
    agent = Agent(
        server=server, workspace=tmp_path, workspace_map=False, evidence=False, search=False, **options
    )
    agent.run("Do it.", on_event=events.append)
    return events


def test_a_reply_ended_by_code_past_its_time_limit_does_not_say_an_edit_waits(tmp_path: Path) -> None:
    shell = InteractiveShell.instance()
    try:
        events = reply_events(
            tmp_path,
            ToolCall("run_python", {"code": SLOW}),
            shell=shell,
            kernel="allow",
            kernel_seconds=0.3,
        )
    finally:
        InteractiveShell.clear_instance()
    line = last_status_line(events)
    assert "edit" not in line, line
    assert line.startswith("Ended early: code run in the kernel went past its time limit"), line
