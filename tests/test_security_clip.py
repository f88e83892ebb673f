"""A cell's text cut to size never splits a secret: what is kept is masked as well as the whole.

A cell's source, value and output are cut when recorded (1,500 and 1,200 characters) and the history
again to its budget; the masker runs on what was kept. A cut inside a key used to leave a half the
masker could no longer recognise (``sk-proj-Qm7Xc2…`` cut to ``…Nd1Kf6Hs3Jv5Pg0``), and a cut inside a
value the kernel holds under a secret name left a part of it that is not the value. Every cut position
across the secret is tried.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from twinny_magics import cells
from twinny_magics.conversation import ToolCall
from twinny_magics.redact import mask_secrets
from twinny_magics.tools import Workspace
from twinny_magics.tools.kernel import Kernel

OPENAI = "sk-proj-" + "Qm7Xc2Lr9Tz4Wb8Nd1Kf6Hs3Jv5Pg0Ya2Ue7Ri4Oc9Lw1Bn"
ASSIGNED = "a8Fq3ZpL0x9Wv2Rt7Yb4Nc6Md1Ke5Hj"
VALUE = "stag1ng-quietmeadow"
#: The shortest part of a secret that counts as shown.
PART = 6


def shows_part(text: str, secret: str) -> str | None:
    for start in range(len(secret) - PART + 1):
        if secret[start : start + PART] in text:
            return secret[start : start + PART]
    return None


# (a line holding the secret, the secret) — one long line, so that no line end is near the cut.
LINES = {
    "an issued key": (f'client = make(timeout=3, key="{OPENAI}", retries=2, verbose=False)', OPENAI[8:]),
    "a secret-named value": (f'settings = dict(debug=True, api_key="{ASSIGNED}", region="eu")', ASSIGNED),
}


@pytest.mark.parametrize(("line", "secret"), LINES.values(), ids=list(LINES))
@pytest.mark.parametrize("tail", [False, True], ids=["head", "tail"])
def test_a_cut_anywhere_across_a_secret_keeps_none_of_it(line: str, secret: str, tail: bool) -> None:
    at = line.index(secret)
    for offset in range(-2, len(secret) + 2):
        if tail:
            text = "x" * 3000 + line + "y = 1, " * 300
            chars = len(text) - (3000 + at + offset)
        else:
            text = "z = 0, " * 300 + line + "x" * 3000
            chars = 2100 + at + offset
        shown = mask_secrets(cells.clip(text, chars, tail=tail))
        assert shows_part(shown, secret) is None, (offset, shown[-200:] if not tail else shown[:200])


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    saved = dict(os.environ)
    ip = InteractiveShell.instance()
    yield ip
    log = getattr(ip, "_twinny_cell_log", None)
    if log is not None:
        log.uninstall()
    InteractiveShell.clear_instance()
    os.environ.clear()
    os.environ.update(saved)


def test_the_start_of_a_long_output_never_shows_part_of_a_known_secret(
    tmp_path: Path, shell: InteractiveShell
) -> None:
    """What code printed is kept from its end: the kept part may start inside the kernel's known value."""
    os.environ["MY_API_KEY"] = VALUE
    ws = Workspace(tmp_path, kernel=Kernel(shell, seconds=5), kernel_mode="allow")
    for cut in range(2, len(VALUE) - 2):
        fill = cells.PRINTED_CHARS - len(VALUE) + cut
        code = f'import os\nprint(os.environ["MY_API_KEY"] + " " + "y" * {fill})'
        out = asyncio.run(ws.run(ToolCall("run_python", {"code": code}))).text
        assert "the end shown" in out
        assert shows_part(out, VALUE[:-2]) is None, (cut, out[:200])
