"""The limits that keep a runaway or hostile stream from using up memory or time.

Everything a stream makes grow is bounded by one of them: the text, reasoning, refusal and
tool-call arguments by the answer limit, one event by the event limit, the tool calls, the
citations and the warnings by their counts — and each field of a tool call or a citation by
`FIELD_CHARS`. Each has a default no lesson reaches by accident, and each can be changed per
request (`make_request(..., max_answer_chars=..., max_event_chars=..., max_tool_calls=...,
max_citations=..., max_warnings=..., deadline=...)`, which every sink takes too, flat or as
`limits=Limits(...)`: the fields are spelled as the keywords). Reaching one
never loses what arrived: the stream ends (or the rest is skipped) with a message that names the
limit and the keyword that raises it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Optional

from . import _formatting as formatting

__all__ = ["Limits", "DEFAULT_LIMITS", "FIELD_CHARS", "LIMIT_NAMES", "check_seconds"]

#: The most characters of a cited URL or title, or of a tool call's id or name: a citation or a
#: call with a longer one is refused (no real page or function has one), so that the counts
#: below bound their memory too.
FIELD_CHARS = 8192

_EVENT_CHARS = 16 * 1024 * 1024
_ANSWER_CHARS = 4_000_000
_TOOL_CALLS = 1_000
_CITATIONS = 1_000
_WARNINGS = 100
#: The limits that count (whole numbers, 1 or more); the deadline is seconds.
_COUNTS = ("max_event_chars", "max_answer_chars", "max_tool_calls", "max_citations", "max_warnings")


def check_seconds(name: str, value: Any, words: str = "a number of seconds above 0") -> None:
    """A `ValueError` naming `name` unless `value` is a number of seconds above 0: `True` is not one
    second, `"5"` is not a number, NaN is no time, and `10**400` is more than a clock can count."""
    try:
        fits = not isinstance(value, bool) and isinstance(value, (int, float)) and float(value) > 0
    except OverflowError:
        fits = False
    if not fits:
        try:
            shown = repr(value)
        except ValueError:  # an int past Python's digit limit
            shown = "a number too long to write"
        raise ValueError(f"{name} must be {words}, not {formatting.shorten(shown, 80)}")


@dataclass(frozen=True)
class Limits:
    """How much of a stream is kept, and for how long it is read.

    Each field is spelled as the keyword that sets it on a request or a sink
    (`show(..., max_answer_chars=...)` and `show(..., limits=Limits(max_answer_chars=...))` are
    one limit), and as the messages name it when it is reached."""

    #: Characters of one SSE event (or one line, a comment included). Real events are far below
    #: 100 kB (an image in a base64 event is a few MB); past this one is discarded as it arrives,
    #: in constant memory, with one warning.
    max_event_chars: int = _EVENT_CHARS
    #: Characters of the answer kept and shown (text, reasoning, refusal and tool arguments
    #: together). The longest real answers (128k output tokens) are about 500,000 characters.
    #: Past this the stream ends as incomplete and what came before the limit is kept.
    max_answer_chars: int = _ANSWER_CHARS
    #: Tool calls of one part kept. Models ask for a few at a time (parallel calls: tens); past
    #: this, later calls are refused with one warning and the stream goes on.
    max_tool_calls: int = _TOOL_CALLS
    #: Distinct cited pages kept. Real answers cite tens; past this, later ones are refused with
    #: one warning and the stream goes on.
    max_citations: int = _CITATIONS
    #: Warnings kept on a state: the first ones, then one line that counts the rest.
    max_warnings: int = _WARNINGS
    #: Seconds the whole answer may take, from the request to its last byte (None: no deadline;
    #: the stall timeout still ends a stream that sends nothing). Ends a trickle of one byte a
    #: second, or endless keep-alives, as incomplete, with the text so far kept.
    deadline: Optional[float] = None

    def __post_init__(self) -> None:
        for name in _COUNTS:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"the {name} limit must be a positive whole number, not {value!r}")
        if self.deadline is not None:
            check_seconds("deadline", self.deadline, "a number of seconds above 0 (or None)")

    def answer_reached(self) -> str:
        return (
            f"the answer reached {self.max_answer_chars:,} characters (text, reasoning and tool-call arguments "
            "together), the most streamwidgets keeps, so it stopped reading (pass max_answer_chars= to keep "
            "more); what came before the limit is kept."
        )

    def tool_calls_reached(self) -> str:
        return (
            f"more than {self.max_tool_calls:,} tool calls came, the most streamwidgets keeps (pass "
            f"max_tool_calls= to keep more), or one with an id or name longer than {FIELD_CHARS:,} characters: "
            "those were not kept; the stream went on"
        )

    def citations_reached(self) -> str:
        return (
            f"more than {self.max_citations:,} cited pages came, the most streamwidgets keeps (pass "
            f"max_citations= to keep more), or one with a URL or title longer than {FIELD_CHARS:,} characters: "
            "those were not kept; the stream went on"
        )

    def deadline_passed(self) -> str:
        return (
            f"the answer was not finished within the deadline of {self.deadline:g} s, so streamwidgets stopped "
            "reading (pass a larger deadline=, or None for no deadline)."
        )

    def event_too_long(self) -> str:
        return (
            f"an event (or line) of more than {self.max_event_chars:,} characters was discarded unread "
            "(pass max_event_chars= to accept longer ones)"
        )


#: The limits' names: the fields of `Limits`, and the keywords that set them.
LIMIT_NAMES = tuple(f.name for f in fields(Limits))

DEFAULT_LIMITS = Limits()
