"""Raw HTTP/1.1 against a server on loopback: what a socket read, and the responses h11 finds in it
(for the tests that speak to the demo server as a hostile client would, below any HTTP library)."""

from __future__ import annotations

import socket
import time

import h11

__all__ = ["read_all", "responses_in"]


def read_all(sock: socket.socket, timeout: float) -> tuple[bytes, bool]:
    """Everything the server sends within `timeout` seconds, and whether it closed its end. (It
    returns at the close: where a test expects one, the timeout is generous, for a busy machine.)"""
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            more = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            return data, True
        if not more:
            return data, True
        data += more
    return data, False


def responses_in(data: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """(status, headers, body) of every complete response in raw server bytes."""
    conn = h11.Connection(h11.CLIENT)
    out: list[tuple[int, dict[str, str], bytes]] = []
    conn.receive_data(data)
    while True:
        conn.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
        conn.send(h11.EndOfMessage())
        status, headers, body = 0, {}, b""
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Response):
                status, headers = event.status_code, {k.decode(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                out.append((status, headers, body))
                break
            else:
                return out
        if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return out
        conn.start_next_cycle()
