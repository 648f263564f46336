"""A notebook run by a runner and exported to HTML shows every answer in a browser with no network.

A teacher runs a lesson (`jupyter nbconvert --execute`, papermill, Jupyter Book: nbclient) and
exports it with a plain `jupyter nbconvert --to html`; the page goes on a course site or an
intranet, and a class opens it offline. nbconvert draws a widget view through the ipywidgets HTML
manager, which it loads from a CDN: with the answer saved as a widget view, every answer cell was
empty there. Under a runner the answer is saved alone (`widgets/_fallback.py`, `keeps_widget`), so
the page shows its HTML form — the reasoning, the tool cards, the answer and its sources — whether
or not the manager loads.

Here the notebook is executed with nbclient (one answer from the embedded provider reached live
with a key, the others from the offline demo), exported by nbconvert's command line, and opened
from `file://` in Chromium with every other request refused. So are the shipped notebooks whose
answers sit in boxes the caller placed them in (05: an `HBox` and a `GridBox`), in comparisons
(08, 09: with the table's final figures) and in the chat app (`widgets/_output.py`).
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import NOTEBOOKS, offline_env
from kernels import SENTINEL, WIDGET_MIMETYPE, kernel_env, kernel_manager
from notebook_driver import ARTIFACTS
from widget_harness import markup_problems

import streamwidgets as sw
from streamwidgets.server import DemoServer

pytestmark = pytest.mark.browser

FAST = {"tokens_per_second": 0}
WEATHER = '''
def get_weather(city: str) -> dict:
    """The weather now in a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "temperature_c": 18, "sky": "overcast"}
'''
#: (prompt, model) of each answer cell, in order.
ANSWERS = [
    ("What is a closure?", "demo-reasoning"),
    ("How does photosynthesis work?", "demo-search"),
    ("What is the weather in Paris?", "demo-tools"),
    ("Show me some HTML", "demo-xss"),
]


def get_weather(city: str) -> dict[str, Any]:
    """The weather now in a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "temperature_c": 18, "sky": "overcast"}


def cells(base_url: str) -> list[str]:
    (closure, reasoning), (photo, search), (weather, tools), (html, xss) = ANSWERS
    return [
        # Reached live, with a key, as a real provider is: the key must not reach the page.
        "import os\nimport streamwidgets as sw\n"
        f"h0 = sw.show({closure!r}, model={reasoning!r}, base_url={base_url!r}, "
        f"api_key=os.environ['SW_TEST_KEY'], demo={FAST!r})",
        f"h1 = sw.show({photo!r}, model={search!r}, demo={FAST!r})",
        f"{WEATHER.strip()}\n\nh2 = sw.show({weather!r}, model={tools!r}, tools=[get_weather], demo={FAST!r})",
        f"h3 = sw.show({html!r}, model={xss!r}, demo={FAST!r})",
        "for h in (h0, h1, h2, h3):\n    await h\nprint([h.state.status for h in (h0, h1, h2, h3)])",
    ]


def last_sentence(text: str) -> str:
    """The last sentence of a markdown text as the page shows it (these answers end in a plain
    sentence; inline code loses its backticks)."""
    return text.strip().splitlines()[-1].replace("`", "").split(". ")[-1]


def open_offline(page: Any, html: Path) -> list[str]:
    """Open the exported page from `file://` with every other request refused; the refused URLs
    (filled as the page asks) are returned."""
    refused: list[str] = []

    def offline(route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", offline)
    page.goto(html.as_uri())
    page.wait_for_load_state("load")
    return refused


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, demo_server: DemoServer) -> tuple[Any, Path]:
    """The notebook executed by nbclient and saved, and its HTML as `jupyter nbconvert --to html` writes it."""
    import nbformat
    from nbclient import NotebookClient

    home = tmp_path_factory.mktemp("export-offline")
    env = kernel_env(home)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells(demo_server.base_url)]
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        NotebookClient(nb, km=kernel_manager(home), timeout=180).execute()
    notebook = home / "lesson.ipynb"
    nbformat.write(nb, str(notebook))
    command = [sys.executable, "-m", "nbconvert", "--to", "html", notebook.name]  # `jupyter nbconvert --to html`
    done = subprocess.run(command, cwd=home, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return nb, home / "lesson.html"


def test_the_saved_notebook_holds_each_answer_without_a_widget_view(exported: tuple[Any, Path]) -> None:
    nb, html = exported
    assert nb.cells[-1].outputs[-1]["text"] == "['complete', 'complete', 'complete', 'complete']\n"
    assert "widgets" in nb.metadata  # nbclient saved the widget state, so nbconvert would pick a widget view
    for cell in nb.cells[: len(ANSWERS)]:
        [output] = [o for o in cell.outputs if o["output_type"] == "display_data"]
        assert WIDGET_MIMETYPE not in output["data"]
        assert {"text/plain", "text/markdown", "text/html"} <= set(output["data"])
        assert markup_problems(output["data"]["text/html"]) == []  # the panes' safe render, hostile input too
    reasoning, search, tools = (nb.cells[i].outputs[0]["data"]["text/html"] for i in range(3))
    assert "sw-static-reasoning" in reasoning and "sw-static-sources" in search and "sw-tool-name" in tools
    page = html.read_text()
    assert SENTINEL not in page and SENTINEL not in Path(html.with_suffix(".ipynb")).read_text()
    assert f'<script type="{WIDGET_MIMETYPE}">' not in page  # no output left for a widget manager to draw


def test_the_exported_page_shows_every_answer_offline(exported: tuple[Any, Path], browser: Any) -> None:
    _, html = exported
    with ThreadPoolExecutor(1) as pool:  # the same answers streamed here (Playwright's loop runs in this thread)
        closure, photosynthesis, weather = (
            pool.submit(sw.run, prompt, model=model, demo=FAST, **({"tools": [get_weather]} if i == 2 else {})).result()
            for i, (prompt, model) in enumerate(ANSWERS[:3])
        )
    assert closure.reasoning and photosynthesis.citations and weather.text

    page = browser.new_page()
    try:
        refused = open_offline(page, html)
        page.wait_for_timeout(500)  # the widget manager's loader runs at DOMContentLoaded, and fails
        assert any("html-manager" in url for url in refused), refused  # it could not load

        answers = page.locator(".jp-CodeCell .jp-OutputArea-output .sw-static")
        assert answers.count() == len(ANSWERS)
        shown = [answers.nth(i) for i in range(len(ANSWERS))]
        for answer in shown:
            assert answer.is_visible()
        texts = [answer.inner_text() for answer in shown]  # what is drawn, not merely in the DOM

        # The answer, its reasoning (a block of its own, above it) and the status line.
        reasoning = shown[0].locator(".sw-static-reasoning")
        assert reasoning.is_visible() and last_sentence(closure.reasoning) in reasoning.inner_text()
        assert last_sentence(closure.text) in texts[0]
        assert "demo-reasoning · done" in texts[0]
        # The sources, each a link by its title, and the answer that cites them.
        sources = shown[1].locator(".sw-static-sources")
        assert sources.is_visible() and "Sources" in sources.inner_text()
        for citation in photosynthesis.citations:
            assert sources.get_by_text(citation.title or "", exact=False).first.is_visible(), citation
        assert last_sentence(photosynthesis.text) in texts[1]
        # The tool loop's timeline: the card (name, arguments, result) above the answer written from it.
        card = shown[2].locator(".sw-tool").first
        assert card.is_visible()
        assert "get_weather()" in card.inner_text() and '"Paris"' in card.inner_text()
        assert "overcast" in card.inner_text() and "done in" in card.inner_text()
        assert texts[2].index("get_weather()") < texts[2].index(last_sentence(weather.text))
        # Hostile markup from the model shows as text and runs nothing.
        assert "<script>window.__xss" in texts[3]
        assert page.evaluate("() => typeof window.__xss") == "undefined"
        assert SENTINEL not in page.content()

        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "export-offline.png"), full_page=True)
    finally:
        page.close()


#: The shipped notebooks whose answers are placed, compared or chatted, with the cells a class
#: would add to the chat app, and how many answers (`.sw-static`) and tables each page shows.
SHIPPED = {
    "05_side_by_side": ([], 8, 0),
    "08_classroom": ([], 7, 1),
    "09_inside_the_model": ([], 7, 2),
    "chat_app": (["chat = panel.send('How does binary search work?')", "await chat\nprint(chat.state.status)"], 1, 0),
}


def execute_and_export(name: str, extra: list[str], home: Path) -> Path:
    """`notebooks/<name>.ipynb` (plus `extra` cells) run by nbclient offline, and exported by
    nbconvert's command line to HTML."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(NOTEBOOKS / f"{name}.ipynb"), as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(source) for source in extra]
    env = {**offline_env(), **kernel_env(home), "STREAMWIDGETS_OFFLINE": "demo"}
    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in __import__("os").environ if k.endswith("_API_KEY") or k == "SW_PROVIDER"]:
            patch.delenv(key)
        for key, value in env.items():
            patch.setenv(key, value)
        NotebookClient(nb, km=kernel_manager(home), timeout=240, resources={"metadata": {"path": str(home)}}).execute()
    notebook = home / f"{name}.ipynb"
    nbformat.write(nb, str(notebook))
    command = [sys.executable, "-m", "nbconvert", "--to", "html", notebook.name]
    done = subprocess.run(command, cwd=home, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return home / f"{name}.html"


@pytest.mark.parametrize("name", list(SHIPPED))
def test_a_shipped_notebook_keeps_every_view_placed_compared_or_chatted_offline(
    name: str, browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    extra, answers, tables = SHIPPED[name]
    html = execute_and_export(name, extra, tmp_path_factory.mktemp(name))
    source = html.read_text()
    assert f'<script type="{WIDGET_MIMETYPE}">' not in source  # nothing left for a widget manager to draw

    page = browser.new_page()
    try:
        refused = open_offline(page, html)
        page.wait_for_timeout(500)
        shown = page.locator(".jp-OutputArea-output .sw-static:not(.sw-log-report)")  # the class log is no answer
        assert shown.count() == answers
        for i in range(answers):
            answer = shown.nth(i)
            assert answer.is_visible()
            text = answer.inner_text()
            assert " · " in text and "answering" not in text and "waiting" not in text, text  # a final status line
            assert "Still streaming" not in text
            assert len(text.split()) > 8, text  # an answer, not only its status
        table = page.locator(".jp-OutputArea-output table.sw-compare-table")
        assert table.count() == tables
        for i in range(tables):
            figures = table.nth(i).inner_text()
            assert table.nth(i).is_visible() and "waiting" not in figures and "answering" not in figures, figures
            assert figures.count("done") == 3, figures
        if name == "05_side_by_side":  # the row and the grid the notebook placed its views in
            boxes = page.locator(".jp-OutputArea-output .sw-static-box")
            assert boxes.count() == 2
            assert boxes.nth(0).locator(".sw-static").count() == 3 and boxes.nth(1).locator(".sw-static").count() == 5
            first, second = (boxes.nth(0).locator(".sw-static").nth(i).bounding_box() for i in range(2))
            assert first is not None and second is not None and second["x"] > first["x"]  # side by side
        if name == "chat_app":
            question = page.locator(".jp-OutputArea-output .sw-static-question")
            assert question.is_visible() and "How does binary search work?" in question.inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"export-offline-{name}.png"), full_page=True)
    finally:
        page.close()
    assert refused and all(not url.startswith("file://") for url in refused)
