"""`StreamState`: folds normalized events into what a person wants to know about an answer.

Pure and deterministic: no clock of its own (callers pass `now`), no I/O, no widgets. The same
events give the same state, however the bytes that carried them were chunked.

An answer can come in parts: when one ends short (cut off, cancelled, stopped by the token limit),
Continue asks for the rest, and `state.next_part()` is the state of that next part. It carries the
answer so far (its text and reasoning read as the whole answer, its citations are merged and
de-duplicated here, in one place) while everything that describes one stream — status, usage,
tool calls, timings, limits — is the part's own; `state.parts` lists them all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Optional, Union, get_args, overload

from ._errors import spent
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
    ToolCallKey,
    Usage,
    UsageReport,
)
from ._limits import DEFAULT_LIMITS, FIELD_CHARS

if TYPE_CHECKING:
    from ._tools import ToolResult

__all__ = [
    "StreamState",
    "Parts",
    "ToolCall",
    "ToolCalls",
    "Citations",
    "StreamErrorInfo",
    "RetryNote",
    "Warnings",
    "normalize_finish_reason",
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
#: Error codes the client gives what the network (or this machine) did, when no provider spoke:
#: said as such, never as "the provider reported".
_NETWORK_CODES = frozenset(
    ("connect_error", "connect_timeout", "cors_refused", "local_model_unavailable", "local_model_missing")
)
#: Errors no second request gets past (the local model cannot run here): no Retry is offered.
_FINAL_CODES = frozenset(("local_model_missing",))
#: The ends after which the model can be asked for the rest (or the request sent again).
_CONTINUABLE: frozenset[Status] = frozenset(("incomplete", "cancelled", "error"))
#: What to do about a spent quota, budget or credit (said instead of offering a Retry).
_SPENT_FIX = "the quota, budget or credit is used up; add credit or raise the limit, then run the cell again."
#: Below this span from first to last token a rate is noise (a burst of reads), not a speed.
_MIN_RATE_SPAN = 0.05
#: Pieces of a tool call's arguments kept apart before the newest are joined (`ToolCall.seal`).
PIECES = 256
#: A text delta shorter than this grows the last piece instead of adding one: a million
#: one-character deltas read one per network read would otherwise keep a million strings
#: (~60 bytes each); copying a piece this short costs less than the string it saves.
SMALL_PIECE = 256

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
    # Gemini's reasons
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
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


class ToolCall:
    """A client-executed tool call; `arguments` is the exact concatenated string.

    The arguments arrive in fragments (often one byte each), so they are kept as pieces (appended
    by `StreamState.apply`) and joined when read, as the answer text is: `str +=` per fragment
    copied the whole string each time, and a million one-byte fragments took minutes, not seconds.
    The newest pieces are joined once there are `PIECES` of them (`seal`): a piece per fragment
    would cost ~60 bytes per one-byte fragment, and joining only the new ones keeps it linear.
    """

    __slots__ = ("_length", "_pieces", "_sealed", "id", "name", "result")

    def __init__(self, id: Optional[str], name: Optional[str], arguments: str = "") -> None:
        self.id = id
        self.name = name
        #: What became of the call when the stream runs its tools (`tools=`); None otherwise.
        self.result: Optional[ToolResult] = None
        self._pieces = [arguments] if arguments else []
        self._length = len(arguments)
        self._sealed = len(self._pieces)  # the pieces before this index are joined batches

    @property
    def arguments(self) -> str:
        pieces = self._pieces
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
            self._sealed = 1
        return pieces[0] if pieces else ""

    @arguments.setter
    def arguments(self, value: str) -> None:
        self._pieces = [value] if value else []
        self._length = len(value)
        self._sealed = len(self._pieces)

    @property
    def arguments_length(self) -> int:
        """`len(arguments)` without joining the pieces."""
        return self._length

    def seal(self) -> None:
        """Join the pieces that came since the last seal into one."""
        pieces = self._pieces
        pieces[self._sealed :] = ["".join(pieces[self._sealed :])]
        self._sealed = len(pieces)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolCall):
            return NotImplemented
        return (self.id, self.name, self.arguments) == (other.id, other.name, other.arguments)

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, so not hashable

    def __repr__(self) -> str:
        return f"ToolCall(id={self.id!r}, name={self.name!r}, arguments={self.arguments!r})"


class ToolCalls(list[ToolCall]):
    """The tool calls of one part, in the order they began: the first `limit` kept
    (`max_tool_calls=`), later ones refused and counted in `refused` — as is a call whose id or
    name is longer than `FIELD_CHARS` — so that a flood of a million empty calls costs nothing.
    It finds a fragment's call (`by_key`) and counts the characters of all the arguments as they
    arrive (`arguments_length`: what `apply` and `clip` add and cut), so the answer limit costs
    the same per fragment however many calls there are. A list in every other way."""

    def __init__(self, calls: Iterable[ToolCall] = (), *, limit: int = DEFAULT_LIMITS.max_tool_calls) -> None:
        super().__init__(calls)
        self.limit = limit
        self.refused = 0
        self.by_key: dict[ToolCallKey, ToolCall] = {}
        self.arguments_length = sum(call.arguments_length for call in self)

    def open(self, delta: ToolCallDelta) -> Optional[ToolCall]:
        """The call a fragment belongs to (a new one for a new key, None when refused); it learns
        its id and name from the first fragment that carries them."""
        call = self.by_key.get(delta.key)
        if call is None:
            if len(self) >= self.limit or _too_long(delta.id) or _too_long(delta.name):
                self.refused += 1
                return None
            call = ToolCall(delta.id, delta.name, "")
            self.by_key[delta.key] = call
            self.append(call)
            return call
        if _too_long(delta.id) or _too_long(delta.name):
            self.refused += 1
            return call
        if delta.id and not call.id:
            call.id = delta.id
        if delta.name and not call.name:
            call.name = delta.name
        return call


class Citations(list[Citation]):
    """The pages an answer cites, in order of appearance, each URL once (the first title wins):
    the first `limit` kept (`max_citations=`), later ones refused and counted in `refused` — as
    is one whose URL or title is longer than `FIELD_CHARS` (no real page has one), so that a
    flood of a million citations costs nothing. A list in every other way."""

    def __init__(self, citations: Iterable[Citation] = (), *, limit: int = DEFAULT_LIMITS.max_citations) -> None:
        super().__init__()
        self.limit = limit
        self.refused = 0
        self.urls: set[str] = set()
        for citation in citations:
            self.add(citation)

    def add(self, citation: Citation) -> None:
        url = citation.url
        if url in self.urls:
            return
        if len(self) >= self.limit or len(url) > FIELD_CHARS or _too_long(citation.title):
            self.refused += 1
            return
        self.urls.add(url)
        self.append(citation)


def _too_long(value: Optional[str]) -> bool:
    return value is not None and len(value) > FIELD_CHARS


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


class _Carry:
    """How a continued part starts: the first `cut` characters of the text of the part before it
    (`previous`, across its parts), then `extra`; and all of its reasoning. `length` and
    `reasoning_length` are what it carries, in characters. `text` and `reasoning` hold what it
    carries once built (`StreamState._across`) while it is the newest part; `followed` says a
    later part was made from it."""

    __slots__ = ("cut", "extra", "followed", "length", "number", "previous", "reasoning", "reasoning_length", "text")

    def __init__(self, previous: StreamState, number: int, cut: int, extra: str, reasoning_length: int) -> None:
        self.previous = previous
        self.number = number
        self.cut = cut
        self.extra = extra
        self.length = cut + len(extra)
        self.reasoning_length = reasoning_length
        self.text: Optional[str] = None
        self.reasoning: Optional[str] = None
        self.followed = False


class Parts(Sequence["StreamState"]):
    """The parts of an answer up to one of them (`state.parts`, `state.earlier`), first to last:
    a view that follows each part's link to the one before it, so that it costs nothing to make
    and its length nothing to read. Reads like a tuple (index, slice, iterate, compare)."""

    __slots__ = ("_count", "_last")

    def __init__(self, last: Optional[StreamState], count: int) -> None:
        self._last = last
        self._count = count if last is not None else 0

    def __len__(self) -> int:
        return self._count

    def _all(self) -> tuple[StreamState, ...]:
        out: list[StreamState] = []
        part = self._last
        while part is not None and len(out) < self._count:
            out.append(part)
            part = part._carry.previous if part._carry is not None else None
        out.reverse()
        return tuple(out)

    @overload
    def __getitem__(self, index: int) -> StreamState: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[StreamState, ...]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[StreamState, tuple[StreamState, ...]]:
        if isinstance(index, int) and index in (-1, self._count - 1) and self._last is not None:
            return self._last
        return self._all()[index]

    def __iter__(self) -> Iterator[StreamState]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Parts, tuple, list)):
            return self._all() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Parts({list(self._all())!r})"


@dataclass(frozen=True)
class StreamErrorInfo:
    """How the provider said it failed: its message, its code, the HTTP status if there was one."""

    message: str
    code: Union[str, int, None] = None
    http_status: Optional[int] = None
    retry_after: Optional[float] = None

    @property
    def spent(self) -> bool:
        """The quota, budget or credit is used up: waiting will not bring the answer back."""
        return spent(self.code, self.message)

    def __str__(self) -> str:
        parts = [self.message]
        detail = []
        if self.http_status is not None:
            detail.append(f"HTTP {self.http_status}")
        if self.code is not None and self.code != self.http_status:
            detail.append(f"code {self.code}")
        if self.retry_after is not None and not self.spent:  # no wait brings a spent quota back
            detail.append(f"retry after {self.retry_after:g} s")
        if detail:
            parts.append(f"({', '.join(detail)})")
        return " ".join(parts)


@dataclass(frozen=True)
class RetryNote:
    """Tries before the first token (`net/_retry.py`): how many were made, of how many allowed
    (`retries` after the first), and — while waiting for the next one — until when (on the
    client's clock) and why, in the words the view shows ("rate limited by the provider")."""

    tries: int
    reason: str
    until: Optional[float] = None
    retries: int = 0
    #: When the first try was sent (the state's clock restarts with each try, so that time to
    #: first token is the model's): how long all the tries took is told from here.
    since: Optional[float] = None

    def took(self, state: StreamState) -> Optional[float]:
        """Seconds from the first try to the end of `state` (None while unknown)."""
        end = state.ended_at if state.ended_at is not None else state.last_event_at
        return None if self.since is None or end is None else max(0.0, end - self.since)


@dataclass
class StreamState:
    """Everything known about one streamed answer so far.

    Feed it with `apply(event, now)` and end it with `close(...)`. Reading it never changes it.
    """

    model: Optional[str] = None
    provider: Optional[str] = None
    #: Where the answer came from (`Origin`), set by whoever feeds the state; None when unknown.
    origin: Optional[Origin] = None
    response_id: Optional[str] = None
    #: Each URL once, at most `max_citations=` of them (`Citations`).
    citations: Citations = field(default_factory=Citations)
    #: The client-executed calls, at most `max_tool_calls=` of them (`ToolCalls`).
    tool_calls: ToolCalls = field(default_factory=ToolCalls)
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
    #: Set only when a try was turned away and retried (`net/_retry.py`). Not set by `__init__`: an
    #: answer that never retried reads the class default and has no instance attribute for it.
    retry: Optional[RetryNote] = field(default=None, init=False, repr=False, compare=False)
    #: Which scripted lesson (or scenario, or "none") of the embedded demo answered; None for a
    #: model. A class default, as `retry`: only a scripted answer has it as its own attribute.
    script: Optional[str] = field(default=None, init=False, repr=False, compare=False)
    #: The tokens of this part's answer with their log-probabilities, when the request asked for
    #: them (`logprobs=`) and the provider sent them; their texts joined are `part_text` (or its
    #: start). A class default, as `retry`: only an answer with logprobs has a list of its own.
    tokens: Sequence[Token] = field(default=(), init=False, repr=False, compare=False)
    #: How a continued part starts from the part before it (`next_part()`, `_Carry`). A class
    #: default, as `retry`: only a continued part has one of its own.
    _carry: Optional[_Carry] = field(default=None, init=False, repr=False, compare=False)
    #: `citations` is the part before's own list, until this part finds one (then it copies it).
    _shared_citations: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Every growing text is a list of pieces joined when read: linear however it is cut.
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._text_len = 0
        self._reasoning_len = 0
        if type(self.citations) is not Citations:  # a plain list passed in
            self.citations = Citations(self.citations)
        if type(self.tool_calls) is not ToolCalls:
            self.tool_calls = ToolCalls(self.tool_calls)
        #: Output characters when the latest usage arrived (is the reported count still current?).
        self._chars_at_usage = 0
        self._over = False  # the terminator came or the state was closed: later events are ignored
        # Keep the instance under 30 attributes: CPython (3.11) stops sharing the keys of a larger
        # instance dict, and every attribute read in `apply` gets ~10% slower. Closed is `done`.

    # ------------------------------------------------------------------ reading

    @property
    def text(self) -> str:
        """The answer so far, byte for byte, across its parts."""
        carry = self._carry
        if carry is None or not carry.length:
            return self.part_text
        carried = carry.text if carry.text is not None else self._across(reasoning=False)
        return carried + self.part_text

    @property
    def part_text(self) -> str:
        """The text of this part alone."""
        if len(self._text) > 1:
            self._text[:] = ["".join(self._text)]
        return self._text[0] if self._text else ""

    @property
    def reasoning(self) -> str:
        """The reasoning / thinking text so far, across its parts; "" when none."""
        own = self._own_reasoning()
        carry = self._carry
        if carry is None or not carry.reasoning_length:
            return own
        carried = carry.reasoning if carry.reasoning is not None else self._across(reasoning=True)
        return carried + own

    def _own_reasoning(self) -> str:
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
        """`len(text)`, without joining anything."""
        carry = self._carry
        return carry.length + self._text_len if carry is not None else self._text_len

    @property
    def reasoning_length(self) -> int:
        carry = self._carry
        return carry.reasoning_length + self._reasoning_len if carry is not None else self._reasoning_len

    @property
    def part_number(self) -> int:
        """Which part of the answer this is: 1, or more after a Continue or a tool step."""
        return self._carry.number if self._carry is not None else 1

    @property
    def parts(self) -> Parts:
        """Every part of the answer, this one last (one part unless it was continued)."""
        return Parts(self, self.part_number)

    @property
    def earlier(self) -> Parts:
        """The parts of the answer before this one (`next_part()`); empty for a first part."""
        carry = self._carry
        return Parts(carry.previous if carry is not None else None, self.part_number - 1)

    @property
    def output_length(self) -> int:
        """Characters of this part's output: text, reasoning, refusal and tool-call arguments."""
        return self._output_chars()

    @property
    def done(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def can_continue(self) -> bool:
        """It ended short of a full answer: cut off, cancelled, failed, or stopped by the token
        limit. Continue asks for the rest (or, with no answer yet, sends the request again) — but not
        after a spent quota, budget or credit, which no second request gets past."""
        if not self.done or (self.error is not None and (self.error.spent or self.error.code in _FINAL_CODES)):
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
            if self.error.spent:
                return f"The provider reported an error: {self.error}. It will not pass by waiting: {_SPENT_FIX}{kept}"
            return f"The provider reported an error: {self.error}.{kept}"
        why = self.incomplete_reason or "The connection ended before the answer was finished."
        return f"Incomplete: {why}{kept}"

    def _kept_phrase(self) -> str:
        if not (self._text_len or self._reasoning_len or self.tool_calls):
            return ""
        n, est = self.completion_tokens
        return f" The partial answer ({'about ' if est else ''}{n} tokens) is kept."

    def __repr__(self) -> str:
        preview = self.text[:40] + ("…" if self.text_length > 40 else "")
        return (
            f"<StreamState {self.status} model={self.model!r} origin={self.origin!r} text={preview!r} "
            f"reasoning={self._reasoning_len} chars citations={len(self.citations)} "
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
                pieces = self._text
                if pieces and len(pieces[-1]) < SMALL_PIECE:  # token-sized: grow the last piece
                    pieces[-1] += text
                else:
                    pieces.append(text)
                self._text_len += len(text)
                if now is not None or self.status == "waiting":
                    self._token(now)
        elif type(event) is ReasoningDelta:
            if event.text:
                pieces = self._reasoning
                if pieces and len(pieces[-1]) < SMALL_PIECE:
                    pieces[-1] += event.text
                else:
                    pieces.append(event.text)
                self._reasoning_len += len(event.text)
                self._token(now)
        elif type(event) is ToolCallDelta:
            # Most fragments only add arguments (often a byte) to a known call, so that path is
            # inline, `_token` too: a call streamed a byte at a time costs about what text does
            # (benchmarks/bench_accumulators.py).
            calls = self.tool_calls
            call = calls.by_key.get(event.key)
            if call is None or event.id or event.name:
                call = calls.open(event)
                if call is None:
                    return  # refused: past max_tool_calls (the feed says so)
            arguments = event.arguments
            if arguments:
                pieces = call._pieces
                pieces.append(arguments)
                call._length += len(arguments)
                calls.arguments_length += len(arguments)
                if len(pieces) - call._sealed > PIECES:
                    call.seal()
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
        elif type(event) is CitationsFound:
            if self._shared_citations:  # the earlier parts' list, shared until this part adds to it
                self.citations = Citations(self.citations, limit=self.citations.limit)
                self._shared_citations = False
            add = self.citations.add
            for citation in event.citations:
                add(citation)
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
            if event.script:
                self.script = event.script
        elif type(event) is Problem:
            self.warnings.append(event.message)
        elif type(event) is TokenLogprobs:
            self._logprobs(event.tokens)

    def retrying(self, note: RetryNote) -> None:
        """A try was turned away (or the next one begins): say so, before any event arrived."""
        self.retry = note
        self.version += 1

    def note(self, message: str) -> None:
        """Keep a warning even after the end (a view that failed to draw, a late surprise)."""
        self.warnings.append(message)
        self.version += 1

    def clip(self, chars: int) -> None:
        """Keep no more than `chars` characters of this part's output (a limit reached,
        `core.Limits`): what tends to come last is cut first — the tool calls' arguments (the
        last call first; a model writes its words before it calls), then the answer text, the
        refusal, and last the reasoning. A cut answer does not reach its terminator, even if one
        arrived."""
        self.terminated = False
        over = self._output_chars() - chars
        if over <= 0:
            return
        self.version += 1
        calls = self.tool_calls
        for call in reversed(calls):
            if over <= 0:
                break
            length = call.arguments_length
            keep = max(0, length - over)
            if keep < length:
                call.arguments = call.arguments[:keep]
                calls.arguments_length -= length - keep
                over -= length - keep
        if over > 0 and self._text_len:
            keep = max(0, self._text_len - over)
            over -= self._text_len - keep
            self._text[:] = [self.part_text[:keep]] if keep else []
            self._text_len = keep
            if self.tokens:
                self._clip_tokens(keep)
        if over > 0 and self._refusal:
            refusal = self.refusal or ""
            keep = max(0, len(refusal) - over)
            over -= len(refusal) - keep
            self.refusal = refusal[:keep] or None
        if over > 0 and self._reasoning_len:
            keep = max(0, self._reasoning_len - over)
            own = "".join(self._reasoning)
            self._reasoning[:] = [own[:keep]] if keep else []
            self._reasoning_len = keep

    def extend(self, events: Iterable[Event], now: Optional[float] = None) -> None:
        """Fold a batch of events (what one network read carried). The pieces the batch added to
        each growing text are joined into one at its end: one piece per delta would cost ~60
        bytes per one-character delta (a million of them: 60 MB), and joining only what is new
        keeps the work linear."""
        if type(events) is list and len(events) < 2:  # a token-sized read: nothing to join
            if events:
                self.apply(events[0], now)
            return
        text, reasoning, refusal = len(self._text), len(self._reasoning), len(self._refusal)
        for event in events:
            self.apply(event, now)
        if len(self._text) - text > 1:
            self._text[text:] = ["".join(self._text[text:])]
        if len(self._reasoning) - reasoning > 1:
            self._reasoning[reasoning:] = ["".join(self._reasoning[reasoning:])]
        if len(self._refusal) - refusal > 1:
            self._refusal[refusal:] = ["".join(self._refusal[refusal:])]

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

    def next_part(self, text: Optional[str] = None, *, keep: Optional[int] = None) -> StreamState:
        """The state of the next part of this answer (Continue): it starts with the whole answer
        so far — its text (or `text`, the answer as the next request carries it: a Messages
        prefill is trimmed; or its first `keep` characters, as a recording says it), reasoning
        and citations — and everything else of its own.

        Each part keeps only its own text: the next one holds a link to this one and how much
        of its text it carries (`_Carry`), and shares its citations until it finds one of its
        own, so an answer of n parts costs memory linear in its length, not n copies of the
        answer so far (or of a thousand citations)."""
        following = StreamState(model=self.model, provider=self.provider, origin=self.origin)
        total = self.text_length
        extra = ""
        if text is None:
            cut = total if keep is None else max(0, min(keep, total))
        else:
            whole = self.text
            if whole.startswith(text):  # the answer so far, or its start (a trimmed prefill)
                cut = len(text)
            elif text.startswith(whole):  # more after it (a tool step's new paragraph)
                cut, extra = total, text[total:]
            else:  # another text altogether: kept whole
                cut, extra = 0, text
        carry = _Carry(self, self.part_number + 1, cut, extra, self.reasoning_length)
        mine = self._carry
        if mine is not None:
            mine.followed = True
        if text is not None:
            carry.text = text
            if mine is not None:
                mine.text = None  # the next part holds the answer so far now
        following._carry = carry
        cited = self.citations
        if cited.refused:  # a list that refused some is copied: the next part has refused none yet
            following.citations = Citations(cited, limit=cited.limit)
        else:  # shared until the next part finds a citation of its own (see `apply`)
            following.citations = cited
            following._shared_citations = True
        return following

    def _across(self, *, reasoning: bool) -> str:
        """What this part carries of the parts before it (their text or their reasoning),
        built from the nearest part that holds it whole (or the first part), part by part.

        Only the newest part keeps what it built (`_Carry.text`): once a later part was made,
        it takes that over, so however many parts there are, about one copy of the answer so far
        is held. An earlier part's `text` is built anew each time it is read."""
        carry = self._carry
        assert carry is not None
        chain: list[_Carry] = []
        base = ""
        link: Optional[_Carry] = carry
        while link is not None:
            held = link.reasoning if reasoning else link.text
            if held is not None:
                base = held
                if link is not carry and not carry.followed:  # handed on to the newest part, which keeps it
                    if reasoning:
                        link.reasoning = None
                    else:
                        link.text = None
                break
            chain.append(link)
            link = link.previous._carry
        pieces = [base] if base else []
        length = len(base)
        for link in reversed(chain):
            own = link.previous._own_reasoning() if reasoning else link.previous.part_text
            if own:
                pieces.append(own)
                length += len(own)
            cut, extra = (link.reasoning_length, "") if reasoning else (link.cut, link.extra)
            while pieces and length - len(pieces[-1]) >= cut:  # back to what it carries
                length -= len(pieces.pop())
            if length > cut:
                last = pieces.pop()
                pieces.append(last[: len(last) - (length - cut)])
                length = cut
            if extra:
                pieces.append(extra)
                length += len(extra)
        built = pieces[0] if len(pieces) == 1 else "".join(pieces)
        if not carry.followed:
            if reasoning:
                carry.reasoning = built
            else:
                carry.text = built
        return built

    # ------------------------------------------------------------------ helpers

    def output_lengths(self) -> tuple[int, int, int, int]:
        """Characters of this part's text, reasoning, refusal and tool-call arguments (what
        `clip` cuts, kind by kind)."""
        refusal = len(self.refusal or "") if self._refusal else 0
        return self._text_len, self._reasoning_len, refusal, self.tool_calls.arguments_length

    def _output_chars(self) -> int:
        tools = self.tool_calls.arguments_length  # counted as they come: O(1)
        refusal = len(self.refusal or "") if self._refusal else 0  # rare; reading joins its pieces
        return self._text_len + self._reasoning_len + tools + refusal

    def _logprobs(self, tokens: Sequence[Token]) -> None:
        """Keep the tokens. A token is at least a character but for the pieces of a character
        split between tokens (at most four bytes), so past four tokens per character of text a
        peer's empty tokens are no longer kept."""
        kept = self.tokens
        if not isinstance(kept, list):
            kept = self.tokens = []
        room = 4 * self._text_len + 4 - len(kept)
        if room >= len(tokens):
            kept.extend(tokens)
        else:  # a token with text is bounded by the text itself; only empty ones are dropped
            kept.extend(token for token in tokens if token.text)

    def _clip_tokens(self, chars: int) -> None:
        """Keep the tokens whose text lies within the first `chars` characters of the part."""
        kept: list[Token] = []
        length = 0
        for token in self.tokens:
            length += len(token.text)
            if length > chars:
                break
            kept.append(token)
        self.tokens = kept

    def _token(self, now: Optional[float]) -> None:
        if self.status == "waiting":
            self.status = "streaming"
        if now is not None:
            if self.first_token_at is None:
                self.first_token_at = now
            self.last_token_at = now
