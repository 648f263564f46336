"""`SourceContext`: what a source sees of its part while it hands out its items.

Its own module so that what reports through it (the transport, the retry loop) needs nothing
else of the sources: the network edge reads one way, downward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from ..core import Event, Feed, RetryNote
from ._reads import PAUSE, Pause
from ._recording import Recorder

if TYPE_CHECKING:
    from ..core.dialects import WholeBody

__all__ = ["SourceContext"]


class SourceContext:
    """What a source gets while it hands out its items: a small view of the part, never its feed.

    A source reads through it the run's read pause (`pause`, for network reads: `_reads.Pacer`),
    when the request was sent (`started_at`), and the dialect reader for a body that comes whole
    (`read_whole_body`); and it reports what is no item: a retry's countdown (`retrying`, and
    `restarted` when the next try is sent), a refused try's status and body for a recording
    (`record_response`), events learned beside the items (`say`: the lesson the demo names in a
    header), and that it reached its own end (`ended`: a reader such as an SDK may have
    swallowed the terminator on the way). The feed loop (`_pipeline.pump`) makes one per part and
    decides what each report becomes: the state's retry note, events folded before the next
    item, the dialect's terminator (`Feed.implied_end`).
    """

    def __init__(self, feed: Feed, recorder: Optional[Recorder] = None, pause: Pause = PAUSE) -> None:
        self._feed = feed
        self._recorder = recorder
        #: How long a network read may wait while the answer flows (the run's, `RunOptions.pause`).
        self.pause = pause
        self._said: list[Sequence[Event]] = []
        #: The source reached its own end (`ended()`), not a break, a limit or a cancel.
        self.reached_end = False

    @property
    def started_at(self) -> Optional[float]:
        """When the request was sent, on the feed's clock (the first try's, until a retry sends
        it again)."""
        return self._feed.state.started_at

    def retrying(self, note: RetryNote) -> None:
        """A try was turned away and the next one waits (or begins): the countdown to show."""
        self._feed.retrying(note)

    def restarted(self) -> None:
        """The next try is sent now: time to first token counts from here, and a recording forgets
        the refused try."""
        if self._recorder is not None:
            self._recorder.restart()
        self._feed.begin()

    def record_response(self, status: int, body: bytes) -> None:
        """The status and (redacted) body of a non-2xx answer, for a recording of the stream."""
        if self._recorder is not None:
            self._recorder.response(status, body)

    def read_whole_body(self, body: bytes) -> WholeBody:
        """A body that is no event stream (a whole JSON answer), read by the stream's dialect."""
        return self._feed.normalizer.read_whole_body(body)

    def say(self, *events: Event) -> None:
        """Events the source learned beside its items (a response's headers): folded into the
        state, and handed to a sink that takes events, before the next item."""
        if events:
            self._said.append(events)

    def ended(self) -> None:
        """The source ran out of items at its own end (an SDK stream that finished)."""
        self.reached_end = True

    def said(self) -> list[Sequence[Event]]:
        """What `say()` was told since the last call (the feed loop takes it)."""
        said, self._said = self._said, []
        return said
