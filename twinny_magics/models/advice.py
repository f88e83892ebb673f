"""What the default model says about itself: once a process, that SmolLM2 rarely answers and how to get one
that does. No I/O.

With nothing configured (no server, no model) the embedded server runs the best catalog model on disk, or
SmolLM2 when none was pulled. SmolLM2 shows the loop working but rarely answers, so the first reply it
gives in a process carries a notice naming the one command that gets a model that answers. It is said
once: a notebook that asks twenty questions is told once, not twenty times.
"""

from __future__ import annotations

import threading

from twinny_magics.models.catalog import CATALOG, SMOLLM2_NAME, find, human_size

_lock = threading.Lock()
_told = False


def smollm2_notice() -> str:
    """The notice's text: what ran, what it passed, and the command that gets a model that answers."""
    smol, good = find(SMOLLM2_NAME), CATALOG[0]
    return (
        f"This ran on the embedded SmolLM2-135M, the model that ships with the package: at 135M parameters "
        f"it rarely answers ({smol.measured.split(',')[0]}). One command gets a model that does: "
        f"`%agent pull {good.name}` ({human_size(good.size)}, once; {good.measured.split(',')[0]}); this "
        "session moves to it at its next cell, and every new one uses it. Or point the cell at a server: "
        "`%%agent --server URL`."
    )


def default_model_notice(*, runs_smollm2: bool) -> str | None:
    """The notice for a reply on the server chosen with nothing configured, or None: only when it runs
    SmolLM2, once a process."""
    global _told  # noqa: PLW0603 - once a process, kept under its lock
    if not runs_smollm2:
        return None
    with _lock:
        if _told:
            return None
        _told = True
    return smollm2_notice()


def forget_told() -> None:
    """Say the notice again on the next reply (for tests)."""
    global _told  # noqa: PLW0603 - once a process, kept under its lock
    with _lock:
        _told = False
