"""The reasoning pane: the model's thinking, streamed live and kept apart from the answer.

It opens by itself while the model thinks (that is all there is to see), and closes itself once
— when the answer starts — so that the answer gets the attention; a person can reopen it, and it
is never forced shut again. Its widgets are made only when reasoning arrives (`widget` is None
until then): most answers have none, and its half-dozen models would cost every view a few
kilobytes for nothing.
"""

from __future__ import annotations

import math
from typing import Optional

import ipywidgets as w

from ..core._state import StreamState
from ._markdown_pane import MarkdownPane
from ._sync import Parts, opened, set_traits
from ._traffic import NOTHING, Cost

__all__ = ["ReasoningPane"]


class ReasoningPane:
    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self.markdown: Optional[MarkdownPane] = None
        self.widget: Optional[w.Accordion] = None
        self._state: Optional[StreamState] = None
        self._length = 0
        self._finished = False
        self._opened = False
        self._collapsed = False

    def draw(self, state: StreamState, now: float, final: bool) -> Cost:
        """Stream the reasoning in; the answer starting collapses the pane once, the end finishes
        the markdown (cut off while still thinking: dangling markers stay out of view).

        A stream that ends while still thinking keeps the pane open: the reasoning is then all
        there is to read.
        """
        if not state.reasoning_length:
            return NOTHING
        if state is not self._state:  # a new part: its end is still to be drawn
            self._state, self._finished = state, False
        answering = bool(state.text_length or state.tool_calls)
        sent = NOTHING
        if self.widget is None or self.markdown is None:
            self.markdown = MarkdownPane(css_class="sw-reasoning")
            self.widget = w.Accordion(
                children=[self.markdown.widget],
                titles=("Thinking…",),
                selected_index=None,
                layout=self._parts.layout,
                _dom_classes=("sw-reasoning-box",),
            )
            sent = self.markdown.made + opened(self.widget)
        length = state.reasoning_length
        if length != self._length or (final and not self._finished):
            text = state.reasoning
            if final:
                sent += self.markdown.finish(text, cut_off=state.can_continue and not answering)
                self._finished = True
            else:
                sent += self.markdown.update(text)
            self._length = length
        if not self._opened and not answering and not final:
            self._opened = True
            sent += set_traits(self.widget, selected_index=0)
        if answering and not self._collapsed:
            self._collapsed = True
            sent += set_traits(self.widget, selected_index=None)
        usage = state.usage
        tokens = usage.reasoning_tokens if usage is not None else None
        return sent + set_traits(self.widget, titles=(self._title(length, answering or final, tokens),))

    @staticmethod
    def _title(length: int, finished: bool, reasoning_tokens: int | None) -> str:
        if not finished:
            return "Thinking…"
        if reasoning_tokens:
            return f"Reasoning ({reasoning_tokens:,} tokens)"
        return f"Reasoning (about {math.ceil(length / 4):,} tokens)"
