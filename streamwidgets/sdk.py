"""Streams that a user already opened with the official `openai` or `anthropic` SDK.

The SDK has parsed the wire into typed objects; each one is dumped back to the JSON it came
from and fed as an SSE event through the same `Normalizer`, so an SDK stream and a raw one
give the same `StreamState`. Sync SDK streams are read in a worker thread, so the kernel's
loop stays free and Cancel still closes the connection (by closing the SDK stream).
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Optional

import anyio

from .dialects import Normalizer
from .events import ErrorEvent, Terminator
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
    """
    normalizer = Normalizer(None, provider)
    state.provider = state.provider or provider or type(stream).__module__.split(".")[0]
    state.begin(time.monotonic())
    ping = notify or (lambda: None)
    closer = getattr(stream, "close", None)
    try:
        if hasattr(stream, "__aiter__"):
            async for item in stream:
                _feed(normalizer, state, item)
                ping()
        else:
            iterator = iter(stream)
            while True:
                item = await anyio.to_thread.run_sync(next, iterator, _END, abandon_on_cancel=True)
                if item is _END:
                    break
                _feed(normalizer, state, item)
                ping()
        now = time.monotonic()
        state.extend(normalizer.close(), now)
        if normalizer.dialect_name == "chat" and state.finish_reason is not None:
            state.apply(Terminator(), now)
        state.close(reason="the SDK stream ended before its terminator.", now=now)
    except anyio.get_cancelled_exc_class():
        state.close(cancelled=True, now=time.monotonic())
        await _close(closer)
        ping()
        raise
    except Exception as exc:  # the SDK raised mid-stream (a broken connection, an API error event)
        state.apply(ErrorEvent(f"{type(exc).__name__}: {exc}", getattr(exc, "code", None) or "sdk_error",
                               getattr(exc, "status_code", None)))
        state.close(now=time.monotonic())
    ping()
    return state


def _feed(normalizer: Normalizer, state: StreamState, item: Any) -> None:
    now = time.monotonic()
    for event in normalizer.feed(sdk_event_bytes(item)):
        state.apply(event, now)


async def _close(closer: Any) -> None:
    if closer is None:
        return
    with anyio.CancelScope(shield=True):
        result = closer()
        if hasattr(result, "__await__"):
            await result
