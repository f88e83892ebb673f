"""Confinement: nothing outside the workspace, and nothing hidden inside it, is reachable by any tool."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from twinny_magics.conversation import ToolCall
from twinny_magics.tools import ToolOutput, Workspace

SECRET = "TOPSECRET"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace with hidden files, ignored files and links out, next to an outside folder."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET)
    (outside / "dir" / "inner.txt").write_text(SECRET)
    ws = tmp_path / "ws"
    for folder in ("src", "sub", ".git", "build", ".ipynb_checkpoints", "deep/nested"):
        (ws / folder).mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hello')\n")
    (ws / ".git" / "config").write_text(f"[core] {SECRET}\n")
    (ws / ".git" / "HEAD").write_text(f"ref: {SECRET}\n")
    (ws / ".gitignore").write_text("*.log\nbuild/\n")
    (ws / "app.log").write_text(SECRET)
    (ws / "build" / "out.txt").write_text(SECRET)
    (ws / "sub" / ".gitignore").write_text("private.txt\n")
    (ws / "sub" / "private.txt").write_text(SECRET)
    (ws / "sub" / "ok.txt").write_text("fine\n")
    (ws / "deep" / ".gitignore").write_text("nested/\n")
    (ws / "deep" / "nested" / "x.txt").write_text(SECRET)
    (ws / ".ipynb_checkpoints" / "nb-checkpoint.ipynb").write_text(SECRET)
    os.symlink(outside / "secret.txt", ws / "link_out_file")
    os.symlink(outside / "dir", ws / "link_out_dir")
    os.symlink(ws / "chain2", ws / "chain1")
    os.symlink(outside / "secret.txt", ws / "chain2")
    os.symlink(outside / "new.txt", ws / "dangling_out")
    os.symlink(ws / ".git" / "config", ws / "link_git")
    os.symlink(ws / "build", ws / "link_build")
    os.symlink(ws / "loop2", ws / "loop1")
    os.symlink(ws / "loop1", ws / "loop2")
    return tmp_path


# Each row is one attempt: a tool and its arguments. "{out}" and "{ws}" become absolute paths.
ATTEMPTS = [
    ("read_file", {"path": "../outside/secret.txt"}),
    ("read_file", {"path": "../../etc/passwd"}),
    ("read_file", {"path": "/etc/passwd"}),
    ("read_file", {"path": "{out}/secret.txt"}),
    ("read_file", {"path": "{ws}/../outside/secret.txt"}),
    ("read_file", {"path": "~/.ssh/id_rsa"}),
    ("read_file", {"path": "~"}),
    ("read_file", {"path": "src/app.py\x00../../outside/secret.txt"}),
    ("read_file", {"path": "src/app.py\n../outside/secret.txt"}),
    ("read_file", {"path": "link_out_file"}),
    ("read_file", {"path": "link_out_dir/inner.txt"}),
    ("read_file", {"path": "chain1"}),
    ("read_file", {"path": "loop1"}),
    ("read_file", {"path": "link_git"}),
    ("read_file", {"path": "link_build/out.txt"}),
    ("read_file", {"path": ".git/config"}),
    ("read_file", {"path": ".git/../.git/HEAD"}),
    ("read_file", {"path": ".GIT/config"}),
    ("read_file", {"path": "{ws}/.git/config"}),
    ("read_file", {"path": "sub/../../outside/secret.txt"}),
    ("read_file", {"path": "src/../../outside/secret.txt"}),
    ("read_file", {"path": "app.log"}),
    ("read_file", {"path": "build/out.txt"}),
    ("read_file", {"path": "src/../build/out.txt"}),
    ("read_file", {"path": "sub/private.txt"}),
    ("read_file", {"path": "deep/nested/x.txt"}),
    ("read_file", {"path": ".ipynb_checkpoints/nb-checkpoint.ipynb"}),
    ("read_file", {"path": "a" * 5000}),
    ("read_file", {"path": "src/" + "b" * 300}),
    ("list_dir", {"path": ".."}),
    ("list_dir", {"path": "../outside"}),
    ("list_dir", {"path": "link_out_dir"}),
    ("list_dir", {"path": ".git"}),
    ("list_dir", {"path": "build"}),
    ("list_dir", {"path": "/"}),
    ("list_dir", {"path": "~"}),
    ("list_dir", {"path": "{out}"}),
    ("grep", {"pattern": SECRET, "path": ".."}),
    ("grep", {"pattern": SECRET, "path": "link_out_dir"}),
    ("grep", {"pattern": SECRET, "path": "link_out_file"}),
    ("grep", {"pattern": SECRET, "path": ".git"}),
    ("grep", {"pattern": SECRET, "path": "/etc"}),
    ("grep", {"pattern": SECRET, "path": "build"}),
    ("grep", {"pattern": SECRET, "path": "sub/private.txt"}),
    ("edit_file", {"path": "link_out_file", "find": SECRET, "replace": "x"}),
    ("edit_file", {"path": "../outside/secret.txt", "find": SECRET, "replace": "x"}),
    ("edit_file", {"path": "chain1", "find": SECRET, "replace": "x"}),
    ("edit_file", {"path": ".git/config", "find": SECRET, "replace": "x"}),
    ("edit_file", {"path": "app.log", "find": SECRET, "replace": "x"}),
    ("edit_file", {"path": "link_out_dir/inner.txt", "find": SECRET, "replace": "x"}),
    ("create_file", {"path": "../outside/new.txt", "content": "x"}),
    ("create_file", {"path": "link_out_dir/new.txt", "content": "x"}),
    ("create_file", {"path": "dangling_out", "content": "x"}),
    ("create_file", {"path": "{out}/new.txt", "content": "x"}),
    ("create_file", {"path": ".git/hooks/pre-commit", "content": "x"}),
    ("create_file", {"path": "build/new.txt", "content": "x"}),
    ("create_file", {"path": "new.log", "content": "x"}),
    ("create_file", {"path": ".ipynb_checkpoints/x.py", "content": "x"}),
    ("create_file", {"path": "sub/private.txt/x", "content": "x"}),
]


def _fill(args: dict[str, str], tree: Path) -> dict[str, str]:
    return {
        key: value.replace("{out}", str(tree / "outside")).replace("{ws}", str(tree / "ws"))
        for key, value in args.items()
    }


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("tool", "args"), ATTEMPTS, ids=[f"{t}-{i}" for i, (t, _) in enumerate(ATTEMPTS)])
async def test_an_escape_or_hidden_path_is_refused_without_leaking_anything(
    tree: Path, tool: str, args: dict[str, str]
) -> None:
    """Every attempt fails with a message that names no absolute path of the machine and no secret."""
    outside_before = _snapshot(tree / "outside")
    ws = Workspace(tree / "ws", edits="apply")
    out = await ws.run(ToolCall(tool, _fill(args, tree)))
    assert out.is_error, out.text
    assert SECRET not in out.text
    assert str(tree) not in out.text
    assert str(tree.resolve()) not in out.text
    assert _snapshot(tree / "outside") == outside_before
    assert not (tree / "outside" / "new.txt").exists()
    assert not ws.proposals or all(p.status != "applied" for p in ws.proposals)


async def test_escapes_in_review_mode_make_no_pending_edit(tree: Path) -> None:
    """A refused edit or create in review mode leaves nothing waiting for review."""
    ws = Workspace(tree / "ws")
    for tool, args in ATTEMPTS:
        if tool in ("edit_file", "create_file"):
            out = await ws.run(ToolCall(tool, _fill(args, tree)))
            assert out.is_error
            assert out.pending is None
    assert ws.pending == []


async def test_hidden_and_outside_entries_are_skipped_silently_by_list_find_and_grep(tree: Path) -> None:
    """Listing, finding and grepping the whole workspace show neither hidden files nor links out."""
    ws = Workspace(tree / "ws")
    listing = await ws.run(ToolCall("list_dir", {}))
    found = await ws.run(ToolCall("find_files", {"pattern": "**/*"}))
    by_name = await ws.run(ToolCall("find_files", {"pattern": "t"}))
    grepped = await ws.run(ToolCall("grep", {"pattern": SECRET}))
    for out in (listing, found, by_name, grepped):
        assert not out.is_error, out.text
        for name in (
            ".git/",
            "config",
            "app.log",
            "build",
            "private",
            "nested",
            "checkpoint",
            "link_out",
            "chain",
            "loop",
        ):
            assert name not in out.text
        assert "dangling" not in out.text
        assert str(tree) not in out.text
    assert "src/" in listing.text
    assert "sub/" in listing.text
    assert "sub/ok.txt" in found.text
    assert grepped.text.startswith("No matches")


async def test_a_hidden_path_is_named_as_hidden_and_an_ignored_one_as_ignored(tree: Path) -> None:
    """Direct access says why: .git is hidden, an ignored file is ignored by .gitignore."""
    ws = Workspace(tree / "ws")
    git = await ws.run(ToolCall("read_file", {"path": ".git/config"}))
    ignored = await ws.run(ToolCall("read_file", {"path": "sub/private.txt"}))
    assert ".git is hidden" in git.text
    assert "ignored by .gitignore" in ignored.text


async def test_an_absolute_path_inside_the_workspace_is_answered_in_relative_terms(tree: Path) -> None:
    """An absolute path that resolves inside the root works, and the answer names the file relatively."""
    ws = Workspace(tree / "ws")
    out = await ws.run(ToolCall("read_file", {"path": str(tree / "ws" / "src" / "app.py")}))
    assert not out.is_error
    assert out.text.startswith("src/app.py")
    assert str(tree) not in out.text


async def test_a_symlink_that_stays_inside_the_workspace_is_followed(tree: Path) -> None:
    """A link to a visible file inside the workspace reads that file and is listed with its target."""
    ws_root = tree / "ws"
    os.symlink(ws_root / "src" / "app.py", ws_root / "alias.py")
    ws = Workspace(ws_root)
    read = await ws.run(ToolCall("read_file", {"path": "alias.py"}))
    listing = await ws.run(ToolCall("list_dir", {}))
    assert "print('hello')" in read.text
    assert "alias.py -> src/app.py" in listing.text


async def test_a_negated_pattern_in_a_nested_gitignore_re_includes_a_file(tmp_path: Path) -> None:
    """Deeper .gitignore files win, as in git: `!keep.log` makes that log visible again."""
    (tmp_path / "logs").mkdir()
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "logs" / ".gitignore").write_text("!keep.log\n")
    (tmp_path / "logs" / "keep.log").write_text("kept\n")
    (tmp_path / "logs" / "drop.log").write_text("dropped\n")
    ws = Workspace(tmp_path)
    listing = await ws.run(ToolCall("list_dir", {"path": "logs"}))
    assert "keep.log" in listing.text
    assert "drop.log" not in listing.text
    assert not (await ws.run(ToolCall("read_file", {"path": "logs/keep.log"}))).is_error


async def test_a_changed_gitignore_counts_from_the_next_call(tmp_path: Path) -> None:
    """The ignore rules are read again for every tool call."""
    (tmp_path / "notes.txt").write_text("n\n")
    ws = Workspace(tmp_path)
    assert not (await ws.run(ToolCall("read_file", {"path": "notes.txt"}))).is_error
    (tmp_path / ".gitignore").write_text("notes.txt\n")
    out: ToolOutput = await ws.run(ToolCall("read_file", {"path": "notes.txt"}))
    assert out.is_error
    assert "ignored" in out.text
