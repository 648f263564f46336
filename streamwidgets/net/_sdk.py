"""Streams that a user already opened with the official `openai` or `anthropic` SDK.

The SDK has parsed the wire into typed objects; each one is dumped back to the JSON it came
from and fed as an SSE event through the same `Normalizer`, so an SDK stream and a raw one
give the same `StreamState`. The SDKs' stream helpers (`client.chat.completions.stream()`,
`client.responses.stream()`, `client.messages.stream()`) work too, entered or not: they wrap
each wire event (a chat chunk) or add events of their own (`content.delta`, `text`, ...), which
are unwrapped or skipped. Sync SDK streams are read in a worker thread, so the kernel's loop
stays free; the SDK stream is closed, and with it its connection, as soon as the answer is
complete (its terminator), the stream fails, or Cancel is pressed. A sync stream cancelled while
its worker waits in a read is shut down at its socket first: closing a socket does not wake a
read that another thread is blocked in, so a stalled stream would otherwise keep its connection
(and the thread) until the provider sent another byte.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, suppress
from typing import Any

import anyio

from ..core import ErrorEvent

__all__ = ["sdk_items", "sdk_event_bytes", "sdk_error", "sdk_provider"]

_END = object()
#: Events that only the SDKs' stream helpers make (each repeats what a wire event carried):
#: openai chat's `content.delta`, `refusal.done`, `tool_calls.function.arguments.delta`, ...,
#: and anthropic's `text`, `thinking`, `input_json`, ...
_HELPER_PREFIXES = ("content.", "refusal.", "tool_calls.", "logprobs.")
_HELPER_TYPES = frozenset(("text", "citation", "thinking", "signature", "input_json"))


def sdk_event_bytes(item: Any) -> bytes:
    """One SDK stream item as the SSE event it was parsed from (b"" for a helper's own event)."""
    kind = getattr(item, "type", None)
    if kind == "chunk" and hasattr(item, "chunk"):  # openai's chat helper wraps each chunk
        item, kind = item.chunk, None
    if isinstance(kind, str) and (kind in _HELPER_TYPES or kind.startswith(_HELPER_PREFIXES)):
        return b""
    if hasattr(item, "model_dump"):
        # The helpers' parsed models (`ParsedResponse[T]`) make pydantic warn on every dump.
        obj = item.model_dump(mode="json", exclude_unset=True, by_alias=True, warnings=False)
    elif isinstance(item, dict):
        obj = item
    else:
        raise TypeError(f"not an SDK stream event: {type(item).__name__}")
    kind = obj.get("type") if isinstance(obj.get("type"), str) else None
    head = f"event: {kind}\n" if kind else ""
    # A lone surrogate in a string cannot be UTF-8: written as its JSON escape, the JSON edge
    # (`core._json`) mends it like one that came over the wire, instead of the encode raising.
    return f"{head}data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode("utf-8", "backslashreplace")


async def sdk_items(stream: Any) -> AsyncIterator[bytes]:
    """Each SDK item as the SSE event it was parsed from. A helper's stream manager that was not
    entered is entered here (and left at the end); a sync stream is read in a worker thread, so
    the kernel's loop stays free. Leaving (the terminator, an error, a cancel) closes the SDK
    stream, and with it its connection."""
    async with AsyncExitStack() as managers:
        if not (hasattr(stream, "__aiter__") or hasattr(stream, "__iter__")):  # a helper's manager, not entered
            if hasattr(stream, "__aenter__"):
                stream = await managers.enter_async_context(stream)
            else:
                stream = managers.enter_context(stream)
        async for data in _items(stream):
            yield data


def sdk_provider(stream: Any) -> str:
    """Which SDK a stream (or a helper's manager) comes from: `openai`, `anthropic`, ..."""
    return type(stream).__module__.split(".")[0]


async def _items(stream: Any) -> AsyncIterator[bytes]:
    """Each SDK item as the SSE event it was parsed from; a sync stream is read in a worker thread.
    Leaving (the terminator, an error, a cancel) closes the SDK stream."""
    try:
        if hasattr(stream, "__aiter__"):
            async for item in stream:
                if data := sdk_event_bytes(item):
                    yield data
            return
        iterator = iter(stream)
        while True:
            try:
                item = await anyio.to_thread.run_sync(next, iterator, _END, abandon_on_cancel=True)
            except BaseException:  # a cancel leaves the worker blocked in its read: wake it
                _shut_down(stream)
                raise
            if item is _END:
                return
            if data := sdk_event_bytes(item):
                yield data
    finally:
        await _close(getattr(stream, "close", None))


def _shut_down(stream: Any) -> None:
    """Shut down the socket under a sync SDK stream, so that a read blocked on it returns."""
    # The SDKs' streams hold their HTTP response as `response`; openai's helpers only as
    # `_response`. The socket comes from the response's `network_stream` extension.
    response = getattr(stream, "response", None) or getattr(stream, "_response", None)
    network = getattr(response, "extensions", {}).get("network_stream")
    sock = network.get_extra_info("socket") if network is not None else None
    if isinstance(sock, socket.socket):
        with suppress(OSError):  # already closed by the peer
            sock.shutdown(socket.SHUT_RDWR)


def sdk_error(exc: Exception) -> ErrorEvent:
    code = getattr(exc, "code", None) or "sdk_error"
    return ErrorEvent(f"{type(exc).__name__}: {exc}", code, getattr(exc, "status_code", None))


async def _close(closer: Any) -> None:
    if closer is None:
        return
    with anyio.CancelScope(shield=True):
        result = closer()
        if hasattr(result, "__await__"):
            await result
