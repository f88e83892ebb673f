"""The toolset the agent loop uses: ``definitions()`` to offer the tools, ``await run(call)`` to call one.

The tools themselves are the `tool.Tool` objects of `registry.TOOLS`: this offers and gates them by
their flags and the session's settings, checks a call's arguments, and runs the one it names. What
several tools share lives here: the confinement, the review of edits, asking the user, the kernel.

`run` never raises for anything the model did — an unknown tool, a bad argument, a refused path, a
missing file — it returns a `ToolOutput` with ``is_error=True`` and a message in workspace-relative
terms that says what to do instead. Only cancellation travels on (after a running command's process
group is killed).
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from twinny_magics import cells, naming, retrieval
from twinny_magics.contracts import Effects
from twinny_magics.conversation import ToolCall
from twinny_magics.errors import WorkspaceError
from twinny_magics.redact import MASK, mask_secrets
from twinny_magics.tools import asked, commands, defined, files, grep, proposal
from twinny_magics.tools.base import ToolLimits, ToolOutput, cut_line
from twinny_magics.tools.edits import Change, PendingEdit, create_change, edit_change, short_diff
from twinny_magics.tools.matching import request_words
from twinny_magics.tools.paths import Confinement, shown
from twinny_magics.tools.refusal import refusal
from twinny_magics.tools.registry import COMMANDS_OFF, TOOLS
from twinny_magics.tools.search_index import SearchIndex
from twinny_magics.tools.tool import Approval, Tool, bind

#: Chunks a search call answers, and the characters they may fill (the loop cuts to its budget too).
SEARCH_CHUNKS = 4
SEARCH_CHARS = 6000
#: Chunks the head start's evidence may hold (as many as fit its share of the window).
EVIDENCE_CHUNKS = 4
#: How long the head start may spend indexing before a reply's first request.
HEAD_START_SECONDS = 5.0
#: The kernel tools a window under `ROOMY_WINDOW` tokens goes without (about 330 tokens of every request).
ROOMY_TOOLS = tuple(name for name, tool in TOOLS.items() if tool.roomy)
ROOMY_WINDOW = 4096

if TYPE_CHECKING:
    from twinny_magics.tools.kernel import CellsMode, Kernel, KernelMode

EditsMode = Literal["review", "apply"]
CommandsMode = Literal["ask", "allow", "off"]
Approve = Callable[..., Awaitable[bool] | bool]
log = logging.getLogger(__name__)

HEADLESS = (
    "run_command was not run: commands need approval and nobody can approve them here. "
    "Ask the user to run it, or set commands=allow."
)
DECLINED = "The user declined to run this command. Do not run it again; ask the user or find another way."
OFF = COMMANDS_OFF
KERNEL_HEADLESS = (
    "run_python was not run: code in the kernel needs approval and nobody can approve it here. Propose it "
    "as a cell with propose_cell, or ask the user to run it."
)
KERNEL_DECLINED = (
    "The user declined to run this code. Do not run it again; propose it as a cell or ask the user."
)
NO_KERNEL = "There is no notebook kernel here: {name} works when the agent runs in a Jupyter kernel."
CELL_SHOWN = (
    "Not inserted: nothing here can insert a cell into the notebook (no live notebook is watching). The "
    "user sees the code in the reply to copy; say so in your answer."
)
CELL_QUEUED = (
    "The cell will be inserted below the question when this reply ends. It is NOT run: the user runs it "
    "if they want."
)
CELL_DISCARDED = "The user discarded the proposed cell. Do not propose it again unchanged."
MASKED_FIND = (
    f"find contains {MASK}, which stands for a secret the tools hid from you: {{path}} has the real value "
    "there, so find cannot match it. Change the lines around it without including that text, or ask the "
    "user to change the secret."
)
MASK_WRITTEN = (
    f"Not done: this would write {MASK} into {{path}}. That text stands for a secret the tools hid from "
    "you, not the secret itself, so writing it would lose or replace the real value. Leave that line out "
    'of find and replace, or read the value from the environment (e.g. os.environ["API_KEY"]).'
)


class Workspace:
    """The workspace tools, confined to ``root``; see docs/tools.md and this package."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        edits: EditsMode = "review",
        commands: CommandsMode = "ask",
        approve: Approve | None = None,
        namespace: Mapping[str, Any] | None = None,
        limits: ToolLimits = ToolLimits(),  # noqa: B008 (frozen, so one shared default is safe)
        secret_files: Sequence[str] | None = None,
        descriptions: Mapping[str, str] | None = None,
        search: bool = True,
        kernel: Kernel | None = None,
        kernel_mode: KernelMode = "ask",
        cells: CellsMode = "review",
    ) -> None:
        if edits not in ("review", "apply"):
            raise ValueError(f"edits must be 'review' or 'apply', not {edits!r}")
        if commands not in ("ask", "allow", "off"):
            raise ValueError(f"commands must be 'ask', 'allow' or 'off', not {commands!r}")
        if kernel_mode not in ("ask", "allow", "off"):
            raise ValueError(f"kernel must be 'ask', 'allow' or 'off', not {kernel_mode!r}")
        if cells not in ("review", "insert"):
            raise ValueError(f"cells must be 'review' or 'insert', not {cells!r}")
        # secret_files: None for the deny list in tools/denied.py, patterns to use instead, [] for none.
        self._conf = Confinement(root, secret_files=secret_files)
        self._given_root = os.path.abspath(root)
        self.root: Path = self._conf.root
        self.edits: EditsMode = edits
        self.commands: CommandsMode = commands
        self.approve = approve
        #: The notebook kernel's tools (history, run_python, propose_cell); None outside a kernel.
        self.kernel = kernel
        self.kernel_mode: KernelMode = kernel_mode
        self.cells: CellsMode = cells
        self.namespace = namespace if namespace is not None or kernel is None else kernel.namespace
        self.limits = limits
        # Every edit proposed or made in this session, in order; `pending` is the ones still waiting.
        self.proposals: list[PendingEdit] = []
        #: The request the current reply answers, as written (`hear`); `request` gives its words.
        self.asked = ""
        # A tool's description as the model reads it, replaced whole (prompt tuning; see definitions()).
        unknown = sorted(set(descriptions or {}) - set(TOOLS))
        if unknown:
            raise ValueError(f"No tool named {unknown[0]!r} to describe; the tools are: {', '.join(TOOLS)}.")
        self.descriptions: dict[str, str] = dict(descriptions or {})
        #: Whether the ranked search is offered as a tool (the head start uses its index either way).
        self.search = search
        self._index: SearchIndex | None = None  # see `index`
        #: The window the tools are offered for (see `fit_window`); None: not known yet, all offered.
        self.window: int | None = None

    @property
    def pending(self) -> list[PendingEdit]:
        """The edits still waiting for the user's review, oldest first."""
        return [edit for edit in self.proposals if edit.status == "pending"]

    def apply_pending(self) -> list[str]:
        """Apply every pending edit in order; one message per edit (a conflict is reported, not raised)."""
        messages = []
        for edit in self.pending:
            try:
                messages.append(edit.apply())
            except (WorkspaceError, OSError) as exc:
                messages.append(
                    self._scrub(str(exc) if isinstance(exc, WorkspaceError) else exc.strerror or "")
                )
        return messages

    def discard_pending(self) -> int:
        """Discard every pending edit; how many there were."""
        edits = self.pending
        for edit in edits:
            edit.discard()
        return len(edits)

    def tool_names(self) -> list[str]:
        """The names of the tools offered, in the order of `definitions`."""
        return [d["function"]["name"] for d in self.definitions()]

    def definitions(self) -> list[dict[str, Any]]:
        """OpenAI-style definitions of the tools on offer (as their flags and the settings say), in order."""
        out = []
        for name, tool in TOOLS.items():
            if not self._offers(tool):
                continue
            asks = tool.approval is not None and self._setting(tool.approval) in ("review", "ask")
            definition = tool.definition(tool.asking_note if asks else "")
            if name in self.descriptions:
                # Exactly the given text, not formatted and with no note appended: what is tuned is what
                # the model reads.
                definition["function"]["description"] = self.descriptions[name]
            out.append(definition)
        return out

    def _setting(self, approval: Approval) -> str:
        """The session's setting for what a tool asks approval for (``review``, ``ask``, ``off``…)."""
        return {
            "edits": self.edits,
            "commands": self.commands,
            "kernel": self.kernel_mode,
            "cells": self.cells,
        }[approval]

    def _offers(self, tool: Tool) -> bool:
        """Whether ``tool`` is on offer: not turned off, what it needs at hand, room for it in the window."""
        if tool.approval is not None and self._setting(tool.approval) == "off":
            return False
        # Outside a kernel a kernel tool could only say so; leaving it out saves a small window room.
        at_hand = {"namespace": self.namespace is not None, "kernel": self.kernel is not None}
        at_hand["search"] = self.search
        if tool.needs is not None and not at_hand[tool.needs]:
            return False
        return not (tool.roomy and self._cramped())

    def fit_window(self, window: int) -> list[str]:
        """Offer the tools for a window of ``window`` tokens; the names left out because it is small."""
        self.window = window
        return list(ROOMY_TOOLS) if self._cramped() else []

    def _cramped(self) -> bool:
        """Whether the kernel tools of `ROOMY_TOOLS` are left out for a small window."""
        return self.kernel is not None and self.window is not None and self.window < ROOMY_WINDOW

    async def run(self, call: ToolCall) -> ToolOutput:
        """Run one call; every problem the model can fix comes back as an ``is_error`` output.

        Every output, errors included, has secret-shaped text masked (`redact.mask_secrets`) here, the
        one place all of them pass on their way to the model server.
        """
        tool = TOOLS.get(call.name)
        out = await self._run(call, tool)
        did = self.effects(call.name)
        return dataclasses.replace(
            out, text=mask_secrets(out.text), changes_workspace=did.changes_workspace, edits=did.edits
        )

    def effects(self, name: str) -> Effects:
        """What a call of the tool ``name`` does beyond its text, as its flags say (no such tool: nothing)."""
        tool = TOOLS.get(name)
        return tool.effects if tool is not None else Effects()

    async def _run(self, call: ToolCall, tool: Tool | None) -> ToolOutput:
        name = call.name
        if tool is None:
            return ToolOutput(self._unknown(str(name)), is_error=True)
        if tool.approval is not None and self._setting(tool.approval) == "off":
            return ToolOutput(tool.off_text, is_error=True)
        if tool.roomy and self._cramped():
            return ToolOutput(self._unknown(name), is_error=True)
        try:
            args = bind(tool, call.arguments)
            self._conf.refresh()
            return await self._dispatch(tool, args)
        except WorkspaceError as exc:
            return ToolOutput(self._scrub(str(exc)), is_error=True)
        except OSError as exc:
            # str(exc) names the absolute path; the reason alone is what the model can use.
            return ToolOutput(f"{name} failed: {exc.strerror or type(exc).__name__}.", is_error=True)
        except Exception as exc:
            # A bug of ours must not end the user's reply; the model can still try another way.
            log.warning("tool %s failed", name, exc_info=True)
            return ToolOutput(self._scrub(f"{name} failed unexpectedly ({type(exc).__name__}: {exc})."), True)

    def _unknown(self, name: str) -> str:
        """The answer to a call of a tool that does not exist: the real ones, and the likely one."""
        names = self.tool_names()
        text = f"Unknown tool {cut_line(name, 60)!r}. The tools are: {', '.join(names)}."
        if "notebook" in name.lower():
            return text + " read_file shows a .ipynb notebook as its cells."
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        return text + (f" Did you mean {close[0]}?" if close else "")

    async def _dispatch(self, tool: Tool, args: dict[str, Any]) -> ToolOutput:
        conf, limits = self._conf, self.limits
        # A copied description, a placeholder path or a sentence for a file name is refused before the
        # tool runs (under edits=apply it would land on disk), against the descriptions the model read.
        described = [
            text
            for definition in self.definitions()
            for text in (
                definition["function"]["description"],
                *(p["description"] for p in definition["function"]["parameters"]["properties"].values()),
            )
        ]
        # On a worker thread: naming the nearest real files walks the workspace (bounded, like grep).
        refused = await asyncio.to_thread(refusal, tool, args, described, conf, limits)
        if refused is not None:
            raise WorkspaceError(refused)
        return await tool.run(self, args)

    @property
    def conf(self) -> Confinement:
        """The confinement to the workspace root every tool reads and writes through."""
        return self._conf

    # -- the edits -----------------------------------------------------------------------------------

    def hear(self, request: str) -> None:
        """Remember the user's request this reply answers (the loop calls it first)."""
        self.asked = request

    @property
    def request(self) -> frozenset[str]:
        """The words of the request (`hear`): of several places an edit's find matches, they pick the one
        the request names; what an edit leaves reads the request as written (its "on" and "off")."""
        return request_words(self.asked)

    def proposed_edit(self, request: str) -> dict[str, str] | None:
        """The edit the request pins down in a file it names, as edit_file's arguments (the edit nudge
        offers it as a ready call; see ``tools/proposal.py``), or None."""
        return proposal.for_request(self._conf, [f.path for f in self.index.last.files], request)

    def edit_file(self, path: str, find: str, replace: str) -> ToolOutput:
        """edit_file: replace ``find`` (exactly once, or the one place of several the request names) by
        ``replace``, held for review or written."""
        try:
            change = edit_change(
                self._conf, self.limits, path, find, replace, request=self.request, asked=self.asked
            )
        except WorkspaceError as exc:
            if MASK in find and str(exc).startswith("find "):  # not found, or not exactly
                raise WorkspaceError(MASKED_FIND.format(path=shown(path))) from None
            raise
        return self._settle(_no_mask_written(change))

    def create_file(self, path: str, content: str) -> ToolOutput:
        """create_file: a new file with ``content``, held for review or written."""
        return self._settle(_no_mask_written(create_change(self._conf, path, content)))

    # -- the ranked search and the head start ------------------------------------------------------

    @property
    def index(self) -> SearchIndex:
        """The workspace's search index (opened on first use; see `search_index`)."""
        if self._index is None:
            self._index = SearchIndex(self._conf, self.limits)
        return self._index

    def search_text(self, words: str) -> str:
        """search: the chunks of files that best match ``words``, ranked. Blocking (the index updates)."""
        if not words.strip():
            raise WorkspaceError('search needs words, e.g. {"words": "merge dicts"}.')
        chunks = self.index.search(words, SEARCH_CHUNKS)
        return retrieval.search_text(words, chunks, SEARCH_CHARS, len(self.index.last.files))

    def finds_text(self, pattern: str) -> bool:
        """Whether a file the tools may read has a line matching ``pattern``: grep over the workspace, its
        limits and deny list, secrets masked. Checks a string an answer quotes from the code. Blocking."""
        return not grep.grep(self._conf, self.limits, pattern, None).startswith("No matches")

    def cited_lines(self, path: str, first: int, last: int) -> list[tuple[int, str]]:
        """Lines ``first``..``last`` of a file the tools may read, numbered as read_file numbers them (a
        notebook as its cell view), secrets masked; a WorkspaceError says why a file may not be read (the
        same path checks and deny list as read_file's). Checks an answer's citations. Blocking."""
        target = files.require(self._conf, path, self.limits, want="file")
        if target.real.suffix != ".ipynb" and files.is_binary(target):
            raise WorkspaceError(f"{target.rel} is a binary file.")
        out: list[tuple[int, str]] = []
        for number, (head, _) in enumerate(files.TextLines(target, keep=self.limits.line_chars), start=1):
            if number > last:
                break
            if number >= first:
                out.append((number, mask_secrets(head)))
        return out

    def head_start(self, question: str, chars: int, *, map: bool = True, evidence: bool = True) -> str:
        """What the loop gives the model before its first step, within ``chars``: a map of the workspace
        ranked for ``question`` and the chunks that best match its words ('' when there is nothing).

        Blocking (it walks the workspace and updates the index): the loop runs it on a worker thread.
        Secret-shaped text is masked, as in every tool output.
        """
        if not (map or evidence) or chars <= 0:
            return ""
        ran = self._cells_ran(question, chars) if evidence else ""
        chars -= len(ran) + 1 if ran else 0
        self._conf.refresh()
        # A first reply in a big folder waits at most HEAD_START_SECONDS for the index; the rest of it is
        # read by later calls (the map says how many files wait).
        survey = self.index.update(HEAD_START_SECONDS)
        files = counts = uses = said = where = ""
        lead: retrieval.Chunk | None = None
        if survey.files:  # an empty folder: nothing to map or find, and "(no files)" only distracts
            terms = retrieval.query_terms(question)
            if evidence:
                counts = asked.counts(self._conf, question, terms, survey, int(chars * asked.TALLY_SHARE))
                chars -= len(counts) + 1 if counts else 0
                uses = asked.uses(self._conf, self.limits, question, int(chars * asked.USES_SHARE))
                chars -= len(uses) + 1 if uses else 0
                where, lead = defined.definitions(
                    self._conf, self.limits, question, int(chars * defined.DEFINED_SHARE)
                )
                chars -= len(where) + 1 if where else 0
                projects = naming.project_names([f.path for f in survey.files])
                room = int(chars * asked.STRINGS_SHARE)
                said = asked.strings(self._conf, self.limits, question, terms, room, projects=projects)
                chars -= len(said) + 1 if said else 0
            chunks = self.index.search(question, EVIDENCE_CHUNKS, update=False) if evidence and terms else []
            if lead is not None:  # the decorator a named file applies: its definition first
                others = [c for c in chunks if c.path != lead.path or not c.start <= lead.start <= c.end]
                chunks = [lead, *others][:EVIDENCE_CHUNKS]
            chunks = asked.constants(self._conf, chunks)
            files = retrieval.head_start_text(survey if map else None, chunks, terms, chars)
        return mask_secrets("\n".join(part for part in (ran, said, uses, where, counts, files) if part))

    def _cells_ran(self, question: str, chars: int) -> str:
        """For a question about what ran in the notebook, the newest cells run in the kernel (their
        errors with the user's frames), within a share of the head start; '' otherwise."""
        if self.kernel is None or not cells.about_the_kernel(question):
            return ""
        records = self.kernel.log.history()
        if not records:
            return ""
        lead = "The cells run in the notebook's kernel, newest last (cell_history shows them again):"
        return f"{lead}\n{cells.history_text(records, int(chars * cells.HEAD_START_SHARE))}"

    def _settle(self, change: Change) -> ToolOutput:
        """Hold a change for review, or write it now, depending on the edits mode."""
        edit = PendingEdit(self._conf, change)
        earlier = [p for p in self.pending if p.path == edit.path]
        self.proposals.append(edit)
        what = f"creating {edit.path}" if edit.creates else f"an edit to {edit.path}"
        if self.edits == "apply":
            done = edit.apply()
            return ToolOutput(f"{done}{change.note}\n{short_diff(edit.diff)}", unfinished=change.left)
        text = (
            f"Proposed {what}{change.note}. It is waiting for the user's review (Apply or Discard) and is "
            "NOT on disk yet; do not describe it as made."
        )
        if earlier:
            text += (
                f" Another edit to {edit.path} is also waiting; both were made against the file as it is on "
                "disk, so whichever is applied second will be refused as a conflict."
            )
        return ToolOutput(f"{text}\n{short_diff(edit.diff)}", pending=edit)

    async def run_command(self, command: str) -> ToolOutput:
        """run_command: ask (when asked to ask), then run the command."""
        if not command.strip():
            raise WorkspaceError("run_command needs a command, e.g. python -m pytest -q.")
        if "\x00" in command:
            raise WorkspaceError("The command contains a NUL character.")
        if self.commands == "ask":
            refused = await self._approval(command, "run_command", HEADLESS, DECLINED)
            if refused is not None:
                return refused
        text, failed = await commands.run_command(
            command, self.root, timeout=self.limits.command_timeout, tail=self.limits.command_tail
        )
        return ToolOutput(text, is_error=failed)

    async def _approval(self, text: str, tool: str, headless: str, declined: str) -> ToolOutput | None:
        """Ask the user (None: approved), or the output that says why ``tool`` did not go ahead.

        The callback is asked as ``approve(text, tool=…)`` when it takes a ``tool`` keyword (the
        notebook's buttons then say what asks), else as ``approve(text)``.
        """
        if self.approve is None:
            return ToolOutput(headless, is_error=True)
        cell = tool == "propose_cell"
        done, verb = ("inserted", "propose") if cell else ("run", "run")
        noun = {"run_command": "a command", "run_python": "code"}.get(tool, "a cell")
        try:
            answer: object = (
                self.approve(text, tool=tool) if _takes_tool(self.approve) else self.approve(text)
            )
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception:
            log.warning("asking for approval failed", exc_info=True)
            return ToolOutput(f"{tool} was not {done}: asking the user for approval failed.", True)
        if answer is False:
            return ToolOutput(declined, is_error=True)
        if answer is not True:
            # Only the bool True approves: input()'s "n", "", None, 0 or a stray object must not.
            try:
                shown = f"{cut_line(repr(answer), 40)} ({type(answer).__name__})"
            except Exception:
                shown = f"a {type(answer).__name__}"
            log.warning("the approve callback answered %s, not True or False; not done", shown)
            return ToolOutput(
                f"{tool} was not {done}: the approval answer was not a yes or no (it was {shown}); only "
                f"True approves {noun}. Do not {verb} it again; ask the user.",
                is_error=True,
            )
        return None

    # -- the notebook kernel ---------------------------------------------------------------------------

    def _kernel_for(self, name: str) -> Kernel:
        if self.kernel is None:
            raise WorkspaceError(NO_KERNEL.format(name=name))
        return self.kernel

    def cell_history(self) -> ToolOutput:
        """cell_history: the cells run in the kernel, newest last."""
        return ToolOutput(self._kernel_for("cell_history").history_text())

    async def run_python(self, code: str) -> ToolOutput:
        """run_python: ask (when asked to ask), then run ``code`` in the kernel like a new cell."""
        kernel = self._kernel_for("run_python")
        _check_code("run_python", code)
        if self.kernel_mode == "ask":
            refused = await self._approval(code, "run_python", KERNEL_HEADLESS, KERNEL_DECLINED)
            if refused is not None:
                return refused
        outcome = await kernel.run(code)
        text = cells.cell_text(outcome.record, source=False)
        head = "Ran in the kernel" + (" and failed" if outcome.failed else "") + ":"
        if outcome.still_running:
            text += (
                "\nThe kernel is still busy running this code, so no more code can run in this reply: "
                "answer with what you know, and tell the user the kernel may need an interrupt or a restart."
            )
        elif outcome.timed_out:
            text += (
                "\nThe time limit ended this reply: answer with what you know, or propose the code as a cell."
            )
        return ToolOutput(
            f"{head}\n{text}", is_error=outcome.failed, settles=outcome.timed_out, notice=outcome.notice
        )

    async def propose_cell(self, code: str, why: str) -> ToolOutput:
        """propose_cell: a cell for the notebook, inserted (as the cells setting says) but never run."""
        kernel = self._kernel_for("propose_cell")
        _check_code("propose_cell", code)
        return await self._propose(kernel, code, why)

    async def _propose(self, kernel: Kernel, code: str, why: str) -> ToolOutput:
        from twinny_magics.tools.kernel import Proposal  # noqa: PLC0415

        proposal = Proposal(code, why)
        kernel.proposals.append(proposal)
        if not kernel.can_insert:
            proposal.status = "shown"
            return ToolOutput(CELL_SHOWN)
        if self.cells == "insert":
            proposal.status = "insert"
            return ToolOutput(CELL_QUEUED)
        refused = await self._approval(code, "propose_cell", CELL_SHOWN, CELL_DISCARDED)
        if refused is not None:
            proposal.status = "shown" if refused.text == CELL_SHOWN else "discarded"
            return ToolOutput(refused.text, is_error=refused.text != CELL_SHOWN)
        proposal.status = "insert"
        return ToolOutput(CELL_QUEUED)

    def _scrub(self, text: str) -> str:
        """Belt and braces: no message of ours may carry the machine's absolute workspace path."""
        for root in sorted({str(self.root), self._given_root}, key=len, reverse=True):
            if len(root) > 1:  # a workspace at "/" would otherwise lose every slash
                text = text.replace(root, ".")
        return text


def _check_code(name: str, code: str) -> None:
    if not code.strip():
        raise WorkspaceError(f'{name} needs code, e.g. {{"code": "df.describe()"}}.')
    if "\x00" in code:
        raise WorkspaceError("The code contains a NUL character.")


def _takes_tool(approve: Callable[..., Any]) -> bool:
    """Whether an approve callback takes a ``tool`` keyword (older ones take the command alone)."""
    try:
        parameters = inspect.signature(approve).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "tool" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _no_mask_written(change: Change) -> Change:
    """``change``, unless it writes `MASK` where the file had none: the model copied masked text back."""
    written = MASK.encode()
    if change.new.count(written) > (change.old or b"").count(written):
        raise WorkspaceError(MASK_WRITTEN.format(path=change.target.rel))
    return change
