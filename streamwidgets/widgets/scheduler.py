"""The frame scheduler: one per event loop, shared by every view that streams on it.

jupyter_server drops iopub messages above 1,000 per second (`iopub_msg_rate_limit`), and a browser
choked with updates stutters well before that. So the views of a kernel share one budget of comm
messages per second (a token bucket) however many of them stream, and take turns when it runs
short: views wait in the order they became dirty, and a view that was drawn goes to the back of
the line (round-robin). Each view also keeps its own pace (frames and bytes per second, see
`StreamView.ready_at`).

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
from typing import Optional, Protocol

from .cells import in_cell, touched

__all__ = ["Drawable", "FrameScheduler", "scheduler_for"]

_MIN_WAIT = 0.001


class Drawable(Protocol):
    """What the scheduler needs from a view (`StreamView` is one)."""

    def ready_at(self) -> float: ...

    def is_urgent(self) -> bool: ...

    def wants_refresh(self, now: float) -> bool: ...

    def next_tick_at(self) -> Optional[float]: ...

    def refresh(self, now: Optional[float] = None, *, final: bool = False) -> int: ...


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
        urgent = view.is_urgent()
        if not urgent and view in self._pending:
            return
        now = self._clock()
        self._refill(now)
        free = self._tokens >= 1 and not self._urgent
        if free and (urgent or (not self._pending and now >= view.ready_at())):
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
            self._arm(max(view.ready_at(), self._budget_at(now)), now)

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

    def remove(self, view: Drawable) -> None:
        self._pending.pop(view, None)
        self._live.pop(view, None)
        done = self._urgent.pop(view, None)
        if done is not None and not done.done():
            done.cancel()

    @property
    def idle(self) -> bool:
        return not self._urgent and not self._pending and not self._live

    # ------------------------------------------------------------------ frames

    def _draw(self, view: Drawable, now: float, *, final: bool = False) -> int:
        sent = in_cell(view.refresh, now, final=final)  # the running cell's output (see `cells`)
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
            if view not in self._pending and view not in self._urgent and view.wants_refresh(now):
                self._pending[view] = None
        for view in list(self._pending):
            if self._tokens < 1:
                break
            if now < view.ready_at():
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
            ready = min(view.ready_at() for view in self._pending)
            due = max(ready, self._budget_at(now))
        for view in self._live:
            if view not in self._pending and view not in self._urgent:
                tick = view.next_tick_at()
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
