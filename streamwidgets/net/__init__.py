"""The network edge: the request model, the sources (a live request, a replay, an SDK stream), the
one feed loop that runs any of them, the HTTP transport (httpx + anyio), paced reads, body
decoding, retry before the first token, and recording. The client's side of every connection
(the embedded provider's side is `server/`)."""

from __future__ import annotations

from ._conversation import Chat
from ._inprocess import INPROCESS_ENV
from ._pipeline import Notify, PathLike, RunOptions, Stream, on_every_part, pump
from ._reads import PAUSE, UNWATCHED_PAUSE, Pause
from ._request import DEFAULT_STALL_TIMEOUT, Prompt, Secret, StreamRequest, make_request
from ._retry import DEFAULT_RETRIES
from ._sources import Labels, Live, Replay, Sdk, Source, SourceContext, as_source, replay, script_note, sdk
from ._tool_runner import DEFAULT_MAX_STEPS, DEFAULT_TOOL_TIMEOUT, Confirm, ToolLoop

__all__ = [
    "StreamRequest",
    "Secret",
    "make_request",
    "DEFAULT_STALL_TIMEOUT",
    "Source",
    "SourceContext",
    "Live",
    "Replay",
    "Sdk",
    "INPROCESS_ENV",
    "Labels",
    "as_source",
    "replay",
    "sdk",
    "Stream",
    "RunOptions",
    "pump",
    "on_every_part",
    "Chat",
    "Prompt",
    "PathLike",
    "Notify",
    "Pause",
    "PAUSE",
    "UNWATCHED_PAUSE",
    "DEFAULT_RETRIES",
    "ToolLoop",
    "Confirm",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_TOOL_TIMEOUT",
    "script_note",
]
