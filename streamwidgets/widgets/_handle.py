"""`StreamHandle`: a stream running in the background of a kernel, and `cancel_all()`.

Rules learned in real kernels (`docs/design.md`): the cell must not block, so the stream is a task on
the kernel's running loop and `show()` returns at once; Cancel is `task.cancel()`, which leaves
the client's `async with` and closes the connection; an exception in a background task is lost
unless the task itself catches it and puts it in the view; and the kernel's interrupt button does
not reach background tasks, hence `cancel_all()`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import warnings
from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any, Optional, Union

from ..core import ErrorEvent, StreamState, scrub
from ..net import PAUSE, UNWATCHED_PAUSE, Live, Notify, RunOptions, Source, Stream, StreamRequest
from ._cells import cell_id as current_cell_id
from ._cells import number as cell_number
from ._marimo import MarimoView
from ._running import cancel_all, follows, running, track, untrack
from ._scheduler import FrameScheduler
from ._view import StreamView

__all__ = ["StreamHandle", "cancel_all", "running", "frame_pause", "View"]

#: A view a handle streams into: the Jupyter view or the marimo one (same panes, same scheduler).
View = Union[StreamView, MarimoView]

logger = logging.getLogger("streamwidgets")

#: Seconds before the view's next frame that its stream's next read ends its pause: a read and
#: its events take about a millisecond, and the frame must find them there.
READ_AHEAD = 0.005


def frame_pause(scheduler: FrameScheduler, view: View) -> Callable[[], float]:
    """The read pause of a view's stream (`RunOptions.pause`), made once with its run: how long a
    network read waits while the answer flows — until just before the view's next frame could
    show it, at least `PAUSE`; a frame further away than `UNWATCHED_PAUSE` is reached in equal
    pauses no longer than that, the last one ending just before it (`net._reads`). The network
    layer only calls it; it never looks for a view."""

    def pause() -> float:
        ahead = scheduler.next_frame_in(view) - READ_AHEAD
        if ahead <= PAUSE:
            return PAUSE
        return ahead / math.ceil(ahead / UNWATCHED_PAUSE)

    return pause


class StreamHandle:
    """One answer streaming in the background. Returned by `show()` at once.

    `await handle` gives the final `StreamState`; `handle.state` is the live one; `cancel()`
    stops it and closes the connection. After a Continue, the handle follows the new part.

    `run` is what the run carries (`RunOptions`; by default, a view's reads follow its frames,
    `frame_pause`); `confirm=True` makes its tool loop ask the view's Run / Skip before each call.
    """

    def __init__(
        self,
        source: Source,
        run: Optional[RunOptions] = None,
        *,
        view: Optional[View] = None,
        scheduler: Optional[FrameScheduler] = None,
        notify: Optional[Notify] = None,
        confirm: bool = False,
    ) -> None:
        if view is not None and scheduler is None:
            raise ValueError("a view needs the scheduler that draws it")
        if run is None:
            run = RunOptions(
                pause=frame_pause(scheduler, view) if view is not None and scheduler is not None else PAUSE
            )
        if confirm:
            run = replace(run, tool_loop=run.tool_loop.asking(view.confirm if view is not None else None))
        self.stream = stream = Stream(source, run, notify=self._notify, badge_shown=view is not None)
        self._view = view
        self._scheduler = scheduler
        self._extra_notify = notify
        self._task: Optional[asyncio.Task[StreamState]] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._done_callbacks: list[Callable[[StreamHandle], None]] = []
        #: The IPython execution count of the cell whose output shows the view (see `_ipython_display_`).
        self.displayed_in: Optional[int] = None
        #: Which cell started the current part (`_cells.number()`), and what saves the answer in
        #: the output that shows it (set by `show()`; None when nothing was displayed).
        self.started_in = 0
        #: The frontend's id of the cell that started it: running that cell again cancels it.
        self.cell_id: Optional[str] = None
        self._saves: list[Callable[[StreamHandle, Optional[str]], None]] = []
        #: Why the answer saved so far is not the whole one (a runner's note), until the next part.
        self.partial_note: Optional[str] = None
        if view is not None:
            view.attach(stream.state)
            stream.on_part.append(view.attach)
            view.redact = self.redact
            view.on_cancel(self.cancel)
            if isinstance(source, Live):
                view.on_continue(self.continue_answer)
            follows(self)  # an output showing the view's widget, alone or in a box, finds the handle
        self._start()

    # ------------------------------------------------------------------ reading

    @property
    def state(self) -> StreamState:
        return self.stream.state

    @property
    def view(self) -> Optional[View]:
        return self._view

    @property
    def source(self) -> Source:
        """The source of the current part."""
        return self.stream.source

    @property
    def request(self) -> Optional[StreamRequest]:
        """The request of the current part (None for a replay or an SDK stream)."""
        source = self.stream.source
        return source.request if isinstance(source, Live) else None

    @property
    def text(self) -> str:
        """The whole answer, across Continue parts; while it still streams, the text so far (and a
        warning that says how to wait for all of it)."""
        if self._task is not None and not self._task.done():
            warnings.warn(
                "the answer is still streaming: this is the text so far; `state = await handle` waits for all of it",
                UserWarning,
                stacklevel=2,
            )
        return self.state.text

    @property
    def done(self) -> bool:
        return self._task is not None and self._task.done()

    def redact(self, text: str) -> str:
        """`text` without this stream's key (in any form it was sent) or anything shaped like one."""
        return scrub(self.stream.source.redact(text))

    # ------------------------------------------------------------------ acting

    def cancel(self, why: Optional[str] = None) -> bool:
        """Stop the stream (the connection closes at once); False when it already ended. `why`
        goes into the state's warnings ("Cancelled: its cell ran again.")."""
        task = self._task
        if task is None or task.done():
            return False
        if why:
            self.state.note(f"Cancelled: {why}.")
        loop = self._loop
        if loop is None or _running_loop() is loop:
            task.cancel()
        else:
            loop.call_soon_threadsafe(task.cancel)
        return True

    def continue_answer(self) -> None:
        """Start the next part of a cut-off answer, in the same view and the same handle.

        The next request carries the answer so far (`StreamRequest.continued`); with no partial
        answer at all, the same request is simply sent again.
        """
        if not self.done:
            raise RuntimeError("the stream is still running")
        if self.stream.next_source is None:
            raise RuntimeError("this answer cannot be continued: it is complete, or not a live stream")
        self.stream.allow(1)
        self._start()

    def add_done_callback(self, callback: Callable[[StreamHandle], None]) -> None:
        """Call `callback(handle)` each time a part ends (after the view's final frame)."""
        self._done_callbacks.append(callback)

    def save_with(self, save: Callable[[StreamHandle, Optional[str]], None]) -> None:
        """`save(handle, None)` puts the answer in an output that shows it when a part ends;
        `save_partial(note)` calls `save(handle, note)` with the answer so far (one `save` per
        output that shows it: `widgets/_output.py`)."""
        self._saves.append(save)
        self.add_done_callback(lambda handle: save(handle, None))

    def save_partial(self, note: str) -> None:
        """Save the answer so far in the outputs that show it, saying in `note` why it is not the
        whole one (a notebook runner ended while it still streamed)."""
        if not self.done:
            self.partial_note = note
            for save in self._saves:
                save(self, note)

    def __await__(self) -> Generator[Any, None, StreamState]:
        return self._wait().__await__()

    async def _wait(self) -> StreamState:
        while True:
            task = self._task
            assert task is not None
            state = await task
            if task is self._task:
                return state

    # ------------------------------------------------------------------ running

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self.partial_note = None
        self.started_in = cell_number()
        if self.cell_id is None:  # a Continue keeps the cell the answer was asked in
            self.cell_id = current_cell_id()
        if self._view is not None:
            assert self._scheduler is not None
            self._scheduler.add(self._view)
        name = f"streamwidgets {self.state.model or ''}".strip()
        self._task = loop.create_task(self._run(), name=name)
        track(loop, self)

    def _notify(self) -> None:
        if self._view is not None:
            assert self._scheduler is not None
            self._scheduler.notify(self._view)
        if self._extra_notify is not None:
            self._extra_notify()

    async def _run(self) -> StreamState:
        """Run the stream; whatever happens ends up in the state and the view, never in the void."""
        try:
            await self.stream.run()
        except asyncio.CancelledError:
            # The cancel came from Cancel or cancel_all(): the stream is over, the task is not
            # failed. The state keeps the partial answer and says "cancelled".
            self.state.close(cancelled=True, now=time.monotonic())
        except Exception as exc:
            self._fail(self.state, exc)
        finally:
            self.state.close(reason="the stream stopped without saying why.", now=time.monotonic())
            await self._final_frame()
            self._finish()
        return self.state

    async def _final_frame(self) -> None:
        if self._view is None:
            return
        assert self._scheduler is not None
        try:
            await self._scheduler.finish(self._view)
        except asyncio.CancelledError:
            pass  # cancelled again while waiting for its turn: the frame was drawn at once
        except Exception:  # the view itself broke: nowhere left to show it but the log
            logger.exception("streamwidgets could not draw the end of a stream")

    def _fail(self, state: StreamState, exc: Exception) -> None:
        message = self.redact(f"{type(exc).__name__}: {exc}")
        if not state.done:
            state.apply(ErrorEvent(f"streamwidgets failed while streaming: {message}", "internal_error"))
        else:
            state.note(f"after the stream ended: {message}")

    def _finish(self) -> None:
        loop = self._loop
        if loop is not None:
            untrack(loop, self)
        for callback in self._done_callbacks:
            try:
                callback(self)
            except Exception:
                logger.exception("a streamwidgets done-callback failed")

    # ------------------------------------------------------------------ showing

    def __repr__(self) -> str:
        state = self.state
        return f"<StreamHandle {state.phase} model={state.model!r} {state.text_length} chars>"

    @property
    def widget(self) -> Any:
        """The view's widget (None without a view): `mo.ui.anywidget(handle.widget)` in marimo."""
        return self._view.widget if self._view is not None else None

    def _display_(self) -> Any:
        """What marimo shows for the handle as a cell's last expression: its live view."""
        return self._view.widget if self._view is not None else repr(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _ipython_display_(self) -> None:
        """Show the live view — except in the cell whose output already shows it (`show(...)` as
        the last line of a cell would otherwise draw it twice)."""
        from IPython import get_ipython
        from IPython.display import display

        shell = get_ipython()
        count = getattr(shell, "execution_count", None)
        if self._view is None:
            display({"text/plain": repr(self)}, raw=True)
        elif self.displayed_in is None or self.displayed_in != count:
            display(self._view.widget)


def _running_loop() -> Optional[asyncio.AbstractEventLoop]:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
