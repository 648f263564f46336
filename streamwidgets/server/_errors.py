"""Errors answered before any stream: an HTTP status and a JSON body in the provider's envelope.

Clients must check the status before reading events, so every rejection here is a plain JSON
response and never a stream. The envelope follows the route, as real providers do: the
OpenAI-shaped routes answer `{"error": {"message", "type", "param", "code"}}`, the Anthropic
`/messages` route answers `{"type": "error", "error": {"type", "message"}, "request_id"}`.
Messages never echo an API key: the demo server does not even read one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["Rejection", "json_kind", "SCRIPTED_HTTP_ERRORS", "scripted_rejection", "error_body", "error_headers"]


@dataclass
class Rejection(Exception):
    """A request the server answers with an error status instead of a stream.

    Not frozen: raising an exception sets attributes on it (`__traceback__`, `__context__`).
    """

    status: int
    message: str
    type: str = "invalid_request_error"
    code: Optional[str] = None
    param: Optional[str] = None
    anthropic_type: str = "invalid_request_error"
    retry_after: Optional[int] = None
    #: Answer, then close the connection: what follows this request cannot be trusted (a
    #: request that frames its body two ways may hide a second request inside it).
    close: bool = False

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.message}"


def json_kind(value: Any) -> str:
    """A JSON value's type as OpenAI's errors name it: "a string", "an integer", "a decimal", "null"…"""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, Mapping) else "null"


_HINT = " (The demo server accepts any key; this error was asked for with the model name demo-http-{status}.)"

#: What each `demo-http-<status>` model answers: (openai type, openai code, anthropic type, message, Retry-After).
SCRIPTED_HTTP_ERRORS: dict[int, tuple[str, Optional[str], str, str, Optional[int]]] = {
    400: ("invalid_request_error", "invalid_request", "invalid_request_error", "The request was malformed.", None),
    401: ("invalid_request_error", "invalid_api_key", "authentication_error", "Invalid API key.", None),
    402: (
        "insufficient_quota",
        "insufficient_balance",
        "billing_error",
        "Insufficient balance: add credit to continue.",
        None,
    ),
    403: ("permission_error", "permission_denied", "permission_error", "This key may not use this model.", None),
    404: (
        "invalid_request_error",
        "model_not_found",
        "not_found_error",
        "The model does not exist or you do not have access to it.",
        None,
    ),
    408: (
        "timeout_error",
        "request_timeout",
        "timeout_error",
        "The request timed out before the model answered.",
        None,
    ),
    413: ("invalid_request_error", "request_too_large", "request_too_large", "The request is too large.", None),
    422: (
        "invalid_request_error",
        "unprocessable_entity",
        "invalid_request_error",
        "The request could not be processed.",
        None,
    ),
    429: (
        "requests",
        "rate_limit_exceeded",
        "rate_limit_error",
        "Rate limit reached: too many requests, please slow down.",
        2,
    ),
    500: ("server_error", "server_error", "api_error", "The server had an error while processing your request.", None),
    502: ("server_error", "bad_gateway", "api_error", "Bad gateway: the upstream model did not answer.", None),
    503: (
        "server_error",
        "service_unavailable",
        "overloaded_error",
        "The service is temporarily unavailable: no capacity.",
        1,
    ),
    504: (
        "timeout_error",
        "gateway_timeout",
        "timeout_error",
        "Gateway timeout: the upstream model took too long.",
        None,
    ),
    529: ("server_error", "overloaded", "overloaded_error", "Overloaded.", 1),
}


def scripted_rejection(status: int) -> Rejection:
    """The rejection a `demo-http-<status>` model asks for."""
    type_, code, anthropic_type, message, retry_after = SCRIPTED_HTTP_ERRORS[status]
    return Rejection(
        status=status,
        message=message + _HINT.format(status=status),
        type=type_,
        code=code,
        anthropic_type=anthropic_type,
        retry_after=retry_after,
    )


def error_body(rejection: Rejection, api: str, request_id: str) -> bytes:
    """The JSON body of a rejection in the envelope of the route `api` was asked on."""
    if api == "messages":
        envelope: dict[str, object] = {
            "type": "error",
            "error": {"type": rejection.anthropic_type, "message": rejection.message},
            "request_id": request_id,
        }
    else:
        envelope = {
            "error": {
                "message": rejection.message,
                "type": rejection.type,
                "param": rejection.param,
                "code": rejection.code,
            }
        }
    return json.dumps(envelope).encode()


def error_headers(rejection: Rejection) -> list[tuple[str, str]]:
    """Extra headers of a rejection: `Retry-After` (seconds) when the client should wait."""
    if rejection.retry_after is None:
        return []
    return [("retry-after", str(rejection.retry_after)), ("retry-after-ms", str(rejection.retry_after * 1000))]
