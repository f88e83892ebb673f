"""The notebook face: ``%%agent`` asks a question, ``%agent`` is the session and its commands.

What the line takes (the flags, the ``%config`` traits, the help) is :mod:`.magic_line`. Loading the
extension must stay fast, so this module imports only IPython and traitlets; the session
(and with it the loop, the servers and httpx) and the display (ipywidgets) are imported by the first
cell that needs them.

How a session is chosen: options that define it (server, model, kind, workspace, window, api key)
make a new session when they change; every other option (mode, steps, edits, commands) applies to the
cell it is written on. ``%agent use NAME`` adopts an `Agent` made in the notebook (e.g. over a
`ScriptedServer`); tests and embedders may also set ``TwinnyMagics.session_factory``.

A session the magic made (or loaded) saves itself after every reply, so a restarted kernel loses no
turn: one file per session in the hidden ``.twinny_sessions/`` folder of the workspace, rewritten whole
each time. The first ``%%agent`` cell of a fresh kernel then offers the folder's newest session with the
command that resumes it — never resumed by itself, since the new cell may be about something else.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class
from traitlets import Any as AnyTrait

from twinny_magics.display import reprs
from twinny_magics.magic_line import (
    SESSION_OPTIONS,
    SUBCOMMANDS,
    TURN_OPTIONS,
    argument,
    line_cell_magic,
    load_arguments,
    magic_arguments,
    option_flags,
    parse_argstring,
    trait,
    with_help,
)
from twinny_magics.options import OPTIONS, check, option

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from twinny_magics.agent import Agent
    from twinny_magics.display import EditPanel, ReplyView
    from twinny_magics.tools.kernel import Kernel


@magics_class
class TwinnyMagics(Magics):
    """``%%agent`` and ``%agent``; defaults come from ``%config TwinnyMagics.<option> = …``."""

    # The options' traits (``%config TwinnyMagics.<option>``) come from the table in
    # twinny_magics.options; these are their types, for the code below.
    quiet: bool
    autosave: bool
    kernel_seconds: float
    secret_files: list[str] | None
    output: str
    locals().update({o.name: trait(o) for o in OPTIONS})
    session_factory = AnyTrait(
        None,
        allow_none=True,
        help="A callable taking Agent's keyword arguments and returning the session (default: Agent).",
    )

    def __init__(self, shell: InteractiveShell | None = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self._session: Agent | None = None
        self._session_key: tuple[Any, ...] | None = None
        # For a session adopted with `%agent use`: its own turn settings, which cells fall back to.
        self._baseline: dict[str, Any] | None = None
        self._view: ReplyView | None = None
        self._manage_approvals = True
        self._panels: list[EditPanel] = []
        # Autosave: the session being saved and its file; whether it was adopted (never saved: it is the
        # notebook's own object); whether this kernel's earlier session was offered yet (once).
        self._autosaving: tuple[Agent, Path] | None = None
        self._adopted = False
        self._offered = False

    # -- the magic -------------------------------------------------------------------------------------

    @magic_arguments("%agent")  # the usage line then reads %%agent
    @option_flags
    @argument("--new", action="store_true", help="start a new session (forget earlier turns)")
    @line_cell_magic
    @with_help  # the help %%agent? shows: magic_line.HELP, every subcommand and option in it
    def agent(self, line: str, cell: str | None = None) -> Any:
        # A cell is a question (or ``compare``'s questions); a line alone is the session or a command.
        if cell is None:
            return self._line(line)
        words = line.split(None, 1)
        if words[:1] == ["compare"]:
            return self._compare(words[1] if len(words) > 1 else "", cell)
        self._cell(line, cell)
        return None

    def _compare(self, line: str, cell: str) -> Any:
        """``%%agent compare``: an experiment over the cell's questions (twinny_magics.experiment.cells)."""
        from twinny_magics.errors import TwinnyError  # noqa: PLC0415
        from twinny_magics.experiment import cells  # noqa: PLC0415

        adopted = self._session if self._baseline is not None else None
        try:
            return cells.compare(
                cells.parse_line(line),
                cells.parse_questions(cell),
                base=cells.base_options(self._defaults(), adopted),
                namespace=self.shell.user_ns if self.shell is not None else None,
                progress="rich" if self._style() == "rich" else "text",
            )
        except (ValueError, TypeError, OSError, TwinnyError) as error:
            raise UsageError(str(error)) from None

    def _cell(self, line: str, cell: str) -> None:
        args = parse_argstring(self.agent, line)
        question = cell.strip()
        if not question:
            raise UsageError("Write the question in the cell, under the %%agent line.")
        parsed = vars(args)
        given = {name: parsed[name] for name in (*SESSION_OPTIONS, *TURN_OPTIONS) if parsed[name] is not None}
        try:
            for name, value in given.items():
                check(name, value)
        except ValueError as error:
            raise UsageError(f"--{error}") from None
        options = {**self._defaults(), **given}
        session = self._session_for(options, new=args.new)
        self._tune(session, {**(self._baseline or options), **given})
        approve = self._approver() if self._manage_approvals else session.approve
        if self._manage_approvals:
            self._set_approve(session, approve)
        view = self._new_view(
            question,
            session,
            quiet=self.quiet if args.quiet is None else args.quiet,
            approvals=approve is not None and approve == self._approve,
        )
        self._view = view
        self._offer_resume(session)
        kernel = session.kernel
        if kernel is not None:
            # A cell proposed in this reply can be inserted only where a live notebook takes the payload.
            kernel.can_insert = self._someone_watches()
        view.start()
        from twinny_magics.errors import TwinnyError  # noqa: PLC0415 - the first cell pays for imports

        try:
            session.run(question, on_event=view.handle)
        except KeyboardInterrupt:
            # The stop button: Agent.run has cancelled the reply; say so instead of a traceback.
            view.interrupted()
        except TwinnyError as error:
            view.failed(str(error))
        finally:
            view.close()
            self._view = None
            self._insert_cells(kernel)
            self._panels = [p for p in self._panels if p.item.status == "pending"] + view.edit_panels
            if self.autosave if args.autosave is None else args.autosave == "on":
                self._autosave(session)

    def _insert_cells(self, kernel: Kernel | None) -> None:
        """The cells chosen in this reply, put below the question as one new cell (not run).

        IPython's next-input payload, which ``%load`` uses: the frontend puts the text in a new cell below
        the one that ran, unexecuted. A cell takes one such payload, so the cells go in together.
        """
        code = kernel.to_insert() if kernel is not None else None
        if code and self.shell is not None:
            self.shell.set_next_input(code, replace=False)

    def _line(self, line: str) -> Any:
        words = shlex.split(line)
        if not words:
            return self.session
        command, rest = words[0], words[1:]
        handlers: dict[str, Callable[[list[str]], None]] = {
            "status": self._status,
            "reset": self._reset,
            "new": self._new,
            "plan": self._plan,
            "apply": lambda r: self._settle(r, apply=True),
            "discard": lambda r: self._settle(r, apply=False),
            "use": self._use,
            "save": self._save,
            "load": self._load,
            "export": self._export,
            "models": self._models,
            "pull": self._pull,
        }
        handler = handlers.get(command)
        if handler is None:
            raise UsageError(
                f"%agent {command}: not a command. %agent takes: {SUBCOMMANDS}; "
                "a question goes in a %%agent cell."
            )
        handler(rest)
        return None

    # -- the session -----------------------------------------------------------------------------------

    @property
    def session(self) -> Agent:
        """The session the cells use (made from the defaults when there is none yet)."""
        if self._session is None:
            return self._session_for(self._defaults(), new=False)
        return self._session

    def _defaults(self) -> dict[str, Any]:
        """The ``%config`` values of the options a cell's line may give."""
        configured = self.trait_values()
        return {name: configured[name] for name in (*SESSION_OPTIONS, *TURN_OPTIONS)}

    def _key(self, options: dict[str, Any]) -> tuple[Any, ...]:
        workspace = os.path.abspath(options.get("workspace") or os.getcwd())
        given = tuple(workspace if name == "workspace" else options.get(name) for name in SESSION_OPTIONS)
        secrets = None if self.secret_files is None else tuple(self.secret_files)
        return (*given, secrets)

    def _session_for(self, options: dict[str, Any], *, new: bool) -> Agent:
        key = self._key(options)
        if self._session is not None and key == self._session_key:
            if new:
                if self._baseline is not None:
                    # An adopted session is kept (it may be scripted); a new session means a new conversation.
                    self._session.reset()
                else:
                    self._session = self._make(options, key)
            return self._session
        self._baseline = None
        self._manage_approvals = True
        self._session = self._make(options, key)
        return self._session

    def _make(self, options: dict[str, Any], key: tuple[Any, ...]) -> Agent:
        factory = self.session_factory
        if factory is None:
            from twinny_magics.agent import Agent  # noqa: PLC0415

            factory = Agent
        self._session_key = key
        self._adopted = False
        from twinny_magics.settings import from_options  # noqa: PLC0415

        # Only when set: a session_factory written before this option need not know it.
        secrets = {} if self.secret_files is None else {"secret_files": list(self.secret_files)}
        settings = {**from_options(options), **secrets, "kernel_seconds": self.kernel_seconds}
        session: Agent = factory(
            **{**settings, "workspace": key[SESSION_OPTIONS.index("workspace")]},
            approve=self._approver() if self._manage_approvals else None,
            namespace=self.shell.user_ns if self.shell is not None else None,
            shell=self.shell,
        )
        return session

    def _approver(self) -> Callable[[str], Any] | None:
        """The approval callback when someone can answer in this cell, else None: commands are not run.

        Someone can answer when the cell came from a frontend that takes input while a cell runs
        (``allow_stdin``: JupyterLab, Notebook, VS Code; nbclient and other headless runs send False) and
        the kernel has subshells for the buttons' clicks to arrive on (see ``display.buttons``).
        """
        if not self._someone_watches():
            return None
        from twinny_magics.display import buttons  # noqa: PLC0415

        if buttons.kernel_subshell(getattr(self.shell, "kernel", None)) is None:
            return None
        return self._approve

    def _someone_watches(self) -> bool:
        """Whether this cell runs in a live frontend (one that takes input), not headless or in a terminal."""
        kernel = getattr(self.shell, "kernel", None)
        return self._style() == "rich" and kernel is not None and bool(getattr(kernel, "_allow_stdin", False))

    async def _approve(self, command: str, tool: str = "run_command") -> bool:
        view = self._view
        if view is None:
            return False
        return await view.approve(command, tool)

    def _tune(self, session: Agent, options: dict[str, Any]) -> None:
        """Apply one cell's turn options (mode, steps, edits, commands, grammar, temperature, head start…)."""
        from twinny_magics.settings import from_options  # noqa: PLC0415

        # Unset is a value of its own where None means something (the server's temperature): passed.
        turn = {
            name: value
            for name, value in options.items()
            if name in TURN_OPTIONS and (value is not None or option(name).nullable)
        }
        changes = from_options(turn)
        if self._baseline is None:
            changes["kernel_seconds"] = (
                self.kernel_seconds
            )  # %config applies from the next cell, like the options
        session.configure(**changes)

    @staticmethod
    def _set_approve(session: Agent, approve: Callable[[str], Any] | None) -> None:
        """Whether this cell can ask for approval is known only when it runs (see _approver)."""
        session.configure(approve=approve)

    # -- autosave --------------------------------------------------------------------------------------

    def _autosave(self, session: Agent) -> None:
        """Save ``session`` after a reply; a failure is one warning line, never an exception.

        The reply has already been shown and kept in the session, so a folder that cannot be written
        (read-only, a full disk) costs only the copy on disk; the previous file stays whole.
        """
        from twinny_magics.errors import TwinnyError  # noqa: PLC0415

        if self._adopted or not session.replies:
            return
        try:
            # Never through a link: a .twinny_sessions that is a link may lead out of the workspace.
            session.save(self._autosave_path(session), follow_links=False)
        except (TwinnyError, OSError) as error:
            self._notice(
                "warning",
                f"Autosave failed: {error} Save it elsewhere with %agent save PATH, or "
                "stop trying with --autosave off.",
            )

    def _autosave_path(self, session: Agent) -> Path:
        """This session's file: kept for its life; a session loaded from the folder goes on in its file."""
        from twinny_magics.sessions.files import autosave_path, in_folder  # noqa: PLC0415

        if self._autosaving is not None and self._autosaving[0] is session:
            return self._autosaving[1]
        workspace = Path(session.workspace)
        restored = session.restored
        loaded = Path(restored.path) if restored is not None else None
        path = loaded if loaded is not None and in_folder(loaded, workspace) else autosave_path(workspace)
        self._autosaving = (session, path)
        return path

    def _offer_resume(self, session: Agent) -> None:
        """Once a kernel: name the folder's newest saved session and the command that resumes it."""
        if self._offered:
            return
        self._offered = True
        if self._adopted or session.restored is not None or session.replies:
            return  # a session of this kernel already: nothing was lost to resume
        from twinny_magics.sessions.files import latest  # noqa: PLC0415

        found = latest(Path(session.workspace))
        if found is None:
            return
        path, saved_at = found
        shown = os.path.relpath(path)
        command = f"%agent load {shlex.quote(str(path) if shown.startswith('..') else shown)}"
        self._notice(
            "resume",
            f"This notebook's last session was saved {saved_at}. {command} resumes its conversation (turns, "
            "notes, learned ratio and how its replies ran); this notebook's server, permissions and prompts "
            "stay as they are (--settings takes the file's, listed first). This cell starts a new one.",
        )

    def _notice(self, kind: str, text: str) -> None:
        from twinny_magics.display.items import NoticeItem  # noqa: PLC0415

        item = NoticeItem(kind, text)
        self._show(item.html(), item.text())

    # -- showing a reply -------------------------------------------------------------------------------

    def _style(self) -> str:
        if self.output != "auto":
            return str(self.output)
        # A kernel (JupyterLab, Notebook, VS Code, nbclient) shows rich outputs; a terminal prints.
        return "rich" if getattr(self.shell, "kernel", None) is not None else "text"

    def _new_view(self, question: str, session: Agent, *, quiet: bool, approvals: bool) -> ReplyView:
        from twinny_magics.display import ReplyView, buttons  # noqa: PLC0415

        style: Literal["rich", "text"] = "rich" if self._style() == "rich" else "text"
        kernel = getattr(self.shell, "kernel", None)
        return ReplyView(
            question,
            steps=session.settings.steps,
            style=style,
            quiet=quiet,
            # Buttons only where someone can press them; a saved notebook keeps no widget anyway.
            with_buttons=self._someone_watches(),
            approval_subshell=buttons.kernel_subshell(kernel) if approvals else None,
            price=session.price,
        )

    def _show(self, html: str, text: str) -> None:
        from IPython.display import display  # noqa: PLC0415

        from twinny_magics.display import Bundle  # noqa: PLC0415

        if self._style() == "rich":
            show: Callable[..., Any] = display  # IPython's display is untyped
            show(Bundle(html, text))
        else:
            print(reprs.plain(text))

    # -- the line commands -----------------------------------------------------------------------------

    def _status(self, rest: list[str]) -> None:
        session = self.session
        self._show(reprs.agent_html(session), reprs.agent_text(session))

    def _reset(self, rest: list[str]) -> None:
        session = self.session
        turns = len(session.replies)
        session.reset()
        print(f"Session reset: {turns} earlier turn{'s' if turns != 1 else ''} and their notes forgotten.")

    def _new(self, rest: list[str]) -> None:
        self._session_for({**self._defaults(), **(self._baseline or {})}, new=True)
        if self._baseline is not None:
            print("The adopted session was reset (a new conversation on the same server).")
        else:
            print("A new session: the next %%agent cell starts from scratch.")

    def _plan(self, rest: list[str]) -> None:
        from twinny_magics.budget import plan_context  # noqa: PLC0415

        if len(rest) != 1 or not rest[0].replace(",", "").replace("_", "").isdigit():
            raise UsageError("%agent plan N: how an N-token window is shared out, e.g. %agent plan 8192")
        ratio = self._session.estimator.ratio if self._session is not None else 3.3
        plan = plan_context(int(rest[0].replace(",", "").replace("_", "")), ratio)
        self._show(reprs.plan_html(plan), reprs.plan_text(plan))

    def _settle(self, rest: list[str], *, apply: bool) -> None:
        """``%agent apply`` / ``%agent discard``: the session settles; the panels shown catch up."""
        session = self._session
        if session is None or not session.pending:
            print("No edits are waiting for review.")
            return
        numbers = None
        if rest:
            try:
                numbers = [int(word) for word in rest]
            except ValueError:
                raise UsageError(
                    f"%agent {'apply' if apply else 'discard'} [N…]: numbers from %agent status"
                ) from None
        try:
            messages = session.settle(numbers, apply=apply)
        except ValueError as error:
            raise UsageError(str(error)) from None
        for message in messages:
            print(reprs.plain(message))
        for panel in self._panels:
            panel.catch_up()

    def _use(self, rest: list[str]) -> None:
        if len(rest) != 1 or self.shell is None:
            raise UsageError("%agent use NAME: make the Agent in variable NAME the session of the cells.")
        session = self.shell.user_ns.get(rest[0])
        from twinny_magics.agent import Agent  # noqa: PLC0415

        if not isinstance(session, Agent):
            raise UsageError(f"{rest[0]} is not an Agent (from twinny_magics import Agent).")
        # A session made with its own approve callback keeps it; otherwise each cell decides (see _approver).
        self._manage_approvals = session.approve is None
        self._session = session
        self._session_key = self._key(self._defaults())
        self._adopted = True
        self._baseline = _turn_settings(session)
        print(f"%%agent cells now use {rest[0]}: {session!r}")

    def _save(self, rest: list[str]) -> None:
        from twinny_magics.errors import TwinnyError  # noqa: PLC0415
        from twinny_magics.sessions.files import default_path  # noqa: PLC0415

        if len(rest) > 1:
            raise UsageError("%agent save [PATH]: write the session to PATH (default: .twinny_sessions/).")
        session = self.session
        self._offered = True  # a session saved by hand is the one to resume: no need to offer another
        try:
            path = session.save(rest[0] if rest else default_path(os.getcwd()))
        except TwinnyError as error:
            raise UsageError(str(error)) from None
        turns = len(session.replies)
        print(
            f"Session saved to {path} ({turns} repl{'ies' if turns != 1 else 'y'}, "
            f"{len(session.note_entries)} notes; no API key). Resume it with "
            f"%agent load {shlex.quote(str(path))}"
        )

    def _load(self, rest: list[str]) -> None:
        from twinny_magics.agent import Agent  # noqa: PLC0415
        from twinny_magics.errors import TwinnyError  # noqa: PLC0415
        from twinny_magics.settings import from_options, loaded  # noqa: PLC0415

        path, named, settings = load_arguments(rest)
        options = self._defaults()
        # A session file is data: the server is this notebook's (%config, or named on this line), and so
        # is everything that says what a reply may do (the approvals, the deny list, the code time limit,
        # the window). The file brings the conversation and how its replies ran; --settings takes the
        # guarded settings from it too (listed before anything runs).
        server = {"base_url": options["server"], "model": options["model"], "kind": options["kind"]}
        server.update(named)
        own: dict[str, Any] = {"api_key": options["api_key"]} if options["api_key"] is not None else {}
        if not settings:
            guarded = set(loaded("guarded"))
            own.update({k: v for k, v in from_options(options).items() if k in guarded and v is not None})
            if self.secret_files is not None:
                own["secret_files"] = list(self.secret_files)
        try:
            session = Agent.load(
                path,
                factory=self.session_factory,
                settings=settings,
                **server,
                **own,
                workspace=self._key(options)[SESSION_OPTIONS.index("workspace")],
                approve=None,
                namespace=self.shell.user_ns if self.shell is not None else None,
                shell=self.shell,
            )
        except (TwinnyError, TypeError) as error:
            raise UsageError(str(error)) from None
        self._session, self._session_key, self._manage_approvals = session, self._key(options), True
        self._adopted, self._offered = False, True
        # Like an adopted session: cells fall back to the loaded settings, not to the %config defaults.
        self._baseline = _turn_settings(session)
        turns = len(session.replies)
        print(
            f"Session loaded from {path}: {turns} earlier repl{'ies' if turns != 1 else 'y'}, "
            f"{len(session.note_entries)} notes, {session.estimator.ratio:.2f} characters a token."
        )
        for notice in session.restored.notices if session.restored is not None else []:
            print(reprs.plain(f"⚠ {notice}"))

    def _export(self, rest: list[str]) -> None:
        from twinny_magics.errors import TwinnyError  # noqa: PLC0415

        if len(rest) != 1:
            raise UsageError("%agent export PATH: a transcript, PATH.md (Markdown) or PATH.html.")
        try:
            path = self.session.export(rest[0])
        except TwinnyError as error:
            raise UsageError(str(error)) from None
        print(f"Transcript of {len(self.session.replies)} replies written to {path}")

    def _models(self, rest: list[str]) -> None:
        from twinny_magics.models import magic_models  # noqa: PLC0415 - the catalog loads on first use

        table = magic_models(rest)
        self._show(table.html(), table.text())

    def _pull(self, rest: list[str]) -> None:
        from twinny_magics.models import magic_pull  # noqa: PLC0415

        print(repr(magic_pull(rest, shell=self.shell)))  # progress as it goes, then one line


def _turn_settings(session: Agent) -> dict[str, Any]:
    """A session's own turn settings, which cells fall back to (an adopted or a loaded session)."""
    from twinny_magics.settings import as_options  # noqa: PLC0415

    return {name: value for name, value in as_options(session.settings).items() if name in TURN_OPTIONS}


def load_ipython_extension(ip: InteractiveShell) -> None:
    """``%load_ext twinny_magics``: register ``%agent``/``%%agent`` and the rich reprs."""
    from twinny_magics.cell_log import CellLog  # noqa: PLC0415 - light: the cells and the shell only

    ip.register_magics(TwinnyMagics(shell=ip))
    reprs.register(ip)
    CellLog.of(ip)  # from now on, what each cell ran, printed, showed and raised (cell_history)


def unload_ipython_extension(ip: InteractiveShell) -> None:
    """``%unload_ext twinny_magics``: remove what loading added."""
    for kind in ("line", "cell"):
        ip.magics_manager.magics[kind].pop("agent", None)
    ip.configurables[:] = [c for c in ip.configurables if not isinstance(c, TwinnyMagics)]
    reprs.unregister(ip)
    log = getattr(ip, "_twinny_cell_log", None)
    if log is not None:
        log.uninstall()
