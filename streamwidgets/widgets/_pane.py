"""The one protocol every part of a view speaks: `draw(state, now, final) -> Cost`.

A pane is made with everything it needs to know besides the state — the view's labels, the
redaction, the token limit, the token trace — and draws the state it is given: the latest part
of the answer, at `now` (the clock the header counts by), `final` once the stream ended (or when
someone asks for everything). It sends only what changed and returns what that cost, counted as
it sent it. *When* a pane is drawn is the frame scheduler's business (`_scheduler.py`), at the
rate its row of the pane table says (`_panes.PANES`): the answer's panes in every frame with a
change, the buttons in every frame, the header, usage and problem box at their slow rate.

A pane that most answers never need is made the first frame its row's `made` holds, and makes
its widget the first time it has something to show (its `widget` is None until then); the view
puts it in its place.
"""

from __future__ import annotations

from typing import Protocol

from ..core import StreamState
from ._traffic import Cost

__all__ = ["Pane"]


class Pane(Protocol):
    def draw(self, state: StreamState, now: float, final: bool) -> Cost: ...
