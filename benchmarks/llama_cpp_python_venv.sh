#!/usr/bin/env bash
# Make what `bench_local.py --before-venv V --before-tree T` runs its "before" contender in: the
# hand-written local server of commit 1e45e85 on llama-cpp-python 0.3.36, the path that llama.cpp's
# own server (xllamacpp) replaced. Never part of the project's venv.
#   bash benchmarks/llama_cpp_python_venv.sh      # prints "<venv python> <old tree>"
# The first run compiles the wheel once (the same portable build the old setup_local_model made:
# about 14-18 minutes on 2 cores, niced) into ~/.cache/streamwidgets/wheels; later runs reuse it.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
version="0.3.36"
commit="1e45e85"
wheels="${SW_WHEELS:-$HOME/.cache/streamwidgets/wheels}"
venv="${LLAMA_CPP_PYTHON_VENV:-$HOME/.cache/streamwidgets/llama-cpp-python-venv}"
tree="${LLAMA_CPP_PYTHON_TREE:-$HOME/.cache/streamwidgets/local-server-$commit}"
python="$here/.venv/bin/python"
if ! ls "$wheels"/llama_cpp_python-"$version"-*.whl >/dev/null 2>&1; then
    command -v c++ >/dev/null || { echo "llama-cpp-python compiles from source: apt-get install g++ cmake" >&2; exit 1; }
    echo "== building the llama-cpp-python $version wheel once into $wheels (about 15 minutes on 2 cores)" >&2
    mkdir -p "$wheels"
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
        CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
        PIP_DISABLE_PIP_VERSION_CHECK=1 nice -n 10 "$python" -m pip wheel -q --no-deps "llama-cpp-python==$version" -w "$wheels" >&2
fi
if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import llama_cpp, numpy, jinja2, h11, httpx, pydantic" 2>/dev/null; then
    # The old tree's own dependencies (its pyproject at $commit), without the package itself: the
    # tree runs from PYTHONPATH. The weights are not installed here: the benchmark passes --model.
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install -q --find-links "$wheels" \
        "llama-cpp-python==$version" "numpy>=1.24" "jinja2>=3" "h11>=0.14" "httpx>=0.25" "anyio>=4" \
        "pydantic>=2.6" "markdown-it-py>=3" "mdit-py-plugins>=0.4" "pygments>=2.15" "latex2mathml>=3.77" >&2
fi
if [ ! -f "$tree/streamwidgets/server/_local_server.py" ]; then
    mkdir -p "$tree"
    git -C "$here" archive "$commit" streamwidgets | tar -x -C "$tree"
fi
echo "$venv/bin/python $tree"
