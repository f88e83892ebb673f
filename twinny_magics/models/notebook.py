"""What ``%agent models`` and ``%agent pull NAME`` show: the catalog as a table, a pull with its progress.

A pull in a notebook shows an ipywidgets bar; anywhere else (a terminal, nbconvert without widgets) a
line each tenth of the way. An error is one line (IPython's ``UsageError``, no traceback).
"""

from __future__ import annotations

import html
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from IPython.core.error import UsageError

from twinny_magics.errors import ModelPullError
from twinny_magics.models.catalog import CATALOG, CatalogModel, human_size
from twinny_magics.models.hub import OnDisk, Progress, Pulled, on_disk, pull

USAGE_MODELS = "%agent models [GGUF_FOLDER ...]: the catalog, and which models are on disk"
USAGE_PULL = "%agent pull NAME: download a catalog model (see %agent models)"


@dataclass(frozen=True)
class ModelsTable:
    """The catalog with what is on disk, for a notebook (HTML) or a terminal (text)."""

    models: tuple[CatalogModel, ...]
    here: tuple[OnDisk, ...]

    def _where(self, model: CatalogModel) -> str:
        found = next((item for item in self.here if item.model == model), None)
        return str(found.path) if found is not None else f"%agent pull {model.name}"

    def _rows(self) -> list[tuple[str, ...]]:
        rows: list[tuple[str, ...]] = [
            (m.name, human_size(m.size), f"{m.window:,}", m.measured, m.licence, self._where(m))
            for m in self.models
        ]
        files = [item for item in self.here if item.model is None]  # GGUF files given by path
        rows += [(item.name, human_size(item.size), "", "", "", str(item.path)) for item in files]
        return rows

    _HEAD = ("model", "size", "window", "answered here", "licence", "on disk")

    def text(self) -> str:
        """A plain table."""
        rows = [self._HEAD, *self._rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(self._HEAD))]
        return "\n".join(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
        )

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return self.html()

    def html(self) -> str:
        """An HTML table (every cell escaped: file names are anyone's text)."""
        head = "".join(f"<th style='text-align:left'>{cell}</th>" for cell in self._HEAD)
        body = "".join(
            "<tr>"
            + "".join(f"<td style='text-align:left'>{html.escape(cell)}</td>" for cell in row)
            + "</tr>"
            for row in self._rows()
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def magic_models(args: Sequence[str] = ()) -> ModelsTable:
    """``%agent models [FOLDER ...]``: the catalog, which models are on disk, and GGUF files in FOLDERs."""
    return ModelsTable(CATALOG, tuple(on_disk(*args)))


@dataclass(frozen=True)
class PullReport:
    """What a pull did, in one line."""

    pulled: Pulled

    def __repr__(self) -> str:
        p = self.pulled
        how = (
            f"{human_size(p.size)} in {p.seconds:.1f} s ({human_size(int(p.speed))}/s), checked"
            if p.downloaded
            else "already on disk, checked"
        )
        return (
            f"{p.model.name}: {how}, at {p.path}. `%%agent --model {p.model.name}` uses it; a session on "
            "the default SmolLM2 moves to it at its next cell."
        )


def magic_pull(args: Sequence[str], *, shell: Any = None, out: TextIO | None = None) -> PullReport:
    """``%agent pull NAME``: download a catalog model, showing progress; errors as one line."""
    if len(args) != 1:
        raise UsageError(USAGE_PULL)
    name = args[0]
    progress = _widget_progress(name) if getattr(shell, "kernel", None) is not None else None
    if progress is None:
        progress = TextProgress(name, out or sys.stdout)
    try:
        return PullReport(pull(name, progress=progress))
    except ModelPullError as error:
        raise UsageError(str(error)) from None


class TextProgress:
    """A line each tenth of the way: ``qwen2.5-coder-1.5b: 30% of 1.12 GB, 41 MB/s``."""

    def __init__(self, name: str, out: TextIO) -> None:
        self.name, self.out = name, out
        self.started = time.perf_counter()
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        tenth = done * 10 // total if total else 0
        if tenth <= self.shown:
            return
        self.shown = tenth
        rate = done / max(time.perf_counter() - self.started, 1e-6)
        print(f"{self.name}: {tenth * 10}% of {human_size(total)}, {human_size(int(rate))}/s", file=self.out)


def _widget_progress(name: str) -> Progress | None:
    """An ipywidgets bar shown in the cell's output (None when ipywidgets is missing)."""
    try:
        import ipywidgets  # noqa: PLC0415 - only a notebook needs it
        from IPython.display import display  # noqa: PLC0415
    except ImportError:
        return None
    bar = ipywidgets.IntProgress(value=0, min=0, max=1, description=name[:30])
    label = ipywidgets.Label("")
    show: Any = display  # IPython's display is untyped
    show(ipywidgets.HBox([bar, label]))
    started = time.perf_counter()

    def update(done: int, total: int) -> None:
        bar.max = max(total, 1)
        bar.value = min(done, bar.max)
        rate = done / max(time.perf_counter() - started, 1e-6)
        label.value = f"{human_size(done)} of {human_size(total)}, {human_size(int(rate))}/s"

    return update
