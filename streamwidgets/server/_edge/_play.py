"""Playing a reply: the one implementation of what a router's answer does on the clock.

Both ways the embedded provider is reached use it: the HTTP edge (`_http`) writes what it plays
to a socket, the in-process exchange (`_direct`) hands it to a client on the same loop with no
socket at all. `answer()` is the reply to one whole request (a router that fails answers 500 in
the route's envelope); `play()` carries out a `StreamReply`'s steps on the token clock — frames
at their time (those due within a couple of milliseconds together, never by sleeping a fixed time
per token), the flavor's heartbeat after each `keepalive_interval` of silence, a stall, a cut-off
— as `Chunk`s (the bytes to send at once, and the tokens they carry) and one `Ending`. The
consumer sends each chunk before it asks for the next, so a slow reader slows the play as a
full socket does.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Union

from ._replies import Cutoff, Frame, Rejection, Reply, Router, Stall, StreamReply

__all__ = ["Chunk", "Ending", "Played", "answer", "play"]

#: Frames due this soon are sent now, together, instead of sleeping below the clock's grain.
_SLACK = 0.002
#: Send out what is pending once it reaches this size (and let other streams run).
_FLUSH_BYTES = 32 * 1024
_log = logging.getLogger("streamwidgets.server")


@dataclass(frozen=True)
class Chunk:
    """Send what is pending now (`data`, possibly empty: then only wait for the reader), which
    completes `tokens` tokens of the answer."""

    data: bytes
    tokens: int = 0


@dataclass(frozen=True)
class Ending:
    """How the stream ends: `finished` (the body ends properly), `cutoff` (it ends properly and
    the connection closes) or `abort` (the connection breaks off mid-body)."""

    how: str


Played = Union[Chunk, Ending]


def answer(
    router: Router, method: str, target: str, headers: Mapping[str, str], body: bytes, *, now: float, nonce: str
) -> Reply:
    """The router's reply to a whole request; a router that fails (a bug) answers 500 in the
    route's envelope, as a provider would, and the failure is logged for us."""
    try:
        return router.route(method, target, headers, body, now=now, nonce=nonce)
    except Exception as exc:
        _log.debug("the demo server failed on a request", exc_info=True)
        rejection = Rejection(
            500,
            f"The demo server failed on this request ({type(exc).__name__}).",
            type="server_error",
            code="server_error",
            anthropic_type="api_error",
        )
        return router.refuse(target, rejection, nonce)


def play(reply: StreamReply) -> AsyncGenerator[Played, None]:
    """`reply`'s steps on the token clock of the running loop, as chunks and their ending."""
    return _Player(reply).run()


class _Player:
    def __init__(self, reply: StreamReply) -> None:
        self.reply = reply
        self.loop = asyncio.get_running_loop()
        self.pending: list[bytes] = []
        self.pending_size = 0
        self.pending_tokens = 0
        self.tokens = 0
        self.last_write = self.loop.time()

    async def run(self) -> AsyncGenerator[Played, None]:
        pacing = self.reply.pacing
        start = self.loop.time()
        rate = pacing.tokens_per_second
        for step in self.reply.steps:
            if isinstance(step, Frame):
                if step.tokens or step.on_clock:
                    position = self.tokens + max(step.tokens - 1, 0)
                    due = start + pacing.first_token_delay + (position / rate if rate > 0 else 0.0)
                    if due - self.loop.time() > _SLACK:
                        yield self.flush()
                        async for beat in self.wait_until(due):
                            yield beat
                if step.data:
                    self.pending.append(step.data)
                    self.pending_size += len(step.data)
                self.tokens += step.tokens
                self.pending_tokens += step.tokens
                if self.pending_size >= _FLUSH_BYTES:
                    yield self.flush()
            elif isinstance(step, Stall):
                yield self.flush()
                async for beat in self.wait_until(math.inf):
                    yield beat
            elif isinstance(step, Cutoff):
                yield self.flush()
                yield Ending("abort" if step.abort else "cutoff")
                return
        yield self.flush()
        yield Ending("finished")

    def flush(self) -> Chunk:
        data = b"".join(self.pending)
        chunk = Chunk(data, self.pending_tokens)
        if data:
            self.last_write = self.loop.time()
        self.pending.clear()
        self.pending_size = self.pending_tokens = 0
        return chunk

    async def wait_until(self, due: float) -> AsyncIterator[Chunk]:
        """Sleep until `due`, sending the flavor's heartbeat after each `keepalive_interval` of silence."""
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
                yield self.flush()
            elif math.isinf(due):
                await asyncio.Event().wait()  # silence until the client leaves or the server stops
            else:
                await asyncio.sleep(due - now)
                return
