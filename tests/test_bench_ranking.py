"""The ranking benchmark reads the evidence as the model sees it, and tasks say where their answers stand."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))

import tasks_all
from bench_ranking import CODEBASES, shown_lines
from tasks_common import Where

from twinny_magics.retrieval import Chunk, head_start_text


def test_the_evidence_is_read_back_as_the_chunks_and_line_numbers_it_shows() -> None:
    chunks = [
        Chunk("a/b.py", 3, 5, ("x = 1", "", "def f():"), ("f",)),
        Chunk("c.py", 1, 2, ("import os", "Y = 2")),
    ]
    text = head_start_text(None, chunks, ["f"], 2000)
    assert shown_lines(text) == [[("a/b.py", 3), ("a/b.py", 4), ("a/b.py", 5)], [("c.py", 1), ("c.py", 2)]]
    # A notebook heading's names may hold parentheses of their own.
    nested = head_start_text(None, [Chunk("n.ipynb", 7, 7, ("x = 1",), ("API (>= 2.4), x",))], [], 2000)
    assert shown_lines(nested) == [[("n.ipynb", 7)]]


def test_an_answer_location_is_the_line_holding_its_text_through_its_end() -> None:
    shown = ["A = (", "  'x',", "  'y',", ")", "def test_a():", "def test_b():"]
    assert Where("f.py", "A = (", until=")").lines(shown) == (1, 2, 3, 4)
    assert Where("f.py", r"^def test_", every=True, regex=True).lines(shown) == (5, 6)
    with pytest.raises(ValueError, match="no line"):
        Where("f.py", "missing").lines(shown)


def test_every_development_code_base_is_measured_and_the_held_out_one_never() -> None:
    assert list(CODEBASES) == [c.name for c in tasks_all.pick(None, "dev")]
    assert not {c.name for c in tasks_all.pick(None, "heldout")} & set(CODEBASES)
