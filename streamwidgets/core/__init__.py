"""The sans-IO core: bytes → Server-Sent Events → normalized events → `StreamState`.

Nothing here touches the network, a clock of its own, a widget or a renderer: importing it loads
no httpx, ipywidgets, IPython, pygments or markdown-it (a test checks). The building blocks a user
may need on their own are exported here: the SSE decoder, the normalized events, the state, the
presets and `parse()`. What the layers above use of the core is imported from here too (a test
reads the import graph): they never reach into its private modules.
"""

from __future__ import annotations

from . import _formatting as formatting
from ._chunked import Reframer
from ._errors import (
    HTTPStatusError,
    IncompleteStreamError,
    StreamError,
    Where,
    connect_failed,
    connect_timed_out,
    connection_closed,
    cors_refused,
    error_from_http,
    redirected,
    spent,
    stalled,
    summarize_body,
)
from ._events import (
    Citation,
    CitationsFound,
    ErrorEvent,
    Event,
    Finish,
    Heartbeat,
    Problem,
    ReasoningDelta,
    RefusalDelta,
    Started,
    Terminator,
    TextDelta,
    Token,
    TokenLogprobs,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from ._feed import Feed, Item, StreamBroke, slices
from ._limits import DEFAULT_LIMITS, LIMIT_NAMES, Limits, check_seconds
from ._options import FIELDS, PACKAGE_OPTIONS, STAND_IN_EXTRAS, accepted, check_options, closest
from ._parse import parse
from ._providers import APIS, CUSTOM, DEMO_FLAVORS, PROVIDERS, Api, Provider, get_provider
from ._recordings import RECORDING_ENDED, PathLike, Recording, as_recording, is_recording, recording_items
from ._redact import ByteRedactor, Redact, Redactor, scrub, unchanged
from ._sse import ServerSentEvent, SSEDecoder, is_event_stream
from ._state import Origin, RetryNote, StreamErrorInfo, StreamState, ToolCall
from ._tools import DECLINED, MAX_ARGUMENT_CHARS, Tool, ToolInputError, ToolResult, as_tools, encode_result
from .dialects import Normalizer

__all__ = [
    "SSEDecoder",
    "ServerSentEvent",
    "Normalizer",
    "Feed",
    "StreamState",
    "ToolCall",
    "StreamErrorInfo",
    "Limits",
    "DEFAULT_LIMITS",
    "parse",
    "Provider",
    "PROVIDERS",
    "get_provider",
    "StreamError",
    "HTTPStatusError",
    "IncompleteStreamError",
    "Event",
    "TextDelta",
    "ReasoningDelta",
    "RefusalDelta",
    "Citation",
    "CitationsFound",
    "ToolCallDelta",
    "Usage",
    "UsageReport",
    "Finish",
    "ErrorEvent",
    "Terminator",
    "Heartbeat",
    "Started",
    "Problem",
    "Token",
    "TokenLogprobs",
    # what the layers above use
    "formatting",
    "Reframer",
    "Where",
    "connect_failed",
    "connect_timed_out",
    "cors_refused",
    "redirected",
    "connection_closed",
    "error_from_http",
    "spent",
    "stalled",
    "summarize_body",
    "Item",
    "StreamBroke",
    "slices",
    "LIMIT_NAMES",
    "check_seconds",
    "FIELDS",
    "STAND_IN_EXTRAS",
    "PACKAGE_OPTIONS",
    "check_options",
    "accepted",
    "closest",
    "APIS",
    "Api",
    "CUSTOM",
    "DEMO_FLAVORS",
    "PathLike",
    "Recording",
    "RECORDING_ENDED",
    "as_recording",
    "is_recording",
    "recording_items",
    "Redact",
    "Redactor",
    "ByteRedactor",
    "scrub",
    "unchanged",
    "is_event_stream",
    "Origin",
    "RetryNote",
    "Tool",
    "ToolResult",
    "ToolInputError",
    "as_tools",
    "encode_result",
    "DECLINED",
    "MAX_ARGUMENT_CHARS",
]
