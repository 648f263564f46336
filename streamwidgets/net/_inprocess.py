"""`InProcessTransport`: the embedded provider answered in-process, where no socket can be opened.

JupyterLite runs Python in the browser, with no sockets at all, and a locked-down hub may forbid
binding even on loopback. There a request for the scripted demo (`provider="demo"`, a demo
model, or the demo standing in for a preset with no key: `request.embedded`) is addressed to a
host that names no machine (`IN_PROCESS_BASE`, under the reserved `.invalid` domain), and the
client's transport for that host (`_transport.gulp_client`, the one place that picks a
transport) hands it to the same routes with no socket (`server.in_process()`,
`server/_edge/_direct.py`): method, path, headers and the JSON body go to the demo's router as
they are, and the reply is played by the code that writes it to a socket
(`server/_edge/_play.py`). So its bytes, pace, heartbeats, faults, scenarios and 400s are the
HTTP server's, and everything above the transport — the dialect, retry, recording, the token
view, the words of an error — reads it as it reads any provider. Its timeouts are the client's
(`read`: until the head, and between two parts of the body); a connection the server would drop
raises httpx's own error. Closing the body leaves the stream, whose record says the client left.

One place decides (`Live.resolved()`, through `in_process_reason()`): the demo runs in-process
when `STREAMWIDGETS_DEMO_INPROCESS=1` asks for it (tests, and a hub that knows), when Python runs
in the browser (`sys.platform == "emscripten"`), or once the embedded server could not start in
this process (an `OSError`, such as `PermissionError`, from binding its socket). The view's note
says so. The HTTP server stays for everything that is about the network.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Optional

import anyio
import httpx

__all__ = [
    "INPROCESS_ENV",
    "IN_PROCESS_BASE",
    "IN_PROCESS_HOST",
    "InProcessTransport",
    "in_process_base",
    "in_process_reason",
    "remember",
]

#: Set to 1 to answer the scripted demo in-process even where a socket can be opened.
INPROCESS_ENV = "STREAMWIDGETS_DEMO_INPROCESS"
#: Where an in-process request is addressed: a name no resolver answers (RFC 2606), whose path is
#: the embedded server's own (`/v1/...`, `/<flavor>/v1/...`).
IN_PROCESS_HOST = "demo.in-process.invalid"
IN_PROCESS_BASE = f"http://{IN_PROCESS_HOST}"
#: The host the demo's router is told it was reached at (its own loopback name).
_HOST = "127.0.0.1"
#: Why the embedded server could not start in this process (None: it has not failed).
_failed: Optional[str] = None


def in_process_reason() -> Optional[str]:
    """Why the scripted demo answers in-process, or None when the embedded server is used.
    Has no side effect: a server that never tried to start has not failed."""
    if os.environ.get(INPROCESS_ENV, "").strip().lower() not in ("", "0", "false", "no"):
        return f"{INPROCESS_ENV} is set"
    if sys.platform == "emscripten":
        return "this Python runs in the browser, where no socket can be opened"
    return _failed


def remember(exc: OSError) -> str:
    """The embedded server could not open a socket: from now on the demo answers in-process."""
    global _failed
    _failed = f"the embedded server could not open a socket ({type(exc).__name__}: {exc})"
    return _failed


def in_process_base(flavor: str) -> str:
    """The base URL of the embedded provider's plain routes (`flavor` ""), or of a flavor's."""
    return f"{IN_PROCESS_BASE}/{flavor}/v1" if flavor else f"{IN_PROCESS_BASE}/v1"


class InProcessTransport(httpx.AsyncBaseTransport):
    """httpx's transport interface over the embedded provider's routes, called in-process."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        from ..server import Dropped, in_process

        read = request.extensions.get("timeout", {}).get("read")
        body = await request.aread()
        headers = {**{k: v for k, v in request.headers.items() if k.lower() != "host"}, "host": _HOST}
        target = request.url.raw_path.decode("ascii")
        try:
            with anyio.fail_after(read):
                answer = await in_process().exchange(request.method, target, headers, body)
        except TimeoutError:
            raise httpx.ReadTimeout("the embedded provider sent no answer in time", request=request) from None
        except Dropped:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            ) from None
        return httpx.Response(
            status_code=answer.status,
            headers=list(answer.headers),
            stream=_Played(answer.body, read),
            extensions={"http_version": b"HTTP/1.1"},
            request=request,
        )


class _Played(httpx.AsyncByteStream):
    """The body as the edge would write it, one write at a time; closing it leaves the stream."""

    def __init__(self, body: AsyncGenerator[bytes, None], read_timeout: Optional[float]) -> None:
        self._body = body
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        from ..server import Dropped

        while True:
            try:
                with anyio.fail_after(self._read_timeout):
                    part = await self._body.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise httpx.ReadTimeout("no part of the body arrived in time") from None
            except Dropped:
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body: incomplete chunked read"
                ) from None
            yield part

    async def aclose(self) -> None:
        await self._body.aclose()
