"""Context fit on the real llama.cpp server: long tool trajectories with real token counts.

A workspace is generated from the estimator corpus (code, JSON, Markdown, CSS, logs, prose; grep output
and listings come from the tools themselves), and scripted trajectories of 20–30 tool calls are run
through the real loop (``twinny_magics.loop.Loop``, as ``Agent`` runs it on a first turn) and the real
``Workspace`` tools, against SmolLM2 on llama.cpp started at each window (one server at a time,
``--threads 1``, 127.0.0.1, stopped after).

What is measured for real and what is computed — said here once, and in docs/performance.md:

- **Our loop** runs on :class:`BenchServer` in ``evaluate`` mode: every request goes to the real server
  through the package's ``ReplayServer`` (the whole prompt is read, one token generated), so its
  ``usage.prompt_tokens``, ``cached_tokens`` and any HTTP 400 refusal are the server's own.
- **The comparators** (no ``/tokenize``, fixed 3.3, the previous request's ratio, the exact count, the
  naive loop that keeps everything, other trimming orders) are real loops over the same trajectory on
  :class:`BenchServer` in ``count`` mode: each request's size is the server's exact count of it
  (``/apply-template`` then ``/tokenize``: the same number ``usage.prompt_tokens`` reports, checked on
  every request of our loop), and a request at or over the window is sent to the real server, which
  refuses it for real (a refusal costs no evaluation). Requests under the window are not evaluated, to
  keep the run short; their prompt-cache use is modelled as the longest common token prefix with the
  previous prompt, a model checked against the real ``cached_tokens`` of our loop.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The folder is put on the path just above, so that this runs as a plain script.
from estimator_corpus import GREP_PATTERNS, QUESTIONS, THOUGHTS, Piece
from stats import quantile

from twinny_magics.budget import (
    DEFAULT_CHARS_PER_TOKEN,
    Fit,
    TokenEstimator,
    Trim,
    fit,
    message_chars,
    message_text,
    noted_fit,
    tools_chars,
    trim,
)
from twinny_magics.conversation import Message, Mode, ToolCall
from twinny_magics.engine.meter import Counter, FitPolicy, Meter
from twinny_magics.errors import PromptTooLong
from twinny_magics.events import Event, Reply, ResultsTrimmed
from twinny_magics.loop import Loop, LoopSettings
from twinny_magics.servers import ConnectedServer, ServerInfo
from twinny_magics.servers.base import ChatEvent, ChatRequest, Finish, TextChunk, Usage, build_tool_calls
from twinny_magics.servers.embedded import smollm2_path
from twinny_magics.servers.scripted import ReplayServer, Scripted
from twinny_magics.tools import Workspace

ROOT = Path(__file__).resolve().parent.parent
SEED = 20261206

# -- the workspace ------------------------------------------------------------------------------------


def _dist(source: str) -> str:
    """The distribution name of a ``name-1.2.dist-info/...`` source path."""
    return source.split("/", 1)[0].removesuffix(".dist-info")


def workspace_path(piece: Piece, index: int) -> str | None:
    """Where a corpus piece lives in the generated workspace (None: the tools make this kind)."""
    parts = PurePosixPath(piece.source).parts
    name = parts[-1] if parts else f"piece{index}"
    top = parts[0].strip("_") if parts else "misc"
    if piece.kind == "code":
        return f"src/{top}/{name}"
    if piece.kind == "json":
        if piece.source.endswith("METADATA"):
            return f"data/packages/{_dist(piece.source)}.json"
        return f"data/{top}/{name}"
    if piece.kind == "markdown":
        if piece.source.endswith("METADATA"):
            return f"docs/packages/{_dist(piece.source)}.md"
        return f"docs/{top}/{PurePosixPath(name).stem}.md"
    if piece.kind == "css":
        if piece.source.startswith("pygments:"):
            return f"static/pygments/{piece.source.split(':', 1)[1]}.css"
        return f"static/{name}"
    if piece.kind == "logs":
        return f"logs/{piece.source.removesuffix('_log')}-{index}.log"
    if piece.kind == "prose":
        if ".dist-info" in piece.source:
            return f"docs/licenses/{_dist(piece.source)}-{PurePosixPath(name).stem}.txt"
        return f"docs/notes/{PurePosixPath(name).stem}.txt"
    return None  # grep output and listings: the workspace's own grep and list_dir make those


#: Long files, each several pieces of one kind end to end: what a big module, a day's log or a data
#: export looks like. A read of one is cut at ``result_chars``, so at small windows they are what the
#: cut is for, and at 32,768 tokens they are what fills the window.
LONG_FILES = {
    "code": "src/app/service_{n}.py",
    "logs": "logs/server-{n}.log",
    "json": "data/export-{n}.json",
    "markdown": "docs/guide-{n}.md",
    "css": "static/theme-{n}.css",
    "prose": "docs/notes/design-{n}.txt",
}
PIECES_PER_LONG_FILE = 5


@dataclass(frozen=True)
class WorkspaceFile:
    """A file of the generated workspace: its kind, and whether it is one of the long ones."""

    kind: str
    long: bool = False


def build_workspace(root: Path, pieces: Sequence[Piece]) -> dict[str, WorkspaceFile]:
    """Write the pieces as files under ``root``, and the long files; return them by relative path."""
    files: dict[str, WorkspaceFile] = {}

    def write(rel: str, text: str, kind: str, long: bool = False) -> None:
        path = PurePosixPath(rel)
        number = 2
        while rel in files:
            rel = str(path.with_name(f"{path.stem}-{number}{path.suffix}"))
            number += 1
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        files[rel] = WorkspaceFile(kind, long)

    for index, piece in enumerate(pieces):
        rel = workspace_path(piece, index)
        if rel is not None:
            write(rel, piece.text, piece.kind)
    for kind, pattern in LONG_FILES.items():
        texts = [p.text for p in pieces if p.kind == kind]
        for n in range(len(texts) // PIECES_PER_LONG_FILE):
            chunk = texts[n * PIECES_PER_LONG_FILE : (n + 1) * PIECES_PER_LONG_FILE]
            write(pattern.format(n=n + 1), "\n\n".join(chunk), kind, long=True)
    return files


# -- trajectories ------------------------------------------------------------------------------------

FIND_PATTERNS = ("*.py", "*.json", "*.md", "*.css", "*.log", "*.txt", "**/*.js", "test", "config", "util")
EXTRA_GREP = ("error", "version", "color", "http", "License", "WARNING", "background", "self")


@dataclass(frozen=True)
class Trajectory:
    """A scripted session: the question, the calls in order, the mode they are made in, the answer."""

    name: str
    mode: Mode
    question: str
    calls: tuple[ToolCall, ...]
    thoughts: tuple[str, ...]
    answer: str = "The files above answer it; the details are in the results I read."

    def replies(self) -> list[Scripted | str]:
        """The model's side: one reply a call (native calls, or a ```tool block), then the answer."""
        out: list[Scripted | str] = []
        for call, thought in zip(self.calls, self.thoughts, strict=True):
            if self.mode == "native":
                out.append(Scripted(thought, (call,)))
            else:
                block = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
                out.append(Scripted(f"{thought}\n```tool\n{block}\n```".lstrip()))
        out.append(self.answer)
        return out


def make_trajectory(
    root: Path,
    files: dict[str, WorkspaceFile],
    seed: int,
    calls: int,
    mode: Mode,
    *,
    long_reads: bool = False,
) -> Trajectory:
    """``calls`` calls that wander the workspace, mixing kinds: reads, greps, listings and finds.

    Like an agent told to read small pieces: whole short files, line ranges of longer ones, a grep now
    and then (patterns that match something), a listing or a find every few steps. No call repeats.
    With ``long_reads``, half the reads are of the long files, whole (150 lines a call): the
    trajectory that fills a 32,768-token window.
    """
    rng = random.Random(seed)
    texts = {rel: (root / rel).read_text(encoding="utf-8") for rel in files}
    by_kind: dict[str, list[str]] = {}
    long_files: list[str] = []
    for rel, info in sorted(files.items()):
        (long_files if info.long else by_kind.setdefault(info.kind, [])).append(rel)
    for paths in (*by_kind.values(), long_files):
        rng.shuffle(paths)
    folders = sorted({str(PurePosixPath(rel).parent) for rel in files} | {"src", "docs", "data", "static"})
    # grep takes a regular expression: "Optional[" is written escaped, as the tool's error asks.
    patterns = [
        re.sub(r"([\[\](){}.*+?^$|\\])", r"\\\1", p)
        for p in (*GREP_PATTERNS, *EXTRA_GREP)
        if any(p in t for t in texts.values())
    ]
    made: list[ToolCall] = [ToolCall("list_dir", {"path": "."})]
    seen = {("list_dir", ".")}
    kinds = sorted(by_kind)
    while len(made) < calls:
        slot = len(made) % 6
        if slot == 3:
            pattern = rng.choice(patterns)
            where = rng.choice([None, *sorted({rel.split("/", 1)[0] for rel in files})])
            key: tuple[str, str] = ("grep", f"{pattern}@{where}")
            arguments: dict[str, Any] = {"pattern": pattern} | ({"path": where} if where else {})
            call = ToolCall("grep", arguments)
        elif slot == 5:
            if rng.random() < 0.5:
                folder = rng.choice(folders)
                key, call = ("list_dir", folder), ToolCall("list_dir", {"path": folder})
            else:
                pattern = rng.choice(FIND_PATTERNS)
                key, call = ("find_files", pattern), ToolCall("find_files", {"pattern": pattern})
        elif long_reads and long_files and rng.random() < 0.5:
            rel = long_files.pop()
            key, call = ("read_file", rel), ToolCall("read_file", {"path": rel})
        else:
            kind = kinds[rng.randrange(len(kinds))]
            if not by_kind[kind]:
                continue
            rel = by_kind[kind].pop()
            lines = texts[rel].count("\n") + 1
            arguments = {"path": rel}
            if lines > 60 and rng.random() < 0.5:
                start = rng.randint(1, lines - 30)
                arguments |= {"start_line": start, "end_line": start + rng.randint(30, 90)}
            key, call = ("read_file", rel), ToolCall("read_file", arguments)
        if key in seen:
            continue
        seen.add(key)
        made.append(call)
    thoughts = tuple(rng.choice(THOUGHTS) for _ in made)
    name = f"{'long' if long_reads else 'short'}-{seed % 100}-{mode}"
    return Trajectory(name, mode, rng.choice(QUESTIONS), tuple(made), thoughts)


# -- the real server ----------------------------------------------------------------------------------

#: SmolLM2 was trained at 8,192 tokens and llama.cpp caps a slot at the training context; a copy of the
#: GGUF whose metadata says more gives a real larger window (the weights are the same: counts, refusals
#: and the prompt cache are what is measured here, not answers).
CONTEXT_KEY = b"llama.context_length"
GGUF_UINT32 = 4


def gguf_with_context(source: Path, target: Path, n_ctx: int) -> Path:
    """A copy of ``source`` whose ``llama.context_length`` is ``n_ctx``."""
    shutil.copyfile(source, target)
    with target.open("r+b") as handle:
        head = handle.read(1 << 20)
        at = head.find(struct.pack("<Q", len(CONTEXT_KEY)) + CONTEXT_KEY)
        if at < 0:
            raise RuntimeError(f"{source} has no {CONTEXT_KEY.decode()} key")
        value_at = at + 8 + len(CONTEXT_KEY)
        (kind,) = struct.unpack("<I", head[value_at : value_at + 4])
        if kind != GGUF_UINT32:
            raise RuntimeError(f"{CONTEXT_KEY.decode()} is not a uint32 in {source}")
        handle.seek(value_at + 4)
        handle.write(struct.pack("<I", n_ctx))
    return target


@dataclass
class LlamaProcess:
    """SmolLM2 on llama.cpp in a subprocess (``python -m twinny_magics.servers.embedded``)."""

    base_url: str
    process: subprocess.Popen[bytes]
    n_ctx: int
    start_seconds: float

    @property
    def info(self) -> ServerInfo:
        """The server as the package names one."""
        return ServerInfo(self.base_url, "llamacpp", "smollm2")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL: a server mid-evaluation may not stop for a while."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


@contextmanager
def llama_server(n_ctx: int, work: Path) -> Iterator[LlamaProcess]:
    """One server with a window of ``n_ctx`` tokens, stopped on the way out."""
    model = smollm2_path()
    if n_ctx > 8192:
        model = gguf_with_context(model, work / f"smollm2-{n_ctx}.gguf", n_ctx)
    command = [
        sys.executable,
        "-m",
        "twinny_magics.servers.embedded",
        "--port",
        "0",
        "--ctx",
        str(n_ctx),
        "--gguf",
        str(model),
        "--alias",
        "smollm2",
        # One thread, as the tests run it: with two on a 2-core machine, anything else running stalls
        # llama.cpp's thread barrier.
        "--threads",
        "1",
    ]
    log = work / f"llama-{n_ctx}.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log_file, cwd=ROOT)
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    if not line.startswith("ready "):
        process.kill()
        process.wait()
        raise RuntimeError(f"llama.cpp did not start: {line!r}\n{log.read_text(errors='replace')[-2000:]}")
    _, url, seconds = line.split()
    server = LlamaProcess(url, process, n_ctx, float(seconds))
    try:
        yield server
    finally:
        server.stop()


class ExactCounts:
    """A request's tokens as the server will read them: its chat template applied, then tokenized.

    The same two routes the package's ``count_prompt_tokens`` uses, but keeping the token ids, which
    the prompt-cache model needs (the server reuses the longest common prefix of ids).
    """

    def __init__(self, base_url: str) -> None:
        self.client = httpx.Client(base_url=base_url, trust_env=False, timeout=300)
        self._memo: dict[str, list[int]] = {}

    def prompt_ids(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
    ) -> list[int]:
        """The token ids of the prompt of a request with these rendered messages and tools."""
        key = json.dumps([messages, tools], sort_keys=True, ensure_ascii=False)
        if key not in self._memo:
            body: dict[str, Any] = {"messages": list(messages)}
            if tools:
                body["tools"] = list(tools)
            answer = self.client.post("/apply-template", json=body)
            answer.raise_for_status()
            prompt = answer.json()["prompt"]
            tokens = self.client.post(
                "/tokenize", json={"content": prompt, "add_special": True, "parse_special": True}
            )
            tokens.raise_for_status()
            self._memo[key] = list(tokens.json()["tokens"])
        return self._memo[key]

    def close(self) -> None:
        """Close the HTTP client."""
        self.client.close()


def common_prefix(first: Sequence[int], second: Sequence[int]) -> int:
    """How many leading ids two prompts share: what llama.cpp's prompt cache can reuse."""
    shared = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        shared += 1
    return shared


def cache_reused(cache: Sequence[int], prompt: Sequence[int], chunk: int) -> int:
    """The tokens of ``prompt`` a llama.cpp server with ``cache`` cached does not read again.

    ``chunk`` 0: the common prefix. Otherwise llama.cpp's ``n_cache_reuse``: past the common prefix, the
    server looks further on in its cache for the prompt's next tokens; a run of at least ``chunk``
    matching tokens is shifted into place and reused, and the search goes on after it (the cache only
    forward, the prompt only past a reused run: text the cache never held stops it).
    """
    reused = common_prefix(cache, prompt)
    if chunk <= 0:
        return reused
    at_cache = at_prompt = reused
    while at_cache < len(cache) and at_prompt < len(prompt):
        run = 0
        while (
            at_cache + run < len(cache)
            and at_prompt + run < len(prompt)
            and cache[at_cache + run] == prompt[at_prompt + run]
        ):
            run += 1
        if run >= chunk:
            reused += run
            at_cache += run
            at_prompt += run
        else:
            at_cache += 1
    return reused


@dataclass
class Sent:
    """One HTTP request as the server saw it."""

    tokens: int  # the exact count (/apply-template + /tokenize)
    cached_model: int  # what the server reuses of the previous prompt (see ``cache_reused``)
    #: Tokens of the messages the previous request also had (the rest is new): what a server that
    #: kept its cache whole would not evaluate again.
    old_tokens: int = 0
    refused: bool = False
    prompt_tokens: int | None = None  # usage.prompt_tokens (real in evaluate mode)
    cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens (real in evaluate mode)
    seconds: float = 0.0  # wall time of the request (the model's time, in evaluate mode)
    #: The bench's own exact count of the request (``/apply-template`` and ``/tokenize``), made inside
    #: ``stream`` and so inside the loop's time to first token: reported beside it.
    counting_seconds: float = 0.0


class BenchServer:
    """The loop's model server for a benchmark run: scripted replies, real counts, real refusals.

    ``evaluate``: every request goes to the real server through ``ReplayServer`` (real usage, cache,
    refusals). Otherwise each request is counted exactly and only one at or over the window is sent
    (and refused for real); ``window=None`` never refuses (an unbounded server, the cost reference).
    ``tokenizes=False`` is a server without ``/tokenize`` (Ollama, LM Studio).
    """

    def __init__(
        self,
        real: ConnectedServer,
        exact: ExactCounts,
        replies: list[Scripted | str],
        *,
        evaluate: bool,
        window: int | None,
        tokenizes: bool = True,
        reuse: int = 0,
    ) -> None:
        self.real = real
        self.reuse = reuse
        self.exact = exact
        self.replies = list(replies)
        self.evaluate = evaluate
        self.window = window
        self.tokenizes = tokenizes
        self.sent: list[Sent] = []
        self.mismatches = 0  # a refusal the exact count predicted that the server did not make
        self._replay = ReplayServer(real, self.replies) if evaluate else None
        self._previous: list[int] = []
        self._previous_messages = 0

    @property
    def kind(self) -> str:
        """The real server's kind."""
        return str(self.real.kind)

    @property
    def model(self) -> str | None:
        """The real server's model."""
        return self.real.model

    @property
    def reuses_cache(self) -> bool:
        """Whether the server reuses its cache past a trim (``reuse``; evaluating, the real server's say)."""
        return self.real.reuses_cache if self.evaluate else self.reuse > 0

    async def context_window(self) -> int:
        """The real server's window (its /props)."""
        return await self.real.context_window()

    async def tokenize(self, text: str) -> int | None:
        """The real server's count of ``text``, or None for a server that cannot tokenize."""
        return await self.real.tokenize(text) if self.tokenizes else None

    async def count_prompt_tokens(self, request: ChatRequest) -> int | None:
        """The real server's count of a whole request, or None for a server that cannot tokenize."""
        return await self.real.count_prompt_tokens(request) if self.tokenizes else None

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        """Answer ``request`` with the next scripted reply, counted (and refused) by the real server."""
        counting = time.perf_counter()
        ids = self.exact.prompt_ids(request.messages, request.tools)
        sent = Sent(len(ids), cache_reused(self._previous, ids, self.reuse), self._old_tokens(request, ids))
        sent.counting_seconds = time.perf_counter() - counting
        self.sent.append(sent)
        started = time.perf_counter()
        try:
            if self._replay is not None:
                async for event in self._replay.stream(request):
                    if isinstance(event, Usage):
                        sent.prompt_tokens, sent.cached_tokens = event.prompt_tokens, event.cached_tokens
                    yield event
            else:
                if self.window is not None and len(ids) >= self.window:
                    await self._refusal(request)
                reply = self.replies.pop(0)
                for event in _scripted_events(reply, Usage(len(ids), 1, sent.cached_model)):
                    yield event
                sent.prompt_tokens, sent.cached_tokens = len(ids), sent.cached_model
        except PromptTooLong:
            sent.refused = True
            raise
        finally:
            sent.seconds = time.perf_counter() - started
        self._previous = ids
        self._previous_messages = len(request.messages)

    def _old_tokens(self, request: ChatRequest, ids: Sequence[int]) -> int:
        """How far into ``ids`` the messages of the previous request reach (trimmed or not).

        They are the messages before the newest assistant message (the reply to the previous request;
        what follows it is new): not the first as many as the previous request had, since a trim that
        drops whole steps leaves fewer, and those would take in the new ones.
        """
        replies = [i for i, m in enumerate(request.messages) if m.get("role") == "assistant"]
        end = min(replies[-1], self._previous_messages) if replies else self._previous_messages
        old = request.messages[:end]
        if not old:
            return 0
        try:
            old_ids = self.exact.prompt_ids(old, request.tools)
        except httpx.HTTPStatusError:
            return 0
        return common_prefix(ids, old_ids)

    async def _refusal(self, request: ChatRequest) -> None:
        """Send a request the exact count says is too long: the real server refuses it (raises)."""
        async for _ in self.real.stream(replace(request, max_tokens=1)):
            pass
        # Accepted after all (and evaluated): the count and the server disagree; say so in the results.
        self.mismatches += 1


def _scripted_events(reply: Scripted | str, usage: Usage) -> Iterator[ChatEvent]:
    """The events a scripted reply streams as (what ``ReplayServer`` yields)."""
    scripted = Scripted(reply) if isinstance(reply, str) else reply
    if scripted.text:
        yield TextChunk(scripted.text)
    if scripted.calls:
        yield build_tool_calls([(c.id, c.name, c.arguments_json()) for c in scripted.calls])
    yield usage
    yield Finish("tool_calls" if scripted.calls else scripted.finish)


# -- the estimates compared ----------------------------------------------------------------------------
# Each is the meter's ``counter`` (what every estimate and every server count goes to), given to it in its
# constructor: the same loop, the same trimming, only the estimate differs. Each says it is ``anchored`` so
# that the meter does not hand it the server's count of the first request: these methods have no such count.


def _request_chars(rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> int:
    return sum(message_chars(m) for m in rendered) + tools_chars(tools)


class FixedRatio:
    """3.3 characters a token over the whole request; never corrected."""

    def __init__(self, ratio: float = DEFAULT_CHARS_PER_TOKEN) -> None:
        self.ratio = ratio
        self.exact: dict[str, int] = {}
        self.anchored = True

    def count(self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> int:
        return math.ceil(_request_chars(rendered, tools) / self.ratio)

    def observe(self, rendered: Any, tools: Any, prompt_tokens: int) -> None:
        pass

    def unknown_texts(self, rendered: Any, tools: Any = None) -> list[str]:
        return []


class PreviousRatio:
    """The article's method: the whole request at the ratio the previous request's count gave."""

    def __init__(self, estimator: TokenEstimator) -> None:
        self.estimator = estimator
        self.exact: dict[str, int] = {}
        self.anchored = True

    def count(self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> int:
        return self.estimator.tokens(_request_chars(rendered, tools))

    def observe(
        self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, prompt_tokens: int
    ) -> None:
        self.estimator.observe(_request_chars(rendered, tools), prompt_tokens)

    def unknown_texts(self, rendered: Any, tools: Any = None) -> list[str]:
        return []


class ExactPrompt:
    """The floor: every request counted exactly by the server (template and all) before it is sent."""

    def __init__(self, exact: ExactCounts) -> None:
        self.counts = exact
        self.exact: dict[str, int] = {}
        self.anchored = True

    def count(self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> int:
        if not rendered:
            return 0
        try:
            return len(self.counts.prompt_ids(rendered, tools))
        except httpx.HTTPStatusError:
            # A part of a conversation the template refuses alone (calls without their results): only
            # the window picture and per-message trimming deltas ask for such parts; count it by message.
            return sum(self._one(m) for m in rendered)

    def _one(self, message: dict[str, Any]) -> int:
        try:
            return len(self.counts.prompt_ids([message], None))
        except httpx.HTTPStatusError:
            return len(self.counts.prompt_ids([{"role": "user", "content": message_text(message)}], None))

    def observe(self, rendered: Any, tools: Any, prompt_tokens: int) -> None:
        pass

    def unknown_texts(self, rendered: Any, tools: Any = None) -> list[str]:
        return []


# -- trimming orders compared (for the prompt cache) ---------------------------------------------------

FitFunction = Callable[..., Fit]


def keep_everything(
    messages: Sequence[Message],
    limit: int,
    target: int,
    count: Callable[[Sequence[Message]], int],
    newest_step: int | None = None,
    *,
    last: bool = False,
    earlier: Fit | None = None,
) -> Fit:
    """The naive loop: never trims (the server refuses what does not fit)."""
    estimate = count(messages)
    return Fit(list(messages), (), estimate, estimate, limit, target, estimate > limit)


def to_share(share: float) -> FitFunction:
    """Our fit, trimming down to ``share`` of the limit whatever the loop asks (bigger or smaller batches)."""

    def fitted(
        messages: Sequence[Message],
        limit: int,
        target: int,
        count: Callable[[Sequence[Message]], int],
        newest_step: int | None = None,
        *,
        last: bool = False,
        earlier: Fit | None = None,
    ) -> Fit:
        goal = int(share * limit) if limit > 0 else target
        return fit(messages, limit, goal, count, newest_step, last=last, earlier=earlier)

    return fitted


def newest_first(
    messages: Sequence[Message],
    limit: int,
    target: int,
    count: Callable[[Sequence[Message]], int],
    newest_step: int | None = None,
    *,
    last: bool = False,
    earlier: Fit | None = None,
) -> Fit:
    """Our three passes, but newest first within each: the prompt's prefix (and its cache) survives."""
    current = list(messages)
    before = count(current)
    if before <= limit and earlier is None:
        return Fit(current, (), before, before, limit, target, False)
    newest = (
        newest_step
        if newest_step is not None
        else max((m.result.step for m in current if m.result), default=0)
    )
    passes: tuple[Callable[[int], bool], ...] = (
        lambda s: s < newest - 1,
        lambda s: s < newest,
        lambda s: True,
    )
    trims: list[Trim] = []
    estimate = before
    for number, eligible in enumerate(passes if before > limit else (), start=1):
        for index in reversed(range(len(current))):
            if estimate <= target:
                break
            result = current[index].result
            if result is None or result.trimmed or not eligible(result.step):
                continue
            done = trim(result)
            if done is None:
                continue
            current[index] = current[index].with_result(done)
            trims.append(
                Trim(index, result.step, result.call.name, len(result.output), len(done.output), number)
            )
            estimate = count(current)
    return noted_fit(current, trims, (), before, estimate, limit, target, count, last=last, earlier=earlier)


# -- one run -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One loop in the comparison: which estimate, which trimming, which server."""

    name: str
    evaluate: bool = False  # on the real server (else counted exactly, see BenchServer)
    tokenizes: bool = True
    counter: str = "ours"  # ours | fixed | previous | exact
    policy: str = "ours"  # ours | keep | newest | share:0.5 …
    bounded: bool = True  # False: a server that never refuses (the cost reference)
    #: The modelled server's ``n_cache_reuse`` (0: it reuses the common prefix only; see ``cache_reused``).
    reuse: int = 0


OURS = Variant("ours (last count + /tokenize)", evaluate=True)
NO_TOKENIZE = Variant("ours, server without /tokenize", tokenizes=False)
FIXED = Variant("fixed 3.3, no learning", counter="fixed")
PREVIOUS = Variant("previous request's ratio (article)", counter="previous")
EXACT = Variant("exact prompt count (floor)", counter="exact")
NAIVE = Variant("naive: keep everything", policy="keep")
UNBOUNDED = Variant("keep everything, unbounded window", policy="keep", bounded=False)
NEWEST = Variant("trim newest first", policy="newest")
#: Our trimming before the deep target (every trim down to 65% of the limit, never deeper).
SHALLOW = Variant("trim to 65% of limit (before)", policy="share:0.65")
BIG_BATCH = Variant("trim to 40% of limit", policy="share:0.4")
SMALL_BATCH = Variant("trim to 85% of limit", policy="share:0.85")
ESTIMATES = (OURS, NO_TOKENIZE, FIXED, PREVIOUS, EXACT, NAIVE)
POLICIES = (UNBOUNDED, SHALLOW, NEWEST, BIG_BATCH, SMALL_BATCH)


def _policy(name: str) -> FitPolicy:
    if name == "ours":
        return fit
    if name == "keep":
        return keep_everything
    if name == "newest":
        return newest_first
    return to_share(float(name.split(":", 1)[1]))


def variant_meter(server: Any, counter: str, policy: str, exact: ExactCounts | None = None) -> Meter:
    """The meter of a variant: its estimate (``ours`` | ``fixed`` | ``previous`` | ``exact``) and its
    trimming policy (see :func:`_policy`), given to the meter's constructor; nothing is patched."""
    estimator = TokenEstimator()
    chosen: Counter | None = None
    if counter == "fixed":
        chosen = FixedRatio()
    elif counter == "previous":
        chosen = PreviousRatio(estimator)
    elif counter == "exact":
        if exact is None:
            raise ValueError("the exact count needs the server's exact counts")
        chosen = ExactPrompt(exact)
    return Meter(server, estimator=estimator, counter=chosen, fit=_policy(policy))


@dataclass
class Run:
    """What one variant did on one trajectory at one window."""

    variant: str
    window: int
    trajectory: str
    mode: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    refused: int = 0  # requests the server refused as too long (HTTP 400, each one real)
    refusals: int = 0  # HTTP 400 answers: a refused request is retried once, trimmed
    first_refused_step: int | None = None
    mismatches: int = 0
    tool_errors: int = 0
    loop_seconds: float = 0.0


def run_variant(
    variant: Variant,
    trajectory: Trajectory,
    *,
    info: ServerInfo,
    exact: ExactCounts,
    workspace: Path,
    window: int,
) -> Run:
    """Run ``trajectory`` through the real loop with ``variant``'s estimate, trimming and server."""
    real = ConnectedServer(info)
    server = BenchServer(
        real,
        exact,
        trajectory.replies(),
        evaluate=variant.evaluate,
        window=window if variant.bounded else None,
        tokenizes=variant.tokenizes,
        reuse=variant.reuse,
    )
    tools = Workspace(workspace, edits="review", commands="off")
    settings = LoopSettings(steps=len(trajectory.calls) + 1)
    meter = variant_meter(server, variant.counter, variant.policy, exact)
    loop = Loop(server, tools, mode=trajectory.mode, settings=settings, meter=meter)
    trims: dict[int, list[Trim]] = {}

    def on_event(event: Event) -> None:
        if isinstance(event, ResultsTrimmed):
            trims.setdefault(event.step, []).extend(event.trims)

    started = time.perf_counter()
    reply: Reply = asyncio.run(loop.reply(trajectory.question, emit=on_event))
    run = Run(variant.name, window, trajectory.name, trajectory.mode, error=reply.error)
    run.loop_seconds = time.perf_counter() - started
    run.mismatches = server.mismatches
    run.tool_errors = sum(r.is_error for step in reply.steps for r in step.results)
    sends = iter(server.sent)
    for record in reply.requests:
        made = trims.get(record.step, [])
        attempts = [next(sends)] + ([next(sends)] if record.retried == "too long" else [])
        final = attempts[-1]
        if any(a.refused for a in attempts) and run.first_refused_step is None:
            run.first_refused_step = record.step
        run.refused += any(a.refused for a in attempts)
        run.refusals += sum(a.refused for a in attempts)
        run.requests.append(
            {
                "step": record.step,
                "estimated": record.estimated_tokens,
                "prompt_tokens": record.prompt_tokens,
                "exact": final.tokens,
                "cached_tokens": record.cached_tokens,
                "cached_model": final.cached_model,
                "limit": record.limit,
                "old_tokens": final.old_tokens,
                "trimmed": record.trimmed,
                "trim_passes": [t.pass_number for t in made],
                # The newest result trimmed in the very request that brings it: the model never saw it.
                "unseen_trims": sum(t.step >= record.step - 1 for t in made),
                "retried": record.retried,
                "refused": final.refused,
                "seconds": round(sum(a.seconds for a in attempts), 4),
                # From sending the request to its first streamed chunk, as the loop measured it (the
                # request bars' "first token"); None when nothing streamed.
                "first_token_seconds": record.first_token_seconds,
                # The tokens the server read afresh (its own cached_tokens in evaluate mode).
                "fresh": None
                if record.prompt_tokens is None
                else record.prompt_tokens - (record.cached_tokens or 0),
                "counting_seconds": round(sum(a.counting_seconds for a in attempts), 4),
            }
        )
    return run


# -- summaries -----------------------------------------------------------------------------------------


def errors_of(runs: Sequence[Run]) -> list[float]:
    """Relative errors (estimate − server count) / server count, from each run's second request on."""
    out = []
    for run in runs:
        for row in run.requests[1:]:
            if row["prompt_tokens"]:
                out.append((row["estimated"] - row["prompt_tokens"]) / row["prompt_tokens"])
    return out


def summarise_errors(errors: Sequence[float]) -> dict[str, float | int]:
    """The numbers the goal is stated in: median and p95 of |error|, the worst underestimate."""
    if not errors:
        return {"median": float("nan"), "p95": float("nan"), "worst_under": float("nan"), "n": 0}
    absolute = [abs(e) for e in errors]
    return {
        "median": round(statistics.median(absolute), 4),
        "p95": round(quantile(absolute, 0.95), 4),
        "worst_under": round(min(0.0, *errors), 4),
        "over_10_under": sum(e < -0.10 for e in errors),
        "n": len(errors),
    }


#: The step ranges the time-to-first-token table is printed by (each a first and a last step; None: on).
STEP_RANGES: tuple[tuple[int, int | None], ...] = ((1, 1), (2, 2), (3, 3), (4, 7), (8, 15), (16, None))


def _median(values: Sequence[float], digits: int = 1) -> float | None:
    return round(statistics.median(values), digits) if values else None


def _first_token_group(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How many requests, their median fresh tokens and median time to first token (ms)."""
    return {
        "n": len(rows),
        "fresh_median": _median([r["fresh"] for r in rows]),
        "ms_median": _median([1000 * r["first_token_seconds"] for r in rows]),
    }


def summarise_first_tokens(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Time to the first streamed token against the tokens read afresh, over requests the server read.

    Only requests with a first token and a count are timed (``untimed``: the others). ``ms_per_fresh``
    and ``ms_fixed`` are the least-squares line ms = fixed + per_fresh × fresh (None without two
    different fresh counts). ``trimmed``: requests whose results were trimmed as they were made (the
    prompt changed above the cache, so the server reads the rest again); ``untrimmed``: the others from
    step 2 on (step 1, the system prompt and tools, is its own group). ``counting_ms_median``: the
    bench's own exact count, inside the measured time.
    """
    timed = [r for r in rows if r.get("first_token_seconds") is not None and r.get("fresh") is not None]
    ms = [1000 * r["first_token_seconds"] for r in timed]
    fresh = [float(r["fresh"]) for r in timed]
    try:
        slope, intercept = statistics.linear_regression(fresh, ms)
        per_fresh: float | None = round(slope, 3)
        fixed: float | None = round(intercept, 1)
    except statistics.StatisticsError:  # fewer than two requests, or every one as fresh as the others
        per_fresh = fixed = None
    ranges = {}
    for first, last in STEP_RANGES:
        label = str(first) if first == last else f"{first}+" if last is None else f"{first}-{last}"
        ranges[label] = _first_token_group(
            [r for r in timed if r["step"] >= first and (last is None or r["step"] <= last)]
        )
    return {
        "n": len(timed),
        "untimed": len(rows) - len(timed),
        "ms_median": _median(ms),
        "ms_p95": round(quantile(ms, 0.95), 1) if ms else None,
        "fresh_median": _median(fresh),
        "ms_per_fresh": per_fresh,
        "ms_fixed": fixed,
        "counting_ms_median": _median([1000 * r.get("counting_seconds", 0.0) for r in timed]),
        "first_step": _first_token_group([r for r in timed if r["step"] == 1]),
        "trimmed": _first_token_group([r for r in timed if r["trimmed"]]),
        "untrimmed": _first_token_group([r for r in timed if not r["trimmed"] and r["step"] > 1]),
        "by_step_range": ranges,
        "by_step": {
            str(step): _first_token_group([r for r in timed if r["step"] == step])
            for step in sorted({r["step"] for r in timed})
        },
    }


def summarise_runs(runs: Sequence[Run], window: int, *, evaluated: bool) -> dict[str, Any]:
    """One variant at one window: refusals, estimate error, fill, trims, prompt-cache use, model time.

    ``evaluated``: the runs went to the real server, so the cache numbers are the server's own
    ``cached_tokens``; otherwise they are the common-prefix model's. Evaluated runs also have their time
    to first token (``first_token``, see :func:`summarise_first_tokens`).
    """
    rows = [r for run in runs for r in run.requests if r["prompt_tokens"] and not r["refused"]]
    steps = sum(len(run.requests) for run in runs)
    cached = [(r["cached_tokens"] or 0) if evaluated else r["cached_model"] for r in rows]
    fresh = [r["prompt_tokens"] - c for r, c in zip(rows, cached, strict=True)]
    # Tokens the server had read before and read again: the prefix changed under them (a trim).
    again = [max(0, r["old_tokens"] - c) for r, c in zip(rows, cached, strict=True)]
    passes = [p for r in rows for p in r["trim_passes"]]
    out: dict[str, Any] = {
        "runs": len(runs),
        "requests": steps,
        "refused": sum(run.refused for run in runs),
        "refusals": sum(run.refusals for run in runs),
        "errors": [run.error for run in runs if run.error],
        "tool_errors": sum(run.tool_errors for run in runs),
        "first_refused_step": [run.first_refused_step for run in runs],
        "estimate_error": summarise_errors(errors_of(runs)),
        "fill": round(statistics.fmean(r["prompt_tokens"] for r in rows) / window, 4) if rows else None,
        "fill_max": round(max(r["prompt_tokens"] for r in rows) / window, 4) if rows else None,
        "trims": sum(r["trimmed"] for r in rows),
        "trims_per_step": round(sum(r["trimmed"] for r in rows) / max(1, steps), 3),
        "trim_events": sum(1 for r in rows if r["trimmed"]),
        "trims_by_pass": {str(n): passes.count(n) for n in (1, 2, 3)},
        "unseen_trims": sum(r["unseen_trims"] for r in rows),
        "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
        "fresh_tokens": sum(fresh),
        "fresh_per_step": round(sum(fresh) / max(1, len(rows)), 1),
        "reevaluated_tokens": sum(again),
        "cache_source": "server" if evaluated else "model",
        "count_mismatches": sum(1 for r in rows if r["exact"] != r["prompt_tokens"]),
        "refusal_mismatches": sum(run.mismatches for run in runs),
    }
    if evaluated and rows:
        seconds = sum(r["seconds"] for r in rows)
        out["cache_model_mismatches"] = sum(1 for r in rows if r["cached_model"] != (r["cached_tokens"] or 0))
        out["model_seconds_per_request"] = round(seconds / len(rows), 3)
        out["model_tokens_per_second"] = round(sum(fresh) / max(1e-9, seconds), 1)
    if evaluated:
        out["first_token"] = summarise_first_tokens(rows)
    return out


@dataclass
class WindowResult:
    """Every variant's runs at one window."""

    window: int
    start_seconds: float
    runs: dict[str, list[Run]] = field(default_factory=dict)
    seconds: float = 0.0


def bench_window(
    window: int,
    trajectories: Sequence[Trajectory],
    *,
    workspace: Path,
    work: Path,
    variants: Sequence[Variant],
    progress: Callable[[str], None] = print,
) -> WindowResult:
    """Start a server at ``window``, run every variant on every trajectory, stop it."""
    started = time.perf_counter()
    with llama_server(window, work) as server:
        result = WindowResult(window, server.start_seconds)
        exact = ExactCounts(server.base_url)
        try:
            for variant in variants:
                for trajectory in trajectories:
                    run = run_variant(
                        variant, trajectory, info=server.info, exact=exact, workspace=workspace, window=window
                    )
                    result.runs.setdefault(variant.name, []).append(run)
                    progress(
                        f"  {window:>6} {variant.name:<36} {trajectory.name:<10} "
                        f"{len(run.requests):>3} requests, {run.refused} refused, {run.loop_seconds:6.1f} s"
                    )
        finally:
            exact.close()
    result.seconds = time.perf_counter() - started
    return result
