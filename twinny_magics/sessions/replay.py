"""A saved session replayed without a model: a `ScriptedServer` that gives back what the model wrote.

Each step of each saved reply becomes one queued reply — its text, and its calls when the step was a
native one (a text-mode step's calls are in its text, where the loop reads them again). Asked the same
questions in the same mode, a session over this server makes the same calls; the tools run afresh, so
a workspace that changed since gives other results (and the model's next words may then not fit them).

Given a real server to count with (``counted_by``), the replay is a `ReplayServer`: each request also
goes to that server, which reads the whole prompt and writes one token, so the window, the token counts,
the prompt cache and any refusal are real and only the model's words are the saved ones. That is how a
long saved trajectory is shown on a small real server (``notebooks/context_budget.ipynb``).

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from twinny_magics.errors import ServerError
from twinny_magics.servers.scripted import ReplayServer, Scripted, ScriptedServer
from twinny_magics.sessions.document import SavedSession


def scripted_replies(saved: SavedSession) -> list[Scripted]:
    """What the model wrote, step by step, over every reply of the session."""
    queued: list[Scripted] = []
    for reply in saved.replies:
        modes = {request.step: request.mode for request in reply.requests}
        for step in reply.steps:
            native = modes.get(step.number, saved.mode) == "native"
            queued.append(Scripted(step.text, tuple(step.calls) if native else ()))
    return queued


def replay_server(saved: SavedSession, counted_by: Any = None) -> ScriptedServer | ReplayServer:
    """A scripted server queued with the session's model replies, with its window and model name; with
    ``counted_by`` (a real server), a `ReplayServer` whose counts, window and cache are that server's."""
    if counted_by is not None:
        return ReplayServer(counted_by, list[Scripted | str](scripted_replies(saved)))
    return ScriptedServer(
        list[Scripted | ServerError | str](scripted_replies(saved)),
        window=saved.server.window or 8192,
        model=saved.server.model or "scripted",
        chars_per_token=saved.ratio,
    )
