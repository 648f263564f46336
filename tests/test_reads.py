"""The gulp reader (`streamwidgets/_reads.py`) over real loopback sockets.

A small scripted server writes each SSE event in its own TCP segment (`TCP_NODELAY`, one `send`
per event, chunked), as providers do, and logs when it sent what and when the client went away.
The reader must deliver every byte in order, read fewer times than there are segments while the
stream flows, never hold back the first bytes after an idle spell, stop at once when cancelled
(even in the middle of a pause), and leave the stall timeout working. Time bounds are generous
and the pauses are made long where a bound must tell a pause from none.
"""

from __future__ import annotations

import asyncio
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Optional

import httpx
import pytest

from streamwidgets._reads import gulps
from streamwidgets.client import make_request, stream_into
from streamwidgets.state import StreamState


def event(text: str) -> bytes:
    payload = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
    data = b"data: " + json.dumps(payload).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


DONE = b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"


@dataclass
class Script:
    """(seconds to wait before it, bytes) per send; `hang` keeps the body open after the last."""

    sends: list[tuple[float, bytes]]
    hang: bool = False
    sent_at: list[float] = field(default_factory=list)
    disconnected_at: Optional[float] = None
    done: threading.Event = field(default_factory=threading.Event)


class SegmentServer:
    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.scripts: list[Script] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def expect(self, script: Script) -> Script:
        self.scripts.append(script)
        return script

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn, self.scripts.pop(0)), daemon=True).start()

    def _serve(self, conn: socket.socket, script: Script) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            head, _, body = request.partition(b"\r\n\r\n")
            length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
            while len(body) < length:
                body += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            for delay, data in script.sends:
                if self._gone(conn, delay):
                    return
                conn.sendall(data)
                script.sent_at.append(time.monotonic())
            while script.hang or conn.recv(4096):
                if self._gone(conn, 0.05):
                    return
        except OSError:
            script.disconnected_at = script.disconnected_at or time.monotonic()
        finally:
            conn.close()
            script.done.set()

    @staticmethod
    def _gone(conn: socket.socket, wait: float) -> bool:
        """Wait `wait` seconds, watching for the client to close (seen the moment it does)."""
        deadline = time.monotonic() + wait
        while True:
            left = deadline - time.monotonic()
            readable, _, _ = select.select([conn], [], [], max(left, 0))
            if readable and not conn.recv(4096):
                raise ConnectionResetError
            if left <= 0:
                return False

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def server() -> Iterator[SegmentServer]:
    s = SegmentServer()
    yield s
    s.close()


def flowing(count: int, every: float = 0.001) -> list[tuple[float, bytes]]:
    return [(every, event(f"t{i} ")) for i in range(count)]


async def read_body(url: str, reads: list[float], arrivals: list[tuple[float, bytes]], **pacing) -> bytes:
    """The body through `gulps`, counting the real network reads beneath it."""
    async with httpx.AsyncClient() as http, http.stream("POST", url + "/chat/completions", json={}) as response:
        stream = response.extensions["network_stream"]
        real_read = stream.read

        async def counted(max_bytes: int, timeout: Optional[float] = None) -> bytes:
            data = await real_read(max_bytes, timeout)
            reads.append(time.monotonic())
            return data

        stream.read = counted
        body = b""
        async for chunk in gulps(response, **pacing):
            arrivals.append((time.monotonic(), chunk))
            body += chunk
        return body


def test_every_byte_arrives_in_order_in_fewer_reads(server):
    script = server.expect(Script([*flowing(1500, every=0.0005), (0, DONE)]))
    reads: list[float] = []
    body = asyncio.run(read_body(server.url, reads, []))
    events = [data for _, data in script.sends]
    expected = b"".join(e.split(b"\r\n", 1)[1].rsplit(b"\r\n", 1)[0] for e in events[:-1]) + b"data: [DONE]\n\n"
    assert body == expected
    assert len(reads) < len(events) / 4, f"{len(reads)} reads for {len(events)} segments"


def test_whole_answer_through_stream_into(server):
    server.expect(Script([*flowing(800, every=0.0005), (0, DONE)]))
    state = asyncio.run(stream_into(make_request("q", model="m", base_url=server.url), StreamState()))
    assert state.status == "complete", state.message
    assert state.text == "".join(f"t{i} " for i in range(800))


def test_first_bytes_after_an_idle_spell_are_not_held_back(server):
    # the first token 0.3 s after the headers, a flowing burst, an idle second, then one more
    script = server.expect(Script([(0.3, event("first ")), *flowing(60), (1.0, event("after ")), (0.3, DONE)]))
    arrivals: list[tuple[float, bytes]] = []
    asyncio.run(read_body(server.url, [], arrivals, pause=0.5))
    first = next(t for t, chunk in arrivals if b"first" in chunk)
    after = next(t for t, chunk in arrivals if b"after" in chunk)
    assert first - script.sent_at[0] < 0.25  # a pause (0.5 s) would have held it back
    assert after - script.sent_at[61] < 0.25


def test_a_flowing_stream_is_paced(server):
    # the pause is what groups segments: with a long one, the burst arrives in few reads
    server.expect(Script([*flowing(200, every=0.002), (0, DONE)]))
    reads: list[float] = []
    arrivals: list[tuple[float, bytes]] = []
    asyncio.run(read_body(server.url, reads, arrivals, pause=0.1, warm_up=3))
    assert len(reads) < 40, len(reads)  # 0.4 s of stream, a read every ~0.1 s after the first few


def test_cancel_in_a_pause_closes_the_connection_at_once(server):
    script = server.expect(Script(flowing(5000, every=0.002), hang=True))

    async def main() -> float:
        arrivals: list[tuple[float, bytes]] = []
        task = asyncio.ensure_future(read_body(server.url, [], arrivals, pause=3.0, warm_up=2))
        while len(arrivals) < 5:  # past the warm-up: the reader is now in a 3 s pause
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        cancelled = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cancelled

    cancelled = asyncio.run(main())
    assert script.done.wait(5)
    assert script.disconnected_at is not None
    assert script.disconnected_at - cancelled < 1.0  # not after the 3 s pause


def test_cancel_of_stream_into_closes_the_connection(server):
    script = server.expect(Script(flowing(5000, every=0.002), hang=True))

    async def main() -> tuple[float, StreamState]:
        state = StreamState()
        task = asyncio.ensure_future(stream_into(make_request("q", model="m", base_url=server.url), state))
        while state.text_length < 200:
            await asyncio.sleep(0.01)
        cancelled = time.monotonic()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return cancelled, state

    cancelled, state = asyncio.run(main())
    assert state.status == "cancelled" and state.text.startswith("t0 t1 ")
    assert script.done.wait(5)
    assert script.disconnected_at is not None and script.disconnected_at - cancelled < 1.0


def test_a_stall_is_still_detected(server):
    server.expect(Script(flowing(100), hang=True))  # flowing (so paced), then silence
    request = make_request("q", model="m", base_url=server.url, stall_timeout=0.5)
    started = time.monotonic()
    state = asyncio.run(stream_into(request, StreamState()))
    assert time.monotonic() - started < 10
    assert state.status != "complete"
    assert "stalled" in (state.message or "")
    assert state.text == "".join(f"t{i} " for i in range(100))  # the partial answer is kept
