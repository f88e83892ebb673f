"""What ``%load_ext twinny_magics`` costs a fresh process, beside a bare shell and ``jupyter_ai_magics``.

Each measurement is a new Python process that makes an IPython shell and then (or not) loads one
extension, timed from outside (the whole process, wall clock) and from inside (the ``load_ext`` call).
What an extension *adds* is its process's median wall time less the bare shell's in the same virtualenv.

``jupyter_ai_magics`` is not a project dependency: it is measured from a throwaway virtualenv when one is
given (``--jai-venv``, default ``/tmp/jai-venv``; make it with
``python -m venv /tmp/jai-venv && /tmp/jai-venv/bin/pip install jupyter-ai-magics``). Without it the
numbers measured elsewhere (1.05 s against 0.09 s for a bare shell) stand in, labelled as such.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_JAI_VENV = Path("/tmp/jai-venv")
REFERENCE_JAI: dict[str, Any] = {
    "bare_s": 0.09,
    "with_s": 1.05,
    "source": "the issue's reference numbers (measured elsewhere)",
}

# Run in the fresh process: make the shell, then load the extension named on the command line (if any).
PROBE = """
import sys, time
started = time.perf_counter()
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
ready = time.perf_counter()
if len(sys.argv) > 1:
    shell.run_line_magic("load_ext", sys.argv[1])
print(f"{ready - started:.4f} {time.perf_counter() - ready:.4f}")
"""


def _once(python: Path | str, extension: str | None) -> tuple[float, float]:
    """(whole process wall seconds, seconds inside ``load_ext``) for one fresh process."""
    command = [str(python), "-c", PROBE] + ([extension] if extension else [])
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd="/tmp")
    wall = time.perf_counter() - started
    _, load = done.stdout.split()
    return wall, float(load)


def measure(python: Path | str, extension: str | None, repeat: int) -> dict[str, float]:
    """Median wall time of ``repeat`` fresh processes, and the median time inside ``load_ext``."""
    _once(python, extension)  # a first run warms the file cache (bytecode, shared libraries)
    runs = [_once(python, extension) for _ in range(repeat)]
    return {
        "wall_s": round(statistics.median(r[0] for r in runs), 4),
        "load_ext_s": round(statistics.median(r[1] for r in runs), 4),
    }


def bench_load(repeat: int = 5, jai_venv: Path = DEFAULT_JAI_VENV) -> dict[str, Any]:
    """Ours and (where installed) jupyter_ai_magics, each against a bare shell of its own virtualenv."""
    ours_bare = measure(sys.executable, None, repeat)
    ours = measure(sys.executable, "twinny_magics", repeat)
    out: dict[str, Any] = {
        "repeat": repeat,
        "bare_shell": ours_bare,
        "twinny_magics": ours,
        "twinny_magics_adds_s": round(ours["wall_s"] - ours_bare["wall_s"], 4),
    }
    jai_python = jai_venv / "bin" / "python"
    available = jai_python.exists() and (
        subprocess.run(
            [str(jai_python), "-c", "import jupyter_ai_magics"], capture_output=True, check=False
        ).returncode
        == 0
    )
    if available:
        jai_bare = measure(jai_python, None, repeat)
        jai = measure(jai_python, "jupyter_ai_magics", repeat)
        out |= {
            "jupyter_ai_magics_source": f"measured here ({jai_venv})",
            "jai_bare_shell": jai_bare,
            "jupyter_ai_magics": jai,
            "jupyter_ai_magics_adds_s": round(jai["wall_s"] - jai_bare["wall_s"], 4),
        }
    else:
        out |= {
            "jupyter_ai_magics_source": REFERENCE_JAI["source"],
            "jai_bare_shell": {"wall_s": REFERENCE_JAI["bare_s"]},
            "jupyter_ai_magics": {"wall_s": REFERENCE_JAI["with_s"]},
            "jupyter_ai_magics_adds_s": round(REFERENCE_JAI["with_s"] - REFERENCE_JAI["bare_s"], 4),
        }
    jai_adds = out["jupyter_ai_magics_adds_s"]
    out["ours_over_jai"] = round(out["twinny_magics_adds_s"] / jai_adds, 4) if jai_adds > 0 else None
    return out


def load_table(result: dict[str, Any]) -> str:
    """The comparison as a printed table."""
    rows = [
        ("bare shell (project venv)", result["bare_shell"]["wall_s"], None, None),
        (
            "%load_ext twinny_magics",
            result["twinny_magics"]["wall_s"],
            result["twinny_magics"]["load_ext_s"],
            result["twinny_magics_adds_s"],
        ),
        ("bare shell (jupyter-ai venv)", result["jai_bare_shell"]["wall_s"], None, None),
        (
            "%load_ext jupyter_ai_magics",
            result["jupyter_ai_magics"]["wall_s"],
            result["jupyter_ai_magics"].get("load_ext_s"),
            result["jupyter_ai_magics_adds_s"],
        ),
    ]
    lines = [
        f"%load_ext in a fresh process (median of {result['repeat']}; jupyter_ai_magics: "
        f"{result['jupyter_ai_magics_source']})",
        f"{'':30} {'process s':>10} {'load_ext s':>11} {'adds s':>8}",
    ]
    for name, wall, load, adds in rows:
        load_text = f"{load:11.3f}" if load is not None else f"{'':>11}"
        adds_text = f"{adds:8.3f}" if adds is not None else f"{'':>8}"
        lines.append(f"{name:30} {wall:10.3f} {load_text} {adds_text}")
    if result["ours_over_jai"] is not None:
        lines.append(
            f"ours adds {result['ours_over_jai']:.1%} of what jupyter_ai_magics adds (goal: well under 20%)"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(load_table(bench_load()))
