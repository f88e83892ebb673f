"""The session's settings: one frozen value that ``Agent``, ``configure``, a save and a load all read."""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import twinny_magics
from twinny_magics.agent import Agent
from twinny_magics.engine.settings import LoopSettings
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.sessions.document import GUARDED, TAKEN
from twinny_magics.settings import Settings, from_options, loaded, saved, session_scoped

PACKAGE = Path(twinny_magics.__file__).parent
#: A session saved before the settings were one value (notebooks/context_budget.ipynb replays it).
OLD_SESSION = PACKAGE.parent / "notebooks" / "sessions" / "context_budget.json"


def test_an_agent_keeps_its_options_as_one_settings_value_the_loop_reads_whole(tmp_path: Path) -> None:
    agent = Agent(server=ScriptedServer([]), workspace=tmp_path, steps=4, commands="off", price=(1, 2))
    assert agent.settings == Settings(workspace=tmp_path, steps=4, commands="off", price=(1.0, 2.0))
    assert isinstance(agent.settings, LoopSettings)
    assert agent._build_loop().settings is agent.settings


def test_an_unknown_option_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="stepz"):
        Agent(server=ScriptedServer([]), workspace=tmp_path, stepz=4)


def test_configure_replaces_the_settings_and_refuses_what_makes_a_new_session(tmp_path: Path) -> None:
    agent = Agent(server=ScriptedServer([]), workspace=tmp_path, temperature=0.5)
    before = agent.settings
    agent.configure(steps=3, system_prompt="Be brief.")
    assert agent.settings == dataclasses.replace(before, steps=3, system_prompt="Be brief.")
    agent.configure(temperature=None)  # None is a value of its own: the server's temperature
    assert agent.settings.temperature is None
    with pytest.raises(ValueError, match="steps"):
        agent.configure(steps=0)
    assert agent.settings.steps == 3  # a refused change changes nothing
    for name in ("base_url", "model", "workspace", "window", "secret_files", "tool_descriptions"):
        with pytest.raises(TypeError, match=name):
            agent.configure(**{name: None})


def test_every_setting_says_how_a_load_treats_it_and_the_named_ones_are_never_saved() -> None:
    names = [f.name for f in dataclasses.fields(Settings)]
    assert set(loaded("taken")) | set(loaded("guarded")) | set(loaded("named")) == set(names)
    assert (loaded("taken"), loaded("guarded")) == (TAKEN, GUARDED)
    assert set(loaded("named")) == {"base_url", "model", "kind", "workspace", "api_key"}
    # Each field of the loop's settings is declared again here, with its load rule, and its default.
    for f in dataclasses.fields(LoopSettings):
        assert dataclasses.fields(Settings)[names.index(f.name)].default == f.default, f.name
    assert not set(saved(Settings(api_key="k", base_url="http://x"))) & set(loaded("named"))
    assert session_scoped() >= {"base_url", "workspace", "window", "timeout", "secret_files"}


def test_a_save_writes_the_settings_whole_and_a_load_gives_them_back(tmp_path: Path) -> None:
    options = {"steps": 5, "grammar": "lazy", "repeat_guard": False, "price": (0.1, 0.4)}
    agent = Agent(server=ScriptedServer([]), workspace=tmp_path, **options)
    path = agent.save(tmp_path / "s.json")
    data = json.loads(path.read_text())
    assert data["settings"] == json.loads(json.dumps(saved(agent.settings)))
    back = Agent.load(path, server=ScriptedServer([]), workspace=tmp_path, settings=True)
    assert saved(back.settings) == saved(agent.settings)


def test_a_session_saved_before_the_settings_were_one_value_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    shutil.copy(OLD_SESSION, path)
    old = json.loads(path.read_text())
    assert "repeat_guard" not in old["settings"]  # written before the whole value was saved
    agent = Agent.load(path, server=ScriptedServer([]), workspace=tmp_path)
    assert len(agent.replies) == len(old["replies"]) == 1
    assert agent.estimator.ratio == pytest.approx(old["estimator"]["ratio"])
    assert (agent.settings.mode, agent.settings.search, agent.settings.workspace_map) == ("text", True, True)
    assert agent.settings.repeat_guard is True  # missing: its default
    assert agent.restored is not None
    assert agent.restored.window == 32768


def test_the_magics_options_name_the_settings() -> None:
    assert from_options({"server": "http://x", "steps": 3, "head_start": "map"}) == {
        "base_url": "http://x",
        "steps": 3,
        "workspace_map": True,
        "evidence": False,
    }


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, also under TYPE_CHECKING and inside functions, absolute."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = f"{base}.{node.module}" if base and node.module else base or node.module or ""
            found |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return found


@pytest.mark.parametrize("folder", ["sessions", "display"])
def test_the_saved_session_and_the_display_never_import_the_agent(folder: str) -> None:
    for path in sorted((PACKAGE / folder).glob("*.py")):
        assert "twinny_magics.agent" not in _imports(path), path.name
    assert "twinny_magics.display" not in {m[:21] for m in _imports(PACKAGE / "sessions" / "files.py")}
