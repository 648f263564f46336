"""streamwidgets: stream LLM answers live into Jupyter widgets.

The pipeline is bytes → `sse` → `dialects` → `state` → `widgets`; see the README for a tour.
"""

from __future__ import annotations

from .errors import HTTPStatusError, IncompleteStreamError, StreamError
from .events import Source, Usage
from .parse import parse
from .providers import PROVIDERS, Provider, get_provider
from .sse import ServerSentEvent, SSEDecoder
from .state import StreamState, ToolCall

__version__ = "0.1.0"

__all__ = [
    "parse",
    "StreamState",
    "ToolCall",
    "Source",
    "Usage",
    "SSEDecoder",
    "ServerSentEvent",
    "Provider",
    "PROVIDERS",
    "get_provider",
    "StreamError",
    "HTTPStatusError",
    "IncompleteStreamError",
]
