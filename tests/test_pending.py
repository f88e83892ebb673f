"""Pending work has one owner: the session lists it (``Agent.pending``) and settles it (``Agent.settle``);
every settle, a button's or ``%agent apply``'s, goes through ``PendingEdit.settle`` (its lock, its messages).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.display import reprs
from twinny_magics.servers.scripted import Scripted, ScriptedServer
from twinny_magics.tools import PendingEdit, edits


def edit(path: str, find: str, replace: str) -> Scripted:
    return Scripted("", calls=(ToolCall("edit_file", {"path": path, "find": find, "replace": replace}),))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    return tmp_path


def two_pending(project: Path) -> Agent:
    """A session with two edits waiting: a.py (1), then b.py (2)."""
    server = ScriptedServer(
        [edit("a.py", "x = 1", "x = 2"), "Proposed.", edit("b.py", "y = 1", "y = 2"), "Ok."]
    )
    agent = Agent(server=server, workspace=project)
    agent.run("Set x to 2.")
    agent.run("Set y to 2.")
    assert [e.path for e in agent.pending] == ["a.py", "b.py"]
    return agent


def test_pending_lists_the_edits_waiting_in_order_as_status_numbers_them(project: Path) -> None:
    agent = two_pending(project)
    assert reprs.pending_edits(agent) == agent.pending
    assert "1. a.py; 2. b.py" in reprs.agent_text(agent)
    assert all(isinstance(e, PendingEdit) and e.status == "pending" for e in agent.pending)


def test_settle_by_number_applies_that_edit_only(project: Path) -> None:
    agent = two_pending(project)
    assert agent.settle([2], apply=True) == ["Applied the edit to b.py."]
    assert (project / "b.py").read_text() == "y = 2\n"
    assert (project / "a.py").read_text() == "x = 1\n"
    assert [e.path for e in agent.pending] == ["a.py"]


def test_settle_all_discards_every_edit_and_touches_no_file(project: Path) -> None:
    agent = two_pending(project)
    assert agent.settle(apply=False) == ["Discarded the edit to a.py.", "Discarded the edit to b.py."]
    assert agent.pending == []
    assert (project / "a.py").read_text() == "x = 1\n"
    assert (project / "b.py").read_text() == "y = 1\n"
    assert agent.settle(apply=True) == []


def test_a_wrong_number_raises_before_anything_is_settled(project: Path) -> None:
    agent = two_pending(project)
    with pytest.raises(ValueError, match=r"^No pending edit 3: there are 2 \(see %agent status\)\.$"):
        agent.settle([1, 3], apply=True)
    with pytest.raises(ValueError, match="No pending edit 0"):
        agent.settle([0], apply=False)
    assert len(agent.pending) == 2
    assert (project / "a.py").read_text() == "x = 1\n"


def test_a_conflict_is_reported_not_raised(project: Path) -> None:
    agent = two_pending(project)
    (project / "a.py").write_text("x = 5\n")
    [conflict, applied] = agent.settle(apply=True)
    assert "a.py changed on disk since this edit was proposed" in conflict
    assert applied == "Applied the edit to b.py."
    assert (project / "a.py").read_text() == "x = 5\n"
    assert agent.replies[0].pending[0].status == "conflict"


def test_settling_twice_says_already(project: Path) -> None:
    agent = two_pending(project)
    [first, _] = agent.pending
    assert first.settle(True) == "Applied the edit to a.py."
    assert first.settle(True) == "Already applied."
    assert first.settle(False) == "Already applied."
    # What settling it said is kept (a panel shown elsewhere catches up with it), not the "Already".
    assert first.message == "Applied the edit to a.py."
    assert agent.settle([1], apply=False) == ["Discarded the edit to b.py."]
    assert edits.settle(first, apply=False) == "Already applied."


def test_two_threads_settling_one_edit_apply_it_once(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = two_pending(project)
    [first, _] = agent.pending
    write_file = edits.write_file
    writes: list[bytes] = []

    def slow_write(target: Any, data: bytes, *, expected: str | None) -> None:
        writes.append(data)
        time.sleep(0.2)  # the other thread arrives while this one writes
        write_file(target, data, expected=expected)

    monkeypatch.setattr(edits, "write_file", slow_write)
    start = threading.Barrier(2)
    said: list[str] = []

    def settle(by: Any) -> None:
        start.wait()
        said.append(by())

    threads = [
        threading.Thread(target=settle, args=(lambda: agent.settle([1], apply=True)[0],)),
        threading.Thread(target=settle, args=(lambda: first.settle(True),)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert sorted(said) == ["Already applied.", "Applied the edit to a.py."]
    assert len(writes) == 1
    assert (project / "a.py").read_text() == "x = 2\n"


def test_a_change_of_another_toolset_is_settled_the_same_way() -> None:
    class Change:
        path, diff, creates, status = "c.txt", "", False, "pending"

        def apply(self) -> str:
            self.status = "applied"
            return "Done."

        def discard(self) -> None:
            self.status = "discarded"

    change = Change()
    assert edits.settle(change, apply=True) == "Done."
    assert edits.settle(change, apply=True) == "Already applied."
    other = Change()
    assert edits.settle(other, apply=False) == "Discarded the edit to c.txt."
