"""Shared fixtures: real model servers, each started once per test session, bound to 127.0.0.1.

Servers (mark tests that use them ``pytest.mark.server``):

``llama_server``
    SmolLM2-135M-Instruct on the real llama.cpp server (``xllamacpp``) with a 2,048-token window, in a
    subprocess (``python -m twinny_magics.servers.embedded``). A ``RunningServer``: ``.base_url``
    (root, no ``/v1``), ``.model`` (``"smollm2"``), ``.n_ctx`` (2048), ``.info`` (a ``ServerInfo``),
    ``.pid``. Answers ``/props``, ``/tokenize``, ``/apply-template``, ``/v1/chat/completions`` with
    usage; refuses a prompt over 2,048 tokens with HTTP 400. SmolLM2's own template ignores ``tools``.
    Do not stop or kill it; use ``disposable_llama_server`` for that.
``tool_server``
    The same model with a ChatML template that renders tools Hermes-style (``tests/servers/
    hermes_tools.jinja``), so llama.cpp turns ``<tool_call>…</tool_call>`` in a reply into native
    ``tool_calls`` deltas. SmolLM2 does not call tools by itself: send
    ``fixtures_servers.tool_call_messages("pattern")`` with ``tools=[GREP_TOOL]`` and
    ``temperature=0`` and it calls ``grep`` (greedy, so the same every time).
``disposable_llama_server``
    A fresh SmolLM2 server for one test (about half a second to start), which the test may kill
    (``.kill()`` sends SIGKILL) to see a reply cut mid-stream.
``gateway``
    A real LiteLLM proxy (from ``.venv-gateway``, made by ``scripts/setup.sh``) in front of
    ``llama_server``: model ``smollm2`` with ``model_info.max_input_tokens: 2048``, master key
    ``.api_key`` (send it as a Bearer token). Starts offline in ~6–15 s. If ``.venv-gateway`` is
    missing, tests using it fail and say how to make it.

Helpers for tests live in ``tests/fixtures_servers.py`` (``GREP_TOOL``, ``tool_call_messages``,
``free_port``, ``silent_port``) and the fakes of servers that cannot be installed in ``tests/fakes``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures_servers import (
    GATEWAY_BIN,
    TOOLS_TEMPLATE,
    RunningServer,
    start_gateway,
    start_llama_server,
    stop_group,
)
from hypothesis import settings

from twinny_magics.modes import LEARNED_MODES
from twinny_magics.servers.asking import DEFAULT_CACHE

# Properties, not timings: a shared 2-core machine can take longer than hypothesis's 200 ms deadline on
# an ordinary example (performance is measured in benchmarks/, never asserted by a timer here).
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")

# The workspaces' search indexes go to a folder of this run, not the user's cache (kernels and
# subprocesses started by the tests inherit it).
os.environ["TWINNY_MAGICS_INDEX_DIR"] = tempfile.mkdtemp(prefix="twinny-test-index-")


@pytest.fixture(scope="session")
def server_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for the servers' logs."""
    return tmp_path_factory.mktemp("server-logs")


@pytest.fixture(scope="session")
def llama_server(server_logs: Path) -> Iterator[RunningServer]:
    """SmolLM2 on llama.cpp, window 2,048, in a subprocess for the whole session."""
    server = start_llama_server(server_logs)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def tool_server(server_logs: Path) -> Iterator[RunningServer]:
    """SmolLM2 on llama.cpp with a Hermes-style tool template (real native tool-call deltas)."""
    server = start_llama_server(server_logs, template=TOOLS_TEMPLATE, alias="smollm2-tools")
    yield server
    server.stop()


@pytest.fixture
def disposable_llama_server(tmp_path: Path) -> Iterator[RunningServer]:
    """A SmolLM2 server for one test, which it may kill."""
    server = start_llama_server(tmp_path, alias="smollm2-disposable")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gateway(llama_server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A real LiteLLM proxy in front of ``llama_server`` (model ``smollm2``, a master key)."""
    if not GATEWAY_BIN.exists():
        pytest.fail(
            f"The LiteLLM gateway is not installed ({GATEWAY_BIN} is missing). Run `bash scripts/test.sh` "
            "once (its setup_gateway_env makes .venv-gateway), or `source scripts/setup.sh && "
            "setup_gateway_env`."
        )
    server = start_gateway(llama_server, tmp_path_factory.mktemp("gateway"))
    yield server
    stop_group(server)


@pytest.fixture(autouse=True)
def _fresh_probe_cache() -> Iterator[None]:
    """Each test starts with nothing cached from another (the window cache is process-wide)."""
    DEFAULT_CACHE.clear()
    yield
    DEFAULT_CACHE.clear()


@pytest.fixture(autouse=True)
def _fresh_mode_memory() -> Iterator[None]:
    """Each test starts with nothing that ``mode="auto"`` learned in another (also process-wide)."""
    LEARNED_MODES.clear()
    yield
    LEARNED_MODES.clear()
