"""A tool loop in JupyterLab, in Debian's Chromium: the cards of two parallel calls with their
results above the answer written from them — and the README's screenshot
(`test-artifacts/screenshot-tools.png`; `docs/screenshot-tools.png` is a copy)."""

from __future__ import annotations

import time
from textwrap import dedent
from typing import Any

import pytest
from notebook_driver import ARTIFACTS, SLOW

pytestmark = pytest.mark.browser

CELLS = [
    dedent('''\
        import streamwidgets as sw


        def get_weather(city: str, unit: str = "celsius") -> dict:
            """The current weather in a city.

            Args:
                city: The city's name, in English.
                unit: celsius or fahrenheit.
            """
            return {"city": city, "temperature": 21 if city == "Paris" else 12, "unit": unit, "sky": "clear"}


        weather = sw.show("What's the weather in Paris and Tokyo?", model="demo-tools", tools=[get_weather])'''),
]


def test_the_timeline_of_a_tool_loop(opener: Any, jupyter: Any, page: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1100, "height": 1400})
    nb = opener(jupyter.write_notebook("scratch_tools.ipynb", CELLS), "lab")
    nb.js("() => window.jupyterapp.shell.collapseLeft()")
    nb.run_all()
    nb.wait_for("() => document.querySelectorAll('.sw-view .sw-tool-status.sw-tool-done').length === 2", timeout=SLOW)
    nb.wait_for("() => document.querySelector('.sw-view .sw-status-complete') !== null", timeout=SLOW)
    time.sleep(0.5)  # the final frames
    order = page.evaluate(
        "() => { const v = document.querySelector('.sw-view');"
        " const t = v.querySelector('.sw-tools').getBoundingClientRect().y;"
        " const a = v.querySelector('.sw-answer').getBoundingClientRect().y; return [t, a]; }"
    )
    assert order[0] < order[1], order  # the cards above the answer they led to
    answer = page.locator(".sw-view .sw-answer").first.inner_text()
    assert "Paris" in answer and "21" in answer
    shot = ARTIFACTS / "screenshot-tools.png"
    page.locator(".sw-view").first.screenshot(path=str(shot))
    assert 10_000 < shot.stat().st_size < 900_000, shot.stat().st_size
