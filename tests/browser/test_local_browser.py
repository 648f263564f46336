"""A real model's answer in JupyterLab, in Debian's Chromium: with no key and a local model on the
machine, the view wears the "local model" badge and names the model, its size and where it came
from, and the answer streams, renders and ends (`test-artifacts/local-model.png`)."""

from __future__ import annotations

import time
from textwrap import dedent
from typing import Any

import pytest
from notebook_driver import ARTIFACTS, SLOW, rerun_from_scratch

from streamwidgets.server.local import find_weights

pytestmark = [pytest.mark.browser, pytest.mark.local]


def test_a_local_model_standing_in_is_named_in_the_view(opener: Any, jupyter: Any, page: Any, tmp_path: Any) -> None:
    weights = find_weights("smollm2-135m")
    assert weights is not None
    cells = [
        dedent(f"""\
            import os
            os.environ.pop("STREAMWIDGETS_OFFLINE", None)
            os.environ.pop("OPENAI_API_KEY", None)
            os.environ["STREAMWIDGETS_LOCAL_MODEL"] = {str(weights.path)!r}
            os.environ["STREAMWIDGETS_LOCAL_STATE"] = {str(tmp_path)!r}
            os.environ["STREAMWIDGETS_LOCAL_LINGER"] = "2"
            import streamwidgets as sw

            handle = sw.show("What is the water cycle?", provider="openai", seed=1)"""),
    ]
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1060, "height": 1200})
    nb = opener(jupyter.write_notebook("scratch_local.ipynb", cells), "lab")
    nb.js("() => window.jupyterapp.shell.collapseLeft()")
    rerun_from_scratch(nb)
    nb.wait_for("() => /done/.test(document.querySelector('.sw-view')?.innerText || '')", timeout=SLOW)
    nb.wait_until_idle()
    time.sleep(0.5)  # the final frame
    text = nb.js("() => document.querySelector('.sw-view').innerText")
    assert "LOCAL MODEL" in text.upper()
    assert "SmolLM2-135M-Instruct (98 MB, from STREAMWIDGETS_LOCAL_MODEL" in text
    assert "no OPENAI_API_KEY is set for openai" in text and "scripted" not in text
    answer = nb.js("() => document.querySelector('.sw-view .sw-markdown, .sw-view .sw-answer')?.innerText || ''")
    assert len(answer.split()) > 5, text
    shot = ARTIFACTS / "local-model.png"
    page.locator(".sw-view").first.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
