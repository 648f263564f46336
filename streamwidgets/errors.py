"""Reading provider error objects, and the exceptions raised for callers that ask for them.

Every provider wraps errors differently (`docs/wire-formats.md`, "Errors"); this module turns any of those
envelopes — inside a stream or as the body of a non-2xx response — into one `ErrorEvent`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from ._json import loads
from .events import ErrorEvent
from .sse import SSEDecoder, is_event_stream

if TYPE_CHECKING:
    from .state import StreamState

__all__ = [
    "error_from_object",
    "error_from_http",
    "retry_after_seconds",
    "summarize_body",
    "StreamError",
    "HTTPStatusError",
    "IncompleteStreamError",
]

_HTTP_REASONS = {
    400: "Bad request",
    401: "Unauthorized: the API key is missing or wrong",
    402: "Payment required: the account has no credit left",
    403: "Forbidden",
    404: "Not found: check the model name and the base URL",
    408: "Request timeout",
    409: "Conflict",
    413: "Request too large",
    422: "The request was not understood",
    429: "Too many requests: rate limited",
    500: "The provider had an internal error",
    502: "Bad gateway",
    503: "The provider is unavailable or overloaded",
    504: "Gateway timeout",
    529: "The provider is overloaded",
}


def error_from_object(obj: Any, http_status: Optional[int] = None, retry_after: Optional[float] = None) -> ErrorEvent:
    """An error event from any provider's error object.

    The object is `obj["error"]` when that is an object (OpenAI, Anthropic, OpenRouter, vLLM...),
    else `obj` itself (a flat Responses `error` event, llama.cpp's legacy `error:` line).
    `code` is the object's `code` when present and not null, otherwise its `type`.
    """
    inner = obj.get("error") if isinstance(obj, dict) else None
    err: Any = inner if isinstance(inner, dict) else obj
    if not isinstance(err, dict):
        text = inner if isinstance(inner, str) else obj
        return ErrorEvent(_one_line(str(text)) or "unknown error", None, http_status, retry_after)
    message = err.get("message")
    if not isinstance(message, str) or not message.strip():
        message = err.get("detail") if isinstance(err.get("detail"), str) else None
    code = err.get("code")
    if code is None or isinstance(code, bool):
        code = err.get("type")
    if not isinstance(code, (str, int)) or isinstance(code, bool):
        code = None
    if not message:
        message = str(code) if code is not None else "unknown error"
    return ErrorEvent(_one_line(message), code, http_status, retry_after)


def error_from_http(status: int, body: bytes, headers: Optional[Mapping[str, str]] = None) -> ErrorEvent:
    """A readable error from a non-2xx response: its JSON envelope — also when it came as an
    error event in an event-stream body (LiteLLM's HTTP 500 when a stream fails to start) — or a
    one-line summary of the body."""
    headers = headers or {}
    retry_after = retry_after_seconds(headers.get("retry-after"))
    location = headers.get("location")
    if 300 <= status < 400 and location:
        # Never followed: the key would go wherever the redirect points.
        return ErrorEvent(
            f"The server redirects this request to {_one_line(location, 300)}. streamwidgets does not follow "
            "redirects (your key would go along): if that address is right, use it as the base_url.",
            "redirect",
            status,
        )
    text = body.decode("utf-8", "replace").strip()
    obj: Any = None
    if text[:1] in "{[":
        try:
            obj = loads(text)
        except ValueError:
            obj = None
    elif text.startswith(("data:", "event:")) or is_event_stream(headers.get("content-type", "")):
        obj = _error_event(text)
    if isinstance(obj, dict) and ("error" in obj or "message" in obj):
        event = error_from_object(obj, status, retry_after)
        if event.message != "unknown error":
            return event
    reason = _HTTP_REASONS.get(status, f"HTTP error {status}")
    summary = summarize_body(text)
    message = f"{reason} — {summary}" if summary else reason
    return ErrorEvent(message, None, status, retry_after)


def _error_event(text: str) -> Optional[dict[str, Any]]:
    """The first error object in an event-stream body (even its last block without a blank line)."""
    decoder = SSEDecoder()
    events = decoder.feed(text.encode("utf-8")) + decoder.close()
    if decoder.unterminated is not None:
        events.append(decoder.unterminated)
    for sse in events:
        try:
            obj = loads(sse.data)
        except ValueError:
            continue
        if isinstance(obj, dict) and (obj.get("error") is not None or sse.event == "error"):
            return obj
    return None


def retry_after_seconds(value: Optional[str]) -> Optional[float]:
    """Retry-After as seconds (delta-seconds only; an HTTP date is rare from these APIs)."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", re.S | re.I)
_SPACE = re.compile(r"\s+")


def summarize_body(text: str, limit: int = 200) -> str:
    """One readable line from a proxy's HTML or plain-text error page."""
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.S | re.I)
    if title:
        text = title.group(1)
    return _one_line(html.unescape(_TAG.sub(" ", text)), limit)


def _one_line(text: str, limit: int = 500) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


class StreamError(Exception):
    """Raised by `run(..., raise_on_error=True)` when a stream ends in an error; keeps the state."""

    def __init__(self, state: StreamState) -> None:
        self.state = state
        super().__init__(state.message)

    @property
    def status_code(self) -> Optional[int]:
        return self.state.error.http_status if self.state.error else None

    @property
    def code(self) -> Union[str, int, None]:
        return self.state.error.code if self.state.error else None


class HTTPStatusError(StreamError):
    """The provider answered with a non-2xx status; no stream was read."""


class IncompleteStreamError(StreamError):
    """The stream ended (or stalled) before the provider's terminator."""
