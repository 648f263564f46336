"""Typeset math in a real Chromium, in JupyterLab and in Notebook 7.

A scripted OpenAI-style server on 127.0.0.1 (`support/hostile.py`, started here, stopped here)
streams an answer with display and inline math token by token over a real socket; the kernel's
view typesets it as MathML. In the page: `math` elements that the browser lays out (the display
formula taller than a line of text), no TeX source visible, and a screenshot of each frontend in
`test-artifacts/`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from textwrap import dedent
from typing import Any

import pytest
from notebook_driver import ARTIFACTS, SLOW, XSS_PROBE, Notebook, Opener, wait_status
from support.hostile import HostileServer, Reply

pytestmark = pytest.mark.browser

ANSWER_TEXT = (
    "The area under $y = x^2$ from 0 to 1:\n\n"
    "$$\\int_0^1 x^2\\,dx = \\tfrac13$$\n\n"
    "and Euler's identity, \\(e^{i\\pi}+1=0\\), ties five constants together.\n\n"
    "\\[\n\\sum_{n=1}^{\\infty} \\frac{1}{n^2} = \\frac{\\pi^2}{6}\n\\]\n\n"
    "Prices stay text: it costs $5 and $10.\n"
)
#: LaTeX that would run script if the converter's output reached the page unsanitized.
HOSTILE_TEXT = (
    'Links: $\\href{javascript:window.__xss=1}{click}$ and \\(\\text{<img src=x onerror="window.__xss=1">}\\).\n\n'
    "$$\\style{background:url(javascript:window.__xss=1)}{x} + \\class{jp-Dialog}{y}$$\n\n"
    "\\[\\text{<script>window.__xss=1</script>} = \\unicode{x3c}img src=x onerror=window.__xss=1\\unicode{x3e}\\]\n\n"
    "\\begin{align}\na &= \\href{javascript:window.__xss=1}{b}\n\\end{align}\n"
)
FRONTENDS = {"lab": "lab", "notebook7": "notebook"}


def _chunks(text: str) -> Iterator[bytes]:
    """The answer as chat-completion chunks of a few characters (formulas split mid-way)."""
    pieces = re.findall(r".{1,4}", text, re.S)
    for piece in pieces:
        chunk = {"id": "m", "object": "chat.completion.chunk", "created": 0, "model": "math-demo"}
        chunk["choices"] = [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    done = {"id": "m", "object": "chat.completion.chunk", "created": 0, "model": "math-demo"}
    done["choices"] = [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    yield f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode()


@pytest.fixture(scope="module")
def math_server() -> Iterator[str]:
    """The server's root: each model's answer is at `<root>/<model>/v1` (see `math_cells`)."""
    answers = {"math-demo": ANSWER_TEXT, "math-xss": HOSTILE_TEXT}
    replies = {
        f"/{model}/v1/chat/completions": Reply(tuple(_chunks(text)), pace=0.02) for model, text in answers.items()
    }
    with HostileServer(replies) as server:
        yield server.root


@pytest.fixture(params=list(FRONTENDS))
def frontend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def math_cells(root: str, model: str = "math-demo") -> list[str]:
    base_url = f"{root}/{model}/v1"
    return [
        dedent(f"""\
            from streamwidgets import show

            handle = show("Show me some math.", model={model!r}, api="chat", base_url={base_url!r},
                          api_key="not-a-real-key")"""),
    ]


# Geometry of every <math> in the answer, the answer's line height, and the text a reader sees.
_PROBE = """() => {
    const answer = document.querySelector('.sw-view .sw-answer');
    const lineHeight = parseFloat(getComputedStyle(answer.querySelector('p')).lineHeight)
        || 1.2 * parseFloat(getComputedStyle(answer).fontSize);
    const maths = [...answer.querySelectorAll('math')].map(m => {
        const r = m.getBoundingClientRect();
        return {display: m.getAttribute('display'), height: r.height, width: r.width,
                tex: m.getAttribute('alttext')};
    });
    return {lineHeight, maths, text: answer.innerText};
}"""


def test_math_is_typeset_in_the_browser(
    opener: Opener, frontend: str, jupyter: Any, math_server: str, page: Any
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1000, "height": 1200})
    path = jupyter.write_notebook(f"scratch_math_{frontend}.ipynb", math_cells(math_server))
    nb: Notebook = opener(path, FRONTENDS[frontend])
    nb.run_all()
    wait_status(nb, "complete", timeout=SLOW)
    nb.wait_until_idle()
    time.sleep(0.5)  # the final frame
    found = nb.js(_PROBE)
    maths = found["maths"]
    assert len(maths) == 4, found  # y = x^2, the integral, Euler, the sum; not the prices
    assert all(m["width"] > 0 and m["height"] > 0 for m in maths), maths
    integral = next(m for m in maths if m["tex"].startswith("\\int"))
    assert integral["display"] == "block"
    assert integral["height"] > found["lineHeight"], (integral, found["lineHeight"])
    euler = next(m for m in maths if m["tex"].startswith("e^"))
    assert euler["display"] == "inline" and euler["height"] > 0
    text = found["text"]
    for source in ("$$", "\\(", "\\[", "\\int", "\\tfrac", "\\frac", "\\pi", "e^{"):
        assert source not in text, (source, text)
    assert "it costs $5 and $10" in text
    shot = ARTIFACTS / f"math-{frontend}.png"
    page.locator(".sw-view").first.screenshot(path=str(shot))
    assert 5_000 < shot.stat().st_size < 600_000  # docs/math.png is a copy: scripts/update-screenshots


# Attributes inside typeset math that could link, restyle or run something.
_MATH_ATTRIBUTES = """() => [...document.querySelectorAll('.sw-answer math, .sw-answer math *')]
    .flatMap(el => [...el.attributes].filter(a => !['display', 'alttext', 'mathvariant', 'stretchy',
        'displaystyle', 'scriptlevel', 'rowspacing', 'columnspacing', 'columnalign', 'width', 'fence',
        'separator', 'lspace', 'rspace', 'movablelimits', 'accent', 'linethickness'].includes(a.name))
    .map(a => el.tagName + '[' + a.name + '=' + a.value + ']'))"""


def test_hostile_latex_stays_inert_in_the_browser(
    opener: Opener, frontend: str, jupyter: Any, math_server: str, page: Any
) -> None:
    path = jupyter.write_notebook(f"scratch_math_xss_{frontend}.ipynb", math_cells(math_server, "math-xss"))
    nb: Notebook = opener(path, FRONTENDS[frontend])
    nb.run_all()
    wait_status(nb, "complete", timeout=SLOW)
    nb.wait_until_idle()
    time.sleep(1.0)  # give any handler that slipped through the time to fire
    found = nb.js(XSS_PROBE)
    found["active"] = [el for el in found["active"] if not el.startswith("<math")]  # typeset math is ours
    assert found == {"marker": "undefined", "handlers": [], "badUrls": [], "active": [], "scripts": []}, found
    assert nb.js("() => document.querySelectorAll('.sw-answer math').length") >= 3
    assert nb.js(_MATH_ATTRIBUTES) == []
    assert (
        nb.js("() => document.querySelectorAll('.sw-answer img, .sw-answer script, .sw-answer a[href^=j]').length") == 0
    )
