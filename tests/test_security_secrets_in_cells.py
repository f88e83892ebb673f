"""Security issue 26, keys set in earlier notebook cells: masked in ``cell_history`` and in the head start
that a question about cells or errors puts into the first request, whichever usual way set them.

A real IPython shell runs the cells (``%env`` really sets the variable, ``!export`` really runs a shell),
the cell log records them, and the real ``Workspace`` answers the tool call; the loop's first request is
sent to the scripted server, the only fake (no model is needed to see what the request holds).
python-dotenv is not a dependency of this project: its ``dotenv_values`` is stood for by the values it
returns (a dict, or an ``OrderedDict`` in older releases), which is all the cell shows.
"""

from __future__ import annotations

import asyncio
import os
import random
import string
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from twinny_magics.agent import Agent
from twinny_magics.conversation import ToolCall
from twinny_magics.redact import MASK
from twinny_magics.servers.scripted import ScriptedServer
from twinny_magics.tools import Workspace
from twinny_magics.tools.kernel import Kernel

_rng = random.Random(2626)
# Plain letters and digits, no provider prefix: only the way the cell set it says it is a key.
KEY = "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(40))
# A shorter one, as keys of some services and test accounts are: no random look to go by either.
SHORT = "stag1ng-" + "".join(_rng.choice(string.ascii_lowercase) for _ in range(6))
PASSWORD = "Tr0ub4dor&3-horse"
NAME = "TWINNY_TEST_KEY"  # `key` alone: a value is hidden only by how it was set


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    """A fresh shell; the environment as it was afterwards (the cells set variables in it)."""
    saved = dict(os.environ)
    ip = InteractiveShell.instance()
    yield ip
    log = getattr(ip, "_twinny_cell_log", None)
    if log is not None:
        log.uninstall()
    InteractiveShell.clear_instance()
    os.environ.clear()
    os.environ.update(saved)


def workspace(tmp_path: Path, shell: InteractiveShell) -> Workspace:
    return Workspace(tmp_path, kernel=Kernel(shell, seconds=5))


def run(shell: InteractiveShell, *cells: str) -> None:
    for cell in cells:
        result = shell.run_cell(cell, store_history=True)
        assert result.error_in_exec is None, (cell, result.error_in_exec)


def history(ws: Workspace) -> str:
    return asyncio.run(ws.run(ToolCall("cell_history", {}))).text


def head_start(ws: Workspace) -> str:
    return ws.head_start("Why does the last cell fail?", 4000)


# (what a cell runs, the secret it holds). Each was shown in clear before issue 26.
SETTINGS = {
    "os.environ subscript": (f'import os\nos.environ["{NAME}"] = "{SHORT}"', SHORT),
    "os.environ single quotes": (f"import os\nos.environ['{NAME}'] = '{KEY}'", KEY),
    "os.environ.setdefault": (f'import os\nos.environ.setdefault("{NAME}", "{SHORT}")', SHORT),
    "os.putenv": (f'import os\nos.putenv("{NAME}", "{KEY}")', KEY),
    "%env name value": (f"%env {NAME} {KEY}", KEY),
    "%env name=value": (f"%env {NAME}={SHORT}", SHORT),
    "%set_env": (f"%set_env {NAME} {SHORT}", SHORT),
    "!export": (f"!export {NAME}={SHORT}", SHORT),
    "dotenv_values as a dict": (f'values = {{"{NAME}": "{SHORT}", "DEBUG": "1"}}\nvalues', SHORT),
    "dotenv_values as an OrderedDict": (
        f'from collections import OrderedDict\nOrderedDict([("{NAME}", "{KEY}"), ("DEBUG", "1")])',
        KEY,
    ),
    "an auth tuple": (f'import httpx\nclient = httpx.Client(auth=("bob", "{PASSWORD}"))', PASSWORD),
    "a basic auth object": (f'import httpx\nauth = httpx.BasicAuth("bob", "{PASSWORD}")', PASSWORD),
    "password keyword": (
        f'def connect(**kw):\n    return kw\n\n_ = connect(password="{PASSWORD}")',
        PASSWORD,
    ),
    "passwd keyword": (f'def connect(**kw):\n    return kw\n\n_ = connect(passwd="{PASSWORD}")', PASSWORD),
    "secret keyword": (f'def connect(**kw):\n    return kw\n\n_ = connect(secret="{KEY}")', KEY),
    "token keyword": (f'def connect(**kw):\n    return kw\n\n_ = connect(token="{KEY}")', KEY),
    "auth keyword": (f'def connect(**kw):\n    return kw\n\n_ = connect(auth="{SHORT}")', SHORT),
}


@pytest.mark.parametrize(("cell", "secret"), SETTINGS.values(), ids=list(SETTINGS))
def test_a_key_set_in_an_earlier_cell_is_masked_in_the_history_and_the_head_start(
    tmp_path: Path, shell: InteractiveShell, cell: str, secret: str
) -> None:
    ws = workspace(tmp_path, shell)
    run(shell, cell, "x = 1")
    shown, start = history(ws), head_start(ws)
    assert secret not in shown, shown
    assert secret not in start, start
    assert MASK in shown
    assert "x = 1" in shown  # the cells are still there to read


def test_cells_run_before_the_log_was_installed_are_masked_too(
    tmp_path: Path, shell: InteractiveShell
) -> None:
    """Those are filled in from ``In``, which holds what IPython ran: run_line_magic and system calls."""
    run(shell, f"%env {NAME} {KEY}", f"!export OTHER_TOKEN={KEY[::-1]}", f"%set_env DB_PASSWORD {PASSWORD}")
    ws = workspace(tmp_path, shell)  # the log is installed now
    os.environ.pop(NAME)  # only the cells' text says what these were
    os.environ.pop("DB_PASSWORD")
    shown = history(ws)
    assert "run_line_magic('env'" in shown
    for secret in (KEY, KEY[::-1], PASSWORD):
        assert secret not in shown, shown


def test_a_key_read_back_and_shown_is_masked_wherever_it_shows(
    tmp_path: Path, shell: InteractiveShell
) -> None:
    """A value the kernel holds under a secret name is hidden in what cells printed and showed, even with
    nothing around it that says it is a key."""
    ws = workspace(tmp_path, shell)
    run(
        shell,
        f'import os\nos.environ["{NAME}"] = "{KEY}"',
        f'print(os.environ["{NAME}"])',
        f"%env {NAME}",
        f'os.getenv("{NAME}")',
        f'db_password = "{PASSWORD}"',
        "print(db_password.upper(), db_password)",
    )
    shown, start = history(ws), head_start(ws)
    for text in (shown, start):
        assert KEY not in text, text
        assert PASSWORD not in text, text
    assert shown.count(MASK) >= 5
    assert PASSWORD.upper() in shown  # a changed value is not the known one: only the value itself


def test_code_that_only_reads_or_passes_a_secret_is_left_readable(
    tmp_path: Path, shell: InteractiveShell
) -> None:
    ws = workspace(tmp_path, shell)
    code = [
        "import os, getpass",
        'api_key = os.environ.get("NOT_SET_API_KEY")',
        'password = os.environ.get("PW")',
        "def connect(**kw):\n    return kw",
        "_ = connect(auth=api_key, password=password, token=None)",
        'os.environ["API_KEY"] if "API_KEY" in os.environ else None',
        "os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')",
        "%env MAX_TOKENS 2048",
    ]
    run(shell, *code)
    shown = history(ws)
    assert MASK not in shown, shown
    for line in code:
        assert line.split("\n")[0] in shown


def test_the_first_request_of_a_question_about_cells_holds_no_key(
    tmp_path: Path, shell: InteractiveShell
) -> None:
    ws = workspace(tmp_path, shell)
    run(shell, f"%env {NAME}={KEY}", f'import httpx\nclient = httpx.Client(auth=("bob", "{PASSWORD}"))')
    shell.run_cell("1 / 0", store_history=True)
    server = ScriptedServer(["The last cell divides by zero."])
    agent = Agent(server=server, tools=ws, mode="text")
    asyncio.run(asyncio.to_thread(agent.run, "Why does the last cell fail?"))
    first = " ".join(str(message.get("content") or "") for message in server.requests[0].messages)
    assert "ZeroDivisionError" in first  # the cells went into the first request
    assert KEY not in first
    assert PASSWORD not in first
