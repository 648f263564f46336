"""The embedded provider under hostile clients: a hostile prompt, and levers against its host.

The demo server runs as a thread of the user's kernel and streams their live answer, and on a
shared machine (a JupyterHub host) every other local user can reach it on loopback. This measures:

1. `count_tokens` and `tokenize` over 2 MB texts of several shapes (one long word, ordinary
   words, digits, emoji), median of `--runs` runs, CPU seconds. Its token counter once sliced a
   long run of letters again and again (a 2 MB "word" took ~18 s, the server's loop frozen);
2. a real server on 127.0.0.1 streaming `demo-long` at 200 tokens/s to one client while another
   client posts a chat request whose prompt is one 2 MB word: the longest gap between the
   stream's chunks, next to the same stream's longest gap with no such request (baseline), and
   how long the 2 MB request took to be answered (its answer streamed as fast as possible).
   Median of `--runs` runs;
3. the provider's own clock (`--parts clock`), the timings the tests only bound from below or
   check by order: how long `start()` and `stop()` take (stop() with a stalled stream open too),
   how close 1,000 tokens at 1,000 tokens/s come to one second, the first token when a header asks
   for 0.4 s, how soon a client that leaves a silent stream is noticed, and twenty 1-second
   streams at once. Median (and max) of `--runs` runs;
4. `--hostile`: a server of each checkout (`python -m streamwidgets serve`, default limits, in a
   process of its own) against the levers of the shared-machine report, one after the other:
   its peak RSS after one ~200-byte request with `demo.tokens=1e6`, its CPU seconds over 3 s of
   a `demo-slow` stream with `demo.keepalive_interval=1e-9`, the sockets it holds and whether a
   health check is answered while 140 clients that never read ask for `demo-long` (sampled for
   120 s), and the health checks answered (1 s timeout each, one after the other) in 30 s while a
   slowloris keeps 140 half-sent requests open and reconnects each one the server closes.

    python benchmarks/bench_server.py             # 1-3: 2 MB, median of 3 runs
    python benchmarks/bench_server.py --size 500000 --runs 5
    python benchmarks/bench_server.py --parts clock --runs 10
    python benchmarks/bench_server.py --hostile --against /tmp/old   # 4, side by side
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx

from streamwidgets.server import DemoServer
from streamwidgets.server.demo._tokens import count_tokens, tokenize


def shapes(size: int) -> dict[str, str]:
    return {
        "one long word": "a" * size,
        "ordinary words": " hello" * (size // 6),
        "digits": "7" * size,
        "emoji": "\N{GRINNING FACE}" * (size // 4),
    }


def cpu_median(work: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times)


def longest_gap(server: DemoServer, hostile: bytes | None) -> tuple[float, float]:
    """The longest silence of a 200 tokens/s stream (seconds) and, with `hostile`, how long the
    hostile request took to be answered."""
    body = {
        "model": "demo-long",
        "stream": True,
        "messages": [{"role": "user", "content": "Tell me a long story"}],
        "demo": {"tokens_per_second": 200, "tokens": 600, "first_token_delay": 0},
    }
    gaps: list[float] = []
    started = threading.Event()

    def stream() -> None:
        url = f"{server.base_url}/chat/completions"
        with httpx.Client(timeout=None) as client, client.stream("POST", url, json=body) as response:
            last = None
            for _ in response.iter_raw():
                now = time.perf_counter()
                if last is None:
                    started.set()
                else:
                    gaps.append(now - last)
                last = now

    reader = threading.Thread(target=stream)
    reader.start()
    started.wait(10)
    took = 0.0
    if hostile is not None:
        time.sleep(0.3)
        start = time.perf_counter()
        with httpx.Client(timeout=None) as client:
            client.post(
                f"{server.base_url}/chat/completions",
                content=hostile,
                headers={"content-type": "application/json"},
            )
        took = time.perf_counter() - start
    reader.join()
    return max(gaps), took


def _chat(model: str, demo: dict[str, object], prompt: str = "Tell me a long story") -> dict[str, object]:
    return {"model": model, "stream": True, "messages": [{"role": "user", "content": prompt}], "demo": demo}


def start_and_stop() -> tuple[float, float]:
    """Seconds for `start()` (until it serves) and for `stop()` of an idle server."""
    began = time.perf_counter()
    server = DemoServer().start()
    started = time.perf_counter() - began
    began = time.perf_counter()
    server.stop()
    return started, time.perf_counter() - began


def stop_with_a_stalled_stream() -> float:
    """Seconds for `stop()` while a client holds a stream that will never send another byte."""
    server = DemoServer().start()
    url = f"{server.base_url}/chat/completions"
    client = httpx.Client(timeout=None)
    with client.stream("POST", url, json=_chat("demo-stall", {"first_token_delay": 0})) as response:
        next(response.iter_raw())
        began = time.perf_counter()
        server.stop()
        took = time.perf_counter() - began
    client.close()
    return took


def paced_second(server: DemoServer, api: str) -> float:
    """Seconds to read 1,000 tokens asked for at 1,000 tokens/s (1.0 is exact)."""
    body = _chat("demo-long", {"tokens": 1000, "tokens_per_second": 1000, "first_token_delay": 0})
    path = "chat/completions"
    if api == "messages":
        body["max_tokens"] = 4096
        path = "messages"
    with httpx.Client(timeout=30) as client:
        began = time.perf_counter()
        with client.stream("POST", f"{server.base_url}/{path}", json=body) as response:
            for _ in response.iter_raw():
                pass
        return time.perf_counter() - began


def first_token_from_headers(server: DemoServer) -> tuple[float, float]:
    """Seconds to the first token when `X-Demo-First-Token-Delay: 0.4` asks for it, and from
    there to the end of the answer at `X-Demo-Tokens-Per-Second: 0` (at once)."""
    headers = {"X-Demo-First-Token-Delay": "0.4", "X-Demo-Tokens-Per-Second": "0"}
    body = {"model": "demo", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.Client(timeout=30) as client:
        began = time.perf_counter()
        with client.stream("POST", f"{server.base_url}/chat/completions", json=body, headers=headers) as response:
            pieces, seen = response.iter_bytes(), b""
            for piece in pieces:
                seen += piece
                if b'"content":"' in seen.split(b"\n\n", 1)[-1]:
                    break
            first = time.perf_counter() - began
            for _ in pieces:
                pass
        return first, time.perf_counter() - began - first


def leaving_noticed(server: DemoServer) -> float:
    """Seconds from a client closing its socket in the middle of a silent stream (`demo-stall`)
    to the server's record of it (one monotonic clock for both)."""
    last = max((r.id for r in server.connections), default=0)
    body = json.dumps(_chat("demo-stall", {"first_token_delay": 0})).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(head.encode() + body)
        data = b""
        while data.count(b"\n\n") < 2:
            data += sock.recv(65536)
        time.sleep(0.1)
        left = time.monotonic()
    record = server.wait_for_disconnect(timeout=10, after=last)
    assert record is not None and record.closed_at_mono is not None
    return record.closed_at_mono - left


def twenty_at_once(server: DemoServer) -> float:
    """Wall seconds for twenty 300-token streams at 300 tokens/s (1 s each), all started together."""
    done: list[bytes] = []

    def one(i: int) -> None:
        body = _chat("demo-long", {"tokens": 300, "tokens_per_second": 300, "seed": 7}, f"topic {i % 4}")
        with httpx.Client(timeout=30) as client:
            done.append(client.post(f"{server.base_url}/chat/completions", json=body).content)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.perf_counter() - began
    assert len(done) == 20
    return took


def clock_table(runs: int) -> None:
    rows: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        rows.setdefault(name, []).append(value)

    with DemoServer() as server:
        for _ in range(runs):  # alternating, side by side
            started, stopped = start_and_stop()
            add("start() until it serves, ms", started * 1000)
            add("stop(), idle, ms", stopped * 1000)
            add("stop() with a stalled stream open, ms", stop_with_a_stalled_stream() * 1000)
            for api in ("chat", "messages"):
                add(f"1,000 tokens at 1,000 tokens/s ({api}), s", paced_second(server, api))
            first, rest = first_token_from_headers(server)
            add("first token, 0.4 s asked by header, s", first)
            add("the rest at 0 tokens/s after it, ms", rest * 1000)
            add("a client leaving a silent stream, noticed after ms", leaving_noticed(server) * 1000)
            add("twenty 1 s streams at once, wall s", twenty_at_once(server))
    print(f"The provider's own clock, median and max of {runs} runs")
    print("| | median | max |")
    print("|---|---:|---:|")
    for name, values in rows.items():
        print(f"| {name} | {statistics.median(values):.3f} | {max(values):.3f} |")


# ---------------------------------------------------------------------------- levers against the host

HERE = Path(__file__).resolve().parent.parent
PROMPT = [{"role": "user", "content": "Tell me a long story"}]


@contextmanager
def served(tree: Path) -> Iterator[tuple[int, int]]:
    """`python -m streamwidgets serve` of `tree` on a free port: (its pid, its port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "streamwidgets", "serve", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        if "embedded provider on" not in banner:
            raise RuntimeError(f"the server of {tree} did not start:\n{banner}{process.stdout.read()}")
        yield process.pid, port
    finally:
        process.terminate()
        process.wait(15)


def status_kb(pid: int, field: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    return int(found.group(1)) if found else 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sockets_held(pid: int) -> int:
    held = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with suppress(OSError):
            held += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return held - 1  # the listener


def answered(port: int, timeout: float = 1.0) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/_demo/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def knob_rss(pid: int, port: int) -> tuple[int, int, int]:
    """(RSS before, peak RSS after, status) for one request with `demo.tokens=1e6` (MB, MB, HTTP)."""
    before = status_kb(pid, "VmRSS")
    body = {"model": "demo-long", "messages": PROMPT, "stream": False, "demo": {"tokens": 1e6, "tokens_per_second": 0}}
    status = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=300).status_code
    return before // 1024, status_kb(pid, "VmHWM") // 1024, status


def keepalive_cpu(pid: int, port: int) -> tuple[float, int]:
    """(server CPU seconds over 3 s of demo-slow with a keep-alive every nanosecond, status)."""
    body = {"model": "demo-slow", "messages": PROMPT, "stream": True, "demo": {"keepalive_interval": 1e-9}}
    start = cpu_seconds(pid)
    with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=30) as response:
        status = response.status_code
        deadline = time.monotonic() + 3
        for _ in response.iter_raw():
            if time.monotonic() > deadline:
                break
        time.sleep(max(0.0, deadline - time.monotonic()))
    return cpu_seconds(pid) - start, status


def non_reading(pid: int, port: int, clients: int = 140, seconds: float = 120) -> list[tuple[float, int, int, bool]]:
    """(seconds, sockets the server holds, its RSS in MB, a health check answered) every 10 s
    while `clients` never read the `demo-long` streams they asked for."""
    body = json.dumps({"model": "demo-long", "messages": PROMPT, "stream": True}).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    socks = []
    for _ in range(clients):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(head + body)
        except OSError:
            pass
        socks.append(sock)
    samples = []
    start = time.monotonic()
    try:
        for step in range(int(seconds // 10) + 1):
            time.sleep(max(0.0, start + step * 10 - time.monotonic()))
            at = time.monotonic() - start
            samples.append((at, sockets_held(pid), status_kb(pid, "VmRSS") // 1024, answered(port, 3)))
    finally:
        for sock in socks:
            sock.close()
    return samples


def slowloris(port: int, held: int = 140, seconds: float = 30) -> tuple[int, int]:
    """(health checks answered, tried) in `seconds` while `held` half-sent requests reconnect."""
    line = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % port
    stop = threading.Event()

    def one() -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(line)
        sock.setblocking(False)
        return sock

    def attack() -> None:
        socks = [one() for _ in range(held)]
        while not stop.is_set():
            for index, sock in enumerate(socks):
                try:
                    sock.recv(65536)  # an answer (408), or the end: the server let it go
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                sock.close()
                with suppress(OSError):
                    socks[index] = one()  # reconnect at once
            stop.wait(0.005)
        for sock in socks:
            sock.close()

    thread = threading.Thread(target=attack)
    thread.start()
    time.sleep(1)
    ok = tried = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ok += answered(port)
        tried += 1
        time.sleep(0.25)
    stop.set()
    thread.join()
    return ok, tried


@dataclass
class Levers:
    rss: tuple[int, int, int]
    cpu: tuple[float, int]
    unread: list[tuple[float, int, int, bool]]
    slowloris: tuple[int, int]


def levers(trees: dict[str, Path]) -> None:
    results: dict[str, Levers] = {}
    for name, tree in trees.items():
        with served(tree) as (pid, port):
            rss = knob_rss(pid, port)
        with served(tree) as (pid, port):
            cpu = keepalive_cpu(pid, port)
        with served(tree) as (pid, port):
            unread = non_reading(pid, port)
        with served(tree) as (pid, port):
            loris = slowloris(port)
        results[name] = Levers(rss, cpu, unread, loris)
    names = list(results)
    print("Levers against the host, one server process per lever (default ServerLimits)")
    print("| lever | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    cells = [f"{r.rss[0]} -> {r.rss[1]} MB peak (HTTP {r.rss[2]})" for r in results.values()]
    print("| `demo.tokens=1e6` (~200-byte request): RSS before -> peak after | " + " | ".join(cells) + " |")
    cells = [f"{r.cpu[0]:.2f} s (HTTP {r.cpu[1]})" for r in results.values()]
    print("| `demo.keepalive_interval=1e-9`: server CPU over 3 s | " + " | ".join(cells) + " |")
    cells = [f"{r.slowloris[0]} of {r.slowloris[1]}" for r in results.values()]
    print("| health checks answered in 30 s under a reconnecting slowloris (140) | " + " | ".join(cells) + " |")
    print()
    print("140 clients that never read a demo-long stream: sockets the server holds, its RSS, a health check")
    print("| t | " + " | ".join(names) + " |")
    print("|---:|" + "---|" * len(names))
    for index in range(min(len(r.unread) for r in results.values())):
        cells = [
            f"{held} sockets, {rss_mb} MB, {'answered' if ok else 'refused'}"
            for _, held, rss_mb, ok in (r.unread[index] for r in results.values())
        ]
        print(f"| {results[names[0]].unread[index][0]:.0f} s | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=2_000_000, help="characters of each text (default 2 MB)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hostile", action="store_true", help="measure the levers against the host instead")
    parser.add_argument("--against", type=Path, help="(with --hostile) another checkout, measured side by side")
    parser.add_argument("--parts", default="tokens,gap,clock", help="which tables: tokens, gap, clock")
    args = parser.parse_args()
    if args.hostile:
        trees = {"this checkout": HERE}
        if args.against:
            trees = {str(args.against): args.against.resolve(), **trees}
        levers(trees)
        return
    parts = set(args.parts.split(","))

    if "tokens" in parts:
        tokens_table(args.size, args.runs)
    if "gap" in parts:
        gap_table(args.size, args.runs)
    if "clock" in parts:
        clock_table(args.runs)


def tokens_table(size: int, runs: int) -> None:
    print(f"Tokenizing {size:,}-character texts, median CPU s of {runs} runs")
    print("| text | count_tokens s | tokenize s | pieces |")
    print("|---|---:|---:|---:|")
    for name, text in shapes(size).items():
        counting = cpu_median(partial(count_tokens, text), runs)
        splitting = cpu_median(partial(tokenize, text), runs)
        print(f"| {name} | {counting:.3f} | {splitting:.3f} | {count_tokens(text):,} |")
    print()


def gap_table(size: int, runs: int) -> None:
    word = "a" * size
    hostile = json.dumps(
        {
            "model": "demo",
            "stream": True,
            "messages": [{"role": "user", "content": word}],
            "demo": {"tokens_per_second": 0},
        }
    ).encode()
    with DemoServer() as server:
        baseline, attacked, took = [], [], []
        for _ in range(runs):  # alternating, side by side
            baseline.append(longest_gap(server, None)[0])
            gap, seconds = longest_gap(server, hostile)
            attacked.append(gap)
            took.append(seconds)
    print(f"A 200 tokens/s stream while a {size:,}-letter word is posted, median of {runs} runs")
    print("| | longest gap s | 2 MB request answered in s |")
    print("|---|---:|---:|")
    print(f"| stream alone | {statistics.median(baseline):.3f} | |")
    print(f"| with the long-word request | {statistics.median(attacked):.3f} | {statistics.median(took):.3f} |")
    print()


if __name__ == "__main__":
    main()
