"""Streams that a user already opened with the official `openai` or `anthropic` SDK.

The SDK has parsed the wire into typed objects; each one is dumped back to the JSON it came
from and fed as an SSE event through the same `Normalizer`, so an SDK stream and a raw one
give the same `StreamState`. Sync SDK streams are read in a worker thread, so the kernel's
loop stays free and Cancel still closes the connection (by closing the SDK stream).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Optional

import anyio

from .dialects import Normalizer
from .events import ErrorEvent
from .feed import Feed, drain
from .state import StreamState

__all__ = ["sdk_into", "sdk_event_bytes"]

_END = object()


def sdk_event_bytes(item: Any) -> bytes:
    """One SDK stream item as the SSE event it was parsed from."""
    if hasattr(item, "model_dump"):
        obj = item.model_dump(mode="json", exclude_unset=True, by_alias=True)
    elif isinstance(item, dict):
        obj = item
    else:
        raise TypeError(f"not an SDK stream event: {type(item).__name__}")
    kind = obj.get("type") if isinstance(obj.get("type"), str) else None
    head = f"event: {kind}\n" if kind else ""
    return f"{head}data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode()


async def sdk_into(
    stream: Any,
    state: StreamState,
    *,
    notify: Optional[Callable[[], None]] = None,
    provider: Optional[str] = None,
) -> StreamState:
    """Drain an openai / anthropic SDK stream (sync or async) into `state`.

    The SDKs swallow chat's `data: [DONE]`, so a chat stream that the SDK finished counts as
    complete once a finish reason arrived; Responses and Messages keep their own terminators.
    An exception from the SDK mid-stream (a broken connection, an API error event) becomes the
    state's error, with what arrived kept. Cancelling closes the SDK stream, and so its connection.
    """
    state.provider = state.provider or provider or type(stream).__module__.split(".")[0]
    state.source = "sdk"
    feed = Feed(state, Normalizer(None, provider), notify=notify)
    feed.begin()
    try:
        return await drain(
            _items(stream),
            feed,
            ended="the SDK stream ended before its terminator.",
            done_swallowed=True,
            describe=_sdk_error,
        )
    except anyio.get_cancelled_exc_class():
        await _close(getattr(stream, "close", None))
        raise


async def _items(stream: Any) -> AsyncIterator[bytes]:
    """Each SDK item as the SSE event it was parsed from; a sync stream is read in a worker thread."""
    if hasattr(stream, "__aiter__"):
        async for item in stream:
            yield sdk_event_bytes(item)
        return
    iterator = iter(stream)
    while True:
        item = await anyio.to_thread.run_sync(next, iterator, _END, abandon_on_cancel=True)
        if item is _END:
            return
        yield sdk_event_bytes(item)


def _sdk_error(exc: Exception) -> ErrorEvent:
    code = getattr(exc, "code", None) or "sdk_error"
    return ErrorEvent(f"{type(exc).__name__}: {exc}", code, getattr(exc, "status_code", None))


async def _close(closer: Any) -> None:
    if closer is None:
        return
    with anyio.CancelScope(shield=True):
        result = closer()
        if hasattr(result, "__await__"):
            await result
