"""`show()`: one call that does the right thing wherever it runs, for any source.

In marimo the handle is the view (a cell that ends with it shows it; running the cell again
cancels the stream). In a Jupyter kernel the view is displayed, the stream becomes a background task and a `StreamHandle`
comes back at once, so the cell finishes and Cancel clicks are heard; with `display=False` the
view is only made, for the caller to place (`HBox([h.view.widget for h in handles])`). Outside
a kernel there is no page to draw widgets on: the answer goes to the terminal as plain text.
`show()` always returns a `StreamHandle`: in a plain script it has already finished (the call
blocks while the answer prints), so `handle.state` is the final state.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Optional, TextIO, Union

from ..core import Limits, Provider, StreamState
from ..net import (
    DEFAULT_MAX_STEPS,
    DEFAULT_RETRIES,
    DEFAULT_STALL_TIMEOUT,
    DEFAULT_TOOL_TIMEOUT,
    PathLike,
    RunOptions,
    Secret,
    Source,
)
from ..widgets import (
    SavedOutput,
    StreamHandle,
    cancel_with_cell,
    deliver,
    frame_pause,
    in_marimo,
    marimo_view_for,
    placeholder_text,
    scheduler_for,
    under_runner,
    view_for,
    watch_boxes,
    watch_cells,
)
from ._keywords import AnySource, SinkKeywords, logged
from ._terminal import TerminalPrinter

__all__ = ["show"]

#: Seconds between the final display update and the status region saying how the answer ended.
#: The update draws the view anew; a browser that took in the words and the new drawing in one
#: frame would show a region that appears with them, which a screen reader does not speak. Under
#: a notebook runner nobody listens and the run may stop at once: the end is said with the update,
#: as the running cell's output (`deliver`), so that the saved header says how the answer ended.
SAY_END_AFTER = 1.0


def show(
    source: AnySource,
    *,
    # the request a prompt becomes (`make_request`)
    provider: Union[str, Provider, None] = None,
    model: Optional[str] = None,
    api: Optional[str] = None,
    base_url: Optional[str] = None,
    api_key: Union[str, Secret, None] = None,
    system: Optional[str] = None,
    offline: Optional[bool] = None,
    local_model: Optional[str] = None,
    tools: Optional[Sequence[Any]] = None,
    logprobs: Union[int, bool, None] = None,
    extra_body: Optional[Mapping[str, Any]] = None,
    include_usage: Optional[bool] = None,
    retries: int = DEFAULT_RETRIES,
    stall_timeout: float = DEFAULT_STALL_TIMEOUT,
    # the limits
    limits: Optional[Limits] = None,
    deadline: Optional[float] = None,
    max_answer_chars: Optional[int] = None,
    max_event_chars: Optional[int] = None,
    max_tool_calls: Optional[int] = None,
    max_citations: Optional[int] = None,
    max_warnings: Optional[int] = None,
    # the tool loop
    max_steps: int = DEFAULT_MAX_STEPS,
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
    confirm: bool = False,
    # the run
    record: Optional[PathLike] = None,
    log: Optional[PathLike] = None,
    parts: int = 1,
    # the view
    max_fps: float = 20.0,
    scale: Optional[float] = None,
    display: bool = True,
    out: Optional[TextIO] = None,
    **params: Any,
) -> StreamHandle:
    """Stream an answer into a live view (in a kernel) or onto the terminal (elsewhere).

    `source` is a prompt — a string or a list of chat messages — or a ready `StreamRequest`,
    `replay(path, speed=)` or `sdk(stream)`. For a prompt, the request's keywords are
    `make_request`'s (`provider`, `model`, `api`, `base_url`, `api_key`, `system`, `offline`,
    `local_model`, `logprobs`, `extra_body`, `include_usage`, `retries`, `stall_timeout`), and any
    body field the API documents (`max_tokens`, `temperature`...) goes in `**params`. Any source
    takes the limits: `limits=sw.Limits(...)`, or each limit as its keyword (`deadline=`,
    `max_answer_chars=`, `max_event_chars=`, `max_tool_calls=`, `max_citations=`,
    `max_warnings=`), which changes that field of `limits`. `record=` saves the raw stream for
    `replay()`; `log=` appends the question and answer to a class log (`log_to`) when it ends;
    `parts=3` continues a cut-off answer by itself, up to three parts (the Continue button asks
    for one more). `max_fps` caps the view's redraws; `scale` sizes its text, code and math (1.5
    for a projector; `set_defaults(scale=...)` sets it for every view of the kernel).
    `display=False` streams into a view that is not displayed: place `handle.view.widget`
    yourself. `out` is where the answer is printed outside a kernel (default: standard output).

    `tools=[fn, ...]` lets the model call those Python functions: each call shows as a card, runs
    (a plain function in a thread, an async one on the loop; parallel calls at once, each within
    `tool_timeout=` seconds, 30 by default), and its result goes back to the model, step after
    step in the same view, up to `max_steps=` (8) requests. `confirm=True` asks Run / Skip under
    each card before it runs (in a notebook only: with no view to click in, it is an error).
    """
    keywords = SinkKeywords.read("show", locals())
    chosen = keywords.source(source)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # a plain script: print the answer, then hand back the finished stream
        return asyncio.run(_to_terminal(chosen, keywords.run(), out or sys.stdout))
    if in_marimo():
        return _marimo_handle(chosen, keywords, loop, max_fps=max_fps, scale=scale)
    shell = _kernel_shell()
    if shell is None:
        return _terminal_handle(chosen, keywords.run(), out or sys.stdout)

    watch_cells(shell)
    watch_boxes(shell)  # a box the view is placed in keeps it in a saved notebook too
    view = view_for(chosen, max_fps=max_fps, scale=scale)
    scheduler = scheduler_for(loop)
    run = keywords.run(pause=frame_pause(scheduler, view), ask=view.confirm)
    handle = StreamHandle(chosen, run, view=view, scheduler=scheduler)
    logged(handle.stream)
    if not display:
        return handle
    model = chosen.labels().model
    output = SavedOutput(view.widget, shell, waiting=placeholder_text(model))
    output.display()  # a notebook runner saves the answer alone: it shows without a network
    handle.displayed_in = getattr(shell, "execution_count", None)

    def said(done: StreamHandle) -> None:  # after the output's update (see `SAY_END_AFTER`)
        if under_runner(shell):  # nobody hears it live: the saved words are the final ones
            say_end(done.state)
        else:
            loop.call_later(SAY_END_AFTER, say_end, done.state)

    def say_end(state: StreamState) -> None:
        deliver(lambda: view.say_end(state), view.widget)

    view.end_said_later = True
    handle.add_done_callback(said)
    return handle


def _marimo_handle(
    source: Source, keywords: SinkKeywords, loop: asyncio.AbstractEventLoop, **options: Any
) -> StreamHandle:
    """A stream into marimo's view, running on the notebook's loop; its cell's output shows the
    handle (`_display_`), or `mo.ui.anywidget(handle.widget)`. Running the cell again, or deleting
    it, cancels the stream (`cancel_with_cell`)."""
    view = marimo_view_for(source, **options)
    scheduler = scheduler_for(loop)
    run = keywords.run(pause=frame_pause(scheduler, view), ask=view.confirm)
    handle = StreamHandle(source, run, view=view, scheduler=scheduler)
    logged(handle.stream)
    cancel_with_cell(handle, goes_on=lambda: view.offers(handle.state))
    return handle


def _terminal_handle(source: Source, run: RunOptions, out: TextIO) -> StreamHandle:
    """A stream printed as plain text (no kernel, so no widgets), running on the current loop."""
    printer: Optional[TerminalPrinter] = None

    def notify() -> None:
        if printer is not None:
            printer.notify()

    handle = StreamHandle(source, run, notify=notify)
    logged(handle.stream)
    printer = TerminalPrinter(handle.state, out, redact=handle.redact)
    handle.stream.on_part.append(printer.attach)
    handle.add_done_callback(lambda _handle: printer.finish())
    return handle


async def _to_terminal(source: Source, run: RunOptions, out: TextIO) -> StreamHandle:
    handle = _terminal_handle(source, run, out)
    await handle
    return handle


def _kernel_shell() -> Any:
    """The IPython shell when it belongs to a kernel that can show widgets, else None."""
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None
