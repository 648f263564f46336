"""The one feed loop: every way a stream arrives — a live HTTP body, a recording, raw SSE bytes,
the objects of an openai / anthropic SDK stream — enters the same `Feed`.

`Feed` is sans-IO: it turns bytes into normalized events (through a `Normalizer`), folds them into
a `StreamState` with the time they arrived, and calls `notify()` so that a view can redraw.
`drain()` is its async driver: it reads an async iterable of items, and settles how the stream
ended — the terminator (the answer is complete at once: reading stops and the source is closed,
even if the server keeps the body open), the end of the items, a broken stream (`StreamBroke`),
a surprise (an exception), or a cancel, which closes the state as cancelled and propagates.

The feed also keeps the stream within its `Limits`: an event too long to keep is discarded by
the decoder (one warning here), an answer that reaches its size limit is cut there and ends as
incomplete, and `drain()` stops at the deadline. The text up to a limit is always kept.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from typing import Optional, Union

from .dialects import Normalizer
from .events import ErrorEvent, Event, Problem, Terminator
from .limits import DEFAULT_LIMITS, Limits
from .state import StreamState, Warnings

__all__ = ["Feed", "Item", "StreamBroke", "drain"]

#: What a source hands the feed: bytes of the wire, or events it made itself (an HTTP error).
Item = Union[bytes, Sequence[Event]]
Clock = Callable[[], float]


class StreamBroke(Exception):
    """The stream stopped before its terminator; the message says why, in plain words."""


def _nothing() -> None:
    pass


class Feed:
    """Items in, a `StreamState` kept current, `notify()` after each change."""

    def __init__(
        self,
        state: StreamState,
        normalizer: Normalizer,
        *,
        notify: Optional[Callable[[], None]] = None,
        clock: Optional[Clock] = time.monotonic,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.state = state
        self.normalizer = normalizer
        self.notify = notify or _nothing
        self._clock = clock
        self.limits = limits
        normalizer.decoder.max_event_chars = limits.event_chars
        self._dropped = normalizer.decoder.dropped
        if isinstance(state.warnings, Warnings):
            state.warnings.limit = limits.warnings

    def now(self) -> Optional[float]:
        return self._clock() if self._clock is not None else None

    def begin(self) -> None:
        """The request was sent now (the start of time to first token)."""
        self.state.begin(self.now())

    def push(self, item: Item) -> None:
        """Fold one network read (or ready-made events) into the state. Nothing after the
        terminator is part of the answer, so once it came, reads are not even decoded. An answer
        that reaches its size limit is cut there and ends (incomplete) here."""
        state = self.state
        if state.terminated or state.done:
            return
        normalizer = self.normalizer
        events = normalizer.feed(item) if isinstance(item, bytes) else item
        if normalizer.decoder.dropped != self._dropped:
            self._dropped = normalizer.decoder.dropped
            state.apply(Problem(self.limits.event_too_long()), self.now())
        if events:
            state.extend(events, self.now())
            if state.output_length > self.limits.answer_chars:
                state.clip(self.limits.answer_chars)
                state.close(reason=self.limits.answer_reached(), now=self.now())
            self.notify()

    def end(self, reason: Optional[str] = None, *, done_swallowed: bool = False) -> StreamState:
        """The source ran out. `reason` says why, should the terminator be missing.

        `done_swallowed`: the source (an SDK) hides chat's `data: [DONE]`, so a chat stream that
        reached a finish reason counts as terminated.
        """
        now = self.now()
        state = self.state
        if state.done:  # ended already (a limit reached)
            return state
        state.extend(self.normalizer.close(), now)
        if done_swallowed and self.normalizer.dialect_name == "chat" and state.finish_reason is not None:
            state.apply(Terminator(), now)
        state.close(reason=reason, now=now)
        self.notify()
        return state

    def cancel(self) -> StreamState:
        """The user stopped it: the state keeps what arrived and says cancelled."""
        self.state.close(cancelled=True, now=self.now())
        self.notify()
        return self.state


def _surprise(exc: Exception) -> ErrorEvent:
    return ErrorEvent(f"{type(exc).__name__}: {exc}", "internal_error")


async def _finish_source(source: AsyncIterator[Item], feed: Feed, describe: Callable[[Exception], ErrorEvent]) -> None:
    """Let go of a source after the terminator: the state is closed already, so nothing read
    from here on counts.

    Every source is an async generator (the client's response, a replay, an SDK stream):
    closing one runs its `finally` and exits its `async with` blocks, so the HTTP response, and
    with it the connection, is closed now — not when the server ends the body, nor when the
    generator is collected.
    """
    try:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
    except Exception as exc:  # the answer is complete; a failure after it is only worth a warning
        feed.state.note(f"after the stream ended: {describe(exc).message}")


async def drain(
    items: AsyncIterable[Item],
    feed: Feed,
    *,
    ended: Optional[str],
    done_swallowed: bool = False,
    describe: Callable[[Exception], ErrorEvent] = _surprise,
) -> StreamState:
    """Push every item into `feed` and settle the end.

    `ended` is the reason an incomplete stream is given when the items simply run out (None:
    the state's own words); a
    `StreamBroke` from the source gives its own; any other exception becomes the state's error
    (through `describe`, which may redact). A cancel closes the state as cancelled and re-raises.

    The terminator ends the answer: the state is closed at once (the view says complete), then
    the source is let go (`_finish_source`), so a server that keeps the body open after
    `[DONE]`, `message_stop` or `response.completed` costs no wait for the stall timeout. This
    is the one place that stops at the terminator, for live streams, replays and SDK streams
    alike. `done_swallowed` marks an SDK stream (the SDKs hide chat's `[DONE]`).
    """
    import anyio  # the async edge only: the sans-IO Feed above needs no event loop

    source = aiter(items)
    if feed.limits.deadline is not None:
        source = _within(source, feed.limits.deadline, feed.limits.deadline_passed())
    state = feed.state
    try:
        async for item in source:
            feed.push(item)
            if state.terminated or state.done:
                break
        else:
            return feed.end(ended, done_swallowed=done_swallowed)
    except anyio.get_cancelled_exc_class():
        feed.cancel()
        raise
    except StreamBroke as why:
        return feed.end(str(why))
    except Exception as exc:  # a bug or a surprise must still end up in the state, with the answer kept
        state.apply(describe(exc), feed.now())
        return feed.end(ended)
    feed.end(ended)  # complete now (or ended at a limit), before the source is let go
    await _finish_source(source, feed, describe)
    return state


async def _within(source: AsyncIterator[Item], seconds: float, why: str) -> AsyncIterator[Item]:
    """`source`, until `seconds` from now: then the read under way is cancelled (which closes the
    source, and with it the connection) and the stream breaks with `why`."""
    import anyio

    end = anyio.current_time() + seconds
    try:
        while True:
            with anyio.move_on_after(max(0.0, end - anyio.current_time())) as scope:
                try:
                    item = await source.__anext__()
                except StopAsyncIteration:
                    return
            if scope.cancelled_caught:
                raise StreamBroke(why)
            yield item
    finally:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
