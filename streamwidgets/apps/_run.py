"""The headless sinks: `arun()` / `run()` give the final state, `astream()` the events as they arrive.

Each takes any source — a prompt (with the options of `make_request`), a ready `StreamRequest`,
`replay(path)` or `sdk(stream)` — and runs it through the one feed loop (`net._pipeline.Stream`),
as the view does. With no view to wear the offline badge, an offline stand-in says so in the
state's warnings (and as a first `Problem` event).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Generator, Mapping, Sequence
from types import TracebackType
from typing import Any, Optional, Union

import anyio

from ..core import Event, HTTPStatusError, IncompleteStreamError, Limits, Provider, StreamError, StreamState
from ..net import (
    DEFAULT_MAX_STEPS,
    DEFAULT_RETRIES,
    DEFAULT_STALL_TIMEOUT,
    DEFAULT_TOOL_TIMEOUT,
    PAUSE,
    UNWATCHED_PAUSE,
    Notify,
    PathLike,
    Pause,
    Secret,
    Stream,
)
from ._keywords import AnySource, SinkKeywords, logged

__all__ = ["arun", "run", "astream", "EventStream", "Awaited"]


def arun(
    source: AnySource,
    *,
    raise_on_error: bool = False,
    notify: Optional[Notify] = None,
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
    **params: Any,
) -> Awaited:
    """Stream one answer and return its final state (scripts, tests, headless use).

    `source` is a prompt (a string or a list of messages), a `StreamRequest`, `replay(path)` or
    `sdk(stream)`. For a prompt, the request's keywords are `make_request`'s (`provider`,
    `model`, `api`, `base_url`, `api_key`, `system`, `offline`, `local_model`, `logprobs`,
    `extra_body`, `include_usage`, `retries`, `stall_timeout`), and any body field the API
    documents (`temperature`, `max_tokens`...) goes in `**params`. Any source takes the limits:
    `limits=sw.Limits(...)`, or each limit as its keyword (`deadline=`, `max_answer_chars=`,
    `max_event_chars=`, `max_tool_calls=`, `max_citations=`, `max_warnings=`), which changes that
    field of `limits`. `record=` saves the stream for `replay()`; `log=` appends the answer to a
    class log; `parts=3` continues an answer that ends cut off, up to three parts in all (the
    state returned is the last part's: its `.text` is the whole answer, `.parts` each part).
    `tools=[fn, ...]` lets the model call those functions: the stream runs each call and sends
    the result back, step after step, up to `max_steps=` (8) requests, each call within
    `tool_timeout=` (30) seconds; every step is a part (`state.parts`, each call's `.result`).
    `confirm=True` needs a view to click Run / Skip in, so here it is an error. `notify()` is
    called after each change of the state. With `raise_on_error=True`, an error raises
    `HTTPStatusError` (non-2xx) or `StreamError`, and an incomplete stream
    `IncompleteStreamError`; each carries the state with the partial answer.

    It must be awaited (`state = await sw.arun(...)`): asked for an attribute before that, the
    call says so instead of Python's bare "'coroutine' object has no attribute 'text'".
    """
    keywords = SinkKeywords.read("arun", locals())
    return Awaited(_arun(source, keywords, raise_on_error=raise_on_error, notify=notify), "arun")


async def _arun(
    source: AnySource, keywords: SinkKeywords, *, raise_on_error: bool, notify: Optional[Notify]
) -> StreamState:
    # Nobody watches the answer grow unless `notify` does: the reads may wake less often.
    pause = PAUSE if notify is not None else UNWATCHED_PAUSE
    state = await _stream(source, keywords, notify=notify, pause=pause).run()
    if raise_on_error:
        _raise_for(state)
    return state


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


def run(
    source: AnySource,
    *,
    raise_on_error: bool = False,
    notify: Optional[Notify] = None,
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
    **params: Any,
) -> StreamState:
    """The blocking form of `arun()`, for scripts, with the same keywords. In a notebook use
    `show()` or `await arun()`."""
    keywords = SinkKeywords.read("run", locals())
    try:
        import asyncio

        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(lambda: _arun(source, keywords, raise_on_error=raise_on_error, notify=notify))
    raise RuntimeError("run() blocks, and an event loop is already running here: use `await arun(...)` or `show(...)`")


def astream(
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
    **params: Any,
) -> EventStream:
    """The normalized events of one answer as they arrive (`streamwidgets.core`'s event types),
    with the keywords of `arun()`:

        async with sw.astream("Explain recursion") as events:
            async for event in events:
                ...
        events.state.status      # how it ended, as for arun()

    Leaving the `async with` block (or `await events.aclose()`) stops the stream and closes the
    connection at once; a plain `async for` that breaks early leaves that to the garbage collector.
    """
    keywords = SinkKeywords.read("astream", locals())
    return EventStream(_stream(source, keywords))


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
    source: AnySource, keywords: SinkKeywords, *, notify: Optional[Notify] = None, pause: Pause = PAUSE
) -> Stream:
    run = keywords.run(pause=pause)  # no view: `confirm=True` is an error here
    return logged(Stream(keywords.source(source), run, notify=notify))


def _raise_for(state: StreamState) -> None:
    if state.status == "error":
        if state.error is not None and state.error.http_status is not None:
            raise HTTPStatusError(state)
        raise StreamError(state)
    if state.status == "incomplete":
        raise IncompleteStreamError(state)
