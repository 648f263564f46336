"""The headless sinks: `arun()` / `run()` give the final state, `astream()` the events as they arrive.

Each takes any source — a prompt (with the options of `make_request`), a ready `StreamRequest`,
`replay(path)` or `sdk(stream)` — and runs it through the one feed loop (`net._pipeline.Stream`),
as the view does. With no view to wear the offline badge, an offline stand-in says so in the
state's warnings (and as a first `Problem` event).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Coroutine, Generator
from types import TracebackType
from typing import Any, Optional, Union

import anyio

from ..core._errors import HTTPStatusError, IncompleteStreamError, StreamError
from ..core._events import Event
from ..core._state import StreamState
from ..net._pipeline import Notify, Stream
from ..net._reads import PAUSE, UNWATCHED_PAUSE
from ..net._request import Prompt, StreamRequest
from ..net._sources import Source, as_source
from ..net._tool_runner import tool_loop

__all__ = ["arun", "run", "astream", "EventStream", "Awaited"]

PathLike = Union[str, "os.PathLike[str]"]
AnySource = Union[Source, StreamRequest, Prompt]


def arun(
    source: AnySource,
    *,
    raise_on_error: bool = False,
    notify: Optional[Notify] = None,
    record: Optional[PathLike] = None,
    log: Optional[PathLike] = None,
    parts: int = 1,
    **options: Any,
) -> Awaited:
    """Stream one answer and return its final state (scripts, tests, headless use).

    `source` is a prompt (a string or a list of messages; `options` then go to `make_request`), a
    `StreamRequest`, `replay(path)` or `sdk(stream)` (`options` then are its limits: `deadline=`,
    `max_answer_chars=`, ...). `record=` saves the stream for `replay()`; `log=` appends the answer
    to a class log; `parts=3` continues an answer that ends cut off, up to three parts in all
    (the state returned is the last part's: its `.text` is the whole answer, `.parts` each part).
    `tools=[fn, ...]` lets the model call those functions: the stream runs each call and sends
    the result back, step after step, up to `max_steps=` (8) requests, each call within
    `tool_timeout=` (30) seconds; every step is a part (`state.parts`, each call's `.result`).
    `confirm=True` needs a view to click Run / Skip in, so here it is an error. With `raise_on_error=True`, an error raises `HTTPStatusError` (non-2xx) or `StreamError`, and an
    incomplete stream `IncompleteStreamError`; each carries the state with the partial answer.

    It must be awaited (`state = await sw.arun(...)`): asked for an attribute before that, the
    call says so instead of Python's bare "'coroutine' object has no attribute 'text'".
    """
    return Awaited(
        _arun(source, raise_on_error=raise_on_error, notify=notify, record=record, log=log, parts=parts, **options),
        "arun",
    )


async def _arun(
    source: AnySource,
    *,
    raise_on_error: bool,
    notify: Optional[Notify],
    record: Optional[PathLike],
    log: Optional[PathLike],
    parts: int,
    **options: Any,
) -> StreamState:
    # Nobody watches the answer grow unless `notify` does: the reads may wake less often.
    pause = PAUSE if notify is not None else UNWATCHED_PAUSE
    stream = _stream(source, options, notify=notify, record=record, log=log, parts=parts, pause=pause)
    state = await stream.run()
    if raise_on_error:
        _raise_for(state)
    return state


_RUN_DEFAULTS: dict[str, Any] = {"raise_on_error": False, "notify": None, "record": None, "log": None, "parts": 1}


class Awaited(Coroutine[Any, Any, StreamState]):
    """A coroutine that says it must be awaited when asked for what only its result has."""

    __slots__ = ("_coroutine", "_name")

    def __init__(self, coroutine: Coroutine[Any, Any, StreamState], name: str) -> None:
        self._coroutine = coroutine
        self._name = name

    def send(self, value: Any) -> Any:
        return self._coroutine.send(value)

    def throw(self, *args: Any) -> Any:
        return self._coroutine.throw(*args)

    def close(self) -> None:
        self._coroutine.close()

    def __await__(self) -> Generator[Any, None, StreamState]:
        return self._coroutine.__await__()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"sw.{self._name}(...) has not run yet: await it first — `state = await sw.{self._name}(...)`, then "
            f"`state.{name}` (in a script: `state = sw.run(...)`)"
        )

    def __repr__(self) -> str:
        return f"<sw.{self._name}(...) not awaited yet: `state = await sw.{self._name}(...)`>"


def run(source: AnySource, **options: Any) -> StreamState:
    """The blocking form of `arun()`, for scripts. In a notebook use `show()` or `await arun()`."""
    try:
        import asyncio

        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(lambda: _arun(source, **{**_RUN_DEFAULTS, **options}))
    raise RuntimeError("run() blocks, and an event loop is already running here: use `await arun(...)` or `show(...)`")


def astream(
    source: AnySource,
    *,
    record: Optional[PathLike] = None,
    log: Optional[PathLike] = None,
    parts: int = 1,
    **options: Any,
) -> EventStream:
    """The normalized events of one answer as they arrive (`streamwidgets.core`'s event types):

        async with sw.astream("Explain recursion") as events:
            async for event in events:
                ...
        events.state.status      # how it ended, as for arun()

    Leaving the `async with` block (or `await events.aclose()`) stops the stream and closes the
    connection at once; a plain `async for` that breaks early leaves that to the garbage collector.
    """
    return EventStream(_stream(source, options, record=record, log=log, parts=parts))


class EventStream:
    """The events of a stream, for `async for`; `state` is its state (the final one, after)."""

    def __init__(self, stream: Stream) -> None:
        self._stream = stream
        self._events: Optional[AsyncIterator[Event]] = None

    @property
    def state(self) -> StreamState:
        return self._stream.state

    def __aiter__(self) -> AsyncIterator[Event]:
        if self._events is None:
            self._events = self._stream.events()
        return self._events

    async def aclose(self) -> None:
        """Stop the stream and close its connection (the state says cancelled, unless it ended)."""
        events = self._events
        if events is not None:
            await events.aclose()  # type: ignore[attr-defined]  # an async generator

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self, kind: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        await self.aclose()


def _stream(
    source: AnySource,
    options: dict[str, Any],
    *,
    notify: Optional[Notify] = None,
    record: Optional[PathLike] = None,
    log: Optional[PathLike] = None,
    parts: int = 1,
    pause: float = PAUSE,
) -> Stream:
    options = dict(options)
    loop = tool_loop(options)
    stream = Stream(as_source(source, **options), notify=notify, record=record, parts=parts, tools=loop, pause=pause)
    if log is not None:
        from ._classlog import log_parts

        log_parts(stream, log)
    return stream


def _raise_for(state: StreamState) -> None:
    if state.status == "error":
        if state.error is not None and state.error.http_status is not None:
            raise HTTPStatusError(state)
        raise StreamError(state)
    if state.status == "incomplete":
        raise IncompleteStreamError(state)
