"""The session: an :class:`Agent` keeps the server, the tools, the estimate and the notes across replies.

Each ``run`` is one turn. ``run`` blocks and is safe inside a running event loop (a Jupyter cell): the
reply then runs on a worker thread with its own loop, and an interrupt (the kernel's stop button)
cancels it there, so the stream is closed and a running command killed before ``run`` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .budget import MAX_RATIO, MIN_RATIO, ContextPlan, TokenEstimator, plan_context
from .contracts import Addressed, EventSink, MaybeEmbedded, ModelServer, PendingChange, Toolset
from .conversation import Message, assistant, user
from .engine.offer import embedded_smollm2
from .events import Notice, Reply, ReplyFinished
from .loop import Loop
from .notes import NoteEntry, turn_notes
from .settings import Settings, session_scoped
from .settings import saved as saved_settings
from .tools import Approve, Workspace
from .tools.edits import settle as settle_change
from .tools.kernel import MAIN, Kernel
from .usage import Price, Usage, session_usage

if TYPE_CHECKING:
    import os

    from .servers.scripted import ReplayServer, ScriptedServer
    from .sessions import Restored, SavedSession

#: Earlier turns kept as plain question/answer pairs (their tool calls live on as notes).
HISTORY_TURNS = 3
HISTORY_ANSWER_CHARS = 1500
#: How long an interrupted reply may take to wind down before ``run`` gives up waiting for it.
STOP_GRACE_SECONDS = 2.0


def _embedded_model(model: str | None) -> tuple[Path, int | None] | None:
    """What the embedded server loads when no server answers: ``model`` (a catalog name or a GGUF path),
    else the best catalog model on disk, else None (its default, SmolLM2). See docs/models.md."""
    from .models import for_embedded  # noqa: PLC0415 - the hub library loads only when it is needed

    return for_embedded(model)


def _mark_stopped(reply: Reply) -> None:
    if reply.stopped != "stopped":
        reply.stopped = "stopped"
        reply.notices.append(Notice("warning", "Stopped."))


class _Worker:
    """A reply's own thread and event loop, which a stop can reach before, while or after it runs."""

    def __init__(self, answer: Callable[[], Coroutine[Any, Any, Reply]]) -> None:
        self._answer = answer
        # The task runs in the context of the thread that made the worker (the cell's): ipykernel keeps in
        # context variables which cell an output belongs to, and a new thread starts with none of them.
        self._context = contextvars.copy_context()
        self._gate = threading.Lock()
        self._stopped = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Reply] | None = None
        self.reply: Reply | None = None
        self.error: BaseException | None = None
        # Waited on instead of thread.join: before Python 3.13 a join interrupted by Ctrl-C marks the thread
        # stopped while it still runs, so the join after the cancel returned at once — before the reply was
        # recorded and its command killed.
        self.done = threading.Event()

    def work(self) -> None:
        """The thread's body: run the reply, unless a stop came first."""
        try:
            with self._gate:
                if self._stopped:
                    return
                self._loop = asyncio.new_event_loop()
                asyncio.set_event_loop(self._loop)
                self._task = self._loop.create_task(self._answer(), context=self._context)
            try:
                self.reply = self._loop.run_until_complete(self._task)
            except BaseException as error:
                self.error = error
            finally:
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
                self._loop.close()
        finally:
            self.done.set()

    def stop(self) -> bool:
        """Cancel the reply; True if it had begun (wait for ``done``), False if it never will."""
        with self._gate:
            self._stopped = True
            if self._loop is None or self._task is None:
                return False
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the reply is over
                self._loop.call_soon_threadsafe(self._task.cancel)
            return True


class _Unset:
    """The type of "not given", where None is a meaningful value (``approve=None``: nobody to ask)."""


_UNSET = _Unset()


class Agent:
    """A coding-agent session over one workspace and one model server.

    ``server`` may be any :class:`~twinny_magics.loop.ModelServer` (e.g. the scripted model); otherwise
    ``base_url``/``model``/``kind`` name one, or the usual places are looked at and the embedded llama.cpp
    server is the fallback. ``tools`` replaces the workspace tools (any :class:`~twinny_magics.loop.Toolset`).
    ``approve`` is asked before a command or code runs; ``shell`` (an IPython shell, which the magic
    passes) gives the kernel tools (``cell_history``, ``run_python``, ``propose_cell``) and ``namespace``
    the variables they see (the shell's by default).

    Every other keyword is a setting (:class:`~twinny_magics.settings.Settings`, which lists them with
    their defaults and checks): ``mode``, ``steps``, ``edits``, ``commands``, ``kernel``, ``cells``,
    ``grammar``, ``temperature``, the head start (``workspace_map``, ``evidence``, ``head_start_share``;
    see docs/head-start.md), ``search``, the prompts, ``extra``, ``tool_descriptions``, ``secret_files``,
    ``window``, ``timeout``, ``price``… They are kept as one frozen value, :attr:`settings`;
    :meth:`configure` replaces it. ``save``, ``load`` and ``export`` keep a session past the kernel
    (:mod:`twinny_magics.sessions`).
    """

    #: Where a session made by :meth:`load` came from, and what its loading had to say (else None).
    restored: Restored | None = None
    #: Whether the server is the one chosen with nothing configured (no server given or named, no model):
    #: only that one says the default model's notice.
    _chose_default = False

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        kind: str | None = None,
        workspace: str | Path = ".",
        *,
        server: ModelServer | None = None,
        tools: Toolset | None = None,
        approve: Approve | None = None,
        namespace: Mapping[str, Any] | None = None,
        shell: Any = None,
        **options: Any,
    ) -> None:
        if options.get("tool_descriptions") and tools is not None:
            raise ValueError(
                "tool_descriptions describes the workspace tools; a toolset given as tools= has its own."
            )
        #: How the session runs: every option, checked, as one frozen value (:meth:`configure` replaces it).
        self.settings = Settings(base_url=base_url, model=model, kind=kind, workspace=workspace, **options)
        self.shell = shell
        #: The kernel tools' state (history, proposed cells); None outside a kernel.
        self.kernel: Kernel | None = (
            Kernel(shell, seconds=self.settings.kernel_seconds) if shell is not None else None
        )
        self.approve = approve
        self.namespace = namespace if namespace is not None or shell is None else shell.user_ns
        self.estimator = TokenEstimator()
        self.replies: list[Reply] = []
        self._recording = threading.Lock()
        self.note_entries: list[NoteEntry] = []
        self._server = server
        self._tools = tools
        self._loop: Loop | None = None

    # -- what a person inspects ------------------------------------------------------------------------

    @property
    def window(self) -> int | None:
        """The server's window in tokens, as last asked (None before the first request)."""
        return self._loop.window if self._loop else None

    @property
    def plan(self) -> ContextPlan | None:
        """The plan for the current window and ratio (None before the window is known)."""
        window = self.window
        if not window:
            return None
        return plan_context(window, self.estimator.ratio, self.settings.head_start_share)

    @property
    def mode(self) -> str:
        """``native`` or ``text`` once a server is chosen; the requested setting before."""
        return self._loop.mode if self._loop else self.settings.mode

    @property
    def workspace(self) -> Path:
        """The folder the tools see."""
        return Path(self.settings.workspace)

    @property
    def notes(self) -> str:
        """The notes the next reply carries: after its question, as a tool result (data, not the user's)."""
        plan = self.plan or plan_context(8192, self.estimator.ratio)
        return turn_notes(self.note_entries, plan.notes_chars)

    @property
    def price(self) -> Price | None:
        """Money per million tokens, ``(input, output[, cached input])``; None: the gauge shows no cost."""
        return self.settings.price

    @price.setter
    def price(self, value: Sequence[float] | None) -> None:
        self.configure(price=value)

    @property
    def usage(self) -> Usage:
        """What the session's replies asked of the server: prompt tokens afresh and cached, generated
        tokens, requests and time (see :mod:`twinny_magics.usage`; ``price`` makes it a cost)."""
        return session_usage(self.replies)

    @property
    def server(self) -> ModelServer | None:
        """The model server, once chosen."""
        return self._server

    # -- pending work ------------------------------------------------------------------------------------

    @property
    def pending(self) -> list[PendingChange]:
        """The edits still waiting for review, oldest first (``%agent status`` numbers them from 1)."""
        # A saved edit a load brought back is marked expired (never pending): what is pending is live.
        # Cells the kernel tools propose (`Kernel.proposals`) are not listed here: each is decided within
        # its reply (approved or not) and the magic inserts the chosen ones when the cell ends
        # (`Kernel.to_insert`), so none waits past its reply for a settle.
        return [
            cast("PendingChange", edit)
            for reply in self.replies
            for edit in reply.pending
            if edit.status == "pending"
        ]

    def settle(self, numbers: Sequence[int] | None = None, *, apply: bool) -> list[str]:
        """Apply (``apply=True``) or discard the pending edits numbered ``numbers`` (from 1, as
        :attr:`pending` lists them; None: all); one message per edit, in that order.

        Each edit is settled under its own lock (``tools.edits.settle``, which the display's buttons use
        too): a conflict is reported, not raised, and an edit settled meanwhile says ``Already applied.``
        A number out of range raises ``ValueError`` before anything is settled.
        """
        edits = self.pending
        chosen = edits
        if numbers is not None:
            wrong = [number for number in numbers if not 1 <= number <= len(edits)]
            if wrong:
                raise ValueError(f"No pending edit {wrong[0]}: there are {len(edits)} (see %agent status).")
            chosen = [edits[number - 1] for number in numbers]
        return [settle_change(edit, apply=apply) for edit in chosen]

    def configure(self, *, approve: Approve | _Unset | None = _UNSET, **changes: Any) -> None:
        """Change how the next replies run (any setting but those that make a new session: the server,
        the workspace, the window…); the session (server, notes, estimate) stays.

        The settings are replaced whole (``dataclasses.replace``, checked again); a setting left out stays
        as it is (``temperature=None`` is the server's default). ``approve`` replaces the approval callback.
        """
        fixed = sorted(set(changes) & session_scoped())
        if fixed:
            raise TypeError(f"configure() cannot change {fixed[0]}: it makes a new session (a new Agent).")
        self.settings = replace(self.settings, **changes)
        if not isinstance(approve, _Unset):
            self.approve = approve
        if self._loop is not None:
            self._loop.settings = self.settings
            if "mode" in changes:
                self._loop.set_mode(self.settings.mode)  # the same setting again keeps what auto learned
        if self.kernel is not None and "kernel_seconds" in changes:
            self.kernel.seconds = self.settings.kernel_seconds
        if isinstance(self._tools, Workspace):
            self._tools.edits = self.settings.edits
            self._tools.commands = self.settings.commands
            self._tools.approve = self.approve
            self._tools.kernel_mode = self.settings.kernel
            self._tools.cells = self.settings.cells

    def reset(self) -> None:
        """Start over: forget the replies and notes (the server, tools and estimate stay)."""
        self.replies.clear()
        self.note_entries.clear()

    # -- keeping a session: the Agent writes and reads its own record (the schema is sessions/) ----------

    def record(self) -> SavedSession:
        """The session as a save keeps it: its settings (never the server's address, the workspace or the
        key: those are named by whoever loads it), what it learned, its notes and every reply."""
        from .sessions import SavedServer, SavedSession  # noqa: PLC0415 - only a save or an export needs it

        window, mode, plan = self._known()
        server = self._server
        embedded = (server.embedded if isinstance(server, MaybeEmbedded) else None) is not None
        info = server.info if isinstance(server, Addressed) else None
        found = info.base_url if info is not None else None
        s = self.settings
        return SavedSession(
            saved_at="",
            workspace=str(self.workspace),
            workspace_from_file=None,
            server=SavedServer(
                kind=server.kind if server is not None else s.kind,
                model=(server.model if server is not None else None) or s.model,
                base_url=None if embedded else s.base_url or found,
                window=window,
                embedded=embedded,
            ),
            options=saved_settings(s),
            mode=mode,
            plan=plan,
            ratio=self.estimator.ratio,
            observations=list(self.estimator.history),
            notes=list(self.note_entries),
            replies=list(self.replies),
        )

    def _known(self) -> tuple[int | None, str, ContextPlan | None]:
        """The window, mode and plan: the live ones, else (loaded, no reply yet) those it was saved with."""
        restored = self.restored
        if self.window is not None or restored is None or restored.window is None:
            return self.window, self.mode, self.plan
        share = self.settings.head_start_share
        return restored.window, restored.mode, plan_context(restored.window, self.estimator.ratio, share)

    def save(self, path: str | os.PathLike[str], *, follow_links: bool = True) -> Path:
        """Write the session to ``path`` as one JSON document (atomically; never the API key).

        ``follow_links=False`` (the autosave): the file's folder is not reached through a link.
        """
        from .sessions import files  # noqa: PLC0415

        return files.save(self.record(), path, secret=self.settings.api_key, follow_links=follow_links)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        server: ModelServer | None = None,
        settings: bool = False,
        factory: Callable[..., Agent] | None = None,
        **options: Any,
    ) -> Agent:
        """A session saved with :meth:`save`, resumed: its turns, notes, ratio and how its replies ran.

        The file is data: the server (``server``, or ``base_url``/``model``/``kind``, else found as for a
        new session — never the saved address), the workspace (``workspace``, else the current folder) and
        what replies may do and are told (``commands``, ``kernel``, ``edits``, ``cells``, ``secret_files``,
        the prompts, ``extra``, ``tool_descriptions``, ``window``…) are the caller's; ``settings=True``
        takes the last group from the file (:class:`~twinny_magics.settings.Settings` says which setting is
        in which group). ``restored.notices`` says what the file held that differs (a saved server, other
        permissions, another workspace, expired edits). ``factory`` makes the session (default: this class;
        the magic passes its ``session_factory``).
        """
        from .sessions import Restored, SessionFileError, document, files  # noqa: PLC0415

        make = factory or cls
        source = files.absolute(path)
        given = options.pop("workspace", None)
        workspace = files.absolute(given if given is not None else ".")
        saved = files.read(source, workspace=workspace)
        for name in ("base_url", "model", "kind"):
            if options.get(name) is None:
                options.pop(name, None)  # unset (a magic passes its defaults): not a choice of server
        if server is not None:
            options["server"] = server
        mine = {**options, "workspace": workspace}
        try:
            own = make(**{**document.chosen_settings(saved, guarded=False), **mine})
            agent = make(**{**document.chosen_settings(saved, guarded=True), **mine}) if settings else own
        except ValueError as error:
            raise SessionFileError(f"{source}: a saved setting cannot be used: {error}") from None
        notices = files.load_notices(
            saved,
            source=source,
            workspace=workspace,
            base_url=agent.settings.base_url,
            own=saved_settings(own.settings),
            taken=settings,
        )
        notices += document.expire_waiting(saved)
        agent.replies[:] = saved.replies
        agent.note_entries[:] = saved.notes
        agent.estimator.ratio = min(MAX_RATIO, max(MIN_RATIO, saved.ratio))
        agent.estimator.history[:] = saved.observations
        agent.restored = Restored(str(source), saved.saved_at, notices, saved.server.window, saved.mode)
        return agent

    def export(self, path: str | os.PathLike[str]) -> Path:
        """Write a transcript of the session: Markdown for ``.md``, an inert HTML page for ``.html``."""
        from .display import transcript  # noqa: PLC0415
        from .sessions import files  # noqa: PLC0415

        target, html = files.transcript_target(path)
        saved = files.snapshot(self.record(), secret=self.settings.api_key)
        text = transcript.html_transcript(saved) if html else transcript.markdown_transcript(saved)
        return files.write_transcript(target, text)

    @staticmethod
    def replay_server(path: str | os.PathLike[str], counted_by: Any = None) -> ScriptedServer | ReplayServer:
        """A scripted server that gives back the model replies saved at ``path`` (replay, no model).

        With ``counted_by`` (a real server) every request is also sent to it for one token, so the counts,
        the window and the prompt cache are real; only the model's words are the saved ones.
        """
        from .sessions import files  # noqa: PLC0415

        return files.replay_server(path, counted_by)

    def __repr__(self) -> str:
        server = f"{self._server.kind} {self._server.model}" if self._server else "not connected yet"
        return (
            f"<Agent {server}; mode {self.mode}; window {self.window}; ratio {self.estimator.ratio:.2f}; "
            f"{len(self.replies)} replies>"
        )

    # -- running a reply --------------------------------------------------------------------------------

    def _build_loop(self) -> Loop:
        if self._loop is not None:
            return self._loop
        s = self.settings
        if self._server is None:
            # Imported on first use: httpx and the adapters are not needed to load the extension.
            from .servers import connect  # noqa: PLC0415

            model = s.model
            self._server = connect(
                s.base_url,
                model=model,
                kind=s.kind,
                api_key=s.api_key,
                window=s.window,
                timeout=s.timeout,
                local=lambda: _embedded_model(model),
            )
            self._chose_default = s.base_url is None and model is None
        if self._tools is None:
            self._tools = Workspace(
                self.workspace,
                edits=s.edits,
                commands=s.commands,
                approve=self.approve,
                namespace=self.namespace,
                descriptions=dict(s.tool_descriptions or {}),
                secret_files=s.secret_files,
                search=s.search,
                kernel=self.kernel,
                kernel_mode=s.kernel,
                cells=s.cells,
            )
        self._loop = Loop(self._server, self._tools, estimator=self.estimator, mode=s.mode, settings=s)
        return self._loop

    def _history(self) -> list[Message]:
        messages: list[Message] = []
        for reply in self.replies[-HISTORY_TURNS:]:
            if reply.stopped == "error":
                continue
            answer = reply.text
            if len(answer) > HISTORY_ANSWER_CHARS:
                answer = answer[:HISTORY_ANSWER_CHARS] + "…"
            messages += [user(reply.question), assistant(answer or "(no answer)")]
        return messages

    async def arun(self, question: str, on_event: EventSink | None = None) -> Reply:
        """Run one turn: answer ``question`` with the tools, keeping what ran as notes for the next."""
        return await self._answer(Reply(question=question), on_event)

    async def _answer(self, reply: Reply, on_event: EventSink | None) -> Reply:
        emit = on_event or (lambda event: None)
        question = reply.question
        moved = self._follow_a_pull()
        if moved is not None:
            reply.notices.append(moved)
            emit(moved)
        loop = self._build_loop()
        told = self._default_model_notice()
        if told is not None:
            reply.notices.append(told)
            emit(told)
        notes = self.notes
        started = time.monotonic()
        try:
            reply = await loop.reply(question, self._history(), emit, reply=reply, notes=notes)
        except asyncio.CancelledError:
            _mark_stopped(reply)
            emit(ReplyFinished(reply))
            raise
        finally:
            reply.question = question
            reply.seconds = time.monotonic() - started
            self._record(reply)
        return reply

    def _runs_default_smollm2(self) -> bool:
        """Whether the session chose its server with nothing configured and got the embedded SmolLM2."""
        return self._chose_default and self._server is not None and embedded_smollm2(self._server)

    def _follow_a_pull(self) -> Notice | None:
        """Nothing configured and on the default SmolLM2: once a catalog model is on disk (``%agent pull``
        in this kernel), the session moves to it, as a restarted kernel would; a notice says so. The
        estimate starts afresh, since the new model counts tokens its own way (see docs/models.md)."""
        if self._loop is None or not self._runs_default_smollm2():
            return None
        from .models import best_on_disk  # noqa: PLC0415

        try:
            found = best_on_disk()
        except OSError:  # a cache that cannot be read: stay on what runs
            return None
        if found is None:
            return None
        self._server = None
        self._loop = None
        self.estimator = TokenEstimator()
        return Notice(
            "model",
            f"{found.name} is on disk now: this session moves to it from SmolLM2 (the embedded server loads "
            "it; the conversation so far is kept).",
        )

    def _default_model_notice(self) -> Notice | None:
        """Once a process, on the default SmolLM2 (nothing configured): that it rarely answers, and the one
        command that gets a model that does (see docs/models.md)."""
        from .models.advice import default_model_notice  # noqa: PLC0415

        text = default_model_notice(runs_smollm2=self._runs_default_smollm2())
        return Notice("model", text) if text is not None else None

    def _kept(self, reply: Reply) -> bool:
        """Whether ``reply`` is in the session already."""
        return any(kept is reply for kept in self.replies)

    def _record(self, reply: Reply) -> None:
        """Keep ``reply`` in the session, once (a stopped reply may be recorded by either thread)."""
        with self._recording:
            if self._kept(reply):
                return
            self.replies.append(reply)
            for step in reply.steps:
                self.note_entries.extend(NoteEntry(r.call, r.full_text) for r in step.results)

    def run(self, question: str, on_event: EventSink | None = None) -> Reply:
        """Run one turn and return its reply; blocks, and works inside a running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(question, on_event))
        return self._run_on_worker(question, on_event)

    def _run_on_worker(self, question: str, on_event: EventSink | None) -> Reply:
        # A Jupyter cell already runs inside the kernel's event loop, which a magic cannot await: the reply
        # gets a thread and a loop of its own. (nest_asyncio would re-enter the kernel's loop instead, but it
        # is unmaintained and breaks asyncio.current_task() — and so httpx — on newer Pythons.)
        reply = Reply(question=question)
        worker = _Worker(lambda: self._answer(reply, on_event))
        try:
            # A stop can land anywhere from here on, even before the thread starts: the handler below
            # covers the whole span, and the reply is recorded however early the stop came.
            thread = threading.Thread(target=worker.work, name="twinny-reply", daemon=True)
            thread.start()
            # Waiting, the main thread runs what the reply asks to run there (run_python's code).
            MAIN.serve(worker.done)
        except KeyboardInterrupt:
            if worker.stop():
                worker.done.wait(STOP_GRACE_SECONDS)
            if not self._kept(reply):
                # Stopped before the reply's first step ran (or it did not wind down in time).
                _mark_stopped(reply)
                self._record(reply)
                if on_event is not None:
                    on_event(ReplyFinished(reply))
            raise
        if worker.error is not None:
            raise worker.error
        assert worker.reply is not None
        return worker.reply
