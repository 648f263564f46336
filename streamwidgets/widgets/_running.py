"""The streams running in the background of a process, and `cancel_all()`.

Kept apart from the handle so that the cell bookkeeping (`_cells.py`: running a cell again cancels
what it started) and the handle (`_handle.py`: a stream that starts and ends) both read one
registry without importing each other. It knows nothing of a handle but `cancel()`.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any, Protocol

__all__ = ["Running", "running", "track", "untrack", "cancel_all", "follows", "shown_by"]


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


#: The handle whose view a widget is, by the widget's id (a handle registers its view as it is
#: made): how an output that shows a widget, alone or in a box, finds the answer in it.
_SHOWN: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def follows(handle: Any) -> None:
    """Register a handle with its view, so that an output showing the view's widget finds it."""
    view = handle.view
    if view is not None:
        _SHOWN[id(view.widget)] = handle


def shown_by(widget: Any) -> Any:
    """The handle whose view `widget` is, or None."""
    handle = _SHOWN.get(id(widget))
    return handle if handle is not None and handle.view is not None and handle.view.widget is widget else None
