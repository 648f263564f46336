"""The gulp reader (`streamwidgets/net/_reads.py`) over real loopback sockets.

A small scripted server writes each SSE event in its own TCP segment (`TCP_NODELAY`, one `send`
per event, chunked), as providers do, and logs when it sent what and when the client went away.
The reader must deliver every byte in order, read fewer times than there are segments while the
stream flows and hand on one chunk per read (not per event), never hold back the first bytes
after an idle spell nor the read after a full one, stop at once when cancelled (even in the
middle of a pause), and leave the stall timeout working. What is held back or not is
told by order (the read was waiting before the bytes were sent), not by a stopwatch; the one
bound left is a cancel acting within seconds of a minute-long pause. The latencies themselves
are `benchmarks/bench_cancel.py`'s and `bench_kernel.py`'s to measure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import anyio
import httpcore
import httpx
import pytest
from support.hostile import SSE, HostileServer, Reply, Visit

from streamwidgets import arun, make_request
from streamwidgets.core._state import StreamState
from streamwidgets.net import RunOptions, Stream, as_source
from streamwidgets.net._reads import RECEIVE_BUFFER, GulpStream, Pacer, gulps
from streamwidgets.net._transport import environment_proxies, gulp_client


def event(text: str) -> bytes:
    payload = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
    data = b"data: " + json.dumps(payload).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


DONE = b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"


PATH = "/segments/v1/chat/completions"


@dataclass
class Script:
    """(seconds to wait before it, bytes) per send, each send in a TCP segment of its own (the
    chunk framing is the script's); `hang`: no terminator, the body stays open. Either way the
    server keeps the connection until the client leaves, and notes when it did (`disconnected_at`)."""

    sends: list[tuple[float, bytes]]
    hang: bool = False
    visit: Visit = field(default_factory=lambda: Visit(PATH))

    @property
    def sent_at(self) -> list[float]:
        return self.visit.sent_at

    @property
    def disconnected_at(self) -> Optional[float]:
        return self.visit.left_at

    @property
    def done(self) -> threading.Event:
        return self.visit.done


class SegmentServer:
    """The hostile server playing one script per connection, in the order they were expected."""

    def __init__(self, hostile: HostileServer) -> None:
        self.hostile = hostile
        self.url = hostile.url("segments")

    def expect(self, script: Script) -> Script:
        pieces = tuple(data for _, data in script.sends)
        gaps = tuple(delay for delay, _ in script.sends)
        chunked = (*SSE, ("Transfer-Encoding", "chunked"))
        script.visit = self.hostile.expect(PATH, Reply(pieces, headers=chunked, end="hold", gaps=gaps, raw=True))
        return script


@pytest.fixture
def server() -> Iterator[SegmentServer]:
    with HostileServer() as hostile:
        yield SegmentServer(hostile)


def flowing(count: int, every: float = 0.001) -> list[tuple[float, bytes]]:
    return [(every, event(f"t{i} ")) for i in range(count)]


class Counted(httpcore.AsyncNetworkStream):
    """A real socket stream that logs its reads: (when each began, what it returned)."""

    def __init__(self, stream: httpcore.AsyncNetworkStream, reads: list[tuple[float, bytes]]) -> None:
        self.stream, self.reads = stream, reads

    async def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        began = time.monotonic()
        data = await self.stream.read(max_bytes, timeout)
        self.reads.append((began, data))
        return data

    async def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        await self.stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self.stream.aclose()

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


class Counting(httpcore.AnyIOBackend):
    def __init__(self, reads: list[tuple[float, bytes]]) -> None:
        self.reads = reads

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        return Counted(await super().connect_tcp(*args, **kwargs), self.reads)


async def read_body(url: str, reads: list[tuple[float, bytes]], arrivals: list[tuple[float, bytes]], **pacing) -> bytes:
    """The body through `gulps`, counting the real network reads beneath it: (when each read
    began, what it returned)."""
    async with (
        gulp_client(network_backend=Counting(reads)) as http,
        http.stream("POST", url + "/chat/completions", json={}) as response,
    ):
        body = b""
        async for chunk in gulps(response, **pacing):
            arrivals.append((time.monotonic(), chunk))
            body += chunk
        return body


def test_every_byte_arrives_in_order_in_fewer_reads(server):
    script = server.expect(Script([*flowing(1500, every=0.0005), (0, DONE)]))
    reads: list[tuple[float, bytes]] = []
    body = asyncio.run(read_body(server.url, reads, []))
    events = [data for _, data in script.sends]
    expected = b"".join(e.split(b"\r\n", 1)[1].rsplit(b"\r\n", 1)[0] for e in events[:-1]) + b"data: [DONE]\n\n"
    assert body == expected
    assert len(reads) < len(events) / 4, f"{len(reads)} reads for {len(events)} segments"


def test_each_read_is_one_chunk_however_many_events_it_brought(server):
    # h11, httpcore and httpx handle one chunk per read, not one per event
    server.expect(Script([*flowing(1500, every=0.0005), (0, DONE)]))
    reads: list[tuple[float, bytes]] = []
    arrivals: list[tuple[float, bytes]] = []
    asyncio.run(read_body(server.url, reads, arrivals))
    assert len(arrivals) <= len([data for _, data in reads if data]), (len(arrivals), len(reads))
    assert max(data.count(b"data: ") for _, data in arrivals) > 10


@pytest.mark.parametrize("events", [1500, 3], ids=["flowing", "short"])
def test_a_flowing_stream_asks_for_a_large_receive_buffer_and_a_short_one_does_not(server, events):
    """A paced read waits at most until a quarter of the socket's receive buffer fills: the
    buffer bounds how seldom a fast stream is read. It is asked for at the first pause, so the
    reads that carry the first token (which never pause) find the connection as it was made."""
    server.expect(Script([*flowing(events, every=0.0005), (0, DONE)]))

    async def main() -> tuple[int, int]:
        async with (
            gulp_client() as http,
            http.stream("POST", server.url + "/chat/completions", json={}) as response,
        ):
            sock = response.extensions["network_stream"].get_extra_info("socket")
            made = int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
            async for _chunk in gulps(response):
                pass
            return made, int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))

    made, after = asyncio.run(main())
    limit = 2 * int(Path("/proc/sys/net/core/rmem_max").read_text())  # Linux doubles what is asked, up to this
    assert made < 2 * RECEIVE_BUFFER
    if events > 3:
        assert after >= min(2 * RECEIVE_BUFFER, limit)
    else:
        assert after == made


def test_a_read_that_filled_its_buffer_is_followed_by_another_at_once():
    async def main() -> None:
        pacer = Pacer(pause=60.0, warm_up=0)
        pacer.read(got=100, asked=100, took=0.0)  # full: more is waiting
        with anyio.fail_after(30):  # a pause would sleep a minute
            await pacer.wait()
        assert pacer.pauses == 0
        pacer.read(got=99, asked=100, took=0.0)  # the socket was drained: the next read waits
        with anyio.move_on_after(0.5) as scope:
            await pacer.wait()
        assert scope.cancelled_caught and pacer.pauses == 1

    anyio.run(main)


def test_a_pause_never_lets_the_receive_buffer_fill():
    # a full receive buffer stops the sender: the pause is what fills a quarter of it at the
    # rate the bytes come, so a fast stream is read as fast as it comes, a slow one ~20 times a second
    pacer = Pacer(pause=0.05, warm_up=0)
    pacer.read(got=8_000, asked=65_520, took=0.0, since=0.05, room=100_000)  # 160 kB/s
    assert pacer.next_pause() == 0.05
    pacer = Pacer(pause=0.05, warm_up=0)
    pacer.read(got=50_000, asked=65_520, took=0.0, since=0.05, room=100_000)  # 1 MB/s, and it was held back
    assert pacer.next_pause() == pytest.approx(0.025)
    pacer.read(got=50_000, asked=65_520, took=0.0, since=0.025, room=100_000)  # faster still
    assert pacer.next_pause() < 0.025
    pacer.read(got=60_000, asked=65_520, took=0.0, since=0.001, room=100_000)  # 60 MB/s: no pause
    assert pacer.next_pause() == 0.0
    pacer.read(got=100, asked=65_520, took=0.5, since=0.5, room=100_000)  # an idle spell: the rate is measured anew
    assert pacer.next_pause() == 0.05


def test_a_burst_of_events_longer_than_a_read_arrives_whole(server):
    # 2 MB at once: reads fill their buffers, chunks span reads, and every byte arrives
    big = [event("x" * 4000 + f" {i} ") for i in range(500)]
    server.expect(Script([(0.0, b"".join(big)), (0, DONE)]))
    reads: list[tuple[float, bytes]] = []
    body = asyncio.run(read_body(server.url, reads, [], warm_up=0, pause=0.2))
    assert body.count(b"data: ") == 501


def test_whole_answer_through_arun(server):
    server.expect(Script([*flowing(800, every=0.0005), (0, DONE)]))
    state = asyncio.run(arun(make_request("q", model="m", base_url=server.url)))
    assert state.status == "complete", state.message
    assert state.text == "".join(f"t{i} " for i in range(800))


def test_first_bytes_after_an_idle_spell_are_not_held_back(server):
    # the first token 1 s after the headers, a flowing burst, two idle seconds, then one more
    script = server.expect(Script([(1.0, event("first ")), *flowing(60), (2.0, event("after ")), (0.3, DONE)]))
    reads: list[tuple[float, bytes]] = []
    asyncio.run(read_body(server.url, reads, [], pause=0.5))
    # The read that brought each was already waiting when the server sent it: no pause (0.5 s)
    # sat between the bytes and the reader.
    first = next(began for began, data in reads if b"first" in data)
    after = next(began for began, data in reads if b"after" in data)
    assert first < script.sent_at[0] and after < script.sent_at[61]


def test_a_flowing_stream_is_paced(server):
    # the pause is what groups segments: with a long one, the burst arrives in few reads
    server.expect(Script([*flowing(200, every=0.002), (0, DONE)]))
    reads: list[tuple[float, bytes]] = []
    arrivals: list[tuple[float, bytes]] = []
    asyncio.run(read_body(server.url, reads, arrivals, pause=0.1, warm_up=3))
    assert len(reads) < 40, len(reads)  # 0.4 s of stream, a read every ~0.1 s after the first few


def test_cancel_in_a_pause_closes_the_connection_at_once(server):
    script = server.expect(Script(flowing(5000, every=0.002), hang=True))

    async def main() -> float:
        reads: list[tuple[float, bytes]] = []
        task = asyncio.ensure_future(read_body(server.url, reads, [], pause=60.0, warm_up=2))
        while len(reads) < 2:  # past the warm-up: the reader is now in a 60 s pause
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
    assert script.disconnected_at - cancelled < 5.0  # not after the 60 s pause


@pytest.mark.parametrize("pause", [60.0, 0.05])
def test_the_sink_chooses_the_pause_and_a_cancel_still_ends_it(server, pause):
    # `RunOptions(pause=)` reaches the reads: past the warm-up, a long pause holds the answer still
    # while the server sends on, the view's 50 ms does not. At ~5 kB/s a quarter of the receive
    # buffer (40 kB or more) takes 2 s or more to fill, so that rule does not cut the pause short.
    script = server.expect(Script(flowing(5000, every=0.02), hang=True))

    async def main() -> tuple[int, int, int, StreamState]:
        stream = Stream(as_source(make_request("q", model="m", base_url=server.url)), RunOptions(pause=pause))
        state = stream.state
        task = asyncio.ensure_future(stream.run())
        while len(script.sent_at) < 25:  # the warm-up's 8 reads are done by then (0.5 s)
            await asyncio.sleep(0.005)
        before, sent = state.text_length, len(script.sent_at)
        while len(script.sent_at) < sent + 25:  # the server sends 25 more segments (0.5 s)
            await asyncio.sleep(0.01)
        after = state.text_length
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return before, after, len(script.sent_at) - sent, state

    before, after, sent, state = asyncio.run(main())
    assert sent >= 25 and before > 0
    if pause == 60.0:
        assert after == before, "a read woke inside the pause"
    else:
        assert after > before, "the reads did not go on"
    assert state.status == "cancelled"
    assert script.done.wait(5) and script.disconnected_at is not None  # the pause did not hold the close


def test_cancel_of_a_stream_closes_the_connection(server):
    script = server.expect(Script(flowing(5000, every=0.002), hang=True))

    async def main() -> tuple[float, StreamState]:
        stream = Stream(as_source(make_request("q", model="m", base_url=server.url)))
        state = stream.state
        task = asyncio.ensure_future(stream.run())
        while state.text_length < 200:
            await asyncio.sleep(0.01)
        cancelled = time.monotonic()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return cancelled, state

    cancelled, state = asyncio.run(main())
    assert state.status == "cancelled" and state.text.startswith("t0 t1 ")
    # The server never ends this body: that it saw the client leave is the close.
    assert script.done.wait(5)
    assert script.disconnected_at is not None and script.disconnected_at >= cancelled


def test_a_stall_is_still_detected(server):
    server.expect(Script(flowing(100), hang=True))  # flowing (so paced), then silence
    request = make_request("q", model="m", base_url=server.url, stall_timeout=0.5)
    started = time.monotonic()
    state = asyncio.run(arun(request))
    assert time.monotonic() - started < 10
    assert state.status != "complete"
    assert "stalled" in (state.message or "")
    assert state.text == "".join(f"t{i} " for i in range(100))  # the partial answer is kept


class ForwardProxy:
    """A plain HTTP forward proxy on loopback: reads one request in absolute form, sends it on to
    its server, and relays the bytes both ways until either side closes."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.requests: list[bytes] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            head += client.recv(65536)
        line, _, rest = head.partition(b"\r\n")
        method, target, version = line.split(b" ")
        self.requests.append(line)
        url = httpx.URL(target.decode())
        upstream = socket.create_connection((url.host, url.port))
        upstream.sendall(b"%s %s %s\r\n%s" % (method, url.raw_path, version, rest))
        threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()
        self._pipe(upstream, client)

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()


def test_a_stream_through_a_proxy_is_read_in_gulps_too(server):
    proxy = ForwardProxy()
    server.expect(Script([*flowing(1500, every=0.0005), (0, DONE)]))

    async def main() -> tuple[bytes, int, bool]:
        chunks = 0
        body = b""
        async with (
            gulp_client(proxy=proxy.url) as http,
            http.stream("POST", server.url + "/chat/completions", json={}) as response,
        ):
            gulping = isinstance(response.extensions["network_stream"], GulpStream)
            async for chunk in gulps(response):
                body += chunk
                chunks += 1
        return body, chunks, gulping

    try:
        body, chunks, gulping = asyncio.run(main())
    finally:
        proxy.close()
    assert proxy.requests and proxy.requests[0].startswith(b"POST http://127.0.0.1:")
    assert gulping
    assert body.count(b"data: ") == 1501 and body.endswith(b"data: [DONE]\n\n")
    assert chunks < 1501 / 4


def _clear_proxies(monkeypatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_the_environment_names_the_proxies_as_httpx_reads_them(monkeypatch):
    _clear_proxies(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", "proxy.campus.example:3128")
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    monkeypatch.setenv("NO_PROXY", "localhost, 10.0.0.1,::1,.internal.example,http://skip.example")
    assert environment_proxies() == {
        "https://": "http://proxy.campus.example:3128",
        "all://": "socks5://127.0.0.1:1080",
        "all://localhost": None,
        "all://10.0.0.1": None,
        "all://[::1]": None,
        "all://*.internal.example": None,
        "http://skip.example": None,
    }
    monkeypatch.setenv("NO_PROXY", "example.org,*")
    assert environment_proxies() == {}


@pytest.mark.parametrize("exempt", [False, True])
def test_a_proxy_from_the_environment_carries_the_stream_in_gulps_unless_no_proxy_exempts_it(
    server, monkeypatch, exempt
):
    proxy = ForwardProxy()
    _clear_proxies(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    if exempt:
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server.expect(Script([*flowing(200, every=0.0005), (0, DONE)]))

    async def main() -> tuple[bytes, bool]:
        async with (
            gulp_client(trust_env=True) as http,
            http.stream("POST", server.url + "/chat/completions", json={}) as response,
        ):
            gulping = isinstance(response.extensions["network_stream"], GulpStream)
            return b"".join([chunk async for chunk in gulps(response)]), gulping

    try:
        body, gulping = asyncio.run(main())
    finally:
        proxy.close()
    assert body.count(b"data: ") == 201 and gulping
    assert bool(proxy.requests) is not exempt
