"""`sw.compare` with three models in JupyterLab, in Debian's Chromium: side by side on a wide
screen, in rows on a narrow one, the live table and a sparkline per view — and the README's
screenshot (`test-artifacts/screenshot-compare.png`; `docs/screenshot-compare.png` is a copy)."""

from __future__ import annotations

import time
from textwrap import dedent
from typing import Any

import pytest
from notebook_driver import ARTIFACTS, SLOW

pytestmark = pytest.mark.browser

CELLS = [
    dedent("""\
        import streamwidgets as sw

        comparison = sw.compare("How does binary search work?", ["demo-fast", "demo", "demo-deep"])"""),
]


def _boxes(page: Any) -> list[dict[str, float]]:
    return page.evaluate(
        "() => [...document.querySelectorAll('.sw-compare-row > .sw-view')].map(v => {"
        " const r = v.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width}; })"
    )


def test_three_models_side_by_side_with_a_live_table_and_sparklines(opener: Any, jupyter: Any, page: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 1900})
    nb = opener(jupyter.write_notebook("scratch_compare.ipynb", CELLS), "lab")
    nb.js("() => window.jupyterapp.shell.collapseLeft()")
    nb.run_all()
    nb.wait_for("() => document.querySelectorAll('.sw-compare-table tbody tr').length === 3", timeout=SLOW)
    nb.wait_for(
        "() => [...document.querySelectorAll('.sw-compare-table tbody tr')].some(r => r.textContent.includes('answering'))",
        timeout=SLOW,
    )  # the table is live: caught while they stream
    nb.wait_for(
        "() => [...document.querySelectorAll('.sw-compare-table tbody tr')]"
        ".every(r => r.children[1].textContent === 'done')",
        timeout=SLOW,
    )
    nb.wait_for("() => document.querySelectorAll('.sw-view .sw-sparkline').length === 3", timeout=30)
    time.sleep(0.5)  # the final frames
    boxes = _boxes(page)
    assert len(boxes) == 3 and len({round(b["y"]) for b in boxes}) == 1, boxes  # one row on a wide screen
    models = page.locator(".sw-compare-table tbody th").all_inner_texts()
    assert models == ["demo-fast", "demo", "demo-deep"]
    shot = ARTIFACTS / "screenshot-compare.png"
    page.locator(".sw-compare").first.screenshot(path=str(shot))
    assert 20_000 < shot.stat().st_size < 900_000, shot.stat().st_size

    page.set_viewport_size({"width": 700, "height": 1200})  # a narrow screen: the views wrap
    nb.wait_for(
        "() => { const v = [...document.querySelectorAll('.sw-compare-row > .sw-view')];"
        " return v.length === 3 && new Set(v.map(e => Math.round(e.getBoundingClientRect().y))).size > 1; }",
        timeout=30,
    )


TOKEN_CELLS = [
    dedent("""\
        import streamwidgets as sw

        comparison = sw.compare(
            "What is a closure in Python?", model="demo", temperature=[0, 0.7, 1.5], logprobs=5, max_tokens=60,
            demo={"tokens_per_second": 300},
        )"""),
]


def test_the_least_likely_tables_fit_their_narrow_columns(opener: Any, jupyter: Any, page: Any) -> None:
    """Three token views side by side: each least-likely table stays inside its column and scrolls
    sideways when it is wider, never clipped by the column's edge."""
    page.set_viewport_size({"width": 1100, "height": 1600})
    nb = opener(jupyter.write_notebook("scratch_compare_tokens.ipynb", TOKEN_CELLS), "lab")
    nb.js("() => window.jupyterapp.shell.collapseLeft()")
    nb.run_all()
    nb.wait_for("() => document.querySelectorAll('.sw-compare-row .sw-tokens-table').length === 3", timeout=SLOW)
    nb.wait_until_idle()
    time.sleep(0.5)
    overflow = nb.js(
        "() => [...document.querySelectorAll('.sw-compare-row > .sw-view')].map(v => {"
        " const t = v.querySelector('.sw-tokens-table'); const a = v.getBoundingClientRect();"
        " const b = t.getBoundingClientRect(); return [b.right - a.right, t.scrollWidth - t.clientWidth]; })"
    )
    assert all(right <= 1 for right, _ in overflow), overflow  # inside its column
    page.locator(".sw-compare").first.screenshot(path=str(ARTIFACTS / "compare-least-likely.png"))
