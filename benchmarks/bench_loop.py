"""The event loop during a hostile body: its worst lag, Cancel and deadline latency, and RSS growth.

Two gzip bodies from a loopback server in this process, each read by the real client in a fresh
subprocess (so that its RSS is its own):

- "1 GB of newlines": 1 MiB of blank lines packed into one 1 kB gzip member, 1,024 members in a
  row (1 MB on the wire, 1 GiB inflated), then the body stays open;
- "1 GB of text events": one-character text events, 100,000 to a 14 kB gzip member, 200 members
  (2.8 MB on the wire, 1.1 GB inflated; the answer limit, 4,000,000 characters, ends it).

For each body, three runs: Cancel pressed 3 s in (from another thread, as a click comes in:
`call_soon_threadsafe(task.cancel)`; the latency is from the press to the task's end), a
`deadline=5` (its latency is from when it should fire to the task's end), and — text only — the
body read to its end. Meanwhile a ticker task (`asyncio.sleep(0.005)`) notes the longest gap
between its turns: the loop's worst lag, what a kernel answering a click would wait — in wall
time, and in the process's CPU time over that gap (what the code held; on a loaded machine the wall
gap is larger, since the process also waits for a core).

`--tree` points the subprocesses at another checkout of the package, for the before/after table:

    git archive main | tar -x -C /tmp/before       # the tree before the change
    python benchmarks/bench_loop.py --tree /tmp/before --tree .     # 3 runs of each, medians
    python benchmarks/bench_loop.py --runs 1
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import socket
import socketserver
import statistics
import subprocess
import sys
import threading
from collections.abc import Iterator

MB = 1 << 20
CANCEL_AT = 3.0
DEADLINE = 5.0


def _text_member() -> bytes:
    return gzip.compress(b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n' * 100_000, 9)


def newlines() -> Iterator[bytes]:
    member = gzip.compress(b"\n" * MB, 9)
    for _ in range(16):
        yield member * 64  # 64 MiB inflated per write of 64 kB


def text_events() -> Iterator[bytes]:
    member = _text_member()
    for _ in range(200):
        yield member


BODIES = {"1 GB of newlines": newlines, "1 GB of text events": text_events}
PATHS = {f"/{i}/v1/chat/completions": name for i, name in enumerate(BODIES)}
#: The runs of each body: (what ends it, body names it applies to).
RUNS = {"cancel": tuple(BODIES), "deadline": tuple(BODIES), "to the end": ("1 GB of text events",)}


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        data = b""
        while b"\r\n\r\n" not in data and (more := sock.recv(65536)):
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next((int(v.split(":")[1]) for v in lines if v.lower().startswith("content-length:")), 0)
        while len(body) < length and (more := sock.recv(65536)):
            body += more
        name = PATHS.get(lines[0].split()[1])
        if name is None:
            sock.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return
        head_out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
        sock.sendall((head_out + "Transfer-Encoding: chunked\r\n\r\n").encode())
        try:
            for piece in BODIES[name]():
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sock.settimeout(120)
            sock.recv(1)  # hold the body open until the client leaves
        except OSError:
            pass  # the client left


_CHILD = """
import asyncio, json, resource, sys, threading, time
from streamwidgets import make_request
from streamwidgets.net import Stream, as_source

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

async def main(url, how, cancel_at, deadline):
    loop = asyncio.get_running_loop()
    warm = make_request("warm up", base_url="http://127.0.0.1:9/v1", model="m", api_key="k", retries=0)
    await Stream(as_source(warm)).run()
    before = rss()
    options = {"deadline": deadline} if how == "deadline" else {}
    request = make_request("hi", base_url=url, model="m", api_key="k", retries=0, **options)
    stream = Stream(as_source(request))
    started = time.monotonic()
    task = loop.create_task(stream.run())
    pressed = []
    if how == "cancel":
        def press():
            pressed.append(time.monotonic())
            loop.call_soon_threadsafe(task.cancel)
        threading.Timer(cancel_at, press).start()
    worst, last = 0.0, time.monotonic()
    cpu_worst, cpu_last = 0.0, time.process_time()
    while not task.done():
        await asyncio.sleep(0.005)
        now, cpu = time.monotonic(), time.process_time()
        worst, last = max(worst, now - last), now
        cpu_worst, cpu_last = max(cpu_worst, cpu - cpu_last), cpu
    ended = time.monotonic()
    await asyncio.gather(task, return_exceptions=True)
    state = stream.state
    should = pressed[0] if pressed else started + deadline if how == "deadline" else None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"lag": worst, "cpu": cpu_worst, "latency": None if should is None else ended - should,
                      "seconds": ended - started, "growth": peak - before, "status": state.status,
                      "chars": state.text_length}))

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])))
"""


def one(tree: str, url: str, how: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    command = [sys.executable, "-c", _CHILD, url, how, str(CANCEL_AT), str(DEADLINE)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=os.path.abspath(tree))
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(trees: list[str], runs: int) -> None:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    results: dict[tuple[str, str, str], list[dict]] = {}
    try:
        for _ in range(runs):
            for i, body in enumerate(BODIES):
                for how, bodies in RUNS.items():
                    if body not in bodies:
                        continue
                    for tree in trees:  # alternate, so drift hits every tree alike
                        row = one(tree, f"http://127.0.0.1:{port}/{i}/v1", how)
                        results.setdefault((body, how, tree), []).append(row)
    finally:
        server.shutdown()
        server.server_close()
    print(f"{runs} run(s) of each, alternating; medians. Cancel pressed at {CANCEL_AT:g} s, deadline={DEADLINE:g}\n")
    print(
        "| body | ended by | tree | worst loop lag ms | its CPU ms | Cancel/deadline latency ms | seconds | RSS growth MB | status | chars |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---|---:|")
    for (body, how, tree), rows in results.items():
        lag = statistics.median(r["lag"] for r in rows) * 1000
        cpu = statistics.median(r["cpu"] for r in rows) * 1000
        latencies = [r["latency"] for r in rows if r["latency"] is not None]
        latency = f"{statistics.median(latencies) * 1000:,.0f}" if latencies else "–"
        seconds = statistics.median(r["seconds"] for r in rows)
        growth = statistics.median(r["growth"] for r in rows) / MB
        last = rows[-1]
        print(
            f"| {body} | {how} | {tree} | {lag:,.0f} | {cpu:,.0f} | {latency} | {seconds:.1f} | {growth:.0f} "
            f"| {last['status']} | {last['chars']:,} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tree", action="append", help="a checkout to run (repeat for before/after)")
    args = parser.parse_args()
    measure(args.tree or ["."], args.runs)


if __name__ == "__main__":
    main()
