"""What drawing a view costs on the wire, counted by the code that sends it.

Every model is a `comm_open` of about a kilobyte and every trait change one comm message with
about 0.65 KB of Jupyter envelope around it. The frame scheduler budgets a kernel's messages per
second, and paces each view by what its frames spend beyond the answer itself: so each pane says
what its own changes cost as it makes them (`_sync.set_traits`, `opened`, `closed`), and a
frame's cost is the sum — no walk of the widget tree to find out afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cost", "NOTHING", "ENVELOPE_BYTES", "OPEN_BYTES", "CHILD_BYTES"]

#: What a comm message costs on the wire besides its state: header, parent header, metadata,
#: signature and delimiters (measured on ipykernel 7: 600–700 bytes).
ENVELOPE_BYTES = 650
#: The state every new widget carries besides its value (model and view names and versions, the
#: references to its shared layout and style, its classes): about 450 bytes for an `HTML`.
OPEN_BYTES = 450
#: One "IPY_MODEL_<32 hex>" reference in a children list.
CHILD_BYTES = 48


@dataclass(frozen=True)
class Cost:
    """What drawing something sent: comm messages (the scheduler's budget), about how many bytes,
    and how many of those bytes were answer text sent for good (`fresh`: the markdown panes'
    newly committed HTML). The rest — envelopes, a live tail sent again, a new widget's state,
    the header's clock — is the overhead the scheduler paces a view by."""

    messages: int = 0
    bytes: int = 0
    fresh: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.messages + other.messages, self.bytes + other.bytes, self.fresh + other.fresh)

    @property
    def overhead(self) -> int:
        """The bytes that carried no new answer text."""
        return max(0, self.bytes - self.fresh)


NOTHING = Cost()
