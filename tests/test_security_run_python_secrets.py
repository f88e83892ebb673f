"""Security issue 26, secrets the kernel holds: what ``run_python`` answers hides them as ``cell_history``
does.

Code the model runs can print a secret-named environment variable or string variable, return it as its
value, write it to stderr or raise it in an error. The kernel's known secrets (`CellLog.known_secrets`:
values held under secret names, whatever cell set them) are hidden in every part of the answer, with
nothing around the value that says it is a key. A real IPython shell runs the code through the real
``Workspace``; the run is on this (the main) thread, as the kernel's main thread runs it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from twinny_magics.conversation import ToolCall
from twinny_magics.redact import MASK
from twinny_magics.tools import Workspace
from twinny_magics.tools.kernel import Kernel

# No provider prefix and no random look: only the name it is held under says it is a secret.
VALUE = "stag1ng-quietmeadow"
PASSWORD = "Tr0ub4dor&3-horse"


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


def run_python(tmp_path: Path, shell: InteractiveShell, code: str) -> str:
    ws = Workspace(tmp_path, kernel=Kernel(shell, seconds=5), kernel_mode="allow")
    return asyncio.run(ws.run(ToolCall("run_python", {"code": code}))).text


def cell(shell: InteractiveShell, code: str) -> None:
    result = shell.run_cell(code, store_history=True)
    assert result.error_in_exec is None, result.error_in_exec


# (the code the model runs, the part of the answer the value shows in)
READS = {
    "printed": 'import os\nprint(os.environ["MY_API_KEY"])',
    "printed to stderr": 'import os, sys\nprint("key:", os.environ["MY_API_KEY"], file=sys.stderr)',
    "the value": 'import os\nos.environ["MY_API_KEY"]',
    "a dict value": 'import os\n{"k": os.getenv("MY_API_KEY")}',
    "the traceback": 'import os\nraise ValueError("bad key " + os.environ["MY_API_KEY"])',
    "a printed environment": "import os\nprint(dict(os.environ))",
}


@pytest.mark.parametrize("code", READS.values(), ids=list(READS))
def test_an_environment_secret_set_in_a_cell_is_masked_in_what_run_python_answers(
    tmp_path: Path, shell: InteractiveShell, code: str
) -> None:
    cell(shell, f'import os\nos.environ["MY_API_KEY"] = "{VALUE}"')
    out = run_python(tmp_path, shell, code)
    assert VALUE not in out, out
    assert MASK in out, out


def test_a_secret_the_code_itself_sets_is_masked_in_its_own_answer(
    tmp_path: Path, shell: InteractiveShell
) -> None:
    out = run_python(
        tmp_path,
        shell,
        f'import os\nos.environ.update(MY_API_KEY="{VALUE}")\nprint(os.environ["MY_API_KEY"][:])',
    )
    assert VALUE not in out, out
    assert MASK in out


def test_a_secret_named_string_variable_is_masked_wherever_it_shows(
    tmp_path: Path, shell: InteractiveShell
) -> None:
    cell(shell, f'db_password = "{PASSWORD}"')
    out = run_python(tmp_path, shell, "print(db_password)\nprint(db_password.upper())\n[db_password]")
    assert PASSWORD not in out, out
    assert out.count(MASK) == 2, out
    assert PASSWORD.upper() in out  # a changed value is not the known one: only the value itself


def test_ordinary_output_is_left_as_it_was(tmp_path: Path, shell: InteractiveShell) -> None:
    cell(shell, f'import os\nos.environ["MY_API_KEY"] = "{VALUE}"\nmax_tokens = "2048"')
    out = run_python(tmp_path, shell, 'print("stag1ng", max_tokens)\n"quietmeadow"')
    assert MASK not in out, out
    assert "stag1ng 2048" in out
    assert "'quietmeadow'" in out
