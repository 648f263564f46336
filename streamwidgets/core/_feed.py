"""`Feed`: where every stream enters the pipeline, whatever its source — a live HTTP body, a
recording, raw SSE bytes, the objects of an openai / anthropic SDK stream.

`Feed` is sans-IO: it turns bytes into normalized events (through a `Normalizer`), folds them into
a `StreamState` with the time they arrived, calls `notify()` so that a view can redraw, and hands
back the events it folded (the tap that `astream()` yields from). Its async driver is the network
edge's feed loop (`net._pipeline`), which reads a source and settles how the stream ended;
`parse()` drives it synchronously.

The feed also keeps the stream within its `Limits`: an event too long to keep is discarded by
the decoder, tool calls and citations past their counts are refused by the state (one warning
each here, the stream goes on), and an answer that reaches its size limit is cut there and ends
as incomplete. What came before a limit is always kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Optional, Union

from ._events import ErrorEvent, Event, Problem, ReasoningDelta, RefusalDelta, TextDelta, ToolCallDelta
from ._limits import DEFAULT_LIMITS, Limits
from ._state import RetryNote, StreamState, Warnings
from .dialects import Normalizer

__all__ = ["Feed", "Item", "StreamBroke", "slices", "SLICE"]

#: What a source hands the feed: bytes of the wire, or events it made itself (an HTTP error).
Item = Union[bytes, Sequence[Event]]
#: The terminator of the dialects that end with a `data: [DONE]` line (chat), as the wire carries it.
_DONE = b"data: [DONE]\n\n"
Clock = Callable[[], float]
#: The most bytes pushed into the feed at once: a quarter of what the inflater makes in one step,
#: since its 64 kB of blank lines (65,536 empty events) take ~30 ms to parse, and the feed loop
#: hands the event loop back between pushes only.
SLICE = 1 << 14


def slices(item: Item) -> Iterable[Item]:
    """An item as the feed takes it: bytes in slices of at most `SLICE` (a live body's reads are
    that already; a whole body, a recording's line or an SDK's event may be larger), so that one
    push decodes a bounded number of events; ready-made events as they are. The state is the
    same however the bytes are cut."""
    if not isinstance(item, bytes) or len(item) <= SLICE:
        return (item,)
    view = memoryview(item)
    return (bytes(view[i : i + SLICE]) for i in range(0, len(item), SLICE))  # one copy at a time


def _monotonic() -> float:
    return time.monotonic()  # looked up at each call, so that a test's virtual clock applies


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
        clock: Optional[Clock] = _monotonic,
        limits: Limits = DEFAULT_LIMITS,
        redact: Optional[Callable[[str], str]] = None,
    ) -> None:
        self.state = state
        self.normalizer = normalizer
        self.notify = notify or _nothing
        self._clock = clock
        self.limits = limits
        #: Removes the stream's key from what a peer says (an error event that quotes it, an
        #: unreadable event that contains it) before the state keeps it. None: no key to remove.
        self._redact = redact
        normalizer.decoder.max_event_chars = limits.max_event_chars
        self._dropped = normalizer.decoder.dropped
        if isinstance(state.warnings, Warnings):
            state.warnings.limit = limits.max_warnings
        state.tool_calls.limit = limits.max_tool_calls
        state.citations.limit = limits.max_citations
        self._calls_said = self._citations_said = False  # refused past their limits: said once each

    def now(self) -> Optional[float]:
        return self._clock() if self._clock is not None else None

    def begin(self) -> None:
        """The request was sent now (the start of time to first token); a try sent again after
        one was turned away begins anew, so that time to first token is the model's, not the
        queue's."""
        self.state.begin(self.now())

    def retrying(self, note: RetryNote) -> None:
        """A try was turned away and the next one waits (or begins): the state says so, before
        any event arrived, and the view counts down."""
        self.state.retrying(note)
        self.notify()

    def implied_end(self) -> Optional[bytes]:
        """The bytes of the terminator that a source's own end stands for, when the stream came
        through a reader that drops it (the openai SDK swallows chat's `data: [DONE]`): a stream
        whose dialect ends with a `data: [DONE]` line (its declared rule, `lone_done`) that gave
        its finish reason and then ended. None otherwise — the state's end rules are left to say
        how the stream ended."""
        dialect = self.normalizer.dialect
        if dialect is not None and dialect.lone_done and self.state.finish_reason is not None:
            return _DONE
        return None

    def push(self, item: Item) -> Sequence[Event]:
        """Fold one network read (or ready-made events) into the state; return the events it
        carried. Nothing after the terminator is part of the answer, so once it came, reads are
        not even decoded. An answer that reaches its size limit is cut there and ends
        (incomplete) here."""
        state = self.state
        if state.terminated or state.done:
            return ()
        normalizer = self.normalizer
        events = normalizer.feed(item) if isinstance(item, bytes) else item
        if self._redact is not None and events:
            events = [_redacted(event, self._redact) for event in events]
        if normalizer.decoder.dropped != self._dropped:
            self._dropped = normalizer.decoder.dropped
            state.apply(Problem(self.limits.event_too_long()), self.now())
        if events:
            before = state.output_lengths()
            state.extend(events, self.now())
            if state.tool_calls.refused or state.citations.refused:
                self._say_refused()
            if state.output_length > self.limits.max_answer_chars:
                state.clip(self.limits.max_answer_chars)
                state.close(reason=self.limits.answer_reached(), now=self.now())
                # The events tap (`astream`) yields what the state kept, kind by kind, and no more.
                after = state.output_lengths()
                events = _within(events, [max(0, a - b) for a, b in zip(after, before, strict=True)])
            self.notify()
        return events

    def _say_refused(self) -> None:
        """Tool calls or citations were refused past their limits: said once each."""
        state = self.state
        if state.tool_calls.refused and not self._calls_said:
            self._calls_said = True
            state.note(self.limits.tool_calls_reached())
        if state.citations.refused and not self._citations_said:
            self._citations_said = True
            state.note(self.limits.citations_reached())

    def end(self, reason: Optional[str] = None) -> Sequence[Event]:
        """The source ran out: close the state and return the last events (what the decoder
        held back). `reason` says why, should the terminator be missing.
        """
        now = self.now()
        state = self.state
        if state.done:  # ended already (a limit reached)
            return ()
        events = list(self.normalizer.close())
        if self._redact is not None:
            events = [_redacted(event, self._redact) for event in events]
            reason = self._redact(reason) if reason else reason
        state.extend(events, now)
        if state.tool_calls.refused or state.citations.refused:
            self._say_refused()
        state.close(reason=reason, now=now)
        self.notify()
        return events

    def fail(self, error: ErrorEvent, reason: Optional[str] = None) -> Sequence[Event]:
        """Something failed that the stream itself did not say (a bug, a surprise from a source):
        it becomes the state's error, with everything that arrived kept."""
        if self._redact is not None:
            error = replace(error, message=self._redact(error.message))
        self.state.apply(error, self.now())
        return [error, *self.end(reason)]

    def cancel(self) -> None:
        """The user stopped it: the state keeps what arrived and says cancelled."""
        self.state.close(cancelled=True, now=self.now())
        self.notify()


def _redacted(event: Event, redact: Callable[[str], str]) -> Event:
    """`event`, with the words a peer said (an error's message, a problem) redacted."""
    if type(event) is ErrorEvent or type(event) is Problem:
        message = redact(event.message)
        if message != event.message:
            return replace(event, message=message)
    return event


def _within(events: Sequence[Event], rooms: list[int]) -> list[Event]:
    """`events` cut to what the state kept of them: `rooms` holds the characters of text,
    reasoning, refusal and tool-call arguments kept of this batch (`StreamState.output_lengths`);
    each kind's events are kept in order up to its room, the one that crosses it cut."""
    kinds = {TextDelta: 0, ReasoningDelta: 1, RefusalDelta: 2}
    kept: list[Event] = []
    for event in events:
        if isinstance(event, (TextDelta, ReasoningDelta, RefusalDelta)):
            kind = kinds[type(event)]
            if rooms[kind] <= 0:
                continue
            if len(event.text) > rooms[kind]:
                event = replace(event, text=event.text[: rooms[kind]])
            rooms[kind] -= len(event.text)
        elif isinstance(event, ToolCallDelta):
            if len(event.arguments) > rooms[3]:
                event = replace(event, arguments=event.arguments[: max(0, rooms[3])])
            rooms[3] -= len(event.arguments)
        kept.append(event)
    return kept
