"""Which marimo cell started a stream: running that cell again, or deleting it, cancels it.

marimo keeps an asyncio task that a cell started running when the cell runs again (on purpose:
background work may outlive its cell), so an old answer would go on writing out of sight and
holding the provider's slot. What marimo does tell, through its public interface, is a `mo.Thread`:
when the cell that started the thread is run again, deleted or interrupted, the thread's
`should_exit` turns true. So each stream shown in marimo starts one small `mo.Thread` in its cell,
which looks every `POLL` seconds and cancels the stream once its cell is gone (the handle's
`cancel` reaches the task through its loop from any thread). The thread ends with the stream,
unless the answer can still be continued from its view.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol

__all__ = ["in_marimo", "cancel_with_cell", "POLL"]

#: Seconds between two looks at the cell (a re-run is noticed within this).
POLL = 0.05


class _Watched(Protocol):
    @property
    def done(self) -> bool: ...

    def cancel(self, why: Any = None) -> bool: ...


def in_marimo() -> bool:
    """A marimo notebook (`marimo edit`, `marimo run`) runs this code."""
    marimo = sys.modules.get("marimo")
    return marimo is not None and bool(marimo.running_in_notebook())


def cancel_with_cell(handle: _Watched, goes_on: Any = None) -> Any:
    """Cancel `handle` when the marimo cell running now is run again or deleted; return the
    watching `mo.Thread`. `goes_on()` says whether a finished stream may start again (Continue):
    the thread then keeps watching."""
    import marimo as mo

    def watch() -> None:
        while not thread.should_exit:
            if handle.done and not (goes_on is not None and goes_on()):
                return
            time.sleep(POLL)
        handle.cancel("its cell ran again or was deleted")

    thread = mo.Thread(target=watch, name="streamwidgets cell watch", daemon=True)
    thread.start()
    return thread
