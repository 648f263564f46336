"""The frame scheduler: one per event loop, shared by every view that streams on it.

jupyter_server drops iopub messages above 1,000 per second (`iopub_msg_rate_limit`), and a browser
choked with updates stutters well before that. So the views of a kernel share one budget of comm
messages per second (a token bucket) however many of them stream, and take turns when it runs
short: views wait in the order they became dirty, and a view that was drawn goes to the back of
the line (round-robin).

This is also the one place that decides *when* each view is drawn (its `Pace`): at most
`max_fps` frames a second; after a frame that cost much besides the answer text it carried
(more messages, the committed text sent again, new widgets), the next one waits until that
overhead fits in `overhead_bytes_per_second` — the answer itself is sent once whatever the pace,
so a stream pays only for what it sends beyond it; and a slow frame (the header with its clock, usage and
its sparkline, the problem box) once every 1/`slow_fps` seconds — every second while the stream
lives, even when no event arrives, so that its clock ticks. A view only says what changed
(`dirty`, and `news` for a change worth a frame at once: a new phase, a retry's countdown) and
what a frame cost.

Two kinds of frame go first. A view's first token (any new phase) is drawn at once while there
is budget — which is always, unless many streams start together — and otherwise ahead of the
line, ignoring the view's frame interval. A stream's final frame is drawn the same way, and the
stream's task waits for it (`await finish(view)`), so that an awaited stream is fully drawn.

Frames are timer callbacks on the loop (`call_later`), not a task: nothing to cancel or orphan, and
no wake-ups at all while nothing streams.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional, Protocol

from ._cells import in_cell, touched
from ._traffic import ENVELOPE_BYTES, NOTHING, Cost

__all__ = ["Drawable", "Pace", "FrameScheduler", "scheduler_for"]

_MIN_WAIT = 0.001
#: The header's clock shows whole seconds: it needs a frame once a second, no more.
_TICK = 1.0


@dataclass(frozen=True)
class Pace:
    """How often a view asks to be drawn: `max_fps` frames a second at most, the header, usage
    and problem box `slow_fps` times a second, and no more than `overhead_bytes_per_second` spent
    besides the answer text and one message a frame.

    What a live answer costs beyond its text grows as the square root of text rate times frame
    rate (the committed text sent again between seals, against the ~2 KB a seal costs), so a
    fixed overhead budget gives a slow stream many frames and a fast one few: 5 KB/s draws a
    50 tokens/s answer about 10 times a second and a 1,000 tokens/s one about twice (a screenful
    a frame), at about 3 bytes on the wire per byte of markdown — its HTML, sent once, is about
    1.7 of them (benchmarks/README.md).
    """

    max_fps: float = 20.0
    slow_fps: float = 1.0
    overhead_bytes_per_second: float = 5_000.0

    def __post_init__(self) -> None:
        if self.max_fps <= 0 or self.slow_fps <= 0 or self.overhead_bytes_per_second <= 0:
            raise ValueError("max_fps, slow_fps and overhead_bytes_per_second must be positive")

    @property
    def frame_interval(self) -> float:
        return 1.0 / self.max_fps

    @property
    def slow_interval(self) -> float:
        return 1.0 / self.slow_fps


class Drawable(Protocol):
    """What the scheduler needs from a view (`StreamView` is one): what changed, and a way to
    draw a frame that says what it cost."""

    @property
    def pace(self) -> Pace: ...

    @property
    def dirty(self) -> bool: ...

    @property
    def news(self) -> bool: ...

    @property
    def live(self) -> bool: ...

    def draw(self, now: float, *, final: bool = False) -> Cost: ...

    def draw_slow(self, now: float, *, final: bool = False) -> Cost: ...


@dataclass
class _Turn:
    """What the scheduler remembers of a view's frames: when the last one was drawn and what it
    spent beyond the answer text, and when the slow panes were last drawn."""

    drawn_at: float = float("-inf")
    overhead: int = 0
    slow_at: float = float("-inf")


def _interval(view: Drawable, turn: _Turn) -> float:
    """Seconds from the view's last frame to its next ordinary one."""
    pace = view.pace
    return max(pace.frame_interval, turn.overhead / pace.overhead_bytes_per_second)


class FrameScheduler:
    """Draws views on one event loop within `max_messages_per_second` comm messages.

    Up to `burst` messages may go out at once after a quiet spell, and the bucket refills at the
    rest of the budget, so that no one-second window carries more than `max_messages_per_second`
    (give or take the last frame's few messages).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        max_messages_per_second: float = 200.0,
        burst: float = 20.0,
        clock: Optional[Callable[[], float]] = None,
    ) -> None:
        if max_messages_per_second <= burst:
            raise ValueError("max_messages_per_second must exceed burst")
        self._loop = loop
        #: The loop's own clock by default: frames are timers on that loop (`call_later`).
        self._clock = clock = clock or loop.time
        self._capacity = burst
        self._rate = max_messages_per_second - burst
        self._tokens = burst
        self._stamp = clock()
        #: Views to draw ahead of the line; the future is set for a final frame someone awaits.
        self._urgent: dict[Drawable, Optional[asyncio.Future[None]]] = {}
        self._pending: dict[Drawable, None] = {}
        self._live: dict[Drawable, None] = {}
        self._turns: dict[Drawable, _Turn] = {}
        self._timer: Optional[asyncio.TimerHandle] = None
        self._timer_at = float("inf")
        #: Comm messages sent through this scheduler, and frames drawn (for benchmarks and tests).
        self.messages = 0
        self.frames = 0

    # ------------------------------------------------------------------ what views call

    def add(self, view: Drawable) -> None:
        """A view that streams: its live clock ticks even while no event arrives."""
        self._live[view] = None
        self.notify(view)

    def notify(self, view: Drawable) -> None:
        """The view's state changed: draw it now if it may, else at its next turn.

        Called after every batch of events, so the common case — the view already waits for its
        turn — returns at once.
        """
        if view in self._urgent:
            return
        urgent = view.news
        if not urgent and view in self._pending:
            return
        now = self._clock()
        self._refill(now)
        free = self._tokens >= 1 and not self._urgent
        if free and (urgent or (not self._pending and now >= self.ready_at(view))):
            self._pending.pop(view, None)
            self._draw(view, now)
            if self._timer is None:
                self._schedule(now)
        elif urgent:
            self._pending.pop(view, None)
            self._urgent[view] = None
            self._arm(self._budget_at(now), now)
        else:
            self._pending[view] = None
            self._arm(max(self.ready_at(view), self._budget_at(now)), now)

    async def finish(self, view: Drawable) -> None:
        """The stream ended: draw everything, ahead of the line, and forget the view.

        Waits only while the budget is spent. If the waiting task is cancelled, the frame is
        drawn at once: a stream is never left half drawn.
        """
        self._pending.pop(view, None)
        self._live.pop(view, None)
        self._urgent.pop(view, None)
        now = self._clock()
        self._refill(now)
        if self._tokens >= 1 and not self._urgent:
            self._draw(view, now, final=True)
            self._turns.pop(view, None)
            self._schedule(now)
            return
        done: asyncio.Future[None] = self._loop.create_future()
        self._urgent[view] = done
        self._arm(self._budget_at(now), now)
        try:
            await done
        except asyncio.CancelledError:
            if self._urgent.pop(view, None) is not None:
                self._draw(view, self._clock(), final=True)
            raise
        finally:
            self._turns.pop(view, None)

    def remove(self, view: Drawable) -> None:
        self._pending.pop(view, None)
        self._live.pop(view, None)
        self._turns.pop(view, None)
        done = self._urgent.pop(view, None)
        if done is not None and not done.done():
            done.cancel()

    @property
    def idle(self) -> bool:
        return not self._urgent and not self._pending and not self._live

    # ------------------------------------------------------------------ pacing

    def ready_at(self, view: Drawable) -> float:
        """The earliest time for the view's next ordinary frame: its frame rate, and what its last
        frame spent beyond the answer text (a long live tail, a table being written, new widgets
        push the next frame back)."""
        turn = self._turns.get(view)
        if turn is None:
            return float("-inf")
        return turn.drawn_at + _interval(view, turn)

    def next_frame_in(self, view: Drawable) -> float:
        """Seconds until a frame could show what the view's stream reads from now on: its next
        frame, or the one after it when the next one waits to show what was already read (one
        frame interval later, as its last frame set it). The view's reads wait until then
        (`StreamHandle`): reads in between are wake-ups that nobody sees."""
        turn = self._turns.get(view)
        if turn is None:
            return 0.0
        now = self._clock()
        at = max(self.ready_at(view), now)
        if view in self._pending or view in self._urgent:
            at += _interval(view, turn)
        return at - now

    def tick_at(self, view: Drawable) -> Optional[float]:
        """When the view's header clock next needs a frame, or None once its stream ended."""
        if not view.live:
            return None
        turn = self._turns.get(view)
        slow_at = turn.slow_at if turn is not None else float("-inf")
        return slow_at + max(_TICK, view.pace.slow_interval)

    def _wants(self, view: Drawable, now: float) -> bool:
        tick = self.tick_at(view)
        return view.dirty or (tick is not None and now >= tick)

    # ------------------------------------------------------------------ frames

    def _draw(self, view: Drawable, now: float, *, final: bool = False) -> int:
        turn = self._turns.setdefault(view, _Turn())
        news = final or view.news
        cost = in_cell(view.draw, now, final=final)  # the running cell's output (see `cells`)
        slow = NOTHING
        if news or now - turn.slow_at >= view.pace.slow_interval:
            slow = in_cell(view.draw_slow, now, final=final)
            turn.slow_at = now
        # A frame's first message is what being live costs; what it spends beyond that and beyond
        # the answer text it carries (the committed text sent again, new widgets, and the header's
        # clock and usage line of a routine slow frame — not of news, which goes out at once) is paced.
        paced = cost if news else cost + slow
        turn.drawn_at, turn.overhead = now, max(0, paced.overhead - ENVELOPE_BYTES)
        sent = cost.messages + slow.messages
        if sent:
            touched(getattr(view, "widget", None))
        self._tokens -= sent
        self.messages += sent
        self.frames += 1
        return sent

    def _refill(self, now: float) -> None:
        self._tokens = min(self._capacity, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now

    def _frame(self) -> None:
        self._timer = None
        self._timer_at = float("inf")
        now = self._clock()
        self._refill(now)
        while self._urgent and self._tokens >= 1:
            view, done = next(iter(self._urgent.items()))
            del self._urgent[view]
            self._draw(view, now, final=done is not None)
            if done is not None and not done.done():
                done.set_result(None)
        for view in self._live:
            if view not in self._pending and view not in self._urgent and self._wants(view, now):
                self._pending[view] = None
        for view in list(self._pending):
            if self._tokens < 1:
                break
            if now < self.ready_at(view):
                continue
            del self._pending[view]
            self._draw(view, now)
        self._schedule(now)

    def _budget_at(self, now: float) -> float:
        """When the bucket holds a whole message again. At least a millisecond away: a bucket a
        rounding error short of 1 would otherwise re-arm a zero-delay timer until time moved."""
        return now if self._tokens >= 1 else now + max((1 - self._tokens) / self._rate, _MIN_WAIT)

    def _schedule(self, now: float) -> None:
        """Arm the timer for the earliest moment a frame can do something."""
        due = float("inf")
        if self._urgent:
            due = self._budget_at(now)
        elif self._pending:
            ready = min(self.ready_at(view) for view in self._pending)
            due = max(ready, self._budget_at(now))
        for view in self._live:
            if view not in self._pending and view not in self._urgent:
                tick = self.tick_at(view)
                if tick is not None and tick < due:
                    due = tick
        if due == float("inf"):
            if self._timer is not None:
                self._timer.cancel()
                self._timer, self._timer_at = None, due
            return
        self._arm(due, now)

    def _arm(self, due: float, now: float) -> None:
        """Make sure a frame runs at `due` at the latest."""
        due = max(due, now)
        if self._timer is not None:
            if self._timer_at <= due:
                return
            self._timer.cancel()
        self._timer = self._loop.call_later(due - now, self._frame)
        self._timer_at = due


_SCHEDULERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FrameScheduler] = weakref.WeakKeyDictionary()


def scheduler_for(loop: Optional[asyncio.AbstractEventLoop] = None) -> FrameScheduler:
    """The scheduler of `loop` (default: the running loop), made on first use.

    This is the module's one piece of shared state, and it has to be: the budget is per kernel,
    and the views that share it do not know about each other. It dies with its loop.
    """
    loop = loop or asyncio.get_running_loop()
    scheduler = _SCHEDULERS.get(loop)
    if scheduler is None:
        scheduler = _SCHEDULERS[loop] = FrameScheduler(loop)
    return scheduler
