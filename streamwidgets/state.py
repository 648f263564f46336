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
    "RetryNote",
    "Warnings",
    "normalize_finish_reason",
    "joined_text",
    "Status",
    "Phase",
    "Origin",
    "STATUSES",
    "FINAL_STATUSES",
]

#: Live statuses first, then the four ways a stream can end.
Status = Literal["waiting", "streaming", "complete", "incomplete", "error", "cancelled"]
#: What a person would say is happening: a live phase, or how it ended.
Phase = Literal["waiting", "thinking", "answering", "complete", "incomplete", "error", "cancelled"]
#: Where an answer came from: a provider over the network, the embedded offline demo (on its own
#: or standing in for a provider without a key), a recording played back, or an SDK's stream.
Origin = Literal["live", "offline demo", "replay", "sdk"]
STATUSES: tuple[Status, ...] = get_args(Status)
FINAL_STATUSES: frozenset[Status] = frozenset(("complete", "incomplete", "error", "cancelled"))
#: Error codes the client gives what the network did (no provider spoke): said as such.
_NETWORK_CODES = frozenset(("connect_error", "connect_timeout"))
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


class ToolCall:
    """A client-executed tool call; `arguments` is the exact concatenated string.

    The arguments arrive in fragments (often one byte each), so they are kept as pieces (appended
    by `StreamState.apply`) and joined when read, as the answer text is: `str +=` per fragment
    copied the whole string each time, and a million one-byte fragments took minutes, not seconds.
    """

    __slots__ = ("_length", "_pieces", "id", "name")

    def __init__(self, id: Optional[str], name: Optional[str], arguments: str = "") -> None:
        self.id = id
        self.name = name
        self._pieces = [arguments] if arguments else []
        self._length = len(arguments)

    @property
    def arguments(self) -> str:
        pieces = self._pieces
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
        return pieces[0] if pieces else ""

    @arguments.setter
    def arguments(self, value: str) -> None:
        self._pieces = [value] if value else []
        self._length = len(value)

    @property
    def arguments_length(self) -> int:
        """`len(arguments)` without joining the pieces."""
        return self._length

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolCall):
            return NotImplemented
        return (self.id, self.name, self.arguments) == (other.id, other.name, other.arguments)

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, so not hashable

    def __repr__(self) -> str:
        return f"ToolCall(id={self.id!r}, name={self.name!r}, arguments={self.arguments!r})"


class Warnings(list[str]):
    """The warnings of one state: the first `limit` kept, then one last line that counts the
    rest (a million malformed events must not keep a million warnings). A list in every other way."""

    def __init__(self, *items: str, limit: int = 100) -> None:
        super().__init__(items)
        self.limit = limit
        self.dropped = 0

    def append(self, message: str) -> None:
        if len(self) < self.limit:
            super().append(message)
            return
        self.dropped += 1
        summary = f"… and {self.dropped:,} more warnings, not kept (the first {self.limit:,} are; max_warnings=)"
        if self.dropped == 1:
            super().append(summary)
        else:
            self[-1] = summary


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


@dataclass(frozen=True)
class RetryNote:
    """Tries before the first token (`retry.py`): how many were made, of how many allowed
    (`retries` after the first), and — while waiting for the next one — until when (on the
    client's clock) and why, in the words the view shows ("rate limited by the provider")."""

    tries: int
    reason: str
    until: Optional[float] = None
    retries: int = 0


@dataclass
class StreamState:
    """Everything known about one streamed answer so far.

    Feed it with `apply(event, now)` and end it with `close(...)`. Reading it never changes it.
    """

    model: Optional[str] = None
    provider: Optional[str] = None
    #: Where the answer came from (`Origin`), set by whoever feeds the state; None when unknown.
    source: Optional[Origin] = None
    response_id: Optional[str] = None
    sources: list[Source] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Optional[Usage] = None
    finish_reason: Optional[str] = None
    status: Status = "waiting"
    error: Optional[StreamErrorInfo] = None
    #: Why an incomplete stream ended, in words (set by whoever closed it).
    incomplete_reason: Optional[str] = None
    #: Input that could not be understood; the stream went on without it.
    warnings: list[str] = field(default_factory=Warnings)
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
    #: Set only when a try was turned away and retried (`retry.py`). Not set by `__init__`: an
    #: answer that never retried reads the class default and has no instance attribute for it.
    retry: Optional[RetryNote] = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Every growing text is a list of pieces joined when read: linear however it is cut.
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._text_len = 0
        self._reasoning_len = 0
        self._source_urls: set[str] = set()
        self._tool_keys: dict[ToolCallKey, ToolCall] = {}
        #: Output characters when the latest usage arrived (is the reported count still current?).
        self._chars_at_usage = 0
        self._over = False  # the terminator came or the state was closed: later events are ignored
        # Keep the instance under 30 attributes: CPython (3.11) stops sharing the keys of a larger
        # instance dict, and every attribute read in `apply` gets ~10% slower. Closed is `done`.

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
    def refusal(self) -> Optional[str]:
        """The refusal text when the provider streamed one apart from the answer, else None."""
        pieces = self._refusal
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
        return pieces[0] if pieces else None

    @refusal.setter
    def refusal(self, value: Optional[str]) -> None:
        self._refusal = [value] if value else []

    @property
    def text_length(self) -> int:
        return self._text_len

    @property
    def reasoning_length(self) -> int:
        return self._reasoning_len

    @property
    def output_length(self) -> int:
        """Characters of output so far: text, reasoning, refusal and tool-call arguments."""
        return self._output_chars()

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
        if self._text_len or self.tool_calls or self._refusal:
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
        return math.ceil(self._output_chars() / 4)

    @property
    def completion_tokens(self) -> tuple[int, bool]:
        """(tokens, estimated): the best count known of the tokens written so far.

        The reported count when it is the provider's last word (the stream completed) or still
        covers all the output; an estimate when none came. A report that output arrived after,
        on a stream that is live or ended short, is stale — Messages opens with a placeholder
        `output_tokens: 1`, and a cut connection never sends the real count — so the larger of
        it and the estimate is the best count, and it is called an estimate. `usage` itself
        always stays as reported.
        """
        reported = self.usage.completion_tokens if self.usage is not None else None
        if reported is None:
            return self.estimated_completion_tokens, True
        if (self.terminated and self.error is None) or self._output_chars() <= self._chars_at_usage:
            return reported, False
        return max(reported, self.estimated_completion_tokens), True

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
            if self.error.code in _NETWORK_CODES and self.error.http_status is None:
                return f"{self.error.message}{kept}"  # what the network did, not what the provider said
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
            f"<StreamState {self.status} model={self.model!r} source={self.source!r} text={preview!r} "
            f"reasoning={self._reasoning_len} chars sources={len(self.sources)} "
            f"tool_calls={len(self.tool_calls)} usage={self.usage}>"
        )

    # ------------------------------------------------------------------ writing

    def begin(self, now: Optional[float] = None) -> None:
        """Mark the moment the request was sent (for time to first token)."""
        self.started_at = now

    def apply(self, event: Event, now: Optional[float] = None) -> None:
        """Fold one normalized event into the state. Events after the end are ignored, and so
        are events after the terminator: the answer is complete, and the same bytes must give
        the same state whether the reader stopped at the terminator or read on."""
        if self._over:
            return
        self.version += 1
        if now is not None:
            self.last_event_at = now
        # `type(...) is` rather than isinstance: the events are final classes, and TextDelta
        # (the hot path) is decided by the first comparison; the other per-token events follow.
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
        elif type(event) is ToolCallDelta:
            # Most fragments only add arguments (often a byte) to a known call, so that path is
            # inline, `_token` too: a call streamed a byte at a time costs about what text does
            # (benchmarks/bench_accumulators.py).
            call = self._tool_keys.get(event.key)
            if call is None or event.id or event.name:
                call = self._tool_call(event)
            arguments = event.arguments
            if arguments:
                call._pieces.append(arguments)
                call._length += len(arguments)
            if now is not None:  # `_token(now)`, inlined
                if self.first_token_at is None:
                    self.first_token_at = now
                self.last_token_at = now
            if self.status == "waiting":
                self.status = "streaming"
        elif type(event) is RefusalDelta:
            if event.text:
                self._refusal.append(event.text)
                self._token(now)
        elif type(event) is Heartbeat:
            self.heartbeats += 1
        elif type(event) is UsageReport:
            self.usage = event.usage
            self._chars_at_usage = self._output_chars()
        elif type(event) is SourcesFound:
            for source in event.sources:
                if source.url not in self._source_urls:
                    self._source_urls.add(source.url)
                    self.sources.append(source)
        elif type(event) is Finish:
            self.finish_reason = event.reason
        elif type(event) is Terminator:
            self.terminated = self._over = True
        elif type(event) is ErrorEvent:
            if self.error is None:  # the first error is the cause; later ones are echoes
                self.error = StreamErrorInfo(event.message, event.code, event.http_status, event.retry_after)
        elif type(event) is Started:
            self.model = event.model or self.model
            self.response_id = event.response_id or self.response_id
        elif type(event) is Problem:
            self.warnings.append(event.message)

    def retrying(self, note: RetryNote) -> None:
        """A try was turned away (or the next one begins): say so, before any event arrived."""
        self.retry = note
        self.version += 1

    def note(self, message: str) -> None:
        """Keep a warning even after the end (a view that failed to draw, a late surprise)."""
        self.warnings.append(message)
        self.version += 1

    def clip(self, chars: int) -> None:
        """Keep no more than `chars` characters of output: the answer text is cut to what fits
        beside the reasoning, refusal and tool arguments (a limit reached, `limits.Limits`).
        A cut answer does not reach its terminator, even if one arrived."""
        self.terminated = False
        over = self._output_chars() - chars
        if over > 0 and self._text_len:
            keep = max(0, self._text_len - over)
            self._text[:] = [self.text[:keep]] if keep else []
            self._text_len = keep
            self.version += 1

    def extend(self, events: Iterable[Event], now: Optional[float] = None) -> None:
        for event in events:
            self.apply(event, now)

    def close(self, *, cancelled: bool = False, reason: Optional[str] = None, now: Optional[float] = None) -> None:
        """End the stream and settle its status: an error always wins, then a cancel, then the terminator."""
        if self.done:
            return
        self._over = True
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

    def _output_chars(self) -> int:
        tools = sum(call.arguments_length for call in self.tool_calls)
        refusal = len(self.refusal or "") if self._refusal else 0  # rare; reading joins its pieces
        return self._text_len + self._reasoning_len + tools + refusal

    def _token(self, now: Optional[float]) -> None:
        if self.status == "waiting":
            self.status = "streaming"
        if now is not None:
            if self.first_token_at is None:
                self.first_token_at = now
            self.last_token_at = now

    def _tool_call(self, delta: ToolCallDelta) -> ToolCall:
        """The call a fragment belongs to (a new one for a new key); it learns its id and name
        from the first fragment that carries them."""
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
        return call
