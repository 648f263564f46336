"""Driving a notebook in JupyterLab or Notebook 7, and the checks both frontends must pass.

The app object is exposed in the page (`--LabApp.expose_app_in_browser`), so a test opens a
notebook, waits for its kernel to be connected (not just "idle": see testing.md), and runs cells
through the app's own commands — the same code path as the Run menu, without keyboard focus
races. What the tests read is the DOM a person sees, found by the widgets' `sw-` classes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from textwrap import dedent
from typing import Any

#: Screenshots and server logs land here (created by the tests; ignored by git).
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

#: Seconds for a page, a kernel or a cell to come up on a busy two-core machine.
SLOW = 90.0

#: Finds the first streaming view's answer pane.
ANSWER = ".sw-view .sw-answer"

#: The `opener` fixture: `opener(path, "lab" | "notebook")`.
Opener = Callable[[str, str], "Notebook"]


@dataclass
class Notebook:
    """One notebook open in a tab, with its kernel connected."""

    page: Any
    path: str

    def run_all(self) -> None:
        """Start every cell and return at once (the command's promise waits for the last cell)."""
        self.page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    def js(self, script: str, arg: Any = None) -> Any:
        return self.page.evaluate(script, arg)

    def wait_for(self, predicate: str, arg: Any = None, timeout: float = 60.0) -> None:
        self.page.wait_for_function(predicate, arg=arg, timeout=timeout * 1000, polling=100)

    def text_length(self, selector: str = ANSWER, index: int = 0) -> int:
        """Characters of text in the element: the DOM the browser draws, whether or not Lab has
        scrolled it out of sight while running the cells below it."""
        return len(self.text(selector, index))

    def text(self, selector: str, index: int = 0) -> str:
        return str(
            self.js(
                "([sel, i]) => { const el = document.querySelectorAll(sel)[i]; return el ? el.textContent : ''; }",
                [selector, index],
            )
        )

    def wait_until_idle(self, timeout: float = SLOW) -> None:
        """Every cell ran (no `[*]` prompt left) and the kernel is idle again."""
        self.wait_for(
            """() => {
                const w = window.jupyterapp.shell.currentWidget;
                const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
                if (!k || k.status !== 'idle') return false;
                const prompts = [...document.querySelectorAll('.jp-InputArea-prompt')].map(p => p.textContent);
                return prompts.length > 0 && !prompts.some(p => p.includes('*'));
            }""",
            timeout=timeout,
        )

    def outputs_text(self) -> str:
        return str(
            self.js("() => [...document.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent).join('\\n')")
        )

    def errors_shown(self) -> list[str]:
        """Tracebacks in the cell outputs (a failed assert in a notebook's check cell)."""
        return list(
            self.js(
                '() => [...document.querySelectorAll(\'.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"],'
                ' .jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]\')].map(o => o.textContent.slice(0, 2000))'
            )
        )


def open_notebook(page: Any, url: str, path: str, flavor: str) -> Notebook:
    """Open `url` (showing `path` in `flavor`, "lab" or "notebook") and return once its kernel
    is connected and idle."""
    page.goto(url)
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=SLOW * 1000)
    page.wait_for_function(
        """(path) => {
            const w = window.jupyterapp.shell.currentWidget;
            if (!w || !w.context || w.context.path !== path || !w.sessionContext) return false;
            const k = w.sessionContext.session && w.sessionContext.session.kernel;
            return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
        }""",
        arg=path,
        timeout=SLOW * 1000,
        polling=200,
    )
    if flavor == "lab":  # the DOM-only signal, for good measure
        page.wait_for_selector(".jp-StatusBar-TextItem:has-text('Idle')", timeout=SLOW * 1000)
    return Notebook(page, path)


def wait_status(nb: Notebook, status: str, index: int = 0, timeout: float = 60.0) -> None:
    """Wait until the `index`-th view's status line says `status` (complete, cancelled, ...)."""
    nb.wait_for(
        "([status, i]) => { const v = document.querySelectorAll('.sw-view')[i];"
        " return !!v && !!v.querySelector('.sw-status-' + status); }",
        arg=[status, index],
        timeout=timeout,
    )


def sample_lengths(nb: Notebook, *, samples: int, interval: float, selector: str = ANSWER) -> list[int]:
    """Wait for the first visible text, then sample its length `samples` times."""
    nb.wait_for(
        "(sel) => { const el = document.querySelector(sel); return !!el && el.textContent.trim().length > 0; }",
        arg=selector,
        timeout=SLOW,
    )
    lengths = []
    for _ in range(samples):
        lengths.append(nb.text_length(selector))
        time.sleep(interval)
    return lengths


# --------------------------------------------------------------------------- scratch notebooks


def cancel_cells(base_url: str) -> list[str]:
    """A long, slow answer from the test's own embedded provider (so the test can ask it how the
    stream ended)."""
    return [
        dedent(f"""\
            from streamwidgets import show

            handle = show("Write a long tutorial on asyncio.", model="demo-long", base_url={base_url!r},
                          demo={{"tokens_per_second": 40}})"""),
    ]


def xss_cells(base_url: str) -> list[str]:
    """The hostile scenario through all three dialects, as fast as the server can send it."""
    return [
        dedent(f"""\
            from streamwidgets import show

            handles = [
                show("Render these strings.", model="demo-xss", api=api, base_url={base_url!r},
                     demo={{"tokens_per_second": 0, "first_token_delay": 0}})
                for api in ("chat", "responses", "messages")
            ]"""),
        dedent("""\
            for h in handles:
                state = await h
                assert state.status == "complete" and "<script>" in state.text and state.tool_calls, state.message
            print("xss answers complete")"""),
    ]


# --------------------------------------------------------------------------- checks


def check_answer_grows(nb: Notebook) -> None:
    """The quickstart's answer visibly grows while it streams: it never shrinks, and never stands
    still for two samples running. One sample may repeat: after a frame that cost much besides the
    answer (a block sealed into a widget of its own), the scheduler waits until that overhead fits
    its byte budget (`Pace.overhead_bytes_per_second`), about 0.4 s for 2 KB."""
    nb.run_all()
    lengths = sample_lengths(nb, samples=7, interval=0.35)
    assert grew_steadily(lengths), f"the answer did not grow steadily: {lengths}"
    wait_status(nb, "complete", timeout=SLOW)
    nb.wait_until_idle()
    assert nb.text_length() > lengths[-1]
    assert "both answers complete" in nb.outputs_text(), nb.errors_shown()


def grew_steadily(lengths: list[int]) -> bool:
    """Never shrank, and grew across every two sample intervals."""
    return all(b >= a for a, b in pairwise(lengths)) and all(c > a for a, c in zip(lengths, lengths[2:], strict=False))


def check_reasoning_and_sources(nb: Notebook) -> None:
    """02 notebook: the reasoning pane folds away once the answer starts and opens on a click;
    the sources list links to http(s) pages."""
    nb.run_all()
    nb.wait_until_idle()
    assert "reasoning and sources arrived" in nb.outputs_text(), nb.errors_shown()
    page = nb.page
    box = page.locator(".sw-view .sw-reasoning-box").first
    box.scroll_into_view_if_needed()
    header = box.locator(".jupyter-widget-Collapse-header").first
    assert header.inner_text().startswith("Reasoning ("), header.inner_text()
    reasoning = box.locator(".sw-reasoning").first
    assert len(nb.text(".sw-view .sw-reasoning")) > 100, "the reasoning text is in the pane"
    assert not reasoning.is_visible(), "folded once the answer started"
    header.click()
    reasoning.wait_for(state="visible", timeout=10_000)
    assert len(reasoning.inner_text()) > 100
    sources = page.locator(".sw-view .sw-sources li")
    assert sources.count() >= 3, "the search answer lists its sources"
    hrefs = page.eval_on_selector_all(".sw-view .sw-sources a", "els => els.map(a => a.getAttribute('href'))")
    assert hrefs and all(h.startswith("https://") for h in hrefs), hrefs
    listed = page.locator(".sw-view .sw-sources:has(li)").first
    listed.scroll_into_view_if_needed()
    titles = listed.inner_text()
    assert titles.startswith("Sources") and "Photosynthesis" in titles, titles


def check_cancel(nb: Notebook, connections: Callable[[], list[dict[str, Any]]]) -> None:
    """Clicking Cancel stops the text, and the provider sees the client leave."""
    before = {c["id"] for c in connections()}
    nb.run_all()
    nb.wait_for(
        f"() => {{ const el = document.querySelector('{ANSWER}'); return !!el && el.textContent.length > 150; }}",
        timeout=SLOW,
    )
    cancel = nb.page.locator(".sw-view .sw-cancel").first
    assert cancel.is_enabled()
    cancel.click()
    wait_status(nb, "cancelled", timeout=10)
    assert nb.page.locator(".sw-view .sw-cancel").first.is_disabled()
    lengths = []
    for _ in range(4):
        lengths.append(nb.text_length())
        time.sleep(0.5)
    assert len(set(lengths)) == 1 and lengths[0] > 150, f"the text changed after Cancel: {lengths}"
    deadline = time.monotonic() + 10
    mine: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        mine = [c for c in connections() if c["id"] not in before and c["scenario"] == "demo-long"]
        if mine and all(c["outcome"] != "open" for c in mine):
            break
        time.sleep(0.2)
    assert [c["outcome"] for c in mine] == ["client_disconnected"], mine


#: Everything a rendered hostile answer must not leave in the page: script from the answer,
#: event-handler attributes or script URLs inside our widgets, and active embedded content.
XSS_PROBE = """() => {
    const ours = [...document.querySelectorAll('[class*="sw-"]')];
    const inside = [...new Set(ours.flatMap(v => [v, ...v.querySelectorAll('*')]))];
    const handlers = inside.flatMap(el => [...el.attributes]
        .filter(a => a.name.toLowerCase().startsWith('on')).map(a => el.tagName + '[' + a.name + ']'));
    const scriptUrl = (v) => /^(javascript|vbscript|data):/i.test((v || '').replace(/[\\u0000-\\u0020]/g, ''));
    const badUrls = inside.flatMap(el => ['href', 'src', 'xlink:href', 'action', 'formaction', 'srcdoc']
        .filter(n => el.hasAttribute(n) && (n === 'srcdoc' || scriptUrl(el.getAttribute(n))))
        .map(n => el.tagName + '[' + n + '=' + el.getAttribute(n) + ']'));
    const active = inside.filter(el => ['script', 'iframe', 'object', 'embed', 'svg', 'math']
        .includes(el.tagName.toLowerCase()) && el.closest('.sw-answer, .sw-reasoning, .sw-sources, .sw-tools'))
        .map(el => el.outerHTML.slice(0, 120));
    const scripts = [...document.querySelectorAll('script')]
        .filter(s => (s.textContent || '').includes('__xss')).map(s => s.outerHTML.slice(0, 120));
    return {marker: typeof window.__xss, handlers, badUrls, active, scripts};
}"""


def check_xss(nb: Notebook) -> None:
    """Hostile text, reasoning, source titles, URLs and a tool call render as inert text."""
    # The control: this page does run an inline handler that reaches the DOM, so the probe
    # below would notice one that slipped through the renderer.
    nb.js(
        "() => { const d = document.createElement('div'); d.id = 'xss-control';"
        " d.innerHTML = '<img src=x onerror=\"window.__xss_control = 1\">'; document.body.appendChild(d); }"
    )
    nb.wait_for("() => window.__xss_control === 1", timeout=10)
    nb.js("() => document.getElementById('xss-control').remove()")

    nb.run_all()
    nb.wait_until_idle()
    assert "xss answers complete" in nb.outputs_text(), nb.errors_shown()
    for index in range(3):
        wait_status(nb, "complete", index=index, timeout=SLOW)
    time.sleep(1.0)  # give any handler that slipped through the time to fire
    page = nb.page
    answers = page.locator(".sw-view .sw-answer")
    assert answers.count() == 3
    for index in range(3):
        shown = answers.nth(index).inner_text()
        assert "<script>window.__xss = 1</script>" in shown, "the payload is shown as text"
        assert 'onerror="window.__xss=1"' in shown
    sources = page.locator(".sw-view .sw-sources").first.inner_text()
    assert "<script>window.__xss=1</script>" in sources and "onerror" in sources
    tools = page.locator(".sw-view .sw-tools").first.inner_text()
    assert "window.__xss" in tools
    assert "window.__xss" in nb.text(".sw-view .sw-reasoning")
    found = nb.js(XSS_PROBE)
    assert found == {"marker": "undefined", "handlers": [], "badUrls": [], "active": [], "scripts": []}, found


def screenshot_cells() -> list[str]:
    """An answer with everything the view can show — reasoning, markdown, code, sources, usage —
    from the embedded provider's Venym imitation (its `:online` models send sources)."""
    return [
        dedent("""\
            from streamwidgets import show

            handle = show("How do server-sent events work?", provider="venym", model="venym/demo-reasoning:online",
                          offline=True, demo={"tokens_per_second": 60})"""),
    ]


def set_lab_theme(nb: Notebook, theme: str) -> None:
    """Switch Lab's theme (the command resolves once the theme's CSS is in)."""
    nb.js("(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme)
    nb.wait_for("(theme) => document.body.dataset.jpThemeName === theme", arg=theme, timeout=30)


def rerun_from_scratch(nb: Notebook) -> None:
    """Clear the outputs first, so that a wait cannot be satisfied by the previous run's view."""
    nb.js("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    nb.wait_for("() => document.querySelectorAll('.sw-view').length === 0", timeout=30)
    nb.run_all()
