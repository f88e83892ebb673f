"""The kernel's known secrets: a value held under a secret name, hidden wherever its text shows."""

from __future__ import annotations

from collections.abc import Iterable

from .base import MASK
from .env import env_hides

#: A known secret shorter than this is not replaced wherever it shows (`known_secret`).
KNOWN_CHARS = 8


def known_secret(name: str, value: object) -> bool:
    """Whether ``value``, held by a variable or environment variable named ``name``, is a secret to
    hide wherever its text shows: a secret name (`secret_name`), a string of `KNOWN_CHARS` or more, and
    not a reference, a path, a switch or a number (`env_hides`)."""
    return isinstance(value, str) and len(value.strip()) >= KNOWN_CHARS and env_hides(name, value)


def mask_known(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` (values `known_secret` chose) replaced by :data:`MASK`, the
    longest first (a secret that holds another is hidden whole)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text
