"""`StreamState`: folds normalized events into what a person wants to know about an answer.

Pure and deterministic: no clock of its own (callers pass `now`), no I/O, no widgets. The same
events give the same state, however the bytes that carried them were chunked.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, Optional, Union, get_args

from .events import (
    ErrorEvent,
    Event,
    Finish,
    Heartbeat,
    Problem,
    ReasoningDelta,
    RefusalDelta,
    Source,
    SourcesFound,
    Started,
    Terminator,
    TextDelta,
    ToolCallDelta,
    ToolCallKey,
    Usage,
    UsageReport,
)

__all__ = [
    "StreamState",
    "ToolCall",
    "StreamErrorInfo",
    "normalize_finish_reason",
    "joined_text",
    "Status",
    "Phase",
    "STATUSES",
    "FINAL_STATUSES",
]

#: Live statuses first, then the four ways a stream can end.
Status = Literal["waiting", "streaming", "complete", "incomplete", "error", "cancelled"]
#: What a person would say is happening: a live phase, or how it ended.
Phase = Literal["waiting", "thinking", "answering", "complete", "incomplete", "error", "cancelled"]
STATUSES: tuple[Status, ...] = get_args(Status)
FINAL_STATUSES: frozenset[Status] = frozenset(("complete", "incomplete", "error", "cancelled"))
#: The ends after which the model can be asked for the rest (or the request sent again).
_CONTINUABLE: frozenset[Status] = frozenset(("incomplete", "cancelled", "error"))
#: Below this span from first to last token a rate is noise (a burst of reads), not a speed.
_MIN_RATE_SPAN = 0.05

_FINISH_MAP = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "completed": "stop",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "refusal",
    "error": "error",
    "failed": "error",
}


def normalize_finish_reason(reason: Optional[str], has_tool_calls: bool = False) -> Optional[str]:
    """Map a provider's reason onto stop / length / tool_calls / content_filter / refusal / error.

    Unknown reasons (`pause_turn`, ...) pass through unchanged. A `stop` with assembled tool
    calls becomes `tool_calls` (Gemini ends tool calls with `stop`; Responses has no such reason).
    """
    if reason is None:
        return None
    normalized = _FINISH_MAP.get(reason, reason)
    if normalized == "stop" and has_tool_calls:
        return "tool_calls"
    return normalized


def joined_text(carried: str, text: str) -> str:
    """The whole answer after a Continue: a continued part normally starts with the answer so far
    (the request's prefix); one that does not is shown after it."""
    return text if not carried or text.startswith(carried) else carried + text


@dataclass
class ToolCall:
    """A client-executed tool call; `arguments` is the exact concatenated string."""

    id: Optional[str]
    name: Optional[str]
    arguments: str = ""


@dataclass(frozen=True)
class StreamErrorInfo:
    """How the provider said it failed: its message, its code, the HTTP status if there was one."""

    message: str
    code: Union[str, int, None] = None
    http_status: Optional[int] = None
    retry_after: Optional[float] = None

    def __str__(self) -> str:
        parts = [self.message]
        detail = []
        if self.http_status is not None:
            detail.append(f"HTTP {self.http_status}")
        if self.code is not None and self.code != self.http_status:
            detail.append(f"code {self.code}")
        if self.retry_after is not None:
            detail.append(f"retry after {self.retry_after:g} s")
        if detail:
            parts.append(f"({', '.join(detail)})")
        return " ".join(parts)


@dataclass
class StreamState:
    """Everything known about one streamed answer so far.

    Feed it with `apply(event, now)` and end it with `close(...)`. Reading it never changes it.
    """

    model: Optional[str] = None
    provider: Optional[str] = None
    response_id: Optional[str] = None
    refusal: Optional[str] = None
    sources: list[Source] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Optional[Usage] = None
    finish_reason: Optional[str] = None
    status: Status = "waiting"
    error: Optional[StreamErrorInfo] = None
    #: Why an incomplete stream ended, in words (set by whoever closed it).
    incomplete_reason: Optional[str] = None
    #: Input that could not be understood; the stream went on without it.
    warnings: list[str] = field(default_factory=list)
    heartbeats: int = 0
    terminated: bool = False
    #: Monotonic times in seconds, as passed in by the caller (None when replaying without a clock).
    started_at: Optional[float] = None
    first_token_at: Optional[float] = None
    last_token_at: Optional[float] = None
    last_event_at: Optional[float] = None
    ended_at: Optional[float] = None
    #: Bumped on every change, so that a view can skip frames where nothing happened.
    version: int = 0

    def __post_init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._text_len = 0
        self._reasoning_len = 0
        self._source_urls: set[str] = set()
        self._tool_keys: dict[ToolCallKey, ToolCall] = {}
        self._closed = False

    # ------------------------------------------------------------------ reading

    @property
    def text(self) -> str:
        """The answer so far, byte for byte."""
        if len(self._text) > 1:
            self._text[:] = ["".join(self._text)]
        return self._text[0] if self._text else ""

    @property
    def reasoning(self) -> str:
        """The reasoning / thinking text so far; "" when none."""
        if len(self._reasoning) > 1:
            self._reasoning[:] = ["".join(self._reasoning)]
        return self._reasoning[0] if self._reasoning else ""

    @property
    def text_length(self) -> int:
        return self._text_len

    @property
    def reasoning_length(self) -> int:
        return self._reasoning_len

    @property
    def done(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def can_continue(self) -> bool:
        """It ended short of a full answer: cut off, cancelled, failed, or stopped by the token
        limit. Continue asks for the rest (or, with no answer yet, sends the request again)."""
        if not self.done:
            return False
        return self.status in _CONTINUABLE or (self.status == "complete" and self.finish == "length")

    @property
    def phase(self) -> Phase:
        """What a person would say is happening: waiting, thinking, answering, or the final status."""
        status = self.status
        if status == "complete" or status == "incomplete" or status == "error" or status == "cancelled":
            return status
        if self._text_len or self.tool_calls or self.refusal:
            return "answering"
        if self._reasoning_len:
            return "thinking"
        return "waiting"

    @property
    def finish(self) -> Optional[str]:
        """The normalized finish reason (stop / length / tool_calls / content_filter / refusal / error)."""
        return normalize_finish_reason(self.finish_reason, bool(self.tool_calls))

    @property
    def estimated_completion_tokens(self) -> int:
        """About four characters per token, as providers estimate when no usage arrived."""
        chars = self._text_len + self._reasoning_len + sum(len(t.arguments) for t in self.tool_calls)
        if self.refusal:
            chars += len(self.refusal)
        return math.ceil(chars / 4)

    @property
    def completion_tokens(self) -> tuple[int, bool]:
        """(tokens, estimated): the reported completion tokens, or an estimate when none came."""
        if self.usage is not None and self.usage.completion_tokens is not None:
            return self.usage.completion_tokens, False
        return self.estimated_completion_tokens, True

    @property
    def time_to_first_token(self) -> Optional[float]:
        if self.started_at is None or self.first_token_at is None:
            return None
        return max(0.0, self.first_token_at - self.started_at)

    @property
    def tokens_per_second(self) -> Optional[float]:
        """Completion tokens over the time from the first to the last token (None when the
        answer arrived too fast to time, e.g. in one network read or a replay at full speed)."""
        if self.first_token_at is None or self.last_token_at is None:
            return None
        span = self.last_token_at - self.first_token_at
        if span < _MIN_RATE_SPAN:
            return None
        return self.completion_tokens[0] / span

    @property
    def elapsed(self) -> Optional[float]:
        if self.started_at is None:
            return None
        end = self.ended_at if self.ended_at is not None else self.last_event_at
        return None if end is None else max(0.0, end - self.started_at)

    @property
    def message(self) -> str:
        """How the stream stands or ended, in plain words."""
        if self.status == "waiting":
            return "Waiting for the first token…"
        if self.status == "streaming":
            return "Streaming…"
        kept = self._kept_phrase()
        if self.status == "complete":
            reason = self.finish
            if reason == "length":
                return "Complete, but cut short by the token limit."
            if reason == "content_filter":
                return "Stopped by the provider's content filter."
            if reason == "refusal":
                return "The model refused to answer."
            return "Complete."
        if self.status == "cancelled":
            return f"Cancelled by you.{kept}"
        if self.status == "error":
            assert self.error is not None
            return f"The provider reported an error: {self.error}.{kept}"
        why = self.incomplete_reason or "The connection ended before the answer was finished."
        return f"Incomplete: {why}{kept}"

    def _kept_phrase(self) -> str:
        if not (self._text_len or self._reasoning_len or self.tool_calls):
            return ""
        n, est = self.completion_tokens
        return f" The partial answer ({'about ' if est else ''}{n} tokens) is kept."

    def __repr__(self) -> str:
        preview = self.text[:40] + ("…" if self._text_len > 40 else "")
        return (
            f"<StreamState {self.status} model={self.model!r} text={preview!r} "
            f"reasoning={self._reasoning_len} chars sources={len(self.sources)} "
            f"tool_calls={len(self.tool_calls)} usage={self.usage}>"
        )

    # ------------------------------------------------------------------ writing

    def begin(self, now: Optional[float] = None) -> None:
        """Mark the moment the request was sent (for time to first token)."""
        self.started_at = now

    def apply(self, event: Event, now: Optional[float] = None) -> None:
        """Fold one normalized event into the state. Events after the end are ignored."""
        if self._closed:
            return
        self.version += 1
        if now is not None:
            self.last_event_at = now
        # `type(...) is` rather than isinstance: the events are final classes, and TextDelta
        # (the hot path) is decided by the first comparison.
        if type(event) is TextDelta:
            text = event.text
            if text:
                self._text.append(text)
                self._text_len += len(text)
                if now is not None or self.status == "waiting":
                    self._token(now)
        elif type(event) is ReasoningDelta:
            if event.text:
                self._reasoning.append(event.text)
                self._reasoning_len += len(event.text)
                self._token(now)
        elif type(event) is Heartbeat:
            self.heartbeats += 1
        elif type(event) is UsageReport:
            self.usage = event.usage
        elif type(event) is ToolCallDelta:
            self._tool(event, now)
        elif type(event) is SourcesFound:
            for source in event.sources:
                if source.url not in self._source_urls:
                    self._source_urls.add(source.url)
                    self.sources.append(source)
        elif type(event) is Finish:
            self.finish_reason = event.reason
        elif type(event) is Terminator:
            self.terminated = True
        elif type(event) is ErrorEvent:
            if self.error is None:  # the first error is the cause; later ones are echoes
                self.error = StreamErrorInfo(event.message, event.code, event.http_status, event.retry_after)
        elif type(event) is RefusalDelta:
            if event.text:
                self.refusal = (self.refusal or "") + event.text
                self._token(now)
        elif type(event) is Started:
            self.model = event.model or self.model
            self.response_id = event.response_id or self.response_id
        elif type(event) is Problem:
            self.warnings.append(event.message)

    def note(self, message: str) -> None:
        """Keep a warning even after the end (a view that failed to draw, a late surprise)."""
        self.warnings.append(message)
        self.version += 1

    def extend(self, events: Iterable[Event], now: Optional[float] = None) -> None:
        for event in events:
            self.apply(event, now)

    def close(self, *, cancelled: bool = False, reason: Optional[str] = None, now: Optional[float] = None) -> None:
        """End the stream and settle its status: an error always wins, then a cancel, then the terminator."""
        if self._closed:
            return
        self._closed = True
        self.version += 1
        if now is not None:
            self.ended_at = now
        if self.error is not None:
            self.status = "error"
        elif cancelled:
            self.status = "cancelled"
        elif self.terminated:
            self.status = "complete"
        else:
            self.status = "incomplete"
            self.incomplete_reason = reason

    # ------------------------------------------------------------------ helpers

    def _token(self, now: Optional[float]) -> None:
        if self.status == "waiting":
            self.status = "streaming"
        if now is not None:
            if self.first_token_at is None:
                self.first_token_at = now
            self.last_token_at = now

    def _tool(self, delta: ToolCallDelta, now: Optional[float]) -> None:
        call = self._tool_keys.get(delta.key)
        if call is None:
            call = ToolCall(delta.id, delta.name, "")
            self._tool_keys[delta.key] = call
            self.tool_calls.append(call)
        else:
            if delta.id and not call.id:
                call.id = delta.id
            if delta.name and not call.name:
                call.name = delta.name
        call.arguments += delta.arguments
        self._token(now)
