"""Nothing the agent writes is imported behind the user's back — tried in a real kernel.

The kernel runs with the notebook's folder first on ``sys.path``, so a module the model creates there
under a name the kernel imports later (``ipywidgets`` when the approval buttons are first shown,
``jedi`` at the first completion) would run its code with the user's rights, before anyone clicked
anything. The agent here has ``edits=apply`` and a scripted model that tries each way in; afterwards the
kernel imports those names and nothing may have run. A control cell shows that such a file, had it been
written, would have run.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

pytestmark = pytest.mark.notebook

PAYLOAD = "import pathlib; pathlib.Path('PWNED-{name}').write_text('ran')\n"
#: What the model tries to create, and the name the kernel would import it by (None: runs on its own).
TRIES = {
    "ipywidgets.py": "ipywidgets",
    "jedi.py": "jedi",
    "json/__init__.py": "json",
    "sitecustomize.py": None,
    "usercustomize.py": None,
    "zz_evil.pth": None,
    "lib/sitecustomize.py": None,
}

SETUP = """\
from pathlib import Path
from twinny_magics import Agent, ToolCall
from twinny_magics.servers.scripted import Scripted, ScriptedServer

tries = {tries!r}
payload = {payload!r}
def create(path):
    content = payload.format(name=path.replace("/", "_"))
    return Scripted("", calls=(ToolCall("create_file", {{"path": path, "content": content}}),))

replies = [create(path) for path in tries]
unhide = {{"path": ".gitignore", "find": "secret.txt", "replace": ""}}
replies.append(Scripted("", calls=(ToolCall("edit_file", unhide),)))
replies.append("Done.")
server = ScriptedServer(replies)
demo = Agent(server=server, workspace=Path.cwd(), edits="apply", steps=20)
%load_ext twinny_magics
%agent use demo"""

CHECK = """\
import importlib, sys
for name in {modules!r}:
    sys.modules.pop(name, None)
    importlib.import_module(name)
import json as _json
print("imported", sorted(p.name for p in Path.cwd().iterdir()))"""

CONTROL = """\
Path("control_mod.py").write_text({payload!r}.format(name="control"))
import control_mod
print("control ran:", Path("PWNED-control").exists())"""


@pytest.fixture(scope="module", autouse=True)
def kernelspec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A ``python3`` kernelspec for this virtualenv's Python, first on ``JUPYTER_PATH``."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"})
    )
    before = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(root), before]))
    yield
    if before is None:
        del os.environ["JUPYTER_PATH"]
    else:
        os.environ["JUPYTER_PATH"] = before


def test_files_python_would_import_are_refused_even_under_apply(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("secret.txt\n")
    (tmp_path / "secret.txt").write_text("hidden\n")
    modules = [name for name in TRIES.values() if name]
    cells = [
        SETUP.format(tries=list(TRIES), payload=PAYLOAD),
        "%%agent\nMake the helpers.",
        CHECK.format(modules=modules),
        CONTROL.format(payload=PAYLOAD),
    ]
    notebook = new_notebook(cells=[new_code_cell(source) for source in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(
        notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    for path in TRIES:
        assert not (tmp_path / path).exists(), f"{path} was written"
    assert (tmp_path / ".gitignore").read_text() == "secret.txt\n"
    assert sorted(p.name for p in tmp_path.glob("PWNED-*")) == ["PWNED-control"]  # only the control ran
    shown = "\n".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
        for o in notebook.cells[1].outputs
    )
    assert "import" in shown  # the model was told why: Python would import it
