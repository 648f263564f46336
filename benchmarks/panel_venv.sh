#!/usr/bin/env bash
# Make the separate Python 3.12 venv that `bench_kernel.py --compare panel` runs its kernel in:
# Panel 1.10 needs Python >= 3.12 and pins its own stack, so it never goes into the project's venv.
#   bash benchmarks/panel_venv.sh            # prints the venv's python
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${PANEL_VENV:-$HOME/.cache/streamwidgets-bench/panel-venv}"
python312="$(pyenv root)/versions/3.12.1/bin/python"
if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$(dirname "$venv")"
    "$python312" -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import panel, ipykernel, orjson, streamwidgets" 2>/dev/null; then
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -m pip install -q "panel>=1.10,<1.11" ipykernel ipywidgets jupyter_client orjson "$here" >&2
fi
echo "$venv/bin/python"
