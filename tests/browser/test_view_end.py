"""What a class sees at the end, at 1280 px in JupyterLab, in Debian's Chromium: a finished long
answer on a projector (scale 1.5) shows its start, not its end under the header; `compare`'s
table has the full width below the answers, its headers on one line. Screenshots:
`test-artifacts/finished-long-answer-1280.png`, `test-artifacts/compare-table-1280.png`."""

from __future__ import annotations

import time
from textwrap import dedent
from typing import Any

import pytest
from notebook_driver import ARTIFACTS, SLOW, wait_status

pytestmark = pytest.mark.browser

LONG = [
    dedent("""\
        import streamwidgets as sw

        h = sw.show("Write a long tutorial on asyncio", model="demo-long", scale=1.5,
                    demo={"tokens": 1500, "tokens_per_second": 1000, "first_token_delay": 0})"""),
]

COMPARE = [
    dedent("""\
        import streamwidgets as sw

        comparison = sw.compare("How does binary search work?", ["demo-fast", "demo", "demo-deep"])"""),
]


def _lab(opener: Any, jupyter: Any, page: Any, name: str, cells: list[str], height: int = 800) -> Any:
    """The notebook in JupyterLab at 1280 px, its file browser open beside it (as a class has it)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": height})
    nb = opener(jupyter.write_notebook(name, cells), "lab")
    nb.js("() => window.jupyterapp.shell.expandLeft()")
    nb.run_all()
    return nb


def test_a_finished_long_answer_on_a_projector_shows_its_start(opener: Any, jupyter: Any, page: Any) -> None:
    nb = _lab(opener, jupyter, page, "scratch_long_end.ipynb", LONG)
    nb.wait_for("() => document.querySelectorAll('.sw-view .sw-answer-box').length === 1", timeout=SLOW)
    box = ".sw-view .sw-answer-box"
    # A long answer: more than two boxes tall (while it streams, the box follows its end).
    nb.wait_for(
        "(sel) => { const b = document.querySelector(sel); return b.scrollHeight > 2 * b.clientHeight; }",
        box,
        timeout=SLOW,
    )
    wait_status(nb, "complete", timeout=SLOW)
    time.sleep(0.5)  # the final frames
    seen = nb.js(
        "(sel) => { const b = document.querySelector(sel); const r = b.getBoundingClientRect();"
        " const first = b.querySelector('.sw-answer').firstElementChild.getBoundingClientRect();"
        " return {ended: b.classList.contains('sw-ended'), top: r.top, first: first.top,"
        " scrollTop: b.scrollTop, scrollable: b.scrollHeight > b.clientHeight}; }",
        box,
    )
    assert seen["ended"] and seen["scrollable"], seen  # a long answer, in a box of its own
    assert seen["first"] >= seen["top"] - 1, seen  # its first line at the top of the box, in sight
    page.locator(".sw-view").first.scroll_into_view_if_needed()
    shot = ARTIFACTS / "finished-long-answer-1280.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000


def test_the_compare_table_has_the_full_width_and_one_line_headers(opener: Any, jupyter: Any, page: Any) -> None:
    nb = _lab(opener, jupyter, page, "scratch_compare_1280.ipynb", COMPARE, height=1600)  # all of it in sight
    nb.wait_for(
        "() => [...document.querySelectorAll('.sw-compare-table tbody tr')]"
        ".length === 3 && [...document.querySelectorAll('.sw-compare-table tbody tr')]"
        ".every(r => r.children[1].textContent === 'done')",
        timeout=SLOW,
    )
    time.sleep(0.5)
    seen = nb.js(
        "() => { const c = document.querySelector('.sw-compare').getBoundingClientRect();"
        " const t = document.querySelector('.sw-compare-table').getBoundingClientRect();"
        " const views = [...document.querySelectorAll('.sw-compare-row > .sw-view')]"
        ".map(v => v.getBoundingClientRect());"
        " const heads = [...document.querySelectorAll('.sw-compare-table thead th')]"
        ".map(h => h.getBoundingClientRect().height);"
        " const cell = document.querySelector('.sw-compare-table tbody td').getBoundingClientRect().height;"
        " return {compare: c.width, table: t.width, left: t.left - c.left, top: t.top,"
        " viewBottom: Math.max(...views.map(v => v.bottom)), column: views[0].width, heads, cell}; }"
    )
    assert seen["column"] < seen["compare"] / 2, seen  # the answers side by side
    assert seen["top"] >= seen["viewBottom"] - 1, seen  # below the answers
    assert seen["table"] > seen["column"] * 1.5, seen  # not squeezed into one column
    assert max(seen["heads"]) < 1.5 * seen["cell"], seen  # every header on one line
    shot = ARTIFACTS / "compare-table-1280.png"
    page.locator(".sw-compare").first.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000
