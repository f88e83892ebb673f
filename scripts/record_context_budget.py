"""Record the session ``notebooks/context_budget.ipynb`` replays: the model's side of an eight-call
investigation, saved as ``notebooks/sessions/context_budget.json``.

    .venv/bin/python scripts/record_context_budget.py

SmolLM2 is far too small to carry out the investigation, so the model's words are written here, once,
and the session is recorded on the scripted model over the notebook's own project (the code cells
tagged ``project``, run from the notebook so the two cannot drift). The notebook then replays the saved
file with ``Agent.replay_server(path, counted_by=...)`` on the real embedded server, which counts every
request. Run this again after changing the replies, the project or the session format.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from twinny_magics import Agent
from twinny_magics.servers.scripted import Scripted, ScriptedServer

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "context_budget.ipynb"
SESSION = ROOT / "notebooks" / "sessions" / "context_budget.json"
QUESTION = "Why does checkout time out under load?"


def says(text: str, tool: str, **arguments: Any) -> Scripted:
    """A text-mode step: the model's words, then its call as a fenced ``tool`` block."""
    call = json.dumps({"name": tool, "arguments": arguments})
    return Scripted(f"{text}\n```tool\n{call}\n```".lstrip())


#: Reading the log whole is the mistake a small model makes first; the edit settles the reply, so the
#: last entry is the answer, written with no tools left.
REPLIES: list[Scripted | str] = [
    says("Let me look around first.", "list_dir"),
    says("The log should show the timeouts.", "read_file", path="logs/app.log"),
    says("", "grep", pattern="ERROR", path="logs"),
    says("", "read_file", path="src/db.py"),
    says("", "read_file", path="config.toml"),
    says("", "read_file", path="src/checkout.py"),
    says("", "read_file", path="src/retry.py"),
    says(
        "Five connections are too few.",
        "edit_file",
        path="config.toml",
        find="pool_size = 5",
        replace="pool_size = 20",
    ),
    "Checkout holds a database connection while it calls the payment API, so under load the five "
    "connections run out and `Pool.acquire` gives up after 5 s (the `pool timeout` errors in "
    "`logs/app.log`); `retry` then tries again at once, which adds to the queue. I proposed raising "
    "`pool_size` to **20** in `config.toml`. Still to do: release the connection before `charge()`, and "
    "pause between retries.",
]


def project() -> tuple[Path, Any]:
    """The notebook's project, made by its cells tagged ``project``: its folder, and what removes it."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    namespace: dict[str, Any] = {}
    for cell in cells:
        if cell["cell_type"] == "code" and "project" in cell.get("metadata", {}).get("tags", []):
            exec("".join(cell["source"]), namespace)  # the repo's own notebook: code it trusts
    return namespace["work"], namespace["folder"]


def main() -> int:
    """Record the session and save it; print what was saved."""
    work, folder = project()
    try:
        # Text mode, as the embedded server runs SmolLM2; the window is roomy, since the steps are the
        # same whatever was trimmed (the replay's server decides the trims it shows).
        agent = Agent(server=ScriptedServer(list(REPLIES), window=32768), workspace=work, mode="text")
        reply = agent.run(QUESTION)
        steps = len(reply.steps)
        if steps != len(REPLIES) or reply.stopped != "settled":
            print(f"expected {len(REPLIES)} steps settled by the edit, got {steps} ({reply.stopped})")
            return 1
        SESSION.parent.mkdir(parents=True, exist_ok=True)
        path = agent.save(SESSION)
    finally:
        folder.cleanup()
    print(f"{path.relative_to(ROOT)}: {steps} steps, {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
