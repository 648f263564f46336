"""The JupyterLite site (`scripts/lite`) boots in Chromium with streamwidgets preinstalled in the
Pyodide kernel, and nothing it loads comes from anywhere but the site.

The site is built once per run into `test-artifacts/lite` (again only when what goes into it
changed: the package, the notebooks, `lite/`, `scripts/lite`, `pyproject.toml`), served by a static
HTTP server on 127.0.0.1, and opened at the quickstart in JupyterLab. Every request of the page,
of the kernel's Web Worker and of JupyterLite's service worker that is not for 127.0.0.1 is aborted
and recorded: a test fails if one was made, or if the site lacked a file it asked for. A site that
cannot be built fails the tests (never skips them): the output of `scripts/lite` says why.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlparse

import pytest
from notebook_driver import ARTIFACTS, SLOW

import streamwidgets

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
SITE = ARTIFACTS / "lite"
STAMP = ARTIFACTS / "lite.inputs"
#: What the site is built from: a change to any of them rebuilds it.
INPUTS = ("streamwidgets", "notebooks", "lite", "scripts/lite", "pyproject.toml")
NOTEBOOK = "01_quickstart.ipynb"
#: A cold build (a venv, the Pyodide package, every wheel) takes a few minutes on two cores.
BUILD_TIMEOUT = 900


def inputs_digest() -> str:
    digest = hashlib.sha256()
    for name in INPUTS:
        root = REPO / name
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in paths:
            if "__pycache__" in path.parts or ".ipynb_checkpoints" in path.parts:
                continue
            digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@pytest.fixture(scope="session")
def lite_site() -> Path:
    """The built site: `scripts/lite test-artifacts/lite`, unless it is there and up to date."""
    want = inputs_digest()
    if (SITE / "jupyter-lite.json").is_file() and STAMP.is_file() and STAMP.read_text() == want:
        return SITE
    STAMP.unlink(missing_ok=True)
    log = ARTIFACTS / "lite-build.log"
    ARTIFACTS.mkdir(exist_ok=True)
    started = time.monotonic()
    failure = None
    try:
        with log.open("wb") as out:
            subprocess.run(
                [str(REPO / "scripts/lite"), str(SITE)],
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT,
                check=True,
            )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as error:
        failure = error
    if failure is not None:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log.exists() else ""
        pytest.fail(f"scripts/lite could not build the JupyterLite site ({failure}); its output ({log}):\n{tail}")
    print(f"built the JupyterLite site in {time.monotonic() - started:.0f} s")
    STAMP.write_text(want)
    return SITE


class _Handler(http.server.SimpleHTTPRequestHandler):
    """A static server with the types a browser insists on: WebAssembly's streaming compile
    wants `application/wasm`, a module worker's import wants a JavaScript type for `.mjs`."""

    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".json": "application/json",
    }

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def lite_url(lite_site: Path) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(lite_site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class LitePage:
    """The quickstart open in JupyterLite's JupyterLab, its Pyodide kernel idle."""

    page: Any
    #: Requests that would have left the site (aborted), and answers of the site that were errors.
    left: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    #: Seconds from opening the page to the kernel connected and idle.
    boot: float = 0.0

    def run_cell(self, code: str, timeout: float = SLOW) -> list[dict[str, Any]]:
        """Add a code cell at the end of the notebook, run it, and return its outputs (nbformat)."""
        self.page.evaluate(
            """(code) => {
                const panel = window.jupyterapp.shell.currentWidget;
                const notebook = panel.content;
                notebook.activeCellIndex = notebook.widgets.length - 1;
                window.jupyterapp.commands.execute('notebook:insert-cell-below');
                notebook.activeCell.model.sharedModel.setSource(code);
                window.jupyterapp.commands.execute('notebook:run-cell');
            }""",
            code,
        )
        self.page.wait_for_function(
            """() => {
                const panel = window.jupyterapp.shell.currentWidget;
                const cells = panel.content.widgets;
                const cell = cells[cells.length - 1];
                const kernel = panel.sessionContext.session.kernel;
                return cell.model.executionCount !== null && kernel.status === 'idle';
            }""",
            timeout=timeout * 1000,
            polling=100,
        )
        return list(
            self.page.evaluate(
                """() => {
                    const cells = window.jupyterapp.shell.currentWidget.content.widgets;
                    return cells[cells.length - 1].model.outputs.toJSON();
                }"""
            )
        )

    def assert_stayed_in_the_site(self) -> None:
        assert not self.left, f"requests that left the site (aborted): {self.left}"
        assert not self.missing, f"files the site lacked: {self.missing}"


def text_of(outputs: list[dict[str, Any]]) -> str:
    """The stdout of a cell, or its error in full (the traceback is the news)."""
    for output in outputs:
        if output["output_type"] == "error":
            raise AssertionError(f"{output['ename']}: {output['evalue']}\n" + "\n".join(output["traceback"]))
    return "".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == "stdout")


@pytest.fixture(scope="module")
def lite(browser: Any, lite_url: str) -> Iterator[LitePage]:
    page = browser.new_page()
    lite = LitePage(page)

    def guard(route: Any) -> None:
        if urlparse(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            lite.left.append(route.request.url)
            route.abort()

    # On the context: the page's requests, and its workers' (the kernel runs in a Web Worker; the
    # contents go through JupyterLite's service worker).
    browser.route("**/*", guard)
    page.on("response", lambda r: r.status >= 400 and lite.missing.append(f"{r.status} {r.url}"))
    started = time.monotonic()
    try:
        page.goto(f"{lite_url}/lab/index.html?path={NOTEBOOK}")
        page.wait_for_function(
            """(path) => {
                const app = window.jupyterapp;
                const w = app && app.shell.currentWidget;
                if (!w || !w.context || w.context.path !== path || !w.sessionContext) return false;
                const k = w.sessionContext.session && w.sessionContext.session.kernel;
                return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
            }""",
            arg=NOTEBOOK,
            timeout=SLOW * 2 * 1000,
            polling=200,
        )
        lite.boot = time.monotonic() - started
        print(f"JupyterLite: page open to Pyodide kernel idle in {lite.boot:.1f} s")
        yield lite
    finally:
        page.close()
        browser.unroute("**/*", guard)


def test_streamwidgets_is_preinstalled_in_the_pyodide_kernel(lite: LitePage) -> None:
    outputs = lite.run_cell("import streamwidgets as sw; print(sw.__version__)")
    assert text_of(outputs).strip() == streamwidgets.__version__
    assert text_of(lite.run_cell("import sys; print(sys.platform)")).strip() == "emscripten"
    lite.assert_stayed_in_the_site()


def test_pydantic_core_is_the_pyodide_build(lite: LitePage) -> None:
    outputs = lite.run_cell("import pydantic, pydantic_core; print(pydantic_core.__version__, pydantic.VERSION)")
    core, pydantic = text_of(outputs).split()
    assert core and pydantic.startswith("2."), (core, pydantic)
    lite.assert_stayed_in_the_site()
