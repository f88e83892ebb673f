"""A real kernel for tests, driven the way a frontend drives it (jupyter_client), on this venv's Python.

``python3_kernelspec`` writes a ``python3`` kernelspec for this virtualenv's Python into a temporary
``JUPYTER_PATH`` (the machine may have another ``python3`` kernel that cannot import the package);
`Kernel` starts one and runs cells, gathering each cell's messages and its execute reply.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager, start_new_kernel


@contextlib.contextmanager
def python3_kernelspec(root: Path, display_name: str = "Python 3 (twinny_magics)") -> Iterator[Path]:
    """A ``python3`` kernelspec for this virtualenv's Python under ``root``, first on ``JUPYTER_PATH``."""
    spec = root / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": display_name, "language": "python"})
    )
    before = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(root), before]))
    try:
        yield root
    finally:
        if before is None:
            del os.environ["JUPYTER_PATH"]
        else:
            os.environ["JUPYTER_PATH"] = before


class Kernel:
    """A kernel and a client; ``run`` executes code and gathers that cell's messages."""

    def __init__(self, cwd: Path) -> None:
        self.manager: KernelManager
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(cwd))
        #: The execute reply of the last cell `run` ran (its payload carries a next-input cell).
        self.reply: dict[str, Any] = {}

    def run(
        self,
        code: str,
        *,
        allow_stdin: bool = False,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        timeout: float = 60,
    ) -> list[dict[str, Any]]:
        msg_id = self.client.execute(code, allow_stdin=allow_stdin)
        messages = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.client.get_iopub_msg(timeout=timeout)
            if on_message is not None:
                on_message(message)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            messages.append(message)
            if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                self.reply = self._reply(msg_id, deadline)
                return messages
        raise TimeoutError(code)

    def _reply(self, msg_id: str, deadline: float) -> dict[str, Any]:
        while time.monotonic() < deadline:
            reply = self.client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                content: dict[str, Any] = reply["content"]
                return content
        return {}

    def value(self, expression: str) -> Any:
        """``expression`` evaluated in the kernel, carried back as JSON."""
        messages = self.run(f"import json as _j\nprint(_j.dumps({expression}))")
        text = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
        errors = [m["content"] for m in messages if m["msg_type"] == "error"]
        if errors:
            raise AssertionError("\n".join(errors[0]["traceback"]))
        return json.loads(text.strip().splitlines()[-1])

    def send_comm(
        self, msg_type: str, content: dict[str, Any], metadata: dict[str, Any] | None = None
    ) -> None:
        message = self.client.session.msg(msg_type, content, metadata=metadata or {})
        self.client.shell_channel.send(message)

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def shown(messages: list[dict[str, Any]]) -> str:
    """The text a frontend would show for these messages, updates included."""
    parts = []
    for message in messages:
        content = message["content"]
        if message["msg_type"] == "stream":
            parts.append(content["text"])
        elif message["msg_type"] in ("display_data", "update_display_data", "execute_result"):
            parts.append(content["data"].get("text/plain", ""))
        elif message["msg_type"] == "error":
            parts.append("\n".join(content["traceback"]))
    return "\n".join(parts)
