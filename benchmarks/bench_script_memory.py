"""The embedded provider's memory while it streams a very long scripted answer.

A script used to be built whole before its first byte: every token piece of `demo-long` in a
tuple, and every chat chunk in a list, so `demo.tokens=1e6` in a 200-byte request cost the
server (a thread of the user's kernel) about 320 MB. Scripts are lazy now: pieces are made as
they are written. This measures, in fresh server processes on 127.0.0.1, the peak RSS growth
(`VmHWM` after the answer minus `VmHWM` after a small warm-up answer) of the server while one
client reads a `demo-long` answer of each size as fast as it can, on each API, side by side
with another checkout when `--against` names one.

    python benchmarks/bench_script_memory.py                       # 1e5 and 1e6 tokens
    python benchmarks/bench_script_memory.py --against /tmp/old    # before/after, in one run
    python benchmarks/bench_script_memory.py --tokens 100000 --apis chat
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent.parent

_SERVER = """
import sys
from streamwidgets.server import DemoServer
server = DemoServer().start()
print(server.port, flush=True)
sys.stdin.read()
server.stop()
"""


def kilobytes(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


def body(api: str, tokens: int) -> dict[str, object]:
    demo = {"tokens": tokens, "tokens_per_second": 0, "first_token_delay": 0}
    question = "Write a long tutorial on asyncio."
    if api == "responses":
        return {"model": "demo-long", "stream": True, "input": question, "demo": demo}
    body: dict[str, object] = {
        "model": "demo-long",
        "stream": True,
        "messages": [{"role": "user", "content": question}],
        "demo": demo,
    }
    if api == "messages":
        body["max_tokens"] = tokens * 2
    return body


PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}


def measure(tree: Path, api: str, tokens: int) -> dict[str, float]:
    """Peak RSS growth (MB) of a fresh server process streaming one answer of `tokens` tokens."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    # From the tree's own folder: `python -c` puts the working directory first on sys.path.
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, cwd=tree
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}"
        with httpx.Client(timeout=600) as client:
            with client.stream("POST", url + PATHS[api], json=body(api, 200)) as warm:
                for _ in warm.iter_raw():
                    pass
            base = kilobytes(server.pid, "VmHWM")
            started = time.perf_counter()
            received = 0
            with client.stream("POST", url + PATHS[api], json=body(api, tokens)) as response:
                status = response.status_code
                for chunk in response.iter_raw():
                    received += len(chunk)
            seconds = time.perf_counter() - started
            peak = kilobytes(server.pid, "VmHWM")
        return {
            "status": status,
            "base_mb": base / 1024,
            "growth_mb": (peak - base) / 1024,
            "seconds": seconds,
            "body_mb": received / 1e6,
        }
    finally:
        assert server.stdin is not None
        server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()  # our own child, by its handle
            server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", type=Path, help="another checkout to measure side by side")
    parser.add_argument("--tokens", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--apis", nargs="+", default=["chat", "responses", "messages"], choices=sorted(PATHS))
    args = parser.parse_args()
    trees = {"this checkout": HERE}
    if args.against:
        trees = {str(args.against): args.against.resolve(), **trees}
    print("| tree | API | tokens | status | server RSS before MB | peak growth MB | seconds | body MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    results = []
    for tokens in args.tokens:
        for api in args.apis:
            for name, tree in trees.items():
                result = measure(tree, api, tokens)
                results.append({"tree": name, "api": api, "tokens": tokens, **result})
                print(
                    f"| {name} | {api} | {tokens:,} | {result['status']} | {result['base_mb']:.0f} | "
                    f"+{result['growth_mb']:.1f} | {result['seconds']:.1f} | {result['body_mb']:.0f} |",
                    flush=True,
                )
    print(json.dumps(results), file=sys.stderr)  # the raw figures, for whoever wants them


if __name__ == "__main__":
    main()
