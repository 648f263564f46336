"""JupyterLab in a real Chromium: streaming, reasoning and sources, Cancel, XSS, screenshots."""

from __future__ import annotations

import time
from typing import Any

import pytest
from notebook_driver import (
    ANSWER,
    ARTIFACTS,
    SLOW,
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

FLAVOR = "lab"


def test_quickstart_answer_grows_while_streaming(opener: Opener) -> None:
    check_answer_grows(opener("01_quickstart.ipynb", FLAVOR))


def test_reasoning_and_sources_render(opener: Opener) -> None:
    check_reasoning_and_sources(opener("02_reasoning_and_sources.ipynb", FLAVOR))


def test_cancel_stops_the_text_and_closes_the_connection(opener: Opener, jupyter: Any, demo_provider: Any) -> None:
    path = jupyter.write_notebook("scratch_cancel.ipynb", cancel_cells(demo_provider.base_url))
    check_cancel(opener(path, FLAVOR), demo_provider.connections)


def test_hostile_output_runs_no_script(opener: Opener, jupyter: Any, demo_provider: Any) -> None:
    path = jupyter.write_notebook("scratch_xss.ipynb", xss_cells(demo_provider.base_url))
    check_xss(opener(path, FLAVOR))


def test_screenshots_light_and_dark(opener: Opener, jupyter: Any, page: Any) -> None:
    """The widget mid-stream and finished, in both Lab themes, cropped to the widget."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1060, "height": 1700})
    nb = opener(jupyter.write_notebook("scratch_screenshot.ipynb", screenshot_cells()), FLAVOR)
    nb.js("() => window.jupyterapp.shell.collapseLeft()")
    view = page.locator(".sw-view").first
    try:
        for theme, name in (("JupyterLab Light", "light"), ("JupyterLab Dark", "dark")):
            set_lab_theme(nb, theme)
            rerun_from_scratch(nb)
            nb.wait_for(f"() => {{ const a = document.querySelector('{ANSWER}'); return !!a && a.innerText.length > 400; }}",
                        timeout=SLOW)
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
