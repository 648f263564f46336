"""`InProcess`: the embedded provider answered in-process, where no socket can be opened.

JupyterLite runs Python in the browser, with no sockets at all, and a locked-down hub may forbid
binding even on loopback. There a request for the scripted demo (`provider="demo"`, a demo
model, or the demo standing in for a preset with no key: `request.embedded`) is answered by the
same routes with no socket (`server.in_process()`, `server/_edge/_direct.py`): the request the
client would send — method, the dialect's path, headers, the JSON body — goes to the demo's
router as it is, and the reply is played by the code that writes it to a socket
(`server/_edge/_play.py`), so its bytes, pace, heartbeats, faults, scenarios and 400s are the
HTTP server's. What comes back is handed to the feed loop as `Live` hands it: a non-2xx as the
error of `error_from_http` (retried as `Live` retries it, `_retry.py`), a whole body read by the
dialect, a stream's bytes as they are played, the lesson the `X-Demo-Script` header names said
through the context. A Cancel cancels the task, and the stream's record says the client left.

One place decides (`Live.resolved()`, through `in_process_reason()`): the demo runs in-process
when `STREAMWIDGETS_DEMO_INPROCESS=1` asks for it (tests, and a hub that knows), when Python runs
in the browser (`sys.platform == "emscripten"`), or once the embedded server could not start in
this process (an `OSError`, such as `PermissionError`, from binding its socket). The view's note
says so. The HTTP server stays for everything that is about the network.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Optional

import anyio
import httpx

from ..core import (
    Item,
    Limits,
    StreamBroke,
    StreamState,
    connection_closed,
    is_event_stream,
    stalled,
)
from ..core.dialects import WHOLE_BODY_LIMIT
from ._request import StreamRequest
from ._retry import RetryPolicy, retrying
from ._sources import Labels, Live, Source, SourceContext, heard_script
from ._transport import ERROR_BODY_LIMIT, http_error, not_a_stream

__all__ = ["INPROCESS_ENV", "InProcess", "in_process_reason", "resolve"]

#: Set to 1 to answer the scripted demo in-process even where a socket can be opened.
INPROCESS_ENV = "STREAMWIDGETS_DEMO_INPROCESS"
#: The address the in-process routes are named by (never connected to): the server's own paths.
_BASE = "http://127.0.0.1"
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


def resolve(live: Live) -> Source:
    """`live` ready to open: the embedded provider started (its address in the request), or the
    demo in-process when no socket can be opened."""
    request = live.request
    why = live.in_process()
    if why is None:
        try:
            resolved = request.resolved()
        except OSError as exc:  # binding refused (a locked-down hub), no loopback at all
            return InProcess(request, _remember(exc))
        return live if resolved is request else Live(resolved)
    return InProcess(request, why)


def with_note(labels: Labels, why: Optional[str]) -> Labels:
    """`labels` whose note says the demo runs in-process, and why."""
    note = f"The scripted demo ran in-process: {why}." if why else "The scripted demo ran in-process."
    return replace(labels, note=" ".join(n for n in (labels.note, note) if n))


def _remember(exc: OSError) -> str:
    global _failed
    _failed = f"the embedded server could not open a socket ({type(exc).__name__}: {exc})"
    return _failed


@dataclass(frozen=True, eq=False)
class InProcess(Live):
    """A request for the embedded provider, answered in-process (no socket); `why` says why."""

    why: str = ""

    def in_process(self) -> Optional[str]:
        return self.why

    def resolved(self) -> InProcess:
        return self

    async def items(self, context: SourceContext) -> AsyncIterator[Item]:
        request = self.request
        heard = heard_script(context)
        tries = retrying(lambda: _exchange(request, context, heard), RetryPolicy(request.retries), context)
        try:
            async for item in tries:
                yield item
        finally:
            await tries.aclose()

    def then(self, state: StreamState) -> Optional[InProcess]:
        return InProcess(self.request.continued(state.text), self.why) if state.can_continue else None

    def _with_limits(self, limits: Limits) -> InProcess:
        return InProcess(replace(self.request, limits=limits), self.why)


def target_of(request: StreamRequest) -> str:
    """The path (and query) the client would ask the embedded server for."""
    base = f"{_BASE}/{request.embedded}/v1" if request.embedded else f"{_BASE}/v1"
    return httpx.URL(request.dialect.url(base, request.model)).raw_path.decode("ascii")


async def _exchange(
    request: StreamRequest, context: SourceContext, heard: Callable[[Mapping[str, str]], None]
) -> AsyncGenerator[Item, None]:
    """One try, as `_transport.response_items` reads one over HTTP."""
    from ..server import Dropped, in_process

    body = json.dumps(request.body(), ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    headers = {**request.headers(), "Host": "127.0.0.1", "Content-Length": str(len(body))}
    try:
        with anyio.fail_after(request.stall_timeout):
            response = await in_process().exchange("POST", target_of(request), headers, body)
    except TimeoutError:
        raise StreamBroke(stalled(request.stall_timeout)) from None
    except Dropped:
        gone = httpx.RemoteProtocolError("Server disconnected without sending a response.")
        raise StreamBroke(connection_closed(gone)) from None
    reader = response.body
    try:
        fields = httpx.Headers(list(response.headers))
        if not 200 <= response.status < 300:
            yield [http_error(context, request, response.status, await _whole(reader, ERROR_BODY_LIMIT), fields)]
            return
        heard(fields)
        content_type = fields.get("content-type", "")
        if not is_event_stream(content_type):
            whole = request.redact_bytes(await _whole(reader, WHOLE_BODY_LIMIT))
            yield not_a_stream(context, whole, content_type)
            return
        while True:
            try:
                with anyio.fail_after(request.stall_timeout):
                    chunk = await reader.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise StreamBroke(stalled(request.stall_timeout)) from None
            except Dropped:
                cut = httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body: incomplete chunked read"
                )
                raise StreamBroke(connection_closed(cut)) from None
            yield chunk
    finally:
        await reader.aclose()


async def _whole(reader: AsyncGenerator[bytes, None], limit: int) -> bytes:
    body = bytearray()
    async for chunk in reader:
        body += chunk
        if len(body) >= limit:
            break
    return bytes(body[:limit])
