"""Sessions that outlive the kernel: save, load, export and replay, and every bad file refused whole;
autosave and the resume notice in the magic; the usage gauge.

Scripted models for most (no mocks), the real llama.cpp server for one round trip, and a real kernel
restarted between a save and a load.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output
from live_kernel import Kernel, python3_kernelspec, shown

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.display import ReplyView, reprs
from twinny_magics.display.items import StatusLine
from twinny_magics.errors import TwinnyError
from twinny_magics.events import Reply, RequestRecord
from twinny_magics.servers.base import Usage as ServerUsage
from twinny_magics.servers.scripted import Scripted, ScriptedServer
from twinny_magics.sessions import FORMAT, VERSION, SavedEdit, SessionFileError
from twinny_magics.sessions.files import FOLDER, MAX_SESSION_BYTES, read, write_atomic
from twinny_magics.settings import saved as saved_settings
from twinny_magics.tools import Workspace
from twinny_magics.usage import Usage, cost, money, reply_usage, usage_parts

READ = Scripted("Let me look.", calls=(ToolCall("read_file", {"path": "a.py"}),))
GREP = Scripted("", calls=(ToolCall("grep", {"pattern": "x"}),))
EDIT = Scripted("", calls=(ToolCall("edit_file", {"path": "a.py", "find": "x = 1", "replace": "x = 2"}),))
KEY = "sk-proj-live0123456789abcdefABCDEF"
HOSTILE = 'Done. <script>alert(1)</script> <img src=x onerror="alert(2)"> [link](javascript:alert(3))'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    return root


def scripted_session(root: Path, **options: Any) -> Agent:
    """Two turns on a scripted model: a read and an answer, then a grep and an answer."""
    server = ScriptedServer([READ, "It sets **x** to 1.", GREP, "x is set on line 1."])
    agent = Agent(server=server, workspace=root, **options)
    agent.run("What does a.py set?")
    agent.run("Where is x set?")
    return agent


def document(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    data.pop("saved_at")
    return data


# -- round trips ---------------------------------------------------------------------------------------


def test_a_scripted_session_saves_and_loads_back_to_the_same_document(project: Path) -> None:
    agent = scripted_session(project, steps=5, temperature=0.2, grammar="off")
    first = agent.save(project / "s.json")
    loaded = Agent.load(first, server=ScriptedServer([]), workspace=project)
    again = loaded.save(project / "again.json")
    assert document(first) == document(again)
    data = document(first)
    assert (data["format"], data["version"]) == (FORMAT, VERSION)
    assert data["settings"]["steps"] == 5
    assert data["settings"]["temperature"] == 0.2
    assert data["server"] == {
        "kind": "scripted",
        "model": "scripted",
        "base_url": None,
        "window": 8192,
        "embedded": False,
    }
    assert data["plan"]["window"] == 8192
    step = data["replies"][0]["steps"][0]
    assert step["calls"][0]["name"] == "read_file"
    assert step["results"][0]["output"].startswith("a.py")
    assert data["replies"][0]["requests"][0]["prompt_tokens"] > 0


def test_a_loaded_session_keeps_its_turns_notes_and_ratio_and_carries_them_into_the_next_reply(
    project: Path,
) -> None:
    agent = scripted_session(project)
    path = agent.save(project / "s.json")
    server = ScriptedServer(["Still x = 1."])
    loaded = Agent.load(path, server=server)
    assert [r.question for r in loaded.replies] == ["What does a.py set?", "Where is x set?"]
    assert loaded.note_entries == agent.note_entries
    assert loaded.estimator.ratio == agent.estimator.ratio
    assert loaded.estimator.history == agent.estimator.history
    assert loaded._history() == agent._history()
    assert saved_settings(loaded.settings) == saved_settings(agent.settings)
    reply = loaded.run("And now?")
    assert reply.text == "Still x = 1."
    sent = json.dumps(server.requests[0].messages)
    assert "What does a.py set?" in sent
    assert "x is set on line 1." in sent
    assert "session_notes" in sent
    assert "read_file" in sent


def test_options_given_to_load_override_the_saved_settings(project: Path) -> None:
    path = scripted_session(project, steps=5).save(project / "s.json")
    loaded = Agent.load(path, server=ScriptedServer([]), steps=3, edits="apply")
    assert (loaded.settings.steps, loaded.settings.edits) == (3, "apply")


def test_a_pending_edit_is_saved_as_data_and_never_applied_by_a_load(project: Path) -> None:
    agent = Agent(server=ScriptedServer([EDIT, "I proposed x = 2."]), workspace=project)
    agent.run("Set x to 2.")
    path = agent.save(project / "s.json")
    [saved] = json.loads(path.read_text())["replies"][0]["pending"]
    assert saved["path"] == "a.py"
    assert "+x = 2" in saved["diff"]
    assert saved["status"] == "pending"
    loaded = Agent.load(path, server=ScriptedServer([]), workspace=project)
    [edit] = loaded.replies[0].pending
    assert isinstance(edit, SavedEdit)
    assert edit.status == "expired"
    assert reprs.pending_edits(loaded) == []
    assert loaded.restored is not None
    assert "never applies" in loaded.restored.notices[0]
    assert (project / "a.py").read_text() == "x = 1\n"


def test_the_replay_server_gives_back_what_the_model_wrote(project: Path) -> None:
    agent = scripted_session(project)
    path = agent.save(project / "s.json")
    replayed = Agent(server=Agent.replay_server(path), workspace=project, mode=agent.mode)  # type: ignore[arg-type]
    for reply in agent.replies:
        again = replayed.run(reply.question)
        assert again.text == reply.text
        assert [c for s in again.steps for c in s.calls] == [c for s in reply.steps for c in s.calls]


# -- what is never saved -------------------------------------------------------------------------------


def test_the_api_key_and_secret_shaped_text_are_never_saved(project: Path) -> None:
    (project / "config.py").write_text(f'OPENAI = "{KEY}"\n')
    server = ScriptedServer(
        [Scripted("", calls=(ToolCall("read_file", {"path": "config.py"}),)), f"The key is {KEY}."]
    )
    agent = Agent(server=server, workspace=project, api_key="my-own-key-1234", grammar="off")
    agent.run(f"Is my-own-key-1234 the same as {KEY}?")
    for path in (
        agent.save(project / "s.json"),
        agent.export(project / "t.md"),
        agent.export(project / "t.html"),
    ):
        text = path.read_text()
        assert "my-own-key-1234" not in text
        assert KEY not in text
        assert "[secret hidden]" in text
    assert "api_key" not in json.loads((project / "s.json").read_text())["settings"]


# -- where sessions go ---------------------------------------------------------------------------------


def test_the_sessions_folder_is_invisible_to_the_workspace_tools(project: Path) -> None:
    path = scripted_session(project).save(project / FOLDER / "one.json")
    (project / FOLDER / "notes.txt").write_text("marker-7731 x = 1\n")
    ws = Workspace(project)

    def run(name: str, **arguments: Any) -> str:
        return asyncio.run(ws.run(ToolCall(name, dict(arguments)))).text

    assert FOLDER not in run("list_dir")
    assert FOLDER not in run("list_dir", depth=3)
    assert FOLDER not in run("find_files", pattern="*.json")
    assert "one.json" not in run("find_files", pattern="*")
    assert run("grep", pattern="marker-7731").startswith("No matches")
    assert FOLDER not in run("grep", pattern="x")
    refused = run("read_file", path=f"{FOLDER}/notes.txt")
    assert "hidden from the tools" in refused
    assert "marker" not in refused
    assert "hidden from the tools" in run("read_file", path=str(path))


def test_a_session_whose_workspace_moved_loads_where_it_is_told_and_says_so(
    tmp_path: Path, project: Path
) -> None:
    path = scripted_session(project).save(project / FOLDER / "s.json")
    moved = tmp_path / "elsewhere"
    shutil.move(project, moved)
    loaded = Agent.load(moved / FOLDER / "s.json", server=ScriptedServer([]), workspace=moved)
    assert loaded.workspace == moved
    assert loaded.restored is not None
    [notice] = loaded.restored.notices
    assert str(project) in notice
    assert str(moved) in notice
    assert "workspace-relative" in notice
    assert not path.exists()


def test_a_session_loaded_in_place_has_nothing_to_say(project: Path) -> None:
    path = scripted_session(project).save(project / FOLDER / "s.json")
    loaded = Agent.load(path, server=ScriptedServer([]), workspace=project)
    assert loaded.workspace == project
    assert loaded.restored is not None
    assert loaded.restored.notices == []


# -- bad files -----------------------------------------------------------------------------------------


@pytest.fixture
def saved(project: Path) -> Path:
    return scripted_session(project).save(project / "s.json")


def refused(path: Path) -> str:
    with pytest.raises(SessionFileError) as caught:
        Agent.load(path, server=ScriptedServer([]))
    assert isinstance(caught.value, TwinnyError)
    assert isinstance(caught.value, ValueError)
    return str(caught.value)


def test_a_file_that_is_not_a_session_is_refused_with_what_to_do(tmp_path: Path) -> None:
    notebook = tmp_path / "n.ipynb"
    notebook.write_text(json.dumps({"cells": [], "nbformat": 4}))
    assert "not a saved twinny_magics session" in refused(notebook)
    assert "%agent save" in refused(notebook)
    text = tmp_path / "t.json"
    text.write_text("[1, 2, 3]")
    assert "not a saved twinny_magics session" in refused(text)
    binary = tmp_path / "b.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in refused(binary)
    assert "No session file" in refused(tmp_path / "missing.json")
    assert "is a folder" in refused(tmp_path)


def test_a_session_from_a_newer_version_says_to_upgrade(saved: Path) -> None:
    data = json.loads(saved.read_text())
    data["version"] = VERSION + 1
    saved.write_text(json.dumps(data))
    message = refused(saved)
    assert "newer twinny_magics" in message
    assert "upgrade" in message


def test_a_session_saved_before_the_plan_had_a_deep_target_loads(saved: Path) -> None:
    # The context_budget notebook's session is such a file: its plan has no deep_target.
    data = json.loads(saved.read_text())
    assert data["plan"] is not None
    del data["plan"]["deep_target"]
    saved.write_text(json.dumps(data))
    session = read(saved)
    assert session.plan is not None
    assert session.plan.deep_target == 0
    assert session.plan.target == data["plan"]["target"]
    assert Agent.load(saved, server=ScriptedServer([])).replies


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.99])
def test_a_cut_file_is_refused_and_left_as_it_is(saved: Path, keep: float) -> None:
    whole = saved.read_bytes()
    cut = whole[: int(len(whole) * keep)]
    saved.write_bytes(cut)
    message = refused(saved)
    assert "not whole JSON" in message
    assert "line" in message
    assert saved.read_bytes() == cut


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["replies"][0]["steps"][0].update(number="one"), "replies[0].steps[0].number"),
        (lambda d: d["replies"][1].update(steps={}), "replies[1].steps"),
        (lambda d: d["settings"].update(mode="sometimes"), "settings.mode"),
        (lambda d: d["estimator"].pop("ratio"), "estimator.ratio"),
        (lambda d: d["replies"][0]["requests"][0].update(mode=None), "replies[0].requests[0].mode"),
        (lambda d: d["notes"][0].update(call=[]), "notes[0].call"),
        (lambda d: d["replies"].append("a string"), "replies[2]"),
    ],
)
def test_an_edited_field_is_named_in_the_error(saved: Path, edit: Any, field: str) -> None:
    data = json.loads(saved.read_text())
    edit(data)
    saved.write_text(json.dumps(data))
    message = refused(saved)
    assert field in message
    assert "Nothing was loaded" in message


def test_nan_is_not_a_number_a_session_may_hold(saved: Path) -> None:
    saved.write_text(saved.read_text().replace('"ratio":', '"ratio":NaN,"was":', 1))
    assert "NaN" in refused(saved)


def test_a_file_past_the_size_limit_is_refused_without_reading_it(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as file:  # sparse: no disk is used
        file.truncate(MAX_SESSION_BYTES + 1)
    assert "more than a session can be" in refused(huge)


def test_a_50_mb_session_saves_and_loads(project: Path) -> None:
    agent = scripted_session(project)
    chunk = "".join(f"line {i}: value = {i * 7} # a comment about it\n" for i in range(20_000))  # ~0.8 MB
    last = agent.replies[-1].steps[0]
    result = last.results[0]
    last.results = [replace(result, original=chunk) for _ in range(64)]
    path = agent.save(project / "big.json")
    assert path.stat().st_size > 50_000_000
    loaded = Agent.load(path, server=ScriptedServer([]))
    assert loaded.replies[-1].steps[0].results[-1].full_text == chunk


# -- saving is all or nothing --------------------------------------------------------------------------


def test_a_write_that_fails_midway_leaves_the_previous_file_whole(saved: Path) -> None:
    before = saved.read_bytes()

    def chunks() -> Iterator[str]:
        yield '{"format": "twinny_magics.session", "replies": ['
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_atomic(saved, chunks())
    assert saved.read_bytes() == before
    assert sorted(p.name for p in saved.parent.iterdir()) == ["a.py", "s.json"]


def test_a_session_that_cannot_be_written_keeps_the_previous_file(project: Path, saved: Path) -> None:
    before = saved.read_bytes()
    agent = scripted_session(project)
    agent.replies[-1].steps[0].calls.append(ToolCall("grep", {"pattern": object()}))  # not JSON
    with pytest.raises(SessionFileError, match="unchanged"):
        agent.save(saved)
    assert saved.read_bytes() == before
    assert Agent.load(saved, server=ScriptedServer([])).replies


def test_a_full_disk_midway_through_a_real_save_leaves_the_previous_file_whole(saved: Path) -> None:
    """The file-size limit of a real process stands in for a full disk: the write fails part-way."""
    before = saved.read_bytes()
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        from pathlib import Path
        from twinny_magics.agent import Agent
        from twinny_magics.servers.scripted import ScriptedServer
        from twinny_magics.errors import TwinnyError
        agent = Agent.load({str(saved)!r}, server=ScriptedServer([]))
        for reply in agent.replies:
            reply.text = "x" * 200_000
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
        try:
            agent.save({str(saved)!r})
        except TwinnyError as error:
            print("refused:", error)
            sys.exit(0)
        sys.exit("saved past the limit")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout
    assert "unchanged" in done.stdout
    assert saved.read_bytes() == before
    assert [p.name for p in saved.parent.iterdir() if p.name.startswith(".")] == []


# -- export --------------------------------------------------------------------------------------------


def test_export_writes_a_markdown_transcript_with_calls_results_answers_and_tokens(project: Path) -> None:
    agent = scripted_session(project)
    text = agent.export(project / "t.md").read_text()
    assert "## 1. What does a.py set?" in text
    assert "## 2. Where is x set?" in text
    assert "**read_file**" in text
    assert "1: x = 1" in text
    assert "It sets **x** to 1." in text
    request = agent.replies[0].requests[0]
    assert f"| {request.estimated_tokens:,} | {request.prompt_tokens:,} |" in text


class Tags(HTMLParser):
    """Every element of a page with its attributes, as a browser would parse them."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_an_exported_hostile_answer_stays_inert(project: Path) -> None:
    (project / "evil.md").write_text("<script>alert('file')</script>\n")
    server = ScriptedServer([Scripted("", calls=(ToolCall("read_file", {"path": "evil.md"}),)), HOSTILE])
    agent = Agent(server=server, workspace=project)
    agent.run("<b>Hi</b> <script>alert(0)</script>")
    page = agent.export(project / "t.html").read_text()
    tags = Tags(page).tags
    names = {tag for tag, _ in tags}
    assert not names & {"script", "img", "iframe", "object", "embed", "form", "base", "link"}
    for tag, attrs in tags:
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        assert not (attrs.get("href") or "").lower().startswith("javascript"), (tag, attrs)
        assert "src" not in attrs, (tag, attrs)
    assert "&lt;script&gt;alert(1)" in page  # shown, as text
    [policy] = [attrs for tag, attrs in tags if attrs.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in (policy.get("content") or "")
    markdown = agent.export(project / "t.md").read_text()
    # Outside code fences (where a viewer shows text as it is) no raw HTML is left to render.
    prose = re.sub(r"^(`{3,})[^\n]*\n.*?^\1$", "", markdown, flags=re.DOTALL | re.MULTILINE)
    assert "<" not in prose
    assert "&lt;script>alert(1)" in prose
    assert "&lt;b>Hi&lt;/b>" in prose


def test_export_refuses_a_name_it_cannot_write(project: Path) -> None:
    agent = scripted_session(project)
    with pytest.raises(SessionFileError, match=r"\.md.*\.html"):
        agent.export(project / "t.pdf")


# -- the magic -----------------------------------------------------------------------------------------


@pytest.fixture
def ip(project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    shell = start_ipython() or InteractiveShell.instance()
    shell.config.pop("TwinnyMagics", None)
    monkeypatch.chdir(project)
    shell.extension_manager.load_extension("twinny_magics")
    yield shell
    shell.extension_manager.unload_extension("twinny_magics")
    shell.config.pop("TwinnyMagics", None)
    shell.user_ns.pop("s", None)


def line(ip: InteractiveShell, text: str) -> str:
    with capture_output() as captured:
        ip.run_line_magic("agent", text)
    return captured.stdout


def test_the_magic_saves_to_the_hidden_folder_loads_and_exports(ip: InteractiveShell, project: Path) -> None:
    ip.user_ns["s"] = Agent(server=ScriptedServer([READ, "It sets x to 1."]), workspace=project)
    line(ip, "use s")
    with capture_output():
        ip.run_cell_magic("agent", "", "What does a.py set?")
    out = line(ip, "save")
    [path] = (project / FOLDER).iterdir()
    assert str(path) in out
    assert "%agent load" in out
    assert "no API key" in out
    magics = ip.magics_manager.registry["TwinnyMagics"]
    magics.session_factory = lambda **options: Agent(server=ScriptedServer(["Yes, 1."]), **options)
    out = line(ip, f"load {path}")
    assert "1 earlier reply" in out
    session = ip.run_line_magic("agent", "")
    assert session is not ip.user_ns["s"]
    assert session.replies[0].question == "What does a.py set?"
    with capture_output():
        ip.run_cell_magic("agent", "", "Still 1?")
    assert [r.text for r in session.replies] == ["It sets x to 1.", "Yes, 1."]
    assert "written to" in line(ip, "export t.md")
    assert (project / "t.md").exists()


def test_a_bad_load_in_the_magic_is_a_usage_error_and_the_session_stays(
    ip: InteractiveShell, project: Path
) -> None:
    ip.user_ns["s"] = Agent(server=ScriptedServer(["Hello."]), workspace=project)
    line(ip, "use s")
    (project / "bad.json").write_text('{"format": "twinny_magics.session", "version": 1, "replies": [')
    with pytest.raises(UsageError, match="not whole JSON"):
        ip.run_line_magic("agent", "load bad.json")
    assert ip.run_line_magic("agent", "") is ip.user_ns["s"]
    with pytest.raises(UsageError, match="load PATH"):
        ip.run_line_magic("agent", "load")
    with pytest.raises(UsageError, match=r"save \[PATH\], load PATH \[--settings\], export PATH"):
        ip.run_line_magic("agent", "frobnicate")


# -- a real server -------------------------------------------------------------------------------------


@pytest.mark.server
def test_a_real_llama_cpp_session_round_trips_and_continues(llama_server: Any, project: Path) -> None:
    options: dict[str, Any] = {"steps": 2, "workspace_map": False, "evidence": False, "temperature": 0.0}
    agent = Agent(
        llama_server.base_url, model=llama_server.model, kind="llamacpp", workspace=project, **options
    )
    agent.settings = replace(agent.settings, api_key="never-saved-key-9876")
    agent.run("Which files are here?")
    assert agent.replies[0].requests[0].prompt_tokens
    path = agent.save(project / FOLDER / "real.json")
    data = json.loads(path.read_text())
    assert data["server"]["base_url"] == llama_server.base_url
    assert data["server"]["kind"] == "llamacpp"
    assert data["server"]["window"] == llama_server.n_ctx
    assert "never-saved-key-9876" not in path.read_text()
    # The saved address is shown, never used: the caller names the server (here, the same one).
    loaded = Agent.load(
        path, base_url=llama_server.base_url, model=llama_server.model, kind="llamacpp", workspace=project
    )
    assert loaded.estimator.ratio == agent.estimator.ratio
    again = loaded.save(project / FOLDER / "again.json")
    first, second = document(path), document(again)
    first["server"]["window"] = second["server"]["window"] = None  # asked again only at the next reply
    first["plan"] = second["plan"] = None
    assert first == second
    loaded.run("And which one is Python?")
    assert len(loaded.replies) == 2
    assert loaded.replies[1].requests[0].prompt_tokens
    assert loaded.server is not None
    assert loaded.server.kind == "llamacpp"


# -- a real kernel, restarted between the save and the load ---------------------------------------------


@pytest.mark.notebook
def test_a_session_saved_in_one_kernel_continues_in_the_next(tmp_path: Path, project: Path) -> None:
    with python3_kernelspec(tmp_path / "jupyter"):
        first = Kernel(project)
        try:
            first.run(
                "%load_ext twinny_magics\n"
                "from pathlib import Path\n"
                "from twinny_magics import Agent\n"
                "from twinny_magics.servers.scripted import Scripted, ScriptedServer\n"
                "from twinny_magics.conversation import ToolCall\n"
                "_s = Agent(server=ScriptedServer([Scripted('', (ToolCall('read_file', {'path': 'a.py'}),)),"
                " 'It sets x to 1.']), workspace=Path.cwd(), shell=get_ipython())\n"
                "%agent use _s"
            )
            first.run("%%agent\nWhat does a.py set?")
            saved = shown(first.run("%agent save"))
            assert "Session saved to" in saved, saved
        finally:
            first.stop()
        [path] = (project / FOLDER).iterdir()
        second = Kernel(project)
        try:
            second.run(
                "%load_ext twinny_magics\n"
                "from twinny_magics import Agent\n"
                "from twinny_magics.servers.scripted import ScriptedServer\n"
                "_server = ScriptedServer(['Yes: x = 1, as before.'])\n"
                "get_ipython().magics_manager.registry['TwinnyMagics'].session_factory = "
                "lambda **o: Agent(server=_server, **o)"
            )
            loaded = shown(second.run(f"%agent load {path}"))
            assert "1 earlier reply" in loaded, loaded
            assert "Error" not in loaded, loaded
            second.run("%%agent\nIs it still 1?")
            questions = second.value(
                "[r.question for r in get_ipython().run_line_magic('agent', '').replies]"
            )
            assert questions == ["What does a.py set?", "Is it still 1?"]
            sent = second.value("__import__('json').dumps(_server.requests[0].messages)")
            assert "What does a.py set?" in sent
            assert "It sets x to 1." in sent
            assert "read_file" in sent
        finally:
            second.stop()
    assert os.path.exists(path)


# -- autosave and the resume notice --------------------------------------------------------------------


def scripted_factory(*replies: str) -> Any:
    """A session factory for the magic: each session it makes answers from its own copy of ``replies``."""
    return lambda **options: Agent(server=ScriptedServer(list(replies)), **options)


def cell(ip: InteractiveShell, question: str, options: str = "") -> str:
    with capture_output() as captured:
        ip.run_cell_magic("agent", options, question)
    return captured.stdout


def autosaves(project: Path) -> list[Path]:
    folder = project / FOLDER
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def magic_with(ip: InteractiveShell, *replies: str) -> Any:
    magics = ip.magics_manager.registry["TwinnyMagics"]
    magics.output = "text"
    magics.session_factory = scripted_factory(*replies)
    return magics


def test_a_session_of_the_magic_saves_itself_after_every_reply(ip: InteractiveShell, project: Path) -> None:
    magic_with(ip, "It sets x to 1.", "Still 1.")
    cell(ip, "What does a.py set?")
    [path] = autosaves(project)
    assert json.loads(path.read_text())["replies"][0]["text"] == "It sets x to 1."
    cell(ip, "And now?")
    assert autosaves(project) == [path]  # the same file, rewritten whole
    assert [r["text"] for r in json.loads(path.read_text())["replies"]] == ["It sets x to 1.", "Still 1."]
    assert not [p for p in (project / FOLDER).iterdir() if p.name.endswith(".part")]


def test_autosave_off_writes_nothing(ip: InteractiveShell, project: Path) -> None:
    magics = magic_with(ip, "One.", "Two.")
    cell(ip, "First?", "--autosave off")
    assert autosaves(project) == []
    magics.autosave = False  # %config TwinnyMagics.autosave = False
    cell(ip, "Second?")
    assert autosaves(project) == []
    cell(ip, "Third?", "--autosave on")  # the line overrides the default for its cell
    assert len(autosaves(project)) == 1


def test_an_adopted_session_is_not_autosaved(ip: InteractiveShell, project: Path) -> None:
    ip.user_ns["s"] = Agent(server=ScriptedServer(["Hello."]), workspace=project)
    line(ip, "use s")
    cell(ip, "Hi?")
    assert autosaves(project) == []


def test_a_new_kernel_offers_the_last_session_once_and_its_command_resumes_it(
    ip: InteractiveShell, project: Path
) -> None:
    magic_with(ip, "It sets x to 1.")
    first = cell(ip, "What does a.py set?")
    assert "%agent load" not in first  # nothing earlier to resume
    [saved] = autosaves(project)
    # A restarted kernel: the extension loaded afresh, a new magic over the same folder.
    ip.extension_manager.unload_extension("twinny_magics")
    ip.extension_manager.load_extension("twinny_magics")
    magic_with(ip, "Hello.", "Hello again.")
    out = cell(ip, "Something else?")
    command = f"%agent load {FOLDER}/{saved.name}"
    assert command in out
    assert "resume" in out
    assert command not in cell(ip, "And again?")  # once a kernel
    magic_with(ip, "Yes, 1.")
    assert "1 earlier reply" in line(ip, command.removeprefix("%agent "))
    cell(ip, "Still 1?")
    # A session loaded from the folder goes on in its own file.
    assert [r["text"] for r in json.loads(saved.read_text())["replies"]] == ["It sets x to 1.", "Yes, 1."]


def test_an_autosave_that_cannot_be_written_is_a_warning_and_the_reply_still_answers(
    ip: InteractiveShell, project: Path
) -> None:
    (project / FOLDER).write_text("not a folder")  # unwritable for any user, root included
    magic_with(ip, "It sets x to 1.", "Still 1.")
    out = cell(ip, "What does a.py set?")
    assert "It sets x to 1." in out
    [warning] = [text for text in out.splitlines() if "Autosave failed" in text]
    assert warning.startswith("⚠ warning:")
    assert "Still 1." in cell(ip, "And now?")  # the session goes on
    assert (project / FOLDER).read_text() == "not a folder"


# -- the usage gauge -----------------------------------------------------------------------------------


class CachingServer(ScriptedServer):
    """A scripted server that also reports a prompt cache: each prompt's first ``cached`` tokens reused."""

    def __init__(self, replies: list[Any], cached: int) -> None:
        super().__init__(replies)
        self.cached = cached

    async def stream(self, request: Any) -> Any:
        async for event in super().stream(request):
            if isinstance(event, ServerUsage) and event.prompt_tokens is not None:
                yield replace(event, cached_tokens=min(self.cached, event.prompt_tokens))
            else:
                yield event

    async def count_prompt_tokens(self, request: Any) -> int | None:
        """A whole request's count, as a real server that renders its template says it."""
        return self.prompt_tokens(request)


def test_the_gauge_sums_fresh_cached_and_generated_tokens_per_reply_and_session(project: Path) -> None:
    server = CachingServer([READ, "It sets x to 1.", "Still 1."], cached=100)
    agent = Agent(server=server, workspace=project, price=(2.0, 8.0, 0.5))
    first = agent.run("What does a.py set?")
    agent.run("And now?")
    counted = [(r.prompt_tokens or 0, r.completion_tokens or 0) for x in agent.replies for r in x.requests]
    assert len(counted) == 3
    one = reply_usage(first)
    assert (one.cached, one.requests, one.uncounted) == (200, 2, 0)
    assert one.fresh == sum(p for p, _ in counted[:2]) - 200
    assert one.generated == sum(c for _, c in counted[:2]) > 0
    total = agent.usage
    assert (total.cached, total.requests) == (300, 3)
    assert total.prompt == sum(p for p, _ in counted)
    assert total.generated == sum(c for _, c in counted)
    assert total.seconds == pytest.approx(sum(r.seconds or 0 for r in agent.replies))
    assert total.seconds > 0
    assert cost(total, agent.price) == pytest.approx(
        (total.fresh * 2.0 + 300 * 0.5 + total.generated * 8.0) / 1e6
    )
    assert cost(total, (1.0, 1.0)) == pytest.approx((total.prompt + total.generated) / 1e6)  # cached: input


def test_a_request_the_server_did_not_count_is_apart_and_a_cost_says_at_least() -> None:
    counted = RequestRecord(1, "native", 8192, 7000, 5000, 10, 30, prompt_tokens=1000, completion_tokens=50)
    counted.cached_tokens = 2000  # more than the prompt: believed up to the prompt
    silent = RequestRecord(2, "native", 8192, 7000, 5000, 10, 30)
    usage = reply_usage(Reply("q", requests=[counted, silent], seconds=1.5))
    assert (usage.fresh, usage.cached, usage.generated) == (0, 1000, 50)
    assert (usage.uncounted, usage.seconds) == (1, 1.5)
    assert usage_parts(usage, (1.0, 2.0)) == [
        "0 prompt tokens afresh",
        "1,000 from the cache",
        "50 generated",
        "1 request not counted",
        "cost 0.0011 (at least)",
    ]
    counted.cached_tokens = None  # a server that never says what it cached: fresh and cached not told apart
    assert usage_parts(reply_usage(Reply("q", requests=[counted])))[0] == (
        "1,000 prompt tokens (the server reports no cache)"
    )


@pytest.mark.parametrize("price", [(1.0,), (1.0, 2.0, 3.0, 4.0), (-1.0, 2.0), ("1", 2.0), (True, 1.0)])
def test_a_price_that_is_not_two_or_three_amounts_is_refused(project: Path, price: Any) -> None:
    with pytest.raises(ValueError, match="per million tokens"):
        Agent(server=ScriptedServer([]), workspace=project, price=price)
    agent = Agent(server=ScriptedServer([]), workspace=project)
    with pytest.raises(ValueError, match="per million tokens"):
        agent.price = price


def test_the_price_and_each_replys_time_are_saved_and_loaded_back(project: Path) -> None:
    agent = scripted_session(project, price=(0.15, 0.6))
    loaded = Agent.load(agent.save(project / "s.json"), server=ScriptedServer([]))
    assert loaded.price == (0.15, 0.6)
    assert [r.seconds for r in loaded.replies] == [r.seconds for r in agent.replies]
    assert loaded.usage == agent.usage


def test_the_final_status_line_and_the_session_repr_show_the_gauge_escaped(project: Path) -> None:
    agent = Agent(server=CachingServer([READ, "It sets x to 1."], cached=40), workspace=project)
    view = ReplyView("q", style="text", write=lambda text: None, price=(1.0, 4.0))
    agent.run("What does a.py set?", on_event=view.handle)
    usage = reply_usage(agent.replies[0])
    status = view.status.text()
    gauge = f"{usage.fresh:,} prompt tokens afresh · 80 from the cache · {usage.generated:,} generated"
    assert gauge in status
    assert f"cost {money(cost(usage, (1.0, 4.0)) or 0)}" in status
    assert status.endswith(" s")
    text = reprs.agent_text(agent)
    assert "80 from the cache" in text
    assert "2 requests" in text
    assert "cost" not in text
    agent.price = (1.0, 4.0)
    assert "cost " in reprs.agent_text(agent)
    # The display escapes whatever it is given (a hand-made Usage included): no markup gets through.
    view.status.outcome = "<b>done</b>"
    assert "<b>done" not in view.status.html()
    assert "&lt;b&gt;done" in view.status.html()
    assert "80 from the cache" in reprs.agent_html(agent)


def test_a_status_line_without_server_counts_shows_no_gauge() -> None:
    line = StatusLine(12, outcome="answered", usage=Usage(requests=2, uncounted=2))
    assert "afresh" not in line.text()
    assert "afresh" not in StatusLine(12).text()  # not while the reply runs


def test_a_replay_counted_by_a_real_server_takes_its_counts_and_the_saved_words(project: Path) -> None:
    path = scripted_session(project).save(project / "s.json")
    counter = CachingServer([""] * 4, cached=7)
    replay = Agent.replay_server(path, counted_by=counter)
    replayed = Agent(server=replay, workspace=project)  # type: ignore[arg-type]
    assert replayed.run("What does a.py set?").text == "It sets **x** to 1."
    assert len(counter.requests) == 2
    assert [r.cached_tokens for r in replayed.replies[0].requests] == [7, 7]
