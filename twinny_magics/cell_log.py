"""The cells run in a kernel, recorded as they finish: what ``cell_history`` shows the model.

Installed by ``%load_ext twinny_magics`` (kept light: no tools, no loop), on the shell's
``pre_run_cell``/``post_run_cell`` events. While a user's cell runs its stdout and stderr are teed — the
user still sees everything — into a tail of `cells.PRINTED_CHARS`; its rich outputs are named as they
are published (``[image/png 640×480]``), its value is the text/plain the displayhook showed (cut), and
its error is kept as the exception line and the frames of the user's own code. ``%%agent`` cells are
not recorded. Cells run before the extension was loaded are filled in from ``In``/``Out`` (source and
value only). Code the agent runs (``tools/kernel.py``) is recorded here too, marked as the agent's.

What the history answers has the kernel's known secrets hidden (`hide_known`): the values of its
secret-named environment variables and string variables, wherever they show, in whatever cell set or
printed them. Every answer is masked again on its way out (``redact.mask_secrets``).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import io
import logging
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from twinny_magics import cells
from twinny_magics.cells import CellRecord
from twinny_magics.redact import known_secret, mask_known

log = logging.getLogger(__name__)

#: Cells the history keeps (the newest).
KEPT_CELLS = 50


class TailWriter(io.TextIOBase):
    """A text stream that keeps the last ``chars`` characters written and counts them all.

    Writes from other threads than ``owner`` go to ``passthrough`` instead: only what the running code
    prints is captured, not the reply's own progress lines written meanwhile.
    """

    def __init__(self, chars: int, passthrough: Any = None, owner: int | None = None) -> None:
        super().__init__()
        self._parts: collections.deque[str] = collections.deque()
        self._kept = 0
        self.chars = chars
        self.total = 0
        self.passthrough = passthrough
        #: While set, a tee does not keep what passes (the shell writing a value or a traceback itself).
        self.paused = False
        self.owner = owner if owner is not None else threading.get_ident()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = text if isinstance(text, str) else str(text)  # print() of a non-str by C code
        if threading.get_ident() != self.owner and self.passthrough is not None:
            return int(self.passthrough.write(text) or 0)
        self.total += len(text)
        self._parts.append(text[-self.chars :])
        self._kept += len(self._parts[-1])
        while self._kept - len(self._parts[0]) >= self.chars:
            self._kept -= len(self._parts.popleft())
        return len(text)

    def text(self) -> str:
        """The tail kept (at most ``chars``)."""
        return "".join(self._parts)[-self.chars :]


class _Tee:
    """A stream that writes through to ``stream`` and keeps a tail (a user's cell: they see it all)."""

    def __init__(self, stream: Any, tail: TailWriter) -> None:
        self._stream = stream
        self._tail = tail

    def write(self, text: str) -> int:
        if not self._tail.paused:
            with contextlib.suppress(Exception):
                self._tail.write(text)
        return int(self._stream.write(text) or 0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class CellLog:
    """The cells run in one shell, recorded as they finish (see the module docstring).

    Installed once per shell by ``%load_ext twinny_magics``; a user's cell has its stdout and stderr
    teed (they still see everything) into a tail of `cells.PRINTED_CHARS`, and its rich outputs named as
    they are published.
    """

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.records: collections.deque[CellRecord] = collections.deque(maxlen=KEPT_CELLS)
        self._current: CellRecord | None = None
        self._tail: TailWriter | None = None
        self._streams: tuple[Any, Any] | None = None
        self._publish: Any = None
        self._write_format: Any = None
        self._show_tb: Any = None
        self._prompt: Any = None
        #: The text/plain the displayhook showed for the running cell's value.
        self._shown: str | None = None
        #: While code of the agent runs: where its rich outputs go (see `capture`).
        self.capturing: CellRecord | None = None
        self._main = threading.get_ident()

    # -- installing ------------------------------------------------------------------------------------

    @classmethod
    def of(cls, shell: Any) -> CellLog:
        """The shell's log, installed on first use."""
        log_ = getattr(shell, "_twinny_cell_log", None)
        if isinstance(log_, CellLog):
            return log_
        made = cls(shell)
        made.install()
        return made

    def install(self) -> None:
        shell = self.shell
        shell._twinny_cell_log = self
        shell.events.register("pre_run_cell", self._pre)
        shell.events.register("post_run_cell", self._post)
        pub = getattr(shell, "display_pub", None)
        if pub is not None:
            self._publish = pub.publish
            pub.publish = self._published
        hook = getattr(shell, "displayhook", None)
        if hook is not None and hasattr(hook, "write_format_data"):
            self._write_format = hook.write_format_data
            hook.write_format_data = self._value_shown
        if hasattr(shell, "_showtraceback"):
            # A terminal shell prints the traceback to stdout: the record has the error already.
            self._show_tb = shell._showtraceback
            shell._showtraceback = self._traceback_shown
        if hook is not None and hasattr(hook, "write_output_prompt"):
            self._prompt = hook.write_output_prompt  # "Out[3]: " in a terminal: not the cell's print

            def prompt(*args: Any, **kwargs: Any) -> Any:
                with self._paused():
                    return self._prompt(*args, **kwargs)

            hook.write_output_prompt = prompt

    def uninstall(self) -> None:
        shell = self.shell
        for name, callback in (("pre_run_cell", self._pre), ("post_run_cell", self._post)):
            with contextlib.suppress(ValueError):
                shell.events.unregister(name, callback)
        pub = getattr(shell, "display_pub", None)
        if pub is not None and self._publish is not None and pub.publish == self._published:
            pub.publish = self._publish
        hook = getattr(shell, "displayhook", None)
        if hook is not None and self._write_format is not None:
            with contextlib.suppress(AttributeError):
                del hook.write_format_data  # the instance attribute: the class's method again
        if self._show_tb is not None:
            with contextlib.suppress(AttributeError):
                del shell._showtraceback
        if hook is not None and self._prompt is not None:
            with contextlib.suppress(AttributeError):
                del hook.write_output_prompt
        self._untee()
        if getattr(shell, "_twinny_cell_log", None) is self:
            del shell._twinny_cell_log

    # -- the events ------------------------------------------------------------------------------------

    def _pre(self, info: Any) -> None:
        source = str(getattr(info, "raw_cell", "") or "")
        self._untee()
        if cells.is_agent_cell(source):
            self._current = None
            return
        self._current = CellRecord(None, cells.clip(source, cells.SOURCE_CHARS))
        self._shown = None
        self._tee()

    def _post(self, result: Any) -> None:
        record, self._current = self._current, None
        tail = self._tail
        self._untee()
        if record is None:
            return
        try:
            record.number = getattr(result, "execution_count", None)
            if tail is not None:
                record.printed, record.printed_chars = tail.text(), tail.total
            error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
            if isinstance(error, BaseException):
                record.error = cells.error_text(error, self.where)
            value = getattr(result, "result", None)
            if value is not None or self._shown is not None:
                record.value = value_text(value, self._shown)
        except Exception:
            log.warning("recording a cell failed", exc_info=True)
        if record.number is not None:  # a cell not stored in the history (silent) is not shown either
            self.records.append(record)

    def _tee(self) -> None:
        self._tail = TailWriter(cells.PRINTED_CHARS)
        self._streams = (sys.stdout, sys.stderr)
        sys.stdout = _Tee(sys.stdout, self._tail)
        sys.stderr = _Tee(sys.stderr, self._tail)

    def _untee(self) -> None:
        if self._streams is not None:
            # Put back only what is still ours: a cell that set sys.stdout itself keeps its choice.
            if isinstance(sys.stdout, _Tee):
                sys.stdout = self._streams[0]
            if isinstance(sys.stderr, _Tee):
                sys.stderr = self._streams[1]
        self._streams = None
        self._tail = None

    def _published(self, data: Any = None, metadata: Any = None, *args: Any, **kwargs: Any) -> Any:
        """The display publisher's ``publish``: named into the cell that shows it, then sent on."""
        on_main = threading.get_ident() == self._main
        capturing = self.capturing if on_main else None
        try:
            target = capturing or (self._current if on_main else None)
            if target is not None and isinstance(data, dict) and not kwargs.get("update"):
                target.add_output(cells.output_name(data))
        except Exception:
            log.warning("naming an output failed", exc_info=True)
        if capturing is not None:
            return None  # the agent's code: named for the model, shown in the reply's item, not the cell
        return self._publish(data, metadata, *args, **kwargs)

    def _value_shown(self, format_dict: Any, md_dict: Any = None) -> Any:
        """The displayhook's ``write_format_data``: the value's text/plain kept, then shown as ever."""
        with contextlib.suppress(Exception):
            if self._current is not None and threading.get_ident() == self._main:
                plain = format_dict.get("text/plain") if isinstance(format_dict, dict) else None
                if isinstance(plain, str):
                    self._shown = cells.clip(plain, cells.VALUE_CHARS)
                rich = [k for k in format_dict if k != "text/plain"] if isinstance(format_dict, dict) else []
                if rich and plain is None:
                    self._shown = cells.output_name(format_dict)
        with self._paused():
            return self._write_format(format_dict, md_dict)

    def _traceback_shown(self, *args: Any, **kwargs: Any) -> Any:
        with self._paused():
            return self._show_tb(*args, **kwargs)

    @contextlib.contextmanager
    def _paused(self) -> Iterator[None]:
        tail = self._tail
        if tail is not None:
            tail.paused = True
        try:
            yield
        finally:
            if tail is not None:
                tail.paused = False

    # -- what the tool answers ---------------------------------------------------------------------------

    def where(self, filename: str) -> str | None:
        """``cell [3]`` for a cell's code, ``agent code`` for the agent's, a workspace file's name, else
        None (library code)."""
        if filename.startswith("<agent run"):
            return "agent code"
        number = getattr(getattr(self.shell, "compile", None), "_filename_map", {}).get(filename)
        if number is not None:
            return f"cell [{number}]"
        if filename.startswith("<ipython-input-"):
            return f"cell [{filename.split('-')[2]}]" if filename.count("-") >= 3 else "a cell"
        if filename.startswith("<"):
            return None
        path = os.path.abspath(filename)
        if any(path.startswith(prefix) for prefix in _library_prefixes()):
            return None
        cwd = os.getcwd()
        return os.path.relpath(path, cwd) if path.startswith(cwd + os.sep) else None

    def history(self) -> list[CellRecord]:
        """The records, with cells run before the log was installed filled in from ``In``/``Out``."""
        recorded = {r.number for r in self.records}
        ns = getattr(self.shell, "user_ns", {}) or {}
        inputs, outputs = ns.get("In"), ns.get("Out")
        earlier: list[CellRecord] = []
        if isinstance(inputs, list) and isinstance(outputs, dict):
            first = min((n for n in recorded if n is not None), default=len(inputs))
            for number in range(1, min(first, len(inputs))):
                source = str(inputs[number])
                if number in recorded or cells.is_agent_cell(source) or _is_magic_load(source):
                    continue
                record = CellRecord(number, cells.clip(source, cells.SOURCE_CHARS), partial=True)
                if number in outputs:
                    record.value = value_text(outputs[number], None)
                earlier.append(record)
        return hide_known([*earlier[-KEPT_CELLS:], *self.records], self.known_secrets())

    def known_secrets(self) -> list[str]:
        """The values the kernel holds under secret names (`redact.known_secret`): of its environment
        variables (``OPENAI_API_KEY``, whatever cell set it) and of the user's string variables."""
        ns = getattr(self.shell, "user_ns", None)
        named = list(os.environ.items())
        if isinstance(ns, dict):
            named += [(name, value) for name, value in list(ns.items()) if isinstance(value, str)]
        return [value for name, value in named if isinstance(name, str) and known_secret(name, value)]


def hide_known(records: list[CellRecord], secrets: list[str]) -> list[CellRecord]:
    """Copies of ``records`` with each known secret hidden wherever it shows: a cell that printed
    ``os.environ["OPENAI_API_KEY"]``, showed ``%env HF_TOKEN`` or echoed ``api_key`` shows the mask, in
    whatever form the cell got it. The log keeps what ran (a secret set later is hidden the same way)."""
    if not secrets:
        return records
    return [
        dataclasses.replace(
            record,
            source=mask_known(record.source, secrets),
            value=mask_known(record.value, secrets),
            printed=mask_known(record.printed, secrets),
            outputs=[mask_known(name, secrets) for name in record.outputs],
            error=mask_known(record.error, secrets),
        )
        for record in records
    ]


def _is_magic_load(source: str) -> bool:
    return source.strip().startswith(("%load_ext", "get_ipython().run_line_magic('load_ext'"))


@functools.cache
def _library_prefixes() -> tuple[str, ...]:
    import sysconfig  # noqa: PLC0415

    paths = {sysconfig.get_paths().get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.abspath(p) + os.sep for p in paths | {sys.prefix, sys.base_prefix} if p)


def value_text(value: object, shown: str | None) -> str:
    """A cell's value: its kind and size first for tables and arrays, then the text the user saw.

    No repr is run here (a repr is the object's own code): the text is what the displayhook showed,
    and a value nobody displayed (``Out`` of a cell run before the log) is named by its type, or shown
    for the built-in scalars whose repr is safe.
    """
    head = shape_of(value) if value is not None else ""
    if shown is None:
        if type(value) in (int, float, bool, complex) or value is None:
            shown = repr(value)
        elif type(value) in (str, bytes):
            shown = cells.clip(repr(value), cells.VALUE_CHARS)
        else:
            shown = f"a {type(value).__module__}.{type(value).__qualname__}"
    return "\n".join(part for part in (head, shown) if part)


def shape_of(value: object) -> str:
    kind = type(value)
    module = kind.__module__.split(".")[0]
    try:
        if module in ("pandas", "polars") and kind.__name__ in ("DataFrame", "Series"):
            shape = value.shape  # type: ignore[attr-defined]
            size = "×".join(f"{n:,}" for n in shape)
            return f"[{kind.__name__} {size}]"
        if module == "numpy" and kind.__name__ == "ndarray":
            dims = "×".join(f"{n:,}" for n in value.shape)  # type: ignore[attr-defined]
            return f"[ndarray {dims} {value.dtype}]"  # type: ignore[attr-defined]
    except Exception:
        return ""
    return ""
