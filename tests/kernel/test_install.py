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
