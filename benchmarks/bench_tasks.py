"""The task benchmark: does the agent *answer*? Real code, graded tasks, five configurations of one model.

    .venv/bin/python benchmarks/bench_tasks.py --quick                 # 9 tasks on the embedded SmolLM2
    .venv/bin/python benchmarks/bench_tasks.py                         # all 37 tasks
    .venv/bin/python benchmarks/bench_tasks.py --gguf qwen2.5-coder-1.5b-q4.gguf --window 4096
    .venv/bin/python benchmarks/bench_tasks.py --server http://127.0.0.1:11434 --model qwen2.5-coder:1.5b
    .venv/bin/python benchmarks/bench_tasks.py --tasks locate,edit --configs defaults,naive --resume

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
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The folder is put on the path just above, so that this runs as a plain script.
import tasks_toolz
from tasks_toolz import KINDS, Task

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
from twinny_magics.experiment.records import Run
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
        # request, the naive loop's too).
        options = {"base_url": args.server, "model": args.model, "kind": args.kind, "window": args.window}
        if args.api_key:
            options["api_key"] = args.api_key
        yield {k: v for k, v in options.items() if v is not None}, args.model or args.server
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


def selection_name(tasks: Sequence[Task], every: Sequence[Task], configs: Sequence[str], quick: bool) -> str:
    """``quick``, ``full``, or ``partial-<digest>`` for another choice of tasks or configurations."""
    names = [t.name for t in tasks]
    if list(configs) == DEFAULT_CONFIGS:
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
) -> Results:
    """Every task under every configuration: the experiment's results, saved to ``record`` as they grow."""
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
            **server_options,
        )
    except ValueError as error:
        if earlier is None:
            raise
        raise SystemExit(f"Cannot resume {record}: {error}") from None
    results.settings["package"] = fingerprint
    results.save(record)
    return results


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
    p.add_argument("--server", metavar="URL", help="a model server (default: the embedded SmolLM2)")
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


if __name__ == "__main__":
    main()
