"""The client side of the tests' loopback HTTP, written once.

`free_port()` for a server a test starts in another process (or a URL nothing answers on),
`wait_for_http()` until that server answers, `post()` a request body to the embedded demo
provider's API (any flavor), and, for the tests that speak to a server as a hostile client would
(below any HTTP library), `read_all()` of a raw socket and the `responses_in()` the bytes that
h11 finds in what it read.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import h11
import httpx

if TYPE_CHECKING:
    from streamwidgets.server import DemoServer

__all__ = ["ENDPOINT", "free_port", "post", "read_all", "responses_in", "wait_for_http"]

#: The path of each API under a base URL.
ENDPOINT = {"chat": "chat/completions", "responses": "responses", "messages": "messages"}


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (until something binds it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def post(
    http: httpx.Client, server: DemoServer, api: str, body: dict[str, Any], flavor: str = "demo", **kw: Any
) -> httpx.Response:
    """POST `body` to `api` ("chat", "responses", "messages" or "gemini") of the demo provider's
    `flavor`. Gemini's model and stream are in its path: its `body` names the model as the others
    do, and the model is taken out of the body sent."""
    if api == "gemini":
        body = dict(body)
        path = f"models/{body.pop('model')}:streamGenerateContent?alt=sse"
    else:
        path = ENDPOINT[api]
    return http.post(f"{server.flavor_url(flavor)}/{path}", json=body, **kw)


def _tail(log: Optional[Path], lines: int = 40) -> str:
    if log is None:
        return "(no log)"
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_for_http(
    url: str,
    timeout: float,
    process: Optional[subprocess.Popen[Any]] = None,
    log: Optional[Path] = None,
    key: Optional[str] = None,
) -> None:
    """Return once a GET of `url` (with `key` as a bearer token) answers 200 (never through a
    proxy); raise if `process` (the server's) exits first or `timeout` seconds pass, with the end
    of its `log`."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}:\n{_tail(log)}")
        try:
            if httpx.get(url, headers=headers, timeout=2, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{url} did not answer within {timeout:g} s:\n{_tail(log)}")


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
