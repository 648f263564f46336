"""The normalized events: the small vocabulary every wire dialect is translated into.

A dialect turns one Server-Sent Event into zero or more of these; `StreamState` folds them.
They are slotted dataclasses (treat them as immutable) so that a stream can be compared, logged
and replayed; they are not frozen because a frozen dataclass costs a microsecond more per token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Union

__all__ = [
    "Citation",
    "Usage",
    "TextDelta",
    "ReasoningDelta",
    "RefusalDelta",
    "CitationsFound",
    "ToolCallDelta",
    "UsageReport",
    "Finish",
    "ErrorEvent",
    "Terminator",
    "Heartbeat",
    "Started",
    "Problem",
    "Token",
    "TokenLogprobs",
    "Event",
]


@dataclass(frozen=True, slots=True)
class Citation:
    """A web page the answer cites. `title` is None when the provider gave only a URL."""

    url: str
    title: Optional[str] = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage as the provider reported it. A field it did not report is None; a reported 0 stays 0."""

    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    total_tokens: Optional[int] = None
    cached_tokens: Optional[int] = None
    reasoning_tokens: Optional[int] = None
    cost: Optional[float] = None


@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class ReasoningDelta:
    text: str


@dataclass(slots=True)
class RefusalDelta:
    text: str


@dataclass(slots=True)
class CitationsFound:
    """Citations in order of appearance; the state de-duplicates them by URL (first title wins)."""

    citations: tuple[Citation, ...]


#: What groups a call's fragments: an index or id from the wire, or a tuple the dialect made up.
ToolCallKey = Union[int, str, tuple[Union[int, str], ...]]


@dataclass(slots=True)
class ToolCallDelta:
    """A fragment of a client-executed tool call.

    `key` groups fragments into one call (chat `index`, a Responses item id, a Messages block
    index, or a key the dialect invented for index-less providers). `id` and `name` are set on
    the fragment that carries them; `arguments` is appended verbatim.
    """

    key: ToolCallKey
    id: Optional[str] = None
    name: Optional[str] = None
    arguments: str = ""


@dataclass(slots=True)
class UsageReport:
    """The latest usage; it replaces any earlier report (providers resend cumulative usage)."""

    usage: Usage


@dataclass(slots=True)
class Finish:
    """The provider's own terminal reason, verbatim (never None: a null reason is no event)."""

    reason: str


@dataclass(slots=True)
class ErrorEvent:
    """An error signal inside the stream (or the body of a non-2xx response)."""

    message: str
    code: Union[str, int, None] = None
    http_status: Optional[int] = None
    retry_after: Optional[float] = None


@dataclass(slots=True)
class Terminator:
    """The dialect's proper end was seen: `[DONE]`, `response.completed`, `message_stop`..."""


@dataclass(slots=True)
class Heartbeat:
    """An SSE comment or a ping event: no data, but the server is alive."""

    comment: str = ""


@dataclass(slots=True)
class Started:
    """What the stream says about itself: the model that answers, the response id, and — from
    the embedded provider's `X-Demo-Script` header — which scripted lesson or scenario answered."""

    model: Optional[str] = None
    response_id: Optional[str] = None
    script: Optional[str] = None


@dataclass(slots=True)
class Problem:
    """Input that could not be understood (bad JSON, wrong shape). Kept as a warning, never raised."""

    message: str


@dataclass(frozen=True, slots=True)
class Token:
    """One token of the answer as the model chose it: its text, its log-probability (natural log,
    at most 0) and the most likely tokens at that place as (text, log-probability) pairs, most
    likely first (the chosen token among them when it was one of them)."""

    text: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()

    @property
    def probability(self) -> float:
        """The chance the model gave this token, from 0 to 1."""
        return math.exp(self.logprob)


@dataclass(slots=True)
class TokenLogprobs:
    """The tokens of the answer text that arrived with them (their texts joined are that text)."""

    tokens: tuple[Token, ...]


Event = Union[
    TextDelta,
    ReasoningDelta,
    RefusalDelta,
    CitationsFound,
    ToolCallDelta,
    UsageReport,
    Finish,
    ErrorEvent,
    Terminator,
    Heartbeat,
    Started,
    Problem,
    TokenLogprobs,
]
