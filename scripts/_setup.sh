# Shared by scripts/test and scripts/demo: install what a fresh Debian machine lacks.

setup_system_packages() {
  local need=()
  python3 -c "import venv, ensurepip" 2>/dev/null || need+=(python3-venv)
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  command -v git >/dev/null 2>&1 || need+=(git)
  # Fonts for the browser tests' screenshots: text, and the emoji that answers contain.
  [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
  [ -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || need+=(fonts-noto-color-emoji)
  if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
      echo "== apt-get install ${need[*]}"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    elif command -v sudo >/dev/null 2>&1; then
      sudo apt-get update -qq
      sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    else
      echo "Missing system packages: ${need[*]} (install them with apt-get as root)" >&2
      exit 1
    fi
  fi
}

setup_venv() {
  if [ ! -x .venv/bin/python ]; then
    echo "== python3 -m venv .venv"
    python3 -m venv .venv
  fi
  echo "== pip install -e .[dev]"
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -m pip install -q -e ".[dev]" 2>&1 | grep -vE "^WARNING: Location|^$" || true
  .venv/bin/python -c "import streamwidgets, ipywidgets, httpx, anyio, markdown_it, playwright, nbval" 
  mkdir -p test-artifacts
}
