"""Every failure in words: provider error objects, what the network did, and the exceptions
raised for callers that ask for them.

Every provider wraps errors differently (`docs/wire-formats.md`, "Errors"); this module turns any of
those envelopes — inside a stream or as the body of a non-2xx response — into one `ErrorEvent`. What
the network did (no name resolution, nothing listening, a TLS problem, a timeout, a cut connection)
is worded here too, from the exception chain alone, so that every message a person reads is in one
place and names the fix.
"""

from __future__ import annotations

import html
import re
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

from ._events import ErrorEvent
from ._formatting import one_line
from ._json import loads
from ._sse import SSEDecoder, is_event_stream

if TYPE_CHECKING:
    from ._state import StreamState

__all__ = [
    "CODE_CHARS",
    "spent",
    "error_from_object",
    "error_from_http",
    "retry_after_seconds",
    "summarize_body",
    "Where",
    "connect_failed",
    "connect_timed_out",
    "cors_refused",
    "redirected",
    "stalled",
    "connection_closed",
    "StreamError",
    "HTTPStatusError",
    "IncompleteStreamError",
]

#: The most characters of a provider's error code (or finish reason) kept: a code is a word, such as
#: `rate_limit_exceeded` or `SAFETY`; a megabyte in its place is cut as a message is (`one_line`).
CODE_CHARS = 100

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


#: Codes that say the account is out of credit: waiting does not cure it (OpenAI answers 429 for it).
_SPENT_CODES = frozenset({"insufficient_quota", "insufficient_balance", "billing_hard_limit_reached"})
#: ...and what such an error says when its code does not (LiteLLM: "crossed budget", "Budget has
#: been exceeded"; a per-minute quota, which does pass, says "per minute" and sends a wait).
_SPENT_WORDS = re.compile(r"budget|insufficient (?:balance|credit|funds)|billing|out of credit", re.I)


#: What a gateway says when the server behind it failed, in a person's words. LiteLLM's router
#: names the exception class first; a connection error there means the model server it was
#: streaming from (or sending to) stopped or cannot be reached (docs/classroom.md, "Past one machine").
_GATEWAY_WORDS = (
    (
        re.compile(r"^litellm\.APIConnectionError\b"),
        "The class gateway (LiteLLM) lost its connection to the model server behind it (the server stopped or "
        "cannot be reached). Ask again: the gateway sends new questions to a server that answers (if this "
        "keeps happening, tell whoever runs the gateway)",
    ),
)


def _in_words(message: str) -> str:
    for pattern, words in _GATEWAY_WORDS:
        if pattern.search(message):
            return words
    return message


def spent(code: Union[str, int, None], message: str) -> bool:
    """The error says the quota, budget or credit is used up: it will not go away by waiting, so
    it is neither retried (`net/_retry.py`) nor offered a Retry or Continue (`StreamState`)."""
    return str(code) in _SPENT_CODES or bool(_SPENT_WORDS.search(message))


def error_from_object(obj: Any, http_status: Optional[int] = None, retry_after: Optional[float] = None) -> ErrorEvent:
    """An error event from any provider's error object.

    The object is `obj["error"]` when that is an object (OpenAI, Anthropic, OpenRouter, vLLM...),
    else `obj` itself (a flat Responses `error` event, llama.cpp's legacy `error:` line).
    `code` is the object's `code` when present and not null, otherwise its `type`; Google's
    status name rather than its number.
    """
    inner = obj.get("error") if isinstance(obj, dict) else None
    err: Any = inner if isinstance(inner, dict) else obj
    if not isinstance(err, dict):
        text = inner if isinstance(inner, str) else obj
        return ErrorEvent(one_line(str(text)) or "unknown error", None, http_status, retry_after)
    message = err.get("message")
    if not isinstance(message, str) or not message.strip():
        message = err.get("detail") if isinstance(err.get("detail"), str) else None
    code = err.get("code")
    if code is None or isinstance(code, bool):
        code = err.get("type")
    if isinstance(code, int) and isinstance(err.get("status"), str) and err["status"]:
        code = err["status"]  # Google's envelope: the HTTP number, and its name (`RESOURCE_EXHAUSTED`)
    if not isinstance(code, (str, int)) or isinstance(code, bool):
        code = None
    elif isinstance(code, str):
        code = one_line(code, CODE_CHARS)
    if not message:
        message = str(code) if code is not None else "unknown error"
    return ErrorEvent(one_line(_in_words(message)), code, http_status, retry_after)


def error_from_http(status: int, body: bytes, headers: Optional[Mapping[str, str]] = None) -> ErrorEvent:
    """A readable error from a non-2xx response: its JSON envelope — also when it came as an
    error event in an event-stream body (LiteLLM's HTTP 500 when a stream fails to start) — or a
    one-line summary of the body."""
    headers = headers or {}
    retry_after = retry_after_seconds(headers.get("retry-after"))
    location = headers.get("location")
    if 300 <= status < 400 and location:
        return ErrorEvent(redirected(location), "redirect", status)
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


def redirected(location: Optional[str]) -> str:
    """A redirect in words. It is never followed: the key would go wherever it points. A browser
    does not tell a page where a redirect points (`location` None)."""
    to = f"to {one_line(location, 300)}" if location else "to another address (the browser does not say which)"
    return (
        f"The server redirects this request {to}. streamwidgets does not follow redirects (your key would go "
        "along): if that address is right, use it as the base_url."
    )


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


def summarize_body(text: str, limit: int = 200) -> str:
    """One readable line from a proxy's HTML or plain-text error page."""
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.S | re.I)
    if title:
        text = title.group(1)
    return one_line(html.unescape(_TAG.sub(" ", text)), limit)


# --------------------------------------------------------------------------- what the network did


@dataclass(frozen=True)
class Where:
    """The server a request went to, as the words about a network failure name it."""

    scheme: str
    host: str
    port: Optional[int] = None
    #: What runs there, when it is a server the user starts themselves ("Ollama", "llama.cpp's server").
    local_server: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}" + (f":{self.port}" if self.port else "")


#: How to get an answer anyway, named in every message about an unreachable server.
OFFLINE_FIX = "`offline=True` streams the built-in demo instead, or `sw.replay(path)` plays a recording"
_NO_NAME = r"name or service not known|nodename nor servname|getaddrinfo failed|temporary failure in name resolution"


def connect_failed(exc: BaseException, where: Where) -> str:
    """What the network did, in words that name the fix: no name resolution (offline), nothing
    listening (is the local server running?), a TLS problem — never "the provider said"."""
    causes = _causes(exc)
    text = _reason(exc)
    if any(isinstance(c, socket.gaierror) for c in causes) or re.search(_NO_NAME, text, re.I):
        return f"Can't reach {where.host}: its name does not resolve, so this machine seems offline. {OFFLINE_FIX}."
    if any(isinstance(c, ConnectionRefusedError) for c in causes) or "refused" in text.lower():
        port = where.port or (443 if where.scheme == "https" else 80)
        if where.local_server:
            return f"Nothing answers on {where.host}:{port} — is {where.local_server} running? ({OFFLINE_FIX}.)"
        return f"Nothing answers on {where.host}:{port}: check the base_url and that the server is running."
    if any(isinstance(c, ssl.SSLError) for c in causes) or "certificate" in text.lower():
        return f"A secure (TLS) connection to {where.host} failed: {_tls_words(text, where.host)}"
    return f"Could not connect to {where}: {text}."


def cors_refused(where: Where, origin: str, headers: list[str]) -> str:
    """A browser's refusal to hand this page a server's answer (CORS): the server answered, so
    the fix is on its side — what it must allow, named for this page and this request."""
    asked = ", ".join(sorted(headers)) or "content-type"
    return (
        f"The browser blocked the answer from {where}: the server answered, but does not allow this page "
        f"({origin}) to read it (CORS). The server must allow this origin (`Access-Control-Allow-Origin: {origin}` "
        f"or `*`) and, in its answer to the browser's OPTIONS preflight, the method POST and the headers "
        f"`{asked}` (`Access-Control-Allow-Headers`). A class gateway does this with its CORS setting "
        "(docs/jupyterlite.md)."
    )


def connect_timed_out(where: Where, seconds: float) -> str:
    return (
        f"{where} did not answer within {seconds:g} s: the server may be down, or a firewall or proxy drops the "
        f"connection. Check the base_url, or {OFFLINE_FIX}."
    )


def stalled(seconds: float) -> str:
    return (
        f"no data arrived for {seconds:g} s, so streamwidgets stopped waiting (the stream stalled). "
        "The provider may be overloaded: Continue asks for the rest, and a larger `stall_timeout=` waits longer."
    )


def connection_closed(exc: BaseException) -> str:
    return f"the connection closed before the answer was finished ({_reason(exc)})."


def _tls_words(text: str, host: str) -> str:
    """What a TLS failure means and what fixes it; the library's own words come last."""
    lowered = text.lower()
    if "wrong version number" in lowered or "record layer failure" in lowered or "http request" in lowered:
        why = "the server does not speak TLS. If it serves plain HTTP, use http:// in the base_url."
    elif "self-signed" in lowered or "unable to get local issuer" in lowered or "unknown ca" in lowered:
        why = (
            "its certificate is not signed by an authority this machine trusts (a self-signed certificate, or a "
            "network that inspects TLS). Point SSL_CERT_FILE at the certificate you trust, or serve plain http:// "
            "on 127.0.0.1 for a server of your own."
        )
    elif "expired" in lowered or "not yet valid" in lowered:
        why = "its certificate has expired or is not valid yet: check this machine's clock, then the server's certificate."
    elif "hostname mismatch" in lowered or "doesn't match" in lowered or "not valid for" in lowered:
        why = f"its certificate is for another name than {host}: check the host in the base_url."
    else:
        why = "check the base_url; a proxy that inspects TLS, or a clock far off, can also cause this."
    return f"{why} ({text})"


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and what it was raised from (httpx → httpcore → anyio → the OS error)."""
    chain: list[BaseException] = []
    current: Optional[BaseException] = exc
    while current is not None and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.rstrip(".")


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
