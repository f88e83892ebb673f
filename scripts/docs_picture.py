"""The README's picture of a first ``%%agent`` cell (``docs/first-agent-cell.png``), taken from a real run.

    .venv/bin/python scripts/docs_picture.py                                    # runs the quickstart
    .venv/bin/python scripts/docs_picture.py --html artifacts/quickstart.html   # an export you have

It executes ``notebooks/quickstart.ipynb`` (in a copy of its folder) headless against the embedded
llama.cpp server (SmolLM2-135M; ``scripts/run_notebook.py``, as ``scripts/demo.sh`` does: half a minute
to two minutes on two shared cores), opens the HTML export in headless Chromium (Playwright's Python API
with Debian's ``/usr/bin/chromium``), opens the cell's tool calls and takes the top of the first
``%%agent`` cell: the question, the status line, a bar per request and the calls, then the start of the
answer. The picture is cut at ``--height`` pixels so that it stays small (under 200 KB); a tiny model's
answer runs on below the cut. Another run's replies and timings may differ from the picture's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
PICTURE = ROOT / "docs" / "first-agent-cell.png"
CHROMIUM = os.environ.get("TWINNY_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LIMIT = 200_000


def run_quickstart(out: Path) -> Path:
    """Execute the quickstart notebook into ``out``; the path of its HTML export.

    It runs in a copy of ``notebooks/`` (its workspace): a session saved by an earlier run there would
    add a resume notice to the cell, and this run's own autosave stays out of the checkout.
    """
    folder = out / "notebooks"
    shutil.copytree(ROOT / "notebooks", folder, ignore=shutil.ignore_patterns(".twinny_sessions", ".ipynb_*"))
    notebook = folder / "quickstart.ipynb"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "run_notebook.py"), str(notebook), "--out", str(out)],
        check=True,
    )
    return out / "quickstart.html"


def screenshot(html: Path, picture: Path, height: int) -> None:
    """The first ``%%agent`` cell of the export at ``html``, its tool calls open, cut at ``height``."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 960, "height": 900})
            page.goto(html.resolve().as_uri())
            cell = page.locator(".jp-CodeCell").filter(has_text="%%agent").first
            cell.locator("details").evaluate_all("items => items.forEach(item => { item.open = true; })")
            box = cell.bounding_box()
            if box is None:
                raise SystemExit(f"No %%agent cell is shown in {html}.")
            clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], height)}
            page.screenshot(path=str(picture), clip=clip, full_page=True)
        finally:
            browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--html", type=Path, help="an HTML export of the executed quickstart")
    parser.add_argument("--height", type=int, default=520, help="cut the picture at this many pixels")
    parser.add_argument("--out", type=Path, default=PICTURE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        html = args.html or run_quickstart(Path(work))
        screenshot(html, args.out, args.height)
    size = args.out.stat().st_size
    print(f"Wrote {args.out} ({size:,} bytes).")
    if size > LIMIT:
        print(f"It is over {LIMIT:,} bytes: take a smaller --height.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
