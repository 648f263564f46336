"""The read path alone: client CPU, wall time and time to first token of reading a stream's body.

The stream comes from `_segment_server.py` (its own process: one SSE event per TCP segment and
per HTTP chunk, as providers send them). Each measurement is a fresh child process that only
reads: it imports what it needs and reads a 5-token stream untimed (so that lazy imports are
not counted), then times the read alone — CPU (`time.process_time()`, all
its threads), wall time from the request to the body's end, and the first token (from the
request to the first bytes carrying the answer's first word, `Here`). Readers:

- `httpx`: a plain httpx loop, `aiter_raw()` on httpx's own client, every read at once;
- `main`: the pacer before this change (a copy of it, below): every read of a flowing stream
  waits 50 ms, by swapping the `read` of the response's network stream;
- `gulps`: `net/_reads.py` now — httpx's client over `GulpBackend`: paced by wake-ups, never by
  bytes, each read's chunks merged into one (`core/_chunked.py`);
- `aiohttp`: httpx with the `httpx-aiohttp` transport (aiohttp's C parser de-chunks); needs
  `pip install httpx-aiohttp`, else its rows say so;
- `arun`: streamwidgets' `arun()` end to end (SSE, JSON, state; no view) on this tree, and
  `arun@base` on the tree given by `--base` (e.g. a checkout of main before this change);
  `arun/0.05` (any number) is `arun` with its unwatched pause (`UNWATCHED_PAUSE`, 0.2 s) set
  to that, to see what the wake-ups cost; on stream (i) only.

Streams: (i) the 20,083-token `long` answer at 1,000 tokens/s; (ii) 20 MB of ~250-byte events
as fast as the server writes them; (iii) 50,000 events/s for 10 s. Readers alternate within
each repetition; figures are medians of `--runs`, with the 1-minute load average beside them.

    python benchmarks/bench_reads.py                        # ~15 minutes
    python benchmarks/bench_reads.py --runs 3 --base /path/to/main --streams long,fast
    python benchmarks/bench_reads.py --runs 4 --streams long --readers arun/0.05,arun,arun/0.5,arun/1.0
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: name -> (text, tokens, rate): what the segment server sends
STREAMS = {
    "long": ("long", 20_083, 1000.0),
    "fast": ("wide", 80_000, 0.0),  # 80,000 events of ~250 bytes: 20 MB, as fast as it goes
    "50k": ("cycle", 500_000, 50_000.0),
}
LABELS = {
    "long": "(i) 20,083 tokens at 1,000 tokens/s",
    "fast": "(ii) 20 MB of ~250-byte events, flat out",
    "50k": "(iii) 50,000 events/s for 10 s",
}
READERS = ("httpx", "main", "gulps", "aiohttp", "arun", "arun@base")


# --------------------------------------------------------------------------- the child: one read


def _main_pacer_gulps(response: Any) -> Any:
    """The pacer of main before this change (`net/_reads.py` then), kept here for the comparison."""
    import anyio

    pause, idle, warm_up = 0.05, 0.1, 8

    class Pacer:
        def __init__(self, read: Any) -> None:
            self._read, self._quick = read, 0

        async def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
            if self._quick >= warm_up:
                await anyio.sleep(pause)
            started = time.monotonic()
            data = await self._read(max_bytes, timeout)
            self._quick = self._quick + 1 if time.monotonic() - started < idle else 0
            return data

    async def gen() -> Any:
        stream = response.extensions.get("network_stream")
        stream.read = Pacer(stream.read).read
        async for chunk in response.aiter_raw():
            yield chunk

    return gen()


async def _read(reader: str, url: str) -> dict[str, Any]:
    import httpx

    if reader.startswith("arun"):
        from streamwidgets import arun, make_request

        if reader.startswith("arun/"):  # an experiment: how the reads' pause sets the CPU
            import streamwidgets.apps._run

            streamwidgets.apps._run.UNWATCHED_PAUSE = float(reader.removeprefix("arun/"))
        request = make_request("Write it", model="bench", base_url=url, stall_timeout=120)
        cpu, began = time.process_time(), time.monotonic()
        state = await arun(request)
        return {
            "cpu": time.process_time() - cpu,
            "wall": time.monotonic() - began,
            "ttft": None,
            "bytes": state.text_length,
            "reads": None,
            "ok": state.status == "complete",
        }
    if reader == "aiohttp":
        from httpx_aiohttp import AiohttpTransport

        client = httpx.AsyncClient(transport=AiohttpTransport(), timeout=120)
    elif reader == "gulps":
        from streamwidgets.net._transport import gulp_client

        client = gulp_client(timeout=120)
    else:
        client = httpx.AsyncClient(timeout=120)
    body = {"model": "bench", "messages": [{"role": "user", "content": "Write it"}], "stream": True}
    async with client:
        cpu, began = time.process_time(), time.monotonic()
        first: Optional[float] = None
        size = chunks = 0
        async with client.stream("POST", url + "/chat/completions", json=body) as response:
            if reader == "gulps":
                from streamwidgets.net._reads import gulps

                raw = gulps(response)
            elif reader == "main":
                raw = _main_pacer_gulps(response)
            else:
                raw = response.aiter_raw()
            async for chunk in raw:
                if first is None and b'"Here' in chunk:
                    first = time.monotonic() - began
                size += len(chunk)
                chunks += 1
                if chunk.endswith(b"data: [DONE]\n\n"):
                    break
        return {
            "cpu": time.process_time() - cpu,
            "wall": time.monotonic() - began,
            "ttft": first,
            "bytes": size,
            "reads": chunks,
            "ok": size > 0,
        }


def child(reader: str, url: str) -> None:
    """One timed read, after an untimed one of a 5-token stream: what a kernel that streamed
    before has loaded (httpx's and streamwidgets' lazy imports) is not counted as the read's."""
    warm = url.split("/")
    warm[-4:-1] = ["long", "5", "1000"]

    async def both() -> dict[str, Any]:
        await _read(reader, "/".join(warm))
        return await _read(reader, url)

    print(json.dumps(asyncio.run(both())), flush=True)


# --------------------------------------------------------------------------- the parent


def _have_aiohttp_transport() -> bool:
    try:
        import httpx_aiohttp  # noqa: F401
    except ImportError:
        return False
    return True


def measure(reader: str, url: str, base: Optional[str]) -> Optional[dict[str, Any]]:
    tree = base if reader == "arun@base" else str(ROOT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", reader, url],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        timeout=600,
    )
    if done.returncode != 0:
        print(f"  {reader}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["load"] = os.getloadavg()[0]
    return result


def _median(values: list[Optional[float]]) -> Optional[float]:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _cell(value: Optional[float], unit: str) -> str:
    return "—" if value is None else f"{value:.2f} {unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--streams", default=",".join(STREAMS), help=f"which streams (default {','.join(STREAMS)})")
    parser.add_argument("--readers", default=",".join(READERS), help=f"which readers (default {','.join(READERS)})")
    parser.add_argument("--base", help="a tree of streamwidgets to run `arun@base` on (e.g. main before this change)")
    parser.add_argument("--child", nargs=2, metavar=("READER", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    sys.path.insert(0, str(HERE))
    from _segment_server import SegmentServer

    readers = [r for r in args.readers.split(",") if r]
    if "arun@base" in readers and not args.base:
        readers.remove("arun@base")
    if "aiohttp" in readers and not _have_aiohttp_transport():
        print("httpx-aiohttp is not installed: its rows are left out (pip install httpx-aiohttp)", file=sys.stderr)
        readers.remove("aiohttp")
    streams = [s for s in args.streams.split(",") if s]
    server = SegmentServer()
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        for name in streams:  # warm the server's answer caches (the first request builds them)
            server.records()
            measure("httpx", server.url(*STREAMS[name]), None)
        for run in range(args.runs):
            for name in streams:
                url = server.url(*STREAMS[name])
                for reader in readers:
                    if reader.startswith("arun") and name != "long":
                        continue  # the others pass the 4 M-character answer limit, or just repeat it
                    result = measure(reader, url, args.base)
                    if result is not None:
                        record = server.records()[-1]
                        last = record["last_byte"] or record["closed"]
                        result["sent"] = None if last is None else last - record["opened"]
                        results.setdefault((name, reader), []).append(result)
                        print(f"run {run + 1} {name:5} {reader:10} {json.dumps(result)}", file=sys.stderr, flush=True)
    finally:
        server.close()
    print(f"\n`python benchmarks/bench_reads.py --runs {args.runs}" + (" --base …" if args.base else "") + "`\n")
    for name in streams:
        print(f"\n**{LABELS[name]}** — medians of {args.runs}\n")
        print("| reader | client CPU | wall | first token | server sent it in | chunks handed on | load (1 min) |")
        print("|---|---|---|---|---|---|---|")
        for reader in readers:
            rows = results.get((name, reader), [])
            if reader.startswith("arun") and name != "long":
                continue
            if not rows:
                print(f"| {reader} | failed | | | | | |")
                continue
            reads = _median([r["reads"] for r in rows])
            print(
                f"| {reader} | {_cell(_median([r['cpu'] for r in rows]), 's')} "
                f"| {_cell(_median([r['wall'] for r in rows]), 's')} "
                f"| {_ms(_median([r['ttft'] for r in rows]))} "
                f"| {_cell(_median([r['sent'] for r in rows]), 's')} "
                f"| {'—' if reads is None else f'{reads:,.0f}'} "
                f"| {_median([r['load'] for r in rows]):.2f} |"
            )


def _ms(value: Optional[float]) -> str:
    return "—" if value is None else f"{value * 1000:.1f} ms"


if __name__ == "__main__":
    main()
