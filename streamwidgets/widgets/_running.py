"""The streams running in the background of a process, and `cancel_all()`.

Kept apart from the handle so that the cell bookkeeping (`_cells.py`: running a cell again cancels
what it started) and the handle (`_handle.py`: a stream that starts and ends) both read one
registry without importing each other. It knows nothing of a handle but `cancel()`.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any, Protocol

__all__ = ["Running", "running", "track", "untrack", "cancel_all"]


class Running(Protocol):
    """What the registry asks of a running stream (`StreamHandle` is one)."""

    def cancel(self, why: Any = None) -> bool: ...


#: Running handles per event loop: the strong references that keep background tasks alive, and
#: what `cancel_all()` walks. Entries leave when their stream ends; a loop's set dies with it.
_RUNNING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[Any]] = weakref.WeakKeyDictionary()


def track(loop: asyncio.AbstractEventLoop, handle: Running) -> None:
    """`handle` runs on `loop` until `untrack`: held, and reached by `cancel_all()`."""
    _RUNNING.setdefault(loop, set()).add(handle)


def untrack(loop: asyncio.AbstractEventLoop, handle: Running) -> None:
    handles = _RUNNING.get(loop)
    if handles is not None:
        handles.discard(handle)


def running() -> list[Any]:
    """The streams still running, on every event loop."""
    return [handle for handles in list(_RUNNING.values()) for handle in list(handles)]


def cancel_all() -> int:
    """Cancel every running stream (the kernel's interrupt button does not); return how many."""
    return sum(handle.cancel() for handle in running())
