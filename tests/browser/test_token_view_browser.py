"""The token view in JupyterLab, in Debian's Chromium: the tints' contrast measured in the page in
the light and the dark theme, keyboard focus showing a token's alternatives, and the README's
screenshots (`test-artifacts/token-view-{light,dark}.png`; `docs/` holds copies)."""

from __future__ import annotations

import time
from textwrap import dedent
from typing import Any

import pytest
from notebook_driver import ARTIFACTS, SLOW, rerun_from_scratch, set_lab_theme

pytestmark = pytest.mark.browser

CELLS = [
    dedent("""\
        import streamwidgets as sw

        handle = sw.show("What is a closure in Python?", logprobs=5, max_tokens=140, demo={"tokens_per_second": 200})"""),
]

#: Every tinted token's text and background as the page computes them, and their contrast.
CONTRASTS = """() => {
  const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = (c) => { const [r, g, b] = rgb(c).map((v) => { v /= 255;
    return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  return [...document.querySelectorAll('.sw-tokens-flow mark.sw-t')].map((m) => {
    const s = getComputedStyle(m);
    const [a, b] = [lum(s.color), lum(s.backgroundColor)].sort((x, y) => y - x);
    return {bucket: m.classList[1], ratio: (a + 0.05) / (b + 0.05), background: lum(s.backgroundColor)};
  });
}"""


def test_the_token_view_keeps_contrast_in_both_themes_and_focus_shows_alternatives(
    opener: Any, jupyter: Any, page: Any
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1060, "height": 1500})
    nb = opener(jupyter.write_notebook("scratch_tokens.ipynb", CELLS), "lab")
    nb.js("() => window.jupyterapp.shell.collapseLeft()")
    try:
        for theme, name in (("JupyterLab Light", "light"), ("JupyterLab Dark", "dark")):
            set_lab_theme(nb, theme)
            rerun_from_scratch(nb)
            nb.wait_for("() => !!document.querySelector('.sw-tokens-least')", timeout=SLOW)
            nb.wait_until_idle()
            time.sleep(0.5)  # the final frame
            measured = nb.js(CONTRASTS)
            assert len({m["bucket"] for m in measured}) >= 2, measured
            low = [m for m in measured if m["ratio"] < 4.5]
            assert not low, (theme, low[:5])
            dark_tints = all(m["background"] < 0.2 for m in measured)
            assert dark_tints == (name == "dark"), (theme, measured[:3])

            mark = page.locator(".sw-tokens-flow mark.sw-t").first
            mark.focus()
            shown = nb.js(
                "() => { const m = document.activeElement; const after = getComputedStyle(m, '::after');"
                " return [m.tagName, m.getAttribute('aria-label'), after.content, after.position]; }"
            )
            tag, label, content, position = shown
            assert tag == "MARK" and "alternatives:" in label and "likely" in label
            assert "alternatives:" in content and position == "absolute"  # the box is drawn on focus
            page.locator(".sw-tokens-toggle").click()
            nb.wait_for("() => !!document.querySelector('.sw-tokens-flow.sw-bounds')", timeout=30)
            page.mouse.move(0, 0)
            page.locator(".sw-tokens-flow mark.sw-t").nth(1).focus()  # a box open in the picture
            shot = ARTIFACTS / f"token-view-{name}.png"
            page.locator(".sw-view").first.screenshot(path=str(shot))
            assert 10_000 < shot.stat().st_size < 900_000, shot.stat().st_size
    finally:
        set_lab_theme(nb, "JupyterLab Light")
