"""Client memory stays bounded: peak RSS for a 200 MB SSE line and a 200 MB answer.

Each stream is read by `streamwidgets.run()` with the default limits, in a fresh subprocess (so
its peak RSS is its own), from a loopback server that writes the body as it goes, in 64 kB
chunked writes: a small baseline answer; a 200 MB comment line followed by that answer (the line
is discarded as it arrives: `max_event_chars`); and a 200 MB answer (kept up to
`max_answer_chars`, then the stream ends as incomplete). The runs alternate, and the table gives
the median peak RSS of each and its excess over the baseline. Before the limits, the line peaked
at 877 MB and the answer at about 2 GB in a kernel.

The accumulator half (1,000,000 one-byte tool-argument deltas against 1,000,000 text deltas,
target ratio <= 1.5) is `bench_accumulators.py`'s measurement, run here too with `--deltas`.

The hostile half (`--hostile`, with `--tree` for before/after) feeds, sans-IO, in a fresh
subprocess each, what grew without a bound of its own: 4 tool calls of 15 MB of arguments each;
1,000,000 distinct cited pages (100 events of 10,000 annotations); 400,000 empty tool calls (and again
with the tool-call limit raised to a million where there is one, so that the work is all done);
50 MB of events that never tell their dialect. Peak RSS growth over the input, seconds, and
what was kept.

    python benchmarks/bench_memory.py             # 3 runs of each stream
    python benchmarks/bench_memory.py --deltas    # and the tool / text delta ratio
    python benchmarks/bench_memory.py --hostile --tree /tmp/before --tree . --runs 1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import socketserver
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

MB = 1 << 20
SIZE = 200 * MB
PIECE = 64 * 1024


def chat_event(text: str) -> bytes:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    return (
        b"data: "
        + json.dumps({"object": "chat.completion.chunk", "model": "m", "choices": [choice]}).encode()
        + b"\n\n"
    )


def small_answer() -> Iterator[bytes]:
    for word in ("A small", " answer", " for the", " baseline."):
        yield chat_event(word)
    yield b'data: {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
    yield b"data: [DONE]\n\n"


def long_line() -> Iterator[bytes]:
    yield b": "
    filler = b"x" * PIECE
    for _ in range(SIZE // PIECE):
        yield filler
    yield b"\n\n"
    yield from small_answer()


def long_answer() -> Iterator[bytes]:
    event = chat_event("y" * (PIECE - 200))
    for _ in range(SIZE // len(event)):
        yield event
    yield from small_answer()


BODIES = {"baseline": small_answer, "200 MB line": long_line, "200 MB answer": long_answer}
PATHS = {f"/{i}/v1/chat/completions": name for i, name in enumerate(BODIES)}


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        data = b""
        while b"\r\n\r\n" not in data and (more := sock.recv(65536)):
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next((int(v.split(":")[1]) for v in lines if v.lower().startswith("content-length:")), 0)
        while len(body) < length and (more := sock.recv(65536)):
            body += more
        name = PATHS.get(lines[0].split()[1], "baseline")
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for piece in BODIES[name]():
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the client left (at a limit)


def child(url: str) -> None:
    """One stream, then this process's peak RSS."""
    import streamwidgets as sw

    started = time.perf_counter()
    state = sw.run("hi", base_url=url, model="m", api_key="k")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: kB
    result = {"peak": peak, "status": state.status, "chars": state.text_length, "warnings": len(state.warnings)}
    print(json.dumps({**result, "seconds": time.perf_counter() - started}))


def measure(runs: int) -> None:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    results: dict[str, list[dict]] = {name: [] for name in BODIES}
    try:
        for _ in range(runs):
            for i, name in enumerate(BODIES):  # alternate, so drift hits every stream alike
                url = f"http://127.0.0.1:{port}/{i}/v1"
                out = subprocess.run(
                    [sys.executable, __file__, "--child", url], env=env, capture_output=True, text=True
                )
                if out.returncode:
                    raise SystemExit(out.stderr)
                results[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    finally:
        server.shutdown()
        server.server_close()
    base = statistics.median(r["peak"] for r in results["baseline"])
    print(f"{runs} runs of each stream, alternating; median peak RSS of the client process\n")
    print("| stream | peak RSS MB | over baseline MB | seconds | status | answer chars kept | warnings |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for name, rows in results.items():
        peak = statistics.median(r["peak"] for r in rows)
        seconds = statistics.median(r["seconds"] for r in rows)
        last = rows[-1]
        print(
            f"| {name} | {peak / MB:.0f} | {(peak - base) / MB:+.0f} | {seconds:.1f} | {last['status']} "
            f"| {last['chars']:,} | {last['warnings']} |"
        )


def deltas(n: int, runs: int) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_accumulators import measure as measure_deltas
    from bench_accumulators import state_contenders

    contenders = state_contenders(n)
    medians = measure_deltas({k: contenders[k] for k in ("text deltas", "tool-call deltas")}, n, runs)
    ratio = medians["tool-call deltas"] / medians["text deltas"]
    print(f"\n{n:,} one-byte deltas, median CPU s of {runs}: text {medians['text deltas']:.3f}, ", end="")
    print(f"tool-call arguments {medians['tool-call deltas']:.3f}: ratio {ratio:.2f} (target <= 1.5)")


_HOSTILE_CHILD = """
import dataclasses, json, resource, sys, time
from streamwidgets.core._feed import Feed
from streamwidgets.core._limits import Limits
from streamwidgets.core._state import StreamState
from streamwidgets.core.dialects import Normalizer

def chunk(delta):
    return b"data: " + json.dumps({"object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}).encode() + b"\\n\\n"

def call(i, arguments=""):
    return chunk({"tool_calls": [{"index": i, "id": f"c{i}", "function": {"name": "f", "arguments": arguments}}]})

case = sys.argv[1]
raised = {}
if case == "arguments":
    chunks = [call(i, "x" * 15_000_000) for i in range(4)]
elif case == "citations":
    chunks = [chunk({"annotations": [{"type": "url_citation", "url_citation": {"url": f"https://e.org/{j}/{i}"}}
                                     for i in range(10_000)]}) for j in range(100)]
elif case == "calls":
    chunks = [b"".join(call(i) for i in range(j, j + 1000)) for j in range(0, 400_000, 1000)]
elif case == "calls raised":
    chunks = [b"".join(call(i) for i in range(j, j + 1000)) for j in range(0, 400_000, 1000)]
    raised = {"max_tool_calls": 1_000_000}
else:  # untold: events that never say which API they speak
    chunks = [b'data: {"n": 1}\\n\\n' * 4000] * (50_000_000 // 64_000)
names = {f.name for f in dataclasses.fields(Limits)}
limits = Limits(**{k: v for k, v in raised.items() if k in names})
with open("/proc/self/statm") as f:
    before = int(f.read().split()[1]) * resource.getpagesize()
started = time.process_time()
state = StreamState()
feed = Feed(state, Normalizer(), clock=None, limits=limits)
for piece in chunks:
    feed.push(piece)
feed.end("the input ended")
seconds = time.process_time() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
kept = {"arguments": sum(c.arguments_length if hasattr(c, "arguments_length") else len(c.arguments)
                         for c in state.tool_calls),
        "citations": len(state.citations), "calls": len(state.tool_calls), "calls raised": len(state.tool_calls),
        "untold": state.text_length}[case]
print(json.dumps({"growth": peak - before, "seconds": seconds, "kept": kept, "status": state.status,
                  "warnings": len(state.warnings)}))
"""
HOSTILE = {
    "arguments": "4 tool calls x 15 MB of arguments",
    "citations": "1,000,000 distinct citations",
    "calls": "400,000 empty tool calls",
    "calls raised": "400,000 empty tool calls, max_tool_calls=1,000,000",
    "untold": "50 MB of events that never tell their dialect",
}


def hostile(trees: list[str], runs: int) -> None:
    results: dict[tuple[str, str], list[dict]] = {}
    for _ in range(runs):
        for case in HOSTILE:
            for tree in trees:  # alternate, so drift hits every tree alike
                env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
                out = subprocess.run(
                    [sys.executable, "-c", _HOSTILE_CHILD, case],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=900,
                    cwd=os.path.abspath(tree),  # `-c` puts the working directory first on sys.path
                )
                if out.returncode:
                    raise SystemExit(out.stderr)
                results.setdefault((case, tree), []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{runs} run(s) of each, alternating; medians; peak RSS growth over the input, CPU seconds\n")
    print("| input | tree | RSS growth MB | CPU s | kept | status | warnings |")
    print("|---|---|---:|---:|---:|---|---:|")
    for (case, tree), rows in results.items():
        growth = statistics.median(r["growth"] for r in rows) / MB
        seconds = statistics.median(r["seconds"] for r in rows)
        last = rows[-1]
        print(
            f"| {HOSTILE[case]} | {tree} | {growth:+.0f} | {seconds:.1f} | {last['kept']:,} | {last['status']} "
            f"| {last['warnings']} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--deltas", action="store_true", help="also the tool / text delta ratio")
    parser.add_argument("--hostile", action="store_true", help="only the hostile inputs, sans-IO")
    parser.add_argument("--tree", action="append", help="a checkout to run --hostile in (repeat for before/after)")
    parser.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    if args.hostile:
        hostile(args.tree or ["."], args.runs)
        return
    measure(args.runs)
    if args.deltas:
        deltas(1_000_000, args.runs)


if __name__ == "__main__":
    main()
