"""The progress of a running experiment: a line updated in place in a notebook, a line a run elsewhere."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from twinny_magics.experiment.records import Run

Progress = Literal["auto", "rich", "text", "off"]


class ProgressLine:
    """A line updated in place in a notebook; a line per finished run on stderr elsewhere."""

    def __init__(self, style: Progress) -> None:
        self.style = style
        self.handle: Any = None

    def _bundle(self, text: str, done: bool) -> dict[str, str]:
        from twinny_magics.experiment import report  # noqa: PLC0415

        return report.bundle(report.progress_html(text, done), text)

    def show(self, text: str, *, done: bool = False) -> None:
        if self.style != "rich":
            return
        from IPython.display import display  # noqa: PLC0415

        show: Callable[..., Any] = display  # IPython's display is untyped
        if self.handle is None:
            self.handle = show(self._bundle(text, done), raw=True, display_id=True)
        else:
            self.handle.update(self._bundle(text, done), raw=True)

    def ran(self, number: int, total: int, run: Run, fleet: bool = False) -> None:
        if self.style != "text":
            return
        from twinny_magics.display.reprs import plain  # noqa: PLC0415
        from twinny_magics.experiment.report import MARKS  # noqa: PLC0415

        repetition = f" #{run.repeat + 1}" if run.repeat else ""
        why = f" — {run.why.splitlines()[0][:100]}" if run.why and run.outcome != "pass" else ""
        line = f"[{number}/{total}] {MARKS[run.outcome]} {run.question} · {run.variant}{repetition}"
        on = f" on {run.server}" if fleet and run.server else ""
        print(plain(f"{line} ({run.seconds:.1f} s){on}{why}"), file=sys.stderr, flush=True)

    def finish(self, text: str) -> None:
        if self.style == "rich":
            self.show(text, done=True)
        elif self.style == "text":
            from twinny_magics.display.reprs import plain  # noqa: PLC0415

            print(plain(text), file=sys.stderr, flush=True)


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"
