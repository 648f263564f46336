"""Real-browser fixtures: a JupyterLab server, the embedded provider, and Debian's Chromium.

Everything here follows what was measured on these machines (CONTRIBUTING.md, "Testing notes"):
Playwright drives the system Chromium (never `playwright install`), the Jupyter server
is isolated in temporary config, data, runtime, IPython, workspace and settings directories and
serves a temporary copy of the notebooks (Lab autosaves), and a test waits for the kernel to be
*connected* and idle — the toolbar's idle indicator says idle before that, and a cell run then
silently does nothing. One Jupyter server and one browser serve a whole module (the embedded
provider, `demo_server`, the whole run), because a cell-to-assertion run is 6–10 s and the
machine has two cores.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from notebook_driver import ARTIFACTS, SLOW, Notebook, open_notebook
from support.http import free_port, wait_for_http

from streamwidgets.server import DemoServer

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"

#: Flags that keep Chromium from dialling out: this network refuses it, and a refused connection
#: costs seconds at start-up.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

#: Lab's "Jupyter news" toast would cover the notebook in every screenshot, and its windowed
#: notebook stops drawing cells that scrolled out of sight (their text reads as empty).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "windowingMode": "none",
    },
}


# --------------------------------------------------------------------------- processes


def offline_env() -> dict[str, str]:
    """The environment without any provider key, so that every notebook takes its offline path."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("SW_PROVIDER", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a process we started, by its PID (its own process group: the server's kernels too)."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@dataclass
class DemoProvider:
    """The embedded offline provider (the run's `demo_server`) as the browser tests use it.

    A notebook points at it with `base_url=`, and the test reads its connection records (as
    `GET /_demo/connections` lists them) to learn how each stream ended on the server's side (a
    Cancel must show up as a client disconnect).
    """

    server: DemoServer

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def connections(self) -> list[dict[str, Any]]:
        return [record.to_json() for record in self.server.connections]


@dataclass
class JupyterServer:
    """A Jupyter server (JupyterLab, Notebook 7 and Voila in one) on 127.0.0.1 with no token."""

    port: int
    root: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lab_url(self, path: str) -> str:
        return f"{self.url}/lab/tree/{path}?reset"

    def notebook_url(self, path: str) -> str:
        return f"{self.url}/notebooks/{path}"

    def voila_url(self, path: str) -> str:
        return f"{self.url}/voila/render/{path}"

    def write_notebook(self, name: str, cells: list[str]) -> str:
        """Save a scratch notebook of code cells next to the served copies; return its path."""
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, self.root / name)
        return name

    def shutdown_kernels(self) -> None:
        """Free the CPU between tests (two cores are shared): every kernel, Voila's included."""
        for kernel in get_json(f"{self.url}/api/kernels"):
            request = urllib.request.Request(f"{self.url}/api/kernels/{kernel['id']}", method="DELETE")
            try:
                urllib.request.urlopen(request, timeout=30).close()
            except urllib.error.HTTPError as error:
                if error.code != 404:  # 404: it ended by itself meanwhile
                    raise


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="sw-browser-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def demo_provider(demo_server: DemoServer) -> DemoProvider:
    return DemoProvider(demo_server)


@pytest.fixture(scope="module")
def jupyter(workdir: Path, request: pytest.FixtureRequest) -> Iterator[JupyterServer]:
    root = workdir / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    dirs = {name: workdir / name for name in ("config", "data", "runtime", "ipython", "workspaces", "settings")}
    for path in dirs.values():
        path.mkdir()
    for relative, settings in LAB_SETTINGS.items():
        target = dirs["settings"] / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(settings))
    env = offline_env()
    env.update(
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        IPYTHONDIR=str(dirs["ipython"]),
    )
    port = free_port()
    log = workdir / "jupyter.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--port-retries=0",
        f"--ServerApp.root_dir={root}",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True",  # lets the fixture shut kernels down over REST
        f"--LabApp.workspaces_dir={dirs['workspaces']}",
        f"--LabApp.user_settings_dir={dirs['settings']}",
        "--LabApp.expose_app_in_browser=True",
        "--JupyterNotebookApp.expose_app_in_browser=True",
        "--LabApp.extension_manager=readonly",  # no registry look-ups from the test server
        "--VoilaConfiguration.show_tracebacks=True",
    ]
    if os.geteuid() == 0:  # containers and CI machines often run as root
        command.append("--allow-root")
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True
        )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/api/status", SLOW, process, log)
        yield JupyterServer(port, root, process)
    finally:
        stop(process)
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(log, ARTIFACTS / f"jupyter-{request.module.__name__}.log")


@pytest.fixture(scope="module")
def browser(workdir: Path) -> Iterator[Any]:
    """A fresh Chromium profile per module (persistent context = one browser, no leftovers)."""
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail(
            "Debian's Chromium is missing: `apt-get install -y chromium` (scripts/_setup.sh does it); "
            "deselect these tests with -m 'not browser'"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(workdir / "chromium-profile"),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
            device_scale_factor=1,
        )
        context.set_default_timeout(60_000)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser: Any, jupyter: JupyterServer) -> Iterator[Any]:
    """A new tab for one test; its kernels are shut down afterwards."""
    tab = browser.new_page()
    try:
        yield tab
    finally:
        tab.close()
        jupyter.shutdown_kernels()


@pytest.fixture
def opener(page: Any, jupyter: JupyterServer) -> Callable[[str, str], Notebook]:
    """`opener(path, "lab" | "notebook")` opens a served notebook and waits for its kernel."""

    def _open(path: str, flavor: str) -> Notebook:
        url = jupyter.lab_url(path) if flavor == "lab" else jupyter.notebook_url(path)
        return open_notebook(page, url, path, flavor)

    return _open
