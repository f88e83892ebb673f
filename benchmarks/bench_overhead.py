"""The loop's own CPU time per step against the model's time, and streaming detection per KB.

The loop runs the same trajectories as ``bench_context`` on the package's ``ScriptedServer`` (replies
given at once, no model, no HTTP) over the real ``Workspace``. What the tools and the scripted server
spend is timed apart and taken off, so what is left is the loop's own work: asking the window,
planning, estimating and fitting, rendering, parsing the reply, emitting events. CPU time
(``time.process_time``), best of a few runs, since other processes share these cores.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_context import Trajectory
from bench_streaming import reply_of, stream

from twinny_magics.conversation import ToolCall
from twinny_magics.events import Event
from twinny_magics.loop import Loop, LoopSettings, ToolOutcome
from twinny_magics.protocol import parse_reply
from twinny_magics.servers.base import ChatEvent, ChatRequest
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.tools import Workspace


class TimedTools:
    """The workspace tools, with the CPU time they take counted apart."""

    def __init__(self, inner: Workspace) -> None:
        self.inner = inner
        self.cpu = 0.0

    def definitions(self) -> list[dict[str, Any]]:
        return self.inner.definitions()

    async def run(self, call: ToolCall) -> ToolOutcome:
        started = time.process_time()
        try:
            return await self.inner.run(call)
        finally:
            self.cpu += time.process_time() - started


class TimedScripted:
    """``ScriptedServer``, with the CPU time it takes to answer counted apart.

    It tells the loop a window of ``window`` tokens but never refuses a prompt: its own count is a
    rough 3 characters a token, and a refusal here would be about that count, not about the loop.
    """

    def __init__(self, inner: ScriptedServer, window: int) -> None:
        self.inner = inner
        self.window = window
        self.cpu = 0.0

    @property
    def kind(self) -> str:
        return self.inner.kind

    @property
    def model(self) -> str | None:
        return self.inner.model

    async def context_window(self) -> int:
        return self.window

    async def tokenize(self, text: str) -> int | None:
        started = time.process_time()
        try:
            return await self.inner.tokenize(text)
        finally:
            self.cpu += time.process_time() - started

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        events = self.inner.stream(request)
        while True:
            started = time.process_time()
            try:
                event = await events.__anext__()
            except StopAsyncIteration:
                self.cpu += time.process_time() - started
                return
            self.cpu += time.process_time() - started
            yield event


@dataclass(frozen=True)
class LoopCost:
    """One run of the loop without a model: CPU seconds, and what the tools and the server took."""

    steps: int
    trims: int
    total: float
    tools: float
    server: float

    @property
    def own_per_step(self) -> float:
        """The loop's own CPU seconds per step."""
        return (self.total - self.tools - self.server) / max(1, self.steps)


def loop_cost(trajectory: Trajectory, workspace: Path, window: int) -> LoopCost:
    """Run ``trajectory`` once on the scripted server at ``window`` and time it."""
    scripted = ScriptedServer(trajectory.replies(), window=1 << 30, chars_per_token=3.0)  # type: ignore[arg-type]
    server = TimedScripted(scripted, window)
    tools = TimedTools(Workspace(workspace, commands="off"))
    loop = Loop(server, tools, mode=trajectory.mode, settings=LoopSettings(steps=len(trajectory.calls) + 1))
    events: list[Event] = []
    started = time.process_time()
    reply = asyncio.run(loop.reply(trajectory.question, emit=events.append))
    total = time.process_time() - started
    if reply.error:
        raise RuntimeError(f"the scripted run failed: {reply.error}")
    trims = sum(r.trimmed for r in reply.requests)
    return LoopCost(len(reply.requests), trims, total, tools.cpu, server.cpu)


def bench_loop_overhead(
    trajectories: dict[int, list[Trajectory]], workspace: Path, repeat: int = 3
) -> dict[str, dict[str, Any]]:
    """Per window: the loop's own CPU per step (best of ``repeat`` over each trajectory)."""
    out: dict[str, dict[str, Any]] = {}
    for window, runs in trajectories.items():
        costs = [
            min((loop_cost(t, workspace, window) for _ in range(repeat)), key=lambda c: c.own_per_step)
            for t in runs
        ]
        steps = sum(c.steps for c in costs)
        out[str(window)] = {
            "trajectories": [t.name for t in runs],
            "steps": steps,
            "trims": sum(c.trims for c in costs),
            "loop_cpu_ms_per_step": round(1000 * sum(c.own_per_step * c.steps for c in costs) / steps, 3),
            "tools_cpu_ms_per_step": round(1000 * sum(c.tools for c in costs) / steps, 3),
        }
    return out


def bench_streaming_cost(size: int = 64 * 1024, repeat: int = 5) -> dict[str, float]:
    """What the streaming call-marker detector and one parse of the finished reply cost per KB."""
    text = reply_of(size)

    def best(work: Any) -> float:
        times = []
        for _ in range(repeat):
            started = time.process_time()
            work()
            times.append(time.process_time() - started)
        return min(times)

    streamed = best(lambda: stream(text))
    parsed = best(lambda: parse_reply(text))
    kb = len(text) / 1024
    return {
        "reply_kb": round(kb, 1),
        "stream_ms_per_kb": round(1000 * streamed / kb, 4),
        "parse_ms_per_kb": round(1000 * parsed / kb, 4),
    }
