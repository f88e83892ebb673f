"""Running an experiment: every question under every variant, each in a fresh session and a fresh copy.

Everything that can be refused is refused before the first run: unknown options, bad checks, a
workspace that cannot be copied, a server that cannot be reached, results to resume that were made with
other settings. Then, for each repetition, question and variant (variants innermost, so that an
interrupted experiment still holds complete pairs), one run:

1. a fresh copy of the workspace (from a copy taken once at the start, so edits to the real folder
   during a long experiment change nothing; :mod:`.copies`) and a fresh
   :class:`~twinny_magics.agent.Agent` on it;
2. greedy and seeded by default: temperature 0 unless set, and ``seed + repetition`` sent with every
   request (``seed`` in the body; for Ollama also in ``options``), the same seed for every variant of a
   repetition, so each repetition is a paired comparison;
3. on llama.cpp, the run's first request is sent with ``cache_prompt: false``: a run never starts from
   prompt-cache entries another run left, whose logits are not bit-for-bit those of a fresh evaluation
   (llama.cpp's server docs say so of ``cache_prompt``; measured here, the same seeded greedy run gave
   a different reply after the cache held another run's prompt). Later requests of the run use the
   cache, which the run itself filled, so a run is a function of its own history only
   (:mod:`.serving`);
4. the reply judged by the question's check; the server failing is an *error*, not a failure.

A live progress line says which run is going, the time spent and an estimate of what is left. The stop
button (KeyboardInterrupt) ends the experiment cleanly: the run under way is dropped, the results so far
are returned (and saved, with ``save=``), and ``run(..., resume=results)`` runs only what is missing.
After ``max_errors`` errors in a row (a server that died) the experiment stops the same way.

With ``concurrency=N`` (or ``"auto"``: the server's slots, :mod:`.slots`) up to N runs are under way at
once, each as isolated as above, on an event loop of their own (:mod:`.parallel`); their records are kept
in the order above whatever finishes first, and the stop button cancels the runs under way. With
``servers=[...]`` (:mod:`.fleet`) the runs are spread over several servers of one model, ``concurrency``
at once on each; each record names its server, and a server that fails is taken out while its runs are
run again on the others.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from twinny_magics.experiment.checks import Question, describe
from twinny_magics.experiment.copies import Snapshot, changes, fresh_copy, snapshot, template
from twinny_magics.experiment.fleet import (
    Member,
    check_fleet,
    connect_fleet,
    fleet_status,
    members,
    moved_and_down,
    so_far,
    where,
)
from twinny_magics.experiment.parallel import Pool, Seat, ServerBusy, ServerLost
from twinny_magics.experiment.parallel import Progress as PoolProgress
from twinny_magics.experiment.progress import Progress, ProgressLine, duration
from twinny_magics.experiment.records import Run
from twinny_magics.experiment.results import Results
from twinny_magics.experiment.serving import RunServer, seeded
from twinny_magics.experiment.variants import SERVER_OPTIONS, Variant, check_options, effective
from twinny_magics.version import __version__

if TYPE_CHECKING:
    from twinny_magics.agent import Agent
    from twinny_magics.contracts import ModelServer
    from twinny_magics.events import Reply


#: With ``save=``, the file is rewritten at most this often while the experiment runs (and at its end).
SAVE_EVERY_SECONDS = 2.0
#: Defaults every variant starts from: greedy, and edits written (each run has its own copy).
DEFAULTS: dict[str, Any] = {"temperature": 0.0, "edits": "apply"}


def run(
    questions: Sequence[Question | str],
    variants: Sequence[Variant] | None = None,
    *,
    workspace: str | os.PathLike[str] = ".",
    repeat: int = 1,
    seed: int | None = 0,
    resume: Results | str | os.PathLike[str] | None = None,
    save: str | os.PathLike[str] | None = None,
    progress: Progress = "auto",
    isolate_cache: bool = True,
    max_errors: int = 3,
    concurrency: int | Literal["auto"] = 1,
    servers: Sequence[str | ModelServer] | None = None,
    **options: Any,
) -> Results:
    """Run every question under every variant (``repeat`` times) and return the results.

    ``options`` are Agent options every variant starts from (``base_url``/``model``/``kind`` or
    ``server``, ``steps``, ``extra``…); a variant's own options win. Greedy unless ``temperature`` is
    set; edits are applied (each run has its own copy of ``workspace``). ``seed=None`` sends no seed.
    ``resume`` (results, or the path they were saved to) keeps the runs already done. ``save`` writes the
    results there as they grow. ``progress``: ``rich`` (a line updated in place, in a notebook), ``text``
    (a line per run on stderr), ``off``, or ``auto`` (rich in a kernel, else text). ``concurrency``: how
    many runs at once (``"auto"``: as many as the server has slots, see :mod:`.slots`); the results are
    the same runs in the same order whatever finishes first. ``servers``: several servers of one model
    (addresses, or servers) to spread the runs over, ``concurrency`` at once on each (see :mod:`.fleet`);
    they replace ``base_url``/``server``.
    """
    asked = _questions(questions)
    chosen = _variants(variants)
    common = check_options({**DEFAULTS, **options}, "run()")
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"repeat={repeat!r}: give how many times to run each question (1 or more).")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ValueError(f"seed={seed!r}: give an integer, or None to send none.")
    _check_concurrency(concurrency)
    given = check_fleet(servers, [v.options for v in chosen], common) if servers is not None else None
    earlier = Results.load(resume) if isinstance(resume, str | os.PathLike) else resume
    settings = {
        "version": _version(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "workspace": str(Path(workspace).resolve()),
        "seed": seed,
        "isolate_cache": isolate_cache,
        # What every variant starts from, Agent defaults and where the server is left out (see effective).
        "options": effective(common, {}),
    }
    results = Results(
        asked,
        chosen,
        repeat=repeat,
        settings=settings,
        effective={v.name: effective(common, v.options) for v in chosen},
    )
    if earlier is not None:
        _check_resumable(earlier, results)  # before the copy and the servers: what it says is cheap
    with template(Path(workspace)) as (copied, before):
        fleet = members(connect_fleet(given, common), concurrency) if given is not None else []
        connected = [fleet[0].server] * len(chosen) if fleet else _connect(chosen, common)
        results.servers = {
            v.name: {"kind": s.kind, "model": s.model, "base_url": where(s)}
            for v, s in zip(chosen, connected, strict=True)
        }
        if earlier is not None:
            _check_resumable(earlier, results)  # now also the models the servers name
            results.runs = _kept(earlier, results)
        by_name = {v.name: server for v, server in zip(chosen, connected, strict=True)}
        harness = _Harness(results, (copied, before), by_name, common, isolate_cache=isolate_cache)
        if fleet:
            results.settings["servers"] = [member.describe() for member in fleet]
            results.settings["concurrency"] = sum(member.at_once for member in fleet)
            harness.execute_at_once(seed, _style(progress), save, max_errors, fleet=fleet)
            return results
        limit, pinned = _limit(concurrency, connected)
        results.settings["concurrency"] = limit
        if limit == 1:
            harness.execute(seed, _style(progress), save, max_errors)
        else:
            one = Member(connected[0], "", limit, pinned)  # the variants' own servers share the count
            harness.execute_at_once(seed, _style(progress), save, max_errors, fleet=[one])
    return results


def _check_concurrency(concurrency: object) -> None:
    if concurrency == "auto":
        return
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise ValueError(
            f"concurrency={concurrency!r}: give how many runs at once (1 or more), or 'auto' for as many "
            "as the server has slots."
        )


def _limit(concurrency: int | Literal["auto"], servers: Sequence[ModelServer]) -> tuple[int, bool]:
    """Runs at once, and whether each may be pinned to a llama.cpp slot of its own (enough slots said)."""
    if concurrency == 1:
        return 1, False
    from twinny_magics.experiment.slots import auto_concurrency  # noqa: PLC0415 - asks the server

    slots = auto_concurrency(servers)
    limit = slots if concurrency == "auto" else concurrency
    # Pinned only when every server is llama.cpp and said it has a slot for every run under way.
    return limit, all(s.kind == "llamacpp" for s in servers) and slots >= limit


# -- before anything runs --------------------------------------------------------------------------------


def _questions(questions: Sequence[Question | str]) -> list[Question]:
    if isinstance(questions, str | Question):
        questions = [questions]
    asked = [q if isinstance(q, Question) else Question(q) for q in questions]
    if not asked:
        raise ValueError("No questions to run.")
    _unique([q.name for q in asked], "question", "give each its own name=")
    return asked


def _variants(variants: Sequence[Variant] | None) -> list[Variant]:
    if variants is None:
        return [Variant("default")]
    if isinstance(variants, Variant):
        variants = [variants]
    chosen = list(variants)
    if not chosen or not all(isinstance(v, Variant) for v in chosen):
        raise ValueError("variants: give a list of Variant(name, **options).")
    _unique([v.name for v in chosen], "variant", "give each its own name")
    return chosen


def _unique(names: list[str], what: str, fix: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"Two {what}s are named {name!r}: {fix}.")
        seen.add(name)


def _version() -> str:
    return __version__


def _connect(variants: Sequence[Variant], common: Mapping[str, Any]) -> list[ModelServer]:
    """One server per variant; variants naming the same server share one connection."""
    made: dict[tuple[Any, ...], ModelServer] = {}
    servers = []
    for variant in variants:
        wanted = {name: variant.options.get(name, common.get(name)) for name in SERVER_OPTIONS}
        given = wanted.pop("server")
        if given is not None:
            servers.append(given)
            continue
        key = tuple(wanted[name] for name in SERVER_OPTIONS if name != "server")
        if key not in made:
            from twinny_magics.servers import connect  # noqa: PLC0415 - the servers load on first use

            made[key] = connect(
                wanted["base_url"],
                model=wanted["model"],
                kind=wanted["kind"],
                api_key=wanted["api_key"],
                window=wanted["window"],
                timeout=wanted["timeout"],
            )
        servers.append(made[key])
    return servers


def _check_resumable(earlier: Results, results: Results) -> None:
    """Refuse to resume results whose runs would not compare: other questions or settings, same names."""
    saved = {q.name: q for q in earlier.questions}
    for question in results.questions:
        old = saved.get(question.name)
        if old is not None and (old.text != question.text or describe(old.check) != describe(question.check)):
            raise ValueError(
                f"Question {question.name!r} has another text or check than in the results to resume; give "
                "it another name, or start afresh."
            )
    for name, now in results.effective.items():
        then = earlier.effective.get(name)
        if then is not None and then != now:
            raise ValueError(
                f"Variant {name!r} ran with other settings in the results to resume ({then} then, {now} "
                "now); give it another name, or start afresh."
            )
    if earlier.settings.get("seed") != results.settings.get("seed"):
        raise ValueError(
            f"The results to resume ran with seed {earlier.settings.get('seed')!r}, not "
            f"{results.settings.get('seed')!r}: the runs would not compare."
        )
    for name, server in results.servers.items():
        old_server = earlier.servers.get(name)
        if old_server is not None and old_server.get("model") != server.get("model"):
            raise ValueError(
                f"Variant {name!r} ran on model {old_server.get('model')!r} in the results to resume, and "
                f"would now run on {server.get('model')!r}."
            )


def _kept(earlier: Results, results: Results) -> list[Run]:
    """The runs of ``earlier`` that ``results`` has a place for (errors are run again)."""
    wanted = {
        (q.name, v.name, r)
        for q in results.questions
        for v in results.variants
        for r in range(results.repeat)
    }
    return [run for run in earlier.runs if run.outcome != "error" and run.key in wanted]


def _style(progress: Progress) -> Progress:
    if progress != "auto":
        return progress
    try:
        from IPython import get_ipython  # noqa: PLC0415

        shell = get_ipython()
    except ImportError:
        shell = None
    return "rich" if getattr(shell, "kernel", None) is not None else "text"


# -- the runs --------------------------------------------------------------------------------------------


class _Harness:
    """The experiment while it runs: what is left, the progress line, saving."""

    def __init__(
        self,
        results: Results,
        workspace: tuple[Path, Snapshot],
        servers: Mapping[str, ModelServer],
        common: Mapping[str, Any],
        *,
        isolate_cache: bool,
    ) -> None:
        self.results = results
        self.template, self.before = workspace
        self.servers = dict(servers)
        self.common = dict(common)
        self.isolate_cache = isolate_cache

    def todo(self) -> list[tuple[int, Question, Variant]]:
        done = {run.key for run in self.results.runs}
        return [
            (repeat, question, variant)
            for repeat in range(self.results.repeat)
            for question in self.results.questions
            for variant in self.results.variants
            if (question.name, variant.name, repeat) not in done
        ]

    def execute(
        self, seed: int | None, style: Progress, save: str | os.PathLike[str] | None, max_errors: int
    ) -> None:
        todo = self.todo()
        line = ProgressLine(style)
        started = time.monotonic()
        saved_at = started
        errors_in_a_row = 0
        finished = 0
        count = len(self.results.questions)
        order = {q.name: i for i, q in enumerate(self.results.questions, 1)}
        try:
            for number, (repeat, question, variant) in enumerate(todo, 1):
                elapsed = time.monotonic() - started
                left = (
                    f", about {duration(elapsed / finished * (len(todo) - number + 1))} left"
                    if finished
                    else ""
                )
                repetition = (
                    f" · repetition {repeat + 1} of {self.results.repeat}" if self.results.repeat > 1 else ""
                )
                status = so_far(self.results.runs[len(self.results.runs) - finished :], elapsed)
                line.show(
                    f"Run {number} of {len(todo)}: question {order[question.name]} of {count} "
                    f"({question.name}) · variant {variant.name}{repetition} · "
                    f"{duration(elapsed)} elapsed{left}" + (f" · {status}" if status else "")
                )
                result = self.one(question, variant, repeat, None if seed is None else seed + repeat)
                self.results.runs.append(result)
                finished += 1
                line.ran(number, len(todo), result)
                errors_in_a_row = errors_in_a_row + 1 if result.outcome == "error" else 0
                if save is not None and time.monotonic() - saved_at >= SAVE_EVERY_SECONDS:
                    self.results.save(save)
                    saved_at = time.monotonic()
                if max_errors and errors_in_a_row >= max_errors:
                    self.results.stopped = f"{errors_in_a_row} server errors in a row"
                    break
        except KeyboardInterrupt:
            self.results.stopped = "interrupted"
        finally:
            fresh = self.results.runs[len(self.results.runs) - finished :] if finished else []
            self._end(started, finished, line, save, so_far(fresh, time.monotonic() - started))

    def _end(
        self,
        started: float,
        finished: int,
        line: ProgressLine,
        save: str | os.PathLike[str] | None,
        summary: str = "",
    ) -> None:
        self.results.settings["seconds"] = round(time.monotonic() - started, 3)
        done = len([r for r in self.results.runs if r.outcome != "error"])
        end = f"{finished} run{'s' if finished != 1 else ''} in {duration(time.monotonic() - started)}"
        if self.results.stopped:
            end = (
                f"Stopped ({self.results.stopped}) after {end}; {done} of {self.results.total} done — "
                "run(..., resume=results) runs the rest."
            )
        else:
            end = f"Done: {end}; {done} of {self.results.total} runs done."
        line.finish(end + (f" {summary}." if summary else ""))
        if save is not None:
            self.results.save(save)

    def execute_at_once(
        self,
        seed: int | None,
        style: Progress,
        save: str | os.PathLike[str] | None,
        max_errors: int,
        *,
        fleet: Sequence[Member],
    ) -> None:
        """``execute`` with runs at once (:mod:`.parallel`), kept in ``todo``'s order.

        ``fleet``: the servers and how many runs at once on each; one member with no label stands for the
        variants' own servers (each run on its variant's), sharing its count.
        """
        todo = self.todo()
        kept = list(self.results.runs)
        line = ProgressLine(style)
        started = time.monotonic()
        saved_at = [started]
        printed: list[int] = []

        own = len(fleet) == 1 and not fleet[0].label
        labels = [member.label for member in fleet]
        limit = sum(member.at_once for member in fleet)

        async def run_one(item: tuple[int, Question, Variant], seat: Seat) -> Run:
            repeat, question, variant = item
            member = fleet[seat.server]
            slot = seat.slot if member.pinned else None
            run_seed = None if seed is None else seed + repeat
            on = None if own else member
            return await self.aone(
                question, variant, repeat, run_seed, slot=slot, member=on, lost=len(fleet) > 1
            )

        def tick(progress: PoolProgress) -> None:
            self.results.runs = kept + [progress.done[i] for i in sorted(progress.done)]
            for position in progress.finished[len(printed) :]:
                printed.append(position)
                line.ran(len(printed), len(todo), progress.done[position], len(fleet) > 1)
            elapsed = time.monotonic() - started
            finished = len(progress.done)
            queued = len(todo) - finished - progress.running
            rest = len(todo) - finished
            left = f", about {duration(elapsed / finished * rest)} left" if finished else ""
            status = fleet_status(progress, labels, time.monotonic() - started)
            line.show(
                f"{finished} of {len(todo)} runs done · {progress.running} running · {queued} queued · "
                f"{limit} at once · {duration(elapsed)} elapsed{left}" + (f" · {status}" if status else "")
            )
            if save is not None and time.monotonic() - saved_at[0] >= SAVE_EVERY_SECONDS:
                self.results.save(save)
                saved_at[0] = time.monotonic()

        pool = Pool(todo, run_one, limit=[member.at_once for member in fleet], max_errors=max_errors)
        summary = ""
        try:
            ended = pool.run(tick)
            tick(ended)
            self.results.stopped = ended.stopped
            self.results.settings["most_at_once"] = ended.most_running
            self.results.settings.update(moved_and_down(ended, labels))
            summary = fleet_status(ended, labels, time.monotonic() - started)
        finally:
            self._end(started, len(self.results.runs) - len(kept), line, save, summary)

    def one(self, question: Question, variant: Variant, repeat: int, seed: int | None) -> Run:
        """One run: a fresh session on a fresh copy of the workspace, its reply judged."""
        server, record, make, options = self._setup(question, variant, repeat, seed)
        with fresh_copy(self.template) as copy:
            started = time.perf_counter()
            try:
                reply: Reply = make(server=server, workspace=copy, **options).run(question.text)
            except Exception as error:  # a bug or an unreachable server: this run errs, the others go on
                record.why = f"{type(error).__name__}: {error}"
                return record
            finally:
                record.seconds = round(time.perf_counter() - started, 3)
                record.refused = server.refused
            return self._judged(question, record, reply, copy)

    async def aone(
        self,
        question: Question,
        variant: Variant,
        repeat: int,
        seed: int | None,
        *,
        slot: int | None = None,
        member: Member | None = None,
        lost: bool = False,
    ) -> Run:
        """``one`` as a task among others (``slot``: the llama.cpp slot every request of the run goes to;
        ``member``: the fleet's server it runs on; ``lost``: that server failing raises ServerLost)."""
        server, record, make, options = self._setup(question, variant, repeat, seed, slot=slot, member=member)
        with fresh_copy(self.template) as copy:
            started = time.perf_counter()
            reply: Reply | None = None
            try:
                session = make(server=server, workspace=copy, **options)
                if isinstance(session, _agent_class()):
                    reply = await session.arun(question.text)
                else:  # a factory's own session has only run(), which blocks: it gets a thread
                    reply = await asyncio.to_thread(session.run, question.text)
            except Exception as error:  # a bug or an unreachable server: this run errs, the others go on
                record.why = f"{type(error).__name__}: {error}"
            finally:
                record.seconds = round(time.perf_counter() - started, 3)
                record.refused = server.refused
            judged = record if reply is None else self._judged(question, record, reply, copy)
        if judged.outcome == "error" and server.busy:
            raise ServerBusy(judged)  # turned away, not failed: the pool starts it again later
        if lost and server.lost is not None and judged.outcome == "error":
            judged.why = judged.why or server.lost
            raise ServerLost(judged)
        return judged

    def _setup(
        self,
        question: Question,
        variant: Variant,
        repeat: int,
        seed: int | None,
        *,
        slot: int | None = None,
        member: Member | None = None,
    ) -> tuple[RunServer, Run, Callable[..., Any], dict[str, Any]]:
        chosen = member.server if member is not None else self.servers[variant.name]
        server = RunServer(chosen, cold_first=self.isolate_cache, slot=slot)
        label = member.label if member is not None else where(chosen) or ""
        record = Run(question.name, variant.name, repeat, "error", seed=seed, server=label)
        options = {k: v for k, v in {**self.common, **variant.options}.items() if k not in SERVER_OPTIONS}
        options["extra"] = seeded(options.get("extra"), seed, server.kind)
        return server, record, variant.factory or _agent_class(), options

    def _judged(self, question: Question, record: Run, reply: Reply, copy: Path) -> Run:
        record.reply = reply
        if reply.stopped == "error":
            record.why = reply.error or "the server failed"
            return record
        record.changed = changes(self.before, snapshot(copy, self.before))
        if not question.graded:
            record.outcome = "ran"
            return record
        verdict = question.judge(reply, copy, [change[2:] for change in record.changed])
        record.outcome = "pass" if verdict.passed else "fail"
        record.why, record.check_raised = verdict.why, verdict.raised
        return record


def _agent_class() -> type[Agent]:
    from twinny_magics.agent import Agent  # noqa: PLC0415

    return Agent
