"""Wire dialects: each owns its API in both directions, as an h11 connection owns its reader and
its writer. `Normalizer` (bytes in, normalized events out) detects the dialect from the first
event that tells; `dialect_class(api)` gives the request side of one API."""

from __future__ import annotations

from ._chat import ChatDialect
from ._gemini import GeminiDialect
from ._logprobs import asked_alternatives, check_logprobs
from ._messages import MessagesDialect
from ._normalizer import (
    DIALECTS,
    WHOLE_BODY_LIMIT,
    Dialect,
    Normalizer,
    WholeBody,
    detect_dialect,
    dialect_class,
)
from ._request import TOKEN_LIMIT_NAMES, CallResult
from ._responses import ResponsesDialect

__all__ = [
    "Dialect",
    "ChatDialect",
    "ResponsesDialect",
    "MessagesDialect",
    "GeminiDialect",
    "Normalizer",
    "WholeBody",
    "detect_dialect",
    "dialect_class",
    "DIALECTS",
    "WHOLE_BODY_LIMIT",
    "TOKEN_LIMIT_NAMES",
    "CallResult",
    "asked_alternatives",
    "check_logprobs",
]
