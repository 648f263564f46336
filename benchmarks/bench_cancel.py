"""Cancel latency of the client: from `task.cancel()` to the server seeing the disconnect.

Each run streams over loopback, cancels once some text has arrived (so reads are paced by then,
see `streamwidgets/_reads.py`), and reads the server's record of the disconnect; one monotonic
clock times both sides. The embedded provider lives in this process (its own thread and event
loop) and serves all three APIs; `_segment_server.py` runs in its own process and writes each
event in its own TCP segment, as providers do (chat only). Last, the same cancel while the client
waits out a 429's `Retry-After: 2` (the embedded provider's `demo-ratelimit`): `task.cancel()` →
the task has ended (no connection is open during the wait).

    python benchmarks/bench_cancel.py            # 30 runs for each API and rate
    python benchmarks/bench_cancel.py --runs 10
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from _segment_server import SegmentServer

from streamwidgets import make_request
from streamwidgets.net import Stream, as_source
from streamwidgets.server import DemoServer


async def one(server: DemoServer, api: str, rate: float) -> float:
    request = make_request(
        "A long answer, please.",
        base_url=server.base_url,
        model="demo-long",
        api=api,
        demo={"tokens_per_second": rate, "first_token_delay": 0},
    )
    stream = Stream(as_source(request))
    state = stream.state
    before = len(server.connections)
    task = asyncio.get_running_loop().create_task(stream.run())
    while state.text_length < 40:
        await asyncio.sleep(0.002)
    await asyncio.sleep(0.05)  # cancel mid-stream, not right after the first token
    loop = asyncio.get_running_loop()
    cancelled = loop.time()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    record = await asyncio.to_thread(server.wait_for_disconnect, 5.0, after=before)
    assert record is not None and record.outcome == "client_disconnected", record
    assert state.status == "cancelled"
    return (record.closed_at_mono - cancelled) * 1000  # loop.time() is time.monotonic() on asyncio


async def one_segmented(server: SegmentServer, rate: float) -> float:
    request = make_request("A long answer, please.", base_url=server.url("long", 100_000, rate), model="bench")
    stream = Stream(as_source(request))
    state = stream.state
    last = max((r["id"] for r in await asyncio.to_thread(server.records)), default=0)
    task = asyncio.get_running_loop().create_task(stream.run())
    while state.text_length < 40:
        await asyncio.sleep(0.002)
    await asyncio.sleep(0.05)
    cancelled = asyncio.get_running_loop().time()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    record = await asyncio.to_thread(server.wait_for_disconnect, last)
    assert record is not None and record["outcome"] == "client_disconnected", record
    assert state.status == "cancelled"
    return (record["closed"] - cancelled) * 1000


async def during_a_retry_wait(server: DemoServer, run: int) -> float:
    """Milliseconds from `task.cancel()`, 0.2 s into a 2 s Retry-After wait, to the task's end."""
    request = make_request(
        f"Explain SSE (cancelled while waiting, {run})", base_url=server.base_url, model="demo-ratelimit"
    )
    stream = Stream(as_source(request))
    state = stream.state
    task = asyncio.get_running_loop().create_task(stream.run())
    while state.retry is None or state.retry.until is None:
        await asyncio.sleep(0.002)
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    cancelled = loop.time()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    took = loop.time() - cancelled
    assert state.status == "cancelled" and state.retry.tries == 1, (state.status, state.retry)
    return took * 1000


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18]


async def main(runs: int) -> None:
    with DemoServer() as server:
        print(f"cancel → server sees the disconnect, milliseconds, {runs} runs each")
        print()
        print("| API | tokens/s | median ms | p95 ms | max ms |")
        print("|---|---:|---:|---:|---:|")
        for api in ("chat", "responses", "messages"):
            for rate in (50.0, 1000.0):
                values = [await one(server, api, rate) for _ in range(runs)]
                print(
                    f"| {api} | {rate:.0f} | {statistics.median(values):.1f} | {p95(values):.1f} | {max(values):.1f} |"
                )
    segments = SegmentServer()
    try:
        for rate in (50.0, 1000.0):
            values = [await one_segmented(segments, rate) for _ in range(runs)]
            print(
                f"| chat, one event per segment | {rate:.0f} | {statistics.median(values):.1f} | {p95(values):.1f} | "
                f"{max(values):.1f} |"
            )
    finally:
        segments.close()
    with DemoServer() as server:
        values = [await during_a_retry_wait(server, run) for run in range(runs)]
    print()
    print("| cancel during a 2 s Retry-After wait | median ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|")
    print(f"| chat, `demo-ratelimit` | {statistics.median(values):.1f} | {p95(values):.1f} | {max(values):.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    asyncio.run(main(parser.parse_args().runs))
