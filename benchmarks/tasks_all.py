"""The task benchmark's code bases, which are for development and which is held out, and fetching them.

    python benchmarks/tasks_all.py fetch     # every pinned sdist into the cache (quiet once there)
    python benchmarks/tasks_all.py check     # where each one is, or what is missing

Seven real code bases of different shape, each the sdist of a release on PyPI pinned by sha256:

- ``toolz`` 1.0.0 (BSD-3): a pure-Python library, two modules over 1,000 lines, a notebook written here.
  Development: the loop was tuned on it.
- ``pluggy`` 1.5.0 (MIT): a library with its docs (``docs/``, examples) and a changelog
  (``CHANGELOG.rst``), a ``src/`` layout, classes whose bases and helpers live in other files.
  Development.
- ``mapclassify`` 2.8.1 (BSD-3): a data project whose notebooks matter: eight ``.ipynb`` tutorials that
  use the package, with their outputs, beside a 2,997-line ``classifiers.py``. Development.
- ``litecli`` 1.12.3 (BSD-3): an application with a configuration file (``litecli/liteclirc``, INI) and
  a click command line, plus a notebook written here. Development: it was the held-out code base of the
  rounds before yamllint, retired to the development set after a few of its task lines were seen and
  because the next round read its failures.
- ``cookiecutter`` 2.6.0 (BSD-3): an application with a YAML user configuration (``~/.cookiecutterrc``
  or ``COOKIECUTTER_CONFIG``, merged over ``DEFAULT_CONFIG`` by ``cookiecutter/config.py``; YAML test
  configurations under ``tests/test-config/``) and a click command line (``cookiecutter/cli.py``), its
  exceptions in one module and raised in others, template hooks, a 1,106-line changelog
  (``HISTORY.md``) and tests, plus a notebook written here. Development: added after litecli, its tasks
  in ``tasks_cookiecutter.py`` and ``tasks_cookiecutter_more.py``.
- ``yamllint`` 1.35.1 (GPL-3.0-or-later; fetched and unpacked at run time, never stored here): an
  application with YAML configuration files (``yamllint/conf/default.yaml``, ``relaxed.yaml``, resolved by
  ``yamllint/config.py``) and an argparse command line, rules one module each under ``yamllint/rules/``,
  docs, a changelog and tests, plus a notebook written here. Development: it was the held-out code base
  after litecli, retired to the development set on 2026-12-06 because its failures are now read to change
  the loop (its runs from before stay stored under their ``yamllint (heldout)`` keys).
- ``sqlite_utils`` (sqlite-utils 3.37, Apache-2.0): a library for SQLite whose classes (``Database``,
  ``Table``, ``View``) fill one module of nearly 3,900 lines (``sqlite_utils/db.py``), with a click command
  line of over 3,200 lines wrapping it (``sqlite_utils/cli.py``), helpers and ``convert`` recipes, pluggy
  plugin hooks, Sphinx docs (a changelog, a generated command reference) and tests, plus a notebook written
  here. **Held out** since 2026-12-06: its tasks are run only to report, never read to change the loop.
  Its shape (a library whose long modules are the code base, beside the command line that wraps them) is
  none of the development code bases', and none of its failures has been read, so it measures what tuning
  on the development code bases carries to code nobody tuned on. When its failures have been read to
  change the loop, it moves to the development set and a new code base is held out.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tasks_cookiecutter
import tasks_litecli
import tasks_mapclassify
import tasks_pluggy
import tasks_sqlite_utils
import tasks_toolz
import tasks_yamllint
from tasks_common import KINDS, Sdist, SourceMissing, Task

SETS = ("dev", "heldout")


@dataclass(frozen=True)
class CodeBase:
    """One code base of the benchmark: its pinned source, its workspace and tasks, and its set."""

    name: str
    shape: str
    split: str  # "dev" or "heldout"
    pin: Sdist
    licence: str
    workspace: Callable[[Path], Path]
    tasks: Callable[[Path], list[Task]]
    kinds: Sequence[str] = KINDS


CODEBASES: dict[str, CodeBase] = {
    "toolz": CodeBase(
        "toolz",
        "library (the one the loop was tuned on)",
        "dev",
        tasks_toolz.PIN,
        "BSD-3-Clause",
        tasks_toolz.build_workspace,
        tasks_toolz.build_tasks,
        tasks_toolz.KINDS,
    ),
    "pluggy": CodeBase(
        "pluggy",
        "library with docs and a changelog",
        "dev",
        tasks_pluggy.PIN,
        "MIT",
        tasks_pluggy.build_workspace,
        tasks_pluggy.build_tasks,
    ),
    "mapclassify": CodeBase(
        "mapclassify",
        "data project whose notebooks matter",
        "dev",
        tasks_mapclassify.PIN,
        "BSD-3-Clause",
        tasks_mapclassify.build_workspace,
        tasks_mapclassify.build_tasks,
    ),
    "litecli": CodeBase(
        "litecli",
        "application with a configuration file and a command line",
        "dev",
        tasks_litecli.PIN,
        "BSD-3-Clause",
        tasks_litecli.build_workspace,
        tasks_litecli.build_tasks,
    ),
    "cookiecutter": CodeBase(
        "cookiecutter",
        "application with a YAML user configuration and a click command line",
        "dev",
        tasks_cookiecutter.PIN,
        "BSD-3-Clause",
        tasks_cookiecutter.build_workspace,
        tasks_cookiecutter.build_tasks,
    ),
    "yamllint": CodeBase(
        "yamllint",
        "application with configuration files and a command line",
        "dev",
        tasks_yamllint.PIN,
        "GPL-3.0-or-later",
        tasks_yamllint.build_workspace,
        tasks_yamllint.build_tasks,
    ),
    "sqlite_utils": CodeBase(
        "sqlite_utils",
        "library with long modules and the command line that wraps them",
        "heldout",
        tasks_sqlite_utils.PIN,
        "Apache-2.0",
        tasks_sqlite_utils.build_workspace,
        tasks_sqlite_utils.build_tasks,
    ),
}

#: What the benchmark promises (tests/test_bench_codebases.py holds it to it).
MIN_TASKS = 75
MIN_HELDOUT_TASKS = 30


def pick(names: str | None, split: str | None) -> list[CodeBase]:
    """The code bases ``names`` names (comma-separated) and/or of ``split`` (dev, heldout, all); held-out
    first, as the tables show them."""
    chosen = list(CODEBASES.values())
    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in CODEBASES]
        if unknown:
            raise ValueError(f"no code base {', '.join(unknown)}; they are: {', '.join(CODEBASES)}")
        chosen = [c for c in chosen if c.name in wanted]
    if split and split != "all":
        if split not in SETS:
            raise ValueError(f"no set {split!r}; the sets are dev, heldout, all")
        chosen = [c for c in chosen if c.split == split]
    return sorted(chosen, key=lambda c: c.split != "heldout")


def fetch_all(*, quiet: bool = True) -> list[Path]:
    """Every pinned sdist, fetched into the cache where missing."""
    return [c.pin.fetch(quiet=quiet) for c in CODEBASES.values()]


def main(argv: Sequence[str] | None = None) -> int:
    """``fetch``: put every pinned sdist in the cache (quiet when there); ``check``: are they there?"""
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else "check"
    try:
        if command == "fetch":
            fetch_all()
        elif command == "check":
            for codebase in CODEBASES.values():
                print(f"{codebase.name} ({codebase.split}): {codebase.pin.cached()}")
        else:
            print(f"usage: {Path(__file__).name} fetch|check", file=sys.stderr)
            return 2
    except SourceMissing as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
