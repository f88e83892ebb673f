"""The task benchmark: does the agent *answer*? Real code, graded tasks, five configurations of one model.

    .venv/bin/python benchmarks/bench_tasks.py --quick                 # 9 tasks on the embedded SmolLM2
    .venv/bin/python benchmarks/bench_tasks.py                         # all 37 tasks
    .venv/bin/python benchmarks/bench_tasks.py --gguf qwen2.5-coder-1.5b-q4.gguf --window 4096
    .venv/bin/python benchmarks/bench_tasks.py --server http://127.0.0.1:11434 --model qwen2.5-coder:1.5b
    .venv/bin/python benchmarks/bench_tasks.py --tasks locate,edit --configs defaults,naive --resume
    .venv/bin/python benchmarks/bench_tasks.py --server http://a:8080 --server http://b:8080 --concurrency 2

The workspace is toolz 1.0.0's source and a notebook (``tasks_toolz.py`` says why and how tasks are
judged); each task × configuration runs through :mod:`twinny_magics.experiment` — a fresh session on a
fresh copy of the workspace, greedy (temperature 0) and seeded, edits applied on the copy, commands off
for every configuration (the tasks need only reading and editing). The configurations:

- ``defaults``: our loop as a user gets it (``Agent()`` options untouched: mode ``auto``, the head start's
  evidence on; since this round the workspace map and the search tool off, on in the earlier runs);
- ``native`` / ``text``: our loop with ``mode="native"`` / ``mode="text"``;
- ``none``: our loop without the head start and the search tool (the defaults before them);
- ``map`` / ``search`` / ``evidence``: our loop with one part of the head start alone (run when named in
  ``--configs``: they measure what each part adds);
- ``no-edit-first`` / ``no-grammar`` / ``look-first``: the defaults with one change of the loop undone
  (the nudge to make a requested change, the call grammar) or made (the nudge to look first); run when
  named;
- ``naive``: :class:`NaiveLoop`, the loop everyone writes first, with the same tools, prompts and call
  reader but no budget: no window asked, no estimate, no trimming or cutting of results (the tools' own
  limits stay: 150 lines a read, 40 grep matches), no repeat guard, no call grammar, no closing request;
- ``no-tools``: :class:`NoTools`, one request with the question alone.

A run prints a table per configuration, per kind and per task, writes the summary to
``benchmarks/results_tasks.json`` (keyed by model, window and task set) and every reply in full to
``artifacts/bench_tasks/`` (the experiment's JSON; ``--resume`` carries on from it after a stop).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The folder is put on the path just above, so that this runs as a plain script.
import tasks_all
import tasks_common
import tasks_toolz
from tasks_common import KINDS, Task

from twinny_magics import protocol
from twinny_magics.conversation import (
    Message,
    Mode,
    ToolCall,
    ToolResult,
    assistant,
    render,
    system,
    tool_result,
    user,
)
from twinny_magics.errors import PromptTooLong
from twinny_magics.events import Notice, Reply, RequestRecord, Step
from twinny_magics.experiment import Results, Variant, run
from twinny_magics.experiment.checks import Question, describe
from twinny_magics.experiment.copies import Snapshot, changes, snapshot
from twinny_magics.experiment.records import Run
from twinny_magics.experiment.runner import DEFAULTS
from twinny_magics.experiment.serving import RunServer, seeded
from twinny_magics.experiment.variants import effective
from twinny_magics.loop import DEFAULT_SYSTEM_PROMPT, ModelServer
from twinny_magics.servers import base as wire
from twinny_magics.tools import Workspace

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results_tasks.json"
RECORDS = ROOT / "artifacts" / "bench_tasks"
DEFAULT_WINDOW = 4096
SEED = 0
#: The reply cap of the naive loop and of no-tools (most clients set one; llama.cpp's default is none,
#: which lets a looping small model write until the window is full).
NAIVE_MAX_TOKENS = 1024

# -- the two configurations that are not our loop -------------------------------------------------------


def auto_mode(server: ModelServer) -> Mode:
    """The mode ``auto`` starts in (the loop's own rule): text where native tools cannot work, else native."""
    if server.kind == "textgen" or getattr(server, "takes_tools", True) is False:
        return "text"
    return "text" if getattr(server, "embedded", None) is not None else "native"


class _OneServer:
    """What the naive loop and no-tools share: one server, its options, one streamed request."""

    def __init__(
        self,
        *,
        server: ModelServer,
        workspace: str | Path,
        temperature: float | None = None,
        extra: dict[str, Any] | None = None,
        **_options: Any,  # the Agent's other options (the experiment passes them all): not used here
    ) -> None:
        self.server = server
        self.workspace = Path(workspace)
        self.temperature = temperature
        self.extra = dict(extra or {})

    def run(self, question: str) -> Reply:
        """Answer ``question`` (blocking)."""
        return asyncio.run(self.arun(question))

    async def arun(self, question: str) -> Reply:  # pragma: no cover - each subclass has its own
        raise NotImplementedError

    async def request(
        self, messages: list[Message], mode: Mode, tools: list[dict[str, Any]] | None, record: RequestRecord
    ) -> tuple[str, list[ToolCall]]:
        """Send one request; its text and native calls, the server's counts kept in ``record``."""
        rendered = render(messages, mode)
        record.chars = sum(len(json.dumps(m, ensure_ascii=False)) for m in rendered)
        request = wire.ChatRequest(
            messages=rendered,
            tools=tools,
            model=self.server.model,
            max_tokens=NAIVE_MAX_TOKENS,
            temperature=self.temperature,
            extra=dict(self.extra),
        )
        parts: list[str] = []
        calls: list[ToolCall] = []
        async with contextlib.aclosing(self.server.stream(request)) as events:  # type: ignore[type-var]
            async for event in events:
                if isinstance(event, wire.TextChunk):
                    parts.append(event.text)
                elif isinstance(event, wire.ToolCalls):
                    calls.extend(event.readable)
                elif isinstance(event, wire.Usage):
                    record.prompt_tokens = event.prompt_tokens
                    record.completion_tokens = event.completion_tokens
                    record.cached_tokens = event.cached_tokens
                elif isinstance(event, wire.Finish):
                    record.finish_reason = event.reason
        return "".join(parts), calls


def _record(step: int, mode: Mode, last: bool = False) -> RequestRecord:
    # No window, plan or estimate: the naive loop never asks; the server's counts fill in later.
    return RequestRecord(
        step=step, mode=mode, window=0, limit=0, target=0, estimated_tokens=0, chars=0, last=last
    )


class NaiveLoop(_OneServer):
    """The tool loop everyone writes first: keep every message, send it all, run what the model calls.

    The same tools (the workspace's, with the same edits and commands settings), the same system prompt
    and tool list, the same call reader as our loop (native calls, else calls written as text). What it
    lacks is what our loop adds around them: it never asks the window, estimates or trims (results go in
    whole, as the tools return them), never refuses a repeated call, sends no grammar and no closing
    request. It stops at the first reply without a call; after ``steps`` requests, what the model wrote
    last is its answer. A request the server refuses as too long ends the reply with no answer (the
    refusal is counted; the run is a failure, not a server error).
    """

    def __init__(
        self,
        *,
        server: ModelServer,
        workspace: str | Path,
        steps: int = 12,
        mode: str = "auto",
        edits: str = "apply",
        commands: str = "off",
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        **options: Any,
    ) -> None:
        super().__init__(server=server, workspace=workspace, **options)
        self.steps = steps
        self.mode: Mode = mode if mode in ("native", "text") else auto_mode(server)  # type: ignore[assignment]
        self.tools = Workspace(self.workspace, edits=edits, commands=commands)  # type: ignore[arg-type]
        self.system_prompt = system_prompt

    async def arun(self, question: str) -> Reply:
        mode = self.mode
        definitions = self.tools.definitions()
        prompt = (
            self.system_prompt
            if mode == "native"
            else protocol.text_mode_system_prompt(self.system_prompt, definitions)
        )
        messages: list[Message] = [system(prompt), user(question)]
        reply = Reply(question=question, stopped="steps")
        for number in range(1, self.steps + 1):
            record = _record(number, mode, last=number == self.steps)
            reply.requests.append(record)
            try:
                text, native = await self.request(
                    messages, mode, definitions if mode == "native" else None, record
                )
            except PromptTooLong as error:
                reply.stopped = "refused"
                reply.text = ""
                reply.notices.append(Notice("error", f"The server refused the request as too long: {error}"))
                break
            step = Step(number, text)
            reply.steps.append(step)
            calls = native or list(protocol.parse_reply(text, definitions).calls)
            reply.text = text.strip()
            if not calls:
                reply.stopped = "answer"
                break
            calls = [c if c.id else replace(c, id=f"call_{number}_{n}") for n, c in enumerate(calls)]
            added: list[Message] = [assistant(text, tuple(calls) if mode == "native" else ())]
            for call in calls:
                outcome = await self.tools.run(call)
                result = ToolResult(call, outcome.text, number, is_error=outcome.is_error)
                step.calls.append(call)
                step.results.append(result)
                added.append(tool_result(result))
            messages += added
        return reply


class NoTools(_OneServer):
    """The model alone: one request with the question and nothing else (no system prompt, no tools)."""

    async def arun(self, question: str) -> Reply:
        record = _record(1, "native", last=True)
        reply = Reply(question=question, requests=[record])
        try:
            text, _ = await self.request([user(question)], "native", None, record)
        except PromptTooLong as error:
            reply.stopped = "refused"
            reply.notices.append(Notice("error", f"The server refused the request as too long: {error}"))
            return reply
        reply.steps.append(Step(1, text))
        reply.text = text.strip()
        return reply


def fresh_agent(**options: Any) -> Any:
    """Our loop as a first session of a process gets it: an ``Agent``, with nothing ``auto`` learned in
    earlier sessions (the mode it chose for this server and model is otherwise kept for the process, and
    each run would inherit the runs before it)."""
    from twinny_magics.agent import Agent

    try:
        from twinny_magics.modes import LEARNED_MODES
    except ImportError:  # a package without the memory: every session is fresh anyway
        pass
    else:
        LEARNED_MODES.clear()
    return Agent(**options)


#: The configurations, in table order: name -> (what it is, the variant).
CONFIGS: dict[str, tuple[str, Variant]] = {
    "defaults": ("our loop, its defaults (mode auto)", Variant("defaults", factory=fresh_agent)),
    "native": ("our loop, native tool calls", Variant("native", factory=fresh_agent, mode="native")),
    "text": ("our loop, text mode", Variant("text", factory=fresh_agent, mode="text")),
    **{
        name: (what, Variant(name, factory=fresh_agent, workspace_map=m, evidence=e, search=t))
        for name, what, m, e, t in (
            ("none", "our loop, no head start, no search tool", False, False, False),
            ("map", "our loop, the workspace map only", True, False, False),
            ("search", "our loop, the search tool only", False, False, True),
            ("evidence", "our loop, the evidence only", False, True, False),
        )
    },
    # One change of the loop undone (or, for look-first, made), to show what it is worth on its own.
    "no-edit-first": (
        "our loop, no nudge to make a requested change",
        Variant("no-edit-first", factory=fresh_agent, edit_first=False),
    ),
    "no-grammar": ("our loop, no call grammar", Variant("no-grammar", factory=fresh_agent, grammar="off")),
    "look-first": (
        "our loop, a first answer without a call nudged",
        Variant("look-first", factory=fresh_agent, look_first=True),
    ),
    "naive": ("naive loop: keeps everything, no budget", Variant("naive", factory=NaiveLoop)),
    "no-tools": ("the model alone, one request", Variant("no-tools", factory=NoTools)),
}


#: The head start's parts one at a time and single changes of the loop: run when named (``--configs
#: map,search,evidence``), not by default.
ABLATIONS = ("map", "search", "evidence", "no-edit-first", "no-grammar", "look-first")
#: What a run without ``--configs`` compares.
DEFAULT_CONFIGS = [name for name in CONFIGS if name not in ABLATIONS]


def pick_configs(wanted: str | None) -> list[str]:
    """The configurations ``wanted`` names (comma-separated; None: all but the ablations)."""
    if not wanted:
        return list(DEFAULT_CONFIGS)
    names = [w.strip() for w in wanted.split(",") if w.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise ValueError(f"no configuration {', '.join(unknown)}; they are: {', '.join(CONFIGS)}")
    return [n for n in CONFIGS if n in names]


# -- the server ------------------------------------------------------------------------------------------


@contextmanager
def serving(args: argparse.Namespace) -> Iterator[tuple[dict[str, Any], str]]:
    """The experiment's server options and the model's name; a server this started is stopped after."""
    if args.server:
        # The window is asked of the server; --window caps it (and is Ollama's num_ctx, sent with every
        # request, the naive loop's too). Several --server: the runs are spread over them.
        where = {"base_url": args.server[0]} if len(args.server) == 1 else {"servers": args.server}
        options = {**where, "model": args.model, "kind": args.kind, "window": args.window}
        if args.api_key:
            options["api_key"] = args.api_key
        yield {k: v for k, v in options.items() if v is not None}, args.model or args.server[0]
    elif args.gguf:
        window = args.window or DEFAULT_WINDOW
        with gguf_server(Path(args.gguf), window, args.threads) as (url, alias):
            yield {"base_url": url, "kind": "llamacpp", "model": alias}, alias
    else:
        from twinny_magics.servers import ConnectedServer
        from twinny_magics.servers.embedded import EmbeddedServer

        # In this process and named embedded, as a user without a server gets it (text mode, call-first
        # grammar by default), at the benchmark's window.
        embedded = EmbeddedServer(n_ctx=args.window or DEFAULT_WINDOW, threads=args.threads)
        try:
            yield {"server": ConnectedServer(embedded.info, embedded=embedded)}, embedded.alias
        finally:
            embedded.stop()


@contextmanager
def gguf_server(gguf: Path, window: int, threads: int | None) -> Iterator[tuple[str, str]]:
    """A GGUF on llama.cpp's own server (``xllamacpp``, the GGUF's chat template through jinja, so tools
    render natively), in a subprocess on 127.0.0.1: a plain llama.cpp server, as ``llama-server -m`` is."""
    if not gguf.is_file():
        raise SystemExit(f"No GGUF at {gguf}.")
    alias = gguf.stem
    command = [
        sys.executable,
        "-m",
        "twinny_magics.servers.embedded",
        "--gguf",
        str(gguf),
        "--ctx",
        str(window),
    ]
    command += ["--port", "0", "--alias", alias] + (["--threads", str(threads)] if threads else [])
    log = tempfile.NamedTemporaryFile(prefix="twinny-llama-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, cwd=ROOT)
    assert process.stdout is not None
    started = False
    try:
        line = process.stdout.readline().decode()
        if not line.startswith("ready "):
            raise SystemExit(f"llama.cpp did not start: {line!r}; see {log.name}")
        started = True
        print(f"llama.cpp serving {gguf.name} at {line.split()[1]} (window {window:,})", file=sys.stderr)
        yield line.split()[1], alias
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(15)
        process.stdout.close()
        log.close()
        if started:
            Path(log.name).unlink(missing_ok=True)  # kept only when the server did not start


# -- running -----------------------------------------------------------------------------------------


def package_fingerprint() -> str:
    """A digest of the package's source as this process loaded it: resumed runs must come from the same."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "twinny_magics").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def record_path(model: str, window: int | str, selection: str) -> Path:
    """Where the full record of a run (every reply) is kept: one file per model, window and task set."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{model}-{window}-{selection}").strip("-")
    return RECORDS / f"{slug}.json"


def selection_name(
    tasks: Sequence[Task],
    every: Sequence[Task],
    configs: Sequence[str],
    quick: bool,
    default: Sequence[str] = DEFAULT_CONFIGS,
) -> str:
    """``quick``, ``full``, or ``partial-<digest>`` for another choice of tasks or configurations than the
    ``default`` ones."""
    names = [t.name for t in tasks]
    if list(configs) == list(default):
        if quick and names == [t.name for t in every if t.quick]:
            return "quick"
        if names == [t.name for t in every]:
            return "full"
    digest = hashlib.sha256(json.dumps([names, list(configs)]).encode()).hexdigest()[:8]
    return f"partial-{digest}"


def bench(
    tasks: Sequence[Task],
    configs: Sequence[str],
    *,
    workspace: Path,
    server_options: dict[str, Any],
    record: Path,
    steps: int = 12,
    seed: int = SEED,
    resume: bool = False,
    resume_stale: bool = False,
    concurrency: int | Literal["auto"] = 1,
) -> Results:
    """Every task under every configuration: the experiment's results, saved to ``record`` as they grow
    (``concurrency`` runs at once, on each server, as ``run()`` takes it)."""
    fingerprint = package_fingerprint()
    earlier: Results | None = None
    if resume and record.exists():
        earlier = Results.load(record)
        then = earlier.settings.get("package")
        if then != fingerprint and not resume_stale:
            raise SystemExit(
                f"{record} was made by another version of the package ({then}, now {fingerprint}): its runs "
                "would not compare. Start afresh (no --resume), or --resume-stale to keep them anyway."
            )
        print(
            f"resuming {record}: {len([r for r in earlier.runs if r.outcome != 'error'])} runs kept",
            file=sys.stderr,
        )
    record.parent.mkdir(parents=True, exist_ok=True)
    try:
        results = run(
            [t.as_question() for t in tasks],
            [CONFIGS[name][1] for name in configs],
            workspace=workspace,
            seed=seed,
            resume=earlier,
            save=record,
            progress="text",
            steps=steps,
            commands="off",
            concurrency=concurrency,
            **server_options,
        )
    except ValueError as error:
        if earlier is None:
            raise
        raise SystemExit(f"Cannot resume {record}: {error}") from None
    results.settings["package"] = fingerprint
    results.save(record)
    return results


# -- a code base's tasks as one session -----------------------------------------------------------------


def session_agent(**options: Any) -> Any:
    """Our loop as a user's kernel makes it for each question: a fresh ``Agent``, and whatever the process
    learned in earlier questions (the mode ``auto`` chose for this server and model) kept."""
    from twinny_magics.agent import Agent

    return Agent(**options)


def forget_learned() -> None:
    """What a new process starts with: nothing ``auto`` learned (a session begins in a new process)."""
    try:
        from twinny_magics.modes import LEARNED_MODES
    except ImportError:  # a package without the memory
        return
    LEARNED_MODES.clear()


def session_variant(name: str) -> Variant:
    """The configuration ``name`` as a session runs it: our loop's factory keeps what the process learned."""
    variant = CONFIGS[name][1]
    if variant.factory is not fresh_agent:
        return variant  # the naive loop and no-tools remember nothing between questions anyway
    return Variant(name, factory=session_agent, **variant.options)


def _connect_once(options: dict[str, Any]) -> ModelServer:
    if "server" in options:
        return options["server"]
    from twinny_magics.servers import connect

    return connect(
        options["base_url"],
        model=options.get("model"),
        kind=options.get("kind"),
        api_key=options.get("api_key"),
        window=options.get("window"),
    )


def reset_changes(copy: Path, template: Path, changed: Sequence[str]) -> None:
    """Undo a question's changes to the session's workspace (``M``/``D``: the template's file back; ``A``:
    removed), so that the next question meets the files its check was made from."""
    for change in changed:
        how, rel = change[:1], change[2:]
        target = copy / rel
        if how == "A":
            target.unlink(missing_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(template / rel, target)


def session(
    tasks: Sequence[Task],
    configs: Sequence[str],
    *,
    workspace: Path,
    server_options: dict[str, Any],
    record: Path,
    steps: int = 12,
    seed: int = SEED,
    resume: bool = False,
    resume_stale: bool = False,
) -> Results:
    """The tasks asked one after another in this process, as a notebook session asks them.

    For each configuration, one session: what ``auto`` learned is forgotten once, at its start (a new
    process), and never again; a fresh ``Agent`` per question, as a user's kernel makes one per cell; one
    copy of the workspace for the whole session (the same path, so what is kept per workspace stays too);
    the prompt cache is not skipped (a kernel's requests use it). Greedy and seeded like the fresh runs.
    Edits are applied and judged, then undone before the next question (the only reset: every check is
    made from the pristine files, and a question after a wrong edit would otherwise be asked of files its
    check does not describe). Saved after every question; ``resume`` carries on from the first question
    not done, in a new process (noted under ``settings['restarted_at']``: the memory of the questions
    before it is not replayed).
    """
    fingerprint = package_fingerprint()
    questions = [t.as_question() for t in tasks]
    variants = [session_variant(name) for name in configs]
    common = {**DEFAULTS, "steps": steps, "commands": "off"}
    results = Results(
        questions,
        variants,
        settings={
            "session": True,
            "seed": seed,
            "package": fingerprint,
            "workspace": str(workspace),
            "options": effective(common, {}),
            "restarted_at": {},
        },
        effective={v.name: effective(common, v.options) for v in variants},
    )
    if resume and record.exists():
        earlier = Results.load(record)
        then = earlier.settings.get("package")
        if then != fingerprint and not resume_stale:
            raise SystemExit(
                f"{record} was made by another version of the package ({then}, now {fingerprint}): its runs "
                "would not compare. Start afresh (no --resume), or --resume-stale to keep them anyway."
            )
        if earlier.settings.get("seed") != seed or not earlier.settings.get("session"):
            raise SystemExit(f"Cannot resume {record}: it is not a session run with seed {seed}.")
        saved = {q.name: q for q in earlier.questions}
        for question in questions:
            old = saved.get(question.name)
            if old is not None and (
                old.text != question.text or describe(old.check) != describe(question.check)
            ):
                raise SystemExit(f"Cannot resume {record}: question {question.name!r} changed since.")
        wanted = {(q.name, v.name) for q in questions for v in variants}
        results.runs = [r for r in earlier.runs if r.outcome != "error" and (r.question, r.variant) in wanted]
        results.settings["restarted_at"] = dict(earlier.settings.get("restarted_at") or {})
        print(f"resuming {record}: {len(results.runs)} runs kept", file=sys.stderr)
    record.parent.mkdir(parents=True, exist_ok=True)
    base = _connect_once(server_options)
    results.servers = {v.name: {"kind": base.kind, "model": base.model} for v in variants}
    done = {r.key[:2] for r in results.runs}
    started = time.monotonic()
    try:
        for variant in variants:
            todo = [q for q in questions if (q.name, variant.name) not in done]
            if not todo:
                continue
            if len(todo) < len(questions):
                results.settings["restarted_at"][variant.name] = todo[0].name
            forget_learned()  # this session's process is new; from here on nothing is cleared
            with tempfile.TemporaryDirectory(prefix="twinny-session-") as temp:
                template, copy = Path(temp) / "template", Path(temp) / "workspace"
                shutil.copytree(workspace, template, symlinks=True)
                shutil.copytree(template, copy, symlinks=True)
                before = snapshot(copy)
                for number, question in enumerate(todo, 1):
                    run_ = _session_run(
                        question, variant, copy=copy, before=before, base=base, common=common, seed=seed
                    )
                    reset_changes(copy, template, run_.changed)
                    results.runs.append(run_)
                    results.save(record)
                    failed = run_.why and run_.outcome != "pass"
                    why_ = f" — {run_.why.splitlines()[0][:100]}" if failed else ""
                    print(
                        f"[session {variant.name} {number}/{len(todo)}] {run_.outcome} {question.name} "
                        f"({run_.seconds:.1f} s){why_}",
                        file=sys.stderr,
                        flush=True,
                    )
    except KeyboardInterrupt:
        results.stopped = "interrupted"
    finally:
        results.settings["seconds"] = round(time.monotonic() - started, 3)
        results.save(record)
    return results


def _session_run(
    question: Question,
    variant: Variant,
    *,
    copy: Path,
    before: Snapshot,
    base: ModelServer,
    common: dict[str, Any],
    seed: int,
) -> Run:
    """One question of a session: a fresh Agent on the session's workspace, its reply judged."""
    server = RunServer(base, cold_first=False)
    record = Run(question.name, variant.name, 0, "error", seed=seed)
    options = {**common, **variant.options}
    options["extra"] = seeded(options.get("extra"), seed, server.kind)
    make: Any = variant.factory or session_agent
    started = time.perf_counter()
    try:
        reply: Reply = make(server=server, workspace=copy, **options).run(question.text)
    except Exception as error:  # a bug or an unreachable server: this question errs, the others go on
        record.why = f"{type(error).__name__}: {error}"
        record.seconds = round(time.perf_counter() - started, 3)
        return record
    record.seconds = round(time.perf_counter() - started, 3)
    record.refused = server.refused
    record.reply = reply
    record.changed = changes(before, snapshot(copy, before))
    if reply.stopped == "error":
        record.why = reply.error or "the server failed"
        return record
    verdict = question.judge(reply, copy, [change[2:] for change in record.changed])
    record.outcome = "pass" if verdict.passed else "fail"
    record.why, record.check_raised = verdict.why, verdict.raised
    return record


# -- what a run gives ------------------------------------------------------------------------------------


def no_answer(run_: Run) -> bool:
    """Whether the reply has no answer from the model: empty, a call written as the answer, or the loop's
    "the model did not answer" with what its steps found."""
    text = (run_.reply.text if run_.reply else "").strip()
    if not text or text.startswith(tasks_toolz.no_answer_prefix()):
        return True
    from twinny_magics import notes

    looks = getattr(notes, "looks_like_a_call", None)
    return bool(looks(text)) if looks else False


def why(task: Task, run_: Run) -> str:
    """Why a run did not pass, in a line (an edit's: what changed, not the check's whole-file pattern)."""
    if run_.outcome == "pass":
        return ""
    if task.kind == "edit" and run_.outcome == "fail":
        if not run_.changed:
            return "no file changed"
        target = task.edit.path if task.edit else ""
        how = " (the target, not as asked)" if f"M {target}" in run_.changed else ""
        return "changed: " + ", ".join(run_.changed[:6]) + how
    return (run_.why.splitlines() or [""])[0][:200]


def fresh_prompt_tokens(run_: Run) -> int:
    """Prompt tokens the server evaluated afresh over the reply's requests (its count less what it
    reported as read from its cache)."""
    if not run_.reply:
        return 0
    return sum(max(0, (q.prompt_tokens or 0) - (q.cached_tokens or 0)) for q in run_.reply.requests)


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def summarise(results: Results, tasks: Sequence[Task], configs: Sequence[str]) -> dict[str, Any]:
    """Per configuration, per kind and per task: passes, steps, tokens, refusals, seconds."""
    kind_of = {t.name: t.kind for t in tasks}
    wanted = set(kind_of)
    runs = [r for r in results.runs if r.question in wanted]
    per_config: dict[str, Any] = {}
    for name in configs:
        mine = [r for r in runs if r.variant == name]
        judged = [r for r in mine if r.outcome in ("pass", "fail")]
        passed = [r for r in judged if r.passed]
        per_config[name] = {
            "what": CONFIGS[name][0],
            "passed": len(passed),
            "judged": len(judged),
            "pass_rate": round(len(passed) / len(judged), 3) if judged else None,
            "errors": sum(r.outcome == "error" for r in mine),
            "refused": sum(r.refused for r in mine),
            "no_answer": sum(no_answer(r) for r in judged),
            "steps": _mean([r.steps for r in judged]),
            "prompt_tokens": _mean([r.prompt_tokens for r in judged]),
            "generated_tokens": _mean([r.generated_tokens for r in judged]),
            "seconds": _mean([r.seconds for r in judged]),
            "steps_per_pass": _mean([r.steps for r in passed]),
            "prompt_tokens_per_pass": _mean([r.prompt_tokens for r in passed]),
            "fresh_prompt_tokens_per_pass": _mean([fresh_prompt_tokens(r) for r in passed]),
            "seconds_per_pass": _mean([r.seconds for r in passed]),
        }
    by_kind = {
        kind: {
            name: [
                sum(r.passed for r in runs if r.variant == name and kind_of[r.question] == kind),
                sum(
                    r.outcome in ("pass", "fail")
                    for r in runs
                    if r.variant == name and kind_of[r.question] == kind
                ),
            ]
            for name in configs
        }
        for kind in KINDS
        if any(t.kind == kind for t in tasks)
    }
    rows: dict[str, Any] = {}
    for task in tasks:
        rows[task.name] = {"kind": task.kind}
        for name in configs:
            found = [r for r in runs if r.question == task.name and r.variant == name]
            if not found:
                continue
            r = found[0]
            rows[task.name][name] = {
                "outcome": r.outcome,
                "steps": r.steps,
                "prompt_tokens": r.prompt_tokens,
                "generated_tokens": r.generated_tokens,
                "refused": r.refused,
                "seconds": r.seconds,
                "no_answer": no_answer(r),
                "why": why(task, r),
                "answer": (r.reply.text if r.reply else "")[:240],
            }
    done = sum(1 for r in runs if r.outcome != "error" and r.variant in configs)
    return {
        "configs": per_config,
        "by_kind": by_kind,
        "tasks": rows,
        "runs_done": done,
        "runs_total": len(tasks) * len(configs),
        "stopped": results.stopped,
    }


def _rate(passed: int, judged: int) -> str:
    return f"{passed}/{judged}" if judged else "—"


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def tables(summary: dict[str, Any], heading: str) -> str:
    """The summary as text tables: per configuration, per kind, per task."""
    configs = list(summary["configs"])
    lines = [
        heading,
        f"{'config':<10} {'passed':>7} {'rate':>5} {'steps':>5} {'prompt tok':>10} {'gen tok':>7} "
        f"{'refused':>7} {'no answer':>9} {'s/run':>6}  steps/pass  what",
    ]
    for name, c in summary["configs"].items():
        rate = "—" if c["pass_rate"] is None else f"{c['pass_rate']:.0%}"
        lines.append(
            f"{name:<10} {_rate(c['passed'], c['judged']):>7} {rate:>5} {_num(c['steps']):>5} "
            f"{_num(c['prompt_tokens'], 0):>10} {_num(c['generated_tokens'], 0):>7} {c['refused']:>7} "
            f"{c['no_answer']:>9} {_num(c['seconds']):>6}  {_num(c['steps_per_pass']):>10}  {c['what']}"
            + (f" ({c['errors']} server errors)" if c["errors"] else "")
        )
    lines += ["", "Passed per kind", f"{'kind':<11} " + " ".join(f"{n:>9}" for n in configs)]
    for kind, by_config in summary["by_kind"].items():
        lines.append(f"{kind:<11} " + " ".join(f"{_rate(*by_config[n]):>9}" for n in configs))
    marks = {"pass": "✓", "fail": "✗", "error": "E", "ran": "·"}
    lines += [
        "",
        "Per task (✓ passed, ✗ failed, E server error; then steps)",
        f"{'task':<27} " + " ".join(f"{n:>9}" for n in configs),
    ]
    for task, row in summary["tasks"].items():
        cells = []
        for name in configs:
            cell = row.get(name)
            cells.append(f"{marks[cell['outcome']]} {cell['steps']:>2}" if cell else "-")
        lines.append(f"{task:<27} " + " ".join(f"{c:>9}" for c in cells))
    if summary["stopped"]:
        lines.append(
            f"\nStopped ({summary['stopped']}): {summary['runs_done']} of {summary['runs_total']} runs "
            "done; --resume carries on."
        )
    return "\n".join(lines)


def observed_window(results: Results) -> int | None:
    """The window our loop planned for (asked of the server, capped by --window), from its requests."""
    seen = [q.window for r in results.runs if r.reply for q in r.reply.requests if q.window]
    return max(seen) if seen else None


def compact_summary(entry: dict[str, Any]) -> dict[str, Any]:
    """What ``run.py`` keeps of a task run in ``results.json``: pass rates per configuration and kind."""
    keep = ("model", "server_kind", "window", "selection", "runs_done", "runs_total", "seconds", "record")
    configs = {
        name: {k: c[k] for k in ("passed", "judged", "pass_rate", "refused", "no_answer", "steps", "errors")}
        for name, c in entry["configs"].items()
    }
    return {**{k: entry.get(k) for k in keep}, "configs": configs, "by_kind": entry["by_kind"]}


def store(key: str, entry: dict[str, Any], path: Path = RESULTS) -> None:
    """Keep ``entry`` under ``key`` in the results file, beside the other models' and task sets' runs."""
    previous = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    runs = dict(previous.get("runs", {}))
    runs[key] = entry
    path.write_text(
        json.dumps({"latest": key, "runs": runs}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def package_commit() -> str:
    """The commit the package was run at, ``+changes`` when its files differ from it (a shared tree)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "twinny_magics"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+changes" if changed else "")


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="one task of each kind (9), the --tasks default")
    p.add_argument("--tasks", help="task names or kinds, comma-separated (default: all, or the quick set)")
    p.add_argument("--configs", help=f"configurations, comma-separated (default: {','.join(CONFIGS)})")
    p.add_argument(
        "--server",
        metavar="URL",
        action="append",
        help="a model server (default: the embedded SmolLM2); more than once: the runs spread over them",
    )
    p.add_argument(
        "--concurrency",
        type=lambda text: "auto" if text == "auto" else int(text),
        default=1,
        help="runs at once on each server (default 1; auto: as many as each server says it takes)",
    )
    p.add_argument("--model", help="the model at --server")
    p.add_argument("--kind", help="the server's kind (ollama, llamacpp, lmstudio, …); found out if not given")
    p.add_argument("--api-key", dest="api_key", help="sent as a Bearer token to --server")
    p.add_argument("--gguf", metavar="PATH", help="serve this GGUF on llama.cpp (xllamacpp) for the run")
    p.add_argument(
        "--window",
        type=int,
        help="the context window: --gguf and the embedded server are started with it (default 4096); with "
        "--server it is Ollama's num_ctx, elsewhere only a cap on what our loop plans for (the server's own "
        "window by default)",
    )
    p.add_argument("--threads", type=int, help="llama.cpp threads for --gguf or the embedded server")
    p.add_argument("--steps", type=int, default=12, help="steps a reply may take (default 12, the Agent's)")
    p.add_argument("--seed", type=int, default=SEED, help="the seed sent with every request (default 0)")
    p.add_argument(
        "--resume", action="store_true", help="keep the runs of the last run of this set, run the rest"
    )
    p.add_argument("--resume-stale", action="store_true", help="resume even if the package changed since")
    p.add_argument("--record", type=Path, help="the full record's path (default: artifacts/bench_tasks/…)")
    p.add_argument("--no-store", action="store_true", help=f"do not write {RESULTS.name}")
    p.add_argument(
        "--codebase",
        help=f"code bases, comma-separated ({', '.join(tasks_all.CODEBASES)}); with --set, those of the set",
    )
    p.add_argument(
        "--set",
        dest="split",
        choices=("dev", "heldout", "all"),
        help="the development code bases, the held-out one, or all (held-out runs are for reporting only)",
    )
    p.add_argument(
        "--session",
        action="store_true",
        help="ask each code base's tasks one after another in this process (a fresh Agent per question, "
        "nothing learned cleared between them), as a notebook session does",
    )
    p.add_argument(
        "--report",
        action="store_true",
        help=f"print the code-base tables from {RESULTS.name} for --gguf/--model and --window; run nothing",
    )
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark from the command line; returns what it stored."""
    args = parser().parse_args(argv)
    # A stop by SIGTERM (what `kill` sends) unwinds as Ctrl-C does, so the llama.cpp server started for
    # the run (a subprocess) is stopped with it instead of being left running; the runs done are saved.
    signal.signal(signal.SIGTERM, _stopped)
    return bench_from_args(args)


def _stopped(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def bench_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark the parsed ``args`` describe, print its tables, store its summary."""
    if args.report:
        model = Path(args.gguf).stem if args.gguf else args.model
        text = overview(stored_codebase_runs(model, args.window or DEFAULT_WINDOW))
        print(text or "No code-base runs stored for that model and window.")
        return {}
    if args.session and (args.concurrency != 1 or len(args.server or []) > 1):
        raise SystemExit("--session asks one question after another on one server: no --concurrency there.")
    if args.codebase or args.split or args.session:
        return bench_codebases(args)
    started = time.perf_counter()
    commit = package_commit()  # now: the package is loaded now, and others may commit during a long run
    try:
        sdist = tasks_toolz.fetch_sdist()
    except tasks_toolz.SourceMissing as error:
        raise SystemExit(str(error)) from None
    configs = pick_configs(args.configs)
    # The window a server is started with; with --server, the server's own unless --window caps it.
    asked: int | None = args.window or (None if args.server else DEFAULT_WINDOW)
    with tempfile.TemporaryDirectory(prefix="twinny-bench-tasks-") as temp:
        workspace = tasks_toolz.unpack(sdist, Path(temp) / "workspace")
        every = tasks_toolz.build_tasks(workspace)
        try:
            tasks = tasks_toolz.select(every, args.tasks, quick=args.quick)
        except ValueError as error:
            raise SystemExit(str(error)) from None
        selection = selection_name(tasks, every, configs, args.quick)
        print(
            f"task benchmark: {len(tasks)} of {len(every)} tasks × {len(configs)} configurations "
            f"({', '.join(configs)}), window {f'{asked:,}' if asked else 'as the server says'}",
            file=sys.stderr,
        )
        with serving(args) as (options, model):
            record = args.record or record_path(model, asked or "server", selection)
            results = bench(
                tasks,
                configs,
                workspace=workspace,
                server_options=options,
                record=record,
                steps=args.steps,
                seed=args.seed,
                resume=args.resume,
                resume_stale=args.resume_stale,
                concurrency=args.concurrency,
            )
    summary = summarise(results, tasks, configs)
    server = next(iter(results.servers.values()), {})
    window = observed_window(results) or asked or 0
    heading = (
        f"Task benchmark on {tasks_toolz.PACKAGE} {tasks_toolz.VERSION} ({len(tasks)} tasks, {selection}): "
        f"model {server.get('model')} ({server.get('kind')}), window {window:,}, greedy, "
        f"seed {args.seed}"
    )
    print()
    print(tables(summary, heading))
    entry = {
        **summary,
        "model": server.get("model"),
        "server_kind": server.get("kind"),
        "window": window,
        "selection": selection,
        "steps": args.steps,
        "seed": args.seed,
        "seconds": round(time.perf_counter() - started, 1),
        "record": str(record.relative_to(ROOT)) if record.is_relative_to(ROOT) else str(record),
        "source": {"sdist": tasks_toolz.SDIST, "sha256": tasks_toolz.SDIST_SHA256},
        "package": commit,
        "package_fingerprint": results.settings.get("package"),
        "python": sys.version.split()[0],
        "machine": platform.machine(),
    }
    if not args.no_store:
        store(f"{server.get('model')}, window {window}, {selection}", entry)
        print(f"\nWrote {RESULTS.name} and the full record {entry['record']}", file=sys.stderr)
    return entry


# -- the code bases: development and held-out, fresh and as sessions --------------------------------------

#: What a code-base run compares unless --configs says otherwise: the loop as a user gets it.
CODEBASE_CONFIGS = ["defaults"]


def pick_tasks(every: Sequence[Task], wanted: str | None, quick: bool, elsewhere: set[str]) -> list[Task]:
    """The tasks of one code base that ``wanted`` names (names or kinds, comma-separated); a word that
    names nothing here but a task of another code base (``elsewhere``) is not refused."""
    if not wanted:
        return [t for t in every if t.quick] if quick else list(every)
    words = [w.strip() for w in wanted.split(",") if w.strip()]
    known = {t.name for t in every} | set(KINDS)
    unknown = [w for w in words if w not in known | elsewhere]
    if unknown:
        raise ValueError(f"no task or kind named {', '.join(unknown)} in the chosen code bases")
    return [t for t in every if t.name in words or t.kind in words]


def codebase_key(
    codebase: str, split: str, mode: str, *, model: Any, window: int, selection: str, commit: str
) -> str:
    """Where a code-base run is kept in the results file: code base, set, fresh/session, model, window,
    the task selection, and the commit it ran at."""
    return f"{codebase} ({split}), {mode}, {model}, window {window}, {selection}, at {commit}"


def bench_codebases(args: argparse.Namespace) -> dict[str, Any]:
    """Run the chosen code bases' tasks, fresh or as sessions, held-out first; print and store each, then
    the tables over every code-base run stored for this model and window."""
    started = time.perf_counter()
    commit = package_commit()
    try:
        chosen = tasks_all.pick(args.codebase, args.split or "all")
        for codebase in chosen:
            codebase.pin.fetch()
        configs = pick_configs(args.configs) if args.configs else list(CODEBASE_CONFIGS)
    except (ValueError, tasks_common.SourceMissing) as error:
        raise SystemExit(str(error)) from None
    if not chosen:
        raise SystemExit("No code base is in that choice.")
    mode = "session" if args.session else "fresh"
    asked: int | None = args.window or (None if args.server else DEFAULT_WINDOW)
    entries: dict[str, dict[str, Any]] = {}
    with serving(args) as (options, model), tempfile.TemporaryDirectory(prefix="twinny-bench-") as temp:
        built = []
        for codebase in chosen:
            workspace = codebase.workspace(Path(temp) / codebase.name)
            built.append((codebase, workspace, codebase.tasks(workspace)))
        names = {t.name for _, _, every in built for t in every}
        for codebase, workspace, every in built:
            try:
                tasks = pick_tasks(every, args.tasks, args.quick, names)
            except ValueError as error:
                raise SystemExit(str(error)) from None
            if not tasks:
                continue
            selection = selection_name(tasks, every, configs, args.quick, CODEBASE_CONFIGS)
            record = (
                args.record
                if args.record and len(chosen) == 1
                else record_path(model, asked or "server", f"{codebase.name}-{mode}-{selection}")
            )
            print(
                f"{codebase.name} ({codebase.split}, {mode}): {len(tasks)} of {len(every)} tasks × "
                f"{', '.join(configs)}",
                file=sys.stderr,
            )
            runner = session if args.session else bench
            at_once = {} if args.session else {"concurrency": args.concurrency}
            results = runner(
                tasks,
                configs,
                workspace=workspace,
                server_options=options,
                record=record,
                steps=args.steps,
                seed=args.seed,
                resume=args.resume,
                resume_stale=args.resume_stale,
                **at_once,
            )
            summary = summarise(results, tasks, configs)
            server = next(iter(results.servers.values()), {})
            window = observed_window(results) or asked or 0
            heading = (
                f"{codebase.name} {codebase.pin.version} ({codebase.split}, {mode}; {len(tasks)} tasks, "
                f"{selection}): model {server.get('model')} ({server.get('kind')}), window {window:,}, "
                f"greedy, seed {args.seed}"
            )
            print()
            print(tables(summary, heading))
            entry = {
                **summary,
                "codebase": codebase.name,
                "set": codebase.split,
                "mode": mode,
                "model": server.get("model"),
                "server_kind": server.get("kind"),
                "window": window,
                "selection": selection,
                "steps": args.steps,
                "seed": args.seed,
                "seconds": round(time.perf_counter() - started, 1),
                "record": str(record.relative_to(ROOT)) if record.is_relative_to(ROOT) else str(record),
                "source": {"sdist": codebase.pin.file, "sha256": codebase.pin.sha256},
                "package": commit,
                "package_fingerprint": results.settings.get("package"),
                "restarted_at": results.settings.get("restarted_at") or {},
                "python": sys.version.split()[0],
                "machine": platform.machine(),
            }
            key = codebase_key(
                codebase.name,
                codebase.split,
                mode,
                model=server.get("model"),
                window=window,
                selection=selection,
                commit=commit,
            )
            entries[key] = entry
            if not args.no_store:
                store(key, entry)
            if results.stopped:
                break
    if not args.no_store:
        print(f"\nWrote {RESULTS.name}; full records in {RECORDS.relative_to(ROOT)}/", file=sys.stderr)
        model_name = next(iter(entries.values()), {}).get("model")
        window_ = next(iter(entries.values()), {}).get("window")
        every_run = stored_codebase_runs(model_name, window_) if model_name and window_ else entries
    else:
        every_run = entries
    text = overview(every_run)
    if text:
        print()
        print(text)
    return {"runs": entries}


def stored_codebase_runs(model: str | None, window: int, path: Path = RESULTS) -> dict[str, dict[str, Any]]:
    """The code-base runs in the results file for ``model`` at ``window``: the latest stored of each code
    base, mode and task selection."""
    if not path.exists():
        return {}
    runs = json.loads(path.read_text(encoding="utf-8")).get("runs", {})
    latest: dict[tuple[str, str, str], tuple[str, dict[str, Any]]] = {}
    for key, entry in runs.items():
        if not isinstance(entry, dict) or "codebase" not in entry:
            continue  # the toolz runs from before the code bases
        if (model and entry.get("model") != model) or entry.get("window") != window:
            continue
        latest[(entry["codebase"], entry["mode"], entry["selection"])] = (key, entry)  # later keys win
    return dict(latest.values())


def overview(entries: dict[str, dict[str, Any]]) -> str:
    """Tables over code-base runs: held-out first, per code base, held-out against development, fresh
    against session, and per kind; with steps, fresh prompt tokens and seconds per passed task."""
    if not entries:
        return ""
    rows = sorted(entries.values(), key=lambda e: (e["set"] != "heldout", e["codebase"], e["mode"]))
    configs = sorted({c for e in rows for c in e["configs"]}, key=lambda c: list(CONFIGS).index(c))
    lines = [
        "By code base (held-out first): passed, and per passed task its steps, prompt tokens evaluated "
        "afresh and seconds",
        f"{'code base':<12} {'set':<8} {'mode':<8} {'config':<10} {'passed':>8} {'rate':>5} {'steps':>5} "
        f"{'fresh tok':>9} {'s':>6} {'refused':>7} {'no answer':>9}  done",
    ]
    for e in rows:
        for name, c in e["configs"].items():
            rate = "—" if c["pass_rate"] is None else f"{c['pass_rate']:.0%}"
            lines.append(
                f"{e['codebase']:<12} {e['set']:<8} {e['mode']:<8} {name:<10} "
                f"{_rate(c['passed'], c['judged']):>8} {rate:>5} {_num(c.get('steps_per_pass')):>5} "
                f"{_num(c.get('fresh_prompt_tokens_per_pass'), 0):>9} {_num(c.get('seconds_per_pass')):>6} "
                f"{c['refused']:>7} {c['no_answer']:>9}  "
                f"{e['runs_done']}/{e['runs_total']} ({e['selection']})"
            )
    lines += ["", "Held-out against development, fresh against session (passed/judged)"]
    lines.append(f"{'set':<8} {'config':<10} {'fresh':>9} {'session':>9}")
    for split in ("heldout", "dev"):
        for name in configs:
            cells = []
            for mode in ("fresh", "session"):
                mine = [
                    e["configs"][name]
                    for e in rows
                    if e["set"] == split and e["mode"] == mode and name in e["configs"]
                ]
                cells.append(_rate(sum(c["passed"] for c in mine), sum(c["judged"] for c in mine)))
            lines.append(f"{split:<8} {name:<10} {cells[0]:>9} {cells[1]:>9}")
    columns = [(e, name) for e in rows for name in e["configs"]]
    labels = [
        f"{e['codebase'][:7]}/{e['mode'][0]}" + (f"/{name}" if len(configs) > 1 else "")
        for e, name in columns
    ]
    lines += [
        "",
        "Passed per kind (f: fresh, s: session)",
        f"{'kind':<11} " + " ".join(f"{x:>11}" for x in labels),
    ]
    for kind in KINDS:
        cells = [_rate(*e["by_kind"][kind][name]) if kind in e["by_kind"] else "" for e, name in columns]
        if any(cells):
            lines.append(f"{kind:<11} " + " ".join(f"{c or '':>11}" for c in cells))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
