"""The embedded provider on a shared machine: no local user can turn it against its host.

Every local user of a JupyterHub host shares loopback, so the demo server in one user's kernel is
reachable by all the others. Each test here is one way it was once turned into a lever, tried
again over real sockets on 127.0.0.1 with short `ServerLimits` (a test takes seconds, not the
defaults' 30 s): knobs that made a 200-byte request allocate hundreds of megabytes or spin a
core, streams nobody reads holding every slot, a reconnecting slowloris starving everyone,
headers past the documented limit, a smuggled request behind a doubly framed body, a foreign
host in an absolute-form target, two `Origin` headers, and sampling values that were ignored.
The assertions are about behaviour (who is answered, what is refused and why), never speed;
`benchmarks/bench_server.py` measures the costs.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Optional

import httpx
import pytest
from support.http import read_all, responses_in

from streamwidgets.server import DemoServer, ServerLimits

FAST = {"tokens_per_second": 0, "first_token_delay": 0}
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with DemoServer(limits=ServerLimits(header_timeout=2, body_timeout=2, idle_timeout=2, write_timeout=1)) as s:
        yield s


def chat(model: str = "demo", **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True, "demo": FAST, **extra}


def request_bytes(port: int, body: bytes, *, path: str = CHAT, extra: str = "") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


def message_of(body: bytes) -> str:
    payload = json.loads(body)
    return str(payload["error"]["message"])


def health(server: DemoServer, timeout: float = 5) -> int:
    return httpx.get(server.url + "/_demo/health", timeout=timeout).status_code


def descriptors() -> int:
    """Open file descriptors of this process (the server runs in it, as in a kernel)."""
    return len(os.listdir("/proc/self/fd"))


def wait_until(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


# ---------------------------------------------------------------------------- the demo knobs


@pytest.mark.parametrize(
    ("demo", "says"),
    [
        ({"tokens": 1e6}, "'demo.tokens' must be a number of tokens from 0 to 100,000, not 1,000,000."),
        ({"tokens": -5}, "'demo.tokens' must be a number of tokens from 0 to 100,000, not -5."),
        (
            {"tokens_per_second": 1e9},
            "'demo.tokens_per_second' must be 0 (as fast as possible) or from 1 to 100,000 tokens per second, "
            "not 1,000,000,000.",
        ),
        (
            {"tokens_per_second": 0.001},
            "'demo.tokens_per_second' must be 0 (as fast as possible) or from 1 to 100,000 tokens per second, "
            "not 0.001.",
        ),
        ({"first_token_delay": 86400}, "'demo.first_token_delay' must be from 0 to 600 seconds, not 86,400."),
        (
            {"keepalive_interval": 1e-9},
            "'demo.keepalive_interval' must be 0 (no heartbeats) or from 0.05 to 600 seconds, not 1e-09.",
        ),
        ({"seed": "x" * 65}, "'demo.seed' must be a string or a number of at most 64 characters."),
        ({"seed": {"a": 1}}, "'demo.seed' must be a string or a number of at most 64 characters."),
    ],
)
def test_every_demo_knob_is_bounded_and_the_answer_names_the_bound(server, demo, says):
    """`demo.tokens=1e6` once allocated ~320 MB for a 200-byte request, and a keep-alive every
    nanosecond spun a core; each knob now has a bound, and a value past it a 400 that says it."""
    for path in (CHAT, "/v1/messages", "/v1/responses"):
        body = chat("demo-long", demo={**FAST, **demo})
        if path == "/v1/messages":
            body["max_tokens"] = 100
        elif path == "/v1/responses":
            body["input"] = body.pop("messages")
        response = httpx.post(server.url + path, json=body, timeout=10)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["message"] == says


def test_the_demo_headers_have_the_same_bounds(server):
    for header, value in [("x-demo-tokens-per-second", "1e9"), ("x-demo-first-token-delay", "forever")]:
        body = {"model": "demo", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        response = httpx.post(server.url + CHAT, json=body, headers={header: value}, timeout=10)
        assert response.status_code == 400 and "must be" in response.json()["error"]["message"], response.text


def test_knobs_at_their_bounds_are_answered(server):
    body = chat("demo-long", max_tokens=5, demo={"tokens": 100_000, "tokens_per_second": 0, "keepalive_interval": 0.05})
    with httpx.stream("POST", server.url + CHAT, json=body, timeout=30) as response:
        assert response.status_code == 200
        assert b"".join(response.iter_raw()).endswith(b"data: [DONE]\n\n")
    slow = chat(demo={"tokens_per_second": 1, "first_token_delay": 600, "keepalive_interval": 600})
    with httpx.stream("POST", server.url + CHAT, json=slow, timeout=10) as response:
        assert response.status_code == 200  # accepted; the client leaves at once


# ---------------------------------------------------------------------------- clients that do not read


def unread_stream(port: int) -> socket.socket:
    """A client that asks for a long, fast stream and never reads a byte of it."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: the server fills it fast
    sock.connect(("127.0.0.1", port))
    body = json.dumps(chat("demo-long", demo={"tokens": 30_000, "tokens_per_second": 0})).encode()
    sock.sendall(request_bytes(port, body))
    return sock


def test_clients_that_read_nothing_are_dropped_and_their_slots_freed():
    """140 never-read streams once held all 128 slots for good (normal clients got 503) and took
    850 MB; now each is dropped once it has read nothing for `write_timeout` seconds."""
    limits = ServerLimits(max_connections=2, write_timeout=1.0)
    with DemoServer(limits=limits) as server:
        before = descriptors()
        socks = [unread_stream(server.port) for _ in range(limits.max_connections)]
        try:
            assert wait_until(lambda: len(server.connections) == limits.max_connections, 10)
            assert wait_until(lambda: all(r.outcome != "open" for r in server.connections), 20), server.connections
            assert {r.outcome for r in server.connections} == {"client_not_reading"}
            assert all(r.bytes_sent > 0 for r in server.connections)
            # The server let go of its ends (the clients still hold theirs), and its slots are free.
            assert wait_until(lambda: descriptors() - before <= len(socks), 5)
            assert health(server) == 200
        finally:
            for sock in socks:
                sock.close()


def test_a_slow_reader_that_keeps_up_is_not_dropped():
    limits = ServerLimits(write_timeout=1.0)
    with DemoServer(limits=limits) as server:
        body = chat("demo-long", demo={"tokens": 400, "tokens_per_second": 200, "first_token_delay": 0})
        with httpx.stream("POST", server.url + CHAT, json=body, timeout=30) as response:
            chunks = []
            for chunk in response.iter_raw(256):
                chunks.append(chunk)
                time.sleep(0.01)  # slower than it could, but reading
        assert b"".join(chunks).endswith(b"data: [DONE]\n\n")
        assert wait_until(lambda: server.connections[-1].outcome == "finished", 5)


# ---------------------------------------------------------------------------- a full server


def slowloris(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % port)
    return sock


def test_a_reconnecting_slowloris_does_not_starve_anyone():
    """Half-sent headers that reconnect as soon as they are closed once answered 0 of 54 health
    checks in 30 s; now a newcomer takes the slot of the oldest connection still sending its
    headers, which is told 408."""
    limits = ServerLimits(max_connections=8, header_timeout=5)
    with DemoServer(limits=limits) as server:
        stop = threading.Event()
        told: list[bytes] = []
        opened = [0]

        def attacker() -> None:
            socks = [slowloris(server.port) for _ in range(limits.max_connections)]
            opened[0] += len(socks)
            while not stop.is_set():
                for index, sock in enumerate(socks):
                    sock.setblocking(False)
                    try:
                        data = sock.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    told.append(data)
                    sock.close()
                    socks[index] = slowloris(server.port)  # reconnect at once
                    opened[0] += 1
                stop.wait(0.005)
            for sock in socks:
                sock.close()

        thread = threading.Thread(target=attacker)
        thread.start()
        try:
            assert wait_until(lambda: opened[0] >= limits.max_connections, 5)
            time.sleep(0.2)
            answered = [health(server) for _ in range(20)]
        finally:
            stop.set()
            thread.join(10)
        assert answered == [200] * 20
        evicted = [answer for data in told if data for answer in responses_in(data)]
        assert evicted, "the slowloris connections were closed to make room"
        for status, headers, _body in evicted:  # each told 408: its slot was taken, or its time ran out
            assert status == 408 and headers["connection"] == "close"
        assert any("needed this connection for another client" in message_of(body) for _, _, body in evicted)


def test_idle_keep_alive_connections_make_room_too():
    limits = ServerLimits(max_connections=2, idle_timeout=30)
    with DemoServer(limits=limits) as server:
        keepers = [httpx.Client(timeout=5) for _ in range(2)]
        try:
            for client in keepers:  # two kept-alive connections, idle after their request
                assert client.get(server.url + "/_demo/health").status_code == 200
            assert health(server) == 200  # the longest-idle one was closed to make room
            time.sleep(0.2)
            # Closing an idle connection is harmless: its client sees it closed and opens another.
            assert keepers[0].get(server.url + "/_demo/health").status_code == 200
        finally:
            for client in keepers:
                client.close()


def test_when_every_slot_is_answering_a_newcomer_is_told_503():
    """Only connections still sending their request (or idle) give up their slot; streams being
    read are never cut for a newcomer."""
    limits = ServerLimits(max_connections=2)
    with DemoServer(limits=limits) as server:
        clients = [httpx.Client(timeout=10) for _ in range(2)]
        streams = []
        try:
            for client in clients:
                stream = client.stream("POST", server.url + CHAT, json=chat("demo-stall"))
                response = stream.__enter__()
                assert response.status_code == 200
                streams.append(stream)
            assert wait_until(lambda: len(server.connections) == 2, 5)
            busy = httpx.get(server.url + "/_demo/health", timeout=5)
            assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
            assert "already serving 2 connections" in busy.json()["error"]["message"]
            assert [r.outcome for r in server.connections] == ["open", "open"]
        finally:
            for stream in streams:
                stream.__exit__(None, None, None)
            for client in clients:
                client.close()


# ---------------------------------------------------------------------------- framing


def head_of_size(port: int, size: int) -> bytes:
    """A GET of /_demo/health whose request line, headers and blank line are `size` bytes."""
    start = f"GET /_demo/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nX-Pad: ".encode()
    end = b"\r\n\r\n"
    return start + b"p" * (size - len(start) - len(end)) + end


@pytest.mark.parametrize(("size", "status"), [(64 * 1024, 200), (64 * 1024 + 1, 431), (100 * 1024, 431)])
def test_the_header_limit_is_exact(server, size, status):
    """Headers between 64 KiB and 128 KiB that arrived whole used to be accepted."""
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(head_of_size(server.port, size))
        data, _ = read_all(sock, 2 if status == 200 else 3)
    ((got, _, body),) = responses_in(data)[:1]
    assert got == status, body
    if status == 431:
        assert "headers are larger than this demo server accepts (65,536 bytes)" in message_of(body)


def test_content_length_with_transfer_encoding_is_refused_and_the_connection_closed(server):
    """The smuggled second request behind the chunked body must never be answered."""
    smuggled = f"GET /_demo/connections HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
    body = json.dumps(chat()).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    raw = (
        (
            f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
        + chunked
        + smuggled
    )
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(raw)
        data, closed = read_all(sock, 3)
    answers = responses_in(data)
    assert closed and len(answers) == 1 and data.count(b"HTTP/1.1 ") == 1
    ((status, headers, answer),) = answers
    assert status == 400 and headers["connection"] == "close"
    assert message_of(answer).startswith("A request may not carry both Content-Length and Transfer-Encoding")


@pytest.mark.parametrize(
    ("authority", "status"),
    [("evil.example", 403), ("evil.example:{port}", 403), ("127.0.0.1:1", 403), ("127.0.0.1:{port}", 200)],
)
def test_an_absolute_form_target_is_checked_as_host_is(server, authority, status):
    authority = authority.format(port=server.port)
    raw = f"GET http://{authority}/_demo/connections HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(raw)
        data, _ = read_all(sock, 1)
    ((got, _, body),) = responses_in(data)[:1]
    assert got == status, body
    if status == 403:
        assert "answers only requests addressed to it" in message_of(body)
        assert b"opened_at" not in body


@pytest.mark.parametrize(
    "origins", [("http://evil.example", "http://127.0.0.1:{port}"), ("http://127.0.0.1:{port}",) * 2]
)
def test_two_origin_headers_are_refused(server, origins):
    """With two, the last one used to win: a page could add its own after a forged one."""
    lines = "".join(f"Origin: {origin.format(port=server.port)}\r\n" for origin in origins)
    raw = f"GET /_demo/connections HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n{lines}\r\n".encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(raw)
        data, _ = read_all(sock, 1)
    ((status, headers, body),) = responses_in(data)[:1]
    assert status == 403 and "one Origin header, not 2" in message_of(body)
    assert not any(name.startswith("access-control-") for name in headers)


@pytest.mark.parametrize("temperature", [-1, "hot"])
@pytest.mark.parametrize("path", [CHAT, "/v1/responses", "/v1/messages"])
def test_a_temperature_of_minus_one_or_hot_is_refused_not_ignored(server, temperature, path):
    body: dict[str, Any] = chat(temperature=temperature)
    if path == "/v1/responses":
        body["input"] = body.pop("messages")
    if path == "/v1/messages":
        body["max_tokens"] = 100
    response = httpx.post(server.url + path, json=body, timeout=10)
    assert response.status_code == 400, response.text
    message: Optional[str] = response.json()["error"]["message"]
    assert message is not None and "temperature" in message
