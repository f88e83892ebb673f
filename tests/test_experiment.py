"""Experiments (twinny_magics.experiment): questions under variants, judged, compared, saved and resumed.

Scripted models answer (one queue per variant, so each variant's answers are written out in question
order); the last tests run the real llama.cpp server (``pytest.mark.server``).
"""

from __future__ import annotations

import _thread
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.errors import PromptTooLong, ServerUnreachable
from twinny_magics.events import Reply
from twinny_magics.experiment import (
    Files,
    Not,
    Question,
    Results,
    Variant,
    load,
    mcnemar_exact,
    parse_options,
    run,
)
from twinny_magics.experiment.cells import parse_questions
from twinny_magics.experiment.serving import RunServer, seeded
from twinny_magics.servers.base import ChatEvent, ChatRequest
from twinny_magics.servers.scripted import Scripted, ScriptedServer

APP = "import http.server\n\nPORT = 8000\n"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A small workspace: app.py with a port, a README."""
    folder = tmp_path / "shop"
    folder.mkdir()
    (folder / "app.py").write_text(APP)
    (folder / "README.md").write_text("# shop\n\nRun `python app.py`.\n")
    return folder


def answers(*texts: str | Scripted | Exception) -> ScriptedServer:
    return ScriptedServer(list(texts))  # type: ignore[arg-type]


def quiet(questions: Any, variants: Any, workspace: Path, **options: Any) -> Results:
    return run(questions, variants, workspace=workspace, progress="off", **options)


PORT = Question("Which port does app.py listen on?", check=r"\b8000\b", name="port")
RUN = Question("How do I start it?", check=[r"python app\.py", Not("npm")], name="start")


# -- checks ----------------------------------------------------------------------------------------------


def test_a_pattern_is_searched_case_insensitively_and_a_compiled_one_keeps_its_flags(shop: Path) -> None:
    questions = [
        Question("Port?", check=r"port 8000", name="loose"),
        Question("Port?", check=re.compile(r"port 8000"), name="strict"),
    ]
    results = quiet(questions, [Variant("v", server=answers("Port 8000.", "Port 8000."))], shop)
    assert results["loose", "v"].outcome == "pass"
    assert results["strict", "v"].outcome == "fail"
    assert "does not match /port 8000/" in results["strict", "v"].why


def test_every_pattern_of_a_list_must_hold_and_not_says_what_it_found(shop: Path) -> None:
    server = answers("Run python app.py.", "Run python app.py or npm start.")
    results = quiet([RUN], [Variant("v", server=server)], shop, repeat=2, temperature=0.5)
    assert results["start", "v", 0].outcome == "pass"
    second = results["start", "v", 1]
    assert second.outcome == "fail"
    assert "matches /npm/ (it must not): 'npm'" in second.why


def test_files_passes_when_the_edit_is_made_and_only_that_file_changed(shop: Path) -> None:
    edit = Scripted("", calls=(ToolCall("edit_file", {"path": "app.py", "find": "8000", "replace": "9000"}),))
    also = Scripted("", calls=(ToolCall("create_file", {"path": "notes.txt", "content": "hi"}),))
    question = Question("Set the port to 9000.", check=Files({"app.py": APP.replace("8000", "9000")}))
    good = Variant("good", server=answers(edit, "Done."))
    messy = Variant("messy", server=answers(edit, also, "Done."))
    # Asked for a change, a reply without an edit is sent back once (edit_first): it says so twice.
    idle = Variant("idle", server=answers("I changed it.", "I changed it."))
    results = quiet([question], [good, messy, idle], shop)
    name = question.name
    assert results[name, "good"].outcome == "pass"
    assert results[name, "good"].changed == ["M app.py"]
    assert results[name, "messy"].outcome == "fail"
    assert "other files changed too: notes.txt" in results[name, "messy"].why
    assert results[name, "idle"].outcome == "fail"
    assert "+PORT = 8000" in results[name, "idle"].why  # the diff of what was expected against what is
    assert (shop / "app.py").read_text() == APP  # the real workspace is never touched


def test_files_can_require_a_file_gone_or_matching_a_pattern(shop: Path) -> None:
    create = Scripted(
        "", calls=(ToolCall("create_file", {"path": "docs/port.md", "content": "Port: 8000\n"}),)
    )
    question = Question(
        "Document the port.",
        check=Files({"docs/port.md": re.compile(r"8000"), "gone.txt": None}),
        name="doc",
    )
    results = quiet([question], [Variant("v", server=answers(create, "Documented."))], shop)
    assert results["doc", "v"].outcome == "pass", results["doc", "v"].why
    assert results["doc", "v"].changed == ["A docs/port.md"]


def test_a_function_check_gets_the_reply_and_the_copy_and_may_give_a_reason(shop: Path) -> None:
    seen: list[tuple[str, bool]] = []

    def check(reply: Reply, workspace: Path) -> bool | str:
        seen.append((reply.text, (workspace / "app.py").exists()))
        return True if "8000" in reply.text else f"no port in {reply.text!r}"

    question = Question("Port?", check=check, name="port")
    results = quiet(
        [question], [Variant("a", server=answers("8000")), Variant("b", server=answers("?"))], shop
    )
    assert seen == [("8000", True), ("?", True)]
    assert results["port", "a"].passed
    assert results["port", "b"].why == "no port in '?'"


def test_a_check_that_raises_or_returns_nothing_fails_with_its_error_shown_and_the_run_goes_on(
    shop: Path,
) -> None:
    def broken(reply: Reply, workspace: Path) -> bool:
        raise KeyError("oops")

    def forgetful(reply: Reply, workspace: Path) -> None:
        "8000" in reply.text  # noqa: B015 - the forgotten return this test is about

    def asserting(reply: Reply, workspace: Path) -> bool:
        assert "9000" in reply.text, "wanted 9000"
        return True

    questions = [
        Question("a", check=broken, name="broken"),
        Question("b", check=forgetful, name="forgetful"),
        Question("c", check=asserting, name="asserting"),
        PORT,
    ]
    results = quiet(questions, [Variant("v", server=answers("8000", "8000", "8000", "8000"))], shop)
    assert results["broken", "v"].outcome == "fail"
    assert results["broken", "v"].check_raised
    assert results["broken", "v"].why == "the check raised KeyError: 'oops'"
    assert "returned NoneType, not True, False or a reason" in results["forgetful", "v"].why
    assert results["asserting", "v"].why.startswith("AssertionError: wanted 9000")
    assert results["port", "v"].passed  # the experiment went on after each


def test_a_question_without_a_check_is_run_and_recorded_not_judged(shop: Path) -> None:
    results = quiet(["Summarise app.py."], [Variant("v", server=answers("A server on 8000."))], shop)
    only = results.runs[0]
    assert only.outcome == "ran"
    assert only.answer == "A server on 8000."
    assert results.summary()[0].pass_rate is None


# -- bad input -------------------------------------------------------------------------------------------


def test_an_unknown_option_is_refused_naming_the_options_and_the_likely_one() -> None:
    with pytest.raises(ValueError, match=r"no option 'closing'\. Did you mean closing_prompt") as error:
        Variant("b", closing="Be brief.")
    assert "system_prompt" in str(error.value)
    assert "tool_descriptions" in str(error.value)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"mode": "txt"}, "mode='txt' is not one of 'auto', 'native', 'text'"),
        ({"steps": "4"}, "steps='4' is not a int"),
        ({"steps": 0}, "steps=0 must be 1 or more"),
        ({"temperature": 3}, "temperature=3 must be from 0 to 2"),
        ({"grammar": "eager"}, "grammar='eager' is not one of"),
        ({"workspace": "."}, "workspace is the experiment's"),
    ],
)
def test_a_bad_value_is_refused_when_the_variant_is_made(options: dict[str, Any], said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        Variant("v", **options)


def test_run_refuses_bad_input_before_any_request(shop: Path) -> None:
    server = answers("8000")
    variant = Variant("v", server=server)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"questions": []}, "No questions"),
        ({"questions": [PORT, PORT]}, "Two questions are named 'port'"),
        ({"variants": [variant, Variant("v")]}, "Two variants are named 'v'"),
        ({"repeat": 0}, "repeat=0"),
        ({"seed": "7"}, "seed='7'"),
        ({"stepz": 3}, "run(): no option 'stepz'"),
        ({"workspace": shop / "missing"}, "is not a folder"),
    ]
    for changes, said in cases:
        arguments: dict[str, Any] = {"questions": [PORT], "variants": [variant], "workspace": shop, **changes}
        with pytest.raises(ValueError, match=re.escape(said)):
            run(arguments.pop("questions"), arguments.pop("variants"), progress="off", **arguments)
    assert server.requests == []


@pytest.mark.parametrize(
    ("make", "error", "said"),
    [
        (lambda: Question("Q", check=r"(unclosed"), ValueError, "is not a regular expression"),
        (lambda: Question("Q", check=42), TypeError, "a check is a regex"),
        (lambda: Question("Q", check=[]), ValueError, "an empty list of patterns"),
        (lambda: Question("  "), ValueError, "needs its text"),
        (lambda: Files({"/etc/passwd": "x"}), ValueError, "is not a path inside the workspace"),
        (lambda: Files({"../up.txt": "x"}), ValueError, "is not a path inside the workspace"),
        (lambda: Files({"a.py": 3}), TypeError, "give the text, a compiled pattern or None"),
    ],
)
def test_a_bad_check_is_refused_when_the_question_is_made(make: Any, error: type, said: str) -> None:
    with pytest.raises(error, match=re.escape(said)):
        make()


def test_a_workspace_that_cannot_be_copied_is_refused_before_any_request(shop: Path) -> None:
    os.mkfifo(shop / "pipe")  # a named pipe: copying it would block, so it cannot be copied
    server = answers("8000")
    with pytest.raises(ValueError, match=r"cannot be copied for the runs: .*pipe.*named pipe"):
        quiet([PORT], [Variant("v", server=server)], shop)
    assert server.requests == []


def test_a_workspace_too_big_to_copy_for_every_run_is_refused(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("twinny_magics.experiment.copies.MAX_WORKSPACE_FILES", 1)
    with pytest.raises(ValueError, match="too much to copy for every run"):
        quiet([PORT], [Variant("v", server=answers("8000"))], shop)


def test_a_server_that_dies_mid_run_gives_errors_not_failures_and_the_run_resumes(shop: Path) -> None:
    gone = ServerUnreachable("Nothing answered at http://127.0.0.1:9 (connection refused).")
    questions = [PORT, Question("Port again?", check="8000", name="again"), Question("And?", name="and")]
    dying = answers("8000", gone, gone)
    results = quiet(questions, [Variant("v", server=dying)], shop, max_errors=2)
    assert [r.outcome for r in results.runs] == ["pass", "error", "error"]
    assert "connection refused" in results["again", "v"].why
    assert results.stopped == "2 server errors in a row"
    assert not results.complete
    assert results.summary()[0].errors == 2
    assert (results.summary()[0].passed, results.summary()[0].judged) == (1, 1)

    healthy = answers("8000 again", "and so on")
    resumed = quiet(questions, [Variant("v", server=healthy)], shop, resume=results)
    assert len(healthy.requests) == 2  # only the runs that erred
    assert [resumed[q.name, "v"].outcome for q in questions] == ["pass", "pass", "ran"]
    assert resumed.complete
    assert resumed.stopped is None


def test_a_run_refused_as_too_long_counts_its_refusals(shop: Path) -> None:
    too_long = PromptTooLong("request (9000 tokens) exceeds the available context size", prompt_tokens=900)
    results = quiet([PORT], [Variant("v", server=answers(too_long, "8000"))], shop)
    assert results["port", "v"].refused == 1
    assert results["port", "v"].passed  # trimmed and retried once, as the loop does
    assert results.summary()[0].refused == 1


# -- how each run is made --------------------------------------------------------------------------------


def test_each_run_gets_a_fresh_session_a_fresh_copy_and_the_seed_of_its_repetition(shop: Path) -> None:
    edit = Scripted("", calls=(ToolCall("edit_file", {"path": "app.py", "find": "8000", "replace": "9000"}),))
    server = answers(edit, "Changed.", edit, "Changed again.")
    results = quiet([PORT], [Variant("v", server=server, extra={"top_k": 1})], shop, repeat=2, seed=7)
    # The second repetition found app.py as it was: its edit applied again, on its own copy.
    assert [r.changed for r in results.runs] == [["M app.py"], ["M app.py"]]
    assert all(not r.reply.steps[0].results[0].is_error for r in results.runs if r.reply)
    # No session carried notes or history into the next: each first request is question-only.
    firsts = [server.requests[0], server.requests[2]]
    assert all(sum(m["role"] == "user" for m in r.messages) == 1 for r in firsts)
    assert [r.extra.get("seed") for r in server.requests] == [7, 7, 8, 8]
    assert all(r.extra.get("top_k") == 1 for r in server.requests)
    assert all(r.temperature == 0.0 for r in server.requests)  # greedy unless said otherwise
    assert (shop / "app.py").read_text() == APP


def test_the_seed_goes_where_each_server_reads_it() -> None:
    assert seeded(None, 3, "llamacpp") == {"seed": 3}
    assert seeded({"seed": 9}, 3, "openai") == {"seed": 9}  # a variant's own seed wins
    assert seeded({"options": {"top_k": 1}}, 3, "ollama") == {"seed": 3, "options": {"top_k": 1, "seed": 3}}
    assert seeded({"a": 1}, None, "llamacpp") == {"a": 1}


async def test_only_a_runs_first_request_on_llama_cpp_skips_the_prompt_cache() -> None:
    inner = ScriptedServer(["one", "two"], kind="llamacpp")
    wrapped = RunServer(inner)
    for _ in range(2):
        async for _event in wrapped.stream(ChatRequest(messages=[{"role": "user", "content": "hi"}])):
            pass
    assert [r.extra.get("cache_prompt") for r in inner.requests] == [False, None]
    other = ScriptedServer(["one"], kind="openai")
    async for _event in RunServer(other).stream(ChatRequest(messages=[])):
        pass
    assert "cache_prompt" not in other.requests[0].extra  # a hosted API would refuse the field


def test_a_tool_description_can_be_tuned_and_reaches_the_model(shop: Path) -> None:
    server = answers("8000")
    hint = "Search for a word of the question, e.g. PORT."
    quiet([PORT], [Variant("v", server=server, mode="text", tool_descriptions={"grep": hint})], shop)
    system = server.requests[0].messages[0]["content"]
    assert f"grep {{pattern, path?}}: {hint}" in system
    assert "Python regular expression" not in system
    with pytest.raises(ValueError, match="no tool named 'grp' to describe; the tools are: list_dir"):
        Variant("v", tool_descriptions={"grp": hint})
    with pytest.raises(ValueError, match="No tool named 'grp' to describe"):
        Agent(tool_descriptions={"grp": hint})


def test_a_variant_may_bring_its_own_session_factory(shop: Path) -> None:
    made: list[dict[str, Any]] = []

    def factory(**options: Any) -> Agent:
        made.append(options)
        return Agent(**options)

    results = quiet([PORT], [Variant("mine", factory=factory, server=answers("8000"), steps=3)], shop)
    assert results["port", "mine"].passed
    assert made[0]["steps"] == 3
    assert isinstance(made[0]["server"], RunServer)


# -- comparing -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("only_a", "only_b", "p"),
    [
        (0, 0, 1.0),
        (0, 5, 0.0625),  # 2 × (1/2)^5
        (0, 6, 0.03125),  # 2 × (1/2)^6
        (1, 5, 0.21875),  # 2 × (1 + 6) / 64
        (2, 8, 0.109375),  # 2 × (1 + 10 + 45) / 1024
        (3, 3, 1.0),
        (10, 0, 0.001953125),  # 2 / 1024
    ],
)
def test_the_exact_mcnemar_test_gives_the_binomial_values(only_a: int, only_b: int, p: float) -> None:
    assert mcnemar_exact(only_a, only_b) == pytest.approx(p)


def test_compare_says_what_b_fixed_and_broke_question_by_question(shop: Path) -> None:
    questions = [Question(f"Q{i}?", check="yes", name=f"q{i}") for i in range(4)]
    a = Variant("a", server=answers("yes", "no", "no", "no"))
    b = Variant("b", server=answers("no", "yes", "yes", "no"), closing_prompt="Say yes.")
    comparison = quiet(questions, [a, b], shop).compare("a", "b")
    assert comparison.fixed == ["q1", "q2"]
    assert comparison.broke == ["q0"]
    assert comparison.greedy
    assert (comparison.only_a, comparison.only_b, comparison.pairs) == (1, 2, 4)
    assert comparison.p_value == pytest.approx(1.0)
    summary = comparison.summary()
    assert summary.startswith("b vs a: fixed 2 (q1, q2), broke 1 (q0);")
    assert "3 of 4 questions differ (2 for b, 1 for a): exact McNemar p = 1, could be noise" in summary


def test_with_repetitions_sampled_runs_are_paired_by_seed_and_tested(shop: Path) -> None:
    questions = [Question(f"Q{i}?", check="yes", name=f"q{i}") for i in range(2)]
    # Repetition-major order: q0, q1 for repetition 0, then 1, then 2.
    a = Variant("a", server=answers(*["no"] * 6))
    b = Variant("b", server=answers(*["yes"] * 6))
    results = quiet(questions, [a, b], shop, repeat=3, temperature=0.7)
    comparison = results.compare()
    assert not comparison.greedy
    assert (comparison.only_a, comparison.only_b, comparison.pairs) == (0, 6, 6)
    assert comparison.p_value == pytest.approx(0.03125)
    assert "more than noise" in comparison.verdict()
    assert [row.b for row in comparison.rows] == [(3, 3), (3, 3)]


def test_greedy_repetitions_are_copies_and_count_once_per_question(shop: Path) -> None:
    questions = [Question("Q?", check="yes", name="q")]
    a = Variant("a", server=answers("no", "no", "no"))
    b = Variant("b", server=answers("yes", "yes", "yes"))
    comparison = quiet(questions, [a, b], shop, repeat=3).compare()
    assert comparison.greedy
    assert (comparison.only_b, comparison.pairs) == (1, 1)
    assert comparison.p_value == pytest.approx(1.0)


def test_an_unchecked_question_says_whether_the_answer_changed(shop: Path) -> None:
    results = quiet(
        ["Say hi.", "Say bye."],
        [Variant("a", server=answers("hi", "bye")), Variant("b", server=answers("hi", "ciao"))],
        shop,
    )
    assert [row.change for row in results.compare().rows] == ["same", "changed"]
    assert "answer changed in 1 unchecked (Say bye.)" in results.compare().summary()


# -- saving, resuming, stopping --------------------------------------------------------------------------


def test_results_save_and_load_with_settings_servers_and_every_reply(shop: Path, tmp_path: Path) -> None:
    read = Scripted("Let me look.", calls=(ToolCall("read_file", {"path": "app.py"}),))
    edit = Scripted("", calls=(ToolCall("edit_file", {"path": "app.py", "find": "8000", "replace": "1"}),))
    questions = [
        PORT,
        RUN,
        Question("Edit.", check=Files({"app.py": re.compile("1"), "x": None}), name="edit"),
        Question("Fn.", check=lambda reply, ws: True, name="fn"),
    ]
    server = answers(read, "Port 8000.", "npm start", edit, "Done.", "ok")
    results = quiet(questions, [Variant("v", server=server, closing_prompt="Be brief.")], shop)
    path = results.save(tmp_path / "results.json")
    data = json.loads(path.read_text())
    assert data["settings"]["version"] == "0.1.0"
    assert data["settings"]["seed"] == 0
    assert data["variants"][0]["server"] == {"kind": "scripted", "model": "scripted", "base_url": None}
    assert data["variants"][0]["effective"]["closing_prompt"] == "Be brief."
    loaded = load(path)
    assert loaded.to_json() == results.to_json()
    assert loaded._repr_mimebundle_() == results._repr_mimebundle_()
    port = loaded["port", "v"]
    assert port.reply is not None
    assert port.reply.steps[0].results[0].output.endswith("3: PORT = 8000")
    assert port.reply.requests[0].prompt_tokens == results["port", "v"].reply.requests[0].prompt_tokens
    assert loaded.compare("v", "v").summary() == results.compare("v", "v").summary()
    # What a function check was is kept by name; it cannot judge again.
    assert "<lambda>" in repr(loaded.questions[3].check)


def test_loading_something_else_says_so(tmp_path: Path) -> None:
    (tmp_path / "other.json").write_text('{"cells": []}')
    with pytest.raises(ValueError, match="Not saved experiment results"):
        load(tmp_path / "other.json")
    with pytest.raises(FileNotFoundError, match="No saved results at"):
        load(tmp_path / "missing.json")


@dataclass
class InterruptingServer(ScriptedServer):
    """Raises KeyboardInterrupt (the stop button) on the request numbered ``at``."""

    at: int = 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatEvent]:
        if len(self.requests) + 1 == self.at:
            self.requests.append(request)
            raise KeyboardInterrupt
        async for event in super().stream(request):
            yield event


def test_the_stop_button_keeps_what_finished_saves_it_and_resume_runs_the_rest(
    shop: Path, tmp_path: Path
) -> None:
    questions = [
        PORT,
        Question("Again?", check="8000", name="again"),
        Question("More?", check="8000", name="more"),
    ]
    saved = tmp_path / "partial.json"
    stopping = InterruptingServer(["8000", "8000", "8000"], at=2)
    results = quiet(questions, [Variant("v", server=stopping)], shop, save=saved)
    assert results.stopped == "interrupted"
    assert [r.question for r in results.runs] == ["port"]
    assert load(saved).runs[0].question == "port"

    rest = answers("8000", "8000")
    resumed = quiet(questions, [Variant("v", server=rest)], shop, resume=saved)
    assert len(rest.requests) == 2
    assert resumed.complete
    assert [r.question for r in resumed.runs] == ["port", "again", "more"]


def test_an_interrupt_from_outside_cancels_the_reply_and_ends_cleanly(shop: Path) -> None:
    slow = Scripted("word " * 300, delay=0.01)
    server = answers("8000", slow, "8000")
    timer = threading.Timer(0.4, _thread.interrupt_main)
    timer.start()
    results = quiet(
        [PORT, Question("Long?", name="long"), Question("Third?", name="third")],
        [Variant("v", server=server)],
        shop,
    )
    timer.join()
    assert results.stopped == "interrupted"
    assert [r.question for r in results.runs] == ["port"]


def test_resume_refuses_results_made_with_other_settings_under_the_same_names(shop: Path) -> None:
    earlier = quiet([PORT], [Variant("v", server=answers("8000"))], shop)
    with pytest.raises(ValueError, match="Question 'port' has another text or check"):
        quiet(
            [Question("Which port?", check="8000", name="port")],
            [Variant("v", server=answers())],
            shop,
            resume=earlier,
        )
    with pytest.raises(ValueError, match="Variant 'v' ran with other settings"):
        quiet([PORT], [Variant("v", server=answers(), steps=3)], shop, resume=earlier)
    with pytest.raises(ValueError, match="ran with seed 0, not 5"):
        quiet([PORT], [Variant("v", server=answers())], shop, resume=earlier, seed=5)
    other = ScriptedServer([], model="another")
    with pytest.raises(ValueError, match=r"ran on model 'scripted'.*'another'"):
        quiet([PORT], [Variant("v", server=other)], shop, resume=earlier)


def test_resume_reuses_a_variant_however_its_options_were_spelled(shop: Path) -> None:
    earlier = quiet(
        [PORT], [Variant("v", server=answers("8000"), system_prompt=Agent().settings.system_prompt)], shop
    )
    server = answers()
    again = quiet([PORT], [Variant("v", server=server)], shop, resume=earlier, extra={})
    assert server.requests == []
    assert again["port", "v"].passed


# -- what it looks like ----------------------------------------------------------------------------------

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">\x1b]52;c;aGk=\x07\x1b[31m'


def test_the_reprs_show_the_table_the_grid_the_comparison_and_each_reply(shop: Path) -> None:
    read = Scripted("Let me look.", calls=(ToolCall("read_file", {"path": "app.py"}),))
    results = quiet(
        [PORT, RUN],
        [
            Variant("a", server=answers(read, "Port 8000.", "npm")),
            Variant("b", server=answers("no", "python app.py")),
        ],
        shop,
    )
    bundle = results._repr_mimebundle_()
    text, html = bundle["text/plain"], bundle["text/html"]
    assert "2 questions × 2 variants × 1 repetition · scripted on scripted · seed 0 · 4/4 runs" in text
    assert re.search(r"a\s+1/2 \(50%\)", text)
    assert "b vs a: fixed 1 (start), broke 1 (port)" in text
    assert "<table>" in html
    assert "<details" in html  # each reply, collapsed
    assert "read_file" in html
    one = results["port", "a"]._repr_mimebundle_()
    assert "[1.0] read_file path='app.py'" in one["text/plain"]
    assert "3: PORT = 8000" in one["text/plain"]
    assert "Port 8000." in one["text/html"]
    comparison = results.compare()._repr_mimebundle_()
    assert "fixed" in comparison["text/html"]
    assert "start" in comparison["text/plain"]


def test_the_reprs_escape_hostile_questions_answers_names_and_reasons(shop: Path) -> None:
    question = Question(f"Explain {HOSTILE}", check=[Not("alert")], name=f"q{HOSTILE}")
    variant = Variant(f"v{HOSTILE}", server=answers(f"Sure: {HOSTILE}"), closing_prompt=HOSTILE)
    results = quiet([question], [variant], shop)
    run_ = results.runs[0]
    assert run_.outcome == "fail"
    for bundle in (results._repr_mimebundle_(), run_._repr_mimebundle_()):
        html, text = bundle["text/html"], bundle["text/plain"]
        assert "<script" not in html
        assert "<img" not in html
        assert "&lt;script&gt;" in html
        assert "\x1b" not in text
        assert "\x07" not in text


def test_progress_in_a_terminal_is_a_line_per_run_on_stderr(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(
        [PORT],
        [Variant("a", server=answers("8000")), Variant("b", server=answers(HOSTILE))],
        workspace=shop,
        progress="text",
    )
    err = capsys.readouterr().err
    assert "[1/2] ✓ port · a (" in err
    assert "[2/2] ✗ port · b (" in err
    assert "Done: 2 runs in" in err
    assert "\x1b" not in err


# -- the short forms -------------------------------------------------------------------------------------


def test_question_lines_carry_patterns_negations_and_comments() -> None:
    questions = parse_questions(
        "# a comment\n\nWhich port? :: \\b8000\\b\nHow to run? :: python :: !npm :: \\!bang\n"
        "Use std::vector? :: std::vector\nJust asking.\n"
    )
    assert [q.text for q in questions] == ["Which port?", "How to run?", "Use std::vector?", "Just asking."]
    assert questions[0].check == ["\\b8000\\b"]
    assert questions[1].check == ["python", Not("npm"), "!bang"]
    assert questions[2].check == ["std::vector"]
    assert questions[3].check is None
    with pytest.raises(ValueError, match="Line 1 of the cell has an empty pattern"):
        parse_questions("Which port? ::")
    with pytest.raises(ValueError, match=r"Line 2 of the cell: Question .* is not a regular expression"):
        parse_questions("ok\nBad? :: (x")


def test_options_are_keyword_arguments_with_bare_words_as_text() -> None:
    assert parse_options('closing_prompt="Be brief.", steps=4, mode=text, grammar=call-first') == {
        "closing_prompt": "Be brief.",
        "steps": 4,
        "mode": "text",
        "grammar": "call-first",
    }
    assert parse_options('tool_descriptions={"grep": hint}', {"hint": "Find PORT."}) == {
        "tool_descriptions": {"grep": "Find PORT."}
    }
    assert parse_options("") == {}
    for bad, said in [("steps=", "Cannot read"), ("4", "name=value"), ("x=1/0", "ZeroDivisionError")]:
        with pytest.raises(ValueError, match=said):
            parse_options(bad, {})


@pytest.fixture
def ip(shop: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    shell = start_ipython() or InteractiveShell.instance()
    shell.config.pop("TwinnyMagics", None)
    monkeypatch.chdir(shop)
    shell.extension_manager.load_extension("twinny_magics")
    yield shell
    shell.extension_manager.unload_extension("twinny_magics")
    shell.config.pop("TwinnyMagics", None)
    for name in ("s", "short"):
        shell.user_ns.pop(name, None)


def test_agent_compare_runs_the_cells_questions_under_two_variants(ip: InteractiveShell) -> None:
    server = ScriptedServer(["Port 8000.", "8000 it is.", "Run npm.", "python app.py"])
    ip.user_ns["s"] = Agent(server=server, workspace=Path.cwd(), steps=3)
    ip.user_ns["short"] = "Answer in a sentence."
    with capture_output():
        ip.run_line_magic("agent", "use s")
    with capture_output() as captured:
        results = ip.run_cell_magic(
            "agent",
            "compare --b 'closing_prompt=short' --names default,short --seed 3",
            "Which port? :: 8000\nHow do I run it? :: python app\\.py :: !npm\n",
        )
    assert isinstance(results, Results)
    assert results.names == ["default", "short"]
    assert results.variants[1].options == {"closing_prompt": "Answer in a sentence."}
    assert [r.outcome for r in results.runs] == ["pass", "pass", "fail", "pass"]
    assert results.compare().summary().startswith("short vs default: fixed 1 (How do I run it?), broke 0")
    assert all(r.extra["seed"] == 3 and r.temperature == 0.0 for r in server.requests)
    assert "Done: 4 runs" in captured.stderr  # a terminal shell: the progress lines on stderr


def test_agent_compare_refuses_what_it_cannot_read(ip: InteractiveShell) -> None:
    ip.user_ns["s"] = Agent(server=ScriptedServer([]), workspace=Path.cwd())
    with capture_output():
        ip.run_line_magic("agent", "use s")
    for line, cell, said in [
        ("compare", "Q? :: x", "Say what to compare"),
        ("compare --b 'closing=1'", "Q? :: x", "no option 'closing'"),
        ("compare --b 'steps=2'", "# only a comment", "No questions"),
        ("compare --b 'steps=2' --names one", "Q?", "give two different names"),
        ("compare --b 'steps=2' --frobnicate", "Q?", "unrecognized arguments"),
    ]:
        with pytest.raises(UsageError, match=said):
            ip.run_cell_magic("agent", line, cell)


def test_the_help_documents_compare(ip: InteractiveShell) -> None:
    doc = ip.object_inspect("%%agent")["docstring"]
    assert "%%agent compare --b OPTIONS [--a OPTIONS]" in doc
    assert "Which port? :: 8000" in doc
    assert "McNemar" in doc


# -- measured --------------------------------------------------------------------------------------------


def test_the_harness_costs_little_next_to_a_reply(shop: Path) -> None:
    questions = [Question(f"Q{i}?", check="8000", name=f"q{i}") for i in range(20)]
    direct_server = answers(*["8000"] * 20)
    started = time.perf_counter()
    for question in questions:
        Agent(server=direct_server, workspace=shop, edits="apply").run(question.text)
    direct = time.perf_counter() - started
    started = time.perf_counter()
    quiet(questions, [Variant("v", server=answers(*["8000"] * 20))], shop)
    harness = time.perf_counter() - started
    overhead_ms = (harness - direct) / len(questions) * 1000
    print(f"\nharness overhead: {overhead_ms:.2f} ms a run ({direct * 50:.2f} ms a scripted reply)")
    assert overhead_ms < 50


# -- the real server -------------------------------------------------------------------------------------


SMALL = {"steps": 2, "extra": {"max_tokens": 24}}


@pytest.mark.server
def test_the_same_seeded_run_twice_gives_identical_results_on_llama_cpp(
    llama_server: Any, shop: Path
) -> None:
    questions = [PORT, RUN]
    variants = [
        Variant("greedy"),
        Variant("sampled", temperature=0.9, closing_prompt="Answer in a sentence."),
    ]
    options = {"base_url": llama_server.base_url, "kind": "llamacpp", **SMALL}
    first = quiet(questions, variants, shop, **options)
    # The second time in another order, so every run finds the prompt cache as another run left it.
    second = quiet(list(reversed(questions)), list(reversed(variants)), shop, **options)

    def record(results: Results) -> dict[tuple[str, str, int], Any]:
        return {
            r.key: (
                r.outcome,
                r.answer,
                [(c.name, c.arguments) for s in r.reply.steps for c in s.calls] if r.reply else None,
                [(q.prompt_tokens, q.completion_tokens) for q in r.reply.requests] if r.reply else None,
            )
            for r in results.runs
        }

    assert record(first) == record(second)
    assert all(r.outcome != "error" for r in first.runs)
    assert first.servers["greedy"]["kind"] == "llamacpp"
    assert first.servers["greedy"]["model"] == "smollm2"
    assert first.runs[0].prompt_tokens > 0
    assert first.runs[0].reply is not None
    assert first.runs[0].reply.requests[0].cached_tokens in (0, None)  # the first request skipped the cache
    html = first._repr_mimebundle_()["text/html"]
    assert "smollm2 on llamacpp" in html
    assert "<details" in html


@pytest.mark.server
def test_agent_compare_and_the_command_line_run_on_llama_cpp(
    llama_server: Any, ip: InteractiveShell, shop: Path, tmp_path: Path
) -> None:
    line = (
        f"compare --server {llama_server.base_url} --kind llamacpp --steps 2 --save {tmp_path / 'r.json'} "
        '--a \'extra={"max_tokens": 24}\' --b \'extra={"max_tokens": 24}, closing_prompt="Answer briefly."\''
    )
    with capture_output():
        results = ip.run_cell_magic("agent", line, "Which port does app.py listen on? :: 8000\n")
    assert [r.outcome for r in results.runs if r.outcome == "error"] == []
    assert len(results.runs) == 2
    assert load(tmp_path / "r.json").to_json() == results.to_json()
    text = results._repr_mimebundle_()["text/plain"]
    assert "smollm2 on llamacpp" in text
    assert "B vs A" in text

    questions = tmp_path / "questions.txt"
    questions.write_text("Which port does app.py listen on? :: 8000\n")
    command = [
        sys.executable,
        "-m",
        "twinny_magics.experiment",
        str(questions),
        "--server",
        llama_server.base_url,
        "--steps",
        "2",
        "--workspace",
        str(shop),
        "--json",
        "--a",
        'extra={"max_tokens": 24}',
        "--b",
        'extra={"max_tokens": 24}, closing_prompt="Answer briefly."',
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [v["name"] for v in data["variants"]] == ["A", "B"]
    assert len(data["runs"]) == 2
    assert "[2/2]" in done.stderr
    # The same seeded runs as the magic's: the command line and the notebook agree.
    assert [r["reply"]["text"] for r in data["runs"]] == [r.answer for r in results.runs]
