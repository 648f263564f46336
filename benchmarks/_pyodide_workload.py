"""The workload of `bench_pyodide.py`: one answer's SSE bytes through show()'s whole kernel side.

The same source runs in CPython and in Pyodide (`_pyodide_run.mjs` writes this file into
Pyodide's file system and imports it), so both runtimes do exactly the same work:

SSE bytes → `Normalizer` (SSE decoding, JSON, the chat dialect) → `Feed` → `StreamState` →
`StreamView` (incremental markdown, Pygments, the header, usage and sparkline) → ipywidgets →
comm messages. The view is made, paced and drawn as `show()` makes it (`view_for`,
`scheduler_for`, `frame_pause`, `StreamHandle`); only the display and the cell plumbing of a
kernel are left out. Every comm message is recorded by a comm that replaces `comm.create_comm`
(the hook a kernel sets, and ipywidgets 8 calls): its JSON (content and metadata, serialized as a
kernel would, so that cost is measured too) plus 500 bytes of Jupyter envelope, as
`bench_tokens.py` counts them.

**Time is virtual.** The frame scheduler and the read pauses are timers on the loop's clock: with
no pacing a 20-second stream would be over in well under a second, drawn in a handful of frames,
and a slower runtime would draw more frames (more work, more bytes) than a faster one. So the
answer runs on an event loop whose clock only moves when the loop would otherwise wait: it jumps
to the next timer at once (as `tests/virtual_time.py` does for the tests), and `time.monotonic`
follows it while a run lasts. The stream arrives at its nominal rate on that clock (an SSE event
per token, `rate` a second), read like a socket by the project's own `Pacer` with the view's read
pause, so the reads, the frames and every message are exactly those of a kernel fed at that rate
by an infinitely fast machine — the same in both runtimes — and nothing ever sleeps: the wall
time is the processing. The loop has no I/O at all (no selector, no self-pipe), so it runs where
there are no sockets.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Optional

from _wire import Wire

from streamwidgets.core import DEFAULT_LIMITS, Limits
from streamwidgets.core.dialects import Normalizer
from streamwidgets.net import Labels, RunOptions, Source, SourceContext
from streamwidgets.net._reads import RECEIVE_BUFFER, Pacer
from streamwidgets.widgets import StreamHandle, frame_pause, scheduler_for, view_for

__all__ = ["events_of", "run_once", "digest", "json_backend"]

#: What one read asks for: httpcore's 64 KiB, less the chunk framing `GulpStream` leaves room for.
ASKED = 64 * 1024 - 16


class VirtualClock:
    """Seconds that pass only when `advance()` says so (at least one tick each time)."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now = max(self.now + max(0.0, seconds), math.nextafter(self.now, math.inf))


class _Jump:
    """The loop's selector, with nothing to watch: where the loop would wait, the clock jumps."""

    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock

    def select(self, timeout: Optional[float] = None) -> list[Any]:
        if timeout is None:
            raise RuntimeError("the loop waits for something no timer ends: the workload would hang")
        if timeout > 0:
            self._clock.advance(timeout)
        return []

    def close(self) -> None:
        pass


class VirtualLoop(asyncio.BaseEventLoop):
    """An asyncio loop on a virtual clock, with no I/O: the same pure Python in every runtime."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__()
        self._virtual = clock
        self._selector = _Jump(clock)

    def time(self) -> float:
        return self._virtual()

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass  # call_soon_threadsafe: the loop never sleeps, there is nothing to wake


@dataclass(frozen=True, eq=False)
class Arriving(Source):
    """An SSE body whose events arrive one every 1/`rate` seconds on the loop's clock, read as
    `GulpStream` reads a socket: a read takes what has arrived (at most `ASKED` bytes), waits
    for the next event when nothing has, and is paced by the project's `Pacer` with the run's
    read pause (a view's: until just before its next frame) over a 1 MiB receive buffer."""

    events: tuple[bytes, ...] = ()
    rate: float = 1000.0
    limits: Limits = DEFAULT_LIMITS
    reads: list[int] = field(default_factory=list)  # the size of every read, for the report

    def labels(self) -> Labels:
        return Labels(model="bench", provider="openai", api="chat")

    def normalizer(self) -> Normalizer:
        return Normalizer("chat", "openai")

    def stamp(self, state: Any) -> None:
        state.model = state.model or "bench"
        state.provider = state.provider or "openai"
        state.origin = state.origin or "live"

    def _with_limits(self, limits: Limits) -> Arriving:
        return Arriving(self.events, self.rate, limits, self.reads)

    async def items(self, context: SourceContext) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        ends = []
        total = 0
        for event in self.events:
            total += len(event)
            ends.append(total)
        body = b"".join(self.events)
        pacer = Pacer(pause=context.pause)
        start = loop.time()
        taken, last_end = 0, 0.0
        while taken < total:
            await pacer.wait(pacer.next_pause())
            began = loop.time()
            arrived = min(len(ends), int((began - start) * self.rate) + 1)
            if ends[arrived - 1] <= taken:  # nothing new: wait for the next event
                await asyncio.sleep(start + arrived / self.rate - began)
                arrived += 1
            upto = min(ends[arrived - 1], taken + ASKED)
            data, taken = body[taken:upto], upto
            ended = loop.time()
            since, last_end = (ended - last_end if last_end else 0.0), ended
            pacer.read(len(data), ASKED, ended - began, since, RECEIVE_BUFFER)
            self.reads.append(len(data))
            yield data


async def _show(source: Source, clock: VirtualClock) -> tuple[Any, Any]:
    """What `show()` does in a kernel (`apps/_show.py`), less the display: the view, the
    loop's scheduler, the view's read pause, and the stream as a task, awaited to its end."""
    view = view_for(source, clock=clock)
    scheduler = scheduler_for()
    run = RunOptions(pause=frame_pause(scheduler, view))
    handle = StreamHandle(source, run, view=view, scheduler=scheduler)
    state = await handle
    return state, scheduler


def events_of(body: bytes) -> list[bytes]:
    """An SSE body's events, each with the blank line that ends it."""
    return [event for event in re.split(rb"(?<=\n\n)", body) if event]


def run_once(events: list[bytes], rate: float = 1000.0) -> dict[str, Any]:
    """Stream `events` (an SSE body, one item per event) through show()'s kernel side on a
    virtual clock; return what it did. The caller times this call."""
    clock = VirtualClock()
    loop = VirtualLoop(clock)
    real_monotonic = time.monotonic
    # Pyodide's own loop counts as running on its thread; this loop runs inside it, synchronously.
    outer = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    time.monotonic = clock
    source = Arriving(tuple(events), rate)
    try:
        with Wire() as wire:
            state, scheduler = loop.run_until_complete(_show(source, clock))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        time.monotonic = real_monotonic
        loop.close()
        asyncio.events._set_running_loop(outer)
    text = state.text
    return {
        "status": state.status,
        "markdown_bytes": len(text.encode()),
        "text_hash": digest(text),
        "messages": wire.messages,
        "wire_bytes": wire.bytes,
        "frames": scheduler.frames,
        "reads": len(source.reads),
        "stream_s": clock.now - 1_000.0,
    }


def digest(text: str) -> str:
    """A short fingerprint of the answer, to check that every run got all of it."""
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def json_backend() -> str:
    from streamwidgets.core import _json

    return "orjson" if _json.orjson is not None else "json (stdlib)"
