"""What a question asks and how its answer is judged.

A check is one of:

- a regular expression (a ``str``, searched case-insensitively, or a compiled ``re.Pattern`` with its own
  flags) the answer must match, ``Not(pattern)`` one it must not, or a list of these (all must hold);
- ``Files({path: content})``: the workspace after the run (edits are applied on the run's own copy):
  each file with exactly that text (``None``: the file must not exist; a compiled pattern: its text must
  match), and no other file changed. Only files inside the copy are read: a path that is, or goes
  through, a symbolic link fails the check and says so (the link is not followed: a link in the
  workspace, or one a run's command made, could point at ``~/.ssh/id_rsa``, whose text the report
  would show), as does a file with other names (hard links) or one that is not a regular file;
- a function ``check(reply, workspace) -> bool | str`` given the :class:`~twinny_magics.events.Reply`
  and the path of the run's copy of the workspace: ``True`` passes, ``False`` fails, a string fails and
  says why. Anything else it returns (``None`` from a forgotten ``return``) fails and says so; an
  exception fails the run with the error shown, and the experiment goes on.

Checks are made and validated when the :class:`Question` is made, before anything runs. What is saved
with the results (:func:`describe`) rebuilds every check but a function, which is kept by name.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twinny_magics.events import Reply

#: How strings are searched: a small model writes "Port 8000" as often as "port 8000".
PATTERN_FLAGS = re.IGNORECASE
#: Characters of a name made from a question's text.
NAME_CHARS = 40

CheckFunction = Callable[["Reply", Path], object]


@dataclass(frozen=True)
class Not:
    """A pattern the answer must not match (a plausible wrong value, "I don't know", the question)."""

    pattern: str | re.Pattern[str]


@dataclass(frozen=True)
class Verdict:
    """How one run's answer was judged: passed or not, why not, and whether the check itself raised."""

    passed: bool
    why: str = ""
    raised: bool = False


Pattern = str | re.Pattern[str] | Not


class Files:
    """The workspace after the run: these files with this content, and no other file changed.

    ``expected`` maps a path relative to the workspace (``/`` separated) to its whole text, to a compiled
    pattern its text must match, or to ``None`` for a file that must not exist.
    """

    def __init__(
        self, expected: Mapping[str, str | re.Pattern[str] | None], *, others_unchanged: bool = True
    ) -> None:
        if not isinstance(expected, Mapping) or not expected:
            raise TypeError("Files takes a dict of path -> expected text (or a compiled pattern, or None).")
        self.expected: dict[str, str | re.Pattern[str] | None] = {}
        for path, content in expected.items():
            if not isinstance(content, str | re.Pattern) and content is not None:
                raise TypeError(
                    f"Files: {path!r} -> {type(content).__name__}; give the text, a compiled pattern or None."
                )
            self.expected[_relative(path)] = content
        self.others_unchanged = others_unchanged

    def __repr__(self) -> str:
        return f"Files({self.expected!r})"

    def judge(self, root: Path, changed: Sequence[str]) -> Verdict:
        """Judge the copy at ``root``; ``changed`` are the paths that differ from the workspace before."""
        problems: list[str] = []
        for path, content in self.expected.items():
            found = read_inside(root, path)
            if content is None:
                if found.kind != "missing":
                    problems.append(f"{path} should not exist" + (f": it {found.why}" if found.why else ""))
                continue
            if found.text is None:
                problems.append(f"{path} is missing" if found.kind == "missing" else f"{path} {found.why}")
                continue
            text = found.text
            if isinstance(content, re.Pattern):
                if not content.search(text):
                    problems.append(f"{path} does not match /{content.pattern}/")
            elif text != content:
                problems.append(f"{path} differs from what was expected:\n{_diff(content, text, path)}")
        if self.others_unchanged:
            others = [p for p in changed if p not in self.expected]
            if others:
                problems.append("other files changed too: " + ", ".join(others[:8]))
        return Verdict(not problems, "; ".join(problems))


def _relative(path: str) -> str:
    pure = PurePosixPath(str(path).replace("\\", "/"))
    if not str(path) or pure.is_absolute() or ".." in pure.parts or str(pure) == "." or "\x00" in str(path):
        raise ValueError(f"Files: {path!r} is not a path inside the workspace (e.g. 'src/app.py').")
    return str(pure)


@dataclass(frozen=True)
class Found:
    """What a check found at a path of the run's copy: ``missing``, a ``file`` and its ``text``, or
    ``refused`` (a link, a pipe, a folder…: nothing read) and ``why``, said in the verdict."""

    kind: str
    text: str | None = None
    why: str = ""


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOT_FOLLOWED = "the check reads only files inside the run's copy and does not follow links"


def read_inside(root: Path, path: str) -> Found:
    """The file at ``path`` (relative, checked by `_relative`) inside ``root``, read with no link followed.

    Each folder on the way is opened from the one before it, refusing a symbolic link, so a link swapped
    in meanwhile is refused too; the file itself is opened without following a link and without waiting
    (a named pipe would block), then must be a regular file with no other name.
    """
    parts = PurePosixPath(path).parts
    try:
        fd = os.open(root, os.O_RDONLY | _DIRECTORY)
    except OSError:
        return Found("missing")
    try:
        for depth, name in enumerate(parts):
            shown = "/".join(parts[: depth + 1])
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                return Found("missing")
            if stat.S_ISLNK(info.st_mode):
                where = "is a symbolic link" if depth == len(parts) - 1 else f"goes through {shown}, a link"
                return Found("refused", why=f"{where} ({_NOT_FOLLOWED})")
            last = depth == len(parts) - 1
            if not last and not stat.S_ISDIR(info.st_mode):
                return Found("missing")
            flags = os.O_RDONLY | _NOFOLLOW | (_NONBLOCK if last else _DIRECTORY)
            try:
                inner = os.open(name, flags, dir_fd=fd)
            except OSError as error:
                return Found("refused", why=f"cannot be opened ({error.strerror or error})")
            os.close(fd)
            fd = inner
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            return Found("refused", why=f"is {what}")
        if info.st_nlink > 1:
            return Found("refused", why="has other names (hard links) that may lie outside the copy")
        with os.fdopen(os.dup(fd), "rb") as handle:
            return Found("file", handle.read().decode("utf-8", errors="replace"))
    finally:
        os.close(fd)


def _diff(expected: str, actual: str, path: str, lines: int = 12) -> str:
    diff = difflib.unified_diff(
        expected.splitlines(),
        actual.splitlines(),
        f"{path} (expected)",
        f"{path} (after the run)",
        lineterm="",
    )
    shown = list(diff)
    more = f"\n… {len(shown) - lines} more diff lines" if len(shown) > lines else ""
    return "\n".join(shown[:lines]) + more


class Question:
    """One question, its check (see the module docstring) and a short name for tables.

    The name defaults to the question's text, shortened; it is how ``results[name, variant]``,
    ``compare`` and ``resume`` find the question, so keep it when you edit the text.
    """

    def __init__(self, text: str, check: object = None, *, name: str | None = None) -> None:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("A question needs its text (a non-empty string).")
        self.text = text
        self.check = check
        self.name = (name if name is not None else _short(text)).strip()
        if not self.name:
            raise ValueError(f"Question {text[:40]!r}: its name is empty.")
        self._patterns = _patterns(check, self.name)

    def __repr__(self) -> str:
        return f"Question({self.text!r}, check={self.check!r}, name={self.name!r})"

    @property
    def graded(self) -> bool:
        """Whether the question has a check (without one, a run only records the answer)."""
        return self.check is not None

    @property
    def edits_files(self) -> bool:
        """Whether the check looks at files."""
        return isinstance(self.check, Files)

    def judge(self, reply: Reply, root: Path, changed: Sequence[str]) -> Verdict:
        """Judge one run's reply (and the copy of the workspace it ran in); never raises."""
        check = self.check
        try:
            if check is None:
                return Verdict(False, "no check")
            if isinstance(check, Files):
                return check.judge(root, changed)
            if self._patterns is not None:
                return _match(self._patterns, reply.text)
            return _answer(check(reply, root) if callable(check) else None, check)
        except AssertionError as error:
            return Verdict(False, f"AssertionError: {error}" if str(error) else "AssertionError", raised=True)
        except Exception as error:
            return Verdict(False, f"the check raised {type(error).__name__}: {error}", raised=True)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1].rstrip() + "…"


def _patterns(check: object, name: str) -> list[tuple[re.Pattern[str], bool]] | None:
    """The compiled patterns of a pattern check (with whether each must not match), else None."""
    if check is None or isinstance(check, Files) or (callable(check) and not isinstance(check, Not)):
        return None
    items = list(check) if isinstance(check, list | tuple) else [check]
    if not items:
        raise ValueError(f"Question {name!r}: an empty list of patterns checks nothing; give None instead.")
    compiled = []
    for item in items:
        negate = isinstance(item, Not)
        pattern = item.pattern if isinstance(item, Not) else item
        if isinstance(pattern, re.Pattern):
            compiled.append((pattern, negate))
        elif isinstance(pattern, str):
            try:
                compiled.append((re.compile(pattern, PATTERN_FLAGS), negate))
            except re.error as error:
                raise ValueError(
                    f"Question {name!r}: {pattern!r} is not a regular expression ({error})."
                ) from None
        else:
            raise TypeError(
                f"Question {name!r}: a check is a regex (str or re.Pattern), Not(regex), a list of them, "
                f"Files({{...}}) or a function (reply, workspace) -> bool | str; not {type(item).__name__}."
            )
    return compiled


def _match(patterns: list[tuple[re.Pattern[str], bool]], answer: str) -> Verdict:
    problems = []
    for pattern, negate in patterns:
        found = pattern.search(answer)
        if found and negate:
            problems.append(f"matches /{pattern.pattern}/ (it must not): {found.group(0)!r}")
        elif not found and not negate:
            problems.append(f"does not match /{pattern.pattern}/")
    return Verdict(not problems, "the answer " + "; ".join(problems) if problems else "")


def _answer(value: object, check: object) -> Verdict:
    if value is True:
        return Verdict(True)
    if value is False:
        return Verdict(False, f"{_name(check)} returned False")
    if isinstance(value, str):
        return Verdict(False, value or f"{_name(check)} returned an empty reason")
    return Verdict(
        False,
        f"{_name(check)} returned {type(value).__name__}, not True, False or a reason "
        "(a check must return its verdict)",
        raised=True,
    )


def _name(check: object) -> str:
    return str(getattr(check, "__qualname__", None) or type(check).__name__)


# -- saving ------------------------------------------------------------------------------------------------


def describe(check: object) -> dict[str, Any] | None:
    """A check as JSON: patterns and files in full, a function by its name."""
    if check is None:
        return None
    if isinstance(check, Files):
        return {
            "kind": "files",
            "expected": {
                path: _pattern_json(value) if isinstance(value, re.Pattern) else value
                for path, value in check.expected.items()
            },
            "others_unchanged": check.others_unchanged,
        }
    if callable(check) and not isinstance(check, Not):
        return {"kind": "function", "name": _name(check)}
    items = list(check) if isinstance(check, list | tuple) else [check]
    patterns = []
    for item in items:
        pattern = item.pattern if isinstance(item, Not) else item
        patterns.append({**_pattern_json(pattern), "not": isinstance(item, Not)})
    return {"kind": "answer", "patterns": patterns}


def _pattern_json(pattern: object) -> dict[str, Any]:
    # A string is compiled with PATTERN_FLAGS when the question is made, so it is saved as a string.
    if isinstance(pattern, re.Pattern):
        return {"pattern": pattern.pattern, "flags": int(pattern.flags)}
    return {"pattern": str(pattern)}


def _pattern_from(saved: dict[str, Any]) -> str | re.Pattern[str]:
    pattern = str(saved["pattern"])
    return re.compile(pattern, int(saved["flags"])) if "flags" in saved else pattern


def restore(described: dict[str, Any] | None) -> object:
    """The check :func:`describe` saved (a function comes back as a stand-in that cannot judge)."""
    if described is None:
        return None
    kind = described.get("kind")
    if kind == "files":
        expected: dict[str, str | re.Pattern[str] | None] = {
            path: _pattern_from(value) if isinstance(value, dict) else value
            for path, value in described["expected"].items()
        }
        return Files(expected, others_unchanged=bool(described.get("others_unchanged", True)))
    if kind == "function":
        return SavedFunction(str(described.get("name", "check")))
    if kind == "answer":
        return [
            Not(_pattern_from(item)) if item.get("not") else _pattern_from(item)
            for item in described["patterns"]
        ]
    raise ValueError(f"A saved check of unknown kind {kind!r}.")


class SavedFunction:
    """A function check as loaded from saved results: it keeps its name but cannot judge."""

    def __init__(self, name: str) -> None:
        self.__qualname__ = name

    def __repr__(self) -> str:
        return f"<check {self.__qualname__} (a function: not saved)>"

    def __call__(self, reply: Reply, root: Path) -> bool:
        raise RuntimeError(
            f"The check {self.__qualname__} is a function; results do not keep one: give the Question again."
        )
