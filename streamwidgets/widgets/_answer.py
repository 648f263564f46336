"""The answer pane: the growing markdown in a box of its own that follows the growing end.

The box scrolls by itself (see `_theme.py`): while the answer streams it is a `column-reverse`
container, so a reader at the bottom stays at the bottom. When the stream ends the box turns
into a plain column (`sw-ended`), which shows the answer from its start: on a projector a finished
long answer otherwise stayed scrolled to its end, its first lines out of sight under the header.

A Continue goes on in the same pane: the next part's state carries the answer so far (see
`StreamState.next_part`), which the pane already shows, and only what follows is new.
"""

from __future__ import annotations

from typing import Optional

import ipywidgets as w

from ..core import StreamState
from ._markdown_pane import MarkdownPane
from ._sync import Parts, set_traits
from ._traffic import NOTHING, Cost

__all__ = ["AnswerPane", "ENDED", "CSS"]

#: The pane's rules in the view's stylesheet (`_sheet.stylesheet`), with why in comments.
CSS = """
/* A long answer lives in a box of its own height that keeps the growing end in sight: in a
   `column-reverse` scroll container the scroll position counts from the bottom, so at the bottom
   it stays there as the answer grows, and once the reader scrolls up the browser's scroll
   anchoring keeps what they read in place. No script: standard widgets run none. */
.sw-view .sw-answer-box {
  display: flex; flex-direction: column-reverse;
  max-height: min(36em, 75vh); overflow-y: auto; overflow-x: hidden; overscroll-behavior: contain;
}
.sw-view .sw-answer-box > * { flex: 0 0 auto; }
/* Once the stream ended the box is a plain column, which shows the answer from its start: a
   finished long answer on a projector otherwise stayed at its end, its first lines out of sight. */
.sw-view .sw-answer-box.sw-ended { flex-direction: column; }
.sw-answer { line-height: 1.55; overflow-wrap: anywhere; }
"""

#: The box's class once the stream ended: it then shows the answer from its start.
ENDED = "sw-ended"


class AnswerPane:
    """`markdown` is the answer's `MarkdownPane`, `widget` the scrolling box around it.
    `citation_markers`: the provider writes `[n]` markers that link to the cited pages."""

    def __init__(self, parts: Parts, *, citation_markers: bool = False) -> None:
        self.markdown = MarkdownPane(css_class="sw-answer")
        self.widget = parts.box(w.VBox, [self.markdown.widget], "sw-answer-box")
        self._markers = citation_markers
        self._state: Optional[StreamState] = None
        self._length = -1
        self._finished = False
        self._cited = -1

    def draw(self, state: StreamState, now: float, final: bool) -> Cost:
        if state is not self._state:  # a new part starts from the answer the pane shows already
            # `_length` stays what the pane shows: the part may have grown before its first frame.
            self._state, self._finished, self._cited = state, False, -1
        sent = NOTHING
        if self._markers and len(state.citations) != self._cited:
            # Before the answer is drawn, so that its `[n]` markers link from the first frame.
            sent += self.markdown.set_citations([c.url for c in state.citations])
            self._cited = len(state.citations)
        length = state.text_length
        if length != self._length or (final and not self._finished):
            if final:
                sent += self.markdown.finish(state.text, cut_off=state.can_continue)
                self._finished = True
            else:
                sent += self.markdown.update(state.text)
            self._length = length
        return sent + set_traits(self.widget, _dom_classes=self._classes(final))

    def saved_html(self, state: StreamState) -> str:
        """The answer in a saved notebook: the pane's own render."""
        return self.markdown.html

    def _classes(self, ended: bool) -> tuple[str, ...]:
        classes = tuple(c for c in self.widget._dom_classes if c != ENDED)
        return (*classes, ENDED) if ended else classes
