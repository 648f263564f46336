"""An asyncio event loop on virtual time, for tests of code that paces itself with timers.

`time.monotonic` is replaced by a clock that moves only when the loop would otherwise sleep:
then it jumps straight to the next timer. A test that streams for "three seconds" at a frame
rate runs in milliseconds, and its timings are exact and repeatable on a noisy machine. Real I/O
ready at that moment is still served (the selector is polled first), so this is for code whose
waiting is timers, not sockets: the frame scheduler, the views, `play()`.
"""

from __future__ import annotations

import asyncio
import math
import selectors
import time
from collections.abc import Coroutine
from typing import Any, Optional, TypeVar

import pytest

T = TypeVar("T")


class VirtualClock:
    """Seconds that pass only when `advance()` says so."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move on by `seconds`, and always by at least one tick: a real clock never stands still,
        and code that waits "until a hair later" must see time pass."""
        self.now = max(self.now + max(0.0, seconds), math.nextafter(self.now, math.inf))


class _Selector(selectors.DefaultSelector):
    """Instead of sleeping until the next timer, move the clock there."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__()
        self._clock = clock

    def select(self, timeout: Optional[float] = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:  # no timer at all: only real I/O can wake the loop
            return super().select(None)
        self._clock.advance(timeout)
        return []


def run_virtual(monkeypatch: pytest.MonkeyPatch, main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on a fresh loop whose time, and `time.monotonic`, are virtual."""
    clock = VirtualClock()
    monkeypatch.setattr(time, "monotonic", clock)
    loop = asyncio.SelectorEventLoop(_Selector(clock))
    try:
        return loop.run_until_complete(main)
    finally:
        loop.close()
