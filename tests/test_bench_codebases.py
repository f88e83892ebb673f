"""The task benchmark's code bases (``benchmarks/tasks_all.py`` and its ``tasks_*.py``) and its sessions.

Every code base's source is a pinned PyPI sdist that ``scripts/setup.sh`` (``setup_bench_sources``) puts
in the cache; without it these tests fail and say so. Each task's check is tried before any model meets
it: its reference and other right phrasings pass; the question's own text, "I don't know", plausible
wrong answers and, for counts and lines, the numbers next to the right one fail; an edit passes only as
the intended change (every step of a multi-step edit) and fails untouched, half done, done elsewhere or
with a junk file beside it. The session runner is tried on the package's scripted model: no model runs
here, and none ever runs on the held-out code base except to report.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from twinny_magics.conversation import ToolCall
from twinny_magics.events import Reply
from twinny_magics.experiment import Question
from twinny_magics.servers.scripted import Scripted, ScriptedServer

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_tasks  # noqa: E402 - the benchmarks folder is not a package
import tasks_all  # noqa: E402
import tasks_common  # noqa: E402
import tasks_cookiecutter  # noqa: E402
import tasks_litecli  # noqa: E402
import tasks_sqlite_utils  # noqa: E402
import tasks_yamllint  # noqa: E402
from bench_ranking import file_view  # noqa: E402
from tasks_common import Answer, Edit, Task  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[Task]]]:
    """Every code base's workspace, unpacked from the cache, and its tasks."""
    out = {}
    for name, codebase in tasks_all.CODEBASES.items():
        try:
            root = codebase.workspace(tmp_path_factory.mktemp(name) / "workspace")
        except tasks_common.SourceMissing as error:
            pytest.fail(str(error))
        out[name] = (root, codebase.tasks(root))
    return out


def every_task(built: dict[str, tuple[Path, list[Task]]]) -> Iterator[tuple[str, Path, Task]]:
    for name, (root, tasks) in built.items():
        for task in tasks:
            yield name, root, task


def judged(task: Task, text: str, root: Path) -> bool:
    return task.as_question().judge(Reply(question=task.question, text=text), root, []).passed


# -- the sources -------------------------------------------------------------------------------------------


def test_every_code_base_is_a_pinned_sdist_with_an_open_licence_and_none_is_stored_in_the_repo() -> None:
    shapes = {c.split for c in tasks_all.CODEBASES.values()}
    assert shapes == {"dev", "heldout"}
    assert [c.name for c in tasks_all.CODEBASES.values() if c.split == "heldout"] == ["sqlite_utils"]
    assert tasks_all.CODEBASES["litecli"].split == "dev"  # the held-out one of the rounds before yamllint
    assert tasks_all.CODEBASES["yamllint"].split == "dev"  # held out until its failures were read
    assert tasks_all.CODEBASES["cookiecutter"].split == "dev"
    assert tasks_all.CODEBASES["sqlite_utils"].licence == "Apache-2.0"
    assert tasks_all.CODEBASES["sqlite_utils"].pin.file == "sqlite_utils-3.37.tar.gz"
    for codebase in tasks_all.CODEBASES.values():
        assert len(codebase.pin.sha256) == 64
        assert codebase.licence in ("MIT", "BSD-3-Clause", "GPL-3.0-or-later", "Apache-2.0")
        assert codebase.pin.cached().name == codebase.pin.file
    # The sources are fetched and unpacked at run time (yamllint's GPL code included), never committed.
    tracked = subprocess.run(
        ["git", "ls-files", "*.tar.gz", "yamllint/*", "*/yamllint/*", "sqlite_utils/*", "*/sqlite_utils/*"],
        cwd=BENCHMARKS.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert tracked.returncode != 0 or tracked.stdout == ""


def test_the_sdists_hold_what_their_shape_needs(built: dict[str, tuple[Path, list[Task]]]) -> None:
    pluggy = built["pluggy"][0]
    assert (pluggy / "CHANGELOG.rst").is_file()
    assert (pluggy / "docs" / "index.rst").is_file()
    mapclassify = built["mapclassify"][0]
    assert len(list((mapclassify / "notebooks").glob("*.ipynb"))) == 8
    litecli = built["litecli"][0]
    assert (litecli / "litecli" / "liteclirc").is_file()
    assert "@click.command()" in (litecli / "litecli" / "main.py").read_text()
    cookiecutter = built["cookiecutter"][0]
    assert len(list((cookiecutter / "tests" / "test-config").glob("*.yaml"))) == 8
    assert "import yaml" in (cookiecutter / "cookiecutter" / "config.py").read_text()
    assert "@click.command(" in (cookiecutter / "cookiecutter" / "cli.py").read_text()
    assert len((cookiecutter / "HISTORY.md").read_text().splitlines()) == 1106
    yamllint = built["yamllint"][0]
    assert (yamllint / "yamllint" / "conf" / "default.yaml").is_file()
    assert (yamllint / "yamllint" / "conf" / "relaxed.yaml").is_file()
    assert "argparse.ArgumentParser(" in (yamllint / "yamllint" / "cli.py").read_text()
    assert len(list((yamllint / "yamllint" / "rules").glob("*.py"))) == 25  # 23 rules, common, __init__
    sqlite_utils = built["sqlite_utils"][0]
    assert len((sqlite_utils / "sqlite_utils" / "db.py").read_text().splitlines()) == 3858
    assert "@click.group(\n    cls=DefaultGroup," in (sqlite_utils / "sqlite_utils" / "cli.py").read_text()
    assert (sqlite_utils / "sqlite_utils" / "hookspecs.py").is_file()
    assert (sqlite_utils / "docs" / "changelog.rst").is_file()
    assert (sqlite_utils / "docs" / "cli-reference.rst").is_file()
    assert len((sqlite_utils / "tests" / "test_cli.py").read_text().splitlines()) == 2438


def test_a_cached_sdist_that_is_not_the_pinned_file_is_refused(tmp_path: Path) -> None:
    pin = tasks_all.CODEBASES["litecli"].pin
    with pytest.raises(tasks_common.SourceMissing, match="is not in"):
        pin.cached(tmp_path)
    shutil.copy(pin.cached(), tmp_path / pin.file)
    assert pin.cached(tmp_path) == tmp_path / pin.file
    with (tmp_path / pin.file).open("ab") as file:
        file.write(b"\0")
    with pytest.raises(tasks_common.SourceMissing, match="is not the pinned"):
        pin.cached(tmp_path)


def _tar(members: list[tuple[str, bytes | None, str | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                archive.addfile(info)
            else:
                info.size = len(data or b"")
                archive.addfile(info, io.BytesIO(data or b""))
    return buffer.getvalue()


def test_unpacking_takes_regular_files_only_and_refuses_a_path_outside_its_folder(tmp_path: Path) -> None:
    pin = tasks_common.Sdist("demo", "1.0", "0" * 64)
    good = tmp_path / "good.tar.gz"
    good.write_bytes(_tar([("demo-1.0/a/b.py", b"x = 1\n", None), ("demo-1.0/link", None, "/etc/passwd")]))
    root = pin.unpack(good, tmp_path / "out")
    assert (root / "a" / "b.py").read_text() == "x = 1\n"
    assert not (root / "link").exists()
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(_tar([("demo-1.0/../escaped.py", b"boom", None)]))
    with pytest.raises(ValueError, match="outside its folder"):
        pin.unpack(bad, tmp_path / "out2")
    assert not (tmp_path / "escaped.py").exists()


# -- the tasks ---------------------------------------------------------------------------------------------


def test_the_benchmark_has_enough_tasks_and_a_held_out_part_of_every_kind(
    built: dict[str, tuple[Path, list[Task]]],
) -> None:
    total = sum(len(tasks) for _, tasks in built.values())
    heldout = built["sqlite_utils"][1]
    assert total >= tasks_all.MIN_TASKS
    assert len(heldout) >= tasks_all.MIN_HELDOUT_TASKS
    assert {t.kind for t in heldout} == set(tasks_common.KINDS)
    new = {"multi-hop", "exact", "file-count", "multi-edit"}
    dev_kinds = {t.kind for name, (_, tasks) in built.items() if name != "sqlite_utils" for t in tasks}
    assert new <= dev_kinds
    assert {t.kind for t in built["yamllint"][1]} == set(tasks_common.KINDS)  # development now
    for _, tasks in built.values():
        assert len({t.name for t in tasks}) == len(tasks)
        assert all(len(t.edits) >= 2 for t in tasks if t.kind == "multi-edit")


def test_every_right_answer_passes(built: dict[str, tuple[Path, list[Task]]]) -> None:
    failed = [
        (name, task.name, text)
        for name, root, task in every_task(built)
        if isinstance(task.check, Answer)
        for text in task.right
        if task.check.grade(text) is not True or not judged(task, text, root)
    ]
    assert not failed
    assert all(len(t.right) >= 2 for _, _, t in every_task(built) if isinstance(t.check, Answer))


def test_the_question_itself_i_dont_know_and_every_plausible_wrong_answer_fail(
    built: dict[str, tuple[Path, list[Task]]],
) -> None:
    passed = [
        (name, task.name, text)
        for name, root, task in every_task(built)
        if isinstance(task.check, Answer)
        for text in (task.question, tasks_common.IDK, "", *task.wrong)
        if task.check.grade(text) is True or judged(task, text, root)
    ]
    assert not passed
    assert all(1 <= len(t.wrong) <= 3 for _, _, t in every_task(built) if isinstance(t.check, Answer))


def test_a_computed_count_or_line_fails_one_off_either_way(built: dict[str, tuple[Path, list[Task]]]) -> None:
    checked = 0
    for _, _, task in every_task(built):
        if task.kind not in ("count", "file-count", "line") or not isinstance(task.check, Answer):
            continue
        n = int(task.check.right[0].label)
        assert task.check.grade(f"The answer is {n}.") is True, task.name
        assert task.check.grade(f"The answer is {n - 1}.") is not True, task.name
        assert task.check.grade(f"The answer is {n + 1}.") is not True, task.name
        checked += 1
    assert checked >= 15


def test_a_reply_that_did_not_answer_fails_even_when_its_steps_found_the_answer(
    built: dict[str, tuple[Path, list[Task]]],
) -> None:
    root, tasks = built["pluggy"]
    task = next(t for t in tasks if t.name == "locate-PluginValidationError")
    # Every reply the loop writes in place of the model's: a call as the answer, nothing found, an answer
    # that did not rest on what the model read (SmolLM2's honest reply quotes what was found).
    leads = tasks_common.no_answer_prefix()
    assert len(leads) == 3
    for lead in leads:
        summary = f"{lead} What its steps found:\n- src/pluggy/_manager.py:49"
        assert task.check.grade(summary) is True
        assert not judged(task, summary, root)


def test_each_edit_passes_only_as_the_intended_change(
    built: dict[str, tuple[Path, list[Task]]], tmp_path: Path
) -> None:
    problems = []
    for number, (name, root, task) in enumerate(every_task(built)):
        if task.kind not in tasks_common.EDIT_KINDS:
            continue
        assert task.edit is not None
        assert task.wrong_edits
        question = task.as_question()

        def judge(
            edits: tuple[Edit, ...],
            label: str,
            n: int = number,
            source: Path = root,
            question: Question = question,
        ) -> bool:
            copy = tmp_path / f"{n}-{label}"
            shutil.copytree(source, copy)
            changed = tasks_common.apply_edits(copy, edits)
            return question.judge(Reply(question=question.text, text="Done."), copy, changed).passed

        if not judge(task.edits, "reference"):
            problems.append(f"{name}/{task.name}: the reference edit fails")
        if judge((), "untouched"):
            problems.append(f"{name}/{task.name}: the untouched workspace passes")
        for index, wrong in enumerate(task.wrong_edits):
            if judge(tuple(wrong), f"wrong{index}"):
                problems.append(f"{name}/{task.name}: wrong edit {index} passes")
        if judge((*task.edits, Edit("junk.txt", "", "junk")), "junk"):
            problems.append(f"{name}/{task.name}: the edit with a junk file beside it passes")
        if len(task.edits) > 1 and judge(task.edits[:-1], "half"):
            problems.append(f"{name}/{task.name}: the multi-step edit half done passes")
    assert not problems


def test_several_changes_to_one_file_must_all_be_made_and_nothing_else() -> None:
    text = "a = 1\nb = 2\nc = 3\n"
    pattern = tasks_common.edits_pattern(text, [("c = 3", r"c = 30"), ("a = 1", r"a = 10")])
    assert pattern.search("a = 10\nb = 2\nc = 30\n")
    assert not pattern.search("a = 10\nb = 2\nc = 3\n")
    assert not pattern.search("a = 10\nb = 20\nc = 30\n")
    with pytest.raises(ValueError, match="overlaps"):
        tasks_common.edits_pattern(text, [("a = 1\nb", "x"), ("1\nb = 2", "y")])


def test_the_litecli_notebook_outputs_are_what_its_cells_give(
    built: dict[str, tuple[Path, list[Task]]],
) -> None:
    # litecli's package needs click and prompt_toolkit; the notebook uses one stdlib-only module of it,
    # loaded from the workspace under its own name with empty parent packages.
    prelude = (
        "import types, importlib.util\n"
        "for name in ('litecli', 'litecli.packages', 'litecli.packages.special'):\n"
        "    sys.modules[name] = types.ModuleType(name)\n"
        "spec = importlib.util.spec_from_file_location('litecli.packages.special.utils',\n"
        "    'litecli/packages/special/utils.py')\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "sys.modules['litecli.packages.special.utils'] = module\n"
    )
    expected = [output for kind, _, output in tasks_litecli.NOTEBOOK_CELLS if kind == "code"]
    assert tasks_common.cell_outputs(built["litecli"][0], tasks_litecli.NOTEBOOK_CELLS, prelude) == expected


def test_every_development_task_says_where_its_answer_stands_on_lines_that_exist(
    built: dict[str, tuple[Path, list[Task]]],
) -> None:
    # What bench_ranking measures: litecli's and cookiecutter's tasks each have a place, and every place
    # resolves to lines of its file as the tools show it (the held-out code base is not looked at).
    for name in ("litecli", "cookiecutter"):
        root, tasks = built[name]
        assert all(task.where for task in tasks), name
        for task in tasks:
            for where in task.where:
                assert where.lines(file_view(root, where.path)), (name, task.name)


@pytest.mark.parametrize(
    "name",
    [
        # cookiecutter/config.py needs PyYAML alone (pinned in requirements/test.txt; the package's jinja2,
        # rich and the rest are not imported); it is imported from the workspace.
        "cookiecutter",
        # yamllint needs PyYAML and pathspec (both pinned in requirements/test.txt); the package itself is
        # imported from the workspace (the current folder), not installed.
        "yamllint",
        # sqlite_utils needs sqlite-fts4, click, python-dateutil and pluggy (all pinned in
        # requirements/test.txt; its cli.py, which needs more, is not imported); imported from the workspace.
        "sqlite_utils",
    ],
)
def test_the_notebook_outputs_are_what_its_cells_give(
    built: dict[str, tuple[Path, list[Task]]], name: str
) -> None:
    module = {
        "cookiecutter": tasks_cookiecutter,
        "yamllint": tasks_yamllint,
        "sqlite_utils": tasks_sqlite_utils,
    }[name]
    root = built[name][0]
    expected = [output for kind, _, output in module.NOTEBOOK_CELLS if kind == "code"]
    assert tasks_common.cell_outputs(root, module.NOTEBOOK_CELLS) == expected
    notebook = tasks_common.notebook_cells(root / module.NOTEBOOK)
    assert [c["cell_type"] for c in notebook] == [k for k, _, _ in module.NOTEBOOK_CELLS]


def test_code_bases_are_picked_by_name_or_set_held_out_first_and_an_unknown_one_is_refused() -> None:
    dev = ["toolz", "pluggy", "mapclassify", "litecli", "cookiecutter", "yamllint"]
    assert [c.name for c in tasks_all.pick(None, "all")] == ["sqlite_utils", *dev]
    assert [c.name for c in tasks_all.pick(None, "dev")] == dev
    assert [c.name for c in tasks_all.pick(None, "heldout")] == ["sqlite_utils"]
    assert [c.name for c in tasks_all.pick("pluggy,sqlite_utils", None)] == ["sqlite_utils", "pluggy"]
    assert [c.name for c in tasks_all.pick("yamllint,pluggy", None)] == ["pluggy", "yamllint"]
    assert [c.name for c in tasks_all.pick("litecli,pluggy", None)] == ["pluggy", "litecli"]
    assert tasks_all.pick("pluggy", "heldout") == []
    assert tasks_all.pick("litecli", "heldout") == []
    assert tasks_all.pick("yamllint", "heldout") == []
    with pytest.raises(ValueError, match="no code base nope"):
        tasks_all.pick("nope", None)


def test_tasks_are_picked_across_code_bases_and_a_word_no_code_base_knows_is_refused(
    built: dict[str, tuple[Path, list[Task]]],
) -> None:
    pluggy, litecli = built["pluggy"][1], built["litecli"][1]
    names = {t.name for t in pluggy} | {t.name for t in litecli}
    picked = bench_tasks.pick_tasks(pluggy, "exact,locate-SQLExecute", False, names)
    assert {t.kind for t in picked} == {"exact"}
    assert [t.name for t in bench_tasks.pick_tasks(litecli, "locate-SQLExecute", False, names)] == [
        "locate-SQLExecute"
    ]
    with pytest.raises(ValueError, match="no task or kind named nope"):
        bench_tasks.pick_tasks(pluggy, "nope", False, names)


# -- sessions ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Address:
    base_url: str = "http://127.0.0.1:9"
    api_key: str | None = None


@dataclass
class AddressedScripted(ScriptedServer):
    """The scripted model behind an address, so that what ``auto`` learns of it is remembered."""

    info: _Address = _Address()


def _text_call(path: str) -> str:
    return '<tool_call>\n{"name": "read_file", "arguments": {"path": "' + path + '"}}\n</tool_call>'


def _pluggy_tasks(built: dict[str, tuple[Path, list[Task]]], *names: str) -> tuple[Path, list[Task]]:
    root, tasks = built["pluggy"]
    return root, [t for t in tasks if t.name in names]


def test_a_session_keeps_what_auto_learned_between_questions_and_fresh_runs_do_not(
    built: dict[str, tuple[Path, list[Task]]], tmp_path: Path
) -> None:
    modes = pytest.importorskip("twinny_magics.modes")
    root, chosen = _pluggy_tasks(built, "locate-PluginValidationError", "locate-HookCallError")
    modes.LEARNED_MODES.remember(
        ("http://127.0.0.1:1", "other"), modes.ModeChoice("text", "an earlier process")
    )

    def script() -> AddressedScripted:
        # A server that refuses native tools (auto switches to text and keeps that for the process): the
        # first question's call, then its answer; the second: answered at once.
        return AddressedScripted(
            [_text_call("src/pluggy/_manager.py"), "src/pluggy/_manager.py", "src/pluggy/_result.py"],
            window=100_000,
            refuse_tools=True,
        )

    server = script()
    results = bench_tasks.session(
        chosen, ["defaults"], workspace=root, server_options={"server": server}, record=tmp_path / "s.json"
    )
    assert [r.outcome for r in results.runs] == ["pass", "pass"]
    assert server.requests[0].tools  # the first question of the session starts native (refused)
    assert sum(bool(r.tools) for r in server.requests) == 1  # the second starts where the first left: text
    assert modes.LEARNED_MODES.get(("http://127.0.0.1:1", "other")) is None  # a new process forgot it
    fresh_server = script()
    fresh = bench_tasks.bench(
        chosen,
        ["defaults"],
        workspace=root,
        server_options={"server": fresh_server},
        record=tmp_path / "f.json",
    )
    assert [r.outcome for r in fresh.runs] == ["pass", "pass"]
    # Each fresh run starts with nothing learned: native again (and refused again).
    assert sum(bool(r.tools) for r in fresh_server.requests) == 2
    modes.LEARNED_MODES.clear()


def test_a_session_undoes_each_questions_edits_before_the_next_and_judges_them_first(
    built: dict[str, tuple[Path, list[Task]]], tmp_path: Path
) -> None:
    root, chosen = _pluggy_tasks(built, "value-python-requires", "edit-python-requires")
    chosen.reverse()  # the edit first, then a question about the value it changed
    edit = ToolCall(
        "edit_file",
        {"path": "setup.cfg", "find": "python_requires = >=3.8", "replace": "python_requires = >=3.9"},
    )
    server = ScriptedServer([Scripted("", (edit,)), "Done.", "Python 3.8 or newer."], window=100_000)
    results = bench_tasks.session(
        chosen, ["defaults"], workspace=root, server_options={"server": server}, record=tmp_path / "s.json"
    )
    runs = {r.question: r for r in results.runs}
    assert runs["edit-python-requires"].changed == ["M setup.cfg"]
    assert runs["edit-python-requires"].outcome == "pass"
    assert runs["value-python-requires"].changed == []
    assert runs["value-python-requires"].outcome == "pass"
    assert "python_requires = >=3.8" in (root / "setup.cfg").read_text()  # the source folder is untouched


def test_a_stopped_session_resumes_at_its_first_question_not_done_and_says_so(
    built: dict[str, tuple[Path, list[Task]]], tmp_path: Path
) -> None:
    root, chosen = _pluggy_tasks(
        built, "locate-PluginValidationError", "locate-HookCallError", "value-python-requires"
    )
    record = tmp_path / "s.json"
    # The scripted model runs out after the first question: the others err (a server error is not a
    # failure, and resuming runs it again).
    first = bench_tasks.session(
        chosen,
        ["defaults"],
        workspace=root,
        server_options={"server": ScriptedServer(["src/pluggy/_manager.py"], window=100_000)},
        record=record,
    )
    assert [r.outcome for r in first.runs] == ["pass", "error", "error"]
    again = bench_tasks.session(
        chosen,
        ["defaults"],
        workspace=root,
        server_options={"server": ScriptedServer(["_result.py", "3.8"], window=100_000)},
        record=record,
        resume=True,
    )
    assert [(r.question, r.outcome) for r in again.runs] == [
        ("locate-PluginValidationError", "pass"),
        ("locate-HookCallError", "pass"),
        ("value-python-requires", "pass"),
    ]
    assert again.settings["restarted_at"] == {"defaults": "locate-HookCallError"}
    summary = bench_tasks.summarise(again, chosen, ["defaults"])
    assert summary["configs"]["defaults"]["passed"] == 3
    assert summary["runs_done"] == 3


def test_a_session_record_of_other_questions_is_not_resumed(
    built: dict[str, tuple[Path, list[Task]]], tmp_path: Path
) -> None:
    root, chosen = _pluggy_tasks(built, "locate-PluginValidationError")
    record = tmp_path / "s.json"
    bench_tasks.session(
        chosen,
        ["defaults"],
        workspace=root,
        server_options={"server": ScriptedServer(["_manager.py"], window=100_000)},
        record=record,
    )
    saved = json.loads(record.read_text())
    saved["questions"][0]["text"] = "Another question?"
    record.write_text(json.dumps(saved))
    with pytest.raises(SystemExit, match="changed since"):
        bench_tasks.session(
            chosen,
            ["defaults"],
            workspace=root,
            server_options={"server": ScriptedServer([])},
            record=record,
            resume=True,
        )


def test_code_base_runs_are_stored_by_code_base_set_mode_model_window_and_commit_and_shown_held_out_first(
    built: dict[str, tuple[Path, list[Task]]], tmp_path: Path
) -> None:
    root, chosen = _pluggy_tasks(built, "locate-PluginValidationError", "locate-HookCallError")
    results = bench_tasks.session(
        chosen,
        ["defaults"],
        workspace=root,
        server_options={"server": ScriptedServer(["_manager.py", "_callers.py"], window=100_000)},
        record=tmp_path / "s.json",
    )
    summary = bench_tasks.summarise(results, chosen, ["defaults"])
    assert summary["configs"]["defaults"]["passed"] == 1
    assert summary["configs"]["defaults"]["seconds_per_pass"] is not None
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"latest": "old", "runs": {"old": {"configs": {}, "by_kind": {}}}}))
    for codebase, split in (("pluggy", "dev"), ("sqlite_utils", "heldout")):
        for mode in ("fresh", "session"):
            entry = {
                **summary,
                "codebase": codebase,
                "set": split,
                "mode": mode,
                "model": "m",
                "window": 4096,
            }
            entry["selection"] = "full"
            key = bench_tasks.codebase_key(
                codebase, split, mode, model="m", window=4096, selection="full", commit="abc1234"
            )
            bench_tasks.store(key, entry, path)
    stored = bench_tasks.stored_codebase_runs("m", 4096, path)
    assert len(stored) == 4
    assert "sqlite_utils (heldout), session, m, window 4096, full, at abc1234" in stored
    assert "old" in json.loads(path.read_text())["runs"]  # the toolz runs from before stay readable
    text = bench_tasks.overview(stored)
    rows = [line.split()[0] for line in text.splitlines()[2:6]]
    assert rows == ["sqlite_utils", "sqlite_utils", "pluggy", "pluggy"]
    assert "heldout  defaults         1/2       1/2" in text
    assert "Passed per kind" in text


def test_setup_fetches_every_code_base_quietly_once_cached() -> None:
    root = BENCHMARKS.parent
    done = subprocess.run(
        ["bash", "-c", "source scripts/setup.sh && setup_bench_sources"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == ""


@pytest.mark.parametrize("session", [False, True])
def test_a_code_base_run_from_the_command_line_prints_its_table_and_the_overview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], session: bool
) -> None:
    @contextmanager
    def scripted(args: object) -> Iterator[tuple[dict[str, object], str]]:
        yield {"server": ScriptedServer(["src/pluggy/_manager.py"], window=100_000)}, "scripted"

    monkeypatch.setattr(bench_tasks, "serving", scripted)
    argv = ["--codebase", "pluggy", "--tasks", "locate-PluginValidationError", "--no-store"]
    argv += ["--record", str(tmp_path / "record.json")] + (["--session"] if session else [])
    ran = bench_tasks.bench_from_args(bench_tasks.parser().parse_args(argv))
    (key, entry), *_ = ran["runs"].items()
    mode = "session" if session else "fresh"
    assert key.startswith(f"pluggy (dev), {mode}, scripted, window 100000, partial-")
    assert (entry["codebase"], entry["set"], entry["mode"]) == ("pluggy", "dev", mode)
    assert entry["configs"]["defaults"]["passed"] == 1
    shown = capsys.readouterr().out
    assert "pluggy 1.5.0 (dev, " in shown
    assert "By code base (held-out first)" in shown
