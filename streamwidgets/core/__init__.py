"""The sans-IO core: bytes → Server-Sent Events → normalized events → `StreamState`.

Nothing here touches the network, a clock of its own, a widget or a renderer: importing it loads
no httpx, ipywidgets, IPython, pygments or markdown-it (a test checks). The building blocks a user
may need on their own are exported here: the SSE decoder, the normalized events, the state, the
presets and `parse()`.
"""

from __future__ import annotations

from ._errors import HTTPStatusError, IncompleteStreamError, StreamError
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
from ._feed import Feed
from ._limits import DEFAULT_LIMITS, Limits
from ._parse import parse
from ._providers import PROVIDERS, Provider, get_provider
from ._sse import ServerSentEvent, SSEDecoder
from ._state import StreamErrorInfo, StreamState, ToolCall
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
]
