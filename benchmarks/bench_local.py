"""The local model's server (SmolLM2-135M-Instruct, `streamwidgets[local]`), side by side with
llama-cpp-python's own OpenAI server over the same wheel and the same GGUF file.

Per round, each measure is taken for one server and then the other (which goes first flips
every round), so that both see the same load:

1. cold start: from spawning the process to the first token of the first answer (process start,
   imports, model load, the prompt, one token); ours includes its warm-up token;
2. warm first token: a running server, a new question each time (the template's system prompt is
   shared), from sending the request to the first content chunk; 3 per round;
3. tokens/s over a 200-token answer (the end-of-turn tokens banned with `logit_bias`, so every
   answer has the same length), from the first to the last content chunk, without and with
   `logprobs=true, top_logprobs=5`;
4. the server's CPU time per token over each of those answers (user + system, from /proc): what a
   token costs, which the load of a shared machine changes far less than the seconds;
5. the server's RSS (VmRSS) after those, and its peak (VmHWM).

Medians over rounds; the 1-minute load average at the start of each measure is reported beside
them (the machine is shared). llama-cpp-python's server comes from its own venv
(`--stock-python`, default `~/.cache/streamwidgets/llama-server-venv/bin/python`, made with
`pip install --find-links ~/.cache/streamwidgets/wheels "llama-cpp-python[server]==0.3.36"`);
without it only ours is measured. Both get the same threads and context length.

    python benchmarks/bench_local.py              # 5 rounds
    python benchmarks/bench_local.py --rounds 3 --markdown test-artifacts/bench_local.md
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from streamwidgets.server._local import _start
from streamwidgets.server._local_engine import weights_path
from streamwidgets.server._local_server import default_threads

N_CTX = 4096
LONG = 200
NEVER_END = {"0": -100, "2": -100, "4": -100}
QUESTIONS = [
    "What is a list in Python?",
    "Why is the sky blue?",
    "Name three planets.",
    "What does a compiler do?",
    "How do bees make honey?",
    "What is recursion?",
    "Explain photosynthesis briefly.",
    "What is the capital of France?",
]
DEFAULT_STOCK = Path.home() / ".cache" / "streamwidgets" / "llama-server-venv" / "bin" / "python"


@dataclass
class Server:
    name: str
    base_url: str
    pid: int
    stop: Callable[[], None]


@dataclass
class Results:
    cold: list[float] = field(default_factory=list)
    warm: list[float] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)
    rate_logprobs: list[float] = field(default_factory=list)
    #: The server's CPU time (user + system, all its threads) per generated token, in ms: what a
    #: token costs whatever else the machine runs.
    cpu: list[float] = field(default_factory=list)
    cpu_logprobs: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    peak: list[float] = field(default_factory=list)
    load: list[float] = field(default_factory=list)


def start_ours(threads: int) -> Server:
    model = _start(timeout=300)
    return Server("streamwidgets (`streamwidgets.server.local_model()`)", model.base_url, model.pid, model.stop)


def start_stock(python: Path, threads: int) -> Server:
    # A benchmark may pick a port and pass it on; the product never does (see docs/local-model.md).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        str(python), "-m", "llama_cpp.server", "--model", str(weights_path()), "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", str(N_CTX), "--n_threads", str(threads), "--n_threads_batch", str(threads),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.02)
    else:
        process.kill()
        raise RuntimeError("llama-cpp-python's server did not start")

    def stop() -> None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    return Server("llama-cpp-python 0.3.36 `llama_cpp.server`", base_url, process.pid, stop)


def stream(base_url: str, question: str, **body: Any) -> tuple[float, list[float]]:
    """Send one streamed request; (the time it was sent, the arrival time of each content chunk)."""
    payload = {
        "model": "smollm2-135m-instruct",
        "messages": [{"role": "user", "content": question}],
        "stream": True,
        "temperature": 0,
        **body,
    }
    arrivals: list[float] = []
    with httpx.Client(timeout=300) as client:
        sent = time.perf_counter()
        with client.stream("POST", f"{base_url}/chat/completions", json=payload) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                choices = chunk.get("choices") or [{}]
                if choices[0].get("delta", {}).get("content"):
                    arrivals.append(time.perf_counter())
    return sent, arrivals


def rate(arrivals: list[float]) -> float:
    return (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])


def cpu_seconds(pid: int) -> float:
    """The CPU time a process has used so far (utime + stime, every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def one_round(
    contenders: dict[str, Callable[[], Server]], results: dict[str, Results], round_no: int
) -> dict[str, str]:
    """One round: every measure taken for each server in turn (the order flips every round), so
    that both see the same load on a shared machine."""
    keys = list(contenders) if round_no % 2 == 0 else list(reversed(contenders))
    servers: dict[str, Server] = {}
    try:
        for key in keys:
            results[key].load.append(os.getloadavg()[0])
            began = time.perf_counter()
            servers[key] = contenders[key]()
            _, arrivals = stream(servers[key].base_url, QUESTIONS[0], max_tokens=8)
            results[key].cold.append(arrivals[0] - began)
        for i in range(3):
            question = QUESTIONS[1 + (round_no * 3 + i) % (len(QUESTIONS) - 1)]
            for key in keys:
                sent, arrivals = stream(servers[key].base_url, question, max_tokens=8)
                results[key].warm.append(arrivals[0] - sent)
        for logprobs in (False, True):
            extra: dict[str, Any] = {"logprobs": True, "top_logprobs": 5} if logprobs else {}
            for key in keys:
                results[key].load.append(os.getloadavg()[0])
                used = cpu_seconds(servers[key].pid)
                _, arrivals = stream(
                    servers[key].base_url,
                    "Write a long story about a dragon.",
                    max_tokens=LONG,
                    logit_bias=NEVER_END,
                    **extra,
                )
                per_token = (cpu_seconds(servers[key].pid) - used) * 1000 / len(arrivals)
                (results[key].rate_logprobs if logprobs else results[key].rate).append(rate(arrivals))
                (results[key].cpu_logprobs if logprobs else results[key].cpu).append(per_token)
        for key in keys:
            rss, peak = memory(servers[key].pid)
            results[key].rss.append(rss)
            results[key].peak.append(peak)
        return {key: server.name for key, server in servers.items()}
    finally:
        for server in servers.values():
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stock-python", type=Path, default=DEFAULT_STOCK)
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table to this file")
    args = parser.parse_args()
    threads = default_threads()
    contenders: dict[str, Callable[[], Server]] = {"ours": lambda: start_ours(threads)}
    if args.stock_python.exists():
        contenders["stock"] = lambda: start_stock(args.stock_python, threads)
    else:
        print(f"(no {args.stock_python}: measuring streamwidgets only)", file=sys.stderr)
    results = {key: Results() for key in contenders}
    names: dict[str, str] = {}
    for round_no in range(args.rounds):
        names = one_round(contenders, results, round_no)
        for key, r in results.items():
            print(
                f"round {round_no + 1} {key}: cold {r.cold[-1]:.2f} s, warm {statistics.median(r.warm[-3:]):.3f} s, "
                f"{r.rate[-1]:.1f} tok/s, {r.rate_logprobs[-1]:.1f} tok/s with logprobs, "
                f"{r.cpu[-1]:.1f} ({r.cpu_logprobs[-1]:.1f}) CPU ms/token, "
                f"RSS {r.rss[-1]:.0f} MB, load {r.load[-1]:.2f}",
                file=sys.stderr,
                flush=True,
            )
    table = render(names, results, threads, args.rounds)
    print(table)
    if args.markdown is not None:
        args.markdown.write_text(table + "\n")


def render(names: dict[str, str], results: dict[str, Results], threads: int, rounds: int) -> str:
    med = statistics.median
    lines = [
        f"{rounds} rounds, {threads} threads, n_ctx {N_CTX}, Python {sys.version.split()[0]}; medians.",
        "",
        "| server | cold start → first token | warm first token | tokens/s | tokens/s with `top_logprobs=5` "
        "| CPU ms per token (with `top_logprobs=5`) | RSS (peak) | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, r in results.items():
        lines.append(
            f"| {names[key]} | {med(r.cold):.2f} s | {med(r.warm):.3f} s | {med(r.rate):.1f} | "
            f"{med(r.rate_logprobs):.1f} | {med(r.cpu):.1f} ({med(r.cpu_logprobs):.1f}) | "
            f"{med(r.rss):.0f} MB ({med(r.peak):.0f}) | {med(r.load):.2f} |"
        )
    if "stock" in results:
        ours, stock = results["ours"], results["stock"]
        lines += [
            "",
            f"Ratios (llama-cpp-python's server ÷ ours, medians): cold start {med(stock.cold) / med(ours.cold):.2f}x, "
            f"warm first token {med(stock.warm) / med(ours.warm):.2f}x; tokens/s (ours ÷ theirs) "
            f"{med(ours.rate) / med(stock.rate):.2f}x, with logprobs {med(ours.rate_logprobs) / med(stock.rate_logprobs):.2f}x; "
            f"RSS {med(stock.rss) / med(ours.rss):.2f}x.",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
