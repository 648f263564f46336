"""Notebook 7 in a real Chromium: the same checks as in JupyterLab (its own shell, same widgets)."""

from __future__ import annotations

from typing import Any

import pytest
from notebook_driver import (
    Opener,
    cancel_cells,
    check_answer_grows,
    check_cancel,
    check_reasoning_and_sources,
    check_xss,
    xss_cells,
)

pytestmark = pytest.mark.browser

FLAVOR = "notebook"


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
