"""`show()`: one call that does the right thing wherever it runs, for any source.

In a kernel the view is displayed, the stream becomes a background task and a `StreamHandle`
comes back at once, so the cell finishes and Cancel clicks are heard; with `display=False` the
view is only made, for the caller to place (`HBox([h.view.widget for h in handles])`). Outside
a kernel there is no page to draw widgets on: the answer goes to the terminal as plain text.
`show()` always returns a `StreamHandle`: in a plain script it has already finished (the call
blocks while the answer prints), so `handle.state` is the final state.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any, Optional, TextIO, Union

from ..core._state import StreamState
from ..net._pipeline import PathLike
from ..net._request import Prompt, StreamRequest
from ..net._sources import Source, as_source
from ..net._tool_runner import ToolLoop, tool_loop
from ..widgets._cells import deliver, under_runner
from ..widgets._cells import watch as watch_cells
from ..widgets._fallback import final_bundle, keeps_widget, placeholder_bundle
from ..widgets._handle import StreamHandle
from ..widgets._scheduler import scheduler_for
from ..widgets._view import view_for
from ._terminal import TerminalPrinter

__all__ = ["show"]

#: Seconds between the final display update and the status region saying how the answer ended.
#: The update draws the view anew; a browser that took in the words and the new drawing in one
#: frame would show a region that appears with them, which a screen reader does not speak. Under
#: a notebook runner nobody listens and the run may stop at once: the end is said with the update,
#: as the running cell's output (`deliver`), so that the saved header says how the answer ended.
SAY_END_AFTER = 1.0


def show(
    source: Union[Source, StreamRequest, Prompt],
    *,
    record: Optional[PathLike] = None,
    log: Optional[PathLike] = None,
    parts: int = 1,
    max_fps: float = 20.0,
    scale: Optional[float] = None,
    display: bool = True,
    out: Optional[TextIO] = None,
    **options: Any,
) -> StreamHandle:
    """Stream an answer into a live view (in a kernel) or onto the terminal (elsewhere).

    `source` is a prompt — a string or a list of chat messages, with the keywords of
    `make_request` (`provider`, `model`, `api`, `base_url`, `api_key`, `system`, `offline`, the limits
    `deadline=`, `max_answer_chars=`…, `retries`, and any request-body field such as `max_tokens`
    or `temperature`) — or a ready `StreamRequest`, `replay(path, speed=)` or `sdk(stream)` (then
    `options` are its limits). `record=` saves the raw stream for `replay()`; `log=` appends the
    question and answer to a class log (`log_to`) when it ends; `parts=3` continues a cut-off
    answer by itself, up to three parts (the Continue button asks for one more). `max_fps` caps
    the view's redraws; `scale` sizes its text, code and math (1.5 for a projector;
    `set_defaults(scale=...)` sets it for every view of the kernel). `display=False` streams into
    a view that is not displayed: place `handle.view.widget` yourself.

    `tools=[fn, ...]` lets the model call those Python functions: each call shows as a card, runs
    (a plain function in a thread, an async one on the loop; parallel calls at once, each within
    `tool_timeout=` seconds, 30 by default), and its result goes back to the model, step after
    step in the same view, up to `max_steps=` (8) requests. `confirm=True` asks Run / Skip under
    each card before it runs (in a notebook only: with no view to click in, it is an error).
    """
    options = dict(options)
    confirm = bool(options.pop("confirm", False))
    tools = tool_loop(options)
    chosen = as_source(source, **options)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # a plain script: print the answer, then hand back the finished stream
        _no_confirm(confirm)
        return asyncio.run(_to_terminal(chosen, out or sys.stdout, record=record, log=log, parts=parts, tools=tools))
    shell = _kernel_shell()
    if shell is None:
        _no_confirm(confirm)
        return _terminal_handle(chosen, out or sys.stdout, record=record, log=log, parts=parts, tools=tools)

    from IPython.display import display as show_output
    from IPython.display import update_display

    watch_cells(shell)
    view = view_for(chosen, max_fps=max_fps, scale=scale)
    handle = _logged(
        StreamHandle(
            chosen,
            view=view,
            scheduler=scheduler_for(loop),
            record=record,
            parts=parts,
            tools=tools,
            confirm=confirm,
        ),
        log,
    )
    if not display:
        return handle
    display_id = uuid.uuid4().hex
    labels = chosen.labels()
    show_output(placeholder_bundle(view.widget, labels.model), raw=True, display_id=display_id)
    handle.displayed_in = getattr(shell, "execution_count", None)
    widget = keeps_widget(shell)  # a notebook runner saves the answer alone: it shows without a network

    def save(done: StreamHandle, note: Optional[str]) -> None:
        bundle = final_bundle(view, labels.model, labels.badge, note, widget=widget)
        deliver(lambda: update_display(bundle, raw=True, display_id=display_id), view.widget)  # see `cells`
        if note is None:  # the part ended (not a runner's save of an answer still streaming)
            if under_runner(shell):  # nobody hears it live: the saved words are the final ones
                say_end(done.state)
            else:
                loop.call_later(SAY_END_AFTER, say_end, done.state)

    def say_end(state: StreamState) -> None:
        deliver(lambda: view.say_end(state), view.widget)

    view.end_said_later = True
    handle.save_with(save)
    return handle


def _no_confirm(confirm: bool) -> None:
    if confirm:
        raise ValueError(
            "confirm=True shows Run / Skip buttons, so it needs a notebook's view; "
            "in a script or a terminal the tools run without asking (leave confirm off)"
        )


def _terminal_handle(
    source: Source,
    out: TextIO,
    *,
    record: Optional[PathLike],
    log: Optional[PathLike],
    parts: int,
    tools: Optional[ToolLoop] = None,
) -> StreamHandle:
    """A stream printed as plain text (no kernel, so no widgets), running on the current loop."""
    printer: Optional[TerminalPrinter] = None

    def notify() -> None:
        if printer is not None:
            printer.notify()

    handle = _logged(StreamHandle(source, notify=notify, record=record, parts=parts, tools=tools), log)
    printer = TerminalPrinter(handle.state, out, redact=handle.redact)
    handle.stream.on_part.append(printer.attach)
    handle.add_done_callback(lambda _handle: printer.finish())
    return handle


async def _to_terminal(
    source: Source,
    out: TextIO,
    *,
    record: Optional[PathLike],
    log: Optional[PathLike],
    parts: int,
    tools: Optional[ToolLoop] = None,
) -> StreamHandle:
    handle = _terminal_handle(source, out, record=record, log=log, parts=parts, tools=tools)
    await handle
    return handle


def _logged(handle: StreamHandle, log: Optional[PathLike]) -> StreamHandle:
    if log is not None:
        from ._classlog import log_parts

        log_parts(handle.stream, log)
    return handle


def _kernel_shell() -> Any:
    """The IPython shell when it belongs to a kernel that can show widgets, else None."""
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None
