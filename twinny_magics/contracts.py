"""The seams, typed: what the loop needs of a model server and of a toolset, and what crosses them.

Light on purpose: the standard library and the pure core (``conversation``) only, never httpx, IPython
or a server's adapter, so the loop, the session and the display can depend on it without loading them.

- The model server (``ModelServer``): its kind and model, its window, a streamed reply. What only some
  servers can do is a capability of its own (``Tokenizes``, ``CountsPrompts``, ``ContinuesPrefill``,
  ``ReusesCache``, ``Addressed``, ``WarnsOfKey``, ``TakesTools``, ``MaybeEmbedded``), checked with
  ``isinstance``: a server without it is taken as one that cannot (the HTTP adapters in ``servers``,
  the scripted servers and a test's fakes all fit, with as many capabilities as they have).
- The request and the events a reply streams as (``ChatRequest``, ``ChatEvent``): pure data, the
  adapters do the I/O. A reply streams as ``TextChunk* , ToolCallDelta* , [ToolCalls] , [Usage] ,
  Finish``; ``Finish`` is always last and only sent when the server finished the reply (a stream that
  stops before raises ``StreamCut``, so "no Finish" never has to be checked).
- The toolset (``Toolset``): the definitions offered and a way to run a call; optionally a head start
  (``GivesHeadStart``), tools fitted to the window (``FitsWindow``) and what a call of each tool does
  (``DeclaresEffects``).
- A tool's outcome (``ToolOutcome``): its text, whether it failed, a change waiting for review
  (``PendingChange``, which may settle itself under its own lock: ``Settles``; a saved one is a
  ``ProposedChange``; the three live in the leaf ``changes`` and are re-exported here; one that keeps
  what its settling said: ``Remembers``); optionally what it
  did (``ToolEffects``: it settles the reply, it changed the workspace, it made or proposed an edit) and a
  warning for the user (``Notifies``). ``effects_of`` asks the outcome, then its toolset, never a tool's
  name.
- The event sink (``EventSink``): where the loop sends what happens, in order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from .changes import PendingChange, ProposedChange, Settles
from .conversation import ToolCall

if TYPE_CHECKING:
    from .events import Event

# The pending change's protocols are re-exported: they were defined here, and are still imported from here.
__all__ = [
    "Addressed",
    "ChatEvent",
    "ChatRequest",
    "Closes",
    "ContinuesPrefill",
    "CountsPrompts",
    "DeclaresEffects",
    "DescribesModel",
    "Effects",
    "EventSink",
    "Finish",
    "FitsWindow",
    "GivesHeadStart",
    "MaybeEmbedded",
    "ModelServer",
    "Named",
    "Notifies",
    "PendingChange",
    "ProposedChange",
    "Remembers",
    "ReusesCache",
    "ServerAddress",
    "Settles",
    "TakesTools",
    "TextChunk",
    "Tokenizes",
    "ToolCallDelta",
    "ToolCalls",
    "ToolEffects",
    "ToolOutcome",
    "Toolset",
    "Unfinished",
    "Usage",
    "WarnsOfKey",
    "effects_of",
]

# --- what travels to a model server and back --------------------------------------------------------


@dataclass(frozen=True)
class ChatRequest:
    """One request: messages already rendered by ``conversation.render``, and what goes with them.

    ``tools`` are OpenAI-style definitions (None offers none). ``extra`` is merged into the request body
    as is (e.g. llama.cpp's ``grammar``, ``seed``). ``num_ctx`` asks Ollama for a window (it then goes
    through Ollama's own ``/api/chat``, the only route that honours it).
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    num_ctx: int | None = None

    @property
    def has_tool_history(self) -> bool:
        """Whether any message carries native tool calls or results (some servers refuse those)."""
        return any(m.get("role") == "tool" or m.get("tool_calls") for m in self.messages)


@dataclass(frozen=True)
class TextChunk:
    """A piece of the reply's text as the server streamed it: raw, call markers and all (the loop shows
    the reader what of it is not a call as :class:`~twinny_magics.events.TextDelta`, with its step)."""

    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of a native tool call as it streams: ``name`` on the first piece, then argument text."""

    index: int
    arguments: str = ""
    name: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class ToolCalls:
    """Every native tool call of the reply, sent once when they are complete.

    ``errors[i]`` is None when ``calls[i].arguments`` was read, else why not; an unreadable call keeps
    ``arguments={}`` and its text in ``arguments_text[i]``, so the loop can show the model what it wrote.
    """

    calls: list[ToolCall]
    arguments_text: list[str]
    errors: list[str | None]

    @property
    def readable(self) -> list[ToolCall]:
        """The calls whose arguments could be read."""
        return [c for c, e in zip(self.calls, self.errors, strict=True) if e is None]


@dataclass(frozen=True)
class Usage:
    """The server's own token counts for the request (``cached_tokens``: prompt prefix it reused)."""

    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None = None


@dataclass(frozen=True)
class Finish:
    """The reply is complete; ``reason`` is the server's (``stop``, ``length``, ``tool_calls``…)."""

    reason: str | None


ChatEvent = TextChunk | ToolCallDelta | ToolCalls | Usage | Finish


@runtime_checkable
class Closes(Protocol):
    """A reply's stream that can be closed before its end (an async generator can): the connection goes
    with it, not when the stream is collected."""

    async def aclose(self) -> None: ...


# --- the model server -------------------------------------------------------------------------------


@runtime_checkable
class ModelServer(Protocol):
    """What the loop needs of every model server: its kind and model, its window, and a streamed reply."""

    @property
    def kind(self) -> str: ...
    @property
    def model(self) -> str | None: ...

    def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        """The reply to ``request`` as events; raises a ``ServerError`` subclass when it cannot."""
        ...

    async def context_window(self) -> int:
        """The window to plan with, in tokens."""
        ...


@runtime_checkable
class DescribesModel(Protocol):
    """A server that may say what its model is made of: the keys that tell its tokenizer family
    (``general.architecture``, ``tokenizer.ggml.pre``, ``family``, or the ``model`` a gateway's name
    stands for); empty when it does not say."""

    async def model_metadata(self) -> Mapping[str, str]:
        """What the server says of its model (see :func:`twinny_magics.text_tokens.tokenizer_family`)."""
        ...


@runtime_checkable
class Tokenizes(Protocol):
    """A server that may count a text's tokens exactly (llama.cpp's ``/tokenize``)."""

    async def tokenize(self, text: str) -> int | None:
        """The exact token count of ``text`` where the server can say, else None."""
        ...


@runtime_checkable
class CountsPrompts(Protocol):
    """A server that may count a whole request's prompt tokens, its template included."""

    async def count_prompt_tokens(self, request: ChatRequest) -> int | None:
        """The exact prompt tokens ``request`` will take where the server can say, else None."""
        ...


@runtime_checkable
class ContinuesPrefill(Protocol):
    """A server that may continue a request's trailing assistant message rather than answer it."""

    @property
    def continues_prefill(self) -> bool: ...


@runtime_checkable
class ReusesCache(Protocol):
    """A server that reuses its cached prompt past a deleted stretch (llama.cpp asked for ``n_cache_reuse``),
    so a trim costs it only the tokens after the last change, not everything below the first."""

    @property
    def reuses_cache(self) -> bool: ...


class ServerAddress(Protocol):
    """Where a server is and the key it is asked with (``servers.kinds.ServerInfo`` is one)."""

    @property
    def base_url(self) -> str: ...
    @property
    def api_key(self) -> str | None: ...


@runtime_checkable
class Addressed(Protocol):
    """A server with an address: what ``auto``'s decisions are remembered by, and the key to mask."""

    @property
    def info(self) -> ServerAddress | None: ...


@runtime_checkable
class WarnsOfKey(Protocol):
    """A server that can say its API key goes over plain http to another machine."""

    @property
    def key_warning(self) -> str | None: ...


@runtime_checkable
class TakesTools(Protocol):
    """A server that says whether tools may be offered natively (one without this may be offered them)."""

    @property
    def takes_tools(self) -> bool: ...


@runtime_checkable
class Named(Protocol):
    """A model server running under a name (the embedded server's model alias)."""

    @property
    def alias(self) -> str: ...


@runtime_checkable
class MaybeEmbedded(Protocol):
    """A server that may be the embedded llama.cpp one; ``embedded`` is that server (None: not it).

    The embedded server is a ``Named`` one; one that gives no name is taken to run SmolLM2 (its default).
    """

    @property
    def embedded(self) -> object | None: ...


# --- the tools --------------------------------------------------------------------------------------


class ToolOutcome(Protocol):
    """What running a tool gives back."""

    @property
    def text(self) -> str: ...
    @property
    def is_error(self) -> bool: ...
    @property
    def pending(self) -> PendingChange | None: ...


@runtime_checkable
class ToolEffects(Protocol):
    """An outcome that says what its call did beyond its text (``tools.base.ToolOutput`` does)."""

    @property
    def settles(self) -> bool:
        """The reply should end after it: the next request is the last (a kernel run past its limit)."""
        ...

    @property
    def changes_workspace(self) -> bool:
        """It may have changed what other tools return (an edit written or proposed, a command run)."""
        ...

    @property
    def edits(self) -> bool:
        """It made or proposed an edit of a file."""
        ...


@dataclass(frozen=True)
class Effects:
    """What a call did beyond its text, as plain data (a ``ToolEffects``); the default: nothing."""

    settles: bool = False
    changes_workspace: bool = False
    edits: bool = False


@runtime_checkable
class DeclaresEffects(Protocol):
    """A toolset that says what a call of each of its tools does beyond its text (the workspace does, from
    each tool's flags), for an outcome that does not say it itself."""

    def effects(self, name: str) -> ToolEffects:
        """What a call of the tool ``name`` does (a tool it does not have: nothing)."""
        ...


def effects_of(tools: Toolset, call: ToolCall, outcome: ToolOutcome) -> ToolEffects:
    """What ``call`` did beyond its text: as its outcome says (``ToolEffects``), else as its toolset
    declares for the tool (``DeclaresEffects``), else what the outcome shows: a change left for review is
    an edit, and may change the workspace; nothing else is assumed of a toolset that says nothing.
    """
    if isinstance(outcome, ToolEffects):
        return outcome
    if isinstance(tools, DeclaresEffects):
        return tools.effects(call.name)
    proposed = outcome.pending is not None
    return Effects(changes_workspace=proposed, edits=proposed)


@runtime_checkable
class Unfinished(Protocol):
    """An edit's outcome that may say what the edit left undone that the request may want ('' for
    nothing): after a rename, where the old name is still used."""

    @property
    def unfinished(self) -> str: ...


@runtime_checkable
class Notifies(Protocol):
    """An outcome that may carry a warning for the user, said among the reply's notices ('' for none)."""

    @property
    def notice(self) -> str: ...


class Toolset(Protocol):
    """The tools the loop offers: their definitions, and a way to run a call."""

    def definitions(self) -> list[dict[str, Any]]: ...

    def run(self, call: ToolCall) -> Awaitable[ToolOutcome]: ...


@runtime_checkable
class HearsRequest(Protocol):
    """A toolset that wants the words of the request a reply answers (the workspace's edit_file uses
    them to pick the one of several matches the request names)."""

    def hear(self, request: str) -> None:
        """Called once at a reply's start with the user's request."""
        ...


@runtime_checkable
class ProposesEdits(Protocol):
    """A toolset that can say which edit a request for a change pins down (the workspace reads the file
    the request names): the edit nudge offers it as a ready call."""

    def proposed_edit(self, request: str) -> dict[str, str] | None:
        """The edit tool's arguments (path, find, replace) for ``request``, or None (it reads a file)."""
        ...


@runtime_checkable
class GivesHeadStart(Protocol):
    """A toolset that can give the model a head start before its first step (the workspace does)."""

    def head_start(self, question: str, chars: int, *, map: bool = True, evidence: bool = True) -> str:
        """Within ``chars``: what the model should see first for ``question`` ('' for nothing). Blocking."""
        ...


@runtime_checkable
class FitsWindow(Protocol):
    """A toolset that offers fewer tools in a small window."""

    def fit_window(self, window: int) -> list[str]:
        """Offer the tools for ``window`` tokens; the names left out because it is small."""
        ...


@runtime_checkable
class Remembers(Protocol):
    """A pending change that keeps what its last settling said (``tools.edits.PendingEdit``), so a panel
    that shows it again after ``%agent apply`` can say it too."""

    @property
    def message(self) -> str:
        """What settling it said (``Applied the edit to a.py.``, a conflict…); "" until it is settled."""
        ...


# --- the events -------------------------------------------------------------------------------------

#: Where the loop (and the session) send what happens during a reply, in order.
EventSink: TypeAlias = "Callable[[Event], None]"
