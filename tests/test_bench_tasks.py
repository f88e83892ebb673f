"""The task benchmark's graders and baselines (``benchmarks/tasks_toolz.py``, ``benchmarks/bench_tasks.py``).

Every task's check is tried on answers before any model meets it: its reference and other right
phrasings pass; the question's own text, "I don't know" and plausible wrong answers fail; an edit passes
only as the intended change to the intended file. The source is the pinned toolz sdist, which
``scripts/setup.sh`` (``setup_bench_sources``) puts in the cache; without it these tests fail and say so.
The baselines run on the package's scripted model: no server, a few milliseconds each.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from twinny_magics.budget import plan_context
from twinny_magics.conversation import ToolCall
from twinny_magics.events import Reply
from twinny_magics.experiment import Files, Question
from twinny_magics.notes import NO_ANSWER
from twinny_magics.servers.scripted import Scripted, ScriptedServer
from twinny_magics.tools import Workspace

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_tasks  # noqa: E402 - the benchmarks folder is not a package
import tasks_common  # noqa: E402
import tasks_toolz  # noqa: E402
from tasks_toolz import Answer, Task  # noqa: E402


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workspace the benchmark runs on: the cached sdist unpacked, and the notebook."""
    try:
        sdist = tasks_toolz.cached_sdist()
    except tasks_toolz.SourceMissing as error:
        pytest.fail(str(error))
    return tasks_toolz.unpack(sdist, tmp_path_factory.mktemp("bench") / "workspace")


@pytest.fixture(scope="module")
def tasks(source: Path) -> list[Task]:
    """Every task, made from the source."""
    return tasks_toolz.build_tasks(source)


def answer_tasks(tasks: list[Task]) -> Iterator[tuple[Task, Answer]]:
    for task in tasks:
        if isinstance(task.check, Answer):
            yield task, task.check


def judged(task: Task, text: str, root: Path) -> bool:
    """Whether the experiment passes ``text`` as the reply to ``task`` (through Question.judge)."""
    return task.as_question().judge(Reply(question=task.question, text=text), root, []).passed


def test_the_benchmark_has_enough_tasks_of_every_kind(tasks: list[Task]) -> None:
    kinds = {t.kind for t in tasks}
    assert len(tasks) >= tasks_toolz.MIN_TASKS
    assert kinds == set(tasks_toolz.KINDS)
    assert sum(t.kind == "edit" for t in tasks) >= tasks_toolz.MIN_EDITS
    assert all(isinstance(t.check, Files) for t in tasks if t.kind == "edit")
    assert len({t.name for t in tasks}) == len(tasks)


def test_the_quick_set_is_one_task_of_each_kind(tasks: list[Task]) -> None:
    quick = tasks_toolz.select(tasks, None, quick=True)
    assert sorted(t.kind for t in quick) == sorted(tasks_toolz.KINDS)


def test_tasks_are_picked_by_name_or_kind_and_an_unknown_word_is_refused(tasks: list[Task]) -> None:
    picked = tasks_toolz.select(tasks, "edit,locate-countby")
    assert {t.kind for t in picked} == {"edit", "locate"}
    assert [t.name for t in picked if t.kind == "locate"] == ["locate-countby"]
    with pytest.raises(ValueError, match="no task or kind named nope"):
        tasks_toolz.select(tasks, "nope")


def test_every_right_answer_passes(tasks: list[Task], source: Path) -> None:
    failed = [
        (task.name, text, task.check.grade(text))
        for task, check in answer_tasks(tasks)
        for text in task.right
        if check.grade(text) is not True or not judged(task, text, source)
    ]
    assert all(len(task.right) >= 2 for task, _ in answer_tasks(tasks))
    assert not failed


def test_the_question_itself_and_i_dont_know_fail(tasks: list[Task], source: Path) -> None:
    passed = [
        (task.name, text)
        for task, check in answer_tasks(tasks)
        for text in (task.question, tasks_toolz.IDK, f"{tasks_toolz.IDK} {task.question}", "")
        if check.grade(text) is True or judged(task, text, source)
    ]
    assert not passed


def test_every_plausible_wrong_answer_fails(tasks: list[Task]) -> None:
    assert all(1 <= len(task.wrong) <= 3 for task, _ in answer_tasks(tasks))
    passed = [
        (task.name, text)
        for task, check in answer_tasks(tasks)
        for text in task.wrong
        if check.grade(text) is True
    ]
    assert not passed


def test_a_reply_that_did_not_answer_fails_even_when_its_steps_found_the_answer(
    tasks: list[Task], source: Path
) -> None:
    task = next(t for t in tasks if t.name == "locate-countby")
    summary = (
        f"{NO_ANSWER} What its steps found:\n- grep(pattern='def countby') → toolz/recipes.py:8: def countby"
    )
    assert task.check.grade(summary) is True  # the words are right...
    verdict = task.as_question().judge(Reply(question=task.question, text=summary), source, [])
    assert not verdict.passed  # ...but they are the loop's, not the model's
    assert "did not answer" in verdict.why


@pytest.mark.parametrize(
    ("rel", "bare", "says", "does_not_say"),
    [
        (
            "toolz/itertoolz.py",
            True,
            [
                "toolz/itertoolz.py",
                "`itertoolz.py`",
                "the itertoolz module",
                "toolz.itertoolz.groupby",
                "itertoolz",
            ],
            ["toolz/tests/test_itertoolz.py", "cytoolz", "itertools"],
        ),
        (
            "toolz/recipes.py",
            False,
            ["./toolz/recipes.py", "recipes.py", "toolz.recipes", "the `recipes` module"],
            ["toolz/tests/test_recipes.py", "test_recipes", "recipes"],
        ),
        (
            "toolz/__init__.py",
            False,
            ["toolz/__init__.py", "in toolz/__init__"],
            ["toolz/curried/__init__.py", "tlz/__init__.py", "__init__.py"],
        ),
    ],
)
def test_a_file_is_named_the_ways_models_name_it(
    source: Path, rel: str, bare: bool, says: list[str], does_not_say: list[str]
) -> None:
    files = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    term = tasks_toolz.path_term(rel, files, bare=bare)
    assert [t for t in says if term.find(t) is None] == []
    assert [t for t in does_not_say if term.find(t) is not None] == []


def test_a_number_is_not_found_inside_another_number_or_a_version() -> None:
    eight, two = tasks_toolz.number_term(8), tasks_toolz.number_term(2)
    assert eight.find("python 3.8") is None
    assert eight.find("128") is None
    assert eight.find("eight tests") == 0
    assert two.find("2.5") is None
    assert two.find("It has 2.") == 7
    assert two.find("lines 1,234") is None


def test_a_setting_the_question_gives_restated_in_the_answer_is_not_its_number() -> None:
    number = tasks_toolz.number_term
    question = "How many rows fall in the first class of Breaks(y, k=4)?"
    check = Task("t", "notebook", question, Answer([number(52)], [number(4), number(1)])).check
    assert isinstance(check, Answer)
    assert check.asked == question  # the task gives its check the question
    assert check.grade("The first class of Breaks(y, k=4) holds 52 rows.") is True
    assert check.grade("With k = 4, the first class holds 52.") is True
    assert check.grade("4 rows fall in it, not 52.") == "the answer names 4 first (not 52)"
    assert check.grade("Breaks(y, k=4) holds 4 rows, then 52.") == "the answer names 4 first (not 52)"
    assert check.grade("Breaks(y, k=4)") == "the answer does not say 52"
    # A setting the question does not give is read as written.
    assert check.grade("With k=1 the first class holds 52.") == "the answer names 1 first (not 52)"


def test_a_listing_copied_before_the_answer_is_not_its_number() -> None:
    """A 1.5B model pasted lines 589-625 and then said "The line number of the class definition is 592":
    the pasted lines' numbers are not the answer; one copied line is."""
    number = tasks_toolz.number_term
    check = Answer([number(592)], [number(591), number(593)])
    listing = "```\n589: _HookCaller = HookCaller\n590: \n591: \n592: class _Subset(HookCaller):\n```\n"
    assert check.grade(listing + "The class is defined on line 592.") is True
    assert check.grade(listing) == "the answer does not say 592"
    assert check.grade("592: class _Subset(HookCaller):") is True
    assert check.grade("591:\n592: class _Subset(HookCaller):") == "the answer names 591 first (not 592)"


def test_a_wrong_name_in_the_questions_own_words_is_not_named_by_restating_it() -> None:
    """ "The greedy coloring function" restated from the question does not name the module greedy.py (a
    right answer, mapclassify/tests/test_greedy.py, was failed so); greedy.py written out still does."""
    files = ["pkg/greedy.py", "pkg/tests/test_greedy.py"]
    right = tasks_common.path_term("pkg/tests/test_greedy.py", files, bare=True)
    wrong = tasks_common.path_term("pkg/greedy.py", files, bare=True)
    question = "Which test file has the tests for the greedy coloring function?"
    check = Task("t", "cross-file", question, Answer([right], [wrong])).check
    assert isinstance(check, Answer)
    assert check.grade("The tests for the greedy coloring function are in pkg/tests/test_greedy.py.") is True
    assert check.grade("pkg/greedy.py, then pkg/tests/test_greedy.py") == (
        "the answer names pkg/greedy.py first (not pkg/tests/test_greedy.py)"
    )
    assert check.grade("pkg.greedy is tested in test_greedy.py") == (
        "the answer names pkg/greedy.py first (not pkg/tests/test_greedy.py)"
    )
    # The bare word is the question's own, so alone it names nothing: "the greedy module" is not read.
    assert check.grade("The greedy module is tested in test_greedy.py") is True


def test_each_edit_passes_only_as_the_intended_change(
    tasks: list[Task], source: Path, tmp_path: Path
) -> None:
    problems = []
    for number, task in enumerate(t for t in tasks if t.kind == "edit"):
        question = task.as_question()
        assert task.edit is not None
        assert task.wrong_edits

        def judge(
            edits: tuple[tasks_toolz.Edit, ...], label: str, n: int = number, question: Question = question
        ) -> bool:
            root = tmp_path / f"{n}-{label}"
            shutil.copytree(source, root)
            changed = tasks_toolz.apply_edits(root, edits)
            return question.judge(Reply(question=question.text, text="Done."), root, changed).passed

        if not judge((task.edit,), "reference"):
            problems.append(f"{task.name}: the reference edit fails")
        if judge((), "untouched"):
            problems.append(f"{task.name}: the untouched workspace passes")
        for index, wrong in enumerate(task.wrong_edits):
            if judge(wrong, f"wrong{index}"):
                problems.append(f"{task.name}: wrong edit {index} passes")
        junk = (task.edit, tasks_toolz.Edit("New file, relative to the workspace root.", "", "junk"))
        if judge(junk, "junk"):
            problems.append(f"{task.name}: the edit with a junk file beside it passes")
    assert not problems


def test_the_notebook_outputs_are_what_its_cells_give(source: Path) -> None:
    expected = [output for kind, _, output in tasks_toolz.NOTEBOOK_CELLS if kind == "code"]
    assert tasks_common.cell_outputs(source, tasks_toolz.NOTEBOOK_CELLS) == expected


async def test_the_notebook_reads_as_cells_with_its_outputs(source: Path) -> None:
    shown = (await Workspace(source).run(ToolCall("read_file", {"path": tasks_toolz.NOTEBOOK}))).text
    assert "LARGE_ORDER = 250" in shown
    assert "'east': 670" in shown


def test_big_file_answers_lie_past_what_one_read_shows_at_4k(tasks: list[Task], source: Path) -> None:
    result_chars = plan_context(4096).result_chars
    for task in tasks:
        if task.kind != "big-file":
            continue
        rel = next(
            r
            for r in ("toolz/itertoolz.py", "toolz/functoolz.py")
            if r in task.question or r in str(task.check)
        )
        text = (source / rel).read_text()
        assert text.count("\n") > 150
        assert len(text) > 4 * result_chars
        # The answer is nowhere in what a first read of the file can show at this window.
        first = text[:result_chars]
        assert not any(task.check.grade(line) is True for line in first.splitlines()), task.name


# -- the baselines, on the scripted model ------------------------------------------------------------


def test_the_naive_loop_keeps_every_result_whole(source: Path) -> None:
    server = ScriptedServer(
        [Scripted("", (ToolCall("read_file", {"path": "toolz/itertoolz.py"}),)), "groupby is on line 71."],
        window=100_000,
    )
    reply = bench_tasks.NaiveLoop(server=server, workspace=source).run("Where is groupby?")
    assert reply.text == "groupby is on line 71."
    assert reply.stopped == "answer"
    assert len(reply.steps) == 2
    assert len(server.requests) == 2
    sent = server.requests[1].messages[-1]["content"]
    # Whole, as the tool returns it (150 lines): our loop would cut it at the plan's result_chars.
    assert "150:" in sent
    assert len(sent) > plan_context(4096).result_chars
    assert server.requests[0].tools  # native, as auto starts on a server that is not the embedded one


def test_the_naive_loop_refused_as_too_long_ends_without_an_answer(source: Path) -> None:
    calls = [
        Scripted("", (ToolCall("read_file", {"path": "versioneer.py", "start_line": n * 150 + 1}),))
        for n in range(6)
    ]
    server = ScriptedServer([*calls, "done"], window=4096)
    reply = bench_tasks.NaiveLoop(server=server, workspace=source).run("Read versioneer.py.")
    assert reply.stopped == "refused"
    assert reply.text == ""
    assert reply.notices[-1].kind == "error"


def test_no_tools_sends_the_question_alone(source: Path) -> None:
    server = ScriptedServer(["toolz/recipes.py"])
    reply = bench_tasks.NoTools(server=server, workspace=source, steps=12, mode="auto").run(
        "Where is countby?"
    )
    assert reply.text == "toolz/recipes.py"
    assert [m["role"] for m in server.requests[0].messages] == ["user"]
    assert server.requests[0].tools is None
    assert server.requests[0].max_tokens == bench_tasks.NAIVE_MAX_TOKENS


def test_every_configuration_runs_through_the_experiment_and_is_summarised(
    tasks: list[Task], source: Path, tmp_path: Path
) -> None:
    chosen = [t for t in tasks if t.name in ("locate-countby", "value-fold-chunksize")]
    # One scripted model for every configuration: each run asks once and answers (the configurations
    # of a task run one after another).
    # look-first sends a first answer back once: it answers twice.
    count = len(bench_tasks.CONFIGS) + 1
    server = ScriptedServer(["toolz/recipes.py"] * count + ["It is 256."] * count, window=100_000)
    results = bench_tasks.bench(
        chosen,
        list(bench_tasks.CONFIGS),
        workspace=source,
        server_options={"server": server},
        record=tmp_path / "record.json",
    )
    summary = bench_tasks.summarise(results, chosen, list(bench_tasks.CONFIGS))
    assert {name: (c["passed"], c["judged"]) for name, c in summary["configs"].items()} == dict.fromkeys(
        bench_tasks.CONFIGS, (1, 2)
    )
    assert summary["by_kind"]["locate"]["naive"] == [1, 1]
    assert summary["tasks"]["value-fold-chunksize"]["no-tools"]["why"].startswith("the answer")
    text = bench_tasks.tables(summary, "heading")
    assert "locate-countby" in text
    assert "no-tools" in text
    compact = bench_tasks.compact_summary(summary)
    assert compact["configs"]["defaults"]["pass_rate"] == 0.5
    bench_tasks.store("scripted", summary, tmp_path / "results.json")
    assert json.loads((tmp_path / "results.json").read_text())["latest"] == "scripted"
    # Resumed, nothing runs again: the record holds every run.
    again = bench_tasks.bench(
        chosen,
        list(bench_tasks.CONFIGS),
        workspace=source,
        server_options={"server": ScriptedServer([])},
        record=tmp_path / "record.json",
        resume=True,
    )
    assert len(again.runs) == len(results.runs)


def test_each_run_of_our_loop_starts_with_nothing_learned_by_earlier_runs(source: Path) -> None:
    modes = pytest.importorskip("twinny_magics.modes")
    modes.LEARNED_MODES.remember(("http://127.0.0.1:1", "model"), modes.ModeChoice("text", "an earlier run"))
    agent = bench_tasks.fresh_agent(server=ScriptedServer(["Hi."]), workspace=source, mode="auto")
    assert len(modes.LEARNED_MODES) == 0
    assert agent.run("Hello?").text == "Hi."
