"""The network edge: HTTP/1.1 over asyncio streams, parsed and framed by h11.

Streams are sent with `Transfer-Encoding: chunked` on keep-alive connections, as real providers
do. While a stream is written, a second task waits on the socket for end-of-file, so that a
client that leaves is noticed at once, even while the stream sleeps between tokens or stalls
forever, and generation stops there. Frames are paced on a token clock computed from the start
of the stream (never by sleeping a fixed time per token), so high rates stay accurate: frames
that fall due within a couple of milliseconds are written together.

The server runs in the user's kernel and anything on the machine can connect to it (on a shared
JupyterHub host, every other user too), so every connection is bounded (`ServerLimits`): its
headers (at most `max_headers` bytes, exactly) and its body must arrive in time, an idle
keep-alive connection is closed, a body has a size limit, a client that stops reading its answer
is dropped once `write_timeout` passes without progress, and only so many connections are served
at once. When they are all taken, a new connection takes the slot of the one that has been
sending its headers longest (else its body, else of the longest-idle keep-alive one), so that
clients that trickle half a request and reconnect cannot starve the others; only when every slot
is answering a request is the newcomer told 503. The kernel's send buffer of each connection is
kept small, so that a client that reads nothing is found out soon and costs little. Whatever a request holds, it gets an answer: a bad one a
4xx JSON error in its route's envelope, never a dropped connection. The request's headers are
checked (`_guard`) before its body is read, and the body is parsed in a worker thread, so that
no request, however large or odd, holds up the streams of the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, replace
from typing import Any, Optional

import h11

from ._guard import cors_headers, refusal, too_large
from ._play import Chunk, answer, play
from ._records import Registry
from ._replies import JsonReply, Rejection, Reply, Router, SilentReply, StreamReply

__all__ = ["ConnectionHandler", "ServerLimits"]

_READ_SIZE = 65536
#: After refusing a request whose bytes may still be arriving, read (and drop) them this long,
#: so that closing does not reset the connection before the client has read the answer.
_LINGER = 1.0
#: Bytes the kernel may hold for one client (`SO_SNDBUF`; Linux doubles it). Left to itself it
#: grows to megabytes per connection, so a client that reads nothing would cost that much kernel
#: memory and be found out only once all of it is full; loopback needs far less to stream fast.
_SEND_BUFFER = 128 * 1024
#: Bytes a client must take in `write_timeout` seconds, while more waits for it, to count as reading.
_PROGRESS = 64 * 1024
_SERVER_HEADER = ("server", "streamwidgets-demo")


@dataclass(frozen=True)
class ServerLimits:
    """What one connection may take; the defaults are far beyond what any SDK or notebook needs
    on loopback and are documented in `docs/embedded-server.md`."""

    #: Seconds from a connection's start (or a request's first byte) to the end of its headers.
    header_timeout: float = 10.0
    #: Seconds from the end of the headers to the end of the body.
    body_timeout: float = 30.0
    #: Seconds a keep-alive connection may wait for its next request before it is closed.
    idle_timeout: float = 30.0
    #: Connections served at once; one more is answered 503 and closed.
    max_connections: int = 128
    #: Bytes of one request body (413 beyond); a body is only ever read up to four times this.
    max_body: int = 8 * 1024 * 1024
    #: Bytes of one request's headers (the request line, the header lines and the blank line).
    max_headers: int = 64 * 1024
    #: Seconds a client may take less than 64 KiB of what waits for it (its socket full) before it
    #: is dropped: a stream no one reads must not hold a connection and its buffers.
    write_timeout: float = 30.0


@dataclass(frozen=True)
class _Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    #: Why the request is refused before it is routed (found from its headers or its size).
    refused: Optional[Rejection] = None


class _ClientLeft(Exception):
    """The peer closed its end (or reset the connection)."""


class _NotReading(_ClientLeft):
    """The peer read nothing of what was written to it for `write_timeout` seconds."""


@dataclass(eq=False)
class _Slot:
    """One connection being served: what it is doing (`head` or `body`: that part of its request
    is still arriving, `idle`: kept alive between requests, `busy`: answering), and since when."""

    conn: h11.Connection
    writer: asyncio.StreamWriter
    phase: str
    since: float
    evicted: bool = False

    def enter(self, phase: str) -> None:
        self.phase, self.since = phase, asyncio.get_running_loop().time()


class _Outlet:
    """Where one answer's bytes are written and wait until the client takes them. A client that
    does not is dropped (`_NotReading`): one that took less than `_PROGRESS` bytes in `timeout`
    seconds while more was waiting for it.

    Waiting for `drain()` with a timeout would not do: the kernel of a client that reads nothing
    still accepts a few bytes now and then (it compacts its receive queue), so each `drain()` ends
    eventually, and the stream would hold its connection and its buffers for good. A client that
    reads, however slowly, lets the kernel take far more than that, and the clock starts over.
    """

    def __init__(self, writer: asyncio.StreamWriter, timeout: float) -> None:
        self.writer = writer
        self.timeout = timeout
        #: Bytes handed to the transport (what it held already counts as handed).
        self.written = writer.transport.get_write_buffer_size()
        #: Since when bytes have waited, and how much the kernel had taken then (None: none wait).
        self.waiting: Optional[tuple[float, int]] = None

    def write(self, data: bytes) -> None:
        self.writer.write(data)
        self.written += len(data)

    async def drain(self) -> None:
        transport = self.writer.transport
        size = transport.get_write_buffer_size()
        taken = self.written - size
        now = asyncio.get_running_loop().time()
        if size == 0:
            self.waiting = None
        elif self.waiting is None or taken - self.waiting[1] >= _PROGRESS:
            self.waiting = (now, taken)
        if self.waiting is None or size <= transport.get_write_buffer_limits()[1]:
            await self.writer.drain()  # at once: pausing starts above the high-water mark
            return
        left = self.waiting[0] + self.timeout - now
        try:
            if left <= 0:
                raise asyncio.TimeoutError()
            await asyncio.wait_for(self.writer.drain(), left)
        except asyncio.TimeoutError:
            if self.written - transport.get_write_buffer_size() - self.waiting[1] < _PROGRESS:
                raise _NotReading() from None
            await self.drain()  # it took enough meanwhile: the clock starts over


class _Late(Exception):
    """The request did not arrive in time; `rejection` says which part (None when the connection
    was idle), `target` is the request's target once its headers came."""

    def __init__(self, rejection: Optional[Rejection], target: str) -> None:
        self.rejection = rejection
        self.target = target


class ConnectionHandler:
    """Serves the requests of one server's connections; one call of `serve` per connection."""

    def __init__(
        self, router: Router, registry: Registry, limits: ServerLimits, allow_origins: Collection[str] = ()
    ) -> None:
        self._router = router
        self._registry = registry
        self._limits = limits
        self._allow_origins = frozenset(allow_origins)
        self._slots: set[_Slot] = set()
        #: Bytes a client may send while its answer is written (the next request, pipelined).
        self._flood = limits.max_headers + limits.max_body

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self._limits.max_headers)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SEND_BUFFER)
        if len(self._slots) >= self._limits.max_connections and not self._evict_one():
            try:
                await self._refuse(conn, reader, writer, "", _busy(len(self._slots)))
            except (_ClientLeft, ConnectionError):
                writer.transport.abort()
            finally:
                writer.close()
            return
        slot = _Slot(conn, writer, "head", asyncio.get_running_loop().time())
        self._slots.add(slot)
        graceful = False
        try:
            fresh = True
            while True:
                try:
                    request = await self._read_request(slot, reader, fresh)
                except _Late as late:
                    if late.rejection is not None:
                        await self._refuse(conn, reader, writer, late.target, late.rejection)
                    graceful = True
                    return
                except h11.RemoteProtocolError as exc:
                    # h11's own message quotes the offending bytes, which may be a header with a key.
                    await self._refuse(conn, reader, writer, "", _malformed(exc.error_status_hint, self._limits))
                    graceful = True
                    return
                if request is None:
                    graceful = True
                    return
                cors = cors_headers(request.method, request.headers, self._allow_origins)
                if cors and request.method == "OPTIONS" and request.refused is None:
                    reply: Reply = JsonReply(204, b"")  # a preflight from a page let in by name
                else:
                    reply = await self._answer(request)
                if cors and not isinstance(reply, SilentReply):
                    reply = replace(reply, headers=(*reply.headers, *cors))
                keep_alive = await self._reply(conn, reader, writer, reply)
                if not keep_alive or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    if conn.their_state is h11.SEND_BODY:
                        await self._linger(reader, writer)
                    graceful = True
                    return
                conn.start_next_cycle()
                fresh = False
        except (_ClientLeft, ConnectionError, h11.ProtocolError):
            return
        finally:
            self._slots.discard(slot)
            # A graceful close sends what is still buffered (a scripted cut-off's last frames),
            # then FIN; a vanished client, one that reads nothing or a stopping server gets no
            # such courtesy.
            if slot.evicted:
                pass  # closing already, for the connection that took its slot
            elif graceful:
                await self._close(writer)
            else:
                writer.transport.abort()

    def _evict_one(self) -> bool:
        """Free a slot for a new connection: close the one that has been sending its headers
        longest, else its body, with a 408; else the longest-idle kept-alive one, quietly. False
        if every slot is answering a request."""
        for phase in ("head", "body", "idle"):
            waiting = [slot for slot in self._slots if slot.phase == phase]
            if not waiting:
                continue
            slot = min(waiting, key=lambda s: s.since)
            self._slots.discard(slot)
            slot.evicted = True
            if phase != "idle" and slot.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                rejection = Rejection(
                    408,
                    f"The request {'headers' if phase == 'head' else 'body'} did not arrive before the demo server "
                    "needed this connection for another client (it serves only so many at once); the connection "
                    "is closed.",
                    type="timeout_error",
                    code="request_timeout",
                    anthropic_type="timeout_error",
                )
                _write_json(
                    slot.conn, slot.writer, self._router.refuse("", rejection, secrets.token_hex(12)), close=True
                )
            # Half-close now and close a moment later: closing with unread bytes would reset the
            # connection, and the client would lose the answer. The close wakes its handler.
            transport = slot.writer.transport
            try:
                transport.write_eof()
            except OSError:  # the client is gone already
                transport.abort()
            else:
                asyncio.get_running_loop().call_later(_LINGER, transport.abort)
            return True
        return False

    async def _close(self, writer: asyncio.StreamWriter) -> None:
        """Close after what is buffered was sent, or abort if the client will not take it."""
        writer.close()
        try:
            await asyncio.wait_for(writer.wait_closed(), self._limits.write_timeout)
        except (asyncio.TimeoutError, ConnectionError, OSError):
            writer.transport.abort()

    async def _drain(self, writer: asyncio.StreamWriter) -> None:
        """Wait until the client took what was written, at most `write_timeout` seconds."""
        await _Outlet(writer, self._limits.write_timeout).drain()

    async def _answer(self, request: _Request) -> Reply:
        """The reply to a whole request. Parsing and scripting run in a worker thread: a body of
        megabytes takes a moment to read, and the loop must keep streaming meanwhile."""
        nonce = secrets.token_hex(12)
        if request.refused is not None:
            return self._router.refuse(request.target, request.refused, nonce)
        return await asyncio.to_thread(
            answer,
            self._router,
            request.method,
            request.target,
            request.headers,
            request.body,
            now=time.time(),
            nonce=nonce,
        )

    # -------------------------------------------------------------- reading

    async def _read_request(self, slot: _Slot, reader: asyncio.StreamReader, fresh: bool) -> Optional[_Request]:
        """The next whole request, None when the client closed between requests (or its slot was
        given to another client). Raises `_Late` when a part of it does not arrive in time."""
        conn, writer, limits = slot.conn, slot.writer, self._limits
        loop = asyncio.get_running_loop()
        # A new connection must send its headers in time; a kept-alive one may first stay idle.
        waiting = "head" if fresh else "idle"
        slot.enter(waiting)
        deadline = loop.time() + (limits.header_timeout if fresh else limits.idle_timeout)
        head: Optional[h11.Request] = None
        headers: dict[str, str] = {}
        body = bytearray()
        refused: Optional[Rejection] = None
        received = 0
        # Bytes of this request's headers seen so far: h11 only bounds headers that are still
        # incomplete, so headers that arrive whole in one read are measured here.
        head_bytes = len(conn.trailing_data[0])
        local = writer.get_extra_info("sockname")[:2]
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = await asyncio.wait_for(reader.read(_READ_SIZE), max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    raise _Late(_late(waiting, limits), "" if head is None else head.target.decode("latin-1")) from None
                if slot.evicted:
                    return None
                if head is None:
                    head_bytes += len(data)
                conn.receive_data(data)
                if not data and conn.their_state is h11.IDLE:
                    return None
                if waiting == "idle" and data:
                    waiting, deadline = "head", loop.time() + limits.header_timeout
                    slot.enter("head")
            elif isinstance(event, h11.Request):
                head = event
                slot.enter("body")
                if head_bytes - len(conn.trailing_data[0]) > limits.max_headers:
                    raise h11.RemoteProtocolError("headers too large", error_status_hint=431)
                pairs = [(name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in head.headers]
                headers = dict(pairs)
                target = head.target.decode("latin-1")
                refused = refusal(
                    head.method.decode("ascii"),
                    target,
                    pairs,
                    local=local,
                    max_body=limits.max_body,
                    allow_origins=self._allow_origins,
                )
                if refused is not None and refused.close:
                    break  # answered at once; nothing the client sends after it is read
                if conn.they_are_waiting_for_100_continue:
                    if refused is not None:
                        break  # answered before the client sends its body
                    writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
                waiting, deadline = "body", loop.time() + limits.body_timeout
            elif isinstance(event, h11.Data):
                received += len(event.data)
                if refused is None and received > limits.max_body:
                    refused, body = too_large(limits.max_body), bytearray()
                if refused is None:
                    body += event.data
                elif received > 4 * limits.max_body:
                    break  # enough read to answer; the rest of the connection is given up
            elif isinstance(event, h11.EndOfMessage):
                break
            else:  # ConnectionClosed, or PAUSED (the peer sent more than one request at once)
                return None
        assert head is not None
        slot.enter("busy")
        return _Request(head.method.decode("ascii"), head.target.decode("latin-1"), headers, bytes(body), refused)

    async def _refuse(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        target: str,
        rejection: Rejection,
    ) -> None:
        """Answer `rejection` and end the connection (the caller closes it), reading for a moment
        what the client may still be sending, so that it gets to read the answer."""
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        _write_json(conn, writer, self._router.refuse(target, rejection, secrets.token_hex(12)), close=True)
        await self._linger(reader, writer)

    async def _linger(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Send what is buffered and half-close, then drop what the client still sends for a
        moment: closing with unread bytes would reset the connection, and with it the answer."""
        await self._drain(writer)
        try:
            writer.write_eof()
            await asyncio.wait_for(_discard(reader, 4 * self._limits.max_body), _LINGER)
        except (asyncio.TimeoutError, ConnectionError, OSError):
            pass

    # -------------------------------------------------------------- replying

    async def _reply(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: Reply
    ) -> bool:
        """Carry out `reply`; False when the connection must close afterwards."""
        if isinstance(reply, JsonReply):
            if reply.delay > 0:
                await self._until_gone_or(reader, conn, asyncio.sleep(reply.delay))
            # A request refused before its body was read cannot be followed by another one.
            _write_json(conn, writer, reply, close=conn.their_state is not h11.DONE)
            await self._drain(writer)
            return True
        if isinstance(reply, SilentReply):
            if reply.action == "hang":
                await self._until_gone_or(reader, conn, asyncio.Event().wait())
            return False
        return await self._stream(conn, reader, writer, reply)

    async def _until_gone_or(self, reader: asyncio.StreamReader, conn: h11.Connection, work: Awaitable[Any]) -> None:
        """Await `work` unless the client leaves first (then raise `_ClientLeft`)."""
        watcher = asyncio.ensure_future(_watch(reader, conn, self._flood))
        job = asyncio.ensure_future(work)
        try:
            await asyncio.wait({watcher, job}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await _cancel(watcher, job)
        if watcher.done() and not watcher.cancelled():
            raise _ClientLeft()

    async def _stream(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: StreamReply
    ) -> bool:
        record = self._registry.open(
            path=reply.path, api=reply.api, flavor=reply.flavor, model=reply.model, scenario=reply.scenario
        )
        try:
            writer.write(
                conn.send(h11.Response(status_code=200, headers=[*reply.headers, _SERVER_HEADER], reason=b"OK"))
            )
            watcher = asyncio.ensure_future(
                _watch(reader, conn, self._flood, lambda: self._registry.close(record, "client_disconnected"))
            )
            outlet = _Outlet(writer, self._limits.write_timeout)
            streamer = asyncio.ensure_future(_send(conn, reply, self._registry, record, outlet))
            try:
                await asyncio.wait({watcher, streamer}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                await _cancel(watcher, streamer)
            if streamer.done() and not streamer.cancelled() and isinstance(streamer.exception(), _NotReading):
                self._registry.close(record, "client_not_reading")
                raise _NotReading()
            if not streamer.done() or streamer.cancelled() or streamer.exception() is not None:
                self._registry.close(record, "client_disconnected")
                return False
            outcome = streamer.result()
            self._registry.close(record, "finished")
            return outcome == "finished"
        except asyncio.CancelledError:
            # Only a stop of the whole server cancels a connection task.
            self._registry.close(record, "server_stopped")
            raise


def _late(waiting: str, limits: ServerLimits) -> Optional[Rejection]:
    """What to answer a request that did not arrive in time (nothing to an idle connection)."""
    if waiting == "idle":
        return None
    part, seconds = ("headers", limits.header_timeout) if waiting == "head" else ("body", limits.body_timeout)
    return Rejection(
        408,
        f"The request {part} did not arrive within {seconds:g} s; the connection is closed.",
        type="timeout_error",
        code="request_timeout",
        anthropic_type="timeout_error",
    )


def _busy(serving: int) -> Rejection:
    return Rejection(
        503,
        f"The demo server is already serving {serving} connections; try again in a moment.",
        type="server_error",
        code="too_many_connections",
        anthropic_type="overloaded_error",
        retry_after=1,
    )


def _malformed(status: int, limits: ServerLimits) -> Rejection:
    if status == 431:
        message = f"The request headers are larger than this demo server accepts ({limits.max_headers:,} bytes)."
        return Rejection(431, message, code="headers_too_large")
    return Rejection(status, "Malformed HTTP request.", code="malformed_http")


def _write_json(conn: h11.Connection, writer: asyncio.StreamWriter, reply: JsonReply, *, close: bool) -> None:
    headers = [
        *reply.headers,
        ("content-length", str(len(reply.body))),
        *([("connection", "close")] if close else []),
        _SERVER_HEADER,
    ]
    writer.write(conn.send(h11.Response(status_code=reply.status, headers=headers, reason=_reason(reply.status))))
    writer.write(conn.send(h11.Data(data=reply.body)))
    writer.write(conn.send(h11.EndOfMessage()))


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode("ascii")
    except ValueError:  # 529, which only some providers use
        return b""


async def _discard(reader: asyncio.StreamReader, limit: int) -> None:
    """Read and drop what the peer sends until it closes its end or `limit` bytes came."""
    while limit > 0:
        data = await reader.read(_READ_SIZE)
        if not data:
            return
        limit -= len(data)


async def _cancel(*tasks: asyncio.Future[Any]) -> None:
    """Cancel `tasks` and wait until they are really over (a cancelled read still holds the
    reader until its task has run once more)."""
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks)


async def _watch(
    reader: asyncio.StreamReader, conn: h11.Connection, limit: int, on_gone: Optional[Callable[[], None]] = None
) -> None:
    """Return when the peer closes its end; bytes it sends meanwhile (a pipelined request) are
    handed to h11 for the next cycle, up to `limit` bytes (a peer that sends more is treated as
    gone). `on_gone` runs the instant end-of-file is seen."""
    received = 0
    while True:
        try:
            data = await reader.read(_READ_SIZE)
        except ConnectionError:
            data = b""
        received += len(data)
        if not data or received > limit:
            if on_gone is not None:
                on_gone()
            return
        conn.receive_data(data)


async def _send(conn: h11.Connection, reply: StreamReply, registry: Registry, record: int, outlet: _Outlet) -> str:
    """Write one stream as it is played (`_play.play`); `finished`, or `cutoff` when the
    connection must close."""
    played = play(reply)
    try:
        async for step in played:
            if isinstance(step, Chunk):
                if step.data:
                    outlet.write(conn.send(h11.Data(data=step.data)))
                if step.data or step.tokens:
                    registry.progress(record, data=len(step.data), tokens=step.tokens)
                await outlet.drain()
                # drain() does not yield while the buffer is low: let the watcher and other streams run.
                await asyncio.sleep(0)
            elif step.how == "finished":
                outlet.write(conn.send(h11.EndOfMessage()))
                await outlet.drain()
                return "finished"
            else:
                if step.how == "cutoff":
                    outlet.write(conn.send(h11.EndOfMessage()))
                return "cutoff"
    finally:
        await played.aclose()
    raise AssertionError("a played stream always ends with its Ending")
