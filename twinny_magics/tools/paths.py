"""Which paths the tools may touch: confinement to the workspace and the hidden-file rules.

Every tool goes through `Confinement.resolve` (for a path the model named) or `Confinement.walk` (for
a search), so there is one place that decides. The rules:

- A path is resolved against the root with every symlink followed (``Path.resolve``); the result must lie
  inside the resolved root. So ``..`` escapes, symlinks out (the last component, a directory in the
  middle, or a chain) and dangling links out are all refused the same way.
- An absolute path is accepted when it resolves inside the workspace (a model may copy one from a
  command's output); answers still use workspace-relative names, and a refused absolute path is never
  echoed back.
- ``~``, NUL bytes, line breaks and overlong paths are refused before touching the file system.
- ``.git``, ``.ipynb_checkpoints`` and whatever the workspace's ``.gitignore`` files (the root one and
  nested ones) ignore are hidden: walks skip them silently, a direct request is told they are hidden.
  The check runs on the path as asked *and* as resolved, so a link to ``.git/config`` is hidden too.

Between resolving and opening there is a window in which a symlink could be swapped in; only a command
the user approved could do that, and writes go through ``os.replace`` onto the resolved path.
"""

from __future__ import annotations

import difflib
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

from twinny_magics.errors import WorkspaceError

HIDDEN_NAMES = frozenset({".git", ".ipynb_checkpoints"})


def _hidden_name(name: str) -> bool:
    # Case-folded: on a case-insensitive file system (macOS, Windows) `.GIT/config` is `.git/config`.
    return name.lower() in HIDDEN_NAMES


# Longer than any real project path; refusing early keeps the OS's ENAMETOOLONG out of the way.
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255


@dataclass(frozen=True)
class Target:
    """A path the model asked for, once it passed the rules.

    ``real`` is the resolved absolute path (for I/O only, never shown); ``rel`` its workspace-relative
    POSIX name ("." for the root), which is what messages say.
    """

    real: Path
    rel: str

    def child(self, name: str) -> str:
        """The relative name of an entry inside this directory."""
        return name if self.rel == "." else f"{self.rel}/{name}"


@dataclass(frozen=True)
class Entry:
    """One visible file or folder found by a walk."""

    real: Path
    rel: str
    is_dir: bool
    link: bool = False


def shown(raw: str) -> str:
    """How a path the model gave is quoted back: never an absolute path of this machine."""
    if raw.startswith(("/", "\\")) or (len(raw) > 1 and raw[1] == ":"):
        return "that absolute path"
    return raw if len(raw) <= 120 else raw[:100] + "…"


class Confinement:
    """The workspace root and its rules; see the module docstring."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise WorkspaceError("The workspace root must be a folder.")
        self._specs: dict[tuple[str, ...], pathspec.GitIgnoreSpec | None] = {}

    def refresh(self) -> None:
        """Forget the cached .gitignore rules (called once per tool call, so edits to them count)."""
        self._specs.clear()

    # --- resolving one path -------------------------------------------------------------------------

    def resolve(self, raw: object, *, default: str = ".") -> Target:
        """The `Target` for a path the model gave, or a `WorkspaceError` the model can act on."""
        if raw is None:
            raw = default
        if not isinstance(raw, str):
            raise WorkspaceError(f"A path must be a string, like 'src/app.py' (got {type(raw).__name__}).")
        raw = raw.strip() or default
        if "\x00" in raw:
            raise WorkspaceError(
                "The path contains a NUL character; give a plain relative path like src/app.py."
            )
        if "\n" in raw or "\r" in raw:
            raise WorkspaceError("The path contains a line break; give one relative path like src/app.py.")
        if len(raw) > MAX_PATH_CHARS or any(len(p.encode()) > MAX_NAME_BYTES for p in raw.split("/")):
            raise WorkspaceError(
                f"The path is too long ({len(raw)} characters); give a shorter relative path."
            )
        if raw.startswith("~"):
            raise WorkspaceError(
                f"{shown(raw)} is in the home folder, outside the workspace. Paths are relative to the "
                "workspace root, like src/app.py; list_dir shows what is there."
            )
        given = Path(raw)
        candidate = given if given.is_absolute() else self.root / given
        try:
            real = candidate.resolve(strict=False)
        except RuntimeError:  # Python < 3.13 reports a symlink loop this way
            raise WorkspaceError(f"{shown(raw)} is a symbolic link loop; it cannot be used.") from None
        except OSError as exc:
            raise WorkspaceError(_os_message(shown(raw), exc)) from None
        if not real.is_relative_to(self.root):
            raise WorkspaceError(self._outside_message(raw, candidate))
        rel = _relname(real, self.root)
        called = rel if given.is_absolute() else shown(raw)
        # Checked as written, as normalized and as resolved: `.git/../.git/HEAD`, `ignored/../x` and a
        # link to `.git/config` are all caught.
        lexical = Path(os.path.normpath(candidate))
        normal = _relname(lexical, self.root) if lexical.is_relative_to(self.root) else rel
        for index, name in enumerate((rel if given.is_absolute() else raw, normal, rel)):
            part = next((p for p in PurePosixPath(name).parts if _hidden_name(p)), None)
            # The path as written may hold `..`, so the ignore rules are checked on the other two only.
            if part is not None or (index > 0 and self.is_hidden(name, is_dir=(self.root / name).is_dir())):
                raise WorkspaceError(_hidden_message(called, part))
        return Target(real, rel)

    def _outside_message(self, raw: str, candidate: Path) -> str:
        """Why a path that resolved outside the root was refused, in words the model can use."""
        lexical = Path(os.path.normpath(candidate))
        if lexical.is_relative_to(self.root):
            reason = "goes through a symbolic link that leads outside the workspace"
        elif Path(raw).is_absolute():
            reason = "is outside the workspace"
        else:
            reason = "goes above the workspace root ('..')"
        return (
            f"{shown(raw)} {reason}, so it cannot be used. Paths are relative to the workspace root, "
            "like src/app.py; list_dir shows what is there."
        )

    # --- hidden and ignored -------------------------------------------------------------------------

    def is_hidden(self, rel: str, *, is_dir: bool) -> bool:
        """Whether a workspace-relative path is hidden (.git, checkpoints, or ignored, also via a parent)."""
        if rel in (".", ""):
            return False
        parts = tuple(rel.split("/"))
        if any(_hidden_name(part) for part in parts):
            return True
        # An ignored folder hides everything under it: git cannot re-include a file inside one either.
        return any(self._ignored(parts[:i], is_dir=True) for i in range(1, len(parts))) or self._ignored(
            parts, is_dir=is_dir
        )

    def _ignored(self, parts: tuple[str, ...], *, is_dir: bool) -> bool:
        """Whether the .gitignore files say so, given that no parent folder is ignored."""
        if parts and _hidden_name(parts[-1]):
            return True
        verdict: bool | None = None
        # Deeper .gitignore files come later and win, as in git.
        for depth in range(len(parts)):
            spec = self._spec(parts[:depth])
            if spec is None:
                continue
            sub = "/".join(parts[depth:]) + ("/" if is_dir else "")
            include = spec.check_file(sub).include
            if include is not None:
                verdict = include
        return bool(verdict)

    def _spec(self, folder: tuple[str, ...]) -> pathspec.GitIgnoreSpec | None:
        """The rules of ``folder/.gitignore``, or None; read once per tool call."""
        if folder in self._specs:
            return self._specs[folder]
        spec = None
        path = self.root.joinpath(*folder, ".gitignore")
        try:
            # A .gitignore that is a link out of the workspace is not read: its text is not ours.
            if path.is_file() and path.resolve().is_relative_to(self.root):
                spec = pathspec.GitIgnoreSpec.from_lines(
                    path.read_text(encoding="utf-8", errors="replace").splitlines()
                )
        except (OSError, ValueError):
            spec = None
        self._specs[folder] = spec
        return spec

    # --- walking ------------------------------------------------------------------------------------

    def entries(self, folder: Target, *, strict: bool = False) -> Iterator[Entry]:
        """The visible entries of one folder, sorted: folders first, then by name.

        A folder that cannot be read has no entries for a walk; with ``strict`` it is an error instead.
        """
        try:
            with os.scandir(folder.real) as it:
                found = list(it)
        except OSError as exc:
            if strict:
                raise WorkspaceError(_os_message(folder.rel, exc)) from None
            return
        found.sort(key=lambda e: (not _is_dir(e), e.name.lower(), e.name))
        for dirent in found:
            entry = self._visible(folder, dirent)
            if entry is not None:
                yield entry

    def _visible(self, folder: Target, dirent: os.DirEntry[str]) -> Entry | None:
        """The entry, or None when it is hidden or a link that leads out (skipped silently)."""
        rel = folder.child(dirent.name)
        if "\n" in dirent.name or "\r" in dirent.name:
            return None  # a name no tool call could name back
        if dirent.is_symlink():
            try:
                real = Path(dirent.path).resolve(strict=True)
            except (OSError, RuntimeError):
                return None  # dangling or looping
            if not real.is_relative_to(self.root):
                return None
            is_dir = real.is_dir()
            if self.is_hidden(rel, is_dir=is_dir) or self.is_hidden(_relname(real, self.root), is_dir=is_dir):
                return None
            return Entry(real, rel, is_dir, link=True)
        is_dir = _is_dir(dirent)
        if self._ignored(tuple(rel.split("/")), is_dir=is_dir):
            return None
        return Entry(Path(dirent.path), rel, is_dir)

    def walk(self, start: Target, limit: int) -> Walk:
        """Every visible entry under ``start``, depth first, at most ``limit`` of them."""
        return Walk(self, start, limit)

    def suggestions(self, raw: str, limit: int, n: int = 4) -> list[str]:
        """Existing visible names closest to a path that does not exist."""
        names = [e.rel + ("/" if e.is_dir else "") for e in self.walk(Target(self.root, "."), limit)]
        wanted = raw.strip().strip("/")
        close = difflib.get_close_matches(wanted, names, n=n, cutoff=0.6)
        base = wanted.rsplit("/", 1)[-1]
        by_base = {name.rstrip("/").rsplit("/", 1)[-1]: name for name in names}
        for match in difflib.get_close_matches(base, list(by_base), n=n, cutoff=0.7):
            if by_base[match] not in close:
                close.append(by_base[match])
        return close[:n]


class Walk:
    """A depth-first walk of visible entries; ``truncated`` tells whether it stopped at the limit.

    Symlinked folders are listed but not entered, so a link cannot make a walk loop or visit a file
    twice.
    """

    def __init__(self, confinement: Confinement, start: Target, limit: int) -> None:
        self._confinement = confinement
        self._start = start
        self._limit = limit
        self.truncated = False

    def __iter__(self) -> Iterator[Entry]:
        count = 0
        stack = [self._start]
        while stack:
            folder = stack.pop()
            children = list(self._confinement.entries(folder))
            for entry in children:
                count += 1
                if count > self._limit:
                    self.truncated = True
                    return
                yield entry
            # Reversed so that the stack pops folders in sorted order.
            stack.extend(Target(e.real, e.rel) for e in reversed(children) if e.is_dir and not e.link)


def _is_dir(dirent: os.DirEntry[str]) -> bool:
    try:
        return dirent.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _relname(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() or "."


def _hidden_message(name: str, part: str | None) -> str:
    why = (
        f"{part} is hidden from the tools"
        if part
        else "it is ignored by .gitignore, so the tools do not show it"
    )
    return f"{name} is not available: {why}. list_dir shows the files you can use."


def _os_message(name: str, exc: OSError) -> str:
    """An OSError as the model reads it: the reason only, since ``str(exc)`` holds the absolute path."""
    if exc.errno == errno.ENAMETOOLONG:
        return f"{name} is too long for the file system; give a shorter path."
    if exc.errno == errno.ELOOP:
        return f"{name} is a symbolic link loop; it cannot be used."
    return f"{name} cannot be used: {exc.strerror or type(exc).__name__}."
