"""Cancel latency of the client: from `task.cancel()` to the embedded provider seeing the disconnect.

Both sides live in this process (the provider in its own thread, with its own event loop), so
one monotonic clock times them. Each run streams from the embedded provider over loopback,
cancels once some text has arrived, and reads the provider's record of the disconnect.

    python benchmarks/bench_cancel.py            # 30 runs for each API and rate
    python benchmarks/bench_cancel.py --runs 10
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from streamwidgets.client import make_request, stream_into
from streamwidgets.server import DemoServer
from streamwidgets.state import StreamState


async def one(server: DemoServer, api: str, rate: float) -> float:
    request = make_request(
        "A long answer, please.",
        base_url=server.base_url,
        model="demo-long",
        api=api,
        demo={"tokens_per_second": rate, "first_token_delay": 0},
    )
    state = StreamState()
    before = len(server.connections)
    task = asyncio.get_running_loop().create_task(stream_into(request, state))
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    asyncio.run(main(parser.parse_args().runs))
