"""The options table: the magic's traits, flags and help, ``Agent`` and ``configure`` all read it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from traitlets import TraitError

from twinny_magics import options
from twinny_magics.agent import Agent
from twinny_magics.experiment import cells as compare_cells
from twinny_magics.magic import TwinnyMagics, parse_argstring
from twinny_magics.options import OPTIONS, check
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.settings import Settings, session_scoped

#: A value each option refuses, and one it takes.
BAD_AND_GOOD: dict[str, tuple[Any, Any]] = {
    "mode": ("json", "text"),
    "steps": (0, 3),
    "edits": ("write", "apply"),
    "commands": ("yes", "off"),
    "kernel": ("run", "allow"),
    "cells": ("append", "insert"),
    "kernel_seconds": (0, 2.5),
    "grammar": ("strict", "lazy"),
    "temperature": (2.5, 0.7),
    "head_start": ("all", "map"),
    "window": (0, 2048),
    "timeout": (-1, 30.0),
    "output": ("html", "text"),
}


def test_every_option_is_a_config_trait_with_the_tables_default_and_help() -> None:
    traits = TwinnyMagics.class_traits(config=True)
    assert set(traits) == {o.name for o in OPTIONS}
    for o in OPTIONS:
        trait = traits[o.name]
        assert trait.default_value == o.default, o.name
        assert trait.help == o.help, o.name
        if o.choices:
            assert list(trait.values) == list(o.choices), o.name  # type: ignore[attr-defined]


def test_every_flag_parses_to_its_option_and_the_help_names_every_option() -> None:
    doc = TwinnyMagics.agent.__doc__ or ""
    flat = " ".join(doc.split())
    for o in OPTIONS:
        assert o.name in flat, o.name
        if o.flag is None:
            assert o.spelling not in doc, o.name
            continue
        assert o.spelling in doc, o.name
        good = BAD_AND_GOOD.get(o.name, (None, "x"))[1]
        if o.switch:
            line = o.spelling
        elif o.type is bool:
            line, good = f"{o.spelling} off", "off"
        else:
            line = f"{o.spelling} {good}"
        args = parse_argstring(TwinnyMagics.agent, line)
        assert getattr(args, o.name) == (True if o.switch else good), o.name


def test_agent_takes_the_tables_defaults() -> None:
    settings = {f.name: f for f in dataclasses.fields(Settings)}
    # The magic's unset workspace is the kernel's working directory, which is Agent's "." too.
    taken = [o for o in OPTIONS if o.name in settings and o.name != "workspace"]
    assert len(taken) >= 15
    for o in taken:
        assert settings[o.name].default == o.default, o.name
        assert settings[o.name].metadata["scope"] == o.scope, o.name
    assert Agent(server=ScriptedServer([])).settings == Settings()


@pytest.mark.parametrize("name", sorted(BAD_AND_GOOD))
def test_a_bad_value_is_refused_alike_everywhere(name: str, tmp_path: Path) -> None:
    bad, good = BAD_AND_GOOD[name]
    with pytest.raises(ValueError, match=name):
        check(name, bad)
    assert check(name, good) == good
    magics = TwinnyMagics()
    with pytest.raises((TraitError, ValueError)):
        setattr(magics, name, bad) if options.option(name).choices else check(name, bad)
    settings = {f.name for f in dataclasses.fields(Settings)}
    if name in settings:
        with pytest.raises(ValueError, match=name):
            Agent(server=ScriptedServer([]), workspace=tmp_path, **{name: bad})
        Agent(server=ScriptedServer([]), workspace=tmp_path, **{name: good})
    if name in settings - session_scoped():
        agent = Agent(server=ScriptedServer([]), workspace=tmp_path)
        with pytest.raises(ValueError, match=name):
            agent.configure(**{name: bad})
        agent.configure(**{name: good})


def test_the_magic_line_refuses_a_value_out_of_range_with_the_option_named(tmp_path: Path) -> None:
    magics = TwinnyMagics()
    for line, said in (
        ("--temperature 3", "from 0 to 2"),
        ("--steps 0", "at least 1"),
        ("--window -5", "window"),
    ):
        with pytest.raises(UsageError, match=said):
            magics._cell(line, "Which port?")


def test_compare_shares_the_flags_of_the_table() -> None:
    args = compare_cells.parse_line("--mode text --steps 4 --grammar lazy --commands off --window 2048")
    assert (args.mode, args.steps, args.grammar, args.commands, args.window) == (
        "text",
        4,
        "lazy",
        "off",
        2048,
    )
    with pytest.raises(ValueError, match="grammar"):
        compare_cells.parse_line("--grammar strict")
