"""streamwidgets: stream LLM answers live into Jupyter widgets.

The pipeline is bytes → `sse` → `dialects` → `state` → `widgets`; see the README for a tour.
"""

from __future__ import annotations

from .client import Chat, StreamRequest, arun, astream, continue_request, make_request, run, stream_into
from .errors import HTTPStatusError, IncompleteStreamError, StreamError
from .events import Source, Usage
from .parse import parse
from .providers import PROVIDERS, Provider, get_provider
from .recording import replay_into
from .sdk import sdk_into
from .sse import ServerSentEvent, SSEDecoder
from .state import StreamState, ToolCall
from .widgets import ChatPanel, StreamHandle, StreamView, cancel_all, show, show_replay, show_sdk

__version__ = "0.1.0"

__all__ = [
    "show",
    "show_replay",
    "show_sdk",
    "StreamHandle",
    "StreamView",
    "ChatPanel",
    "cancel_all",
    "make_request",
    "StreamRequest",
    "stream_into",
    "arun",
    "run",
    "astream",
    "continue_request",
    "Chat",
    "sdk_into",
    "replay_into",
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
