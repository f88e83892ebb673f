"""Every number a server says goes through here: checked, or taken as not said. Pure.

A server's JSON may hold anything where a window or a count belongs: ``1e400`` (which Python reads as
``inf``), ``NaN``, ``-1``, ``true``, a float, a string of 5,000 digits (past what ``int()`` converts), or
``10**400`` (an int no float holds). Used unchecked, these escaped from probes and usage parsing as
``OverflowError``/``ValueError`` or planned a window of 10^400 tokens. :func:`checked_int` turns a value
into an int only when it is a whole, finite number in a sane range, and into None otherwise: the same as
a server that did not say.
"""

from __future__ import annotations

import math
from typing import Any

#: The largest window believed (the largest models hold ~10 million tokens; 100 million leaves room).
MAX_WINDOW = 10**8
#: The largest token count believed (a prompt, a reply, a cached prefix).
MAX_COUNT = 10**9
#: Digits a number given as a string may have (more is never a window or a count).
MAX_DIGITS = 12
#: Digits a JSON integer may have before it is read as a number too big to say (``int()`` refuses
#: 4,300 and more by default, and a number that long is never a count).
MAX_JSON_DIGITS = 4000


def checked_int(value: Any, low: int, high: int) -> int | None:
    """``value`` as an int in ``low..high``, or None for anything else.

    Taken: an int (never a bool), a finite float with no fraction, a string of at most 12 ASCII digits.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        number = int(value)
    elif isinstance(value, str):
        digits = value.strip()
        # ASCII and short: "²" passes isdigit() but not int(), and neither do 5,000 digits.
        if not (digits.isascii() and digits.isdigit() and len(digits) <= MAX_DIGITS):
            return None
        number = int(digits)
    else:
        return None
    return number if low <= number <= high else None


def window_size(value: Any) -> int | None:
    """A window in tokens, 1 to 100 million, or None (not said)."""
    return checked_int(value, 1, MAX_WINDOW)


def token_count(value: Any) -> int | None:
    """A count of tokens, 0 to a billion, or None (not said)."""
    return checked_int(value, 0, MAX_COUNT)


def json_int(text: str) -> int | float:
    """A JSON integer as ``json.loads`` reads it, but one too long to convert is an infinity.

    Passed as ``parse_int``: ``int()`` refuses more than 4,300 digits with a ``ValueError``, which lost a
    whole reply (or a whole window answer) to one absurd number in a field nobody reads. As an infinity
    it is one more value the checks above refuse.
    """
    digits = text.lstrip("-")
    if len(digits) > MAX_JSON_DIGITS:
        return -math.inf if text.startswith("-") else math.inf
    return int(text)
