"""JupyterLab and Notebook 7 in a real Chromium: the same checks in both frontends (each has its
own shell around the same widgets) — streaming, reasoning and sources, Cancel, XSS — plus Lab's
light and dark screenshots.

One Jupyter server, one embedded provider and one browser serve the whole module (conftest.py):
the server serves both frontends. The frontend is a module-scoped fixture parameter, so pytest
runs every Lab test, then every Notebook 7 test, and the served notebooks are restored to their
committed state before each frontend's group (Lab autosaves the outputs it ran).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from notebook_driver import (
    ANSWER,
    ARTIFACTS,
    SLOW,
    Notebook,
    Opener,
    cancel_cells,
    check_answer_grows,
    check_cancel,
    check_reasoning_and_sources,
    check_xss,
    rerun_from_scratch,
    screenshot_cells,
    set_lab_theme,
    wait_status,
    xss_cells,
)

pytestmark = pytest.mark.browser

#: The notebooks as committed (the `jupyter` fixture serves a copy of them).
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

#: Test id → the `opener` flavor that shows a notebook in that frontend.
FRONTENDS = {"lab": "lab", "notebook7": "notebook"}


@pytest.fixture(scope="module", params=list(FRONTENDS))
def frontend(request: pytest.FixtureRequest, jupyter: Any) -> str:
    """The frontend under test; its group starts from the notebooks as committed."""
    shutil.copytree(NOTEBOOKS, jupyter.root, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return str(request.param)


@pytest.fixture
def open_in(opener: Opener, frontend: str) -> Any:
    """`open_in(path)` opens a served notebook in this test's frontend and waits for its kernel."""

    def _open(path: str) -> Notebook:
        return opener(path, FRONTENDS[frontend])

    return _open


def test_quickstart_answer_grows_while_streaming(open_in: Any) -> None:
    check_answer_grows(open_in("01_quickstart.ipynb"))


def test_reasoning_and_sources_render(open_in: Any) -> None:
    check_reasoning_and_sources(open_in("02_reasoning_and_sources.ipynb"))


def test_cancel_stops_the_text_and_closes_the_connection(
    open_in: Any, frontend: str, jupyter: Any, demo_provider: Any
) -> None:
    path = jupyter.write_notebook(f"scratch_cancel_{frontend}.ipynb", cancel_cells(demo_provider.base_url))
    check_cancel(open_in(path), demo_provider.connections)


def test_hostile_output_runs_no_script(open_in: Any, frontend: str, jupyter: Any, demo_provider: Any) -> None:
    path = jupyter.write_notebook(f"scratch_xss_{frontend}.ipynb", xss_cells(demo_provider.base_url))
    check_xss(open_in(path))


@pytest.mark.parametrize("frontend", ["lab"], indirect=True)
def test_screenshots_light_and_dark(open_in: Any, jupyter: Any, page: Any) -> None:
    """The widget mid-stream and finished, in both Lab themes, cropped to the widget (Lab only:
    the themes and the screenshots are Lab's)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1060, "height": 1700})
    nb = open_in(jupyter.write_notebook("scratch_screenshot.ipynb", screenshot_cells()))
    nb.js("() => window.jupyterapp.shell.collapseLeft()")
    view = page.locator(".sw-view").first
    try:
        for theme, name in (("JupyterLab Light", "light"), ("JupyterLab Dark", "dark")):
            set_lab_theme(nb, theme)
            rerun_from_scratch(nb)
            nb.wait_for(
                f"() => {{ const a = document.querySelector('{ANSWER}'); return !!a && a.innerText.length > 400; }}",
                timeout=SLOW,
            )
            streaming = ARTIFACTS / f"screenshot-{name}-streaming.png"
            view.screenshot(path=str(streaming))
            assert page.locator(".sw-view .sw-status-answering").count() == 1, "captured while streaming"
            wait_status(nb, "complete", timeout=SLOW)
            nb.wait_until_idle()
            time.sleep(0.5)  # the final frame
            done = ARTIFACTS / f"screenshot-{name}.png"
            view.screenshot(path=str(done))
            background = nb.js("() => getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor")
            assert _is_dark(background) == (name == "dark"), (theme, background)
            for shot in (streaming, done):
                assert 10_000 < shot.stat().st_size < 600_000, (shot, shot.stat().st_size)
    finally:
        set_lab_theme(nb, "JupyterLab Light")


def _is_dark(css_color: str) -> bool:
    """`rgb(17, 17, 17)` → True (a computed color is always `rgb(...)` or `rgba(...)`)."""
    channels = [float(part) for part in css_color[css_color.index("(") + 1 : -1].split(",")[:3]]
    return sum(channels) / 3 < 100
