"""``kernel_variables`` holds against objects that fight it, as ``inspect_variable`` does.

The listing asked each value whether it is code (``isinstance``, ``inspect.isroutine``) and named its type
(``getattr(type, "__module__")``) outside any time bound: ``isinstance`` asks an object's ``__class__``
when its type is not the class, and a metaclass may define ``__module__`` or ``__get__`` lookups as its
own code. Each hostile object here would hold the tool for 20 s; the listing must answer within its
bound and still name every variable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from twinny_magics.tools.kernel import bounded
from twinny_magics.tools.kernel.variables import LISTING_SECONDS, kernel_variables

HANG = 20.0
#: The whole listing's bound and a second of slack for a busy machine.
WITHIN = LISTING_SECONDS + 1.0


@pytest.fixture
def hold() -> Iterator[threading.Event]:
    """Released at the end of the test: hostile code waits on it instead of for ever."""
    release = threading.Event()
    yield release
    release.set()
    for _ in range(100):  # let the threads left running end before the next test counts them
        if bounded.still_left() == 0:
            break
        time.sleep(0.05)


def listed(namespace: dict[str, Any]) -> tuple[dict[str, str], float]:
    started = time.monotonic()
    out = kernel_variables(namespace, 50)
    took = time.monotonic() - started
    rows = {line.split(" ", 1)[0]: line for line in out.splitlines()[1:]}
    return rows, took


def test_an_object_whose_class_attribute_hangs_is_listed_within_the_bound(hold: threading.Event) -> None:
    def klass(self: object) -> type:
        hold.wait(HANG)
        return int

    lying = type("Lying", (), {"__class__": property(klass)})
    rows, took = listed({"obj": lying(), "n": 3})
    assert took < WITHIN, rows
    assert rows["obj"].startswith(f"obj ({__name__}.Lying)"), rows
    assert rows["n"] == "n (int): 3"


def test_a_metaclass_whose_module_name_hangs_cannot_hold_up_the_listing(hold: threading.Event) -> None:
    def slow(cls: type) -> str:
        hold.wait(HANG)
        return "slow"

    meta = type("Meta", (type,), {"__module__": property(slow)})
    made = meta("Made", (), {})
    rows, took = listed({"obj": made(), "n": 3})
    assert took < WITHIN, rows
    assert rows["obj"].startswith("obj ("), rows
    assert rows["n"] == "n (int): 3"


def test_a_metaclass_that_hangs_on_any_missing_attribute_cannot_hold_up_the_listing(
    hold: threading.Event,
) -> None:
    """``inspect.isroutine`` asks the type for ``__get__`` and ``__set__``: a metaclass's ``__getattr__``
    answers."""

    class Meta(type):
        def __getattr__(cls, name: str) -> Any:
            hold.wait(HANG)
            raise AttributeError(name)

    made = Meta("Made", (), {})
    rows, took = listed({"obj": made(), "n": 3})
    assert took < WITHIN, rows
    assert rows["obj"].startswith(f"obj ({__name__}.Made)"), rows


def test_many_hostile_objects_stay_within_the_listings_bound_and_are_all_named(hold: threading.Event) -> None:
    class Hangs:
        def __repr__(self) -> str:
            hold.wait(HANG)
            return "late"

        @property
        def shape(self) -> tuple[int, ...]:
            hold.wait(HANG)
            return ()

        @property  # type: ignore[misc]
        def __class__(self) -> type:  # type: ignore[override]
            hold.wait(HANG)
            return int

    namespace: dict[str, Any] = {f"h{n}": Hangs() for n in range(8)}
    namespace["n"] = 3
    rows, took = listed(namespace)
    assert took < WITHIN, rows
    assert len(rows) == 9
    assert rows["h0"].startswith(f"h0 ({__name__}."), rows
    assert "Hangs): (not shown" in rows["h0"]
    assert rows["n"] == "n (int): 3"


def test_a_name_of_a_hostile_string_type_is_listed_by_its_text(hold: threading.Event) -> None:
    class Name(str):
        def lower(self) -> str:  # type: ignore[override]
            hold.wait(HANG)
            return "z"

        def startswith(self, *args: Any) -> bool:  # type: ignore[override]
            hold.wait(HANG)
            return False

        def __getitem__(self, key: Any) -> str:  # type: ignore[override]
            hold.wait(HANG)
            return "z"

    rows, took = listed({Name("weird"): 1, "n": 3})
    assert took < WITHIN, rows
    assert rows["weird"] == "weird (int): 1"
