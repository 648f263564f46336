"""Reading a streamed body in gulps: few network reads while the stream flows, and one step per read.

Providers write each event in its own TCP segment and its own HTTP chunk. Read one by one, every
token costs a wake-up of the event loop and a trip through h11 → httpcore → httpx, more kernel
CPU than everything a view does with it. Two things here bound that work by the reads, not by
the events, and neither bounds the bytes:

- **Pacing** (`Pacer`). A view draws at most ~20 frames a second, so while the stream flows,
  a read that did not fill its buffer is followed by a pause of up to `PAUSE` seconds: the
  segments that arrive meanwhile pile up in the socket's receive buffer, and the next read takes
  them all. A pause never lets that buffer fill — a full buffer stops the sender (TCP's flow
  control), and the pause would then cap the bytes, not the wake-ups: the pacer measures how fast
  the bytes come and shortens the pause to what fills a quarter of the buffer (its size is the
  socket's `SO_RCVBUF`, asked after every read, since the kernel grows it; at the first pause
  the socket asks for `RECEIVE_BUFFER`, or a system's default would keep a fast stream's reads
  ~0.1 s apart). A read that filled
  its own buffer is followed by the next one at once. So a slow stream is read ~20 times a
  second and a fast one as fast as it comes, in reads of tens of kilobytes. The first token is
  never held back: after an idle spell (a read that waited longer than `IDLE`: the wait for the
  headers, a pause while the model thinks), `WARM_UP` reads happen at once before pacing starts
  again. A pause only ever delays bytes that arrived right after the previous read. A sink that
  nobody watches (`arun()`, `run()` with no `notify`) wants only the end, and takes
  `UNWATCHED_PAUSE` instead: a quarter of the wake-ups, the same bytes; a cancel or the deadline
  still ends any pause at once. A view's reads follow its frames: a fast answer is drawn a few
  times a second (each frame costs more than the text it carries, `widgets._scheduler.Pace`),
  and reads between two frames are wake-ups that nobody sees, so the view's pause lasts until
  just before its next frame, from `PAUSE` to `UNWATCHED_PAUSE`. The pause comes with the run
  (`net._pipeline.RunOptions.pause`), made by the sink: a number, or a function asked once before
  each paced read (a view's, `widgets._handle.frame_pause`); this layer knows no view.
- **Merging the chunks of a read** (`core._chunked.Reframer`): h11 gets the chunks of each read
  as one, so it, httpcore, httpx and the feed do one step per read.

Both live in the connection's network stream, the interface httpcore is built on: `GulpBackend`
wraps the network backend of the client's connection pools (`_transport.gulp_client`), and each
connection it opens is a `GulpStream`. The reframing is always on (it changes nothing h11
reports); the pacing only while `gulps()` reads a stream's body on it. Nothing else changes:
h11 still reads the heads, the trailers and every error; the read timeout (the stall timeout)
still applies to every read; a cancel during a pause ends it at once, so the connection closes as
fast as before; TLS and proxies go through the same streams.

Why not httpx with aiohttp's transport (`httpx-aiohttp`, whose C parser de-chunks): measured
beside this (`benchmarks/bench_reads.py`), it costs more CPU on a stream of one event per
segment (it hands on a chunk per segment or two), it is asyncio only, it has no network stream
to pace, it reads no proxy from the environment, and its exception map turns aiohttp's
`ClientConnectionError` family (a server that disconnects, among others) into a connect
timeout; this keeps httpx, httpcore and h11 as they are, for a small pure module.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import contextmanager
from typing import Any, Optional, Union

import anyio
import httpcore
import httpx

from ..core import Reframer

__all__ = [
    "Pause",
    "PAUSE",
    "UNWATCHED_PAUSE",
    "IDLE",
    "WARM_UP",
    "MIN_PAUSE",
    "ROOM",
    "GulpBackend",
    "GulpStream",
    "Pacer",
    "gulps",
]

#: Seconds a read waits after one that found little, while the stream flows: the pace a view draws at.
PAUSE = 0.05
#: The same when nobody watches the answer grow (`arun`, `run` with no `notify`): only its end
#: matters, and a cancel or the deadline still ends a pause at once.
UNWATCHED_PAUSE = 0.2
#: A read that waited longer than this for its data ended an idle spell.
IDLE = 0.1
#: Reads at once after an idle spell (the first events and the first token), before pacing.
WARM_UP = 8
#: A pause shorter than this is no pause: the next read starts at once.
MIN_PAUSE = 0.002
#: What a receive buffer is taken to hold when its socket cannot be asked.
ROOM = 64 * 1024
#: The receive buffer a connection's socket asks for once its stream flows (`SO_RCVBUF`, at the
#: first pause; Linux doubles it, up to twice `net.core.rmem_max`). A paced read waits at most
#: until a quarter of what the buffer holds has come; at a system's default (128 KiB, grown only
#: for a reader that keeps up) a fast stream of one small event per TCP segment fills that
#: quarter in ~0.1 s, so a view that draws twice a second was woken ten times a second to read.
#: Not at connect: asked for there, it made the first token late now and then (p95 6 → 13 ms).
RECEIVE_BUFFER = 1024 * 1024
#: Bytes a merged chunk's framing can add to a read (`%x\r\n` and `\r\n`): each read asks for
#: this much less, so that what h11 gets is never more than httpcore asked for.
_FRAMING = 16

#: How long a read may wait while the stream flows: seconds, or a function that says so before each pause.
Pause = Union[float, Callable[[], float]]

SocketOption = Union[tuple[int, int, int], tuple[int, int, Union[bytes, bytearray]], tuple[int, int, None, int]]


class Pacer:
    """When the next read of a flowing stream may start: `wait()` before a read, `read(…)` after
    it. It pauses only after a read that was quick (the data was there) and did not fill its
    buffer, never after an idle spell, and never for longer than the socket's receive buffer
    (`room` bytes) takes to fill a quarter at the rate the bytes have been coming. `reads` and
    `pauses` count what it did."""

    def __init__(
        self,
        *,
        pause: Optional[Pause] = None,
        idle: Optional[float] = None,
        warm_up: Optional[int] = None,
    ) -> None:
        self.pause = PAUSE if pause is None else pause
        self.idle = IDLE if idle is None else idle
        self.warm_up = WARM_UP if warm_up is None else warm_up
        self._quick = 0  # reads in a row that found data without waiting long
        self._full = False  # the last read filled its buffer: more is waiting
        self._rate = 0.0  # bytes a second arriving while the stream flows (smoothed)
        self._room = ROOM  # bytes the socket's receive buffer holds
        self.reads = 0
        self.pauses = 0

    def next_pause(self) -> float:
        """Seconds the next read would wait (0: at once)."""
        if self._quick < self.warm_up or self._full:
            return 0.0
        pause = self.pause() if callable(self.pause) else self.pause
        if self._rate:
            pause = min(pause, self._room / 4 / self._rate)
        return pause if pause >= MIN_PAUSE else 0.0

    async def wait(self, pause: Optional[float] = None) -> None:
        """Pause before a read, for `pause` seconds (`next_pause()` when not given)."""
        if pause is None:
            pause = self.next_pause()
        if pause:
            self.pauses += 1
            await anyio.sleep(pause)

    def read(self, got: int, asked: int, took: float, since: float = 0.0, room: Optional[int] = None) -> None:
        """A read of `asked` bytes brought `got` after waiting `took` seconds for them, `since`
        seconds after the previous read ended (its pause and wait included); the socket's
        receive buffer holds `room` bytes (None: not known)."""
        self.reads += 1
        self._full = got >= asked
        quick = took < self.idle
        self._quick = self._quick + 1 if quick else 0
        if room:
            self._room = room
        if not quick:
            self._rate = 0.0  # an idle spell: the rate is measured anew
        elif since > 0 and got:
            sample = got / since
            self._rate = (self._rate + sample) / 2 if self._rate else sample


class GulpStream(httpcore.AsyncNetworkStream):
    """One connection's network stream: every read reframed (`Reframer`), and paced while a
    `Pacer` is set (`pacing()`)."""

    def __init__(self, stream: httpcore.AsyncNetworkStream, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._frames = Reframer()
        self._socket: Optional[socket.socket] = stream.get_extra_info("socket")
        self._ended = 0.0  # when the previous read ended
        self._grown = False  # the receive buffer was asked to grow (`RECEIVE_BUFFER`)
        self.pacer: Optional[Pacer] = None

    async def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        asked = max(max_bytes - _FRAMING, 1)
        while True:
            pacer = self.pacer
            if pacer is not None:
                pause = pacer.next_pause()  # the sink's pause is asked once per read
                if pause and not self._grown:
                    self._grow()
                await pacer.wait(pause)
            started = self._clock()
            data = await self._stream.read(asked, timeout)
            if pacer is not None:
                ended = self._clock()
                since = ended - self._ended if self._ended else 0.0
                self._ended = ended
                pacer.read(len(data), asked, ended - started, since, self._room())
            if not data:
                return data  # the end of the connection
            out = self._frames.received(data)
            if out:
                return out
            # all of it was framing kept back (half a chunk-size line): an empty read would be the end

    def _grow(self) -> None:
        """The stream flows and its reads begin to pause: its socket asks for `RECEIVE_BUFFER`,
        unless its buffer is that large already (a buffer is never made smaller)."""
        self._grown = True
        if self._socket is None:
            return
        try:
            if self._socket.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) < 2 * RECEIVE_BUFFER:
                self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
        except OSError:
            pass  # a socket that will not say or grow is read as it is

    def _room(self) -> Optional[int]:
        """What the socket's receive buffer holds: half its `SO_RCVBUF` (the kernel counts its own
        bookkeeping in it, and grows it as the connection is read)."""
        if self._socket is None:
            return None
        try:
            return self._socket.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 2
        except OSError:
            return None

    async def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        self._frames.sent(buffer)
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: Optional[str] = None, timeout: Optional[float] = None
    ) -> GulpStream:
        # the bytes so far were in the clear (a proxy's CONNECT): the encrypted ones are a new stream
        return GulpStream(await self._stream.start_tls(ssl_context, server_hostname, timeout), self._clock)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)

    @contextmanager
    def pacing(self, pacer: Pacer) -> Any:
        """Reads paced by `pacer` while it lasts (the body of one response)."""
        self.pacer, self._ended = pacer, 0.0
        try:
            yield pacer
        finally:
            self.pacer = None


class GulpBackend(httpcore.AsyncNetworkBackend):
    """A network backend whose connections are `GulpStream`s (over httpcore's own backend)."""

    def __init__(self, backend: Optional[httpcore.AsyncNetworkBackend] = None) -> None:
        self._backend = backend if backend is not None else httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: Optional[float] = None,
        local_address: Optional[str] = None,
        socket_options: Optional[Iterable[SocketOption]] = None,
    ) -> GulpStream:
        return GulpStream(await self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(
        self, path: str, timeout: Optional[float] = None, socket_options: Optional[Iterable[SocketOption]] = None
    ) -> GulpStream:
        return GulpStream(await self._backend.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


async def gulps(response: httpx.Response, **pacing: Any) -> AsyncIterator[bytes]:
    """`response.aiter_raw()`, its connection's reads paced by a `Pacer` while it lasts.

    Only an HTTP/1.1 connection is paced: it carries this one response until the body ends (an
    HTTP/2 connection may carry other streams, which a pause must not hold back). A connection
    that is no `GulpStream` (a client made elsewhere) is read as it is.
    """
    stream = response.extensions.get("network_stream") if response.http_version == "HTTP/1.1" else None
    if not isinstance(stream, GulpStream):
        async for chunk in response.aiter_raw():
            yield chunk
        return
    with stream.pacing(Pacer(**pacing)):
        async for chunk in response.aiter_raw():
            yield chunk
