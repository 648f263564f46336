"""`show()` and `show_replay()`: one call that does the right thing wherever it runs.

In a kernel the view is displayed, the stream becomes a background task and a `StreamHandle`
comes back at once, so the cell finishes and Cancel clicks are heard; with `display=False` the
view is only made, for the caller to place (`HBox([h.view.widget for h in handles])`). Outside
a kernel there is no page to draw widgets on: the answer goes to the terminal as plain text.
`show()` always returns a `StreamHandle`: in a plain script it has already finished (the call
blocks while the answer prints), so `handle.state` is the final state.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import Callable
from typing import Any, Optional, TextIO, Union

import httpx

from ..client import Prompt, StreamRequest, make_request, stream_into
from ..providers import CUSTOM
from ..recording import recording_meta, replay_into
from ..sdk import sdk_into
from ..state import StreamState
from ..terminal import TerminalPrinter
from .cells import deliver
from .cells import watch as watch_cells
from .fallback import final_bundle, placeholder_bundle
from .handle import Runner, StreamHandle, scrub
from .scheduler import scheduler_for
from .view import StreamView

__all__ = ["show", "show_replay", "show_sdk", "show_runner", "provider_label"]

#: Seconds between the final display update and the status region saying how the answer ended.
#: The update draws the view anew; a browser that took in the words and the new drawing in one
#: frame would show a region that appears with them, which a screen reader does not speak.
SAY_END_AFTER = 1.0


def show(
    prompt: Union[Prompt, StreamRequest],
    *,
    provider: Optional[str] = None,
    model: Optional[str] = None,
    api: Optional[str] = None,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    system: Optional[str] = None,
    offline: Optional[bool] = None,
    record: Union[str, os.PathLike[str], None] = None,
    log: Union[str, os.PathLike[str], None] = None,
    deadline: Optional[float] = None,
    max_fps: float = 20.0,
    scale: Optional[float] = None,
    display: bool = True,
    out: Optional[TextIO] = None,
    **params: Any,
) -> StreamHandle:
    """Stream an answer into a live view (in a kernel) or onto the terminal (elsewhere).

    `prompt` is a string, a list of chat messages, or a ready `StreamRequest`; the other keywords
    go to `make_request` (any unknown one, such as `max_tokens` or `temperature`, into the request
    body). `record=` saves the raw stream for `show_replay()`; `log=` appends the question and
    answer to a class log (`classlog.log_to`) when it ends. `deadline=` ends an answer not
    finished within that many seconds (incomplete, the text so far kept; default None: no
    deadline). `max_fps` caps the view's redraws; `scale` sizes its text, code and math (1.5 for
    a projector; `set_defaults(scale=...)` sets it for every view of the kernel).
    `display=False` streams into a view that is not displayed: place `handle.view.widget` yourself.
    """
    if isinstance(prompt, StreamRequest):
        request = prompt
    else:
        request = make_request(
            prompt,
            provider=provider,
            model=model,
            api=api,
            base_url=base_url,
            api_key=api_key,
            system=system,
            offline=offline,
            deadline=deadline,
            **params,
        )

    def runner(state: StreamState, notify: Callable[[], None]) -> Any:
        return stream_into(request, state, notify=notify, record=record)

    handle = show_runner(
        runner,
        request=request,
        out=out,
        display=display,
        model=request.model,
        provider=provider_label(request),
        api=request.api,
        max_tokens=request.max_tokens,
        citation_markers=request.provider.citation_markers,
        note=request.offline_note,
        badge="offline demo" if request.offline_note else None,
        max_fps=max_fps,
        scale=scale,
    )
    if log is not None:
        from ..classlog import logged

        logged(handle, log)
    return handle


def provider_label(request: StreamRequest) -> str:
    """What the header says the answer came from: the preset, or the host of a custom server."""
    if request.provider is not CUSTOM:
        return request.provider.name
    url = httpx.URL(request.base_url)
    return url.host + (f":{url.port}" if url.port else "")


def show_replay(
    source: Any,
    speed: float = 1.0,
    *,
    model: Optional[str] = None,
    provider: Optional[str] = None,
    api: Optional[str] = None,
    citation_markers: bool = False,
    max_fps: float = 20.0,
    scale: Optional[float] = None,
    display: bool = True,
    out: Optional[TextIO] = None,
) -> StreamHandle:
    """Replay a recording (`show(..., record=path)`, or a raw SSE file) in the same view, at its
    recorded pace times `speed` (0: no waiting). Cancel works as for a live stream. `model`,
    `provider` and `api` label the header; `scale` and `display=False` as for `show()`."""

    def runner(state: StreamState, notify: Callable[[], None]) -> Any:
        return replay_into(source, state, speed=speed, notify=notify)

    meta = recording_meta(source)  # a recording names its provider, API and model
    model, provider, api = model or meta.get("model"), provider or meta.get("provider"), api or meta.get("api")
    when = meta.get("recorded_at")
    return show_runner(
        runner,
        out=out,
        display=display,
        model=model,
        provider=provider,
        api=api,
        badge="replay",
        note=f"Replay of a recording made {str(when).replace('T', ' ').rstrip('Z')} UTC."
        if when
        else "Replay of a recording.",
        citation_markers=citation_markers,
        max_fps=max_fps,
        scale=scale,
    )


def show_sdk(
    stream: Any,
    *,
    model: Optional[str] = None,
    provider: Optional[str] = None,
    api: Optional[str] = None,
    max_fps: float = 20.0,
    scale: Optional[float] = None,
    display: bool = True,
    out: Optional[TextIO] = None,
) -> StreamHandle:
    """Show a stream you opened with the official `openai` or `anthropic` SDK (sync or async) in
    the same view; Cancel closes the SDK stream, and so its connection. `model`, `provider` and
    `api` label the header; `scale` and `display=False` as for `show()`."""

    def runner(state: StreamState, notify: Callable[[], None]) -> Any:
        return sdk_into(stream, state, notify=notify, provider=provider)

    return show_runner(
        runner, out=out, display=display, model=model, provider=provider, api=api, max_fps=max_fps, scale=scale
    )


def show_runner(
    runner: Runner,
    *,
    request: Optional[StreamRequest] = None,
    display: bool = True,
    out: Optional[TextIO] = None,
    **view_options: Any,
) -> StreamHandle:
    """Show any stream: `runner(state, notify)` feeds the state (`stream_into`, `replay_into`, an
    SDK stream...) and calls `notify()` after each batch. `view_options` go to `StreamView`;
    `request` (for a live stream) enables Continue and redacts its key from what is shown.

    In a kernel, `display=False` makes the view without displaying it; the stream runs in the
    background all the same, but with no output of its own there is no display to give the
    static answer (`fallback.final_bundle`) to when it ends.
    """
    redact = request.redact if request is not None else (lambda text: text)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # a plain script: print the answer, then hand back the finished stream
        return asyncio.run(_to_terminal(runner, request, out or sys.stdout, redact))
    shell = _kernel_shell()
    if shell is None:
        return _terminal_handle(runner, request, out or sys.stdout, redact)

    from IPython.display import display as show_output
    from IPython.display import update_display

    watch_cells(shell)
    view = StreamView(**view_options)
    handle = StreamHandle(runner, view=view, scheduler=scheduler_for(loop), request=request)
    if not display:
        return handle
    display_id = uuid.uuid4().hex
    model = view_options.get("model")
    show_output(placeholder_bundle(view.widget, model), raw=True, display_id=display_id)
    handle.displayed_in = getattr(shell, "execution_count", None)

    def save(done: StreamHandle, note: Optional[str]) -> None:
        bundle = final_bundle(view, model, view_options.get("badge"), note)
        deliver(lambda: update_display(bundle, raw=True, display_id=display_id), view.widget)  # see `cells`
        if note is None:  # the part ended (not a runner's save of an answer still streaming)
            loop.call_later(SAY_END_AFTER, view.say_end, done.state)

    view.end_said_later = True

    handle.save_with(save)
    return handle


def _terminal_handle(
    runner: Runner, request: Optional[StreamRequest], out: TextIO, redact: Callable[[str], str]
) -> StreamHandle:
    """A stream printed as plain text (no kernel, so no widgets), running on the current loop."""
    state = StreamState()
    printer = TerminalPrinter(state, out, redact=lambda text: scrub(redact(text)))
    handle = StreamHandle(runner, state=state, request=request, notify=printer.notify)
    handle.add_done_callback(lambda _handle: printer.finish())
    return handle


async def _to_terminal(
    runner: Runner, request: Optional[StreamRequest], out: TextIO, redact: Callable[[str], str]
) -> StreamHandle:
    handle = _terminal_handle(runner, request, out, redact)
    await handle
    return handle


def _kernel_shell() -> Any:
    """The IPython shell when it belongs to a kernel that can show widgets, else None."""
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None
