"""Execute a notebook headless with this virtualenv's Python as its kernel; save it and an HTML export.

    .venv/bin/python scripts/run_notebook.py notebooks/quickstart.ipynb --out artifacts

The kernel's working directory is the notebook's folder (so that folder is the agent's workspace). The
%%agent cells' text is printed as it was saved, so a terminal shows what the notebook shows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter


def kernelspec(root: Path) -> None:
    """A ``python3`` kernelspec for this Python, put first on ``JUPYTER_PATH``."""
    spec = root / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Python 3 (twinny_magics)", "language": "python"})
    )
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("JUPYTER_PATH")]))


def shown_text(cell: nbformat.NotebookNode) -> str:
    """What a saved cell shows, as plain text."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output["text"])
        elif "text/plain" in output.get("data", {}):
            parts.append(output["data"]["text/plain"])
        elif output.get("output_type") == "error":
            parts.append(f"{output['ename']}: {output['evalue']}")
    return "\n".join(p.rstrip() for p in parts if p.strip())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--out", type=Path, default=Path("artifacts"))
    parser.add_argument("--timeout", type=int, default=600, help="seconds a cell may take")
    args = parser.parse_args()
    notebook = nbformat.read(args.notebook, as_version=4)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as jupyter:
        kernelspec(Path(jupyter))
        client = NotebookClient(
            notebook,
            kernel_name="python3",
            timeout=args.timeout,
            resources={"metadata": {"path": str(args.notebook.resolve().parent)}},
        )
        started = time.perf_counter()
        client.execute()
        took = time.perf_counter() - started
    executed = args.out / args.notebook.name
    nbformat.write(notebook, executed)
    html, _ = HTMLExporter().from_notebook_node(notebook)
    exported = executed.with_suffix(".html")
    exported.write_text(html, encoding="utf-8")
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source.startswith("%%agent"):
            print(f"\n>>> {cell.source}\n{shown_text(cell)}")
    print(f"\nRan {args.notebook} in {took:.1f} s. Wrote {executed} and {exported}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
