"""Which paths the tools may touch: confinement to the workspace and the hidden-file rules.

Every tool goes through `Confinement.resolve` (for a path the model named) or `Confinement.walk` (for
a search), so there is one place that decides. The rules:

- A path is resolved against the root with every symlink followed (``Path.resolve``); the result must lie
  inside the resolved root. So ``..`` escapes, symlinks out (the last component, a directory in the
  middle, or a chain) and dangling links out are all refused the same way.
- An absolute path is accepted when it resolves inside the workspace (a model may copy one from a
  command's output); answers still use workspace-relative names, and a refused absolute path is never
  echoed back.
- ``~`` (unless the workspace has an entry of that name), NUL bytes, line breaks, text that is not
  UTF-8 and overlong paths are refused before touching the file system.
- Version-control data (``.git``, ``.hg``, ``.svn``, ``.bzr``, ``_darcs``, ``.jj``, ``.pijul``, fossil's
  checkout files, any name ending in ``.git`` such as a bare ``backup.git/``, and copies such as
  ``.git.bak``), ``.ipynb_checkpoints``, ``.twinny_sessions`` (saved sessions) and whatever git ignores
  are hidden: walks skip them silently, a direct request is told they are hidden. The ignore rules are
  git's (see `ignores`): the workspace's ``.gitignore`` files, ``info/exclude``, ``core.excludesFile``
  and the ``.gitignore`` files above the workspace in its repository (unless those would hide the
  workspace root itself).
- Secret files (see `denied`) are withheld: walks skip them silently, a direct request is told why.
- Every check runs on the path as asked *and* as resolved, so a link to ``.git/config`` or to ``.env``
  is refused too. Names are compared case-folded where a case-insensitive file system would make two
  spellings the same file.
- A walk lists exactly what `resolve` accepts: names `resolve` could not take back (with a line break,
  surrounding blanks, bytes that are not UTF-8, or too long) are skipped.

Opening a file or a folder once a path passed these rules is `opening`'s: fd-relative from the root, never
through a link.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from twinny_magics.errors import WorkspaceError
from twinny_magics.tools import ignores
from twinny_magics.tools.denied import SecretFiles
from twinny_magics.tools.opening import FD_RELATIVE, Entry, FolderHandle, Target, open_chain, os_message
from twinny_magics.tools.unwritable import write_refusal

# `.twinny_sessions` holds saved sessions (%agent save): the model's own transcripts, never its evidence.
HIDDEN_NAMES = frozenset(
    {".git", ".ipynb_checkpoints", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul", ".fslckout", "_fossil_"}
    | {".twinny_sessions"}
)


def _hidden_name(name: str) -> bool:
    # Case-folded: on a case-insensitive file system (macOS, Windows) `.GIT/config` is `.git/config`.
    low = name.lower()
    return low in HIDDEN_NAMES or low.endswith(".git") or low.startswith(".git.")


# Longer than any real project path; refusing early keeps the OS's ENAMETOOLONG out of the way.
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255


def shown(raw: str) -> str:
    """How a path the model gave is quoted back: never an absolute path of this machine."""
    if raw.startswith(("/", "\\")) or (len(raw) > 1 and raw[1] == ":"):
        return "that absolute path"
    return raw if len(raw) <= 120 else raw[:100] + "…"


class Confinement:
    """The workspace root and its rules; see the module docstring.

    ``secret_files``: None for `denied.DEFAULT_SECRET_FILES`, a list of gitignore-style patterns to use
    instead, or ``[]`` for no deny list.
    """

    def __init__(self, root: str | os.PathLike[str], *, secret_files: Sequence[str] | None = None) -> None:
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise WorkspaceError("The workspace root must be a folder.")
        self.secrets = SecretFiles(secret_files)
        # Per tool call: which rules apply in each folder (the parsed files are cached in `ignores`).
        self._specs: dict[tuple[str, ...], ignores.Rules | None] = {}
        self._outer: list[tuple[ignores.Rules, str]] | None = None
        # Once per workspace: where the rules from outside it live (git config is asked once).
        self._outer_files: list[tuple[Path, Path]] | None = None

    def refresh(self) -> None:
        """Look at the ignore files again (once per tool call): an edit to one counts from the next call.

        Only their file status is read again; a file whose size and times did not change is not parsed
        again (see `ignores.load_rules`).
        """
        self._specs.clear()
        self._outer = None

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
        if not _utf8(raw):
            raise WorkspaceError("The path is not valid text (a lone surrogate); give a plain relative path.")
        if len(raw) > MAX_PATH_CHARS or any(len(p.encode()) > MAX_NAME_BYTES for p in raw.split("/")):
            raise WorkspaceError(
                f"The path is too long ({len(raw)} characters); give a shorter relative path."
            )
        if raw.startswith("~") and not os.path.lexists(self.root / raw.split("/", 1)[0]):
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
            raise WorkspaceError(os_message(shown(raw), exc)) from None
        if not real.is_relative_to(self.root):
            raise WorkspaceError(self._outside_message(raw, candidate))
        rel = _relname(real, self.root)
        called = rel if given.is_absolute() else shown(raw)
        # Checked as written, as normalized and as resolved: `.git/../.git/HEAD`, `ignored/../x` and a
        # link to `.git/config` are all caught. The path as written may hold `..`, so only the other two
        # are matched against the secret and ignore rules.
        lexical = Path(os.path.normpath(candidate))
        normal = _relname(lexical, self.root) if lexical.is_relative_to(self.root) else rel
        for name in (rel if given.is_absolute() else raw, normal, rel):
            part = next((p for p in PurePosixPath(name).parts if _hidden_name(p)), None)
            if part is not None:
                raise WorkspaceError(_hidden_message(called, part))
        checked = {name: (self.root / name).is_dir() for name in (normal, rel)}
        for name, is_dir in checked.items():
            pattern = self.secrets.match(name, is_dir=is_dir)
            if pattern is not None:
                raise WorkspaceError(_secret_message(called, pattern))
        for name, is_dir in checked.items():
            if self.is_hidden(name, is_dir=is_dir):
                raise WorkspaceError(_hidden_message(called, None))
        return Target(real, rel, self.root)

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
        """Whether git's ignore rules say so, given that no parent folder is ignored."""
        if parts and _hidden_name(parts[-1]):
            return True
        verdict: bool | None = None
        path = "/".join(parts) + ("/" if is_dir else "")
        # Lowest priority first: the rules from outside the workspace, then the .gitignore files from the
        # root down; deeper ones come later and win, as in git.
        for outer, prefix in self._outer_rules():
            include = outer.check(prefix + path)
            if include is not None:
                verdict = include
        for depth in range(len(parts)):
            spec = self._spec(parts[:depth])
            if spec is None:
                continue
            sub = "/".join(parts[depth:]) + ("/" if is_dir else "")
            include = spec.check(sub)
            if include is not None:
                verdict = include
        return bool(verdict)

    def _spec(self, folder: tuple[str, ...]) -> ignores.Rules | None:
        """The rules of ``folder/.gitignore``, or None; looked at once per tool call."""
        if folder in self._specs:
            return self._specs[folder]
        spec = None
        path = self.root.joinpath(*folder, ".gitignore")
        try:
            # A .gitignore that is a link out of the workspace is not read: its text is not ours.
            if os.path.lexists(path) and path.resolve().is_relative_to(self.root):
                spec = ignores.load_rules(path)
        except (OSError, RuntimeError, ValueError):
            spec = None
        self._specs[folder] = spec
        return spec

    def _outer_rules(self) -> list[tuple[ignores.Rules, str]]:
        """The rules from outside the workspace, each with the prefix that makes a workspace path theirs.

        Dropped altogether when they would hide the workspace root itself (a notebook kept in a folder
        the repository ignores): hiding every file would leave the tools nothing to work on.
        """
        if self._outer is not None:
            return self._outer
        if self._outer_files is None:
            self._outer_files = ignores.outer_sources(self.root)
        rules = []
        for path, base in self._outer_files:
            spec = ignores.load_rules(path)
            if spec is not None:
                prefix = _relname(self.root, base)
                rules.append((spec, "" if prefix == "." else prefix + "/"))
        self._outer = rules
        if rules and self._hides_root(rules):
            self._outer = []
        return self._outer

    @staticmethod
    def _hides_root(rules: list[tuple[ignores.Rules, str]]) -> bool:
        """Whether the outside rules ignore the workspace root or a folder between it and their own."""
        chains = [(spec, prefix.rstrip("/").split("/") if prefix else []) for spec, prefix in rules]
        depth = max(len(parts) for _, parts in chains)
        for up in range(depth):  # the root itself, then each folder above it that some rule can see
            verdict: bool | None = None
            for spec, parts in chains:
                if len(parts) > up:
                    include = spec.check("/".join(parts[: len(parts) - up]) + "/")
                    verdict = include if include is not None else verdict
            if verdict:
                return True
        return False

    # --- writes -------------------------------------------------------------------------------------

    def write_refusal(self, target: Target) -> tuple[str, str] | None:
        """Why ``target`` must never be written by a tool, and what to do instead; None if it may be.

        See `unwritable.write_refusal`; git's global excludes file is refused here when it is inside.
        """
        if self._outer_files is None:
            self._outer_files = ignores.outer_sources(self.root)
        for path, _base in self._outer_files:
            try:
                if path.resolve() == target.real:
                    return (
                        "it is one of git's ignore files, which decide what the tools may show.",
                        "Tell the user what to change in it instead.",
                    )
            except (OSError, RuntimeError):
                continue
        return write_refusal(target.rel, root=self.root, import_dirs=self.import_dirs())

    def import_dirs(self) -> list[str]:
        """The workspace folders on the kernel's import path, as relative names ("." is always one)."""
        found = ["."]
        for entry in sys.path:
            try:
                path = Path(entry or ".").resolve()
            except (OSError, RuntimeError, TypeError, ValueError):
                continue
            if path.is_relative_to(self.root):
                rel = _relname(path, self.root)
                if rel not in found:
                    found.append(rel)
        return found

    # --- walking ------------------------------------------------------------------------------------

    def entries(
        self, folder: Target, *, strict: bool = False, handle: FolderHandle | None = None
    ) -> Iterator[Entry]:
        """The visible entries of one folder, sorted: folders first, then by name.

        A folder that cannot be read has no entries for a walk; with ``strict`` it is an error instead.
        The folder is listed through a descriptor opened from the root with no symlink followed, so a
        link swapped in for it cannot list another folder's names; a walk passes the ``handle`` it holds
        open, and it goes with each file that is not a link (for `open_file`).
        """
        own = handle is None
        try:
            held = self.hold(folder) if handle is None else handle
        except WorkspaceError:
            if strict:
                raise
            return
        try:
            try:
                with os.scandir(held.fd if held.fd is not None else folder.real) as it:
                    found = list(it)
            except OSError as exc:
                if strict:
                    raise WorkspaceError(os_message(folder.rel, exc)) from None
                return
            found.sort(key=lambda e: (not _is_dir(e), e.name.lower(), e.name))
            for dirent in found:
                entry = self._visible(folder, dirent, None if own else held)
                if entry is not None:
                    yield entry
        finally:
            if own:
                held.close()

    def hold(self, folder: Target) -> FolderHandle:
        """``folder`` opened from the root with no symlink followed (an empty handle where files
        cannot be opened fd-relative); a `WorkspaceError` if a link was swapped in or it is gone."""
        real = str(folder.real)
        if not FD_RELATIVE or not folder.real.is_relative_to(self.root):
            return FolderHandle(None)
        inner = real[len(str(self.root)) :].strip(os.sep)
        parts = inner.split(os.sep) if inner else []
        return FolderHandle(open_chain(str(self.root), parts, create=False, name=folder.rel))

    def _visible(
        self, folder: Target, dirent: os.DirEntry[str], handle: FolderHandle | None = None
    ) -> Entry | None:
        """The entry, or None when it is hidden, withheld, or a link that leads out (skipped silently)."""
        name = dirent.name
        rel = folder.child(name)
        if not _nameable(name) or len(rel) > MAX_PATH_CHARS:
            return None  # a name no tool call could name back (see `resolve`)
        path = folder.real / name  # (dirent.path is the bare name when listed through a descriptor)
        if dirent.is_symlink():
            try:
                real = path.resolve(strict=True)
            except (OSError, RuntimeError):
                return None  # dangling or looping
            if not real.is_relative_to(self.root):
                return None
            is_dir = real.is_dir()
            target = _relname(real, self.root)
            if (
                self.is_hidden(rel, is_dir=is_dir)
                or self.is_hidden(target, is_dir=is_dir)
                or self.secrets.match(rel, is_dir=is_dir) is not None
                or self.secrets.match(target, is_dir=is_dir) is not None
            ):
                return None
            return Entry(real, rel, is_dir, link=True, root=self.root)
        is_dir = _is_dir(dirent)
        if self._ignored(tuple(rel.split("/")), is_dir=is_dir):
            return None
        # The folders above were checked when the walk entered them.
        if self.secrets and self.secrets.match(rel, is_dir=is_dir, parents=False) is not None:
            return None
        return Entry(path, rel, is_dir, root=self.root, folder=None if is_dir else handle)

    def walk(self, start: Target, limit: int) -> Walk:
        """Every visible entry under ``start``, depth first, at most ``limit`` of them."""
        return Walk(self, start, limit)

    def suggestions(self, raw: str, limit: int, n: int = 4) -> list[str]:
        """Existing visible names closest to a path that does not exist."""
        walk = self.walk(Target(self.root, ".", self.root), limit)
        names = [e.rel + ("/" if e.is_dir else "") for e in walk]
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
            try:
                handle = self._confinement.hold(folder)
            except WorkspaceError:
                continue  # swapped for a link or gone since it was listed: skipped, like any dead entry
            try:
                children = list(self._confinement.entries(folder, handle=handle))
                for entry in children:
                    count += 1
                    if count > self._limit:
                        self.truncated = True
                        return
                    yield entry
            finally:
                handle.close()
            # Reversed so that the stack pops folders in sorted order.
            stack.extend(Target(e.real, e.rel, e.root) for e in reversed(children) if e.is_dir and not e.link)


def _is_dir(dirent: os.DirEntry[str]) -> bool:
    try:
        return dirent.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _nameable(name: str) -> bool:
    """Whether `resolve` can take this name back: no line break, no surrounding blanks, valid text."""
    return "\n" not in name and "\r" not in name and name == name.strip() and _utf8(name)


def _relname(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() or "."


def _hidden_message(name: str, part: str | None) -> str:
    why = (
        f"{part} is hidden from the tools"
        if part
        else "it is ignored by .gitignore (or git's exclude files), so the tools do not show it"
    )
    return f"{name} is not available: {why}. list_dir shows the files you can use."


def _secret_message(name: str, pattern: str) -> str:
    return (
        f"{name} is withheld as a likely secret (it matches {pattern!r} in the deny list of secret files): "
        "the tools never show, search or change such files. Work without it, or ask the user to do the "
        "step that needs it."
    )
