"""A fault-injecting model server on 127.0.0.1, for the hostile tests.

A real HTTP/1.1 server on a real socket (a ``socketserver`` thread per connection), written by hand so
that it can do what a well-behaved server library never would: drop the connection after any byte,
frame a body by closing the connection, send garbage, stay silent after accepting, or come back on the
same port with another window. It speaks the OpenAI-compatible chat route with SSE
(``POST /v1/chat/completions``) and tells its window the llama.cpp way (``GET /props``) and the vLLM way
(``GET /v1/models``); every other route is a 404, as on a real server.

Each chat request is answered by the next queued :class:`Answer`, or, when none is queued, by a short
healthy reply (``HEALTHY``) whose usage is the server's count of the prompt::

    with HostileServer(window=8192) as server:
        server.queue(Answer(status=500, pieces=[b"boom"]), Answer(silent=True))
        ...  # the first request gets a 500, the second an accepted connection and then nothing
        server.restart(window=2048)  # the same port, another window

With ``strict=True`` a prompt counted over the window is refused as llama.cpp refuses it (HTTP 400
``exceed_context_size_error`` with ``n_prompt_tokens`` and ``n_ctx``). ``bodies`` holds the JSON of every
chat request, in order.

The end of the module drives ``%%agent`` against it on a real IPython shell: ``agent_shell`` (the shell
with the extension loaded, in a workspace) and ``run_cell`` (a cell as a notebook runs it, exceptions
shown rather than raised, and all the text it showed).
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

Framing = Literal["chunked", "close", "length"]
MODEL = "m"
#: What the healthy default reply says.
HEALTHY = "All good here."


@dataclass
class Answer:
    """How one request is answered.

    ``pieces`` are the body, sent one by one with ``delay`` seconds before each. ``framing`` is how the
    body's end is marked: chunked (as llama.cpp does), by closing the connection, or a Content-Length.
    ``cut_at`` drops the connection once that many body bytes are out, without a proper end. ``silent``
    reads the request and then answers nothing until the server stops; ``then_silent`` sends the pieces
    and then nothing more, keeping the connection open. ``then_window`` makes the server, once this answer
    is out, come back as if restarted with that window (the connection closes; no new port).
    """

    status: int = 200
    pieces: list[bytes] = field(default_factory=list)
    content_type: str = "text/event-stream"
    framing: Framing = "chunked"
    delay: float = 0.0
    cut_at: int | None = None
    silent: bool = False
    then_silent: bool = False
    then_window: int | None = None

    @property
    def body(self) -> bytes:
        """The whole body as it would be without a cut."""
        return b"".join(self.pieces)


def event(chunk: dict[str, Any] | str) -> bytes:
    """One SSE event: a chunk as JSON, or a string as is (``[DONE]``)."""
    data = chunk if isinstance(chunk, str) else json.dumps(chunk)
    return f"data: {data}\n\n".encode()


def delta(content: str | None = None, *, finish: str | None = None, **fields: Any) -> dict[str, Any]:
    """A streamed chat-completion chunk of the first choice."""
    piece: dict[str, Any] = dict(fields)
    if content is not None:
        piece["content"] = content
    return {"choices": [{"index": 0, "delta": piece, "finish_reason": finish}]}


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    """The usage chunk llama.cpp sends after the last choice (``choices: []``)."""
    return {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}


#: A piece the server replaces by a usage chunk with its own count of the request's prompt.
USAGE = b"<usage>"


def text_pieces(text: str, *, usage: int | bool = True, words: bool = True, done: bool = True) -> list[bytes]:
    """A streamed text reply as SSE events: a word an event, the finish, usage, ``[DONE]``.

    ``usage`` True: the server's own count of the prompt; a number: that count; False: no usage chunk.
    """
    parts = text.split(" ") if words else [text]
    pieces = [event(delta(role="assistant", content=""))]
    pieces += [event(delta(part if n == 0 else " " + part)) for n, part in enumerate(parts)]
    pieces.append(event(delta(finish="stop")))
    if usage is True:
        pieces.append(USAGE)
    elif usage is not False:
        pieces.append(event(_usage(usage, len(parts))))
    if done:
        pieces.append(event("[DONE]"))
    return pieces


def call_pieces(name: str, arguments: str | list[str], *, call_id: str = "call_1") -> list[bytes]:
    """A native tool call streamed as OpenAI deltas; ``arguments`` as one text or its fragments."""
    fragments = [arguments] if isinstance(arguments, str) else arguments
    first = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    pieces = [event(delta(role="assistant", tool_calls=[first]))]
    pieces += [
        event(delta(tool_calls=[{"index": 0, "function": {"arguments": fragment}}])) for fragment in fragments
    ]
    return [*pieces, event(delta(finish="tool_calls")), USAGE, event("[DONE]")]


def tool_call(name: str, arguments: dict[str, Any] | str, **options: Any) -> Answer:
    """An answer that calls ``name`` natively (``arguments`` as a dict, or as raw text)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Answer(pieces=call_pieces(name, text), **options)


def text(reply: str, **options: Any) -> Answer:
    """An answer that says ``reply``."""
    return Answer(pieces=text_pieces(reply), **options)


def json_answer(status: int, body: Any) -> Answer:
    """A JSON answer (an error, a listing), framed with a Content-Length."""
    return Answer(
        status=status,
        pieces=[json.dumps(body).encode()],
        content_type="application/json",
        framing="length",
    )


def too_long(prompt_tokens: int, window: int) -> Answer:
    """llama.cpp's refusal of a prompt over its window."""
    return json_answer(
        400,
        {
            "error": {
                "code": 400,
                "message": (
                    f"request ({prompt_tokens} tokens) exceeds the available context size ({window} tokens), "
                    "try increasing it"
                ),
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt_tokens,
                "n_ctx": window,
            }
        },
    )


def prompt_tokens(body: dict[str, Any]) -> int:
    """This server's count of a request's prompt: a token for every 3 characters of its JSON."""
    return max(
        1, len(json.dumps(body.get("messages", []))) // 3 + len(json.dumps(body.get("tools") or [])) // 3
    )


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error"}


class _TCPServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = False
    block_on_close = True  # server_close() joins every connection's thread


class HostileServer:
    """The fault-injecting server; see the module docstring."""

    def __init__(self, *, window: int | None = 8192, strict: bool = False, port: int = 0) -> None:
        self.window = window
        self.strict = strict
        #: Replaces the window routes' answer (a silent, broken or garbled /props) when set.
        self.window_answer: Answer | None = None
        self.bodies: list[dict[str, Any]] = []
        self._queue: deque[Answer] = deque()
        self._lock = threading.Lock()
        self._port = port
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._tcp: _TCPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on (kept across restarts)."""
        return self._port

    @property
    def url(self) -> str:
        """The base URL (no ``/v1``)."""
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> HostileServer:
        """Listen on 127.0.0.1 (the same port as before after a stop)."""
        self._stopping = threading.Event()
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                owner._serve(self.request)

        self._tcp = _TCPServer(("127.0.0.1", self._port), Handler)
        self._port = self._tcp.server_address[1]
        self._thread = threading.Thread(target=self._tcp.serve_forever, args=(0.05,), name="hostile-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and end every connection (silent ones too); returns when all are closed."""
        if self._tcp is None:
            return
        self._stopping.set()
        self._tcp.shutdown()
        with self._lock:
            for connection in self._connections:
                with suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
        self._tcp.server_close()
        assert self._thread is not None
        self._thread.join()
        self._tcp = None

    def restart(self, *, window: int | None) -> None:
        """Stop, then come back on the same port with another window (as a server reloaded with ``-c``)."""
        self.stop()
        self.window = window
        self.start()

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def queue(self, *answers: Answer) -> None:
        """Answer the next chat requests with these, in order."""
        with self._lock:
            self._queue.extend(answers)

    def clear(self) -> None:
        """Forget the answers still queued (what a stopped reply did not get to ask for)."""
        with self._lock:
            self._queue.clear()

    # -- serving -----------------------------------------------------------------------------------------

    def _serve(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)
        reader = connection.makefile("rb")
        try:
            while not self._stopping.is_set():
                request = _read_request(reader)
                if request is None:
                    return
                method, path, body = request
                if not self._send(connection, self._answer(method, path, body)):
                    return
        except OSError:
            return  # the client went away
        finally:
            reader.close()
            with self._lock:
                self._connections.discard(connection)

    def _answer(self, method: str, path: str, raw: bytes) -> Answer:
        if method == "GET" and path in ("/props", "/v1/models"):
            if self.window_answer is not None:
                return self.window_answer
            if self.window is None:
                return json_answer(404, {"error": {"code": 404, "message": "File Not Found"}})
            if path == "/props":
                return json_answer(200, {"default_generation_settings": {"n_ctx": self.window}})
            return json_answer(200, {"object": "list", "data": [{"id": MODEL, "max_model_len": self.window}]})
        if method == "POST" and path == "/v1/chat/completions":
            try:
                body: dict[str, Any] = json.loads(raw)
            except ValueError:
                return json_answer(400, {"error": {"code": 400, "message": "The body is not JSON."}})
            tokens = prompt_tokens(body)
            refused = self.strict and self.window is not None and tokens > self.window
            with self._lock:
                self.bodies.append(body)
                # A refused request is not answered: the queued answer waits for the retry.
                queued = self._queue.popleft() if self._queue and not refused else None
            if refused:
                assert self.window is not None
                return too_long(tokens, self.window)
            answer = queued or Answer(pieces=text_pieces(HEALTHY))
            if USAGE in answer.pieces:
                counted = event(_usage(tokens, 10))
                answer = replace(answer, pieces=[counted if p == USAGE else p for p in answer.pieces])
            return answer
        return json_answer(404, {"error": {"code": 404, "message": "File Not Found"}})

    def _send(self, connection: socket.socket, answer: Answer) -> bool:
        """Send one answer; whether the connection may carry another request."""
        if answer.silent:
            self._stopping.wait()
            return False
        head = [
            f"HTTP/1.1 {answer.status} {_REASONS.get(answer.status, 'Status')}",
            f"Content-Type: {answer.content_type}",
        ]
        if answer.framing == "chunked":
            head.append("Transfer-Encoding: chunked")
        elif answer.framing == "length":
            head.append(f"Content-Length: {len(answer.body)}")
        else:
            head.append("Connection: close")
        connection.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        left = answer.cut_at
        for whole in answer.pieces:
            if answer.delay and self._stopping.wait(answer.delay):
                return False
            piece = whole
            if left is not None:
                piece, left = whole[:left], left - min(left, len(whole))
            if piece:
                framed = b"%x\r\n%s\r\n" % (len(piece), piece) if answer.framing == "chunked" else piece
                connection.sendall(framed)
            if left == 0:
                return False  # cut: the connection drops here, without the body's proper end
        if answer.then_silent:
            self._stopping.wait()
            return False
        if answer.framing == "chunked":
            connection.sendall(b"0\r\n\r\n")
        if answer.then_window is not None:
            self.window = answer.then_window
            return False
        return answer.framing != "close"


def _read_request(reader: Any) -> tuple[str, str, bytes] | None:
    """One HTTP request off the connection (method, path, body), None when the client closed it."""
    line = reader.readline(65537)
    if not line:
        return None
    method, path, _version = line.decode("latin-1").split(" ", 2)
    length = 0
    while True:
        header = reader.readline(65537)
        if header in (b"\r\n", b"\n", b""):
            break
        name, _, value = header.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return method, path.split("?", 1)[0], reader.read(length) if length else b""


# -- driving %%agent against it ---------------------------------------------------------------------------

#: What a Python traceback shown in a cell starts with (IPython's verbose form says it too).
TRACEBACK = "Traceback (most recent call last)"


@contextmanager
def agent_shell(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, output: str = "rich"
) -> Iterator[InteractiveShell]:
    """The test shell with the extension loaded, working in ``workspace``; ``output`` as a notebook shows."""
    shell = start_ipython() or InteractiveShell.instance()
    # %config writes into the shell's own config, which outlives a test: start each from the defaults.
    shell.config.pop("TwinnyMagics", None)
    monkeypatch.chdir(workspace)
    shell.extension_manager.load_extension("twinny_magics")
    shell.run_line_magic("config", f"TwinnyMagics.output = {output!r}")
    try:
        yield shell
    finally:
        shell.extension_manager.unload_extension("twinny_magics")
        shell.config.pop("TwinnyMagics", None)
        for name in ("s", "session"):
            shell.user_ns.pop(name, None)


@dataclass
class Cell:
    """What one cell showed: whether it ran without an exception, and all its text."""

    success: bool
    text: str


def run_cell(ip: InteractiveShell, server: HostileServer, question: str, line: str = "") -> Cell:
    """Run a ``%%agent`` cell against ``server`` as a notebook does (an exception is shown, not raised)."""
    source = f"%%agent --server {server.url} --kind llamacpp --model {MODEL} {line}\n{question}\n"
    return run_source(ip, source)


def run_source(ip: InteractiveShell, source: str) -> Cell:
    """Run any cell; its text is stdout, stderr and the text/plain of everything it displayed."""
    with capture_output() as captured:
        result = ip.run_cell(source)
    shown = [output.data.get("text/plain", "") for output in captured.outputs]
    return Cell(result.success, "\n".join([captured.stdout, captured.stderr, *shown]))
