"""The reply engine's parts: what one request renders, the strategies a meter is given, the import order.

Real parts throughout: the scripted model, the real meter and renderer (a subclass counts what it
renders, as a benchmark would give its own counter), real tool outcomes.
"""

from __future__ import annotations

import ast
import asyncio
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_loop import Tools, fenced

import twinny_magics.engine as engine_package
from twinny_magics.budget import Fit, fit
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
from twinny_magics.engine.meter import Meter
from twinny_magics.engine.rendering import Renderer
from twinny_magics.estimate import TokenEstimator
from twinny_magics.events import Notice
from twinny_magics.loop import Loop
from twinny_magics.servers.scripted import Scripted, ScriptedServer

# -- renders per request ---------------------------------------------------------------------------------


class CountingMeter(Meter):
    """The real meter, counting what it renders afresh: per request, the lengths of the lists rendered,
    and whether each held the whole conversation (the system prompt and more)."""

    def __init__(self, server: ScriptedServer) -> None:
        super().__init__(server)
        self.scripted = server
        self.renders: list[tuple[int, int, bool]] = []

    def render(self, messages: Sequence[Message], mode: Mode) -> list[dict[str, Any]]:
        whole = len(messages) > 1 and messages[0].role == "system"
        self.renders.append((len(self.scripted.requests), len(messages), whole))
        return super().render(messages, mode)


def grep_replies(mode: str, steps: int) -> list[Scripted | str]:
    if mode == "text":
        return [*(fenced("grep", pattern=f"p{n}") for n in range(steps)), "Done."]
    return [*(Scripted("Looking.", (ToolCall("grep", {"pattern": f"p{n}"}),)) for n in range(steps)), "Done."]


@pytest.mark.parametrize("mode", ["native", "text"])
@pytest.mark.parametrize(("window", "size"), [(8192, 200), (2048, 1900)])
def test_each_request_renders_only_the_messages_it_has_not_sent_before(
    mode: str, window: int, size: int
) -> None:
    """Before the engine, one request rendered its whole conversation 6 times (14-15 when it trimmed):
    to count its new texts, to estimate it, to fit it, for its record, to send it, and to weigh the next
    result against it; 8 to 21 times the messages it sent on the benchmark's quick trajectories. Now a
    message is rendered as it enters the conversation and again only when it changes (a trim, the note
    saying so): at most twice the messages a request sends, far less where nothing is trimmed."""
    server = ScriptedServer(grep_replies(mode, 8), window=window)
    meter = CountingMeter(server)
    reply = asyncio.run(Loop(server, Tools(size=size), mode=mode, meter=meter).reply("Where is main?"))  # type: ignore[arg-type]
    assert reply.stopped == "answer"
    assert len(server.requests) == 9
    if window == 2048:
        assert sum(r.trimmed for r in reply.requests) >= 3  # the trimming path is taken
    # Messages rendered afresh while each request was made (from the previous one's reply on).
    per = [sum(n for at, n, _ in meter.renders if at == sent) for sent in range(len(server.requests))]
    sizes = [len(request.messages) for request in server.requests]
    assert not any(whole for _, _, whole in meter.renders)  # never the whole conversation at once
    assert all(made <= 2 * size for made, size in zip(per, sizes, strict=True)), (per, sizes)
    if mode == "native" and window == 8192:
        # Nothing trimmed: only the step's assistant turn and result, and the result weighed alone.
        assert per[0] == sizes[0] == 2
        assert max(per[1:]) <= 3


# -- the renderer gives exactly what rendering the whole list gives -----------------------------------------


def _conversation(rng: random.Random, named: bool) -> list[Message]:
    messages = [system("You help."), user("Where is main?")]
    for step in range(1, rng.randint(2, 7)):
        calls = tuple(
            ToolCall(
                "grep",
                {"pattern": f"p{step}{n}"},
                id=f"call_{step}_{n}" if named or rng.random() < 0.5 else None,
            )
            for n in range(rng.randint(0, 2))
        )
        messages.append(assistant(rng.choice(["", "Looking.", "Let me see."]), calls))
        for call in calls:
            messages.append(
                tool_result(ToolResult(call, f"src/a{step}.py:1: {'x' * rng.randint(0, 50)}", step))
            )
        if rng.random() < 0.3:
            messages.append(user("Your call could not be read."))
    return messages


def _edit(rng: random.Random, messages: list[Message]) -> list[Message]:
    out = list(messages)
    choice = rng.randrange(6)
    results = [i for i, m in enumerate(out) if m.result is not None]
    if choice == 0 and results:  # a trim
        i = rng.choice(results)
        result = out[i].result
        assert result is not None
        out[i] = out[i].with_result(ToolResult(result.call, result.output[:5], result.step, trimmed=True))
    elif choice == 1:  # a note at the end
        out.append(user("[Results of step 1 trimmed to their first line.]"))
    elif choice == 2 and len(out) > 3:  # a step dropped
        del out[2:4]
    elif choice == 3:  # another system prompt
        out[0] = system("You help, with the tools listed.")
    elif choice == 4:  # a step's call and result
        call = ToolCall("read_file", {"path": "a.py"}, id=rng.choice(["call_9_0", None]))
        out += [assistant("", (call,)), tool_result(ToolResult(call, "1: x = 1", 9))]
    else:  # a closing prompt joined to what ends the conversation
        out.append(user("Answer now."))
    return out


@pytest.mark.parametrize("mode", ["native", "text"])
def test_the_renderer_gives_exactly_what_rendering_the_whole_list_gives(mode: Mode) -> None:
    rng = random.Random(27)
    renderer = Renderer(lambda messages, m: render(list(messages), m))
    for case in range(300):
        messages = _conversation(rng, named=case % 2 == 0)
        for _ in range(4):
            assert renderer(messages, mode) == render(messages, mode), (case, messages)
            messages = _edit(rng, messages)
            if rng.random() < 0.3:
                renderer.turn()


# -- strategies given, not patched ----------------------------------------------------------------------


@dataclass
class FixedCounter:
    """An estimate of its own: 10 tokens a message, whatever the server counts."""

    exact: dict[str, int] = field(default_factory=dict)
    anchored: bool = True
    observed: list[int] = field(default_factory=list)

    def count(self, rendered: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> int:
        return 10 * len(rendered)

    def observe(self, rendered: Any, tools: Any, prompt_tokens: int) -> None:
        self.observed.append(prompt_tokens)

    def unknown_texts(self, rendered: Any, tools: Any = None) -> list[str]:
        return []


def test_a_benchmark_gives_the_meter_its_own_counter_and_fit_policy() -> None:
    asked: list[tuple[int, int, int]] = []

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
        estimate = count(messages)
        asked.append((len(messages), limit, estimate))
        return Fit(list(messages), (), estimate, estimate, limit, target, estimate > limit)

    server = ScriptedServer(grep_replies("native", 2))
    counter = FixedCounter()
    meter = Meter(server, counter=counter, fit=keep_everything)
    reply = asyncio.run(Loop(server, Tools(), meter=meter).reply("Where is main?"))
    assert [r.estimated_tokens for r in reply.requests] == [10 * len(r.messages) for r in server.requests]
    assert [n for n, _, _ in asked] == [len(r.messages) for r in server.requests]
    assert counter.observed == [r.prompt_tokens for r in reply.requests]
    assert Meter(server).fit is fit


def test_a_loop_refuses_an_estimator_its_meter_does_not_use() -> None:
    server = ScriptedServer(["Hi."])
    with pytest.raises(ValueError, match="meter"):
        Loop(server, Tools(), meter=Meter(server), estimator=TokenEstimator())


# -- what a call's outcome says ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Warned:
    text: str
    is_error: bool = False
    pending: object | None = None
    notice: str = ""


@dataclass
class WarningTools(Tools):
    """The small toolset whose first grep leaves a warning for the user."""

    async def run(self, call: ToolCall) -> Warned:  # type: ignore[override]
        return Warned(
            "ran",
            notice="The code is still running in the kernel." if call.arguments["pattern"] == "p0" else "",
        )


def test_a_warning_a_calls_outcome_carries_is_said_among_the_replys_notices() -> None:
    server = ScriptedServer(grep_replies("native", 2))
    reply = asyncio.run(Loop(server, WarningTools()).reply("Where is main?"))
    assert [n for n in reply.notices if n.kind == "warning"] == [
        Notice("warning", "The code is still running in the kernel.")
    ]


# -- the package's shape ----------------------------------------------------------------------------------


ORDER = (
    "settings",
    "question",
    "rendering",
    "offer",
    "meter",
    "telling",
    "reading",
    "calls",
    "citations",
    "fenced_edits",
    "grounding",
    "supported",
    "run",
)
#: What the engine never imports: its caller, and the layers above the loop.
ABOVE = {"loop", "agent", "magic", "sessions", "display"}


def test_the_engine_imports_one_way_and_never_its_caller() -> None:
    folder = Path(engine_package.__file__).parent
    assert sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__") == sorted(ORDER)
    for at, name in enumerate(ORDER):
        source = (folder / f"{name}.py").read_text(encoding="utf-8")
        tree = ast.parse(source)
        top = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
        engine = {n.module for n in top if n.level == 1 and n.module}
        assert engine <= set(ORDER[:at]), (name, engine - set(ORDER[:at]))
        package = {
            (n.module or "").split(".")[1]
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom)
            and n.level == 0
            and (n.module or "").startswith("twinny_magics.")
        }
        assert not package & ABOVE, (name, package)
        assert "getattr(" not in source, name
        assert len(source.splitlines()) <= 600, name
