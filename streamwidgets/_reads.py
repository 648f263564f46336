"""Reading a streamed body in gulps: fewer, bigger network reads while the stream flows.

Providers write each event in its own TCP segment, and reading them one by one costs a wake-up of
the event loop and a trip through httpx → httpcore → h11 → anyio for every token — more kernel
CPU than everything a view does with them. A view draws at most ~20 frames a second anyway, so
while the stream flows, each network read first waits `PAUSE` seconds: the segments that arrive
meanwhile pile up in the socket, and the one read then takes them all.

The first token is never held back: the reads after an idle spell (a read that waited longer
than `IDLE` for its data, such as the wait for the response headers, or a pause while the model
thinks) happen at once, `WARM_UP` of them, before pacing starts again. A pause only ever delays
bytes that arrived right after the previous read, never the first ones after a wait.

Nothing else changes: h11 still frames the body, the read timeout (the stall timeout) still
applies to every read, and a cancel during a pause ends it at once, so the connection closes
as fast as before. httpx stays the client: the pacing wraps the `read` of the response's
`network_stream` (the extension httpcore hands out for this connection) while the body is read.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Optional

import anyio
import httpx

__all__ = ["PAUSE", "IDLE", "WARM_UP", "Pacer", "gulps"]

#: Seconds each read waits while the stream flows: 20 reads a second at most, the pace a view draws at.
PAUSE = 0.05
#: A read that waited longer than this for its data ended an idle spell.
IDLE = 0.1
#: Reads at once after an idle spell (the first events and the first token), before pacing.
WARM_UP = 8

Read = Callable[..., Awaitable[bytes]]


class Pacer:
    """Wraps a network stream's `read(max_bytes, timeout)`: pauses before each read while the
    stream flows, never after an idle spell. `reads` and `pauses` count what it did."""

    def __init__(
        self,
        read: Read,
        *,
        pause: Optional[float] = None,
        idle: Optional[float] = None,
        warm_up: Optional[int] = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._pause = PAUSE if pause is None else pause
        self._idle = IDLE if idle is None else idle
        self._warm_up = WARM_UP if warm_up is None else warm_up
        self._clock = clock
        self._quick = 0  # reads in a row that found data without waiting long
        self.reads = 0
        self.pauses = 0

    async def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        if self._quick >= self._warm_up:
            self.pauses += 1
            await anyio.sleep(self._pause)
        started = self._clock()
        data = await self._read(max_bytes, timeout)
        self.reads += 1
        self._quick = self._quick + 1 if self._clock() - started < self._idle else 0
        return data


async def gulps(response: httpx.Response, **pacing: Any) -> AsyncIterator[bytes]:
    """`response.aiter_raw()`, with the connection's reads paced by a `Pacer` while it lasts.

    Only an HTTP/1.1 connection is paced: it carries this one response until the body ends. (An
    HTTP/2 connection may carry other streams, which a pause must not hold back.) Without a
    network stream to pace, it is `aiter_raw()` as it is.
    """
    stream: Any = response.extensions.get("network_stream") if response.http_version == "HTTP/1.1" else None
    paced: Optional[Read] = None
    if stream is not None and callable(getattr(stream, "read", None)):
        try:
            stream.read = paced = Pacer(stream.read, **pacing).read
        except AttributeError:  # a stream class that takes no attributes: read it as it is
            paced = None
    try:
        async for chunk in response.aiter_raw():
            yield chunk
    finally:
        if paced is not None and vars(stream).get("read") is paced:
            del stream.read  # the class's own read again, for the next request on this connection
