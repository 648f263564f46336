"""Accessible, projector-ready streaming in a real JupyterLab (Debian's Chromium).

What a screen reader hears is read from Playwright's accessibility snapshot of the view, sampled
while the answer streams, and from a MutationObserver that sees every change of every live
region in the view between samples: one announcement per phase ("answering", then how it
ended, in words), none per token, and no live region around the answer. The answer box follows
the growing end until the reader scrolls up (CSS only), code keeps its long lines and scrolls
sideways, and `scale=1.5` makes text and code larger. Screenshots at scale 1 and 1.5 land in
test-artifacts/.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from textwrap import dedent
from typing import Any

import pytest
from notebook_driver import ANSWER, ARTIFACTS, SLOW, Notebook, Opener, rerun_from_scratch, set_lab_theme, wait_status

pytestmark = pytest.mark.browser

#: Records, per view, every change of what a live region in it says (a change between two
#: snapshots too), what regions said when they were put into the page (a redrawn output), and
#: how many times the answer changed meanwhile (the tokens a screen reader must not hear). A
#: region's words are its text plus its generated content (`::before` / `::after`), as in the
#: accessibility tree, read once the task that changed the page is over (the browser builds its
#: accessibility tree after a task, not in the middle of one).
LISTEN = """() => {
    window.__said = {}; window.__inserted = {}; window.__answerChanges = 0;
    const liveness = (el) => el.getAttribute('aria-live')
        || {status: 'polite', alert: 'assertive', log: 'polite', marquee: 'off', timer: 'off'}[el.getAttribute('role')];
    const generated = (el, which) => {
        const c = getComputedStyle(el, which).content;
        return c && c !== 'none' && c !== 'normal' ? JSON.parse(c.split(' / ')[0]) : '';
    };
    const words = (el) => (generated(el, '::before') + el.textContent + generated(el, '::after')).trim();
    const last = new WeakMap();
    const hear = () => {
        document.querySelectorAll('.sw-view').forEach((view, i) => {
            const regions = [...view.querySelectorAll('[aria-live], [role]')].filter(el => (liveness(el) || 'off') !== 'off');
            for (const el of regions) {
                const text = words(el);
                if (!el.__n) el.__n = (window.__n = (window.__n || 0) + 1);
                (window.__log = window.__log || []).push(el.__n + ':' + JSON.stringify(text) + ':' + performance.now().toFixed(0));
                if (!last.has(el)) (window.__inserted[i] = window.__inserted[i] || []).push(text);
                else if (last.get(el) !== text && text) (window.__said[i] = window.__said[i] || []).push(text);
                last.set(el, text);
            }
        });
    };
    let pending = false;
    new MutationObserver((records) => {
        if (records.some(r => { const t = r.target.nodeType === 1 ? r.target : r.target.parentElement;
                                return t && t.closest('.sw-answer'); })) window.__answerChanges += 1;
        if (!pending) { pending = true; setTimeout(() => { pending = false; hear(); }, 0); }
    }).observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
}"""


def _status_lines(snapshot: str) -> list[str]:
    """The status regions of an aria snapshot (`- status: answering`)."""
    return [m.strip().strip('"') for m in re.findall(r"^\s*- status(?: \"[^\"]*\")?: (.+)$", snapshot, re.M)]


def _stream_cells(base_url: str, model: str, tps: int, **extra: Any) -> list[str]:
    options = "".join(f", {k}={v!r}" for k, v in extra.items())
    return [
        dedent(f"""\
            from streamwidgets import show

            handle = show("Explain photosynthesis.", model={model!r}, base_url={base_url!r},
                          demo={{"tokens_per_second": {tps}}}{options})"""),
        dedent("""\
            state = await handle
            print("words:", len(handle.view.text.split()), "status:", state.status)"""),
    ]


def _open(opener: Opener, jupyter: Any, name: str, cells: list[str]) -> Notebook:
    nb = opener(jupyter.write_notebook(name, cells), "lab")
    nb.js(LISTEN)
    return nb


def _wait_said(nb: Notebook, count: int) -> None:
    """Wait until the first view's status region has said `count` things (or time out: the
    assertion that follows says what it did say)."""
    with contextlib.suppress(Exception):  # playwright's TimeoutError
        nb.wait_for("(n) => ((window.__said || {})[0] || []).length >= n", arg=count, timeout=15)


def _words(nb: Notebook) -> int:
    found = re.search(r"words: (\d+)", nb.outputs_text())
    assert found, nb.outputs_text() + "\n".join(nb.errors_shown())
    return int(found.group(1))


def test_screen_readers_hear_each_phase_once_and_no_token(opener: Opener, jupyter: Any, demo_provider: Any) -> None:
    nb = _open(
        opener, jupyter, "scratch_a11y_complete.ipynb", _stream_cells(demo_provider.base_url, "demo-markdown", 60)
    )
    page = nb.page
    nb.run_all()
    view = page.locator(".sw-view").first
    nb.wait_for(
        f"() => !!document.querySelector('{ANSWER}') && document.querySelector('{ANSWER}').textContent.length > 20"
    )
    snapshots = []
    while page.locator(".sw-view .sw-status-complete").count() == 0:
        snapshots.append(view.aria_snapshot())
        if len(snapshots) == 3:  # mid-stream: the live button is named
            assert page.get_by_role("button", name="Cancel", exact=True).count() == 1, snapshots[-1]
        time.sleep(0.25)
    nb.wait_until_idle()
    _wait_said(nb, 2)  # show() says how it ended a moment after it draws the final output
    time.sleep(0.5)
    snapshots.append(view.aria_snapshot())
    words = _words(nb)
    assert words > 100

    heard = [lines for lines in map(_status_lines, snapshots)]
    final = heard[-1]

    def redrawn(i: int) -> bool:
        """A snapshot taken while the final output was being drawn anew (the display update
        renders the view again, widget by widget): no region yet, and only the end words after."""
        return not heard[i] and all(lines == final for lines in heard[i + 1 :] if lines)

    odd = next((i for i, lines in enumerate(heard) if len(lines) > 1 or (not lines and not redrawn(i))), None)
    assert odd is None, f"one status region per view, snapshot {odd} of {len(heard)}: {heard}\n" + snapshots[odd or 0]
    heard = [lines for lines in heard if lines]
    distinct = [lines[0] for i, lines in enumerate(heard) if i == 0 or lines != heard[i - 1]]
    assert distinct == ["answering", f"answer complete, {words} words"], distinct
    assert len(snapshots) > 10, "sampled while it streamed"

    said = nb.js("() => window.__said[0]")
    changes = nb.js("() => window.__answerChanges")
    assert said == ["answering", f"answer complete, {words} words"], nb.js(
        "() => window.__log.filter((x, i, a) => i == 0 || x.split(':').slice(0,2).join() != a[i-1].split(':').slice(0,2).join())"
    )
    assert changes > 20, f"the answer changed {changes} times and the status region said {said}"
    # Regions put into the page (the first drawing, the redrawn final output) came with nothing
    # to say, or with words already said: a region that appears is not spoken, so the end words
    # must be (and were, above) a change in the region the page kept.
    assert set(nb.js("() => window.__inserted[0]")) <= {"", *said}

    # The answer itself is no live region, nor inside one.
    live_around_answer = nb.js(
        """() => { const a = document.querySelector('.sw-view .sw-answer');
            const up = []; for (let el = a; el; el = el.parentElement) up.push(el);
            return [...up, ...a.querySelectorAll('*')].filter(el => el.hasAttribute('aria-live')
                || ['status', 'alert', 'log', 'marquee', 'timer'].includes(el.getAttribute('role'))).length; }"""
    )
    assert live_around_answer == 0
    # Every button in the view has a name (Cancel is hidden once the answer is done).
    names = nb.js(
        "() => [...document.querySelectorAll('.sw-view button')].filter(b => b.offsetParent)"
        ".map(b => (b.getAttribute('aria-label') || b.textContent || b.title).trim())"
    )
    assert all(names), names


@pytest.mark.parametrize(
    ("model", "heard"),
    [
        ("demo-error", r"answer failed: .+, \d+ words kept"),
        ("demo-cutoff", r"answer cut off before the end, \d+ words kept"),
    ],
)
def test_a_failed_answer_is_announced_once_in_words(
    opener: Opener, jupyter: Any, demo_provider: Any, model: str, heard: str
) -> None:
    nb = _open(opener, jupyter, f"scratch_a11y_{model}.ipynb", _stream_cells(demo_provider.base_url, model, 40))
    nb.run_all()
    nb.wait_until_idle()
    _wait_said(nb, 2)
    time.sleep(0.5)
    said = nb.js("() => window.__said[0]")
    assert len(said) == 2 and said[0] == "answering" and re.fullmatch(heard, said[1]), said
    assert f"{_words(nb)} words kept" in said[1]
    assert _status_lines(nb.page.locator(".sw-view").first.aria_snapshot()) == [said[1]]


def test_cancel_is_announced_once(opener: Opener, jupyter: Any, demo_provider: Any) -> None:
    nb = _open(opener, jupyter, "scratch_a11y_cancel.ipynb", _stream_cells(demo_provider.base_url, "demo-long", 40))
    nb.run_all()
    nb.wait_for(f"() => {{ const a = document.querySelector('{ANSWER}'); return !!a && a.textContent.length > 150; }}")
    nb.page.get_by_role("button", name="Cancel", exact=True).click()
    wait_status(nb, "cancelled", timeout=10)
    nb.wait_until_idle()
    _wait_said(nb, 2)
    time.sleep(0.5)
    said = nb.js("() => window.__said[0]")
    assert said == ["answering", f"answer cancelled, {_words(nb)} words kept"], said
    assert nb.page.get_by_role("button", name="Continue", exact=True).count() == 1


#: Where the answer's end is, relative to its scroll box, and what sits in the box's middle.
BOX_PROBE = """() => {
    const box = document.querySelector('.sw-view .sw-answer-box');
    const answer = box.querySelector('.sw-answer');
    const b = box.getBoundingClientRect(), a = answer.getBoundingClientRect();
    const probe = document.elementFromPoint(b.left + 40, b.top + b.height / 2);
    return {boxHeight: b.height, scrollHeight: box.scrollHeight, scrollTop: box.scrollTop,
            endBelowBox: a.bottom - b.bottom, length: answer.textContent.length,
            probeText: probe ? probe.textContent.slice(0, 60) : '', probeTop: probe ? probe.getBoundingClientRect().top : 0};
}"""


def test_the_answer_box_follows_the_end_until_the_reader_scrolls_up(
    opener: Opener, jupyter: Any, demo_provider: Any
) -> None:
    nb = _open(
        opener, jupyter, "scratch_a11y_follow.ipynb", _stream_cells(demo_provider.base_url, "demo-long", 120)[:1]
    )
    page = nb.page
    nb.run_all()
    nb.wait_for(
        "() => { const b = document.querySelector('.sw-view .sw-answer-box');"
        " return !!b && b.scrollHeight > b.clientHeight + 300; }",
        timeout=SLOW,
    )
    box = page.locator(".sw-view .sw-answer-box").first
    box.scroll_into_view_if_needed()
    following = []
    for _ in range(6):
        following.append(nb.js(BOX_PROBE))
        time.sleep(0.3)
    assert following[-1]["length"] > following[0]["length"], following
    assert following[0]["boxHeight"] < 700, "the box has a height limit"
    assert all(abs(p["endBelowBox"]) < 3 for p in following), [p["endBelowBox"] for p in following]
    box.screenshot(path=str(ARTIFACTS / "a11y-following.png"))

    # The reader scrolls up: what they read stays put while the answer goes on growing below.
    bounds = box.bounding_box()
    assert bounds is not None
    page.mouse.move(bounds["x"] + bounds["width"] / 2, bounds["y"] + bounds["height"] / 2)
    page.mouse.wheel(0, -400)
    time.sleep(0.5)
    reading = []
    for _ in range(6):
        reading.append(nb.js(BOX_PROBE))
        time.sleep(0.3)
    assert reading[-1]["length"] > reading[0]["length"], "still streaming"
    assert reading[0]["endBelowBox"] > 200, reading[0]
    assert reading[-1]["endBelowBox"] > reading[0]["endBelowBox"], "the end moved on out of sight"
    assert len({p["probeText"] for p in reading}) == 1, [p["probeText"] for p in reading]
    assert max(p["probeTop"] for p in reading) - min(p["probeTop"] for p in reading) < 3, reading

    # Back at the bottom, it follows again. Known weak spot: on a loaded machine Chromium's
    # box now and then stops following right after the scroll down lands (about 1 run in 10 of
    # the whole suite); scrolling down once more brings it back, as a reader would. Three tries.
    tries = []
    for _ in range(3):
        page.mouse.wheel(0, 100_000)
        time.sleep(0.5)
        again = []
        for _ in range(4):
            again.append(nb.js(BOX_PROBE))
            time.sleep(0.3)
        tries.append([p["endBelowBox"] for p in again])
        if all(abs(p["endBelowBox"]) < 3 for p in again):
            break
    assert again[-1]["length"] > again[0]["length"]
    assert all(abs(p["endBelowBox"]) < 3 for p in again), tries
    page.get_by_role("button", name="Cancel", exact=True).click()
    wait_status(nb, "cancelled", timeout=10)


#: An answer with one very long code line.
CODE_ANSWER = (
    "Run it like this:\n\n```python\ndef main():\n    values = ["
    + ", ".join(str(i * 1000) for i in range(60))
    + "]\n    for v in values:\n        print(v)\n```\n\nThat is all.\n"
)


def _write_code_stream(jupyter: Any) -> str:
    """The answer as a raw chat SSE body, in 40-character deltas, next to the notebooks."""
    chunks = [CODE_ANSWER[i : i + 40] for i in range(0, len(CODE_ANSWER), 40)]
    events = [{"choices": [{"index": 0, "delta": {"content": c}}]} for c in chunks]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    (jupyter.root / "code_answer.sse").write_text(body)
    return "code_answer.sse"


def test_code_scrolls_sideways_and_scale_enlarges_text_and_code(opener: Opener, jupyter: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    sse = _write_code_stream(jupyter)
    sizes = {}
    for scale in (1.0, 1.5):
        cells = [
            f"import streamwidgets as sw\n\nhandle = sw.show(sw.replay({sse!r}, speed=0, model='demo'), scale={scale!r})",
            "state = await handle\nprint('replayed:', state.status)",
        ]
        nb = opener(jupyter.write_notebook(f"scratch_a11y_scale_{int(scale * 100)}.ipynb", cells), "lab")
        page = nb.page
        page.set_viewport_size({"width": 1000, "height": 900})
        nb.js("() => window.jupyterapp.shell.collapseLeft()")
        nb.run_all()
        nb.wait_until_idle()
        assert "replayed: complete" in nb.outputs_text(), nb.errors_shown()
        wait_status(nb, "complete")
        time.sleep(0.5)
        found = nb.js(
            """() => { const pre = document.querySelector('.sw-view .sw-answer pre');
                const p = document.querySelector('.sw-view .sw-answer p');
                const line = parseFloat(getComputedStyle(pre).lineHeight) || 1.4 * parseFloat(getComputedStyle(pre).fontSize);
                return {white: getComputedStyle(pre).whiteSpace, scrollWidth: pre.scrollWidth, clientWidth: pre.clientWidth,
                        lines: Math.round((pre.clientHeight - parseFloat(getComputedStyle(pre).paddingTop)
                            - parseFloat(getComputedStyle(pre).paddingBottom)) / line),
                        text: parseFloat(getComputedStyle(p).fontSize), code: parseFloat(getComputedStyle(pre).fontSize)}; }"""
        )
        assert found["white"] == "pre" and found["scrollWidth"] > found["clientWidth"] + 100, found
        assert found["lines"] <= 5, f"the long line did not wrap: {found}"
        sizes[scale] = found
        page.locator(".sw-view").first.screenshot(path=str(ARTIFACTS / f"a11y-scale-{int(scale * 100)}.png"))
    assert sizes[1.5]["text"] == pytest.approx(1.5 * sizes[1.0]["text"], rel=0.02), sizes
    assert sizes[1.5]["code"] == pytest.approx(1.5 * sizes[1.0]["code"], rel=0.02), sizes


#: The contrast of every text the view draws against what is really behind it: computed colours,
#: translucent ones laid over the first opaque background up the tree.
CONTRAST_PROBE = """() => {
    const rgba = (s) => { const m = s.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
    const over = (t, b) => [0, 1, 2].map(i => t[i] * t[3] + b[i] * (1 - t[3]));
    const background = (el) => {
        const layers = [];
        for (let e = el; e; e = e.parentElement) {
            const c = rgba(getComputedStyle(e).backgroundColor);
            if (c[3] > 0) { layers.push(c); if (c[3] === 1) break; }
        }
        return layers.reverse().reduce((below, top) => over(top, below), [255, 255, 255]);
    };
    const lum = (c) => { const l = c.map(v => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
    const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
    const view = document.querySelector('.sw-view');
    const texts = [...view.querySelectorAll('*')].filter(el => el.offsetParent && [...el.childNodes]
        .some(n => n.nodeType === 3 && n.textContent.trim()) && !el.closest('pre'));
    return texts.map(el => {
        const bg = background(el);
        const opacity = [...function* () { for (let e = el; e; e = e.parentElement) yield Number(getComputedStyle(e).opacity); }()]
            .reduce((a, b) => a * b, 1);
        const fg = rgba(getComputedStyle(el).color);
        return {what: el.className || el.tagName, text: el.textContent.trim().slice(0, 30),
                ratio: ratio(over([fg[0], fg[1], fg[2], fg[3] * opacity], bg), bg)};
    });
}"""


def test_text_reaches_aa_contrast_in_the_browser_in_both_themes(opener: Opener, jupyter: Any) -> None:
    """The computed colours of every text in a finished view, light and dark (the CSS arithmetic
    of tests/widgets/test_theme.py, checked against what Chromium really draws)."""
    sse = _write_code_stream(jupyter)
    cells = [f"import streamwidgets as sw\n\nhandle = sw.show(sw.replay({sse!r}, speed=0, model='demo'), scale=1.5)"]
    nb = opener(jupyter.write_notebook("scratch_a11y_contrast.ipynb", cells), "lab")
    nb.page.set_viewport_size({"width": 1000, "height": 900})
    nb.js("() => window.jupyterapp.shell.collapseLeft()")
    try:
        for theme, name in (("JupyterLab Light", "light"), ("JupyterLab Dark", "dark")):
            set_lab_theme(nb, theme)
            rerun_from_scratch(nb)
            wait_status(nb, "complete")
            nb.wait_until_idle()
            time.sleep(0.5)
            found = nb.js(CONTRAST_PROBE)
            assert len(found) >= 6, found
            low = [f for f in found if f["ratio"] < 4.5]
            assert low == [], (theme, low)
            nb.page.locator(".sw-view").first.screenshot(path=str(ARTIFACTS / f"a11y-scale-150-{name}.png"))
    finally:
        set_lab_theme(nb, "JupyterLab Light")
