"""The view in a real ipykernel: kernel CPU, bytes on the wire, latency, Cancel — on the stream
real providers send.

A kernel is started with jupyter_client and driven over ZMQ like a frontend. The stream comes
from `_segment_server.py`, a loopback server in its own process that writes every SSE event in
its own TCP segment (`TCP_NODELAY`, one `send` per event, chunked, at a steady rate) as
providers do; the embedded provider (which batches its writes) is measured beside it.

For each run we count every widget comm message on iopub (`comm_open` / `comm_msg` /
`comm_close`: the JSON of header, parent header, metadata and content, as sent), read the
kernel process's CPU (utime + stime from /proc, all its threads) before and after, and time
against the server's log (one monotonic clock): the last widget message after the server's last
byte, and the time to first token — the first comm message carrying answer text after the
server sent the first token. Contenders alternate within each repetition; figures are medians
over `--runs` repetitions, with the 1-minute load average of those runs beside them. Before the
first repetition each kernel streams 300 tokens of every kind of contender once, untimed (what
a kernel pays once, on its first stream: imports, Pygments compiling its lexers, the TLS context,
the view's stylesheet), and prints that first stream's CPU.

Rows: the client alone (no view), streamwidgets' `show()`, the baseline a user would write (an
`ipywidgets.HTML` set to a full markdown-it render of the whole answer at most every 50 ms), and
the embedded provider; at 100, 1,000 and 5,000 tokens/s; 2,000, 20,083 and 100,000 tokens; and
20 views streaming at once at 200 tokens/s each. `--compare panel` adds a second kernel on
Python 3.12 (a separate venv, `benchmarks/panel_venv.sh`) running Panel's `ChatInterface` with
its documented async-generator streaming on the same stream, next to `show()` and the baseline
in that same kernel. Panel's kernel side only needs its client comm opened, as its frontend
would: the benchmark opens it by hand.

    python benchmarks/bench_kernel.py                   # 45 minutes on a busy 2-core machine (the HTML
                                                        # baseline falls minutes behind at 20k tokens)
    python benchmarks/bench_kernel.py --quick           # a few minutes
    python benchmarks/bench_kernel.py --quick --compare panel
    python benchmarks/bench_kernel.py --text math       # the answer dense with $..$ / $$..$$ math
    python benchmarks/bench_kernel.py --parts view --before /tmp/main-tree
                                # the head case, this tree's view against another checkout's
                                # (`git archive main | tar -x -C /tmp/main-tree`), kernels side by side
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from streamwidgets.server import DemoServer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _segment_server import SegmentServer

HERE = Path(__file__).resolve().parent
WIRE_PARTS = ("header", "parent_header", "metadata", "content")
COMM_TYPES = ("comm_open", "comm_msg", "comm_close")
MARKER = "Here"  # the segment server's answers begin with it: the first token is spotted by it
CLK_TCK = os.sysconf("SC_CLK_TCK")
PARTS = ("head", "rates", "sizes", "many", "ttft", "cancel")

KERNEL_SETUP = """
import asyncio, time
import ipywidgets
from IPython.display import display
from markdown_it import MarkdownIt
import streamwidgets as sw
from streamwidgets import make_request
from streamwidgets.net import Stream, as_source

async def baseline(request, every=0.05):
    '''What a user would write: one HTML widget, the whole answer re-rendered at most every 50 ms.'''
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    out = ipywidgets.HTML()
    display(out)
    stream = Stream(as_source(request))
    state = stream.state
    last = [float("-inf")]

    def notify():
        now = time.monotonic()
        if now - last[0] >= every:
            last[0] = now
            out.value = md.render(state.text)

    stream.notify = notify
    await stream.run()
    out.value = md.render(state.text)
    return state

def widget_ids(widget):
    return [widget.model_id] + [i for child in getattr(widget, "children", ()) for i in widget_ids(child)]

class Final:
    def __init__(self, text, status="complete"):
        self.status, self.text = status, str(text)
"""

PANEL_SETUP = """
import json as _json
import httpx
import panel as pn
pn.extension()

def panel_chat(url):
    '''Panel's documented streaming: an async generator callback that yields the message so far.'''
    done = asyncio.Event()

    async def callback(contents, user, instance):
        message = ""
        try:
            async with httpx.AsyncClient(timeout=None) as client:
                body = {"model": "bench", "messages": [{"role": "user", "content": contents}], "stream": True}
                async with client.stream("POST", url + "/chat/completions", json=body) as response:
                    async for line in response.aiter_lines():
                        if line.startswith("data: {"):
                            choices = _json.loads(line[6:])["choices"]
                            if choices and choices[0]["delta"].get("content"):
                                message += choices[0]["delta"]["content"]
                                yield message
        finally:
            done.set()

    chat = pn.chat.ChatInterface(callback=callback, callback_exception="verbose")
    display(chat)
    return chat, done
"""


@dataclass
class Kernel:
    manager: KernelManager
    client: Any
    log: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    warm: set[str] = field(default_factory=set)  # the views whose untimed first stream it ran

    @property
    def pid(self) -> int:
        return int(self.manager.provisioner.pid)  # type: ignore[union-attr]

    def cpu(self) -> float:
        """utime + stime of the kernel process, all threads (seconds)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def pump(self, timeout: float) -> Optional[dict[str, Any]]:
        try:
            msg = self.client.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            return None
        self.log.append((time.monotonic(), msg))
        return msg

    def drain(self, quiet: float = 0.3, limit: float = 600.0) -> None:
        deadline = time.monotonic() + limit
        while self.pump(quiet) is not None and time.monotonic() < deadline:
            pass

    def execute(self, code: str, timeout: float = 1200.0) -> str:
        msg_id = self.client.execute(textwrap.dedent(code), allow_stdin=True)  # as JupyterLab sends it
        deadline = time.monotonic() + timeout
        stdout, idle, reply = [], False, None
        while not (idle and reply) and time.monotonic() < deadline:
            msg = self.pump(0.05)
            if msg is not None and msg["parent_header"].get("msg_id") == msg_id:
                if msg["msg_type"] == "stream":
                    stdout.append(msg["content"]["text"])
                elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    idle = True
            if reply is None:
                try:
                    candidate = self.client.get_shell_msg(timeout=0)
                except queue.Empty:
                    continue
                if candidate["parent_header"].get("msg_id") == msg_id:
                    reply = candidate
        if reply is None or reply["content"]["status"] != "ok":
            raise RuntimeError("\n".join((reply or {}).get("content", {}).get("traceback", ["timeout"])))
        return "".join(stdout)

    def value(self, expression: str, timeout: float = 900.0) -> Any:
        return json.loads(self.execute(f"import json as _j; print(_j.dumps({expression}))", timeout).splitlines()[-1])

    def click(self, comm_id: str) -> float:
        content = {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}}
        self.client.shell_channel.send(self.client.session.msg("comm_msg", content))
        return time.monotonic()

    def open_comm(self, target: str) -> None:
        """Open a comm from the 'frontend' side, as Panel's JavaScript does for its client comm."""
        content = {"comm_id": uuid.uuid4().hex, "target_name": target, "data": {}}
        self.client.shell_channel.send(self.client.session.msg("comm_open", content))

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def wire_size(msg: dict[str, Any]) -> int:
    size = sum(len(json.dumps(msg[part], default=str, separators=(",", ":"))) for part in WIRE_PARTS)
    return size + sum(len(b) for b in msg.get("buffers", []))


def start_kernel(
    home: Path, python: str = sys.executable, setup: str = KERNEL_SETUP, tree: Optional[Path] = None
) -> Kernel:
    """A kernel in `home`; `tree` puts another checkout's `streamwidgets` first on its path."""
    spec = home / "kernels" / "sw-bench"
    spec.mkdir(parents=True)
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "bench", "language": "python"}))
    manager = KernelManager(
        kernel_name="sw-bench", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(home / "kernels")])
    )
    env = {
        **os.environ,
        **{
            name: str(home / name.lower())
            for name in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR")
        },
    }
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    manager.start_kernel(env=env)
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    kernel = Kernel(manager, client)
    kernel.execute(setup)
    return kernel


# --------------------------------------------------------------------------- one run


@dataclass
class Case:
    view: str  # none | show | baseline | panel
    source: str  # segments | embedded
    tokens: int
    rate: float
    streams: int = 1
    text: str = "long"
    kernel: str = "main"  # main | panel | before (another checkout: `--before`)
    #: False: every network read at once, as before `streamwidgets/_reads.py` (for a before/after)
    paced: bool = True

    @property
    def label(self) -> str:
        names = {
            "none": "client alone (no view)",
            "show": "streamwidgets show()",
            "baseline": "baseline: HTML + full render / 50 ms",
            "panel": "Panel 1.10 ChatInterface",
        }
        where = " — embedded provider" if self.source == "embedded" else ""
        before = "" if self.paced else " — unpaced reads (before)"
        kernel = {"panel": " (Python 3.12 kernel)", "before": " — before (--before tree)"}.get(self.kernel, "")
        return names[self.view] + where + before + kernel


@dataclass
class Run:
    case: Case
    markdown_bytes: int
    messages: int
    wire_bytes: int
    cpu: float
    duration: float
    final_lag: float
    ttft: Optional[float]
    peak: int
    load: float
    views_updated: int = 1

    @property
    def ratio(self) -> float:
        return self.wire_bytes / self.markdown_bytes if self.markdown_bytes else 0.0


def request_code(case: Case, servers: dict[str, Any]) -> str:
    if case.source == "segments":
        return f"make_request('Write it', model='bench', base_url={servers['segments'].url(case.text, case.tokens, case.rate)!r})"
    demo = {"tokens": case.tokens, "tokens_per_second": case.rate, "first_token_delay": 0}
    return f"make_request('Write it', model='demo-long', base_url={servers['embedded'].base_url!r}, demo={demo!r})"


def stream_code(case: Case, request: str) -> str:
    one = {
        "none": f"sw.arun({request})",
        "show": f"sw.show({request})",
        "baseline": f"baseline({request})",
    }[case.view]
    return f"""
import streamwidgets.net._reads as _reads
_reads.WARM_UP = {8 if case.paced else 10**9}
_streams = [{one} for _ in range({case.streams})]
finals = await asyncio.gather(*_streams)
final = finals[0]
"""


def panel_run(kernel: Kernel, case: Case, servers: dict[str, Any]) -> None:
    url = servers["segments"].url(case.text, case.tokens, case.rate)
    since = time.monotonic()
    kernel.execute(f"chat, done = panel_chat({url!r})")
    html = "".join(
        json.dumps(m["content"].get("data", {}))
        for t, m in kernel.log
        if t >= since and m["msg_type"] in ("display_data", "execute_result")
    )
    client_comm = re.search(r'client_comm_id\\*"\s*:\s*\\*"([0-9a-f]+)', html)
    assert client_comm, "Panel's display did not name its client comm"
    kernel.open_comm(client_comm.group(1))
    kernel.drain(0.5)
    kernel.execute(
        """
chat.send("Write it", respond=True)
try:
    await asyncio.wait_for(done.wait(), 900)
    final = Final(chat.objects[-1].object)
except asyncio.TimeoutError:  # Panel stopped iterating the callback: report it, keep the figures
    final = Final(chat.objects[-1].object, "did not finish in 15 min")
finals = [final]
"""
    )


def stream_run(kernel: Kernel, case: Case, servers: dict[str, Any]) -> Run:
    kernel.drain(0.2)
    source = servers[case.source]
    last_record = max((r["id"] for r in source.records()), default=0) if case.source == "segments" else None
    last_conn = max((c.id for c in source.connections), default=0) if case.source == "embedded" else None
    since = time.monotonic()
    cpu_before = kernel.cpu()
    if case.view == "panel":
        panel_run(kernel, case, servers)
    else:
        kernel.execute(stream_code(case, request_code(case, servers)))
    kernel.drain(1.0 if case.view == "panel" else 0.3)  # the view's final frames, as they come
    cpu = kernel.cpu() - cpu_before
    load = os.getloadavg()[0]
    statuses, markdown_bytes = kernel.value("[[f.status for f in finals], len(final.text.encode())]")
    assert all(s == "complete" for s in statuses) or case.view == "panel", statuses
    if case.source == "segments":
        records = [r for r in source.records() if r["id"] > last_record]
        opened = min(r["opened"] for r in records)
        first = min(r["first_token"] for r in records)
        last_byte = max(r["last_byte"] for r in records)
    else:
        conns = [c for c in source.connections if c.id > last_conn]
        opened = min(c.opened_at_mono for c in conns)
        first = None
        last_byte = max(c.closed_at_mono or 0 for c in conns)
    comm = [(t, m) for t, m in kernel.log if t >= since and m["msg_type"] in COMM_TYPES]
    ttft = None
    if first is not None and case.view != "none":
        ttft = next((t - first for t, m in comm if t >= first and MARKER in json.dumps(m["content"].get("data"))), None)
    times = sorted(t for t, _ in comm)
    peak, start = 0, 0
    for end, t in enumerate(times):
        while times[start] <= t - 1.0:
            start += 1
        peak = max(peak, end - start + 1)
    last_update = times[-1] if times else last_byte
    updated = 1
    if case.streams > 1:  # every view got frames while its stream was flowing, not just its last
        per_view = kernel.value("[widget_ids(h.view.widget) for h in _streams]")
        during = [m["content"].get("comm_id") for t, m in comm if t < last_byte and m["msg_type"] == "comm_msg"]
        updated = sum(1 for ids in per_view if sum(during.count(i) for i in ids) >= 3)
    return Run(
        case=case,
        markdown_bytes=markdown_bytes,
        messages=len(comm),
        wire_bytes=sum(wire_size(m) for _, m in comm),
        cpu=cpu,
        duration=last_byte - opened,
        final_lag=last_update - last_byte,
        ttft=ttft,
        peak=peak,
        load=load,
        views_updated=updated,
    )


# --------------------------------------------------------------------------- Cancel


def cancel_latencies(kernel: Kernel, server: SegmentServer, rate: float, clicks: int) -> list[float]:
    values = []
    for _ in range(clicks):
        last = max((r["id"] for r in server.records()), default=0)
        kernel.execute(f"c = sw.show('Write it', model='bench', base_url={server.url('long', 100_000, rate)!r})")
        button = kernel.value("c.view.cancel_button.model_id")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            record = next((r for r in server.records() if r["id"] > last), None)
            if record is not None and record["sent"] >= 10:
                break
            kernel.pump(0.02)
        kernel.drain(0.05)
        clicked = kernel.click(button)
        record = server.wait_for_disconnect(after=last)
        assert record is not None and record["outcome"] == "client_disconnected", record
        values.append((record["closed"] - clicked) * 1000)
        assert kernel.value("(await c).status") == "cancelled"
    return values


def p95(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18] if len(values) > 1 else values[0]


# --------------------------------------------------------------------------- the report


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def row(runs: list[Run]) -> str:
    case = runs[0].case
    ttfts = [r.ttft * 1000 for r in runs if r.ttft is not None]
    cpu = median([r.cpu for r in runs])
    cells = [
        case.label,
        f"{case.tokens:,}",
        f"{case.rate:,.0f}",
        f"{median([r.markdown_bytes for r in runs]) / 1000:,.0f}",
        f"{median([r.messages for r in runs]):,.0f}",
        f"{median([r.ratio for r in runs]):.2f}x",
        f"**{cpu:.2f}**",
        f"{cpu / (case.tokens * case.streams) * 1e6:.0f}",
        f"{median([r.final_lag for r in runs]) * 1000:,.0f}" if case.view != "none" else "–",
        f"{median(ttfts):.1f}" if ttfts else "–",
        f"{median([r.duration for r in runs]):.1f}",
        f"{median([r.load for r in runs]):.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| contender | tokens | tokens/s | markdown KB | widget messages | bytes / markdown | kernel CPU s | "
    "µs / token | last update after last byte, ms | first token ms | stream s | load avg |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def table(title: str, groups: list[list[Run]]) -> None:
    print(file=sys.stderr)
    print(f"\n## {title}\n")
    print(HEADER)
    for runs in groups:
        print(row(runs))
    sys.stdout.flush()


def repeat(
    cases: list[Case], kernels: dict[str, Kernel], servers: dict[str, Any], runs: int, panel_runs: int = 1
) -> list[list[Run]]:
    """Every case once per repetition, alternating: side by side in one session. Panel takes
    minutes per run, so it runs only in the first `panel_runs` repetitions."""
    results: list[list[Run]] = [[] for _ in cases]
    for case in cases:
        warm_up(kernels[case.kernel], case, servers)
    for repetition in range(runs):
        for i, case in enumerate(cases):
            if case.view == "panel" and repetition >= panel_runs:
                continue
            results[i].append(stream_run(kernels[case.kernel], case, servers))
            print(".", end="", flush=True, file=sys.stderr)
    return results


def warm_up(kernel: Kernel, case: Case, servers: dict[str, Any]) -> None:
    """A kernel's first stream of each kind, 300 tokens, untimed: what a kernel pays once — the
    imports a first stream makes, Pygments compiling its lexers' rules, the TLS context, the
    view's stylesheet — is not a cost per stream. It is printed, as the first stream's figure."""
    if case.view in kernel.warm or case.view == "panel":
        return
    run = stream_run(kernel, Case(case.view, case.source, 300, 1000, text=case.text, kernel=case.kernel), servers)
    kernel.warm.add(case.view)
    print(f"[{case.kernel} kernel: its first {case.label}, 300 tokens untimed: {run.cpu:.2f} s]", file=sys.stderr)


def panel_python() -> str:
    out = subprocess.run(["bash", str(HERE / "panel_venv.sh")], check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def report_head(head_runs: list[list[Run]], main_tokens: int) -> None:
    table(f"{main_tokens:,} tokens at 1,000 tokens/s, one SSE event per TCP segment", head_runs)
    # The paced rows only: the unpaced "before" rows are compared with their paced twins in the table.
    key = {
        (g[0].case.view, g[0].case.kernel): g for g in head_runs if g[0].case.source == "segments" and g[0].case.paced
    }
    for kernel in ("main", "panel"):
        if ("show", kernel) not in key:
            continue
        show = key[("show", kernel)]
        for other in ("baseline", "panel"):
            if (other, kernel) in key:
                runs = key[(other, kernel)]
                print(
                    f"\n{runs[0].case.label} against show() in the same kernel: "
                    f"{median([r.cpu for r in runs]) / median([r.cpu for r in show]):.1f}x the kernel CPU, "
                    f"{median([r.wire_bytes for r in runs]) / median([r.wire_bytes for r in show]):.1f}x the widget bytes."
                )


def report_many(many_runs: list[list[Run]]) -> None:
    print("\n## 20 views at once, 200 tokens/s each\n")
    for group in many_runs:
        case = group[0].case
        cores = [r.cpu / r.duration * 100 for r in group]
        print(
            f"{case.streams} views × {case.tokens:,} tokens: kernel CPU {median([r.cpu for r in group]):.2f} s over "
            f"{median([r.duration for r in group]):.1f} s = **{median(cores):.0f}% of one core**; peak widget "
            f"messages in any second {max(r.peak for r in group)}; views updated {min(r.views_updated for r in group)}"
            f"/{case.streams}; load avg {median([r.load for r in group]):.2f}"
        )


def report_ttft(ttft_runs: list[Run]) -> None:
    values = [r.ttft * 1000 for r in ttft_runs if r.ttft is not None]
    print(
        f"\n## Time to first token (server sent it → first comm message with it), {len(values)} streams\n\n"
        f"median {median(values):.1f} ms, p95 {p95(values):.1f} ms, max {max(values):.1f} ms; "
        f"load avg {median([r.load for r in ttft_runs]):.2f}"
    )


def report_cancels(cancels: dict[float, list[float]], clicks: int) -> None:
    print(f"\n## Cancel click → the server sees the disconnect ({clicks} clicks each)\n")
    print("| tokens/s | median ms | p95 ms | max ms | load avg |")
    print("|---:|---:|---:|---:|---:|")
    for rate, latencies in cancels.items():
        print(
            f"| {rate:,.0f} | {median(latencies):.1f} | {p95(latencies):.1f} | {max(latencies):.1f} | "
            f"{os.getloadavg()[0]:.2f} |"
        )


def main(args: argparse.Namespace) -> None:
    quick, text, runs = args.quick, args.text, args.runs or (1 if args.quick else 3)
    parts = set(args.parts.split(","))
    main_tokens = 5_000 if quick else 20_083
    started = time.monotonic()
    segments = SegmentServer()
    print(f"{runs} run(s) each, medians; text: {text}; kernel CPU = utime+stime of the kernel process from /proc")
    with DemoServer() as embedded, tempfile.TemporaryDirectory() as home:
        servers: dict[str, Any] = {"segments": segments, "embedded": embedded}
        kernels = {"main": start_kernel(Path(home) / "main")}
        try:
            if args.compare == "panel":
                kernels["panel"] = start_kernel(Path(home) / "panel", panel_python(), KERNEL_SETUP + PANEL_SETUP)
            if "head" in parts:  # the acceptance case: 20,083 tokens at 1,000 tokens/s, an event per segment
                head = [
                    Case("none", "segments", main_tokens, 1000, text=text),
                    Case("show", "segments", main_tokens, 1000, text=text),
                    Case("none", "segments", main_tokens, 1000, text=text, paced=False),
                    Case("show", "segments", main_tokens, 1000, text=text, paced=False),
                    Case("baseline", "segments", main_tokens, 1000, text=text),
                    Case("none", "embedded", main_tokens, 1000),
                    Case("show", "embedded", main_tokens, 1000),
                ]
                if "panel" in kernels:
                    head += [
                        Case(view, "segments", main_tokens, 1000, text=text, kernel="panel")
                        for view in ("panel", "show", "baseline")
                    ]
                report_head(repeat(head, kernels, servers, runs, args.panel_runs), main_tokens)
            if "view" in parts:  # the head case, this tree's view against the `--before` tree's
                if args.before is None:
                    raise SystemExit("--parts view needs --before PATH (another checkout to compare with)")
                kernels["before"] = start_kernel(Path(home) / "before", tree=args.before.resolve())
                view = [
                    Case(contender, "segments", main_tokens, 1000, text=text, kernel=kernel)
                    for kernel in ("before", "main")
                    for contender in ("none", "show")
                ]
                table(
                    f"The view, before and after: {main_tokens:,} tokens at 1,000 tokens/s",
                    repeat(view, kernels, servers, runs),
                )
            if "rates" in parts:
                rates = [
                    Case(view, "segments", tokens, rate, text=text)
                    for rate, tokens in ((100, 500 if quick else 2_000), (5000, main_tokens))
                    for view in ("none", "show")
                ]
                table("Rates (one event per segment)", repeat(rates, kernels, servers, runs))
            if "sizes" in parts:
                sizes = [
                    Case(view, "segments", tokens, 1000 if not quick else 5000, text=text)
                    for tokens in ((2_000, 20_083) if quick else (2_000, 20_083, 100_000))
                    for view in ("none", "show")
                ]
                table("Sizes: flat per token?", repeat(sizes, kernels, servers, runs))
            if "many" in parts:
                many = [Case("show", "segments", 400 if quick else 2_000, 200, streams=20, text=text)]
                report_many(repeat(many, kernels, servers, runs))
            if "ttft" in parts:
                ttft_case = Case("show", "segments", 300, 1000, text=text)
                report_ttft(repeat([ttft_case], kernels, servers, 5 if quick else 15)[0])
            if "cancel" in parts:
                clicks = 5 if quick else 20
                cancels = {rate: cancel_latencies(kernels["main"], segments, rate, clicks) for rate in (50.0, 1000.0)}
                report_cancels(cancels, clicks)
        finally:
            for kernel in kernels.values():
                kernel.stop()
            segments.close()
    print(f"\nTotal run: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller answers, one run, fewer clicks")
    parser.add_argument("--runs", type=int, default=0, help="repetitions (default 3, 1 with --quick)")
    parser.add_argument("--text", choices=("long", "math"), default="long", help="the answer's markdown")
    parser.add_argument(
        "--parts", default=",".join(PARTS), help=f"which tables (default all: {','.join(PARTS)}; `view` with --before)"
    )
    parser.add_argument("--compare", choices=("panel",), help="add Panel 1.10 in a Python 3.12 kernel")
    parser.add_argument(
        "--before", type=Path, help="another checkout whose view runs beside this one's (`--parts view`)"
    )
    parser.add_argument("--panel-runs", type=int, default=1, help="repetitions for Panel (minutes each; default 1)")
    main(parser.parse_args())
