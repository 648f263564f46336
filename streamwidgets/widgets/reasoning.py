"""The reasoning pane: the model's thinking, streamed live and kept apart from the answer.

It opens by itself while the model thinks (that is all there is to see), and closes itself once
— when the answer starts — so that the answer gets the attention; a person can reopen it, and it
is never forced shut again. The view makes it only when reasoning arrives: most answers have none,
and its half-dozen models would cost every view a few kilobytes for nothing.
"""

from __future__ import annotations

import math

import ipywidgets as w

from .markdown_pane import MarkdownPane
from .sync import Parts, set_traits
from .traffic import NOTHING, Cost, messages_between, snapshot

__all__ = ["ReasoningPane"]


class ReasoningPane:
    def __init__(self, parts: Parts) -> None:
        self.markdown = MarkdownPane(css_class="sw-reasoning")
        self.widget = w.Accordion(
            children=[self.markdown.widget],
            titles=("Thinking…",),
            selected_index=None,
            layout=parts.layout,
            _dom_classes=("sw-reasoning-box",),
        )
        self._length = 0
        self._finished = False
        self._opened = False
        self._collapsed = False

    def render(
        self, text: str, *, answering: bool, done: bool, reasoning_tokens: int | None, cut_off: bool = False
    ) -> Cost:
        """Stream `text` in; `answering` collapses the pane once, `done` finishes the markdown
        (`cut_off`: the stream ended while still thinking, so dangling markers stay out of view).

        A stream that ends while still thinking keeps the pane open: the reasoning is then all
        there is to read.
        """
        if not text:
            return NOTHING
        sent = NOTHING
        if len(text) != self._length or (done and not self._finished):
            before = snapshot(self.markdown.widget)
            if done:
                self.markdown.finish(text, cut_off=cut_off)
                self._finished = True
            else:
                self.markdown.update(text)
            self._length = len(text)
            sent += messages_between(before, snapshot(self.markdown.widget))
        if not self._opened and not answering and not done:
            self._opened = True
            sent += set_traits(self.widget, selected_index=0)
        if answering and not self._collapsed:
            self._collapsed = True
            sent += set_traits(self.widget, selected_index=None)
        sent += set_traits(self.widget, titles=(self._title(text, answering or done, reasoning_tokens),))
        return sent

    @staticmethod
    def _title(text: str, finished: bool, reasoning_tokens: int | None) -> str:
        if not finished:
            return "Thinking…"
        if reasoning_tokens:
            return f"Reasoning ({reasoning_tokens:,} tokens)"
        return f"Reasoning (about {math.ceil(len(text) / 4):,} tokens)"
