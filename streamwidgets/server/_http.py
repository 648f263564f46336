"""The network edge: HTTP/1.1 over asyncio streams, parsed and framed by h11.

Streams are sent with `Transfer-Encoding: chunked` on keep-alive connections, as real providers
do. While a stream is written, a second task waits on the socket for end-of-file, so that a
client that leaves is noticed at once, even while the stream sleeps between tokens or stalls
forever, and generation stops there. Frames are paced on a token clock computed from the start
of the stream (never by sleeping a fixed time per token), so high rates stay accurate: frames
that fall due within a couple of milliseconds are written together.
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, Optional

import h11

from ._frames import Cutoff, Frame, Stall
from ._records import Registry
from ._routes import JsonReply, Reply, Router, SilentReply, StreamReply

__all__ = ["ConnectionHandler"]

_READ_SIZE = 65536
_MAX_BODY = 32 * 1024 * 1024
_MAX_HEADERS = 64 * 1024
#: Frames due this soon are written now, together, instead of sleeping below the clock's grain.
_SLACK = 0.002
#: Write out what is pending once it reaches this size (and let other connections run).
_FLUSH_BYTES = 32 * 1024
_SERVER_HEADER = ("server", "streamwidgets-demo")


class _ClientLeft(Exception):
    """The peer closed its end (or reset the connection)."""


class ConnectionHandler:
    """Serves the requests of one server's connections; one call of `serve` per connection."""

    def __init__(self, router: Router, registry: Registry) -> None:
        self._router = router
        self._registry = registry

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEADERS)
        graceful = False
        try:
            while True:
                request = await self._read_request(conn, reader, writer)
                if request is None:
                    graceful = True
                    return
                method, target, headers, body = request
                reply = self._router.route(method, target, headers, body, now=time.time(), nonce=secrets.token_hex(12))
                keep_alive = await self._reply(conn, reader, writer, reply)
                if not keep_alive or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    graceful = True
                    return
                conn.start_next_cycle()
        except (_ClientLeft, ConnectionError, h11.ProtocolError):
            return
        finally:
            # A graceful close sends what is still buffered (a scripted cut-off's last frames),
            # then FIN; a vanished client or a stopping server gets no such courtesy.
            if graceful:
                writer.close()
            else:
                writer.transport.abort()

    # -------------------------------------------------------------- reading

    async def _read_request(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> Optional[tuple[str, str, dict[str, str], bytes]]:
        head: Optional[h11.Request] = None
        body = bytearray()
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                # h11's own message quotes the offending bytes, which may be a header with a key.
                await self._send_plain_error(conn, writer, exc.error_status_hint, "Malformed HTTP request.")
                return None
            if event is h11.NEED_DATA:
                data = await reader.read(_READ_SIZE)
                conn.receive_data(data)
                if not data and conn.their_state is h11.IDLE:
                    return None
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > _MAX_BODY:
                    await self._send_plain_error(conn, writer, 413, "The request body is too large.")
                    return None
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in head.headers}
                return head.method.decode("ascii"), head.target.decode("latin-1"), headers, bytes(body)
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None

    async def _send_plain_error(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, status: int, message: str
    ) -> None:
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
        body = json.dumps({"error": error}).encode()
        headers = [
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
            ("connection", "close"),
            _SERVER_HEADER,
        ]
        writer.write(conn.send(h11.Response(status_code=status, headers=headers)))
        writer.write(conn.send(h11.Data(data=body)))
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()

    # -------------------------------------------------------------- replying

    async def _reply(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: Reply
    ) -> bool:
        """Carry out `reply`; False when the connection must close afterwards."""
        if isinstance(reply, JsonReply):
            if reply.delay > 0:
                await self._until_gone_or(reader, conn, asyncio.sleep(reply.delay))
            headers = [*reply.headers, ("content-length", str(len(reply.body))), _SERVER_HEADER]
            writer.write(conn.send(h11.Response(status_code=reply.status, headers=headers)))
            writer.write(conn.send(h11.Data(data=reply.body)))
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
            return True
        if isinstance(reply, SilentReply):
            if reply.action == "hang":
                await self._until_gone_or(reader, conn, asyncio.Event().wait())
            return False
        return await self._stream(conn, reader, writer, reply)

    async def _until_gone_or(self, reader: asyncio.StreamReader, conn: h11.Connection, work: Awaitable[Any]) -> None:
        """Await `work` unless the client leaves first (then raise `_ClientLeft`)."""
        watcher = asyncio.ensure_future(_watch(reader, conn))
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
        script = reply.script
        record = self._registry.open(
            path=reply.path, api=reply.api, flavor=reply.flavor, model=script.model, scenario=script.scenario
        )
        try:
            writer.write(conn.send(h11.Response(status_code=200, headers=[*reply.headers, _SERVER_HEADER])))
            watcher = asyncio.ensure_future(
                _watch(reader, conn, lambda: self._registry.close(record, "client_disconnected"))
            )
            streamer = asyncio.ensure_future(_Pacer(conn, writer, reply, self._registry, record).run())
            try:
                await asyncio.wait({watcher, streamer}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                await _cancel(watcher, streamer)
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


async def _cancel(*tasks: asyncio.Future[Any]) -> None:
    """Cancel `tasks` and wait until they are really over (a cancelled read still holds the
    reader until its task has run once more)."""
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks)


async def _watch(
    reader: asyncio.StreamReader, conn: h11.Connection, on_gone: Optional[Callable[[], None]] = None
) -> None:
    """Return when the peer closes its end; bytes it sends meanwhile (a pipelined request) are
    handed to h11 for the next cycle. `on_gone` runs the instant end-of-file is seen."""
    while True:
        try:
            data = await reader.read(_READ_SIZE)
        except ConnectionError:
            data = b""
        if not data:
            if on_gone is not None:
                on_gone()
            return
        conn.receive_data(data)


class _Pacer:
    """Writes one stream's frames on the token clock, with heartbeats while waiting."""

    def __init__(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, reply: StreamReply, registry: Registry, record: int
    ) -> None:
        self.conn = conn
        self.writer = writer
        self.reply = reply
        self.registry = registry
        self.record = record
        self.loop = asyncio.get_running_loop()
        self.pending: list[bytes] = []
        self.pending_size = 0
        self.pending_tokens = 0
        self.tokens = 0
        self.last_write = self.loop.time()

    async def run(self) -> str:
        """Write the whole stream; `finished`, or `cutoff` when the connection must close."""
        pacing = self.reply.pacing
        start = self.loop.time()
        rate = pacing.tokens_per_second
        for step in self.reply.steps:
            if isinstance(step, Frame):
                if step.tokens or step.on_clock:
                    position = self.tokens + max(step.tokens - 1, 0)
                    due = start + pacing.first_token_delay + (position / rate if rate > 0 else 0.0)
                    if due - self.loop.time() > _SLACK:
                        await self.flush()
                        await self.wait_until(due)
                if step.data:
                    self.pending.append(step.data)
                    self.pending_size += len(step.data)
                self.tokens += step.tokens
                self.pending_tokens += step.tokens
                if self.pending_size >= _FLUSH_BYTES:
                    await self.flush()
            elif isinstance(step, Stall):
                await self.flush()
                await self.wait_until(math.inf)
            elif isinstance(step, Cutoff):
                await self.flush()
                if not step.abort:
                    self.writer.write(self.conn.send(h11.EndOfMessage()))
                return "cutoff"
        await self.flush()
        self.writer.write(self.conn.send(h11.EndOfMessage()))
        await self.writer.drain()
        return "finished"

    async def flush(self) -> None:
        if self.pending or self.pending_tokens:
            data = b"".join(self.pending)
            if data:
                self.writer.write(self.conn.send(h11.Data(data=data)))
                self.last_write = self.loop.time()
            self.registry.progress(self.record, data=len(data), tokens=self.pending_tokens)
            self.pending.clear()
            self.pending_size = self.pending_tokens = 0
        await self.writer.drain()
        # drain() does not yield while the buffer is low: let the watcher and other streams run.
        await asyncio.sleep(0)

    async def wait_until(self, due: float) -> None:
        """Sleep until `due`, writing the flavor's heartbeat after each `keepalive_interval` of silence."""
        interval = self.reply.pacing.keepalive_interval
        while True:
            now = self.loop.time()
            if now >= due:
                return
            beating = interval > 0 and (self.reply.heartbeat_mode == "silence" or self.tokens == 0)
            beat_at = self.last_write + interval if beating else math.inf
            if beat_at < due:
                await asyncio.sleep(max(0.0, beat_at - now))
                self.pending.append(self.reply.heartbeat)
                self.pending_size += len(self.reply.heartbeat)
                await self.flush()
            elif math.isinf(due):
                await asyncio.Event().wait()  # silence until the client leaves or the server stops
            else:
                await asyncio.sleep(due - now)
                return
