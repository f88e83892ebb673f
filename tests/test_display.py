"""The reply view fed recorded events from a real scripted reply: what it shows, live and as fallbacks."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from twinny_magics.agent import Agent
from twinny_magics.budget import TokenEstimator, plan_context
from twinny_magics.conversation import ToolCall
from twinny_magics.display import ReplyView, reprs
from twinny_magics.events import CallFinished, Event, ReplyFinished, RequestStarted, TextDelta
from twinny_magics.servers.scripted import Scripted, ScriptedServer

BIG = "".join(f"line {i} " + "x" * 60 + "\n" for i in range(200))
ANSWER = "Done: **x** is now 2."


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    """IPython's test shell (display() needs a shell)."""
    return start_ipython() or InteractiveShell.instance()


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[list[Event], Path]:
    """The events of a real reply: a cut read, a second read, a trim that makes room, a pending edit."""
    (tmp_path / "big.txt").write_text(BIG)
    (tmp_path / "a.py").write_text("x = 1\n")
    server = ScriptedServer(
        [
            Scripted("Reading it.", calls=(ToolCall("read_file", {"path": "big.txt"}),)),
            Scripted("", calls=(ToolCall("read_file", {"path": "big.txt", "start_line": 50}),)),
            Scripted(
                "", calls=(ToolCall("edit_file", {"path": "a.py", "find": "x = 1", "replace": "x = 2"}),)
            ),
            ANSWER,
        ],
        # Room for one cut read beside the system prompt and the tools, not for two: the third request trims.
        window=2800,
    )
    events: list[Event] = []
    # No head start and no search tool: this reply is sized to show a cut and a trim of the calls made.
    Agent(server=server, workspace=tmp_path, workspace_map=False, evidence=False, search=False).run(
        "Set x to 2.", on_event=events.append
    )
    return events, tmp_path


def replay(events: list[Event], **options: Any) -> tuple[ReplyView, Any]:
    """A view fed the events, with what it displayed."""
    with capture_output() as captured:
        view = ReplyView("Set x to 2.", **options)
        view.start()
        for event in events:
            view.handle(event)
        view.close()
    assert view.failures == []
    return view, captured


def final_outputs(captured: Any) -> list[dict[str, Any]]:
    """The cell's outputs as a saved notebook keeps them: each display at its last update."""
    latest: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for number, output in enumerate(captured.outputs):
        key = (output.transient or {}).get("display_id") or f"plain-{number}"
        if key not in latest:
            order.append(key)
        latest[key] = output.data
    return [latest[key] for key in order]


def joined(outputs: list[dict[str, Any]], mime: str) -> str:
    return "\n".join(str(data.get(mime, "")) for data in outputs)


def test_the_recorded_reply_has_a_cut_a_trim_and_a_pending_edit(recorded: tuple[list[Event], Path]) -> None:
    events, _ = recorded
    finished = [e for e in events if isinstance(e, CallFinished)]
    assert finished[0].result.cut_chars > 0
    assert any(type(e).__name__ == "ResultsTrimmed" for e in events)
    assert finished[-1].pending_edit is not None


def test_a_trimmed_call_is_marked_and_still_shows_what_the_model_saw(
    shell: InteractiveShell, recorded: tuple[list[Event], Path]
) -> None:
    view, _ = replay(recorded[0])
    first = view.calls["1.0"]
    assert first.trimmed_at == 3
    assert "trimmed at request 3" in first.text()
    assert "line 0 xxx" in first.text()
    assert "trimmed</span>" in first.html()
    assert "line 0 xxx" in first.html()
    assert "trimmed read_file [1.0], read_file [2.0] to fit" in view.requests[2].text()


def test_a_cut_result_shows_its_cut_note(shell: InteractiveShell, recorded: tuple[list[Event], Path]) -> None:
    view, _ = replay(recorded[0])
    first = view.calls["1.0"]
    assert first.result is not None
    left_out = first.result.cut_chars
    assert f"cut: {left_out:,} chars left out" in first.text()
    assert f"{left_out:,} more characters were left out" in first.text()
    assert f"cut: {left_out:,} chars left out" in first.html()


def test_the_saved_outputs_hold_every_call_and_the_answer_in_text_and_html(
    shell: InteractiveShell, recorded: tuple[list[Event], Path]
) -> None:
    _, captured = replay(recorded[0])
    outputs = final_outputs(captured)
    plain, html = joined(outputs, "text/plain"), joined(outputs, "text/html")
    for text in (plain, html):
        assert "read_file" in text
        assert "edit_file" in text
        assert "Proposed edit to a.py" in text
    assert html.count("<details") == 3
    assert ANSWER in plain
    assert any(data.get("text/plain") == ANSWER for data in outputs)
    assert "Done: <strong>x</strong> is now 2." in html  # the answer's Markdown, rendered to HTML
    assert not any("text/markdown" in data for data in outputs)  # never raw Markdown (it may carry HTML)
    assert "Answered" not in plain  # an edit waits: the reply was settled, not answered
    assert "An edit waits for review" in plain


def test_each_output_carries_plain_text_and_html(
    shell: InteractiveShell, recorded: tuple[list[Event], Path]
) -> None:
    _, captured = replay(recorded[0], with_buttons=True)
    for data in final_outputs(captured):
        assert "text/plain" in data
        assert {"text/html", "application/vnd.jupyter.widget-view+json"} & set(data)


def test_the_whole_view_has_its_own_text_and_html_fallback(
    shell: InteractiveShell, recorded: tuple[list[Event], Path]
) -> None:
    view, _ = replay(recorded[0])
    bundle = view._repr_mimebundle_()
    for call in ("read_file", "edit_file"):
        assert call in bundle["text/plain"]
        assert call in bundle["text/html"]
    assert ANSWER in bundle["text/plain"]
    assert "Done: <strong>x</strong> is now 2." in bundle["text/html"]


def test_a_request_shows_its_window_bar_then_the_servers_count(
    shell: InteractiveShell, recorded: tuple[list[Event], Path]
) -> None:
    events = recorded[0]
    started = next(e for e in events if isinstance(e, RequestStarted))
    before_usage = events[: events.index(started) + 1]
    view, _ = replay(before_usage)
    assert "server counted" not in view.requests[0].text()
    assert "limit 1,960" in view.requests[0].text()
    view, _ = replay(events)
    request = view.requests[0]
    assert "server counted 1," in request.text()
    assert "ratio now" in request.text()
    assert "server counted <b>" in request.html()
    assert "left:" in request.html()  # target, limit and server marks


def test_apply_button_writes_the_file_and_updates_the_view(
    shell: InteractiveShell, recorded: tuple[list[Event], Path]
) -> None:
    events, root = recorded
    view, _ = replay(events, with_buttons=True)
    [panel] = view.edit_panels
    apply_button = panel.buttons.children[0]
    with capture_output() as captured:
        apply_button.click()
    assert (root / "a.py").read_text() == "x = 2\n"
    assert panel.item.status == "applied"
    assert all(button.disabled for button in panel.buttons.children)
    [update] = captured.outputs
    assert update.update
    assert "Proposed edit to a.py — applied" in update.data["text/plain"]


def test_discard_button_leaves_the_file_and_says_so(
    shell: InteractiveShell, recorded: tuple[list[Event], Path]
) -> None:
    events, root = recorded
    view, _ = replay(events, with_buttons=True)
    [panel] = view.edit_panels
    with capture_output() as captured:
        panel.buttons.children[1].click()
    assert (root / "a.py").read_text() == "x = 1\n"
    assert panel.item.status == "discarded"
    assert "discarded" in captured.outputs[-1].data["text/plain"]


def test_applying_an_edit_to_a_file_changed_meanwhile_is_reported_not_raised(
    shell: InteractiveShell, recorded: tuple[list[Event], Path]
) -> None:
    events, root = recorded
    view, _ = replay(events, with_buttons=True)
    (root / "a.py").write_text("x = 5\n")
    [panel] = view.edit_panels
    with capture_output():
        message = panel.apply()
    assert "changed on disk" in message
    assert panel.item.status == "conflict"
    assert (root / "a.py").read_text() == "x = 5\n"


def test_text_style_prints_each_piece_as_it_arrives(recorded: tuple[list[Event], Path]) -> None:
    out = io.StringIO()
    view = ReplyView("Set x to 2.", style="text", write=out.write)
    view.start()
    seen = []
    for event in recorded[0]:
        view.handle(event)
        seen.append(out.getvalue())
    printed = out.getvalue()
    assert "── Request 1 · native" in printed
    assert "[1.0] read_file path='big.txt'" in printed
    assert "✂ trimmed read_file [1.0]" in printed
    assert "Proposed edit to a.py" in printed
    assert ANSWER in printed
    assert printed.rstrip().splitlines()[-1].startswith("An edit waits for review")
    first_call = next(i for i, e in enumerate(recorded[0]) if isinstance(e, CallFinished))
    assert "read_file" in seen[first_call]  # printed when it happened, not at the end


def test_quiet_shows_only_the_answer(shell: InteractiveShell, recorded: tuple[list[Event], Path]) -> None:
    _, captured = replay(recorded[0], quiet=True)
    outputs = final_outputs(captured)
    assert outputs[0]["text/plain"] == ANSWER
    assert "<strong>x</strong>" in outputs[0]["text/html"]
    assert "wait for review" in outputs[1]["text/plain"]


def test_quiet_still_shows_an_error(shell: InteractiveShell) -> None:
    with capture_output() as captured:
        view = ReplyView("q", quiet=True)
        view.start()
        view.failed("Nothing answered at http://127.0.0.1:9.")
    [error] = final_outputs(captured)
    assert "✖ error: Nothing answered" in error["text/plain"]


def test_streamed_text_is_shown_in_place_as_rendered_markdown(shell: InteractiveShell) -> None:
    with capture_output() as captured:
        view = ReplyView("q")
        view.start()
        for piece in ("Hel", "lo ", "**world**"):
            view.handle(TextDelta(1, piece))
        view.handle(ReplyFinished(_reply("Hello **world**")))
    texts = [o for o in captured.outputs if o.data.get("text/plain", "").startswith("Hel")]
    assert texts[-1].data["text/plain"] == "Hello **world**"
    assert texts[-1].data["text/html"] == "<p>Hello <strong>world</strong></p>\n"
    assert len({o.transient["display_id"] for o in texts}) == 1


def test_an_interrupted_view_says_stopped(shell: InteractiveShell) -> None:
    with capture_output() as captured:
        view = ReplyView("q")
        view.start()
        view.handle(TextDelta(1, "Partial"))
        view.interrupted()
    outputs = final_outputs(captured)
    assert outputs[0]["text/plain"].startswith("Stopped")
    assert outputs[1]["text/plain"] == "Partial"


def test_the_status_line_ticks_while_the_model_is_silent(shell: InteractiveShell) -> None:
    with capture_output() as captured:
        view = ReplyView("q")
        view.start()
        time.sleep(1.2)
        view.handle(ReplyFinished(_reply("ok")))
        time.sleep(0.6)
    statuses = [o for o in captured.outputs if o.data["text/plain"].startswith("step 0/12")]
    assert len(statuses) >= 2  # shown, then ticked at least once
    assert captured.outputs[-1].data["text/plain"].startswith("Answered")


def test_a_display_failure_is_kept_and_the_reply_goes_on(shell: InteractiveShell) -> None:
    view = ReplyView("q", style="text", write=_broken_write)
    view.handle(TextDelta(1, "x"))
    assert len(view.failures) == 1
    assert "OSError" in view.failures[0]


def test_the_plan_repr_is_a_table_with_a_bar() -> None:
    plan = plan_context(8192)
    html, text = reprs.plan_html(plan), reprs.plan_text(plan)
    assert "<table>" in html
    assert "5,734" in html
    assert "border-left:2px solid" in html  # the limit mark
    assert "limit" in text
    assert "5,734" in text


def test_the_estimator_repr_charts_its_history_in_svg() -> None:
    estimator = TokenEstimator()
    assert "starting guess" in reprs.estimator_html(estimator)
    estimator.observe(3000, 1000)
    estimator.observe(4000, 1000)
    html = reprs.estimator_html(estimator)
    assert "<svg" in html
    assert "<polyline" in html
    assert "4.000" in html
    assert "3.00 → 4.00" in reprs.estimator_text(estimator)


def test_the_reply_repr_tabulates_its_requests(recorded: tuple[list[Event], Path]) -> None:
    reply = next(e for e in recorded[0] if isinstance(e, ReplyFinished)).reply
    html, text = reprs.reply_html(reply), reprs.reply_text(reply)
    assert html.count("<tr>") == 1 + len(reply.requests)
    assert "4 (last)" in text
    assert "estimate" in html
    assert ANSWER in text


def _reply(text: str) -> Any:
    from twinny_magics.events import Reply

    return Reply(question="q", text=text)


def _broken_write(text: str) -> Iterator[str]:
    raise OSError("the terminal went away")


def test_every_registered_repr_names_a_class_where_it_lives() -> None:
    """The formatters are registered by module and name: a class that moves must move its entry too."""
    import importlib

    for module, name, _html, _text in reprs._REPRS:
        cls = getattr(importlib.import_module(module), name)
        assert cls.__module__ == module, f"{name} lives in {cls.__module__}, registered as {module}"


def test_the_shell_shows_an_estimator_with_its_own_repr(shell: InteractiveShell) -> None:
    reprs.register(shell)
    estimator = TokenEstimator()
    html = shell.display_formatter.formatters["text/html"].lookup(estimator)(estimator)
    assert "Token estimator" in html
