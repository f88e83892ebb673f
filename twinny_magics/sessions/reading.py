"""Reading JSON that a person may have edited or a crash may have cut: every field checked as it is read.

A saved session is data from disk, so it is read the way a tool result is: as possibly wrong. `Reader`
wraps one JSON object with where it sits (``replies[2].steps[0]``), and each getter checks the type it
returns, so a bad file fails at once with the field it broke on — never later, in the middle of a
reply, with a ``KeyError`` from deep in the loop.

Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from twinny_magics.errors import TwinnyError

_MISSING: Any = object()


class SessionFileError(TwinnyError, ValueError):
    """A session file that cannot be read (not one, too new, cut short, edited, too big) or written.

    The message names the file and says what to do. Nothing is lost: a failed load leaves the session in
    use as it was, a failed save leaves the file that was there whole.
    """


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past a float's range
        return False


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list"}.get(
        type(value), "an object" if isinstance(value, dict) else type(value).__name__
    )


class Reader:
    """One JSON object and where it is; the getters check types and name the field that is wrong."""

    def __init__(self, data: Any, where: str = "the document") -> None:
        if not isinstance(data, dict):
            raise SessionFileError(f"{where}: expected an object, found {_kind(data)}")
        self.data: dict[str, Any] = data
        self.where = where

    def _get(self, key: str, default: Any) -> Any:
        value = self.data.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise SessionFileError(f"{self._at(key)}: missing")
            return default
        return value

    def _at(self, key: str) -> str:
        return key if self.where == "the document" else f"{self.where}.{key}"

    def _wrong(self, key: str, what: str, value: Any) -> SessionFileError:
        return SessionFileError(f"{self._at(key)}: expected {what}, found {_kind(value)} {_shown(value)}")

    def has(self, key: str) -> bool:
        """Whether the object has ``key`` at all."""
        return key in self.data

    def text(self, key: str, default: Any = _MISSING) -> str:
        """Text."""
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self._wrong(key, "text", value)
        return value

    def opt_text(self, key: str) -> str | None:
        """Text or null (missing: null)."""
        value = self._get(key, None)
        if value is not None and not isinstance(value, str):
            raise self._wrong(key, "text or null", value)
        return value

    def whole(self, key: str, default: Any = _MISSING) -> int:
        """A whole number (not a boolean)."""
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong(key, "a whole number", value)
        return value

    def opt_whole(self, key: str) -> int | None:
        """A whole number or null (missing: null)."""
        value = self._get(key, None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self._wrong(key, "a whole number or null", value)
        return value

    def real(self, key: str, default: Any = _MISSING) -> float:
        """A finite number (JSON's ``1e400`` reads as infinity: refused like any other wrong value)."""
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
            raise self._wrong(key, "a number", value)
        return float(value)

    def opt_real(self, key: str) -> float | None:
        """A number or null (missing: null)."""
        value = self._get(key, None)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
            raise self._wrong(key, "a number or null", value)
        return float(value)

    def flag(self, key: str, default: Any = _MISSING) -> bool:
        """true or false."""
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self._wrong(key, "true or false", value)
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: Any = _MISSING) -> str:
        """One of ``choices``."""
        value = self._get(key, default)
        if value not in choices:
            raise self._wrong(key, "one of " + ", ".join(choices), value)
        return str(value)

    def obj(self, key: str, default: Any = _MISSING) -> Reader:
        """A nested object."""
        value = self._get(key, default)
        if not isinstance(value, dict):
            raise self._wrong(key, "an object", value)
        return Reader(value, self._at(key))

    def opt_obj(self, key: str) -> Reader | None:
        """A nested object or null (missing: null)."""
        value = self._get(key, None)
        return None if value is None else self.obj(key)

    def raw_dict(self, key: str) -> dict[str, Any]:
        """A nested object as it is (tool arguments, extra request fields: any JSON)."""
        value = self._get(key, {})
        if not isinstance(value, dict):
            raise self._wrong(key, "an object", value)
        return dict(value)

    def items(self, key: str, default: Any = _MISSING) -> list[Any]:
        """A list of anything."""
        value = self._get(key, default)
        if not isinstance(value, list):
            raise self._wrong(key, "a list", value)
        return value

    def texts(self, key: str, default: Any = _MISSING) -> list[str]:
        """A list of text."""
        values = self.items(key, default)
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise SessionFileError(f"{self._at(key)}[{index}]: expected text, found {_kind(value)}")
        return list(values)

    def objs(self, key: str, default: Any = _MISSING) -> Iterator[Reader]:
        """Each object of a list."""
        for index, value in enumerate(self.items(key, default)):
            yield Reader(value, f"{self._at(key)}[{index}]")
