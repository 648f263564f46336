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

    python benchmarks/bench_memory.py             # 3 runs of each stream
    python benchmarks/bench_memory.py --deltas    # and the tool / text delta ratio
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--deltas", action="store_true", help="also the tool / text delta ratio")
    parser.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    measure(args.runs)
    if args.deltas:
        deltas(1_000_000, args.runs)


if __name__ == "__main__":
    main()
