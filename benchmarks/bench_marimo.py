"""The marimo view against marimo's own `mo.ui.chat`, in `marimo run` and Chromium, on the kernel
benchmark's stream: a 20,083-token answer at 1,000 tokens/s from `_segment_server.py` (one SSE event
per TCP segment, as providers send).

Each repetition serves a small notebook with `marimo run` (its own process tree, on 127.0.0.1) and
opens it in Chromium; a click starts the stream (a run button for `sw.show()`, the chat box's Enter
for `mo.ui.chat`, whose model is an async generator yielding each text delta of the same client,
`sw.astream`, as marimo documents). Measured:

- **bytes per markdown byte**: every websocket frame the page received from the click to the end
  (Playwright's `page.on("websocket")`, payload bytes), over the answer's UTF-8 bytes;
- **last update after the server's last token**: the page samples the answer's text on every
  animation frame; the time it last changed, against the server's log (one clock: the server's
  monotonic times are turned into the epoch with this process's offset, the page's with
  `performance.timeOrigin`). A page that falls behind is given `--grace` seconds after the last
  token; what it shows then is reported as a share of the answer;
- **frames/s**: the page's animation frames while the answer streams (a page busy with frames from
  the server draws fewer);
- **server CPU**: utime + stime of the marimo process and its children (the kernel), from the
  click until the page shows the end.

Contenders alternate within each repetition; figures are medians over `--runs`.

    python benchmarks/bench_marimo.py              # about 10 minutes (mo.ui.chat falls far behind)
    python benchmarks/bench_marimo.py --quick      # 2,000 tokens, one repetition
    SW_BENCH_DUMP=/tmp/frames.txt python benchmarks/bench_marimo.py --views show --tokens 5000 --runs 1
                                                   # every frame the page received, to take the bytes apart
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import psutil
from _segment_server import SegmentServer, answer_tokens

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

NOTEBOOK = """import marimo

app = marimo.App()


@app.cell
def _():
    import os

    import marimo as mo

    import streamwidgets as sw

    URL = os.environ["SW_BENCH_URL"]
    MODE = os.environ["SW_BENCH_MODE"]
    return MODE, URL, mo, sw


@app.cell
def _(MODE, URL, mo, sw):
    async def model(messages, config):
        async for event in sw.astream("Write it", model="bench", base_url=URL):
            if type(event).__name__ == "TextDelta":
                yield event.text

    start = mo.ui.run_button(label="Stream")
    chat = mo.ui.chat(model) if MODE == "chat" else None
    chat if MODE == "chat" else start
    return chat, start


@app.cell
def _(MODE, URL, mo, start, sw):
    mo.stop(MODE != "show" or not start.value)
    handle = sw.show("Write it", model="bench", base_url=URL)
    handle
    return
"""

#: What the page runs before marimo's own code: an animation-frame loop that samples the answer's
#: text (the element that holds it, found once across shadow roots) and counts frames.
PAGE_PROBE = """
(() => {
  const probe = window.__bench = { frames: [], changes: [], length: 0, element: null };
  // The answer: the marimo view's `.sw-answer`, or the last message of marimo's chat (its markdown
  // renderer) that starts as the answer does; both inside shadow roots.
  const find = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { const hit = find(el.shadowRoot); if (hit) return hit; }
    }
    const answer = root.querySelector('.sw-answer');
    if (answer) return answer;
    const said = [...root.querySelectorAll('.mo-markdown-renderer')].filter(e => (e.textContent || '').startsWith('Here'));
    return said.at(-1) || null;
  };
  const loop = () => {
    const now = performance.timeOrigin + performance.now();
    probe.frames.push(now);
    if (!probe.element || !probe.element.isConnected) probe.element = find(document);
    const length = probe.element ? probe.element.textContent.length : 0;
    if (length !== probe.length) { probe.length = length; probe.changes.push([now, length]); }
    requestAnimationFrame(loop);
  };
  requestAnimationFrame(loop);
})();
"""

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Run:
    mode: str
    markdown_bytes: int
    ws_bytes: int
    ws_frames: int
    lag: Optional[float]  # last change of the answer on the page after the server's last token
    length: int  # characters of the answer the page showed at the end
    fps: float
    cpu: float
    load: float

    @property
    def ratio(self) -> float:
        return self.ws_bytes / self.markdown_bytes


def tree_cpu(process: psutil.Process) -> float:
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str, timeout: float = 60) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(url)


def one_run(browser: Any, mode: str, server: SegmentServer, tokens: int, rate: float, grace: float, work: Path) -> Run:
    text = "".join(answer_tokens("long", tokens))
    notebook = work / "bench_marimo_notebook.py"
    notebook.write_text(NOTEBOOK)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        SW_BENCH_URL=server.url("long", tokens, rate),
        SW_BENCH_MODE=mode,
        XDG_CONFIG_HOME=str(work / "config"),
        MARIMO_SKIP_UPDATE_CHECK="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
    )
    log = (work / f"marimo-{mode}.log").open("wb")
    command = [sys.executable, "-m", "marimo", "run", str(notebook), "--headless", "--no-token"]
    marimo = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    page = None
    try:
        wait_for(f"http://127.0.0.1:{port}/health")
        page = browser.new_page()
        page.add_init_script(PAGE_PROBE)
        received = {"bytes": 0, "frames": 0, "on": False}

        def on_frame(payload: Any) -> None:
            if received["on"]:
                if os.environ.get("SW_BENCH_DUMP"):
                    with open(os.environ["SW_BENCH_DUMP"], "a") as dump:
                        dump.write((payload if isinstance(payload, str) else repr(payload)) + "\n")
                received["bytes"] += len(payload.encode() if isinstance(payload, str) else payload)
                received["frames"] += 1

        page.on("websocket", lambda ws: ws.on("framereceived", on_frame))
        page.goto(f"http://127.0.0.1:{port}/")
        if mode == "chat":
            box = page.locator("textarea, [contenteditable=true]").last
            box.wait_for(timeout=60_000)
        else:
            button = page.get_by_role("button", name="Stream")
            button.wait_for(timeout=60_000)
        page.wait_for_timeout(3000)  # the session settles: its start-up is not the stream's
        page.evaluate("m => { window.__bench.marker = m; }", text[:24])
        process = psutil.Process(marimo.pid)
        cpu_before = tree_cpu(process)
        before = max((r["id"] for r in server.records()), default=0)
        received["on"] = True
        if mode == "chat":
            box.fill("Write it")
            box.press("Enter")
        else:
            button.click()
        offset = time.time() - time.monotonic()  # the server's monotonic clock -> the epoch
        record: Optional[dict[str, Any]] = None
        while record is None or record["last_byte"] is None:
            page.wait_for_timeout(250)
            record = next((r for r in server.records() if r["id"] > before), None)
            if record is not None and record["outcome"] not in (None, "complete"):
                raise RuntimeError(f"the stream ended {record['outcome']}")
        last_byte = (record["last_byte"] + offset) * 1000
        first = (record["first_token"] + offset) * 1000
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:  # until the answer stood still for 3 s, or the grace ran out
            page.wait_for_timeout(500)
            last = page.evaluate("() => window.__bench.changes.at(-1)")
            if last is not None and time.time() * 1000 - last[0] > 3000 and last[0] > last_byte:
                break
        cpu = tree_cpu(process) - cpu_before
        received["on"] = False
        probe = page.evaluate(
            "(r) => { const b = window.__bench; return {frames: b.frames.filter(t => t >= r[0] && t <= r[1]).length,"
            " changes: b.changes, length: b.length}; }",
            [first, last_byte],
        )
        changes = probe["changes"]
        lag = (changes[-1][0] - last_byte) / 1000 if changes else None
        fps = probe["frames"] / max((last_byte - first) / 1000, 1e-3)
        return Run(
            mode=mode,
            markdown_bytes=len(text.encode()),
            ws_bytes=received["bytes"],
            ws_frames=received["frames"],
            lag=lag,
            length=probe["length"],
            fps=fps,
            cpu=cpu,
            load=os.getloadavg()[0],
        )
    finally:
        if page is not None:
            page.close()
        marimo.terminate()
        try:
            marimo.wait(15)
        except subprocess.TimeoutExpired:
            marimo.kill()
        log.close()


LABELS = {"show": "streamwidgets `show()` (marimo view)", "chat": "marimo `mo.ui.chat` (async generator)"}


def report(runs: dict[str, list[Run]], tokens: int, rate: float, grace: float) -> None:
    print(f"\n{tokens:,} tokens at {rate:g} tokens/s in `marimo run` + Chromium, medians of {len(runs['show'])}")
    print(
        "| view | websocket bytes per markdown byte | frames | last update after the server's last token"
        " | shown | page frames/s while streaming | server CPU | load |"
    )
    print("|---|---|---|---|---|---|---|---|")
    whole = max(r.length for r in runs.get("show") or runs["chat"])  # the marimo view's complete answer
    for mode, group in runs.items():
        shown = statistics.median(min(1.0, r.length / whole) for r in group)
        lags = [r.lag for r in group if r.lag is not None]
        lag = statistics.median(lags) if lags else float("nan")
        late = " (still behind when the grace ended)" if shown < 0.99 else ""
        print(
            f"| {LABELS[mode]} | {statistics.median(r.ratio for r in group):.2f} |"
            f" {statistics.median(r.ws_frames for r in group):,.0f} | {lag:.2f} s{late} |"
            f" {shown:.0%} | {statistics.median(r.fps for r in group):.0f} |"
            f" {statistics.median(r.cpu for r in group):.2f} s | {statistics.median(r.load for r in group):.1f} |"
        )
    print(
        f"(a page is given {grace:g} s after the last token; `shown`: the characters of the answer it showed by then,"
        " against the marimo view's complete answer)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=20_083)
    parser.add_argument("--rate", type=float, default=1_000.0)
    parser.add_argument("--grace", type=float, default=60.0, help="seconds a page may take after the last token")
    parser.add_argument("--quick", action="store_true", help="2,000 tokens, one repetition")
    parser.add_argument("--views", default="show,chat", help="which to run: show, chat or both (show,chat)")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.tokens = 1, 2_000
    from playwright.sync_api import sync_playwright

    server = SegmentServer()
    work = Path(tempfile.mkdtemp(prefix="sw-bench-marimo-"))
    runs: dict[str, list[Run]] = {mode: [] for mode in args.views.split(",")}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch_persistent_context(
                str(work / "profile"),
                executable_path=shutil.which("chromium"),
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1200, "height": 900},
            )
            try:
                for repetition in range(args.runs):
                    for mode in runs:
                        run = one_run(browser, mode, server, args.tokens, args.rate, args.grace, work)
                        runs[mode].append(run)
                        print(f"run {repetition + 1} {mode}: {run}", flush=True)
            finally:
                browser.close()
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    report(runs, args.tokens, args.rate, args.grace)


if __name__ == "__main__":
    main()
