"""The public names (the README's and docs/') are all there, and behave as the docs say."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys

import pytest

import twinny_magics
import twinny_magics.settings


@pytest.mark.parametrize("name", twinny_magics.__all__)
def test_every_public_name_imports(name: str) -> None:
    assert getattr(twinny_magics, name) is not None


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = twinny_magics.no_such_name  # type: ignore[attr-defined]


def test_context_plan_is_a_frozen_dataclass_of_ints() -> None:
    plan = twinny_magics.plan_context(8192)
    assert dataclasses.is_dataclass(plan)
    fields = [f.name for f in dataclasses.fields(plan)]
    assert fields == [
        "window",
        "reply",
        "limit",
        "target",
        "result_chars",
        "notes_chars",
        "head_start_chars",
        "deep_target",
    ]
    assert all(type(getattr(plan, f)) is int for f in fields)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.window = 1  # type: ignore[misc]


def test_token_estimator_has_the_spec_interface() -> None:
    estimator = twinny_magics.TokenEstimator(ratio=3.3)
    assert isinstance(estimator.ratio, float)
    assert estimator.tokens(330) == 100
    estimator.observe(1000, 250)
    assert estimator.ratio == 4.0


def test_parse_tool_calls_returns_calls_with_name_and_arguments() -> None:
    [call] = twinny_magics.parse_tool_calls('```tool\n{"name": "grep", "arguments": {"pattern": "x"}}\n```')
    assert (call.name, call.arguments) == ("grep", {"pattern": "x"})
    assert twinny_magics.displayable_length("hello ```too") == len("hello ")
    assert twinny_magics.displayable_length("hello ```tool\n{") == len("hello ")


def test_probe_and_agent_take_the_spec_arguments() -> None:
    probe = inspect.signature(twinny_magics.probe_context_window)
    assert list(probe.parameters)[:3] == ["base_url", "model", "kind"]
    agent = inspect.signature(twinny_magics.Agent)
    assert list(agent.parameters)[:4] == ["base_url", "model", "kind", "workspace"]
    assert agent.parameters["options"].kind is inspect.Parameter.VAR_KEYWORD
    settings = {f.name: f.default for f in dataclasses.fields(twinny_magics.settings.Settings)}
    for option, default in (("mode", "auto"), ("steps", 12), ("edits", "review"), ("commands", "ask")):
        assert settings[option] == default
    assert "api_key" in settings
    assert twinny_magics.probe_context_window("https://api.openai.com/v1", kind="openai") is None


def test_importing_the_package_does_not_load_httpx_or_the_loop() -> None:
    code = "import sys, twinny_magics; print('httpx' in sys.modules, 'twinny_magics.loop' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_loading_the_extension_imports_none_of_the_tools() -> None:
    """%load_ext installs the cell log: it must stay as light as the magic (no tools, no loop)."""
    code = (
        "import sys, twinny_magics.magic, twinny_magics.cell_log; "
        "print(sorted(m for m in ('twinny_magics.tools', 'twinny_magics.loop', 'httpx', "
        "'twinny_magics.display.view', 'markdown_it') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_pure_core_imports_neither_httpx_nor_ipython() -> None:
    modules = "budget, text_tokens, conversation, events, notes, protocol, errors, cells, usage"
    # Every module of the protocol package, the grammar among them, not only those protocol loads itself.
    code = (
        f"import sys, importlib, pkgutil; from twinny_magics import {modules}; "
        "names = [m.name for m in pkgutil.iter_modules(protocol.__path__)]; "
        "[importlib.import_module('twinny_magics.protocol.' + name) for name in names]; "
        "print('grammar' in names, 'stream' in names); "
        "print(sorted(m for m in ('httpx', 'IPython', 'ipywidgets', 'asyncio') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines() == ["True True", "[]"]
