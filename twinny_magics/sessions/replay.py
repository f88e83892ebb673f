"""A saved session replayed without a model: a `ScriptedServer` that gives back what the model wrote.

Each step of each saved reply becomes one queued reply — its text, and its calls when the step was a
native one (a text-mode step's calls are in its text, where the loop reads them again). Asked the same
questions in the same mode, a session over this server makes the same calls; the tools run afresh, so
a workspace that changed since gives other results (and the model's next words may then not fit them).

Pure: no I/O.
"""

from __future__ import annotations

from twinny_magics.errors import ServerError
from twinny_magics.scripted import Scripted, ScriptedServer
from twinny_magics.sessions.document import SavedSession


def scripted_replies(saved: SavedSession) -> list[Scripted | ServerError | str]:
    """What the model wrote, step by step, over every reply of the session."""
    queued: list[Scripted | ServerError | str] = []
    for reply in saved.replies:
        modes = {request.step: request.mode for request in reply.requests}
        for step in reply.steps:
            native = modes.get(step.number, saved.mode) == "native"
            queued.append(Scripted(step.text, tuple(step.calls) if native else ()))
    return queued


def replay_server(saved: SavedSession) -> ScriptedServer:
    """A scripted server queued with the session's model replies, with its window and model name."""
    return ScriptedServer(
        scripted_replies(saved),
        window=saved.server.window or 8192,
        model=saved.server.model or "scripted",
        chars_per_token=saved.ratio,
    )
