"""An experiment's ``Files`` check reads only files inside the run's copy: a symbolic link (in the
workspace, or made by a run's command), a hard link or a named pipe is never read through, and the
verdict says why; the copy's snapshot does not hang on a pipe a run made.

Real files, links and FIFOs; scripted models through the real experiment runner.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

from twinny_magics.conversation import ToolCall
from twinny_magics.experiment import Files, Question, Results, Variant, checks, run
from twinny_magics.experiment.copies import changes, snapshot
from twinny_magics.servers.scripted import Scripted, ScriptedServer

SECRET = "-----BEGIN OPENSSH PRIVATE KEY-----\nsecretkeymaterial\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace holding a private key (as ``~/.ssh`` would)."""
    folder = tmp_path / "home" / ".ssh"
    folder.mkdir(parents=True)
    (folder / "id_rsa").write_text(SECRET)
    return folder


@pytest.fixture
def shop(tmp_path: Path, outside: Path) -> Path:
    folder = tmp_path / "shop"
    folder.mkdir()
    (folder / "app.py").write_text("PORT = 8000\n")
    (folder / "config.txt").symlink_to(outside / "id_rsa")  # a link the workspace came with
    (folder / "keys").symlink_to(outside, target_is_directory=True)
    return folder


def experiment(check: Files, workspace: Path, *replies: Scripted | str, **options: object) -> Results:
    question = Question("Look at the files.", check=check, name="q")
    server = ScriptedServer(list(replies) or ["Done."])
    return run([question], [Variant("v", server=server, **options)], workspace=workspace, progress="off")


def test_a_link_in_the_workspace_is_not_read_through_and_the_verdict_says_so(shop: Path) -> None:
    results = experiment(Files({"config.txt": "PORT = 9000\n"}), shop)
    record = results["q", "v"]
    assert record.outcome == "fail"
    assert "secretkeymaterial" not in record.why
    assert "config.txt is a symbolic link" in record.why
    assert "does not follow links" in record.why
    shown = results._repr_mimebundle_()
    assert not any("secretkeymaterial" in text for text in shown.values())
    assert "secretkeymaterial" not in str(results.to_json())


def test_a_path_through_a_linked_folder_is_not_read(shop: Path) -> None:
    results = experiment(Files({"keys/id_rsa": "nothing\n"}), shop)
    record = results["q", "v"]
    assert record.outcome == "fail"
    assert "secretkeymaterial" not in record.why
    assert "keys/id_rsa goes through keys, a link" in record.why
    # A file that must not exist, behind a link: the check cannot see inside the copy there, so it fails.
    gone = experiment(Files({"keys/id_rsa": None}), shop)["q", "v"]
    assert gone.outcome == "fail"
    assert "goes through keys, a link" in gone.why


def test_a_link_a_runs_command_makes_is_not_read_through(tmp_path: Path, outside: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "app.py").write_text("PORT = 8000\n")
    make_link = Scripted(
        "", calls=(ToolCall("run_command", {"command": f"ln -s {outside / 'id_rsa'} made.txt"}),)
    )
    results = experiment(
        Files({"made.txt": "PORT = 9000\n"}, others_unchanged=False),
        plain,
        make_link,
        "Done.",
        commands="allow",
    )
    record = results["q", "v"]
    assert "A made.txt" in record.changed, record.changed  # the command ran in the copy
    assert record.outcome == "fail"
    assert "secretkeymaterial" not in record.why
    assert "made.txt is a symbolic link" in record.why


def test_a_hard_link_to_a_file_outside_is_not_read(tmp_path: Path, outside: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    os.link(outside / "id_rsa", copy / "key.txt")
    verdict = Files({"key.txt": "x\n"}).judge(copy, [])
    assert not verdict.passed
    assert "secretkeymaterial" not in verdict.why
    assert "hard links" in verdict.why


def test_a_named_pipe_is_not_opened_and_a_regular_file_still_is(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    (copy / "sub").mkdir(parents=True)
    os.mkfifo(copy / "pipe")
    (copy / "sub" / "a.py").write_text("x = 1\n")
    assert checks.read_inside(copy, "sub/a.py").text == "x = 1\n"
    assert checks.read_inside(copy, "sub/nothing.py").kind == "missing"
    assert checks.read_inside(copy, "a.py/below").kind == "missing"
    pipe = checks.read_inside(copy, "pipe")
    assert (pipe.kind, pipe.text) == ("refused", None)
    assert "not a regular file" in pipe.why
    verdict = Files({"sub/a.py": re.compile("x = 1"), "pipe": None}).judge(copy, [])
    assert not verdict.passed
    assert verdict.why == "pipe should not exist: it is not a regular file"


@pytest.mark.parametrize("path", ["/etc/passwd", "../up.txt", "a/../../up.txt", "a\\..\\..\\up", "a\x00b"])
def test_a_check_names_only_paths_inside_the_copy(path: str) -> None:
    with pytest.raises(ValueError, match="is not a path inside the workspace"):
        Files({path: "x"})


def test_the_snapshot_of_a_copy_does_not_wait_on_a_named_pipe(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "a.py").write_text("x = 1\n")
    os.mkfifo(copy / "pipe")  # as `mkfifo pipe` in a run's command would leave it
    taken: list[dict[str, object]] = []
    worker = threading.Thread(target=lambda: taken.append(dict(snapshot(copy))), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():  # unblock the reader so the test ends, then fail
        fd = os.open(copy / "pipe", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(5)
        pytest.fail("the snapshot waited on the named pipe")
    [found] = taken
    assert set(found) == {"a.py", "pipe"}
    before = snapshot(copy)
    os.unlink(copy / "pipe")
    (copy / "pipe").write_text("now a file\n")
    assert changes(before, snapshot(copy, before)) == ["M pipe"]
