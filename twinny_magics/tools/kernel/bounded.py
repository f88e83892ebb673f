"""The user's code run under a time bound (`bounded`), and a value's type named without asking the value.

Reading a variable must not run the user's program, except under a bound: `bounded` runs a call (a
repr, a hook, a signature) on a daemon thread waited for `REPR_SECONDS`, then asked to stop and left to
itself; while `LEFT_RUNNING` such calls run on, no more user code starts. What kind a value is and its
type's name come from its real type (``type(x)``, ``type``'s own descriptors), never from the value.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any, TypeVar, cast

from twinny_magics.tools.base import cut_line

#: How long the user code run for one variable (hook, reprs, signature) may take in all.
REPR_SECONDS = 2.0

#: Calls of user code left running past their bound (a repr in a loop that swallows the stop, one
#: blocked in C): while this many run on, no more user code is started.
LEFT_RUNNING = 4

T = TypeVar("T")

# Threads of user code left running past their bound (pruned of those that ended).
_left: list[threading.Thread] = []

_left_lock = threading.Lock()

#: What `bounded` says of a call it left running (the callers' messages test for it).
LEFT_BEHIND = "took too long and may still be running in the background"


def still_left() -> int:
    """How many calls of user code left past their bound are still running."""
    with _left_lock:
        _left[:] = [thread for thread in _left if thread.is_alive()]
        return len(_left)


def has_type(value: object, kind: type | tuple[type, ...]) -> bool:
    """``isinstance`` by the value's real type: never its ``__class__`` (its own code, maybe a lie)."""
    return issubclass(type(value), kind)


def is_code(value: object) -> bool:
    """Whether ``value`` is a module, a class or a routine, by its real type: asks the value nothing
    (``isinstance`` and ``inspect.isroutine`` ask its ``__class__``, its type's ``__get__``)."""
    return issubclass(type(value), (types.ModuleType, type, *ROUTINES))


def type_name(value: object) -> str:
    """The name of ``value``'s type (`class_name`), read without asking the value or its metaclass."""
    return class_name(type(value))


class _Stopped(BaseException):
    """Raised inside a worker that ran past its time (a BaseException: user code's ``except
    Exception`` cannot swallow it)."""


class Budget:
    """The time left for the user code of one variable (``name``); every `bounded` call of it shares the
    deadline."""

    def __init__(self, seconds: float | None = None, name: str = "value") -> None:
        self.seconds = REPR_SECONDS if seconds is None else seconds
        self.deadline = time.monotonic() + self.seconds
        self.name = name

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


def bounded(call: Callable[[], T], seconds: float | None = None) -> tuple[T | None, str | None]:
    """``call()`` on a daemon thread waited for ``seconds`` (`REPR_SECONDS`): ``(result, None)``, or
    ``(None, why)`` with why `LEFT_BEHIND` or "raised ValueError: …" (or, with no time left or too many
    calls left running, why it was not run). Never raises, and never waits past ``seconds``.

    A call still running at the deadline is left to its thread and asked to stop (an exception raised
    in it at its next Python instruction), so a ``while True`` in a repr does not spin forever; one
    blocked in C (a sleep, a lock), or one that swallows the stop, runs on: it is counted, and while
    `LEFT_RUNNING` run on, nothing more is started.
    """
    wait = REPR_SECONDS if seconds is None else seconds
    if wait <= 0:
        return None, "was not run: no time was left for this variable"
    left = still_left()
    if left >= LEFT_RUNNING:
        return None, (
            f"was not run: {left} earlier calls of user code (reprs) are still running in the background"
        )
    box: list[tuple[bool, Any]] = []
    lock = threading.Lock()

    def work() -> None:
        try:
            try:
                outcome: tuple[bool, Any] = (True, call())
            except _Stopped:
                raise
            except BaseException as exc:
                outcome = (False, "raised " + raised(exc))
            with lock:
                box.append(outcome)
        except _Stopped:
            pass

    thread = threading.Thread(target=work, name="twinny-inspect", daemon=True)
    thread.start()
    thread.join(wait)
    with lock:
        if not box:
            _stop(thread)
            with _left_lock:
                _left.append(thread)
            return None, LEFT_BEHIND
    ok, value = box[0]
    return (value, None) if ok else (None, value)


def _stop(thread: threading.Thread) -> None:
    """Ask a worker past its time to stop (CPython; elsewhere it is left to finish)."""
    if thread.ident is None or not hasattr(ctypes, "pythonapi"):
        return
    with contextlib.suppress(Exception):
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Stopped))


def raised(exc: BaseException) -> str:
    """``ValueError: message`` on one short line (the message is the exception's own code: this runs on
    the worker)."""
    kind = class_name(type(exc)).rsplit(".", 1)[-1]
    try:
        message = " ".join(str(exc).split())
    except Exception:
        return kind
    return f"{kind}: {cut_line(message, 120)}" if message else kind


def library_class(module: str, name: str) -> type | None:
    """``module.name`` when that module is already imported and it is a class; never imports, and never
    asks the module for the name (a lazy module's ``__getattr__`` imports, a lookalike's may hang): its
    ``__dict__`` is read."""
    loaded = sys.modules.get(module)
    if not has_type(loaded, types.ModuleType):
        return None
    namespace = MODULE_DICT.__get__(loaded)
    found = dict.get(namespace, name) if has_type(namespace, dict) else None
    return found if has_type(found, type) else None


MODULE_DICT: Any = vars(cast(Any, types.ModuleType))["__dict__"]

ROUTINES: tuple[type, ...] = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
)


def class_name(kind: type) -> str:
    """``DataFrame`` as pandas.DataFrame, a built-in as its bare name, anything else module.Qualname —
    read by ``type``'s own descriptors: a metaclass may define ``__module__`` as a property (its code)."""
    try:
        module, name = _TYPE_MODULE.__get__(kind), _TYPE_QUALNAME.__get__(kind)
    except Exception:
        return "?"
    if type(name) is not str:
        return "?"
    if type(module) is not str:
        return f"?.{name}"
    if module in ("builtins", ""):
        return name
    top = module.split(".", 1)[0]
    if top in ("pandas", "polars", "numpy") and library_class(top, name) is kind:
        return f"{top}.{name}"
    return f"{module}.{name}"


_TYPE_MODULE: Any = type.__dict__["__module__"]

_TYPE_QUALNAME: Any = type.__dict__["__qualname__"]
