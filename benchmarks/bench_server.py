"""The embedded provider under a hostile prompt: tokenizing, and a concurrent stream's longest gap.

The demo server runs as a thread of the user's kernel and streams their live answer. Its token
counter once sliced a long run of letters again and again (a 2 MB "word" took ~18 s, during which
the server's loop was frozen and every live stream with it). This measures, in one run:

1. `count_tokens` and `tokenize` over 2 MB texts of several shapes (one long word, ordinary
   words, digits, emoji), median of `--runs` runs, CPU seconds;
2. a real server on 127.0.0.1 streaming `demo-long` at 200 tokens/s to one client while another
   client posts a chat request whose prompt is one 2 MB word: the longest gap between the
   stream's chunks, next to the same stream's longest gap with no such request (baseline), and
   how long the 2 MB request took to be answered (its answer streamed as fast as possible).
   Median of `--runs` runs.

    python benchmarks/bench_server.py             # 2 MB, median of 3 runs
    python benchmarks/bench_server.py --size 500000 --runs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Callable
from functools import partial

import httpx

from streamwidgets.server import DemoServer
from streamwidgets.server._tokens import count_tokens, tokenize


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=2_000_000, help="characters of each text (default 2 MB)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    print(f"Tokenizing {args.size:,}-character texts, median CPU s of {args.runs} runs")
    print("| text | count_tokens s | tokenize s | pieces |")
    print("|---|---:|---:|---:|")
    for name, text in shapes(args.size).items():
        counting = cpu_median(partial(count_tokens, text), args.runs)
        splitting = cpu_median(partial(tokenize, text), args.runs)
        print(f"| {name} | {counting:.3f} | {splitting:.3f} | {count_tokens(text):,} |")

    word = "a" * args.size
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
        for _ in range(args.runs):  # alternating, side by side
            baseline.append(longest_gap(server, None)[0])
            gap, seconds = longest_gap(server, hostile)
            attacked.append(gap)
            took.append(seconds)
    print()
    print(f"A 200 tokens/s stream while a {args.size:,}-letter word is posted, median of {args.runs} runs")
    print("| | longest gap s | 2 MB request answered in s |")
    print("|---|---:|---:|")
    print(f"| stream alone | {statistics.median(baseline):.3f} | |")
    print(f"| with the long-word request | {statistics.median(attacked):.3f} | {statistics.median(took):.3f} |")


if __name__ == "__main__":
    main()
