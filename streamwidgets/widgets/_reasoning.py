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

from ..core import StreamState
from ..markdown import escape_html
from ._markdown_pane import MarkdownPane
from ._sync import Parts, opened, set_traits
from ._traffic import NOTHING, Cost

__all__ = ["ReasoningPane", "CSS"]

#: The pane's rules in the view's stylesheet (`_sheet.stylesheet`), with why in comments.
CSS = """
.sw-reasoning-box { margin: 2px 0 4px 0; }
.sw-reasoning-box .jupyter-widget-Collapse-header,
.sw-reasoning-box .p-Collapse-header, .sw-reasoning-box .lm-Collapse-header {
  font-size: var(--sw-ui-size);
  color: var(--jp-ui-font-color2, inherit);
  padding: 2px 8px;
}
.sw-reasoning {
  color: var(--jp-content-font-color2, inherit);
  font-size: calc(0.9 * var(--sw-text-size));
  max-height: 24em; overflow-y: auto;
  border-left: 3px solid var(--jp-border-color1, rgba(127, 127, 127, 0.5));
  padding-left: 8px;
}
"""


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
        return sent + set_traits(self.widget, titles=(self.title(length, answering or final, tokens),))

    def saved_html(self, state: StreamState) -> str:
        """The reasoning in a saved notebook: its title and markdown as drawn, set off by a rule."""
        if self.markdown is None or self.widget is None:
            return ""
        title = escape_html(str((self.widget.titles or ("Reasoning",))[0]))
        return (
            '<div class="sw-static-reasoning" style="border-left:3px solid rgba(127,127,127,0.45);'
            'padding-left:0.8em;margin-bottom:0.8em">'
            f'<div class="sw-section-title"><em>{title}</em></div>{self.markdown.html}</div>'
        )

    @staticmethod
    def title(length: int, finished: bool, reasoning_tokens: int | None) -> str:
        if not finished:
            return "Thinking…"
        if reasoning_tokens:
            return f"Reasoning ({reasoning_tokens:,} tokens)"
        return f"Reasoning (about {math.ceil(length / 4):,} tokens)"
