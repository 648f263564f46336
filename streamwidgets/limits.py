"""The limits that keep a runaway or hostile stream from using up memory or time.

Each has a default no lesson reaches by accident, and each can be changed per request
(`make_request(..., max_answer_chars=..., max_event_chars=..., max_warnings=..., deadline=...)`,
which `show()`, `run()` and `arun()` take too). Reaching one never loses what arrived: the stream
ends (or the event is skipped) with a message that names the limit and the keyword that raises it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["Limits", "DEFAULT_LIMITS"]


@dataclass(frozen=True)
class Limits:
    """How much of a stream is kept, and for how long it is read."""

    #: Characters of one SSE event (or one line, a comment included). Real events are far below
    #: 100 kB (an image in a base64 event is a few MB); past this one is discarded as it arrives,
    #: in constant memory, with one warning.
    event_chars: int = 16 * 1024 * 1024
    #: Characters of the answer kept and shown (text, reasoning, refusal and tool arguments
    #: together). The longest real answers (128k output tokens) are about 500,000 characters.
    #: Past this the stream ends as incomplete and the text up to the limit is kept.
    answer_chars: int = 4_000_000
    #: Warnings kept on a state: the first ones, then one line that counts the rest.
    warnings: int = 100
    #: Seconds the whole answer may take, from the request to its last byte (None: no deadline;
    #: the stall timeout still ends a stream that sends nothing). Ends a trickle of one byte a
    #: second, or endless keep-alives, as incomplete, with the text so far kept.
    deadline: Optional[float] = None

    def __post_init__(self) -> None:
        for name in ("event_chars", "answer_chars", "warnings"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"the {name} limit must be a positive whole number, not {value!r}")
        if self.deadline is not None and not self.deadline > 0:
            raise ValueError(f"deadline must be a number of seconds above 0 (or None), not {self.deadline!r}")

    def answer_reached(self) -> str:
        return (
            f"the answer reached {self.answer_chars:,} characters, the most streamwidgets keeps, so it stopped "
            "reading (pass max_answer_chars= to keep more); the text up to the limit is kept."
        )

    def deadline_passed(self) -> str:
        return (
            f"the answer was not finished within the deadline of {self.deadline:g} s, so streamwidgets stopped "
            "reading (pass a larger deadline=, or None for no deadline)."
        )

    def event_too_long(self) -> str:
        return (
            f"an event (or line) of more than {self.event_chars:,} characters was discarded unread "
            "(pass max_event_chars= to accept longer ones)"
        )


DEFAULT_LIMITS = Limits()
