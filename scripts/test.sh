#!/usr/bin/env bash
# The one test command: on a fresh machine it makes the environment, installs everything pinned, and
# runs ruff, mypy and pytest. Safe to run again: a step that is already done is quick.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
setup_test_env
setup_gateway_env  # the LiteLLM proxy the gateway tests start (tests/conftest.py)
setup_browser_env  # JupyterLab and Chromium for tests/test_browser.py

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/pytest "$@"
