"""The contracts module and the loop import nothing heavy: no HTTP client, no IPython, no adapter."""

from __future__ import annotations

import subprocess
import sys


def test_the_contracts_and_the_loop_load_no_http_client_ipython_or_adapter() -> None:
    code = (
        "import sys, twinny_magics.contracts, twinny_magics.loop\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('httpx', 'IPython', 'ipywidgets')\n"
        "         or m.startswith('twinny_magics.servers')]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
