"""A development code base: pluggy 1.5.0, a library with its docs and a changelog.

The workspace is the sdist of ``pluggy==1.5.0`` from PyPI (MIT), pinned by sha256 and unpacked at run
time: a ``src/`` layout (``src/pluggy/_hooks.py`` is 715 lines, ``_manager.py`` 528), ``testing/``,
``docs/`` with runnable examples (``docs/examples/eggsample``), ``CHANGELOG.rst`` (a release per heading)
and ``setup.cfg``. What toolz lacks and this has: facts that live in the docs or the changelog, classes
whose base or whose helper is in another file, and a private module layout (``_hooks``, ``_callers``).
"""

from __future__ import annotations

import re
from pathlib import Path

from tasks_common import (
    Answer,
    Edit,
    Sdist,
    Source,
    Task,
    Where,
    check_unique,
    count_task,
    edit_task,
    line_task,
    located,
    name_term,
    regex_term,
    text_term,
)

PIN = Sdist("pluggy", "1.5.0", "2cffa88e94fdc978c4c574f15f9e59b7f4201d439195c3715ca9e2486f1d0cf1")


def build_workspace(root: Path) -> Path:
    """The workspace at ``root``: the cached sdist unpacked."""
    return PIN.unpack(PIN.cached(), root)


def build_tasks(root: Path) -> list[Task]:
    """Every task, made from the workspace at ``root`` (facts read from its files and checked there)."""
    src = Source(root)
    path = src.path
    hooks, manager, callers = "src/pluggy/_hooks.py", "src/pluggy/_manager.py", "src/pluggy/_callers.py"
    warnings_, result = "src/pluggy/_warnings.py", "src/pluggy/_result.py"
    tasks: list[Task] = []
    add = tasks.append

    add(
        Task(
            "locate-PluginValidationError",
            "locate",
            "Which file defines the exception class PluginValidationError?",
            Answer(
                [path(manager, bare=True)],
                [path("src/pluggy/__init__.py"), path(hooks, bare=True), path(result, bare=True)],
            ),
            right=(manager, "It is defined in _manager.py."),
            wrong=("src/pluggy/__init__.py", "src/pluggy/_hooks.py"),
            quick=True,
        )
    )
    add(
        Task(
            "locate-HookCallError",
            "locate",
            "In which file is HookCallError defined?",
            Answer(
                [path(result, bare=True)],
                [path(callers, bare=True), path(manager, bare=True), path("src/pluggy/__init__.py")],
            ),
            right=(result, "HookCallError is a class in the _result module."),
            wrong=("src/pluggy/_callers.py", "src/pluggy/__init__.py"),
        )
    )
    src.has("setup.cfg", "python_requires = >=3.8")
    add(
        Task(
            "value-python-requires",
            "value",
            "Which Python versions does pluggy's setup.cfg allow (its python_requires)?",
            Answer(
                [regex_term(">=3.8", r"(?<![\w.])3\.8(?![\d])")],
                [
                    regex_term("3.7", r"(?<![\w.])3\.7(?![\d])"),
                    regex_term(">=3.9", r">=\s*3\.(?!8(?!\d))\d+"),
                ],
            ),
            right=("python_requires = >=3.8", "Python 3.8 or newer."),
            wrong=(">=3.7", ">=3.9"),
        )
    )
    src.has("docs/examples/toy-example.py", 'hookspec = pluggy.HookspecMarker("myproject")')
    add(
        Task(
            "value-toy-project",
            "value",
            "Which project name do the hook markers in the docs' toy example (docs/examples/toy-example.py) "
            "use?",
            Answer(
                [name_term("myproject")], [name_term("eggsample"), name_term("pluggy"), name_term("example")]
            ),
            right=('"myproject"', 'HookspecMarker("myproject") and HookimplMarker("myproject")'),
            wrong=("eggsample", "pluggy"),
        )
    )
    add(
        line_task(
            src,
            "line-SubsetHookCaller",
            hooks,
            "class _SubsetHookCaller(",
            what="the class _SubsetHookCaller",
            other=src.line_of(hooks, "class HookImpl:"),
        )
    )
    exported = len(
        re.findall(r'"(\w+)"', src.text("src/pluggy/__init__.py").split("__all__ = [", 1)[1].split("]", 1)[0])
    )
    add(
        count_task(
            "count-all",
            "count",
            "How many names does __all__ list in src/pluggy/__init__.py?",
            exported,
            said="names",
            quick=True,
        )
    )
    add(
        Task(
            "cross-tests-warnings",
            "cross-file",
            "Which test file tests PluggyTeardownRaisedWarning?",
            Answer(
                [path("testing/test_warnings.py", bare=True)],
                [path(warnings_, bare=True), path("testing/test_multicall.py", bare=True)],
            ),
            right=("testing/test_warnings.py", "test_warnings.py (test_teardown_raised_warning)"),
            wrong=("src/pluggy/_warnings.py", "testing/test_multicall.py"),
        )
    )
    src.has("CHANGELOG.rst", "Add :func:`PluginManager.unblock <pluggy.PluginManager.unblock>` method")
    unblock = re.search(
        r"pluggy (\d+\.\d+\.\d+) \(\d{4}-\d\d-\d\d\)\n=+\n(?:(?!\npluggy \d).)*PluginManager\.unblock",
        src.text("CHANGELOG.rst"),
        re.S,
    )
    assert unblock is not None
    version = unblock.group(1)
    add(
        Task(
            "grep-unblock-version",
            "grep-read",
            "According to the changelog, in which pluggy release was PluginManager.unblock added?",
            Answer(
                [regex_term(version, rf"(?<![\w.]){re.escape(version)}(?![\d])")],
                [regex_term("1.5.0", r"(?<![\w.])1\.5\.0"), regex_term("1.3.0", r"(?<![\w.])1\.3\.0")],
            ),
            right=(version, f"pluggy {version} added the unblock method (#471)."),
            wrong=("1.5.0", "1.3.0"),
            quick=True,
        )
    )
    src.has(hooks, 'raise ValueError("cannot have a historic firstresult hook")')
    add(
        Task(
            "big-historic-firstresult",
            "big-file",
            "In src/pluggy/_hooks.py, which exception does HookspecMarker raise for a hook marked both "
            "historic and firstresult?",
            Answer(
                [name_term("ValueError")],
                [name_term("TypeError"), name_term("PluginValidationError"), name_term("RuntimeError")],
            ),
            right=("ValueError", 'ValueError("cannot have a historic firstresult hook")'),
            wrong=("TypeError", "PluginValidationError"),
        )
    )
    src.has(manager, "from ._callers import _multicall")
    src.has(manager, "self._inner_hookexec = _multicall")
    add(
        Task(
            "hop-inner-hookexec",
            "multi-hop",
            "PluginManager keeps a function as its inner hook executor (_inner_hookexec). Which file "
            "defines that function?",
            Answer(
                [path(callers, bare=True)],
                [path(manager, bare=True), path(hooks, bare=True), path("src/pluggy/_tracing.py", bare=True)],
            ),
            right=(callers, "_multicall, defined in _callers.py"),
            wrong=("src/pluggy/_manager.py", "src/pluggy/_tracing.py"),
            quick=True,
        )
    )
    src.has(warnings_, "class PluggyWarning(UserWarning):")
    src.has(warnings_, "class PluggyTeardownRaisedWarning(PluggyWarning):")
    add(
        Task(
            "hop-warning-base",
            "multi-hop",
            "PluggyTeardownRaisedWarning derives from another pluggy class. Which built-in warning class "
            "does that class derive from?",
            Answer(
                [name_term("UserWarning")],
                [name_term("DeprecationWarning"), name_term("RuntimeWarning"), name_term("Warning")],
            ),
            right=("UserWarning", "PluggyWarning derives from UserWarning."),
            wrong=("DeprecationWarning", "Warning"),
        )
    )
    message = src.has(manager, '"Plugin name already registered: %s=%s\\n%s"')
    add(
        Task(
            "exact-already-registered",
            "exact",
            "What message does PluginManager.register raise when a plugin name is already registered? "
            "Quote its first words exactly.",
            Answer(
                [text_term("Plugin name already registered")],
                [text_term("Plugin already registered under a different name")],
            ),
            right=("Plugin name already registered: %s=%s", message),
            wrong=("Plugin already registered under a different name: %s=%s",),
        )
    )
    tests = src.count("testing/test_pluginmanager.py", r"^def test_")
    add(
        count_task(
            "fcount-pluginmanager-tests",
            "file-count",
            "How many test functions does testing/test_pluginmanager.py define?",
            tests,
            said="test functions",
        )
    )
    releases = src.count("CHANGELOG.rst", r"^pluggy \d+\.\d+\.\d+ \(")
    add(
        count_task(
            "fcount-changelog-releases",
            "file-count",
            "How many pluggy releases does CHANGELOG.rst have a section for?",
            releases,
            said="releases",
        )
    )
    add(
        edit_task(
            src,
            "edit-python-requires",
            "In setup.cfg, raise python_requires to >=3.9.",
            [
                (
                    Edit("setup.cfg", "python_requires = >=3.8", "python_requires = >=3.9"),
                    r"python_requires\s*=\s*>=\s*3\.9",
                )
            ],
            wrong_edits=[
                [Edit("setup.cfg", "python_requires = >=3.8", "python_requires = >=3.10")],
                [
                    Edit(
                        "pyproject.toml",
                        "[build-system]",
                        '[project]\nrequires-python = ">=3.9"\n\n[build-system]',
                    )
                ],
            ],
            quick=True,
        )
    )
    add(
        edit_task(
            src,
            "medit-eggsample-spices",
            'In docs/examples/eggsample/eggsample/lib.py, add "paprika" to the spices list (after "pepper"), '
            "and in docs/examples/eggsample/eggsample/hookspecs.py rename the parameter of "
            "eggsample_add_ingredients from ingredients to pantry (its docstring's :param too).",
            [
                (
                    Edit(
                        "docs/examples/eggsample/eggsample/lib.py",
                        'spices = ["salt", "pepper"]',
                        'spices = ["salt", "pepper", "paprika"]',
                    ),
                    r"""spices = \[(["'])salt\1,\s*(["'])pepper\2,\s*(["'])paprika\3,?\s*\]""",
                ),
                (
                    Edit(
                        "docs/examples/eggsample/eggsample/hookspecs.py",
                        "def eggsample_add_ingredients(ingredients: tuple):",
                        "def eggsample_add_ingredients(pantry: tuple):",
                    ),
                    r"def eggsample_add_ingredients\(pantry: tuple\):",
                ),
                (
                    Edit(
                        "docs/examples/eggsample/eggsample/hookspecs.py",
                        ":param ingredients:",
                        ":param pantry:",
                    ),
                    r":param pantry:",
                ),
            ],
            wrong_edits=[
                [
                    Edit(
                        "docs/examples/eggsample/eggsample/lib.py",
                        'spices = ["salt", "pepper"]',
                        'spices = ["salt", "pepper", "paprika"]',
                    )
                ],
                [
                    Edit(
                        "docs/examples/eggsample/eggsample/lib.py",
                        'spices = ["salt", "pepper"]',
                        'spices = ["paprika", "salt", "pepper"]',
                    ),
                    Edit(
                        "docs/examples/eggsample/eggsample/hookspecs.py",
                        "def eggsample_add_ingredients(ingredients: tuple):",
                        "def eggsample_add_ingredients(pantry: tuple):",
                    ),
                    Edit(
                        "docs/examples/eggsample/eggsample/hookspecs.py",
                        ":param ingredients:",
                        ":param pantry:",
                    ),
                ],
            ],
        )
    )
    check_unique(tasks)
    return located(tasks, WHERE)


_MANAGER, _WARNINGS = "src/pluggy/_manager.py", "src/pluggy/_warnings.py"
#: Where each answer stands (the lines it rests on), by task; line and edit tasks carry their own.
WHERE: dict[str, list[Where]] = {
    "locate-PluginValidationError": [Where(_MANAGER, "class PluginValidationError")],
    "locate-HookCallError": [Where("src/pluggy/_result.py", "class HookCallError")],
    "value-python-requires": [Where("setup.cfg", "python_requires = >=3.8")],
    "value-toy-project": [Where("docs/examples/toy-example.py", 'HookspecMarker("myproject")')],
    "count-all": [Where("src/pluggy/__init__.py", "__all__ = [", until="]")],
    "cross-tests-warnings": [Where("testing/test_warnings.py", "PluggyTeardownRaisedWarning")],
    "grep-unblock-version": [
        Where("CHANGELOG.rst", "pluggy 1.4.0 ("),
        Where("CHANGELOG.rst", "PluginManager.unblock"),
    ],
    "big-historic-firstresult": [Where("src/pluggy/_hooks.py", "cannot have a historic firstresult hook")],
    "hop-inner-hookexec": [
        Where(_MANAGER, "self._inner_hookexec = _multicall"),
        Where("src/pluggy/_callers.py", "def _multicall("),
    ],
    "hop-warning-base": [
        Where(_WARNINGS, "class PluggyTeardownRaisedWarning(PluggyWarning)"),
        Where(_WARNINGS, "class PluggyWarning(UserWarning)"),
    ],
    "exact-already-registered": [Where(_MANAGER, "Plugin name already registered")],
    "fcount-pluginmanager-tests": [
        Where("testing/test_pluginmanager.py", r"^def test_", every=True, regex=True)
    ],
    "fcount-changelog-releases": [Where("CHANGELOG.rst", r"^pluggy \d+\.\d+", every=True, regex=True)],
}
