"""A change to the workspace waiting for the user's review, as every part that handles one sees it.

A leaf: the standard library only. The tools make such changes, the session holds and settles them, the
events carry them and the display shows them; each names these protocols from here (``contracts``
re-exports them), so none of those has to import another to speak of a change.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class ProposedChange(Protocol):
    """A change to the workspace as it is shown: a live one, or one a saved session kept
    (``sessions.replies.SavedEdit``)."""

    @property
    def path(self) -> str: ...
    @property
    def diff(self) -> str: ...
    @property
    def creates(self) -> bool: ...
    @property
    def status(self) -> str:
        """``pending``, ``applied``, ``discarded`` or ``conflict`` (``expired``, saved)."""
        ...


class PendingChange(ProposedChange, Protocol):
    """A change waiting for the user's review, live: it can be applied or dropped (``tools.edits.PendingEdit``
    is one)."""

    def apply(self) -> str:
        """Write it; what happened (a conflict raises ``WorkspaceError``)."""
        ...

    def discard(self) -> None:
        """Drop it."""
        ...


@runtime_checkable
class Settles(Protocol):
    """A pending change that settles itself under its own lock (``tools.edits.PendingEdit``); one
    without is settled by ``tools.edits.settle`` under a shared lock."""

    def settle(self, apply: bool) -> str:
        """Apply (or discard) it; what happened, a conflict reported, not raised."""
        ...
