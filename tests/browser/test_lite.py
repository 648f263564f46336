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

import contextlib
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
from notebook_driver import ARTIFACTS, SLOW, Notebook, grew_steadily, sample_lengths, wait_status
from support.http import free_port

import streamwidgets
from streamwidgets.server import DemoServer

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


def open_notebook(page: Any, url: str, path: str) -> float:
    """Open `path` in the site at `url` and wait until its Pyodide kernel is connected and idle
    (the toolbar says idle before a kernel is there); the seconds that took."""
    started = time.monotonic()
    page.goto(f"{url}/lab/index.html?path={path}")
    page.wait_for_function(
        """(path) => {
            const app = window.jupyterapp;
            const w = app && app.shell.currentWidget;
            if (!w || !w.context || w.context.path !== path || !w.sessionContext) return false;
            const k = w.sessionContext.session && w.sessionContext.session.kernel;
            return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
        }""",
        arg=path,
        timeout=SLOW * 2 * 1000,
        polling=200,
    )
    return time.monotonic() - started


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
    # The site's own files only: a provider's errors on another port are what some tests are about.
    site = lite_url + "/"
    page.on(
        "response", lambda r: r.status >= 400 and r.url.startswith(site) and lite.missing.append(f"{r.status} {r.url}")
    )
    try:
        lite.boot = open_notebook(page, lite_url, NOTEBOOK)
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


# --------------------------------------------------------------------------- streaming in the browser


def last_view(index: str = "") -> str:
    """A script that finds the last streaming view on the page (outside any comparison)."""
    return "[...document.querySelectorAll('.sw-view')].filter(v => !v.closest('.sw-compare')).pop()" + index


def wait_last_status(lite: LitePage, status: str, timeout: float = SLOW) -> None:
    lite.page.wait_for_function(
        f"(s) => {{ const v = {last_view()}; return !!v && !!v.querySelector('.sw-status-' + s); }}",
        arg=status,
        timeout=timeout * 1000,
        polling=100,
    )


def last_answer_length(lite: LitePage) -> int:
    return int(
        lite.page.evaluate(
            f"() => {{ const v = {last_view()}; const a = v && v.querySelector('.sw-answer');"
            " return a ? a.textContent.length : 0; }"
        )
    )


def last_view_text(lite: LitePage) -> str:
    return str(lite.page.evaluate(f"() => {{ const v = {last_view()}; return v ? v.textContent : ''; }}"))


def grows(lite: LitePage, *, past: int = 40, samples: int = 5, interval: float = 0.3) -> list[int]:
    """Wait for the last view's answer to pass `past` characters, then sample its length."""
    lite.page.wait_for_function(
        f"(n) => {{ const v = {last_view()}; const a = v && v.querySelector('.sw-answer');"
        " return !!a && a.textContent.length > n; }",
        arg=past,
        timeout=SLOW * 1000,
        polling=100,
    )
    lengths = []
    for _ in range(samples):
        lengths.append(last_answer_length(lite))
        time.sleep(interval)
    return lengths


def click_last(lite: LitePage, selector: str) -> None:
    lite.page.evaluate(f"(sel) => {{ const v = {last_view()}; v.querySelector(sel).click(); }}", selector)


def test_the_quickstart_runs_all_and_its_answer_grows_live(lite: LitePage) -> None:
    """Run All on the quickstart, unchanged: the first answer grows while the cells go on, and
    the notebook's own check says both answers completed; the view says the demo ran in-process."""
    nb = Notebook(lite.page, NOTEBOOK)
    nb.run_all()
    lengths = sample_lengths(nb, samples=8, interval=0.35)
    # As in JupyterLab on CPython (`grew_steadily`); the kernel's one thread also runs the cells below.
    assert grew_steadily(lengths), lengths
    wait_status(nb, "complete", timeout=SLOW)
    nb.wait_until_idle()
    assert "both answers complete" in nb.outputs_text(), nb.errors_shown()
    note = nb.text(".sw-view")
    assert "ran in-process" in note and "browser" in note, note[:600]
    view = lite.page.locator(".sw-view").first
    view.scroll_into_view_if_needed()
    view.screenshot(path=str(ARTIFACTS / "lite-quickstart.png"))
    lite.page.screenshot(path=str(ARTIFACTS / "screenshot-lite.png"))  # the README's, with JupyterLite around it
    lite.assert_stayed_in_the_site()


def test_cancel_stops_the_answer_and_continue_goes_on(lite: LitePage) -> None:
    lite.run_cell('h = sw.show("Tell me about recursion", model="demo-long", demo={"tokens_per_second": 40})')
    grows(lite, past=150, samples=1)
    click_last(lite, ".sw-cancel")
    wait_last_status(lite, "cancelled", timeout=10)
    held = []
    for _ in range(4):
        held.append(last_answer_length(lite))
        time.sleep(0.4)
    assert len(set(held)) == 1 and held[0] > 150, f"the text changed after Cancel: {held}"
    click_last(lite, ".sw-continue")
    lengths = grows(lite, past=held[0] + 20, samples=3)
    assert lengths[-1] > held[0], (held, lengths)
    out = text_of(lite.run_cell("print(h.state.status, len(h.state.parts))"))
    assert out.split()[1] == "2", out  # the cancelled part and the one Continue asked for
    lite.assert_stayed_in_the_site()


def test_a_recording_replays_and_the_token_view_fills(lite: LitePage) -> None:
    lite.run_cell(
        'state = await sw.arun("What is a closure?", record="closure.jsonl")\n'
        'r = sw.show(sw.replay("closure.jsonl", speed=4))'
    )
    wait_last_status(lite, "complete")
    out = text_of(lite.run_cell("print((await r).text == state.text, len(state.text))"))
    assert out.split()[0] == "True" and int(out.split()[1]) > 100, out
    lite.run_cell('t = sw.show("What is a closure?", logprobs=5)')
    wait_last_status(lite, "complete")
    marks = lite.page.evaluate(f"() => {last_view()}.querySelectorAll('.sw-tokens-flow mark.sw-t').length")
    assert marks > 20, marks
    lite.assert_stayed_in_the_site()


def test_compare_runs_two_views(lite: LitePage) -> None:
    lite.run_cell('c = sw.compare("Explain recursion with a small example.", ["demo", "demo-reasoning"])')
    lite.page.wait_for_function(
        "() => document.querySelectorAll('.sw-compare-row > .sw-view').length === 2"
        " && [...document.querySelectorAll('.sw-compare-row > .sw-view')].every(v => v.querySelector('.sw-status-complete'))",
        timeout=SLOW * 1000,
        polling=200,
    )
    lite.assert_stayed_in_the_site()


def test_a_site_without_a_model_says_so_in_one_line_without_badge_or_retry(lite: LitePage) -> None:
    out = text_of(lite.run_cell('s = await sw.arun("hi", provider="local")\nprint(s.status, "|", s.message)'))
    assert out.strip() == (
        "error | This JupyterLite site ships no model, so the local model cannot answer here; "
        "a site built with `scripts/lite --model smollm2-135m` runs one in the browser tab."
    ), out
    lite.run_cell('n = sw.show("hi", provider="local")')
    wait_last_status(lite, "error")
    view = lite.page.evaluate(
        f"() => {{ const v = {last_view()}; return [!!v.querySelector('.sw-badge'),"
        " [...v.querySelectorAll('.sw-continue')].filter(b => b.offsetParent !== null).length]; }"
    )
    assert view == [False, 0], view  # no badge, no Retry


# --------------------------------------------------------------------------- a live provider through fetch


def test_a_live_provider_that_allows_the_site_streams_and_cancel_closes_its_connection(
    lite: LitePage, lite_url: str
) -> None:
    """The embedded provider as a live one on another port, letting the site's origin read its
    answers (CORS): the browser's fetch streams into the view, the lesson header it exposes is read,
    and Cancel aborts the fetch, so the server sees the client leave."""
    with DemoServer(allow_origins=[lite_url]) as server:
        base = server.base_url
        lite.run_cell(f'live = sw.show("What is a closure?", base_url="{base}", api_key="sk-class-key", model="demo")')
        wait_last_status(lite, "complete")
        text = last_view_text(lite)
        assert "ran in-process" not in text, text[:600]  # over the network, through fetch
        assert "closure" in text.lower() and "prepared lesson" in text.lower(), text[:600]  # X-Demo-Script, exposed
        lite.run_cell(
            f'long = sw.show("Tell a long story", base_url="{base}", api_key="sk-class-key", model="demo-long",'
            ' demo={"tokens_per_second": 40})'
        )
        lengths = grows(lite, past=150, samples=6, interval=0.4)
        assert grew_steadily(lengths), lengths
        click_last(lite, ".sw-cancel")
        wait_last_status(lite, "cancelled", timeout=10)
        deadline = time.monotonic() + 10
        mine = []
        while time.monotonic() < deadline:
            mine = [c for c in server.connections if c.scenario == "demo-long"]
            if mine and all(c.outcome != "open" for c in mine):
                break
            time.sleep(0.2)
        assert [c.outcome for c in mine] == ["client_disconnected"], mine
        assert [c.model for c in server.connections].count("demo") == 1
    lite.assert_stayed_in_the_site()


def test_a_provider_that_refuses_the_site_is_said_to_refuse_it_and_a_dead_port_to_be_dead(
    lite: LitePage, lite_url: str
) -> None:
    with DemoServer() as server:  # grants no page: a CORS refusal
        out = text_of(
            lite.run_cell(
                f's = await sw.arun("hi", base_url="{server.base_url}", api_key="k", model="demo")\nprint(s.message)'
            )
        )
    assert "The browser blocked the answer from http://127.0.0.1:" in out, out
    assert f"Access-Control-Allow-Origin: {lite_url}" in out and "authorization" in out, out
    assert "k\n" not in out
    port = free_port()
    out = text_of(
        lite.run_cell(
            f's = await sw.arun("hi", base_url="http://127.0.0.1:{port}/v1", api_key="k", model="demo", retries=0)\nprint(s.message)'
        )
    )
    assert f"Nothing answers on 127.0.0.1:{port}" in out, out
    lite.assert_stayed_in_the_site()


class _Cors(http.server.BaseHTTPRequestHandler):
    """A provider that lets one page in (CORS, its preflight answered) and answers every POST as
    `answer` says; each POST's headers are kept in `posts` (the server's list)."""

    def do_OPTIONS(self) -> None:
        self.server.preflights += 1  # type: ignore[attr-defined]
        self._reply(204, [("access-control-allow-methods", "POST"), ("access-control-allow-headers", "*")])

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.server.posts.append(dict(self.headers.items()))  # type: ignore[attr-defined]
        status, headers, body = self.server.answer  # type: ignore[attr-defined]
        self._reply(status, headers, body)

    def _reply(self, status: int, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        self.send_response(status)
        for name, value in [("access-control-allow-origin", self.server.page), *headers]:  # type: ignore[attr-defined]
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def cors_server(page: str, answer: tuple[int, list[tuple[str, str]], bytes]) -> Iterator[Any]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Cors)
    server.page, server.answer, server.posts, server.preflights = page, answer, [], 0  # type: ignore[attr-defined]
    server.root = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_a_redirect_to_another_origin_is_not_followed_and_the_key_stays_home(lite: LitePage, lite_url: str) -> None:
    """A provider that lets the site in and redirects to another origin that lets in any page: a fetch
    that follows redirects sends the request there again, `x-api-key` and all (shown first, with
    the browser's own fetch). streamwidgets' does not follow, as httpx on CPython does not, and
    says that the server redirects the request, in CPython's words."""
    # After a redirect to another origin a browser sends `Origin: null`: a stranger lets in any page.
    with cors_server("*", (200, [("content-type", "application/json")], b"{}")) as stranger:
        moved = (307, [("location", f"{stranger.root}/v1/messages")], b"")
        with cors_server(lite_url, moved) as provider:
            base = f"{provider.root}/v1"
            out = text_of(
                lite.run_cell(
                    "import js\nfrom pyodide.ffi import to_js\n\nimport streamwidgets as sw\n"
                    f'init = {{"method": "POST", "body": "{{}}", "headers": to_js([["x-api-key", "sk-followed"], '
                    '["content-type", "application/json"]])}\n'
                    f'r = await js.fetch("{base}/messages", to_js(init, dict_converter=js.Object.fromEntries))\n'
                    "print(r.status, r.url)"
                )
            )
            assert out.split() == ["200", f"{stranger.root}/v1/messages"], out
            assert [post.get("x-api-key") for post in stranger.posts] == ["sk-followed"]
            stranger.posts.clear()
            stranger.preflights = 0
            out = text_of(
                lite.run_cell(
                    f's = await sw.arun("hi", provider="anthropic", base_url="{base}", api_key="sk-ant-class-key",'
                    ' model="claude-sonnet-4-5", retries=0)\nprint(s.status, "|", s.error.code, "|", s.message)'
                )
            )
            assert [post.get("x-api-key") for post in provider.posts][-1] == "sk-ant-class-key"
            assert stranger.posts == [] and stranger.preflights == 0, stranger.posts
    assert out.startswith("error | redirect | The provider reported an error: The server redirects this request"), out
    assert "streamwidgets does not follow redirects (your key would go along)" in out and "base_url" in out, out
    assert "sk-ant-class-key" not in out
    lite.assert_stayed_in_the_site()
