"""The HTTP edge: one HTTP/1.1 server on loopback (asyncio + h11, in a background thread).

It serves a `Router` — a protocol: a whole request in, a `Reply` out — and knows nothing of
what the requests mean: the demo's routes are one router (`..demo`). Every connection is
bounded and guarded here (`ServerLimits`, `_guard`), whatever router it serves.
"""

from __future__ import annotations

from ._direct import DirectResponse, DirectServer, Dropped
from ._guard import LOOPBACK_NAMES, allowed_origins, refusal, too_large
from ._http import ServerLimits
from ._records import ConnectionRecord, Registry
from ._replies import (
    Cutoff,
    Frame,
    JsonReply,
    Pacing,
    Rejection,
    Reply,
    Router,
    SilentReply,
    Stall,
    Step,
    Steps,
    StreamReply,
)
from ._server import LoopbackServer, RouterFactory

__all__ = [
    "LoopbackServer",
    "DirectServer",
    "DirectResponse",
    "Dropped",
    "RouterFactory",
    "ServerLimits",
    "ConnectionRecord",
    "Registry",
    "Router",
    "Reply",
    "JsonReply",
    "StreamReply",
    "SilentReply",
    "Rejection",
    "Pacing",
    "Frame",
    "Stall",
    "Cutoff",
    "Step",
    "Steps",
    "LOOPBACK_NAMES",
    "allowed_origins",
    "refusal",
    "too_large",
]
