"""``%%agent`` and ``%agent`` on a real IPython shell, with scripted sessions (no server, no mocks)."""

from __future__ import annotations

import _thread
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

import twinny_magics
from twinny_magics.agent import Agent
from twinny_magics.budget import plan_context
from twinny_magics.conversation import ToolCall
from twinny_magics.errors import ServerError, ServerUnreachable
from twinny_magics.magic import TwinnyMagics
from twinny_magics.servers.scripted import Scripted, ScriptedServer

READ = Scripted("Let me look.", calls=(ToolCall("read_file", {"path": "a.py"}),))
ANSWER = "It sets **x** to 1."
EDIT = Scripted("", calls=(ToolCall("edit_file", {"path": "a.py", "find": "x = 1", "replace": "x = 2"}),))


@pytest.fixture
def ip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    """The test shell with the extension freshly loaded; the working directory is a small workspace."""
    shell = start_ipython() or InteractiveShell.instance()
    # %config writes into the shell's own config, which outlives a test: start each from the defaults.
    shell.config.pop("TwinnyMagics", None)
    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    # The package's own hooks once they are wired in __init__, the magic module's until then.
    extension = "twinny_magics" if hasattr(twinny_magics, "load_ipython_extension") else "twinny_magics.magic"
    shell.extension_manager.load_extension(extension)
    yield shell
    shell.extension_manager.unload_extension(extension)
    shell.config.pop("TwinnyMagics", None)
    for name in ("s", "session"):
        shell.user_ns.pop(name, None)


def magics(ip: InteractiveShell) -> TwinnyMagics:
    found: TwinnyMagics = ip.magics_manager.registry["TwinnyMagics"]
    return found


def adopt(ip: InteractiveShell, server: ScriptedServer, **options: Any) -> Agent:
    """Make an Agent over ``server`` in the notebook and ``%agent use`` it."""
    session = Agent(server=server, workspace=Path.cwd(), **options)
    ip.user_ns["s"] = session
    with capture_output():
        ip.run_line_magic("agent", "use s")
    return session


def ask(ip: InteractiveShell, question: str, line: str = "") -> Any:
    with capture_output() as captured:
        ip.run_cell_magic("agent", line, question)
    return captured


def saved(captured: Any) -> list[dict[str, Any]]:
    """The outputs a saved notebook keeps: each display at its last update."""
    latest: dict[str, dict[str, Any]] = {}
    for number, output in enumerate(captured.outputs):
        latest[(output.transient or {}).get("display_id") or str(number)] = output.data
    return list(latest.values())


@dataclass
class Factory:
    """A session factory that records the options each session was made with."""

    replies: tuple[Any, ...] = (ANSWER,)

    def __post_init__(self) -> None:
        self.made: list[dict[str, Any]] = []

    def __call__(self, **options: Any) -> Agent:
        self.made.append(options)
        return Agent(server=ScriptedServer(list(self.replies) * 3), **options)


def test_load_ext_registers_both_magics_and_the_reprs(ip: InteractiveShell) -> None:
    assert ip.find_line_magic("agent") is not None
    assert ip.find_cell_magic("agent") is not None
    formatters = ip.display_formatter.formatters
    plan = plan_context(8192)
    # A terminal shell keeps its HTML formatter switched off; the registered printer is still there.
    assert "<table>" in formatters["text/html"].lookup(plan)(plan)
    assert "Context plan for a 8,192-token window" in formatters["text/plain"](plan_context(8192))


def test_loading_the_extension_imports_neither_the_loop_nor_httpx_nor_widgets() -> None:
    code = (
        "import sys, twinny_magics.magic as m; "
        "print(sorted(n for n in ('httpx', 'twinny_magics.loop', 'twinny_magics.agent', 'ipywidgets') "
        "if n in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_cell_is_a_turn_printed_as_it_runs_in_a_terminal(ip: InteractiveShell) -> None:
    adopt(ip, ScriptedServer([READ, ANSWER]))
    captured = ask(ip, "What does a.py do?")
    out = captured.stdout
    assert "── Request 1 · native" in out
    assert "[1.0] read_file path='a.py'" in out
    assert "1: x = 1" in out
    assert ANSWER in out
    assert "Answered · 2 requests · 1 call" in out


def test_rich_output_keeps_the_calls_and_the_answer_in_text_and_html(ip: InteractiveShell) -> None:
    ip.run_line_magic("config", "TwinnyMagics.output = 'rich'")
    adopt(ip, ScriptedServer([READ, ANSWER]))
    outputs = saved(ask(ip, "What does a.py do?"))
    plain = "\n".join(o["text/plain"] for o in outputs)
    html = "\n".join(o.get("text/html", "") for o in outputs)
    assert "read_file path='a.py'" in plain
    assert "1: x = 1" in plain
    assert ANSWER in plain
    assert "<details" in html
    assert "1: x = 1" in html
    assert plain.startswith("Answered")


def test_mode_text_on_the_line_sends_no_tools_and_reads_a_text_call(ip: InteractiveShell) -> None:
    server = ScriptedServer(['```tool\n{"name": "read_file", "arguments": {"path": "a.py"}}\n```', ANSWER])
    session = adopt(ip, server)
    out = ask(ip, "What does a.py do?", "--mode text").stdout
    assert server.requests[0].tools is None
    assert "read_file {path" in server.requests[0].messages[0]["content"]
    assert "1: x = 1" in out
    assert session.mode == "text"


def test_cells_are_turns_of_one_session(ip: InteractiveShell) -> None:
    server = ScriptedServer([READ, ANSWER, "Yes, only x."])
    session = adopt(ip, server)
    ask(ip, "What does a.py do?")
    ask(ip, "Is that all?")
    assert len(session.replies) == 2
    last_request = str(server.requests[-1].messages)
    assert "What does a.py do?" in last_request
    assert ANSWER.replace("**", "") in last_request.replace("**", "")


def test_config_defaults_make_the_session_and_line_options_override_them(ip: InteractiveShell) -> None:
    factory = Factory()
    magics(ip).session_factory = factory
    ip.run_line_magic("config", "TwinnyMagics.model = 'small'")
    ip.run_line_magic("config", "TwinnyMagics.steps = 5")
    ip.run_line_magic("config", "TwinnyMagics.commands = 'off'")
    ask(ip, "hi", "--server http://127.0.0.1:11434 --kind ollama --window 4096 --edits apply --api-key k")
    [made] = factory.made
    assert made["base_url"] == "http://127.0.0.1:11434"
    assert made["model"] == "small"
    assert made["kind"] == "ollama"
    assert made["window"] == 4096
    assert made["api_key"] == "k"
    assert made["steps"] == 5
    assert made["commands"] == "off"
    assert made["edits"] == "apply"
    assert made["workspace"] == str(Path.cwd())
    assert made["namespace"] is ip.user_ns


def test_the_secret_file_deny_list_is_set_by_config_and_a_change_makes_a_new_session(
    ip: InteractiveShell,
) -> None:
    Path(".env").write_text("API=1\n")
    Path("data.sqlite").write_text("rows\n")
    factory = Factory()
    magics(ip).session_factory = factory
    ask(ip, "one")
    assert "secret_files" not in factory.made[0]  # unset: the built-in list, and old factories still work
    first = ip.run_line_magic("agent", "")
    ip.run_line_magic("config", "TwinnyMagics.secret_files = ['*.sqlite']")
    ask(ip, "two")
    second = ip.run_line_magic("agent", "")
    assert second is not first
    assert factory.made[1]["secret_files"] == ["*.sqlite"]
    reads = (ToolCall("read_file", {"path": ".env"}), ToolCall("read_file", {"path": "data.sqlite"}))
    own = Agent(server=ScriptedServer([Scripted("", reads), "ok"]), secret_files=second.settings.secret_files)
    first_read, second_read = own.run("read both").steps[0].results
    assert "API=1" in first_read.output
    assert "withheld" in second_read.output
    with pytest.raises(TypeError):
        Agent(server=ScriptedServer([]), secret_files="*.sqlite")  # type: ignore[arg-type]


def test_options_that_define_the_session_make_a_new_one_and_others_do_not(ip: InteractiveShell) -> None:
    factory = Factory()
    magics(ip).session_factory = factory
    ask(ip, "one")
    first = ip.run_line_magic("agent", "")
    ask(ip, "two", "--steps 3 --mode text --quiet")
    assert ip.run_line_magic("agent", "") is first
    assert first.settings.steps == 3
    ask(ip, "three")
    assert first.settings.steps == 12  # a line option is for its cell only
    ask(ip, "four", "--model other")
    assert ip.run_line_magic("agent", "") is not first
    assert [m["model"] for m in factory.made] == [None, "other"]


def test_temperature_goes_with_the_cells_requests_and_unset_is_the_servers_default(
    ip: InteractiveShell,
) -> None:
    factory = Factory()
    magics(ip).session_factory = factory
    ask(ip, "one", "--temperature 0.2")
    session = ip.run_line_magic("agent", "")
    server = session.server
    assert [r.temperature for r in server.requests] == [0.2]
    ask(ip, "two")
    assert server.requests[-1].temperature is None  # the line option was for its cell only
    ip.run_line_magic("config", "TwinnyMagics.temperature = 0.7")
    ask(ip, "three")
    assert server.requests[-1].temperature == 0.7
    assert ip.run_line_magic("agent", "") is session
    with pytest.raises(UsageError, match="from 0 to 2"):
        ip.run_cell_magic("agent", "--temperature 5", "four")
    assert len(server.requests) == 3


def test_an_adopted_sessions_temperature_is_its_own_between_cells(ip: InteractiveShell) -> None:
    server = ScriptedServer([ANSWER, ANSWER])
    session = adopt(ip, server, temperature=0.1)
    ask(ip, "one", "--temperature 0.9")
    ask(ip, "two")
    assert [r.temperature for r in server.requests] == [0.9, 0.1]
    assert session.settings.temperature == 0.1


def test_new_on_the_line_starts_a_new_session(ip: InteractiveShell) -> None:
    factory = Factory()
    magics(ip).session_factory = factory
    ask(ip, "one")
    ask(ip, "two", "--new")
    assert len(factory.made) == 2
    assert len(ip.run_line_magic("agent", "").replies) == 1


def test_new_on_an_adopted_session_keeps_it_and_starts_a_new_conversation(ip: InteractiveShell) -> None:
    session = adopt(ip, ScriptedServer([ANSWER, ANSWER]))
    ask(ip, "one")
    ask(ip, "two", "--new")
    assert ip.run_line_magic("agent", "") is session
    assert [r.question for r in session.replies] == ["two"]


def test_an_adopted_session_keeps_its_own_settings_between_cells(ip: InteractiveShell) -> None:
    session = adopt(ip, ScriptedServer([ANSWER, ANSWER]), steps=4, mode="text")
    ask(ip, "one", "--steps 2")
    assert session.settings.steps == 2
    ask(ip, "two")
    assert session.settings.steps == 4
    assert session.mode == "text"


def test_help_is_the_docstring_and_the_options(ip: InteractiveShell) -> None:
    info = ip.object_inspect("%%agent")
    assert info["found"]
    doc = info["docstring"]
    assert "Ask the coding agent" in doc
    assert "--server URL" in doc
    assert "--mode {auto,native,text}" in doc
    assert "%agent plan N" in doc
    assert "%config TwinnyMagics" in doc


def test_the_line_magic_returns_the_session(ip: InteractiveShell) -> None:
    session = adopt(ip, ScriptedServer([ANSWER]))
    s = ip.run_line_magic("agent", "")
    assert s is session
    assert s.plan is None
    ask(ip, "hi")
    assert s.plan == plan_context(8192, s.estimator.ratio)
    assert 2 <= s.estimator.ratio <= 6


def test_status_shows_server_model_window_plan_ratio_replies_and_pending_edits(ip: InteractiveShell) -> None:
    adopt(ip, ScriptedServer([EDIT, "I proposed x = 2."]))
    ask(ip, "Set x to 2.")
    with capture_output() as captured:
        ip.run_line_magic("agent", "status")
    out = captured.stdout
    for label in ("server", "model", "window", "plan", "ratio", "replies", "pending edits"):
        assert f"\n  {label}" in out
    assert "8,192" in out
    assert "1. a.py" in out


def test_status_in_a_notebook_is_a_table(ip: InteractiveShell) -> None:
    ip.run_line_magic("config", "TwinnyMagics.output = 'rich'")
    adopt(ip, ScriptedServer([]))
    with capture_output() as captured:
        ip.run_line_magic("agent", "status")
    [output] = captured.outputs
    assert "<table>" in output.data["text/html"]
    assert "not connected yet" not in output.data["text/plain"]  # an adopted server is there already


def test_reset_forgets_the_earlier_turns(ip: InteractiveShell) -> None:
    session = adopt(ip, ScriptedServer([ANSWER]))
    ask(ip, "one")
    with capture_output() as captured:
        ip.run_line_magic("agent", "reset")
    assert session.replies == []
    assert "1 earlier turn" in captured.stdout


def test_new_as_a_command_makes_the_next_cell_start_from_scratch(ip: InteractiveShell) -> None:
    factory = Factory()
    magics(ip).session_factory = factory
    ask(ip, "one")
    with capture_output():
        ip.run_line_magic("agent", "new")
    assert len(factory.made) == 2


def test_plan_n_shows_how_a_window_is_shared_out(ip: InteractiveShell) -> None:
    with capture_output() as captured:
        ip.run_line_magic("agent", "plan 4096")
    assert "limit           2,867" in captured.stdout
    ip.run_line_magic("config", "TwinnyMagics.output = 'rich'")
    with capture_output() as captured:
        ip.run_line_magic("agent", "plan 4,096")
    assert "<table>" in captured.outputs[0].data["text/html"]
    with pytest.raises(UsageError, match="plan N"):
        ip.run_line_magic("agent", "plan lots")


def test_apply_by_number_writes_that_edit_and_updates_its_view(ip: InteractiveShell) -> None:
    ip.run_line_magic("config", "TwinnyMagics.output = 'rich'")
    adopt(ip, ScriptedServer([EDIT, "Proposed."]))
    ask(ip, "Set x to 2.")
    with capture_output() as captured:
        ip.run_line_magic("agent", "apply 1")
    assert Path("a.py").read_text() == "x = 2\n"
    assert "Applied the edit to a.py." in captured.stdout
    assert any("— applied" in o.data["text/plain"] for o in captured.outputs if o.update)
    with capture_output() as captured:
        ip.run_line_magic("agent", "apply")
    assert "No edits are waiting" in captured.stdout


def test_a_panel_shows_an_edit_settled_by_percent_agent_apply(ip: InteractiveShell) -> None:
    ip.run_line_magic("config", "TwinnyMagics.output = 'rich'")
    adopt(ip, ScriptedServer([EDIT, "Proposed."]))
    ask(ip, "Set x to 2.")
    [panel] = magics(ip)._panels
    with capture_output() as captured:
        ip.run_line_magic("agent", "apply")
    [update] = [o for o in captured.outputs if o.update]
    assert "Proposed edit to a.py — applied\nApplied the edit to a.py." in update.data["text/plain"]
    assert panel.item.message == "Applied the edit to a.py."
    # Its button, pressed now, goes to the same place: the edit was applied once.
    with capture_output():
        assert panel.apply() == "Already applied."
    assert Path("a.py").read_text() == "x = 2\n"


def test_apply_settles_through_the_session_with_no_panel_shown(ip: InteractiveShell) -> None:
    session = adopt(ip, ScriptedServer([EDIT, "Proposed."]))
    session.run("Set x to 2.")  # not a cell: nothing was shown
    assert magics(ip)._panels == []
    with capture_output() as captured:
        ip.run_line_magic("agent", "apply 1")
    assert captured.stdout == "Applied the edit to a.py.\n"
    assert captured.outputs == []
    assert session.pending == []


def test_discard_drops_every_pending_edit(ip: InteractiveShell) -> None:
    adopt(ip, ScriptedServer([EDIT, "Proposed."]))
    ask(ip, "Set x to 2.")
    with pytest.raises(UsageError, match="No pending edit 3"):
        ip.run_line_magic("agent", "discard 3")
    with capture_output() as captured:
        ip.run_line_magic("agent", "discard")
    assert Path("a.py").read_text() == "x = 1\n"
    assert "Discarded the edit to a.py." in captured.stdout


def test_a_server_that_fails_is_a_clear_message_and_the_next_cell_works(ip: InteractiveShell) -> None:
    server = ScriptedServer([ServerError("The server said no (HTTP 500)."), ANSWER])
    adopt(ip, server)
    out = ask(ip, "one").stdout
    assert "✖ error: The server said no (HTTP 500)." in out
    assert "Failed" in out
    assert "Traceback" not in out
    assert ANSWER in ask(ip, "two").stdout


class UnreachableOnce(ScriptedServer):
    """A scripted server whose first window probe finds nothing there."""

    probes = 0

    async def context_window(self) -> int:
        self.probes += 1
        if self.probes == 1:
            raise ServerUnreachable("Nothing answered at http://127.0.0.1:9. Is the server running?")
        return self.window


def test_an_error_before_the_first_request_is_a_note_not_a_traceback(ip: InteractiveShell) -> None:
    adopt(ip, UnreachableOnce([ANSWER]))
    captured = ask(ip, "one")
    assert "✖ error: Nothing answered at http://127.0.0.1:9." in captured.stdout
    assert ANSWER in ask(ip, "two").stdout


def test_an_unreachable_real_server_is_a_clear_message(ip: InteractiveShell) -> None:
    out = ask(ip, "hi", "--server http://127.0.0.1:9 --kind llamacpp").stdout
    assert "✖ error: Nothing answered at http://127.0.0.1:9" in out


def test_the_stop_button_says_stopped_and_the_session_keeps_working(ip: InteractiveShell) -> None:
    slow = Scripted("word " * 200, delay=0.02)
    session = adopt(ip, ScriptedServer([slow, ANSWER]))
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    out = ask(ip, "Write a lot.").stdout
    timer.join()
    assert out.rstrip().splitlines()[-1].startswith("Stopped")
    assert "Traceback" not in out
    assert session.replies[-1].stopped == "stopped"
    assert ANSWER in ask(ip, "Again, short.").stdout


def test_quiet_prints_only_the_answer(ip: InteractiveShell) -> None:
    adopt(ip, ScriptedServer([READ, ANSWER]))
    out = ask(ip, "What does a.py do?", "--quiet").stdout
    assert out.strip() == ANSWER


def test_a_command_nobody_can_approve_is_not_run_and_the_model_is_told(ip: InteractiveShell) -> None:
    run = Scripted("", calls=(ToolCall("run_command", {"command": "touch ran.txt"}),))
    factory = Factory(replies=(run, "I could not run it."))
    magics(ip).session_factory = factory
    out = ask(ip, "Run it.").stdout
    assert factory.made[0]["approve"] is None  # a terminal: nobody can press a button
    assert "nobody can approve" in out
    assert not Path("ran.txt").exists()


def test_an_unknown_command_or_an_empty_cell_is_a_usage_error(ip: InteractiveShell) -> None:
    with pytest.raises(UsageError, match="not a command"):
        ip.run_line_magic("agent", "fly")
    with pytest.raises(UsageError, match="Write the question"):
        ip.run_cell_magic("agent", "", "  \n")
    with pytest.raises(UsageError, match="not an Agent"):
        ip.run_line_magic("agent", "use nothing_here")


def test_head_start_on_the_magic_line_picks_its_parts_for_that_cell(ip: InteractiveShell) -> None:
    """``--head-start off|map|evidence|on``: what the cell's first request gets before the model looks."""
    (Path.cwd() / "b.py").write_text("def setter():\n    x = 1\n")
    session = adopt(ip, ScriptedServer(["One.", "Two.", "Three.", "Four."]))
    question = "Where is the setter function, and what does it set?"
    ask(ip, question, "--head-start off")
    assert session.replies[-1].head_start is None
    ask(ip, question, "--head-start map")
    start = session.replies[-1].head_start
    assert start is not None
    assert "Workspace map" in start.output
    assert "ranked search" not in start.output
    ask(ip, question, "--head-start evidence")
    start = session.replies[-1].head_start
    assert start is not None
    assert "Workspace map" not in start.output
    assert "def setter" in start.output
    ask(ip, question, "--head-start on")
    start = session.replies[-1].head_start
    assert start is not None
    assert "Workspace map" in start.output
    assert "def setter" in start.output


def test_kernel_and_cells_options_apply_to_their_cell_and_config_sets_the_default(
    ip: InteractiveShell,
) -> None:
    """``--kernel ask|allow|off`` and ``--cells review|insert``; the session gets the shell's kernel tools."""
    session = adopt(ip, ScriptedServer(["One.", "Two.", "Three."]), shell=ip)
    ask(ip, "Hello there, what ran?", "--kernel off --cells insert")
    assert (session.settings.kernel, session.settings.cells) == ("off", "insert")
    tools = session._tools
    assert tools is not None
    names = [d["function"]["name"] for d in tools.definitions()]
    assert "run_python" not in names
    assert {"cell_history", "propose_cell"} <= set(names)
    ask(ip, "Hello again, what ran?", "--kernel allow")
    assert session.settings.kernel == "allow"
    assert "run_python" in [d["function"]["name"] for d in tools.definitions()]
    # A terminal shell: nobody can insert a cell.
    assert session.kernel is not None
    assert session.kernel.can_insert is False
