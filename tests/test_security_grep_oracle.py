"""grep is no oracle for masked values: it searches a file as the tools show it, secrets masked.

A grep whose pattern matched a hidden value used to return the line (masked): whether a line came back
told the model whether its guess was right, so ``sk-proj-a``, ``sk-proj-b``, … spelled a key out one
character at a time. These tests make the guesses an attacker would, through the real Workspace tools
on real files, and require the same reply for a right guess and a wrong one (the pattern itself, which
the reply repeats, aside): prefixes of an issued key and of a secret-named assignment, a regex that
matches either the value or the mask, counts of hidden matches, a PEM key's body (whose lines carry no
key shape of their own), find_files' word hint and the edit tool's suggestions. Ordinary greps still
work: the variable name finds its line, masked, with the file's line numbers.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from twinny_magics.conversation import ToolCall
from twinny_magics.redact import MASK
from twinny_magics.tools import Workspace, files

# Real shapes, made here (not anyone's key).
OPENAI = "sk-proj-" + "Qm7Xc2Lr9Tz4Wb8Nd1Kf6Hs3Jv5Pg0Ya2Ue7Ri4Oc9Lw1Bn"
ASSIGNED = "a8Fq3ZpL0x9Wv2Rt7Yb4Nc6Md1Ke5Hj"  # an ordinary-looking value, hidden for its name
CONFIG = f'''import os

API_KEY = "{ASSIGNED}"
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
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "config.py").write_text(CONFIG)
    (tmp_path / "deploy_notes.txt").write_text(NOTES)  # not a deny-list name: its text is masked instead
    (tmp_path / "README.md").write_text("# App\n\nSet API_KEY in app/config.py; DEBUG turns on logs.\n")
    return Workspace(tmp_path, edits="apply")


async def run(ws: Workspace, tool: str, **arguments: object) -> str:
    out = await ws.run(ToolCall(tool, dict(arguments)))
    return out.text


def same_reply(right: str, wrong: str, right_guess: str, wrong_guess: str) -> None:
    """The two replies are equal once each one's own pattern (which it repeats) is blanked out."""

    def blank(text: str, guess: str) -> str:
        return text.replace(repr(guess)[1:-1], "<pattern>").replace(guess, "<pattern>")

    assert blank(right, right_guess) == blank(wrong, wrong_guess), (right, wrong)


def wrong_last(guess: str) -> str:
    """The guess with its last character changed: the attacker's other try at that position."""
    last = guess[-1]
    other = "Z" if last != "Z" else "Y"
    if last.isdigit():
        other = "7" if last != "7" else "8"
    return guess[:-1] + other


async def test_prefixes_of_an_issued_key_get_the_same_reply_right_or_wrong(ws: Workspace) -> None:
    """grep 'sk-proj-Q', 'sk-proj-Qm', … answers exactly as it does for a wrong character."""
    for n in range(len("sk-proj-") + 1, len(OPENAI) + 1, 3):
        right = OPENAI[:n]
        wrong = wrong_last(right)
        replies = [await run(ws, "grep", pattern=guess) for guess in (right, wrong)]
        same_reply(*replies, right, wrong)
        assert "config.py" not in replies[0], replies[0]


async def test_prefixes_of_a_secret_named_value_get_the_same_reply_right_or_wrong(ws: Workspace) -> None:
    """grep 'API_KEY = "a', 'API_KEY = "a8', … answers as for a wrong character, also without the
    name, in a folder, and case-insensitively."""
    for n in range(1, len(ASSIGNED) + 1):
        value = ASSIGNED[:n]
        for right, path in (
            (f'API_KEY = "{value}', None),
            (f'API_KEY = "{value}', "app"),
            (f'(?i)api_key = "{value}', "app/config.py"),
            (value, None),
        ):
            if len(right) < 3:
                continue
            wrong = wrong_last(right)
            where = {"path": path} if path else {}
            replies = [await run(ws, "grep", pattern=guess, **where) for guess in (right, wrong)]
            same_reply(*replies, right, wrong)


async def test_a_pattern_that_matches_value_or_mask_tells_nothing_of_the_value(ws: Workspace) -> None:
    """'API_KEY = "(a|\\[)' and '(b|\\[)' both find the masked line: the mask, not the value, matched."""
    right, wrong = 'API_KEY = "(a|\\[)', 'API_KEY = "(b|\\[)'
    replies = [await run(ws, "grep", pattern=guess) for guess in (right, wrong)]
    same_reply(*replies, right, wrong)
    assert f'app/config.py:3: API_KEY = "{MASK}"' in replies[0], replies[0]


async def test_counts_do_not_tell_how_many_hidden_values_match(tmp_path: Path) -> None:
    """Twelve tokens, seven starting with 'q': the count of lines (and of lines left out) is the same
    for 'q' as for 'x' — none — so no count says how many hidden values a guess matched."""
    values = [("q" if i < 7 else "m") + hashlib.sha256(str(i).encode()).hexdigest()[:24] for i in range(12)]
    (tmp_path / "tokens.txt").write_text("".join(f'TOKEN_{i} = "{v}"\n' for i, v in enumerate(values)))
    ws = Workspace(tmp_path)
    right, wrong = 'TOKEN_\\d+ = "q', 'TOKEN_\\d+ = "x'
    replies = [await run(ws, "grep", pattern=guess) for guess in (right, wrong)]
    same_reply(*replies, right, wrong)
    every = await run(ws, "grep", pattern="TOKEN_")
    assert "12 matches" in every or every.count("tokens.txt:") == 10, every  # per-file cap of 10
    assert all(v not in every for v in values)


async def test_a_private_keys_body_is_never_found_and_the_lines_after_it_keep_their_numbers(
    ws: Workspace,
) -> None:
    """A PEM key in a plain text file: no piece of its body is found (its lines alone carry no key
    shape, so masking only the lines grep returned showed them); the lines after it keep their numbers."""
    body = PEM_LINES[3]
    for guess in (body[:12], body[20:40], "[A-Za-z0-9+/]{64}", "^[A-Za-z0-9+/=]+$"):
        reply = await run(ws, "grep", pattern=guess, path="deploy_notes.txt")
        assert reply.startswith("No matches"), reply
        assert all(line[:16] not in reply for line in PEM_LINES[1:-1])
    after = len(PEM_LINES) + 3  # two lines before the key
    assert await run(ws, "grep", pattern="after_the_key") == f"deploy_notes.txt:{after}: after_the_key = 1"
    assert (await run(ws, "grep", pattern="BEGIN|END", path="deploy_notes.txt")).startswith("No matches")
    assert (
        await run(ws, "grep", pattern="secret hidden", path="deploy_notes.txt")
        == f"deploy_notes.txt:3: {MASK}"
    )
    assert (await run(ws, "grep", pattern="last line")).startswith(f"deploy_notes.txt:{after + 1}:")


async def test_find_files_word_hint_and_edit_suggestions_do_not_search_hidden_values(ws: Workspace) -> None:
    """find_files names the files that contain a word, and a failed edit the files that hold its text:
    neither finds a hidden value."""
    right, wrong = ASSIGNED[:10], wrong_last(ASSIGNED[:10])
    found = [await run(ws, "find_files", pattern=guess) for guess in (right, wrong)]
    same_reply(*found, right, wrong)
    assert "config.py" not in found[0], found[0]
    edits = [
        await run(ws, "edit_file", path="app/settings.py", find=f'API_KEY = "{guess}', replace="x")
        for guess in (right, wrong)
    ]
    same_reply(*edits, right, wrong)
    assert (ws.root / "app" / "config.py").read_text() == CONFIG


async def test_ordinary_greps_still_work_and_find_the_variable_masked(ws: Workspace) -> None:
    """The name finds its line, masked; other lines as they are; hints for a wrong case still come."""
    assert await run(ws, "grep", pattern="API_KEY =") == f'app/config.py:3: API_KEY = "{MASK}"'
    key_lines = await run(ws, "grep", pattern="KEY", path="app")
    assert key_lines.splitlines() == [
        f'app/config.py:3: API_KEY = "{MASK}"',
        f'app/config.py:4: OPENAI_KEY = "{MASK}"',
    ]
    assert await run(ws, "grep", pattern=r"TIMEOUT = \d+") == "app/config.py:6: TIMEOUT = 30"
    both = (await run(ws, "grep", pattern="DEBUG")).splitlines()
    assert both == [
        "README.md:3: Set API_KEY in app/config.py; DEBUG turns on logs.  [under App]",  # its heading
        "app/config.py:5: DEBUG = True",
    ]
    hint = await run(ws, "grep", pattern="debug = true")
    assert "(?i)debug = true" in hint, hint
    assert "1 matching line" in hint, hint
    assert (await run(ws, "grep", pattern=MASK.replace("[", r"\[").replace("]", r"\]"))).count(
        "config.py"
    ) == 2
    assert await run(ws, "grep", pattern="^import os$") == "app/config.py:1: import os"


async def test_a_file_that_changes_is_searched_as_it_is_now(tmp_path: Path) -> None:
    """What a text masks to is kept by the text's hash: the same bytes given a secret's name are masked
    at once, and a value no longer secret is found again."""
    path = tmp_path / "settings.py"
    path.write_text('NOTE = "q8Zr4Lx0Pw7Kd3Hs"\n')
    ws = Workspace(tmp_path)
    assert await run(ws, "grep", pattern="q8Zr4") == 'settings.py:1: NOTE = "q8Zr4Lx0Pw7Kd3Hs"'
    path.write_text('AUTH = "q8Zr4Lx0Pw7Kd3Hs"\n')  # same size, same second
    assert (await run(ws, "grep", pattern="q8Zr4")).startswith("No matches")
    path.write_text('NOTE = "q8Zr4Lx0Pw7Kd3Hs"\n')
    assert await run(ws, "grep", pattern="q8Zr4") == 'settings.py:1: NOTE = "q8Zr4Lx0Pw7Kd3Hs"'


async def test_a_notebooks_cells_are_searched_masked(tmp_path: Path) -> None:
    """A key pasted into a notebook cell: grep's reply for it is the same as for a wrong guess."""
    import nbformat

    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(f'client = OpenAI(api_key="{OPENAI}")\nprint(client)')]
    nbformat.write(book, tmp_path / "explore.ipynb")
    ws = Workspace(tmp_path)
    right = OPENAI[:14]
    wrong = wrong_last(right)
    replies = [await run(ws, "grep", pattern=guess) for guess in (right, wrong)]
    same_reply(*replies, right, wrong)
    assert "explore.ipynb" in await run(ws, "grep", pattern="OpenAI\\(api_key=")


def test_as_shown_keeps_the_line_count_and_hides_every_key_line() -> None:
    """Two keys spanning lines, with text between and after: the count of lines is the file's, each key
    is one mask on its first line, and the text between keeps its place."""
    text = (
        "a\n"
        + "\n".join(PEM_LINES)
        + "\nmiddle\n"
        + "\n".join(PEM_LINES)
        + '\nTOKEN = "z9y8x7w6v5u4t3s2"\nend\n'
    )
    shown = files.as_shown(text)
    assert shown.count("\n") == text.count("\n")
    lines = shown.split("\n")
    assert lines[1] == MASK
    assert lines[len(PEM_LINES) + 2] == MASK
    assert lines[len(PEM_LINES) + 1] == "middle"
    assert lines[-3] == f'TOKEN = "{MASK}"'
    assert lines[-2] == "end"
    assert all(body[:16] not in shown for body in PEM_LINES[1:-1])
    plain = "no secrets here\njust text\n"
    assert files.as_shown(plain) == plain
    assert files.shown_text(plain) == plain
    assert files.shown_text(text) == shown
