"""Each setting is declared once, and what ``%%agent compare`` takes from a session follows from how each
setting is declared, not from a list kept by hand."""

from __future__ import annotations

import ast
import inspect
from dataclasses import fields
from pathlib import Path

import pytest

from twinny_magics.agent import Agent
from twinny_magics.engine.settings import LoopSettings
from twinny_magics.experiment import cells
from twinny_magics.experiment.runner import DEFAULTS
from twinny_magics.experiment.variants import SERVER_OPTIONS
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.settings import Settings, loaded

LOOP = [f.name for f in fields(LoopSettings)]


def test_settings_declares_none_of_the_loops_fields_again() -> None:
    tree = ast.parse(inspect.getsource(Settings))
    [body] = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    declared = [
        n.target.id for n in body.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]
    assert sorted(set(declared) & set(LOOP)) == []
    assert len(LOOP) == 15


def test_each_loop_field_carries_its_load_rule_scope_and_option_where_it_is_declared() -> None:
    by_name = {f.name: f for f in fields(Settings)}
    for f in fields(LoopSettings):
        assert set(f.metadata) == {"load", "scope", "option"}, f.name
        assert by_name[f.name].metadata == f.metadata
        assert by_name[f.name].default == f.default
    assert [f.name for f in fields(Settings)][: len(LOOP)] == LOOP  # the saved document's order
    assert {f.name for f in fields(LoopSettings) if f.metadata["load"] == "guarded"} == {
        "system_prompt",
        "closing_prompt",
        "extra",
    }
    assert {f.name: f.metadata["option"] for f in fields(LoopSettings) if f.metadata["option"]} == {
        "steps": "steps",
        "temperature": "temperature",
        "grammar": "grammar",
    }


# --- what a compare inherits ------------------------------------------------------------------------------


def test_a_compare_inherits_every_saved_setting_but_the_experiments_own_and_the_servers() -> None:
    expected = [n for n in loaded("taken") + loaded("guarded") if n not in {*DEFAULTS, *SERVER_OPTIONS}]
    assert list(cells.inherited()) == expected
    assert {"temperature", "edits", "window", "timeout"}.isdisjoint(cells.inherited())
    assert {"steps", "mode", "system_prompt", "extra", "commands", "look_first", "workspace_map"} <= set(
        cells.inherited()
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("look_first", True),
        ("edit_first", False),
        ("workspace_map", True),
        ("evidence", False),
        ("head_start_share", 0.3),
        ("repeat_guard", False),
        ("auto_text_after", 0),
        ("search", True),
        ("kernel_seconds", 5.0),
        ("secret_files", ("*.pem",)),
        ("steps", 3),
        ("system_prompt", "Be brief."),
    ],
)
def test_an_adopted_sessions_setting_reaches_both_variants(tmp_path: Path, name: str, value: object) -> None:
    # Before, the head start, the nudges, the guard, search and the deny list were left behind.
    server = ScriptedServer([])
    session = Agent(server=server, workspace=tmp_path, **{name: value})
    base = cells.base_options({}, session)
    assert base[name] == value
    assert base["server"] is server
    assert base["workspace"] == str(tmp_path)
    assert not {"temperature", "edits", "base_url", "window"} & set(base)


def test_without_a_session_the_config_defaults_are_read_the_same_way() -> None:
    defaults = {
        "server": "http://127.0.0.1:8080",
        "model": "m",
        "kind": "llamacpp",
        "window": 4096,
        "workspace": "/w",
        "api_key": None,
        "timeout": None,
        "mode": "text",
        "steps": 4,
        "edits": "review",
        "commands": "off",
        "kernel": "off",
        "cells": "review",
        "grammar": "lazy",
        "temperature": 0.5,
        "head_start": "map",
    }
    base = cells.base_options(defaults, None)
    assert base["base_url"] == "http://127.0.0.1:8080"
    assert (base["model"], base["kind"], base["window"], base["workspace"]) == ("m", "llamacpp", 4096, "/w")
    assert (base["mode"], base["steps"], base["commands"], base["grammar"], base["kernel"]) == (
        "text",
        4,
        "off",
        "lazy",
        "off",
    )
    assert "workspace_map" in base  # the head start, as the magic's option says it
    assert not {"temperature", "edits"} & set(base)  # the experiment's own
