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

`--local`: the class asks the real local model (SmolLM2-135M, llama.cpp's server, `_host`) instead,
with no hub: N simulated students, each one streamed request from this process, sent within
`--stagger` seconds of each other (a class asking at about the same moment), every answer
`--tokens` long (`ignore_eos`). Contenders, in turn (the order rotates every repetition):
ONE shared server with N slots reached through the class gateway (LiteLLM with a key per student,
started for each class against that server), the same reached directly, and one server per student
(N `_host` processes with 1 slot each, all started at once, as N kernels calling `local_model()`
under N user accounts would). Every slot has served one short answer before the class asks (a
fresh slot also reads the chat template's system prompt: the first question after a start is slower).
First token is request sent → first content chunk; tokens/s is each answer's, first to last
chunk; memory is the sum of the servers' VmRSS after the class, and of their PSS (the model file
is mapped by every server: PSS counts its pages once in all); CPU is the servers' (and the
gateway's) utime+stime over the class.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_class.py --local    # 3, 6 and 10 students, 3 repetitions
    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_class.py --local --sizes 30 --runs 1 --no-gateway

`--kinds gateway,two`: a class past one server. `two` is two servers of N/2 slots each behind the
gateway, which routes one model name to both (`_class_hub.gateway_config`'s router settings); the
last column says how many answers each server gave (from its own /metrics). Two servers stand for
two machines, but on one machine they share its cores: each gets half the threads one server has,
so both arrangements run on the same processor, and what the figures show is the cost of routing,
not the gain of a second machine.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_class.py --local --sizes 30,60 --runs 1 --tokens 64 --kinds gateway,two
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _class_hub import MODEL, PROMPT, ClassHub, ClassRun, Deployment, Gateway, Student
from bench_local import Server, cpu_seconds, host_server, launch_host, memory, stop_process

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


# ----------------------------------------------------------------------------- the local model (--local)

#: Short teaching questions, one per student in turn.
CLASS_QUESTIONS = [
    "Explain recursion",
    "What is a variable in Python?",
    "Why is the sky blue?",
    "What does photosynthesis do?",
    "What is a prime number?",
    "How does a for loop work?",
    "What is gravity?",
    "Explain what a function is",
    "What is an atom?",
    "Why do we have seasons?",
]
LOCAL_MODEL = "local"
KINDS = {
    "gateway": "one shared server, N slots, through the gateway",
    "shared": "one shared server, N slots, direct",
    "own": "one server per student, 1 slot each",
    "two": "two servers, N/2 slots and half the threads each, through the gateway",
}


@dataclass
class LocalAnswer:
    ok: bool
    sent: float = 0.0
    arrivals: list[float] = field(default_factory=list)
    error: str = ""


@dataclass
class LocalSummary:
    kind: str
    size: int
    complete: int
    ttft_p50: float
    ttft_p95: float
    rate: float
    rate_min: float
    window: float
    aggregate: float
    rss: float
    pss: float
    server_cpu: float
    gateway_cpu: float
    gateway_rss: float
    ready: float
    load: float
    #: How many of the answers each server gave (from its own /metrics), "30" or "16 / 14".
    spread: str = ""


async def ask(url: str, key: str, question: str, delay: float, tokens: int) -> LocalAnswer:
    """One student: waits `delay`, then streams one answer."""
    await asyncio.sleep(delay)
    body = {
        "model": LOCAL_MODEL,
        "messages": [{"role": "user", "content": question}],
        "stream": True,
        "max_tokens": tokens,
        "ignore_eos": True,
        "temperature": 0.3,
    }
    answer = LocalAnswer(ok=False)
    try:
        async with httpx.AsyncClient(timeout=900, headers={"Authorization": f"Bearer {key}"}) as client:
            answer.sent = time.perf_counter()
            async with client.stream("POST", f"{url}/chat/completions", json=body) as response:
                response.raise_for_status()
                async for line in response.aiter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    choices = json.loads(line[6:]).get("choices") or [{}]
                    if choices[0].get("delta", {}).get("content"):
                        answer.arrivals.append(time.perf_counter())
        answer.ok = len(answer.arrivals) >= 2
    except (httpx.HTTPError, ValueError) as exc:
        answer.error = f"{type(exc).__name__}: {exc}"
    return answer


def proportional(pid: int) -> float:
    """A process's PSS in MB: its share of pages it shares with others (the model file, mapped by
    every server), so that the sum over processes is the memory they really take."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_of(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            t = p.cpu_times()
            total += t.user + t.system
    return total


async def local_class(kind: str, size: int, repetition: int, tokens: int, stagger: float, root: Path) -> LocalSummary:
    """One class of `size` students against one arrangement of servers; everything stopped after."""
    from streamwidgets.server.local._shared import default_threads

    servers: list[Server] = []
    gateway: Optional[Gateway] = None
    launched: list[tuple[subprocess.Popen[bytes], Path]] = []
    load = os.getloadavg()[0]
    count, slots = {"own": (size, 1), "two": (2, -(-size // 2))}.get(kind, (1, size))
    # Two servers stand for two machines, but here they share this machine's cores: each gets half
    # the threads one server has, so that both classes run on the same processor time.
    threads = max(1, default_threads() // 2) if kind == "two" else default_threads()
    try:
        began = time.monotonic()
        launched = [launch_host(threads, slots) for _ in range(count)]
        servers = list(await asyncio.gather(*(asyncio.to_thread(host_server, p, folder) for p, folder in launched)))
        ready = time.monotonic() - began
        urls = [s.base_url for s in servers]
        keys = [s.headers["Authorization"].split(" ", 1)[1] for s in servers]
        if kind in ("gateway", "two"):
            deployments = [
                Deployment(s.base_url, key, "openai/smollm2-135m", f"server-{i}")
                for i, (s, key) in enumerate(zip(servers, keys, strict=True), 1)
            ]
            gateway = Gateway(root, LOCAL_MODEL, deployments, size)
            await asyncio.to_thread(gateway.wait)
            urls, keys = [gateway.base_url], gateway.keys
        # Every slot has answered once, all at once (so each holds the chat template's system prompt in its
        # cache, as after a first question; LiteLLM paid for its first request's imports and each key's).
        await asyncio.gather(*(ask(urls[i % len(urls)], keys[i % len(keys)], "Hi", 0, 8) for i in range(size)))
        before = [cpu_seconds(s.pid) for s in servers]
        generated = [await asyncio.to_thread(tokens_generated, s) for s in servers] if count <= 2 else []
        gateway_before = cpu_of(gateway.processes()) if gateway else 0.0
        rng = random.Random(repetition * 1000 + size)
        delays = [rng.uniform(0, stagger) for _ in range(size)]
        answers = await asyncio.gather(
            *(
                ask(
                    urls[i % len(urls)],
                    keys[i % len(keys)],
                    CLASS_QUESTIONS[i % len(CLASS_QUESTIONS)],
                    delays[i],
                    tokens,
                )
                for i in range(size)
            )
        )
        server_cpu = sum(cpu_seconds(s.pid) - b for s, b in zip(servers, before, strict=True))
        spread = " / ".join(
            f"{(tokens_generated(s) - b) / tokens:.0f}" for s, b in zip(servers, generated, strict=False)
        )
        gateway_cpu = cpu_of(gateway.processes()) - gateway_before if gateway else 0.0
        rss = [memory(s.pid)[0] for s in servers]
        pss = [proportional(s.pid) for s in servers]
        gateway_rss = sum(p.memory_info().rss for p in gateway.processes()) / MB if gateway else 0.0
    finally:
        if gateway is not None:
            gateway.stop()
        for process, folder in launched:  # started or not, each stopped by its PID
            stop_process(process)
            shutil.rmtree(folder, ignore_errors=True)
    for a in answers:
        if not a.ok:
            print(f"  {kind} {size}: an answer failed: {a.error[:300]}", file=sys.stderr)
        elif len(a.arrivals) < tokens:
            print(f"  {kind} {size}: an answer of {len(a.arrivals)} chunks, not {tokens}", file=sys.stderr)
    done = [a for a in answers if a.ok]
    ttfts = [a.arrivals[0] - a.sent for a in done] or [float("nan")]
    rates = [(len(a.arrivals) - 1) / (a.arrivals[-1] - a.arrivals[0]) for a in done] or [float("nan")]
    window = max(a.arrivals[-1] for a in done) - min(a.sent for a in done) if done else float("nan")
    return LocalSummary(
        kind=kind,
        size=size,
        complete=len(done),
        ttft_p50=statistics.median(ttfts),
        ttft_p95=p95(ttfts),
        rate=statistics.median(rates),
        rate_min=min(rates),
        window=window,
        aggregate=sum(len(a.arrivals) for a in done) / window,
        rss=sum(rss),
        pss=sum(pss),
        server_cpu=server_cpu,
        gateway_cpu=gateway_cpu,
        gateway_rss=gateway_rss,
        ready=ready,
        load=max(load, os.getloadavg()[0]),
        spread=spread,
    )


def tokens_generated(server: Server) -> float:
    """The tokens a server generated since it started, by its own count (llama.cpp's /metrics)."""
    r = httpx.get(server.base_url.removesuffix("/v1") + "/metrics", headers=server.headers, timeout=10)
    r.raise_for_status()
    for line in r.text.splitlines():
        if line.startswith("llamacpp:tokens_predicted_total "):
            return float(line.split()[1])
    raise RuntimeError("the server's /metrics has no llamacpp:tokens_predicted_total")


LOCAL_HEADER = (
    "| students | servers | answers complete | first token p50 / p95 s | tokens/s per student (slowest) | "
    "class done in s | tokens/s, whole class | model servers' memory MB: RSS sum / PSS sum | server CPU s | "
    "gateway CPU s (RSS MB) | servers ready s | load | answers per server |\n"
    "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def local_row(summaries: list[LocalSummary]) -> str:
    first = summaries[0]

    def m(name: str) -> float:
        return statistics.median(getattr(s, name) for s in summaries)

    gateway = f"{m('gateway_cpu'):.1f} ({m('gateway_rss'):.0f})" if first.kind in ("gateway", "two") else "–"
    cells = [
        str(first.size),
        KINDS[first.kind],
        f"{min(s.complete for s in summaries)}/{first.size}",
        f"{m('ttft_p50'):.2f} / {m('ttft_p95'):.2f}",
        f"{m('rate'):.1f} ({m('rate_min'):.1f})",
        f"{m('window'):.1f}",
        f"{m('aggregate'):.1f}",
        f"{m('rss'):.0f} / {m('pss'):.0f}",
        f"{m('server_cpu'):.1f}",
        gateway,
        f"{m('ready'):.1f}",
        f"{m('load'):.1f}",
        summaries[-1].spread or "–",
    ]
    return "| " + " | ".join(cells) + " |"


async def bench_local_class(
    sizes: list[int], runs: int, kinds: list[str], tokens: int, stagger: float, root: Path
) -> None:
    results: dict[tuple[int, str], list[LocalSummary]] = {}
    for repetition in range(runs):
        for size in sizes:
            shift = (repetition + sizes.index(size)) % len(kinds)
            for kind in kinds[shift:] + kinds[:shift]:
                try:
                    summary = await local_class(kind, size, repetition, tokens, stagger, root)
                except Exception as exc:  # report what was measured; every server is stopped by PID
                    print(f"{kind}, {size} students failed: {type(exc).__name__}: {exc}"[:2000], file=sys.stderr)
                    traceback.print_exc()
                    continue
                results.setdefault((size, kind), []).append(summary)
                print(
                    f"repetition {repetition + 1}, {size} students, {kind}: {summary.complete}/{size}, first token "
                    f"p50 {summary.ttft_p50:.2f} p95 {summary.ttft_p95:.2f} s, {summary.rate:.1f} tokens/s each, "
                    f"RSS {summary.rss:.0f} MB, load {summary.load:.1f}, answers per server {summary.spread}",
                    file=sys.stderr,
                    flush=True,
                )
    print(f"\n## A class on the local model: {', '.join(map(str, sizes))} students, {tokens}-token answers\n")
    print(
        f"Repetitions: {runs}; medians; {os.cpu_count()} cores; questions sent within {stagger:g} s of each other; "
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}.\n"
    )
    print(LOCAL_HEADER)
    for size in sizes:
        for kind in kinds:
            if (size, kind) in results:
                print(local_row(results[(size, kind)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=None, help="class sizes, in order (default 10,30; --local: 3,6,10)")
    parser.add_argument("--runs", type=int, default=3, help="repetitions, fresh servers each (default 3)")
    parser.add_argument("--local", action="store_true", help="the local model, shared or one per student (no hub)")
    parser.add_argument("--tokens", type=int, default=128, help="--local: tokens per answer (default 128)")
    parser.add_argument("--stagger", type=float, default=1.0, help="--local: questions sent within S s (default 1)")
    parser.add_argument("--no-gateway", action="store_true", help="--local: no LiteLLM in front of the shared server")
    parser.add_argument(
        "--kinds",
        default="gateway,shared,own",
        help=f"--local: which arrangements, in order (default gateway,shared,own; of {','.join(KINDS)})",
    )
    args = parser.parse_args()
    sizes = [int(n) for n in (args.sizes or ("3,6,10" if args.local else "10,30")).split(",")]
    # A `timeout` or Ctrl+C must still stop every process by PID: SIGTERM becomes SystemExit here.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    # The logs of every part stay in test-artifacts/ (the hub's also shows each server's).
    artifacts = Path(__file__).resolve().parents[1] / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-class-", dir=artifacts))
    print(f"logs in {root}", file=sys.stderr)
    if args.local:
        kinds = [k for k in args.kinds.split(",") if not (args.no_gateway and k in ("gateway", "two"))]
        unknown = set(kinds) - set(KINDS)
        if unknown:
            parser.error(f"--kinds: no arrangement named {', '.join(sorted(unknown))} (of {', '.join(KINDS)})")
        asyncio.run(bench_local_class(sizes, args.runs, kinds, args.tokens, args.stagger, root))
        print(f"\nTotal: {time.monotonic() - started:.0f} s")
        return
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
