"""edit_file is no oracle for masked values: ``find`` is matched against the file as the tools show it.

edit_file matched the model's ``find`` against the file's real text, so an edit whose find held a guess
at a hidden value was made (or counted, or suggested) when the guess was right and refused when it was
wrong: ``API_KEY = "a``, ``API_KEY = "a8``, … spelled the value out. These tests make those guesses
through the real Workspace on real files, in apply mode (a right guess used to rewrite the file), and
require the same reply for a right guess and a wrong one (the guess itself, which a reply may repeat,
aside) and the file unchanged. (That ordinary edits still work beside and on the line of a hidden value
is tested in test_tools_edits.py.)
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from twinny_magics.conversation import ToolCall
from twinny_magics.tools import Workspace

# Real shapes, made here (not anyone's key).
OPENAI = "sk-proj-" + "Qm7Xc2Lr9Tz4Wb8Nd1Kf6Hs3Jv5Pg0Ya2Ue7Ri4Oc9Lw1Bn"
ASSIGNED = "a8Fq3ZpL0x9Wv2Rt7Yb4Nc6Md1Ke5Hj"  # an ordinary-looking value, hidden for its name
CONFIG = f'''import os

API_KEY = "{ASSIGNED}"  # from the vault
OPENAI_KEY = "{OPENAI}"
DEBUG = True
TIMEOUT = 30
'''


def _pem_body() -> list[str]:
    body = base64.b64encode(hashlib.shake_256(b"not a real key").digest(600)).decode()
    return [body[i : i + 64] for i in range(0, len(body), 64)]


PEM_LINES = ["-----BEGIN RSA PRIVATE KEY-----", *_pem_body(), "-----END RSA PRIVATE KEY-----"]
NOTES = "\n".join(["Deploy notes", "", *PEM_LINES, "after_the_key = 1", "last line"]) + "\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "config.py").write_text(CONFIG)
    (tmp_path / "deploy_notes.txt").write_text(NOTES)
    return Workspace(tmp_path, edits="apply")


async def edit(ws: Workspace, path: str, find: str, replace: str) -> str:
    return (await ws.run(ToolCall("edit_file", {"path": path, "find": find, "replace": replace}))).text


def same_reply(right: str, wrong: str, right_guess: str, wrong_guess: str) -> None:
    """The two replies are equal once each one's own guess (which it may repeat) is blanked out."""

    def blank(text: str, guess: str) -> str:
        return text.replace(guess, "<guess>")

    assert blank(right, right_guess) == blank(wrong, wrong_guess), (right, wrong)


def wrong_last(guess: str) -> str:
    """The guess with its last character changed: the attacker's other try at that position."""
    last = guess[-1]
    other = "Z" if last != "Z" else "Y"
    if last.isdigit():
        other = "7" if last != "7" else "8"
    return guess[:-1] + other


def unchanged(ws: Workspace) -> None:
    assert (ws.root / "config.py").read_text() == CONFIG
    assert (ws.root / "deploy_notes.txt").read_text() == NOTES


async def guesses(ws: Workspace, path: str, right: str, wrong: str, make: str) -> None:
    """``make`` with ``{}`` for the guess: the same reply for the right and the wrong one, no change."""
    finds = [make.format(guess) for guess in (right, wrong)]
    replies = [await edit(ws, path, find, "X") for find in finds]
    same_reply(*replies, *finds)
    unchanged(ws)


async def test_prefixes_of_a_secret_named_value_get_the_same_reply_right_or_wrong(ws: Workspace) -> None:
    for n in range(1, len(ASSIGNED) + 1, 4):
        right = ASSIGNED[:n]
        await guesses(ws, "config.py", right, wrong_last(right), 'API_KEY = "{}')


async def test_prefixes_of_an_issued_key_alone_get_the_same_reply_right_or_wrong(ws: Workspace) -> None:
    for n in range(len("sk-proj-") + 1, len(OPENAI) + 1, 5):
        right = OPENAI[:n]
        await guesses(ws, "config.py", right, wrong_last(right), "{}")


async def test_a_whole_guessed_line_gets_the_same_reply_exact_or_loose(ws: Workspace) -> None:
    """Exact, with other spacing (the whitespace-loose match), other quotes and spaces (the looser one)."""
    for make in ('API_KEY = "{}"  # from the vault', 'API_KEY   =   "{}"', "API_KEY='{}'"):
        await guesses(ws, "config.py", ASSIGNED, wrong_last(ASSIGNED), make)


async def test_a_guess_in_replace_is_not_looked_for_in_the_file(ws: Workspace) -> None:
    """A failed edit says when its replace is there already ("looks made already"): not of a hidden value."""
    right, wrong = f'API_KEY = "{ASSIGNED}"', f'API_KEY = "{wrong_last(ASSIGNED)}"'
    replies = [await edit(ws, "config.py", "TIMEOUT = 3000", guess) for guess in (right, wrong)]
    same_reply(*replies, right, wrong)
    assert "made already" not in replies[0]
    unchanged(ws)


async def test_a_guess_at_a_private_key_line_gets_the_same_reply(ws: Workspace) -> None:
    body = PEM_LINES[3]
    await guesses(ws, "deploy_notes.txt", body, wrong_last(body), "{}")
    await guesses(ws, "deploy_notes.txt", body[:20], wrong_last(body[:20]), "{}")


async def test_a_find_that_would_match_twice_only_with_the_secret_gets_the_same_reply(ws: Workspace) -> None:
    """The count of matches (once, several times) is of the shown text: a guess that a value repeats
    ``import os`` or ``True`` cannot be tested by making find ambiguous."""
    (ws.root / "twice.py").write_text(f'token = "{ASSIGNED}"\nother = "{ASSIGNED[:12]}"\n')
    right, wrong = ASSIGNED[:12], wrong_last(ASSIGNED[:12])
    replies = [await edit(ws, "twice.py", guess, "X") for guess in (right, wrong)]
    assert "matches 2 times" not in replies[0]
    # The second line's value is not hidden (its name is not a secret's): that one is found and changed,
    # in the right place, the hidden one before it kept.
    assert '+other = "X"' in replies[0], replies[0]
    assert (ws.root / "twice.py").read_text() == f'token = "{ASSIGNED}"\nother = "X"\n'
