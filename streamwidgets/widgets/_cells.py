"""Which cell the kernel is running: what a background stream's messages belong to.

A stream is a task made while its cell ran, and the kernel's "current request" is a context
variable that the task copied then: without help, every widget update and the final answer would
go out as messages of the cell that started the stream, long after it finished. A frontend such
as JupyterLab routes widget updates by comm and display updates by display id and does not mind,
but a notebook runner built on nbclient (`jupyter nbconvert --execute`, papermill, Jupyter Book,
MyST-NB) keeps only the messages of the cell it is running and drops the rest: the saved notebook
showed "waiting for the first token". So each cell's context is kept when it starts
(`pre_run_cell`), and frames and the final answer are sent in the context of the cell running now
(`in_cell`): the runner keeps them, updates the widget state, and applies the answer's
`update_display_data` to the output where it was first shown, in whichever cell that is.

Running a cell again cancels the answers its earlier run left streaming (the frontend's cell id,
`cellId` in the request's metadata, which JupyterLab, Notebook 7 and VS Code send): the old answer
would go on out of sight, holding the provider's (or the local model's) slot. Other cells'
answers are untouched, and a runner runs each cell once.

A runner also stops reading when the last cell ends. Under a runner (a request that allows no
stdin: nbclient, papermill and nbval send that; JupyterLab, Notebook and VS Code allow it), the
end of each cell waits, up to `RUNNER_WAIT` seconds, for the streams that earlier cells left
running, so that their answers are saved. Streams of the cell that just ended are not waited for
(a later cell may cancel them on purpose); their saved form says that they were still streaming,
and a later cell's end replaces it with the answer. An answer that ends between two cells, when
the runner reads nobody's messages, is sent again (with its widgets' state) when the next starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import time
from collections.abc import Callable
from typing import Any, Optional, TypeVar

from ._running import running

__all__ = ["RUNNER_WAIT", "watch", "number", "cell_id", "in_cell", "deliver", "touched", "under_runner"]

T = TypeVar("T")

#: How long the end of a cell waits, under a notebook runner, for streams left by earlier cells.
RUNNER_WAIT = 60.0

_context: Optional[contextvars.Context] = None
_number = 0
#: The frontend's id of the cell running now (None: the frontend sends none, or no cell runs).
_cell_id: Optional[str] = None
#: Under a runner, after a cell's end and before the next cell: what is sent then is sent again.
_between = False
_missed: list[Callable[[], Any]] = []
_stale: dict[int, Any] = {}
_watched: set[int] = set()


def number() -> int:
    """A count of the cells run since streamwidgets started watching (0 before that)."""
    return _number


def cell_id() -> Optional[str]:
    """The frontend's id of the cell running now, if it sent one."""
    return _cell_id


def in_cell(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call `fn` as if from the cell running now (or the last one), so that what it sends is
    that cell's output. Outside a kernel, or before any cell, it is a plain call."""
    context = _context
    if context is None:
        return fn(*args, **kwargs)
    try:
        return context.run(functools.partial(fn, *args, **kwargs))
    except RuntimeError as exc:  # already inside that context (a frame drawn by the cell itself)
        if "cannot enter context" not in str(exc):
            raise
        return fn(*args, **kwargs)


def watch(shell: Any) -> None:
    """Follow the cells of this IPython shell (once per shell); the calling cell counts as the
    current one."""
    global _context, _number
    if id(shell) in _watched or not hasattr(shell, "events"):
        return
    _watched.add(id(shell))
    _context = contextvars.copy_context()
    _number += 1
    _set_cell_id(_parent_cell_id(shell))
    shell.events.register("pre_run_cell", _cell_starts)
    shell.events.register("post_run_cell", functools.partial(_cell_ends, shell))
    kernel = getattr(shell, "kernel", None)
    if kernel is not None and asyncio.iscoroutinefunction(getattr(kernel, "do_execute", None)):
        kernel.do_execute = _settling(kernel.do_execute, shell)


def under_runner(shell: Any) -> bool:
    """The cell was sent by a notebook runner: a request that allows no stdin."""
    try:
        return shell.get_parent()["content"].get("allow_stdin", True) is False
    except (AttributeError, KeyError, TypeError):
        return False


def deliver(send: Callable[[], Any], widget: Any = None) -> None:
    """`send()` as the running cell. Between two cells of a runner (which reads nobody's
    messages then), `send()` again when the next cell starts, after the whole state of
    `widget`: what a stream sent while no cell ran would otherwise be lost."""
    in_cell(send)
    if _between:
        touched(widget)
        _missed.append(send)


def touched(widget: Any) -> None:
    """`widget` (and its children) sent updates; between two cells of a runner, their whole
    state goes out again when the next cell starts."""
    if _between and widget is not None:
        _stale[id(widget)] = widget


def _resend(widget: Any) -> None:
    widget.send_state()
    for child in getattr(widget, "children", ()):
        _resend(child)


def _parent_cell_id(shell: Any) -> Optional[str]:
    """The cell id in the metadata of the request the kernel is answering."""
    try:
        value = shell.get_parent()["metadata"].get("cellId")
    except (AttributeError, KeyError, TypeError):
        return None
    return value if isinstance(value, str) and value else None


def _set_cell_id(value: Optional[str]) -> None:
    global _cell_id
    _cell_id = value


def _cell_starts(info: Any = None) -> None:
    global _context, _number, _between
    _context = contextvars.copy_context()
    _number += 1
    _between = False
    _set_cell_id(getattr(info, "cell_id", None) or None)
    if _cell_id is not None:
        for handle in running():  # started by an earlier run of this very cell
            if handle.cell_id == _cell_id:
                handle.cancel("its cell ran again")
    stale, missed = list(_stale.values()), list(_missed)
    _stale.clear()
    _missed.clear()
    for widget in stale:
        _resend(widget)
    for send in missed:
        send()


def _cell_ends(shell: Any, result: Any = None) -> None:
    """Under a runner, save the answers still streaming as far as they got: should the run stop
    here, the notebook keeps them and says so (a later cell's end replaces them)."""
    global _between
    if under_runner(shell):
        _between = True  # from here until the next cell, the runner may not be listening
        for handle in running():
            handle.save_partial(
                "Still streaming when its cell ended: the notebook run stopped before the answer finished,"
                " so this is what had arrived by then."
            )


def _settling(do_execute: Callable[..., Any], shell: Any) -> Callable[..., Any]:
    """The kernel's `do_execute`, which under a notebook runner waits at the end of a cell for
    the streams of earlier cells (see the module's docstring)."""

    @functools.wraps(do_execute)
    async def run(*args: Any, **kwargs: Any) -> Any:
        reply = await do_execute(*args, **kwargs)
        if under_runner(shell) and not kwargs.get("silent", False):
            await settle(before=_number)  # the cell that just ran counts as `_number`
        return reply

    return run


async def settle(before: int, timeout: float = RUNNER_WAIT) -> None:
    """Wait for the running streams started before cell `before`, up to `timeout` seconds; those
    still running then save the answer so far and say so."""

    deadline = time.monotonic() + timeout
    for handle in running():
        left = deadline - time.monotonic()
        if handle.started_in < before and left > 0:
            # too slow (said below), or failed (the stream says so itself)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(handle), left)
    for handle in running():
        if handle.started_in < before:
            handle.save_partial(
                f"Still streaming after the notebook run waited {timeout:g} s for it: this is what had arrived."
            )
