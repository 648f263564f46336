"""marimo in Chromium: `sw.show()` streams live into the marimo view (widgets/_marimo.py).

`marimo run` serves a notebook as an app and `marimo edit` as an editor, each on 127.0.0.1 with
no token, against the embedded provider; anywidget views render inside shadow roots, which
Playwright's CSS selectors pierce. What the server saw of each stream (`demo_provider`'s
connection records) proves that Cancel, running a cell again and deleting it closed the
connection. `marimo export html` writes a page that shows the final answer.

marimo and anywidget (the `[marimo]` extra) are imported here on purpose: without them these
tests fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anywidget  # noqa: F401  (the [marimo] extra: missing, the module fails to load)
import marimo
import pytest
from conftest import DemoProvider, offline_env, stop
from notebook_driver import ARTIFACTS
from support.http import free_port, wait_for_http

import streamwidgets as sw

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]

HEAD = """import marimo

app = marimo.App()


@app.cell
def imports():
    import marimo as mo

    import streamwidgets as sw

    BASE = {base!r}
    return BASE, mo, sw
"""

CELL = """

@app.cell
def {name}(BASE, mo, sw):
{body}
    return
"""

TAIL = """

if __name__ == "__main__":
    app.run()
"""


def notebook(path: Path, base: str, cells: dict[str, str]) -> Path:
    """A marimo notebook of `cells` (name -> body, indented) after the imports."""
    text = HEAD.format(base=base) + "".join(CELL.format(name=n, body=b) for n, b in cells.items()) + TAIL
    path.write_text(text, encoding="utf-8")
    return path


def view(page: Any, model: str) -> Any:
    """The marimo view whose header names `model` (inside its shadow root)."""
    return page.locator(".sw-view", has=page.locator(".sw-model", has_text=model))


def answer_length(page: Any, model: str) -> int:
    box = view(page, model).locator(".sw-answer")
    return len(box.text_content() or "") if box.count() else 0


def run_cell(page: Any, name: str) -> None:
    """Click the run button of the editor's cell called `name` (its function's name)."""
    cell = page.locator(f'[data-cell-name="{name}"]').first
    cell.hover()
    cell.locator('[data-testid="run-button"]:not([disabled])').first.click()


def stale(page: Any, name: str) -> bool:
    """The editor's cell `name` still waits to run (or runs): its run button is yellow."""
    button = page.locator(f'[data-cell-name="{name}"] [data-testid="run-button"]:not([disabled])').first
    return "yellow" in (button.get_attribute("class") or "") or "stale" in (button.get_attribute("class") or "")


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def outcome(demo: DemoProvider, before: set[str], scenario: str, timeout: float = 10) -> list[str]:
    """How the new streams of `scenario` ended on the server's side (once none is open)."""
    deadline = time.monotonic() + timeout
    mine: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        mine = [c for c in demo.connections() if c["id"] not in before and c["scenario"] == scenario]
        if mine and all(c["outcome"] != "open" for c in mine):
            break
        time.sleep(0.2)
    return [c["outcome"] for c in mine]


@pytest.fixture(scope="module")
def serve(workdir: Path) -> Iterator[Callable[[str, Path], str]]:
    """`serve("run" | "edit", notebook)`: a marimo server for it on 127.0.0.1; its URL."""
    started: list[subprocess.Popen[bytes]] = []
    config = workdir / "marimo-config"
    config.mkdir(exist_ok=True)

    def _serve(mode: str, path: Path) -> str:
        port = free_port()
        env = offline_env()
        env.update(
            XDG_CONFIG_HOME=str(config),
            MARIMO_SKIP_UPDATE_CHECK="1",
            PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
        )
        log = workdir / f"marimo-{mode}-{port}.log"
        command = [sys.executable, "-m", "marimo", mode, str(path), "--headless", "--no-token"]
        command += ["--host", "127.0.0.1", "--port", str(port)]
        process = subprocess.Popen(
            command, cwd=path.parent, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True
        )
        started.append(process)
        url = f"http://127.0.0.1:{port}"
        wait_for_http(url + "/health", timeout=60, process=process, log=log)
        return url

    yield _serve
    for process in started:
        stop(process)


def tools_cell(city: str) -> str:
    return f'''    def _weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {{city}}, 21 °C"

    sw.show("What is the weather in {city}?", model="demo-tools", base_url=BASE, tools=[_weather], confirm=True)'''


def test_marimo_run_streams_live_with_cancel_continue_reasoning_sources_and_tools(
    browser: Any, workdir: Path, demo_provider: DemoProvider, serve: Callable[[str, Path], str]
) -> None:
    base = demo_provider.base_url
    before = {c["id"] for c in demo_provider.connections()}
    path = notebook(
        workdir / "marimo_run.py",
        base,
        {
            "thinking": '    sw.show("What is a closure?", model="demo-reasoning", base_url=BASE)',
            "searching": '    sw.show("What is new in Python?", model="demo-search", base_url=BASE)',
            "stalling": '    sw.show("Tell me about asyncio", model="demo-stall", base_url=BASE)',
            "cut": '    sw.show("What is a closure?", model="demo-length", base_url=BASE, max_tokens=40)',
            "tooling": tools_cell("Oslo"),
            "skipping": tools_cell("Lima"),
            "wrapped": (
                '    q = "What is a closure?"\n'
                '    mo.hstack([mo.ui.anywidget(sw.show(q, model="demo-fast", base_url=BASE).widget),'
                ' sw.show(q, model="demo-markdown", base_url=BASE)])'
            ),
        },
    )
    url = serve("run", path)
    page = browser.new_page()
    try:
        page.goto(url)
        # The answer grows live (several sizes seen on the way), then completes.
        sizes: list[int] = []
        wait_until(
            lambda: (
                sizes.append(answer_length(page, "demo-reasoning"))
                or "done" in (view(page, "demo-reasoning").locator(".sw-status").text_content() or "")
            ),
            60,
            "the reasoning answer to complete",
        )
        growing = sorted({s for s in sizes if s})
        assert len(growing) >= 3, f"the answer did not grow live: {sizes}"
        final = answer_length(page, "demo-reasoning")
        assert final > 1000
        reasoning = view(page, "demo-reasoning").locator(".sw-reasoning")
        assert len(reasoning.text_content() or "") > 100  # the reasoning filled
        # Sources fill.
        wait_until(lambda: view(page, "demo-search").locator(".sw-sources li").count() >= 3, 30, "sources")
        # Cancel stops the stream, and the server sees the connection close.
        stall = view(page, "demo-stall")
        wait_until(lambda: answer_length(page, "demo-stall") > 20, 30, "the stalling answer's first words")
        stall.locator(".sw-cancel").click()
        wait_until(lambda: "cancelled" in (stall.locator(".sw-status").text_content() or ""), 10, "cancelled")
        assert outcome(demo_provider, before, "demo-stall") == ["client_disconnected"]
        # Continue goes on from a cut-off answer.
        cut = view(page, "demo-length")
        wait_until(lambda: cut.locator(".sw-continue").count() == 1, 30, "Continue")
        first = answer_length(page, "demo-length")
        cut.locator(".sw-continue").click()
        wait_until(
            lambda: (
                "part 2" in (cut.locator(".sw-part").text_content() or "") if cut.locator(".sw-part").count() else False
            ),
            20,
            "part 2",
        )
        wait_until(lambda: answer_length(page, "demo-length") > first, 20, "the continued answer")
        # A tool card's question: Run runs it and the answer goes on with its result.
        # Skip: the model is told, and the card says so.
        oslo, lima = (view(page, "demo-tools").filter(has_text=f"weather in {c}") for c in ("Oslo", "Lima"))
        for tools in (oslo, lima):
            wait_until(lambda tools=tools: tools.locator(".sw-tool-run").count() >= 1, 30, "the Run / Skip question")
            assert tools.locator(".sw-tool-skip").count() >= 1
        oslo.locator(".sw-tool-run").first.click()
        lima.locator(".sw-tool-skip").first.click()
        wait_until(lambda: "Sunny in Oslo" in (oslo.locator(".sw-tools").text_content() or ""), 20, "the result")
        wait_until(lambda: "skipped" in (lima.locator(".sw-tools").text_content() or ""), 20, "the skipped card")
        assert "Sunny in Lima" not in (lima.text_content() or "")
        for tools in (oslo, lima):
            wait_until(lambda tools=tools: "done" in (tools.locator(".sw-status").text_content() or ""), 30, "the end")
        # Wrapped in `mo.ui.anywidget`, and a handle in `mo.hstack`, the view streams as well.
        for model in ("demo-fast", "demo-markdown"):
            box = view(page, model)
            wait_until(lambda box=box: "done" in (box.locator(".sw-status").text_content() or ""), 30, model)
            assert answer_length(page, model) > 50
        page.screenshot(path=str(ARTIFACTS / "marimo-run.png"), full_page=True)
    finally:
        page.close()


def test_marimo_edit_rerunning_a_cell_cancels_its_stream_and_only_the_new_one_writes(
    browser: Any, workdir: Path, demo_provider: DemoProvider, serve: Callable[[str, Path], str]
) -> None:
    before = {c["id"] for c in demo_provider.connections()}
    path = notebook(
        workdir / "marimo_edit.py",
        demo_provider.base_url,
        {"stream_cell": '    sw.show("Tell me about asyncio", model="demo-stall", base_url=BASE)'},
    )
    url = serve("edit", path)
    page = browser.new_page()
    try:
        page.goto(url)
        run_cell(page, "imports")  # the editor runs nothing by itself
        wait_until(lambda: not stale(page, "imports"), 60, "the imports")
        run_cell(page, "stream_cell")
        wait_until(lambda: answer_length(page, "demo-stall") > 20, 60, "the first stream's words")
        first = [c["id"] for c in demo_provider.connections() if c["id"] not in before]
        assert len(first) == 1
        run_cell(page, "stream_cell")  # again
        ended = lambda: [c["outcome"] for c in demo_provider.connections() if c["id"] == first[0]]  # noqa: E731
        wait_until(lambda: ended() != ["open"], 15, "the first stream to end")
        assert ended() == ["client_disconnected"]
        # The second stream writes the one view on the page; the first writes nothing more.
        wait_until(
            lambda: len([c for c in demo_provider.connections() if c["id"] not in before]) == 2, 30, "the second stream"
        )
        wait_until(lambda: answer_length(page, "demo-stall") > 20, 30, "the second stream's words")
        assert page.locator(".sw-view").count() == 1
        status = view(page, "demo-stall").locator(".sw-status").text_content() or ""
        assert "cancelled" not in status, status
        # Cancel it, then open the page again: the editor reconnects to the same session, and the
        # view comes back from the state the final frame left (the snapshot), as it was.
        view(page, "demo-stall").locator(".sw-cancel").click()
        wait_until(
            lambda: "cancelled" in (view(page, "demo-stall").locator(".sw-status").text_content() or ""),
            10,
            "cancelled",
        )
        shown = view(page, "demo-stall").locator(".sw-answer").inner_html()
        page.reload()
        wait_until(lambda: answer_length(page, "demo-stall") > 20, 60, "the view after reloading")
        assert view(page, "demo-stall").locator(".sw-answer").inner_html() == shown
        assert "cancelled" in (view(page, "demo-stall").locator(".sw-status").text_content() or "")
    finally:
        page.close()


def test_marimo_edit_deleting_a_cell_cancels_its_stream(
    browser: Any, workdir: Path, demo_provider: DemoProvider, serve: Callable[[str, Path], str]
) -> None:
    before = {c["id"] for c in demo_provider.connections()}
    path = notebook(
        workdir / "marimo_delete.py",
        demo_provider.base_url,
        {"doomed_cell": '    sw.show("Tell me about asyncio", model="demo-stall", base_url=BASE)'},
    )
    url = serve("edit", path)
    page = browser.new_page()
    try:
        page.goto(url)
        run_cell(page, "imports")
        wait_until(lambda: not stale(page, "imports"), 60, "the imports")
        run_cell(page, "doomed_cell")
        wait_until(lambda: answer_length(page, "demo-stall") > 20, 60, "the stream's words")
        mine = [c for c in demo_provider.connections() if c["id"] not in before]
        assert [c["outcome"] for c in mine] == ["open"]  # it still streams (the stall scenario never ends)
        # Delete the cell through its actions menu (the cell has finished: the stream runs on its own).
        cell = page.locator('[data-cell-name="doomed_cell"]').first
        cell.hover()
        cell.locator('[data-testid="cell-actions-button"]').first.click()
        page.get_by_role("option", name="Delete").or_(page.get_by_role("menuitem", name="Delete")).first.click()
        wait_until(lambda: page.locator('[data-cell-name="doomed_cell"]').count() == 0, 15, "the cell to go")
        assert outcome(demo_provider, before, "demo-stall", timeout=15) == ["client_disconnected"]
    finally:
        page.close()


def test_the_marimo_quickstart_runs_as_an_app(browser: Any, workdir: Path, serve: Callable[[str, Path], str]) -> None:
    """notebooks/01_quickstart_marimo.py under `marimo run`: both answers stream from the embedded
    provider the notebook starts itself, and its last cell says they completed."""
    path = workdir / "01_quickstart_marimo.py"
    shutil.copyfile(REPO / "notebooks" / path.name, path)
    url = serve("run", path)
    page = browser.new_page()
    page.set_viewport_size({"width": 1100, "height": 1400})
    try:
        page.goto(url)
        wait_until(lambda: page.get_by_text("both answers complete").count() == 1, 90, "the check cell")
        assert page.locator(".sw-view").count() == 2
        assert (
            page.get_by_text("✓ answer: complete").count() == 1 and page.get_by_text("✓ second: complete").count() == 1
        )
        for status in page.locator(".sw-view .sw-status").all_text_contents():
            assert status.startswith("done"), status
        # Dark mode follows the page (marimo marks its body `dark`): the view's colours change.
        done = page.locator(".sw-view .sw-status-complete").first
        light = done.evaluate("e => getComputedStyle(e).color")
        page.evaluate("() => document.body.classList.add('dark', 'dark-theme')")
        wait_until(lambda: page.locator(".sw-dark .sw-view").count() == 2, 5, "the dark theme")
        assert done.evaluate("e => getComputedStyle(e).color") != light
        page.evaluate("() => document.body.classList.remove('dark', 'dark-theme')")
        page.screenshot(path=str(ARTIFACTS / "marimo-quickstart.png"))
        page.locator(".sw-view").first.screenshot(path=str(ARTIFACTS / "marimo-quickstart-view.png"))
    finally:
        page.close()


EXPORTED = """import marimo

app = marimo.App()


@app.cell
def imports():
    import streamwidgets as sw

    return (sw,)


@app.cell
def stream_cell(sw):
    answer = sw.show("What is a closure?", model="demo-reasoning", base_url={base!r})
    answer
    return (answer,)


@app.cell
async def wait_cell(answer):
    state = await answer
    state.status
    return
"""


def test_a_marimo_html_export_shows_the_final_answer(browser: Any, workdir: Path, demo_provider: DemoProvider) -> None:
    """`marimo export html` runs the notebook and writes, beside each cell's output, the state of
    its widgets (marimo merges their updates): the final frame's snapshot is in it, and the page
    shows the whole answer from it. marimo's page loads marimo's own front end from a CDN; here it
    comes from the installed marimo (the same version's files), and every other request that is not
    a file is refused — the answer itself needs nothing else."""
    path = workdir / "marimo_export.py"
    path.write_text(EXPORTED.format(base=demo_provider.base_url), encoding="utf-8")
    html = workdir / "marimo_export.html"
    env = offline_env()
    env.update(
        XDG_CONFIG_HOME=str(workdir / "marimo-config"),
        MARIMO_SKIP_UPDATE_CHECK="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
    )
    done = subprocess.run(
        [sys.executable, "-m", "marimo", "export", "html", str(path), "-o", str(html)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and html.exists(), done.stdout + done.stderr
    with ThreadPoolExecutor(1) as pool:  # the same scripted answer (Playwright's loop runs in this thread)
        state = pool.submit(sw.run, "What is a closure?", model="demo-reasoning", base_url=demo_provider.base_url)
        expected = state.result()
    static = Path(marimo.__file__).parent / "_static"
    frontend = f"/@marimo-team/frontend@{marimo.__version__}/dist/"
    refused: list[str] = []

    def offline(route: Any) -> None:
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        elif frontend in url and (static / url.split(frontend, 1)[1].split("?")[0]).is_file():
            route.fulfill(path=static / url.split(frontend, 1)[1].split("?")[0])
        else:
            refused.append(url)
            route.abort()

    page = browser.new_page()
    try:
        page.route("**/*", offline)
        page.goto(html.as_uri())
        answer = page.locator(".sw-view .sw-answer")
        wait_until(lambda: answer.count() == 1 and len(answer.text_content() or "") > 200, 60, "the exported answer")
        last = expected.text.strip().splitlines()[-1].replace("`", "").split(". ")[-1]
        assert last.strip() and last.strip() in (answer.text_content() or "")
        status = page.locator(".sw-view .sw-status").text_content() or ""
        assert status.startswith("done"), status
        assert "sw-ended" in (page.locator(".sw-view .sw-answer-box").get_attribute("class") or "")
        assert page.locator(".sw-view .sw-cancel.sw-hidden").count() == 1  # nothing left to cancel
        page.screenshot(path=str(ARTIFACTS / "marimo-export.png"), full_page=True)
    finally:
        page.close()
