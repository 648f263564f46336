"""A class on a real JupyterHub: 10 and then 30 students ask at once, through one LiteLLM gateway.

Everything runs on this machine, on 127.0.0.1, each part in its own process (`_class_hub.py`):
JupyterHub 5+ with configurable-http-proxy, SimpleLocalProcessSpawner and the dummy authenticator;
one LiteLLM proxy as the class gateway (its own venv, a key per student); the embedded provider
(`python -m streamwidgets serve`) behind it at 50 tokens/s. Each student gets a server of their own
through the hub's REST API, with `LITELLM_BASE_URL` and their key set by the spawner, and runs
`class_notebook.ipynb` (`sw.show(..., provider="litellm")`, then `await` it) over the kernel
websocket, as JupyterLab does — all students at once.

Per class size and repetition, the servers are fresh: the first run of the notebook is a cold
kernel (imports, the first view), the second a re-run in the same kernels. CPU is utime+stime of
each process, by PID (psutil), over the window from the first cell sent to the last answer back;
RSS is the peak of samples every 0.25 s in that window. "First token" is the client's own
`time_to_first_token` in the kernel (request sent → first token, through the gateway; the
provider's scripted delay is 0.3 s of it). Medians of the repetitions; the load average beside.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_class.py            # 10 and 30, 3 repetitions
    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_class.py --sizes 3 --runs 1
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _class_hub import MODEL, PROMPT, ClassHub, ClassRun, Student

from streamwidgets.server import scripted_answer

MB = 1024 * 1024


@dataclass
class Summary:
    """One class run, reduced to what the table shows."""

    size: int
    complete: int
    ttft_p50: float
    ttft_p95: float
    tokens_per_second: float
    kernel_cpu: float
    server_cpu: float
    rss: float
    hub_cpu: float
    proxy_cpu: float
    gateway_cpu: float
    provider_cpu: float
    seconds: float
    load: float
    widget_updates: float


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def summarize(run: ClassRun, expected: str) -> Summary:
    done = [a for a in run.answers if a.ok and a.probe.get("text") == expected]
    ttfts = [a.probe["ttft"] for a in done if a.probe.get("ttft") is not None] or [float("nan")]
    rates = [a.probe["tokens_per_second"] for a in done if a.probe.get("tokens_per_second")] or [float("nan")]
    servers = {u.owner: u for u in run.by_role("server")}
    kernels = {u.owner: u for u in run.by_role("kernel")}

    def cpu(role: str) -> float:
        return sum(u.cpu for u in run.by_role(role))

    return Summary(
        size=run.students,
        complete=len(done),
        ttft_p50=statistics.median(ttfts),
        ttft_p95=p95(ttfts),
        tokens_per_second=statistics.median(rates),
        kernel_cpu=statistics.median(u.cpu for u in kernels.values()),
        server_cpu=statistics.median(u.cpu for u in servers.values()),
        rss=statistics.median((servers[n].rss_peak + kernels[n].rss_peak) / MB for n in kernels),
        hub_cpu=cpu("hub"),
        proxy_cpu=cpu("proxy"),
        gateway_cpu=cpu("gateway"),
        provider_cpu=cpu("provider"),
        seconds=run.seconds,
        load=max(run.load),
        widget_updates=statistics.median(a.widget_updates for a in run.answers),
    )


def med(summaries: list[Summary], name: str) -> float:
    return statistics.median(getattr(s, name) for s in summaries)


HEADER = (
    "| students | run | answers complete | first token p50 / p95 s | tokens/s per student | "
    "kernel CPU s per student (% of a core) | server CPU s per student | RSS per student MB (server + kernel) | "
    "hub / proxy CPU s | gateway CPU s (per student) | provider CPU s | window s | load avg |\n"
    "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def row(kind: str, summaries: list[Summary]) -> str:
    size = summaries[0].size
    kernel, seconds, gateway = med(summaries, "kernel_cpu"), med(summaries, "seconds"), med(summaries, "gateway_cpu")
    cells = [
        str(size),
        kind,
        f"{min(s.complete for s in summaries)}/{size}",
        f"{med(summaries, 'ttft_p50'):.2f} / {med(summaries, 'ttft_p95'):.2f}",
        f"{med(summaries, 'tokens_per_second'):.1f}",
        f"{kernel:.2f} ({kernel / seconds * 100:.0f}%)",
        f"{med(summaries, 'server_cpu'):.2f}",
        f"{med(summaries, 'rss'):.0f}",
        f"{med(summaries, 'hub_cpu'):.2f} / {med(summaries, 'proxy_cpu'):.2f}",
        f"{gateway:.1f} ({gateway / size:.2f})",
        f"{med(summaries, 'provider_cpu'):.2f}",
        f"{seconds:.1f}",
        f"{statistics.median(s.load for s in summaries):.1f}",
    ]
    return "| " + " | ".join(cells) + " |"


def growth(small: list[Summary], large: list[Summary]) -> str:
    a, b = small[0].size, large[0].size
    lines = [
        f"\nFrom {a} to {b} students ({b / a:.0f}x), re-runs, ratio of medians:\n",
        "| per student | " + f"{a} | {b} | growth |",
        "|---|---:|---:|---:|",
    ]
    for label, name, fmt in (
        ("first token p50 s", "ttft_p50", "{:.2f}"),
        ("first token p95 s", "ttft_p95", "{:.2f}"),
        ("tokens/s", "tokens_per_second", "{:.1f}"),
        ("kernel CPU s", "kernel_cpu", "{:.2f}"),
        ("server CPU s", "server_cpu", "{:.2f}"),
        ("RSS MB (server + kernel)", "rss", "{:.0f}"),
    ):
        x, y = med(small, name), med(large, name)
        lines.append(f"| {label} | {fmt.format(x)} | {fmt.format(y)} | {y / x:.2f}x |")
    for label, name in (
        ("hub", "hub_cpu"),
        ("proxy", "proxy_cpu"),
        ("gateway", "gateway_cpu"),
        ("provider", "provider_cpu"),
    ):
        x, y = med(small, name) / a, med(large, name) / b
        lines.append(f"| {label} CPU s, per student | {x:.3f} | {y:.3f} | {y / x:.2f}x |")
    return "\n".join(lines)


async def bench(hub: ClassHub, sizes: list[int], runs: int) -> None:
    took = hub.start()
    print(f"hub answered after {took['hub']:.1f} s, provider after {took['provider']:.1f} s", file=sys.stderr)
    expected = scripted_answer(MODEL, PROMPT).text
    results: dict[tuple[int, str], list[Summary]] = {}
    admit_seconds: dict[int, list[float]] = {}
    gateway_waited = False
    for repetition in range(runs):
        try:
            await repeat(hub, sizes, repetition, expected, results, admit_seconds, gateway_waited)
            gateway_waited = True
        except Exception as exc:  # report what was measured; the class is still stopped by PID
            print(f"repetition {repetition + 1} failed: {type(exc).__name__}: {exc}"[:2000], file=sys.stderr)
            traceback.print_exc()
            break
    report(sizes, results, admit_seconds)


async def repeat(
    hub: ClassHub,
    sizes: list[int],
    repetition: int,
    expected: str,
    results: dict[tuple[int, str], list[Summary]],
    admit_seconds: dict[int, list[float]],
    gateway_waited: bool,
) -> None:
    """One repetition: each class size with fresh servers, the notebook run twice."""
    for size in sizes:
        names = list(hub.roster)[:size]
        started = time.monotonic()
        students: list[Student] = await hub.admit(names)
        admit_seconds.setdefault(size, []).append(time.monotonic() - started)
        if not gateway_waited:
            waited = await asyncio.to_thread(hub.gateway_ready)
            print(f"gateway answered {waited:.1f} s after the servers were up", file=sys.stderr)
            gateway_waited = True
        for kind in ("first run", "re-run"):
            run = await hub.run_class(students)
            summary = summarize(run, expected)
            results.setdefault((size, kind), []).append(summary)
            failed = [a for a in run.answers if not a.ok]
            for a in failed[:3]:
                print(f"  {a.student}: {a.probe.get('status')}: {a.probe.get('message', '')[:300]}", file=sys.stderr)
            print(
                f"repetition {repetition + 1}, {size} students, {kind}: {summary.complete}/{size} complete "
                f"in {summary.seconds:.1f} s, load {summary.load:.1f}",
                file=sys.stderr,
            )
        reconnects = sum(s.reconnects for s in students)
        if reconnects:
            print(f"  kernel websockets opened again (kernel slow to answer): {reconnects}", file=sys.stderr)
        await hub.dismiss(students)


def report(
    sizes: list[int], results: dict[tuple[int, str], list[Summary]], admit_seconds: dict[int, list[float]]
) -> None:
    sizes = [size for size in sizes if (size, "re-run") in results]
    if not sizes:
        return
    runs = ", ".join(f"{len(results[(size, 're-run')])} of {size} students" for size in sizes)
    print(f"\n## A class on JupyterHub: {', '.join(map(str, sizes))} students at once, 50 tokens/s each\n")
    print(f"Repetitions (fresh servers each): {runs}; medians; {os.cpu_count()} cores.\n")
    print(HEADER)
    for size in sizes:
        for kind in ("first run", "re-run"):
            print(row(kind, results[(size, kind)]))
    print(
        "\nServers ready (all at once, through the hub's REST API): "
        + ", ".join(f"{size} in {statistics.median(admit_seconds[size]):.0f} s" for size in sizes)
    )
    if len(sizes) >= 2:
        print(growth(results[(sizes[0], "re-run")], results[(sizes[-1], "re-run")]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,30", help="class sizes, in order (default 10,30)")
    parser.add_argument("--runs", type=int, default=3, help="repetitions, fresh servers each (default 3)")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    # A `timeout` or Ctrl+C must still stop every process by PID: SIGTERM becomes SystemExit here.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    # The logs of every part stay in test-artifacts/ (the hub's also shows each server's).
    artifacts = Path(__file__).resolve().parents[1] / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-class-", dir=artifacts))
    print(f"logs in {root}", file=sys.stderr)
    hub = ClassHub(root, max(sizes))
    try:
        asyncio.run(bench(hub, sizes, args.runs))
    finally:
        left = hub.close()
        if left:
            print(f"stopped by PID after the orderly stop: {', '.join(left)}", file=sys.stderr)
    print(f"\nTotal: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
