"""Every error twinny_magics raises, as one tree.

::

    TwinnyError                      base; str(e) is a message a person can act on
    ├── ServerError                  talking to the model server went wrong
    │   ├── ServerUnreachable        connection refused, unknown host, closed mid-connect
    │   ├── ServerTimeout            no answer within the timeout
    │   ├── AuthRefused              401/403: the API key is missing or wrong
    │   ├── ModelNotFound            the server does not have that model
    │   ├── ToolsRefused             the server will not take the ``tools`` field
    │   ├── ToolHistoryRefused       it takes tools but not tool messages in history
    │   ├── PromptTooLong            the prompt does not fit the server's window
    │   ├── StreamCut                the stream ended before the reply finished
    │   └── MalformedStream          a line of the stream could not be read
    ├── EmbeddedServerUnavailable    the embedded llama.cpp server cannot start (names the install step)
    ├── ModelPullError               a model could not be named, fetched or checked (``models``)
    │   ├── UnknownModel             a name not in the catalog (``nearest`` holds the closest names)
    │   ├── NotPulled                a catalog model that is not on disk yet (names the pull command)
    │   ├── HubUnreachable           the hub cannot be reached (names the offline fallback)
    │   ├── NotEnoughDisk            the file would not fit (refused before downloading)
    │   └── HubRefused               a hub reply no hub sends (a path in a hash, a size past the check,
    │                                a body that is not the file it names); nothing of it is kept
    ├── WorkspaceError               a tool was asked for something outside the workspace rules
    └── ModelFeedback                something the *model* did wrong; ``feedback`` is what it will read
        ├── CallFormatError          a tool call that could not be read (feedback has an example)
        └── UnknownTool              a call of a tool that was not offered

Errors the model can act on carry the text the model will read (``feedback``); errors the user must act
on carry the text the cell will show (``str(e)``). A ``ServerError``'s message and body never carry a
credential: anything shaped like one is masked as the error is made (``redact.mask_secrets``), and the
adapters mask the session's own key too (``servers.refusals.hide_secret``). Nothing here does I/O.
"""

from __future__ import annotations

from .redact import mask_secrets


class TwinnyError(Exception):
    """Base of every error this package raises on purpose."""


class ServerError(TwinnyError):
    """The model server could not be used for this request.

    ``status`` is the HTTP status when there was one; ``body`` the server's own words (shortened). Both
    the message and the body have every credential-shaped run masked (a server may echo the key).
    """

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None) -> None:
        super().__init__(mask_secrets(message))
        self.status = status
        self.body = mask_secrets(body) if body is not None else None


class ServerUnreachable(ServerError):
    """Nothing answered at the server's address."""


class ServerTimeout(ServerError):
    """The server did not answer in time."""


class AuthRefused(ServerError):
    """The server refused the credentials (HTTP 401/403)."""


class ModelNotFound(ServerError):
    """The server does not serve the requested model."""


class ToolsRefused(ServerError):
    """The server refused the request because of its ``tools`` field."""


class ToolHistoryRefused(ServerError):
    """The server refused tool calls/results in the history of a request that offers no tools."""


class PromptTooLong(ServerError):
    """The server refused the prompt as longer than its window.

    ``prompt_tokens`` and ``window`` are the server's own numbers when it said them.
    """

    def __init__(
        self,
        message: str,
        *,
        prompt_tokens: int | None = None,
        window: int | None = None,
        status: int | None = None,
        body: str | None = None,
    ) -> None:
        super().__init__(message, status=status, body=body)
        self.prompt_tokens = prompt_tokens
        self.window = window


class StreamCut(ServerError):
    """The stream ended (or the connection dropped) before the reply was finished."""


class MalformedStream(ServerError):
    """A line of the stream was not valid SSE/JSON."""


class EmbeddedServerUnavailable(TwinnyError):
    """The embedded llama.cpp server cannot be started; the message names what to install."""


class ModelPullError(TwinnyError):
    """A model could not be named, downloaded or checked; the message is one line a person can act on."""


class UnknownModel(ModelPullError):
    """The name is not in the catalog; ``nearest`` holds the closest catalog names (maybe none)."""

    def __init__(self, message: str, *, nearest: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.nearest = nearest


class NotPulled(ModelPullError):
    """A catalog model that is not on disk yet."""


class HubUnreachable(ModelPullError):
    """The hub did not answer; the message names what works offline."""


class NotEnoughDisk(ModelPullError):
    """The disk has less room than the file needs."""


class HubRefused(ModelPullError):
    """The hub sent something a hub does not (or a file whose checksum is not the one it named)."""


class WorkspaceError(TwinnyError):
    """A path or action outside what the workspace allows."""


class ModelFeedback(TwinnyError):
    """Something the model did that it can correct; ``feedback`` is the text it will read."""

    def __init__(self, feedback: str) -> None:
        super().__init__(feedback)
        self.feedback = feedback


class CallFormatError(ModelFeedback):
    """A tool call that could not be read."""


class UnknownTool(ModelFeedback):
    """A call of a tool that was not offered."""
