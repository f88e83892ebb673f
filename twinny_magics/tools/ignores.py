"""The ignore rules as git has them: where they come from, and each file parsed once.

git reads, from lowest to highest priority: the ``core.excludesFile`` (by default
``$XDG_CONFIG_HOME/git/ignore`` or ``~/.config/git/ignore``), the repository's ``info/exclude``, then
every ``.gitignore`` from the repository's top down to the file's folder; within that order the last
matching pattern wins. `outer_sources` finds the first three kinds for a workspace — the repository is
the workspace root's, or that of a folder above it when the notebook lives inside a repository — and
`Confinement` adds the ``.gitignore`` files inside the workspace.

``core.excludesFile`` is asked of ``git config`` (with a timeout) when git is installed, since it may
come from an included or a conditional config file; without git, the ``[core]`` section of
``$GIT_CONFIG_GLOBAL`` or ``~/.gitconfig``, ``$XDG_CONFIG_HOME/git/config`` and the repository's
``config`` is read directly (no includes). It is looked up once per workspace.

`load_rules` keeps each parsed file keyed by its path and ``(device, inode, size, mtime_ns,
ctime_ns)``: a 100k-line ``.gitignore`` is parsed once, and an edit to it counts from the next tool call.
A file changed within the last two seconds is also compared by content, since a file system's clock may
not tick between two quick writes of the same size. A file that starts with a UTF-8 byte order mark is
read as git reads it, without the mark.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import stat
import subprocess
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import pathspec

# Rules files are small; a bigger one is read up to here (the rest is not applied).
MAX_RULES_BYTES = 32 * 1024 * 1024
# Past this many distinct wildcard last parts, the name filter is not worth compiling.
MAX_FILTER_GLOBS = 2_000
CACHED_FILES = 512
# A file changed this recently is compared by content too (the racy-git rule).
RACY_NS = 2_000_000_000
GIT_TIMEOUT = 2.0


class NameFilter:
    """Which last path parts some pattern could match: a set of literal names and one regex for the
    wildcard ones. A path whose last part passes no pattern's last part matches no pattern, so the
    matcher's loop over every pattern (a 100k-line .gitignore) is skipped. Only the path's own last
    part is tested: a match through a folder above (``build/`` for ``build/x``) is the caller's, who
    checks every folder on the way (a walk never enters an ignored folder).
    """

    def __init__(self, literal: frozenset[str], globs: re.Pattern[str] | None, *, fold: bool) -> None:
        self._literal = literal
        self._globs = globs
        self._fold = fold

    @classmethod
    def build(cls, lines: list[str], *, fold: bool = False, negations: bool = True) -> NameFilter | None:
        """The filter for gitignore lines; None when it cannot be sure (escapes, too many wildcards).

        With ``negations``, ``!pattern`` lines count too (they change a verdict as well).
        """
        literal: set[str] = set()
        globs: set[str] = set()
        for raw in lines:
            line = raw.rstrip(" ")
            if not line or line.startswith("#"):
                continue
            if line.startswith("!"):
                if not negations:
                    continue
                line = line[1:]
            if "\\" in line:
                return None  # an escaped character: leave it to the matcher
            last = line.strip("/").rsplit("/", 1)[-1]
            if fold:
                last = last.lower()
            if not last:
                continue
            if "[" in last:
                globs.add(".")  # git's classes ([^a], [[:alpha:]]) are not fnmatch's: let all through
            elif "*" in last or "?" in last:
                globs.add(fnmatch.translate(last))
            else:
                literal.add(last)
        if len(globs) > MAX_FILTER_GLOBS:
            return None
        try:
            regex = re.compile("|".join(sorted(globs))) if globs else None
        except re.error:
            return None
        return cls(frozenset(literal), regex, fold=fold)

    def may_match(self, name: str) -> bool:
        """Whether a path whose last part is ``name`` could match some pattern."""
        if self._fold:
            name = name.lower()
        return name in self._literal or (self._globs is not None and self._globs.match(name) is not None)


class Rules:
    """One ignore file's patterns: `check` says whether a path relative to its folder is ignored."""

    def __init__(self, spec: pathspec.GitIgnoreSpec, names: NameFilter | None) -> None:
        self.spec = spec
        self._names = names

    def check(self, path: str) -> bool | None:
        """True (ignored), False (re-included by ``!``) or None (no pattern says), for ``path``
        (ending in ``/`` for a folder); the folders above it are the caller's to check."""
        if self._names is not None and not self._names.may_match(path.rstrip("/").rsplit("/", 1)[-1]):
            return None
        return self.spec.check_file(path).include


@dataclass
class _Parsed:
    key: tuple[int, ...]
    digest: bytes
    spec: Rules | None


_CACHE: OrderedDict[str, _Parsed] = OrderedDict()
_LOCK = threading.Lock()


def load_rules(path: Path) -> Rules | None:
    """The parsed rules of one ignore file, or None if it is missing, not a file or unreadable."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    name = str(path)
    with _LOCK:
        cached = _CACHE.get(name)
        if cached is not None:
            _CACHE.move_to_end(name)
    if cached is not None and cached.key == key and time.time_ns() - info.st_mtime_ns > RACY_NS:
        return cached.spec
    data = _read(path)
    if data is None:
        return None
    digest = hashlib.blake2b(data, digest_size=16).digest()
    if cached is not None and cached.digest == digest:
        cached.key = key
        return cached.spec
    spec = parse_rules(data)
    with _LOCK:
        _CACHE[name] = _Parsed(key, digest, spec)
        _CACHE.move_to_end(name)
        while len(_CACHE) > CACHED_FILES:
            _CACHE.popitem(last=False)
    return spec


def parse_rules(data: bytes) -> Rules | None:
    """Rules from a file's bytes: UTF-8 with an optional byte order mark, lines split on LF as git does."""
    text = data.decode("utf-8-sig", errors="replace")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError):
        return None
    return Rules(spec, NameFilter.build(lines))


def _read(path: Path) -> bytes | None:
    """A regular file's bytes, opened so that a pipe swapped in cannot block (None on any failure)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_RULES_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


# --- where the rules come from ---------------------------------------------------------------------


def find_repository(root: Path) -> tuple[Path, Path] | None:
    """The top of the git work tree holding ``root`` (itself or a folder above) and its common git dir."""
    for folder in (root, *root.parents):
        dotgit = folder / ".git"
        try:
            if dotgit.is_dir():
                return folder, dotgit
            if dotgit.is_file():  # a linked worktree or a submodule: "gitdir: <path>"
                text = dotgit.read_text(encoding="utf-8", errors="replace").strip()
                if not text.startswith("gitdir:"):
                    return None
                gitdir = (folder / text.removeprefix("gitdir:").strip()).resolve()
                common = gitdir / "commondir"
                if common.is_file():
                    gitdir = (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
                return folder, gitdir
        except (OSError, RuntimeError, ValueError):
            return None
    return None


def outer_sources(root: Path) -> list[tuple[Path, Path]]:
    """The rule files from outside the workspace, lowest priority first, each with the folder its
    patterns are relative to: the excludes file, ``info/exclude``, and the ``.gitignore`` files of the
    repository's folders above ``root``."""
    repo = find_repository(root)
    top = repo[0] if repo else root
    sources: list[tuple[Path, Path]] = []
    excludes = excludes_file(root, top, repo[1] if repo else None)
    if excludes is not None:
        sources.append((excludes, top))
    if repo is not None:
        sources.append((repo[1] / "info" / "exclude", top))
        above = [folder for folder in root.parents if folder.is_relative_to(top)]
        sources.extend((folder / ".gitignore", folder) for folder in reversed(above))
    return sources


def excludes_file(root: Path, top: Path, gitdir: Path | None) -> Path:
    """Where ``core.excludesFile`` points (or git's default), as git would say in ``root``.

    A relative value is taken from the work tree's top, where git runs its commands."""
    configured = _git_config(root)
    if configured is None:
        configured = _read_config(gitdir)
    if configured:
        return Path(os.path.expanduser(configured)) if configured.startswith("~") else top / configured
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path(os.path.expanduser("~")) / ".config"
    return base / "git" / "ignore"


def _git_config(root: Path) -> str | None:
    """``git config --path --get core.excludesFile`` in ``root``: the value, "" if unset, None if unknown."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, "config", "--path", "--get", "core.excludesFile"],
            cwd=root,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode == 1:
        return ""  # not set
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="replace").strip()


def _read_config(gitdir: Path | None) -> str:
    """``core.excludesFile`` read from the config files directly (the last one that sets it wins)."""
    home = Path(os.path.expanduser("~"))
    xdg = os.environ.get("XDG_CONFIG_HOME")
    files = [Path(xdg) / "git" / "config" if xdg else home / ".config" / "git" / "config"]
    files.append(
        Path(os.environ["GIT_CONFIG_GLOBAL"]) if os.environ.get("GIT_CONFIG_GLOBAL") else home / ".gitconfig"
    )
    if gitdir is not None:
        files.append(gitdir / "config")
    value = ""
    for path in files:
        value = _config_value(path, "core", "excludesfile") or value
    return value


def _config_value(path: Path, section: str, key: str) -> str | None:
    """One key of a git config file's plain ``[section]`` (names are case-insensitive in git)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None
    found = None
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            current = line[1 : line.find("]")].strip().lower() if "]" in line else ""
            line = line[line.find("]") + 1 :].strip() if "]" in line else ""
            if not line:
                continue
        name, sep, value = line.partition("=")
        if current == section and sep and name.strip().lower() == key:
            value = value.split(" #", 1)[0].split(" ;", 1)[0].strip()
            found = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    return found
