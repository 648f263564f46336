"""The view's buttons: Cancel while the stream can be stopped, Continue (or Retry) once it ended
short and someone can start the next part.

Each is shown only while it can act: a greyed-out Cancel on a finished answer is noise, and
Continue takes its place when the answer can go on. Continue is made the first time it is
offered (most answers never need it: `continue_button` is None until then). The view puts them
at the end of its header row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import ipywidgets as w

from ..core import StreamState
from ._sync import Parts, opened, set_traits, visible_classes
from ._traffic import Cost

__all__ = ["Buttons", "Controls", "CSS", "CONTINUE", "RETRY"]

#: The pane's rules in the view's stylesheet (`_sheet.stylesheet`), with why in comments.
CSS = """
.sw-view .sw-cancel, .sw-view .sw-continue { flex: 0 0 auto; width: auto; padding: 0 12px; }
/* A button's icon is a glyph drawn by CSS, and it would go into the button's accessible name
   (" Cancel"): the same glyph with empty alternative text keeps the name to the button's word. */
.sw-view .jupyter-button .fa-stop::before { content: "\\f04d" / ""; }
.sw-view .jupyter-button .fa-play::before { content: "\\f04b" / ""; }
"""

#: The Continue button's word and tooltip (Retry when no answer arrived).
CONTINUE = ("Continue", "Ask the model to go on from where the answer stopped")
RETRY = ("Retry", "Send the same request again")


class Buttons:
    """What Cancel and Continue call, and when Continue is offered: one rule for both front ends
    (`Controls` in the Jupyter view, `MarimoView` in marimo)."""

    _on_cancel: Optional[Callable[[], object]] = None
    _on_continue: Optional[Callable[[], object]] = None

    def on_cancel(self, callback: Optional[Callable[[], object]]) -> None:
        self._on_cancel = callback

    def on_continue(self, callback: Optional[Callable[[], object]]) -> None:
        self._on_continue = callback

    def offers(self, state: StreamState) -> bool:
        """Continue (or Retry) is offered: `state` ended short and someone can start the next part."""
        return self._on_continue is not None and state.can_continue


class Controls(Buttons):
    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        # It starts out as a live stream's first frame shows it (whoever streams sets `on_cancel`
        # before that frame).
        self.cancel_button = parts.button(
            "sw-cancel", description="Cancel", tooltip="Stop this answer and close the connection", icon="stop"
        )
        self.continue_button: Optional[w.Button] = None
        self._on_cancel: Optional[Callable[[], object]] = None
        self._on_continue: Optional[Callable[[], object]] = None
        self.cancel_button.on_click(lambda _button: self._on_cancel and self._on_cancel())

    @property
    def buttons(self) -> tuple[w.Button, ...]:
        """The buttons that exist, in their order in the header row."""
        button = self.continue_button
        return (self.cancel_button,) if button is None else (self.cancel_button, button)

    def draw(self, state: StreamState, now: float, final: bool) -> Cost:
        active = not state.done and self._on_cancel is not None
        cancel = self.cancel_button
        sent = set_traits(cancel, disabled=not active, _dom_classes=visible_classes(cancel, active))
        show = self.offers(state)
        description, tooltip = CONTINUE if state.text_length else RETRY
        button = self.continue_button
        if button is not None:
            classes = visible_classes(button, show)
            return sent + set_traits(button, description=description, tooltip=tooltip, _dom_classes=classes)
        if not show:
            return sent
        button = self._parts.button("sw-continue", icon="play", description=description, tooltip=tooltip)
        button.on_click(lambda _button: self._on_continue and self._on_continue())
        self.continue_button = button
        return sent + opened(button)
