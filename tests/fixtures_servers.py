"""Real servers for tests: llama.cpp (SmolLM2) in a subprocess, and the LiteLLM gateway in front of it.

Used by ``conftest.py`` (the fixtures) and importable by tests for the helpers (``tool_call_messages``,
``GREP_TOOL``, ``free_port``, ``silent_port``). Everything binds to 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from twinny_magics.servers import ServerInfo

ROOT = Path(__file__).resolve().parent.parent
TOOLS_TEMPLATE = Path(__file__).resolve().parent / "servers" / "hermes_tools.jinja"
GATEWAY_VENV = ROOT / ".venv-gateway"
GATEWAY_BIN = GATEWAY_VENV / "bin" / "litellm"
GATEWAY_KEY = "sk-twinny-test"
GATEWAY_MODEL = "smollm2"
SMALL_CTX = 2048

GREP_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "grep",
        "description": "Search the workspace's files for a pattern.",
        "parameters": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
            "required": ["pattern"],
        },
    },
}


def tool_call_messages(pattern: str = "createServer") -> list[dict[str, Any]]:
    """A few-shot history after which SmolLM2 (greedy, on ``tool_server``) calls ``grep`` for ``pattern``.

    SmolLM2 does not call tools by itself; after four turns of "Find X" answered by a grep call it copies
    the pattern, writes ``<tool_call>…</tool_call>``, and llama.cpp streams it as a native tool call.
    Send with ``temperature=0`` and ``tools=[GREP_TOOL]``.
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Always call grep."}]
    for number, word in enumerate(["foo", "bar", "baz", "qux"]):
        messages.append({"role": "user", "content": f"Find {word}"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{number}",
                        "type": "function",
                        "function": {"name": "grep", "arguments": json.dumps({"pattern": word})},
                    }
                ],
            }
        )
    messages.append({"role": "user", "content": f"Find {pattern}"})
    return messages


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago (nothing listens there now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def silent_port() -> tuple[socket.socket, int]:
    """A listening socket that never accepts: connections complete (the kernel's backlog), no answer comes.

    Close the returned socket when done.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port: int = sock.getsockname()[1]
    return sock, port


@dataclass
class RunningServer:
    """A server process the tests started: where it is, and how to stop it."""

    base_url: str
    process: subprocess.Popen[bytes]
    model: str
    n_ctx: int | None = None
    api_key: str | None = None
    kind: str = "llamacpp"
    log: Path | None = None
    start_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def info(self) -> ServerInfo:
        """The server as a ``ServerInfo``."""
        from twinny_magics.servers.kinds import parse_kind

        kind = parse_kind(self.kind)
        assert kind is not None
        return ServerInfo(self.base_url, kind, self.model, self.api_key)

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.process.pid

    def log_tail(self, lines: int = 30) -> str:
        """The end of the server's log, for failure messages."""
        if self.log is None or not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def kill(self) -> None:
        """Kill the process at once (SIGKILL), as a crash would."""
        with suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 10 s) and close its pipes."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        for pipe in (self.process.stdout, self.process.stderr, self.process.stdin):
            if pipe is not None:
                pipe.close()


def _read_ready_line(process: subprocess.Popen[bytes], timeout: float) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.1)
        if ready:
            return process.stdout.readline().decode()
        if process.poll() is not None:
            return ""
    return ""


def start_llama_server(
    log_dir: Path, *, n_ctx: int = SMALL_CTX, template: Path | None = None, alias: str = "smollm2"
) -> RunningServer:
    """Start SmolLM2 on llama.cpp in a subprocess (``python -m twinny_magics.servers.embedded``)."""
    log = log_dir / f"llama-{alias}-{n_ctx}.log"
    command = [
        sys.executable,
        "-m",
        "twinny_magics.servers.embedded",
        "--port",
        "0",
        "--ctx",
        str(n_ctx),
        "--alias",
        alias,
        # One thread: with two on a 2-core machine, any other busy process (a parallel test, the gateway)
        # stalls llama.cpp's thread barrier and a 12-token reply takes seconds instead of 0.1 s.
        "--threads",
        "1",
        # A killed test run must not leave the server behind.
        "--exit-with-parent",
    ]
    if template is not None:
        command += ["--template", str(template)]
    with log.open("wb") as log_file:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log_file, cwd=ROOT)
    line = _read_ready_line(process, timeout=60)
    if not line.startswith("ready "):
        process.kill()
        process.wait()
        assert process.stdout is not None
        process.stdout.close()
        raise RuntimeError(
            f"llama.cpp server did not start: {line!r}\n{log.read_text(errors='replace')[-3000:]}"
        )
    _, url, seconds = line.split()
    return RunningServer(url, process, alias, n_ctx, log=log, start_seconds=float(seconds))


def gateway_config(backend: RunningServer, *, max_input_tokens: int = SMALL_CTX) -> str:
    """A LiteLLM config (YAML is a superset of JSON) routing ``smollm2`` to ``backend``."""
    config = {
        "model_list": [
            {
                "model_name": GATEWAY_MODEL,
                "litellm_params": {
                    "model": f"openai/{backend.model}",
                    "api_base": backend.base_url + "/v1",
                    "api_key": "none",
                },
                "model_info": {"max_input_tokens": max_input_tokens},
            }
        ],
        "general_settings": {"master_key": GATEWAY_KEY},
        "litellm_settings": {"telemetry": False, "num_retries": 0},
    }
    return json.dumps(config, indent=2)


def start_gateway(backend: RunningServer, work_dir: Path, *, timeout: float = 90.0) -> RunningServer:
    """Start the LiteLLM proxy from ``.venv-gateway`` offline, in front of ``backend``."""
    config = work_dir / "litellm.yaml"
    config.write_text(gateway_config(backend))
    log = work_dir / "litellm.log"
    port = free_port()
    env = {
        **os.environ,
        # Offline: the model cost map ships with the package instead of being fetched at start.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    command = [str(GATEWAY_BIN), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command, stdout=log_file, stderr=subprocess.STDOUT, cwd=work_dir, env=env, start_new_session=True
        )
    started = time.monotonic()
    url = f"http://127.0.0.1:{port}"
    server = RunningServer(
        url, process, GATEWAY_MODEL, SMALL_CTX, api_key=GATEWAY_KEY, kind="litellm", log=log
    )
    with httpx.Client(trust_env=False, timeout=2.0) as client:
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"LiteLLM exited at start (code {process.returncode}):\n{server.log_tail()}"
                )
            with suppress(httpx.HTTPError):
                if client.get(url + "/health/liveliness").status_code == 200:
                    break
            if time.monotonic() - started > timeout:
                server.stop()
                raise RuntimeError(f"LiteLLM was not up after {timeout:g} s:\n{server.log_tail()}")
            time.sleep(0.2)
    server.start_seconds = time.monotonic() - started
    return server


def stop_group(server: RunningServer) -> None:
    """Stop a server started in its own session, with every process it started."""
    if server.process.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(server.process.pid, signal.SIGTERM)
        try:
            server.process.wait(10)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(10)
    server.stop()
