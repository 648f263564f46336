"""Fifty streams ending together in a real kernel: how long does a trivial cell wait meanwhile?

When a stream ends, its output gets the static answer (text, markdown and HTML for nbconvert and
GitHub). Rendering that HTML from the whole answer again took 75-140 ms per 76 KB answer, on the
kernel's loop, so fifty answers ending together blocked every cell for seconds. Now the static
HTML is the pane's own incremental render.

In one kernel, `--streams` views are shown, each fed the same long answer (the `demo-long`
tutorial, about 76 KB) at once and then held open; once the kernel is quiet again, one cell ends
them all together, and a trivial cell (`print(sum(h.done for h in hs))`, sent as JupyterLab sends
it) goes every 20 ms until every stream has ended and a second has passed. Reported: the round
trips of those cells (send to reply), and how long until the last stream ended.

    python benchmarks/bench_many_streams.py                    # this checkout
    git worktree add /tmp/old <commit>
    python benchmarks/bench_many_streams.py --against /tmp/old # side by side, in one run
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from streamwidgets.server.demo._long import long_answer_tokens

HERE = Path(__file__).resolve().parents[1]


def start_kernel(home: Path, tree: Path) -> tuple[KernelManager, Any]:
    spec = home / "kernels" / "sw-bench"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "bench", "language": "python"}))
    manager = KernelManager(
        kernel_name="sw-bench", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(home / "kernels")])
    )
    env = {**os.environ, "PYTHONPATH": str(tree), "IPYTHONDIR": str(home / "ipython")}
    manager.start_kernel(env=env)
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=90)
    return manager, client


def run_cell(client: Any, code: str, timeout: float = 600.0) -> tuple[float, str]:
    """Send a cell as JupyterLab does; return its round trip (to the reply) and its stdout."""
    started = time.monotonic()
    msg_id = client.execute(textwrap.dedent(code), allow_stdin=True)
    while True:
        reply = client.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    took = time.monotonic() - started
    out, idle = [], False
    while not idle:
        try:
            msg = client.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            break
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        idle = msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle"
    if reply["content"]["status"] != "ok":
        raise RuntimeError("\n".join(reply["content"].get("traceback", [])))
    return took, "".join(out)


KERNEL_SETUP = """
import asyncio
import streamwidgets as sw
from streamwidgets.core import Finish, TextDelta, Terminator
from streamwidgets.net import Labels, Source

TEXT = open({path!r}, encoding="utf-8").read()
end = asyncio.Event()

class Held(Source):
    # The whole answer at once, then open until `end` is set: so that all end together.

    def labels(self):
        return Labels(model="demo-long")

    async def items(self, context):
        yield [TextDelta(TEXT)]
        await end.wait()
        yield [Finish("stop"), Terminator()]

hs = [sw.show(Held()) for _ in range({streams})]
"""


def measure(tree: Path, text_path: Path, streams: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        manager, client = start_kernel(Path(home), tree)
        try:
            run_cell(client, KERNEL_SETUP.format(path=str(text_path), streams=streams))
            while run_cell(client, "pass")[0] > 0.05:  # the first frames drawn, the kernel quiet
                time.sleep(0.2)
            time.sleep(1.0)
            ended = time.monotonic()
            run_cell(client, "end.set()")
            probes: list[tuple[float, float, int]] = []  # (sent, round trip, streams done)
            last_end = None
            while True:
                sent = time.monotonic()
                took, out = run_cell(client, "print(sum(h.done for h in hs))")
                done = int(out.strip())
                probes.append((sent, took, done))
                if done == streams and last_end is None:
                    last_end = sent + took
                if last_end is not None and sent > last_end + 1.0:
                    break
                time.sleep(0.02)
            size = int(run_cell(client, "print(len(hs[0].text.encode()))")[1])
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    trips = [took * 1000 for _, took, _ in probes]
    assert last_end is not None
    return {
        "answer bytes": size,
        "trivial cell round trip, median / max ms": (statistics.median(trips), max(trips)),
        "cells sent while ending": len([1 for _, _, done in probes if done < streams]),
        "last stream ended after, ms": (last_end - ended) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, help="another checkout to measure side by side")
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=21_000, help="tokens per answer (21,000: about 76 KB)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    trees = {"this checkout": HERE}
    if args.against:
        trees = {str(args.against): args.against.resolve(), **trees}
    with tempfile.TemporaryDirectory() as scratch:
        text_path = Path(scratch) / "answer.md"
        text_path.write_text("".join(long_answer_tokens("Write a long tutorial on asyncio", args.tokens, "bench")))
        for round_ in range(args.rounds):
            for name, tree in trees.items():
                result = measure(tree, text_path, args.streams)
                print(f"round {round_ + 1}, {name}:", flush=True)
                for key, value in result.items():
                    shown = f"{value[0]:.0f} / {value[1]:.0f}" if isinstance(value, tuple) else f"{value:.0f}"
                    print(f"  {key}: {shown}", flush=True)


if __name__ == "__main__":
    main()
