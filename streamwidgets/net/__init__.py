"""The network edge: the request model, the sources (a live request, a replay, an SDK stream), the
one feed loop that runs any of them, the HTTP transport (httpx + anyio), paced reads, body
decoding, retry before the first token, and recording. The only layer that does network I/O."""

from __future__ import annotations

from ._conversation import Chat
from ._pipeline import RunOptions, Stream, on_every_part, pump
from ._request import DEFAULT_STALL_TIMEOUT, Secret, StreamRequest, make_request
from ._sources import Labels, Live, Replay, Sdk, Source, SourceContext, as_source, replay, sdk

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
    "Labels",
    "as_source",
    "replay",
    "sdk",
    "Stream",
    "RunOptions",
    "pump",
    "on_every_part",
    "Chat",
]
