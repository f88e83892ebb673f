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

from .budget import HEAD_START_SHARE, ContextPlan, TokenEstimator, plan_context
from .contracts import EventSink, ModelServer, PendingChange, Toolset
from .conversation import Message, assistant, user
from .events import Notice, Reply, ReplyFinished
from .loop import DEFAULT_SYSTEM_PROMPT, GrammarSetting, Loop, LoopSettings, ModeSetting
from .notes import FINAL_ANSWER_PROMPT, NoteEntry, turn_notes
from .options import DEFAULTS, check
from .tools import Approve, CommandsMode, EditsMode, Workspace
from .tools.denied import SecretFiles
from .tools.edits import settle as settle_change
from .tools.kernel import MAIN, CellsMode, Kernel, KernelMode
from .tools.registry import TOOLS
from .usage import Price, Usage, check_price, session_usage

if TYPE_CHECKING:
    import os

    from .servers.scripted import ReplayServer, ScriptedServer
    from .sessions import Restored

#: Earlier turns kept as plain question/answer pairs (their tool calls live on as notes).
HISTORY_TURNS = 3
HISTORY_ANSWER_CHARS = 1500
#: Request fields ``extra`` may not set: the conversation, the tools offered and the streaming the loop reads.
LOOP_FIELDS = frozenset({"messages", "tools", "stream"})
#: How long an interrupted reply may take to wind down before ``run`` gives up waiting for it.
STOP_GRACE_SECONDS = 2.0


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
    ``tool_descriptions`` (``{"grep": "..."}``) replaces a workspace tool's description, word for word.
    ``workspace_map`` and ``evidence`` give the model a head start in the first request of a reply (a map
    of the workspace ranked for the question; the parts of files that best match its words), within
    ``head_start_share`` of the window; ``search`` offers the ranked search as a tool. See docs/head-start.md.
    ``secret_files`` replaces the deny list of files the tools never show (gitignore-style patterns; None:
    the defaults in :mod:`twinny_magics.tools.denied`, ``[]``: none). ``shell`` (an IPython shell, which
    the magic passes) gives the kernel tools: ``cell_history``, ``run_python`` (``kernel``: ask, allow or
    off; ``kernel_seconds`` its time limit) and ``propose_cell`` (``cells``: review or insert).
    ``save``, ``load`` and ``export`` keep a session past the kernel (:mod:`twinny_magics.sessions`).
    ``price`` (``(input, output)`` or ``(input, output, cached input)``, money per million tokens; no
    price is built in) turns the usage gauge (:attr:`usage`, the status line) into a cost.
    """

    #: Where a session made by :meth:`load` came from, and what its loading had to say (else None).
    restored: Restored | None = None

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        kind: str | None = None,
        workspace: str | Path = ".",
        *,
        mode: ModeSetting = DEFAULTS["mode"],
        steps: int = DEFAULTS["steps"],
        edits: EditsMode = DEFAULTS["edits"],
        commands: CommandsMode = DEFAULTS["commands"],
        api_key: str | None = None,
        window: int | None = None,
        server: ModelServer | None = None,
        tools: Toolset | None = None,
        approve: Approve | None = None,
        namespace: Mapping[str, Any] | None = None,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        closing_prompt: str = FINAL_ANSWER_PROMPT,
        temperature: float | None = None,
        max_calls: int = 8,
        max_unusable_steps: int = 3,
        look_first: bool = False,
        edit_first: bool = True,
        workspace_map: bool = False,
        evidence: bool = True,
        search: bool = False,
        head_start_share: float = HEAD_START_SHARE,
        grammar: GrammarSetting = DEFAULTS["grammar"],
        timeout: float | None = None,
        extra: dict[str, Any] | None = None,
        tool_descriptions: Mapping[str, str] | None = None,
        secret_files: Sequence[str] | None = None,
        shell: Any = None,
        kernel: KernelMode = DEFAULTS["kernel"],
        cells: CellsMode = DEFAULTS["cells"],
        kernel_seconds: float = DEFAULTS["kernel_seconds"],
        price: Sequence[float] | None = None,
    ) -> None:
        if tool_descriptions and tools is not None:
            raise ValueError(
                "tool_descriptions describes the workspace tools; a toolset given as tools= has its own."
            )
        unknown = sorted(set(tool_descriptions or {}) - set(TOOLS))
        if unknown:
            raise ValueError(f"No tool named {unknown[0]!r} to describe; the tools are: {', '.join(TOOLS)}.")
        owned = sorted(set(extra or {}) & LOOP_FIELDS)
        if owned:
            # extra is merged over the request body: these would replace what the loop budgets and reads.
            raise ValueError(f"extra cannot set {owned[0]!r}: every request's {owned[0]} is the loop's own.")
        self.tool_descriptions = dict(tool_descriptions or {})
        # Checked now (a single string would be read as one pattern per character), used by the workspace.
        self.secret_files = SecretFiles(secret_files).patterns if secret_files is not None else None
        if not 0 <= head_start_share <= 0.5:
            raise ValueError(
                f"head_start_share {head_start_share:g}: give a share of the window from 0 to 0.5."
            )
        for name, value in (
            ("mode", mode),
            ("steps", steps),
            ("edits", edits),
            ("commands", commands),
            ("grammar", grammar),
            ("temperature", temperature),
            ("kernel", kernel),
            ("cells", cells),
            ("kernel_seconds", kernel_seconds),
            ("window", window),
            ("timeout", timeout),
        ):
            check(name, value)
        self.search = search
        self._price = check_price(price)
        self.shell = shell
        self.kernel_mode: KernelMode = kernel
        self.cells: CellsMode = cells
        self.kernel_seconds = kernel_seconds
        #: The kernel tools' state (history, proposed cells); None outside a kernel.
        self.kernel: Kernel | None = Kernel(shell, seconds=kernel_seconds) if shell is not None else None
        self.base_url = base_url
        self.model = model
        self.kind = kind
        self.workspace = Path(workspace)
        self.edits = edits
        self.commands = commands
        self.api_key = api_key
        self.requested_window = window
        self.timeout = timeout
        self.approve = approve
        self.namespace = namespace if namespace is not None or shell is None else shell.user_ns
        self.settings = LoopSettings(
            steps=steps,
            max_calls=max_calls,
            max_unusable_steps=max_unusable_steps,
            look_first=look_first,
            edit_first=edit_first,
            workspace_map=workspace_map,
            evidence=evidence,
            head_start_share=head_start_share,
            grammar=grammar,
            system_prompt=system_prompt,
            closing_prompt=closing_prompt,
            temperature=temperature,
            extra=extra,
        )
        self.requested_mode: ModeSetting = mode
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
        return self._loop.mode if self._loop else self.requested_mode

    @property
    def notes(self) -> str:
        """The notes the next reply carries: after its question, as a tool result (data, not the user's)."""
        plan = self.plan or plan_context(8192, self.estimator.ratio)
        return turn_notes(self.note_entries, plan.notes_chars)

    @property
    def price(self) -> Price | None:
        """Money per million tokens, ``(input, output[, cached input])``; None: the gauge shows no cost."""
        return self._price

    @price.setter
    def price(self, value: Sequence[float] | None) -> None:
        self._price = check_price(value)

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

    def configure(
        self,
        *,
        mode: ModeSetting | None = None,
        steps: int | None = None,
        edits: EditsMode | None = None,
        commands: CommandsMode | None = None,
        grammar: GrammarSetting | None = None,
        temperature: float | _Unset | None = _UNSET,
        approve: Approve | _Unset | None = _UNSET,
        workspace_map: bool | None = None,
        evidence: bool | None = None,
        head_start_share: float | None = None,
        kernel: KernelMode | None = None,
        cells: CellsMode | None = None,
    ) -> None:
        """Change how the next replies run; the session (server, notes, estimate) stays.

        ``temperature=None`` means the server's default; leaving it out leaves it as it is.
        """
        given: dict[str, object] = {"mode": mode, "steps": steps, "edits": edits, "commands": commands}
        given.update(grammar=grammar, kernel=kernel, cells=cells)
        for name, value in given.items():
            if value is not None:
                check(name, value)
        if not isinstance(temperature, _Unset):
            check("temperature", temperature)
            self.settings = replace(self.settings, temperature=temperature)
        if steps is not None:
            self.settings = replace(self.settings, steps=steps)
        if head_start_share is not None and not 0 <= head_start_share <= 0.5:
            raise ValueError(
                f"head_start_share {head_start_share:g}: give a share of the window from 0 to 0.5."
            )
        if workspace_map is not None:
            self.settings = replace(self.settings, workspace_map=workspace_map)
        if evidence is not None:
            self.settings = replace(self.settings, evidence=evidence)
        if head_start_share is not None:
            self.settings = replace(self.settings, head_start_share=head_start_share)
        if grammar is not None:
            self.settings = replace(self.settings, grammar=grammar)
        if mode is not None:
            self.requested_mode = mode
        if edits is not None:
            self.edits = edits
        if commands is not None:
            self.commands = commands
        if kernel is not None:
            self.kernel_mode = kernel
        if cells is not None:
            self.cells = cells
        if not isinstance(approve, _Unset):
            self.approve = approve
        if self._loop is not None:
            self._loop.settings = self.settings
            if mode is not None:
                self._loop.set_mode(mode)  # the same setting again keeps what auto learned
        if isinstance(self._tools, Workspace):
            self._tools.edits = self.edits
            self._tools.commands = self.commands
            self._tools.approve = self.approve
            self._tools.kernel_mode = self.kernel_mode
            self._tools.cells = self.cells

    def reset(self) -> None:
        """Start over: forget the replies and notes (the server, tools and estimate stay)."""
        self.replies.clear()
        self.note_entries.clear()

    # -- keeping a session ------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the session to ``path`` as one JSON document (atomically; never the API key)."""
        from .sessions import files  # noqa: PLC0415 - only a save or load needs it

        return files.save(self, path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        server: ModelServer | None = None,
        settings: bool = False,
        **options: Any,
    ) -> Agent:
        """A session saved with :meth:`save`, resumed: its turns, notes, ratio and how its replies ran.

        The file is data: the server (``server``, or ``base_url``/``model``/``kind``, else found as for a
        new session — never the saved address), the workspace (``workspace``, else the current folder) and
        what replies may do and are told (``commands``, ``kernel``, ``edits``, ``cells``, ``secret_files``,
        the prompts, ``extra``, ``tool_descriptions``, ``window``…) are the caller's; ``settings=True``
        takes the last group from the file. ``restored.notices`` says what the file held that differs (a
        saved server, other permissions, another workspace, expired edits).
        """
        from .sessions import files  # noqa: PLC0415

        return files.load(path, factory=cls, server=server, settings=settings, **options)

    def export(self, path: str | os.PathLike[str]) -> Path:
        """Write a transcript of the session: Markdown for ``.md``, an inert HTML page for ``.html``."""
        from .sessions import files  # noqa: PLC0415

        return files.export(self, path)

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
        if self._server is None:
            # Imported on first use: httpx and the adapters are not needed to load the extension.
            from .servers import connect  # noqa: PLC0415

            self._server = connect(
                self.base_url,
                model=self.model,
                kind=self.kind,
                api_key=self.api_key,
                window=self.requested_window,
                timeout=self.timeout,
            )
        if self._tools is None:
            self._tools = Workspace(
                self.workspace,
                edits=self.edits,
                commands=self.commands,
                approve=self.approve,
                namespace=self.namespace,
                descriptions=self.tool_descriptions,
                secret_files=self.secret_files,
                search=self.search,
                kernel=self.kernel,
                kernel_mode=self.kernel_mode,
                cells=self.cells,
            )
        self._loop = Loop(
            self._server,
            self._tools,
            estimator=self.estimator,
            mode=self.requested_mode,
            settings=self.settings,
        )
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
        loop = self._build_loop()
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
