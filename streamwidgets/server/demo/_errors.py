"""The scripted HTTP errors (`demo-http-<status>`), answered before any stream.

Clients must check the status before reading events, so every rejection is a plain JSON
response and never a stream. Its envelope follows the route, as real providers do: each API
spec writes its own (`apis/`). Messages never echo an API key: the demo server does not even
read one.
"""

from __future__ import annotations

from typing import Optional

from .._edge import Rejection

__all__ = ["SCRIPTED_HTTP_ERRORS", "scripted_rejection", "error_headers"]


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


def error_headers(rejection: Rejection) -> list[tuple[str, str]]:
    """Extra headers of a rejection: `Retry-After` (seconds) when the client should wait."""
    if rejection.retry_after is None:
        return []
    return [("retry-after", str(rejection.retry_after)), ("retry-after-ms", str(rejection.retry_after * 1000))]
