"""`DirectServer`: a router served in-process, with no socket — where none can be opened.

JupyterLite runs in the browser (no sockets at all), and a locked-down hub may forbid binding even
on loopback; there the embedded provider still answers, on the caller's own loop: a whole request
in (`exchange`), a `DirectResponse` out — its status, headers and body, the body played by the
same code that writes it to a socket (`_play.play`), so its bytes, pace, heartbeats and faults are
the HTTP edge's. A stream's connection record is kept as the edge keeps it: `finished`, or
`client_disconnected` when the reader stops (its task cancelled, or the body closed early).

What the socket needs and a call does not is left out: the `Host`/`Origin` guard (no page and no
other user can reach a function call), the header and time limits. The body limit is kept.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Optional

from ._guard import too_large
from ._http import ServerLimits
from ._play import Chunk, answer, play
from ._records import ConnectionRecord, Registry
from ._replies import JsonReply, Reply, SilentReply, StreamReply
from ._server import RouterFactory

__all__ = ["DirectServer", "DirectResponse", "Dropped"]


class Dropped(Exception):
    """The connection would have closed here: before an answer (`SilentReply("drop")`), or in
    the middle of a stream's body (a scripted `Cutoff(abort=True)`)."""


@dataclass(frozen=True)
class DirectResponse:
    """One answer: `headers` with names in lower case; `body` yields its bytes as the edge would
    write them (one item per write), and raises `Dropped` where the connection breaks off."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: AsyncGenerator[bytes, None]

    def header(self, name: str) -> Optional[str]:
        for key, value in self.headers:
            if key == name:
                return value
        return None


class DirectServer:
    """One router answering requests in-process: `await server.exchange(...)` is one request."""

    def __init__(self, router: RouterFactory, *, limits: Optional[ServerLimits] = None) -> None:
        self.limits = limits or ServerLimits()
        self._registry = Registry()
        self._router = router(self._registry.snapshot)

    @property
    def connections(self) -> list[ConnectionRecord]:
        """A snapshot (copies) of the records of streamed responses, oldest first."""
        return self._registry.snapshot()

    async def exchange(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> DirectResponse:
        """The answer to one whole request. A hanging reply waits until the caller gives up (its
        task is cancelled); a dropped one raises `Dropped`."""
        nonce = secrets.token_hex(12)
        fields = {name.lower(): value for name, value in headers.items()}
        reply: Reply
        if len(body) > self.limits.max_body:
            reply = self._router.refuse(target, too_large(self.limits.max_body), nonce)
        elif sys.platform == "emscripten":  # no threads in the browser; a request is read at once
            reply = answer(self._router, method, target, fields, body, now=time.time(), nonce=nonce)
        else:  # parsing a large body takes a moment, and the caller's loop keeps drawing meanwhile
            reply = await asyncio.to_thread(
                answer, self._router, method, target, fields, body, now=time.time(), nonce=nonce
            )
        if isinstance(reply, SilentReply):
            if reply.action == "hang":
                await asyncio.Event().wait()
            raise Dropped("the server closed the connection without an answer")
        if isinstance(reply, JsonReply):
            if reply.delay > 0:
                await asyncio.sleep(reply.delay)
            headers_out = (*_lower(reply.headers), ("content-length", str(len(reply.body))))
            return DirectResponse(reply.status, headers_out, _whole(reply.body))
        return DirectResponse(200, _lower(reply.headers), self._stream(reply))

    async def _stream(self, reply: StreamReply) -> AsyncGenerator[bytes, None]:
        record = self._registry.open(
            path=reply.path, api=reply.api, flavor=reply.flavor, model=reply.model, scenario=reply.scenario
        )
        played = play(reply)
        try:
            async for step in played:
                if isinstance(step, Chunk):
                    if step.data or step.tokens:
                        self._registry.progress(record, data=len(step.data), tokens=step.tokens)
                    if step.data:
                        yield step.data
                    continue
                self._registry.close(record, "finished")
                if step.how == "abort":
                    raise Dropped("the server broke the connection off in the middle of the body")
                return
        finally:
            self._registry.close(record, "client_disconnected")  # ignored once finished
            await played.aclose()


async def _whole(body: bytes) -> AsyncGenerator[bytes, None]:
    if body:
        yield body


def _lower(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return tuple((name.lower(), value) for name, value in headers)
