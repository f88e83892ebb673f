"""What the tools never write: files that Python, a shell or git act on by themselves (`write_refusal`).

`write_refusal` says why ``edit_file`` / ``create_file`` must not write a path, under ``edits=review``
and ``edits=apply`` alike, at the proposal and again when it is applied:

- a module Python would import instead of another one: the kernel runs with its working folder (the
  workspace root) first on ``sys.path``, so ``jedi.py`` or ``json/__init__.py`` there would be imported
  in place of the real module the next time anything imports it — when a widget is first shown, at the
  first completion — running its code before anyone reviews anything. A top-level name is refused when
  it is a built-in or standard-library module, is already imported from elsewhere, or is found by the
  import system on the rest of ``sys.path``. The check never imports anything. Only folders on
  ``sys.path`` matter: the root, and any other workspace folder that is on ``sys.path`` (a ``src/``
  added to it). A file deeper in an ordinary subfolder is imported as ``pkg.mod`` and cannot stand in
  for a top-level module, so it is not refused;
- ``sitecustomize`` / ``usercustomize`` anywhere, any ``.pth`` file, anything under ``__pycache__``
  (compiled files Python loads in place of the source) or a ``site-packages`` / ``dist-packages``
  folder (installed code);
- files other programs run by themselves: shell start-up files (``.bashrc``, ``.profile``, …) and the
  ``.ipython`` / ``.jupyter`` configuration folders;
- the ignore files (``.gitignore`` anywhere, ``.ignore``, and git's global excludes file when it lies in
  the workspace): they decide what the tools may show, so a model that could edit them could un-hide
  what they hide. ``.git/info/exclude`` is inside ``.git``, which the tools never reach.

Names a library only *tries* to import (an optional dependency that is not installed) cannot be known
in advance; they are the one way left for a created module to be imported, and only if the user
applied it.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

# Longest first, so that `x.cpython-311-x86_64-linux-gnu.so` is module `x`, not `x.cpython-311-…`.
IMPORTABLE_SUFFIXES = tuple(
    sorted({*importlib.machinery.all_suffixes(), ".py", ".pyw", ".pyc"}, key=len, reverse=True)
)
STARTUP_MODULES = frozenset({"sitecustomize", "usercustomize"})
IGNORE_FILES = frozenset({".gitignore", ".ignore"})
# Files and folders other programs run by themselves: a shell at login, IPython and Jupyter at start.
AUTORUN_NAMES = frozenset(
    {".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin"}
)
AUTORUN_FOLDERS = frozenset({".ipython", ".jupyter"})
INSTALLED_FOLDERS = frozenset({"site-packages", "dist-packages"})


def module_name(filename: str) -> str | None:
    """The module a file would be imported as (``jedi.py`` -> ``jedi``), or None if it is no module."""
    for suffix in IMPORTABLE_SUFFIXES:
        if filename.endswith(suffix) and len(filename) > len(suffix):
            stem = filename[: -len(suffix)]
            return stem if stem.isidentifier() else None
    return None


def write_refusal(rel: str, *, root: Path, import_dirs: Iterable[str]) -> tuple[str, str] | None:
    """Why the workspace-relative path ``rel`` must not be written, and what to do instead; or None.

    ``import_dirs`` are the workspace-relative folders on the kernel's ``sys.path`` ("." for the root).
    """
    parts = rel.split("/")
    folded = [part.lower() for part in parts]
    name = folded[-1]
    by_hand = "Show the user the change so they can make it themselves if they want it."
    if name in IGNORE_FILES:
        return (
            "it is an ignore file, which decides what the tools may show, so the tools never change it.",
            "Tell the user what to change in it instead.",
        )
    if name.endswith(".pth"):
        return "Python runs .pth files by itself at start-up (their import lines are code).", by_hand
    for index, part in enumerate(folded):
        if part == "__pycache__":
            return "Python imports the compiled files in __pycache__ in place of the source.", by_hand
        if part in INSTALLED_FOLDERS:
            return f"it is inside {parts[index]}, installed code that Python imports.", by_hand
        if part in AUTORUN_FOLDERS:
            program = "IPython" if part == ".ipython" else "Jupyter"
            return f"{program} runs the files in {parts[index]} by itself when it starts.", by_hand
        stem = module_name(part) if index == len(parts) - 1 else part
        if stem in STARTUP_MODULES:
            return (
                f"Python imports {stem} by itself at start-up, so its code would run in every new kernel.",
                by_hand,
            )
    if name in AUTORUN_NAMES:
        return "it is a shell start-up file, which a shell runs by itself when it starts.", by_hand
    for folder in import_dirs:
        prefix = [] if folder == "." else folder.split("/")
        if parts[: len(prefix)] != prefix or len(parts) <= len(prefix):
            continue
        sub = parts[len(prefix) :]
        where = root.joinpath(*prefix)
        top: str | None = None
        if len(sub) == 1:
            top = module_name(sub[0])
        elif (
            module_name(sub[-1]) is not None
            and sub[0].isidentifier()
            and (
                (len(sub) == 2 and module_name(sub[1]) == "__init__")
                or any(where.joinpath(sub[0], "__init__" + s).exists() for s in (".py", ".pyc"))
            )
        ):
            top = sub[0]  # a package there: json/__init__.py, or a module inside an existing one
        if top is None:
            continue
        what = shadowed(top, where)
        if what is not None:
            place = "the workspace root comes first" if folder == "." else f"{folder} is a folder"
            return (
                f"Python would import it in place of {what} {top!r} ({place} on the kernel's import path), "
                "so its code would run the next time anything imports that name, before anyone reviewed it.",
                f"Give the module another name (for example my_{top}.py), or show the user the code.",
            )
    return None


def shadowed(name: str, folder: Path) -> str | None:
    """What a top-level module ``name`` written in ``folder`` (on ``sys.path``) would stand in for.

    None when it stands in for nothing. Never imports: it reads ``sys.modules`` and asks the import
    system's finders where ``name`` is, leaving ``folder`` out of the search (there they would find the
    file being written). A module that *is* that file (the user's own ``helpers.py``, imported from the
    root) shadows nothing.
    """
    if name in sys.builtin_module_names:
        return "the built-in module"
    if name in sys.stdlib_module_names or name == "distutils":
        return "the standard-library module"
    module = sys.modules.get(name)
    if module is not None and not _is_candidate(_module_origins(module), folder, name):
        return "the already imported module"
    if _found_elsewhere(name, folder):
        return "the installed module"
    return None


def _module_origins(module: object) -> list[str] | None:
    """Where an imported module came from, read without calling into it (None: cannot tell)."""
    try:
        namespace = object.__getattribute__(module, "__dict__") if isinstance(module, ModuleType) else None
    except Exception:
        return None
    if not isinstance(namespace, dict):
        return None
    spec = namespace.get("__spec__")
    return _spec_origins(spec) if spec is not None else None


def _spec_origins(spec: object) -> list[str] | None:
    """A module spec's file, or a namespace package's folders; None for built-in and frozen ones."""
    try:
        origin = getattr(spec, "origin", None)
        if isinstance(origin, str) and origin not in ("built-in", "frozen", "namespace"):
            return [origin]
        locations = getattr(spec, "submodule_search_locations", None)
        return [str(p) for p in locations] if locations is not None else None
    except Exception:
        return None


def _is_candidate(origins: list[str] | None, folder: Path, name: str) -> bool:
    """Whether every origin is ``folder/name.py`` or inside ``folder/name/``: the file being written."""
    if not origins:
        return False
    for origin in origins:
        try:
            path = Path(origin).resolve()
        except (OSError, RuntimeError, ValueError):
            return False
        if not path.is_relative_to(folder) or path == folder:
            return False
        first = path.relative_to(folder).parts[0]
        if first != name and module_name(first) != name:
            return False
    return True


def _found_elsewhere(name: str, folder: Path) -> bool:
    """Whether the import system finds ``name`` somewhere other than in ``folder``."""
    elsewhere = []
    for entry in sys.path:
        try:
            if Path(entry or ".").resolve() == folder:
                continue
        except (OSError, RuntimeError, TypeError, ValueError):
            pass
        elsewhere.append(entry)
    for finder in list(sys.meta_path):
        # setuptools' distutils hack imports setuptools from find_spec; its one name is refused above.
        if type(finder).__module__.startswith("_distutils_hack"):
            continue
        try:
            if finder is importlib.machinery.PathFinder:
                spec = importlib.machinery.PathFinder.find_spec(name, elsewhere)
            else:
                find = getattr(finder, "find_spec", None)
                spec = find(name, None) if callable(find) else None
        except Exception:
            continue
        if spec is not None and not _is_candidate(_spec_origins(spec), folder, name):
            return True
    return False
