"""Making a view's widgets cheaply, setting their traits only when they change, and counting
what that costs.

Every model is a `comm_open` of about 1–2 KB and every trait change one comm message (with about
0.6 KB of envelope), so the frame scheduler budgets in messages and the view paces its frames by
bytes. Parts share one `Layout` and one style model, carry their CSS classes from the start, and
are hidden by a class rather than by a `Layout` of their own; the shared models are the
kernel's (see `_theme.shared_model`), so a new view opens no `Layout` or style model at all.
Panes report what they sent through these helpers (`set_traits`, `opened`, `closed`) as they
send it, instead of guessing or walking the tree afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import ipywidgets as w
from ipywidgets.widgets.widget_string import HTMLStyle

from ._theme import HIDDEN, shared_model
from ._traffic import CHILD_BYTES, ENVELOPE_BYTES, NOTHING, OPEN_BYTES, Cost

__all__ = ["Parts", "set_traits", "opened", "closed", "visible_classes"]


@dataclass
class Parts:
    """The models a view's parts share, and the factory that makes parts with them."""

    layout: w.Layout = field(default_factory=lambda: shared_model("layout", w.Layout))
    html_style: HTMLStyle = field(default_factory=lambda: shared_model("html-style", HTMLStyle))
    button_style: w.ButtonStyle = field(default_factory=lambda: shared_model("button-style", w.ButtonStyle))

    def html(self, *classes: str, hidden: bool = False, value: str = "") -> w.HTML:
        return w.HTML(value=value, layout=self.layout, style=self.html_style, _dom_classes=_classes(classes, hidden))

    def button(self, *classes: str, hidden: bool = False, **traits: Any) -> w.Button:
        return w.Button(layout=self.layout, style=self.button_style, _dom_classes=_classes(classes, hidden), **traits)

    def box(self, kind: type, children: list[w.Widget], *classes: str) -> w.Box:
        return kind(children, layout=self.layout, _dom_classes=classes)


def _classes(classes: tuple[str, ...], hidden: bool) -> tuple[str, ...]:
    return (*classes, HIDDEN) if hidden else classes


def set_traits(widget: w.Widget, **values: Any) -> Cost:
    """Set the traits whose value differs, all in one message."""
    changed = {name: value for name, value in values.items() if getattr(widget, name) != value}
    if not changed:
        return NOTHING
    with widget.hold_sync():
        for name, value in changed.items():
            setattr(widget, name, value)
    return Cost(1, ENVELOPE_BYTES + sum(_size(value) for value in changed.values()))


def opened(*widgets: w.Widget) -> Cost:
    """What making `widgets` sent: a `comm_open` each, with its whole state (a widget made with
    a shared layout and style opens one comm)."""
    size = sum(
        ENVELOPE_BYTES + OPEN_BYTES + _size(getattr(widget, "value", None) or getattr(widget, "children", ()))
        for widget in widgets
    )
    return Cost(len(widgets), size)


def closed(*widgets: w.Widget) -> Cost:
    """Close `widgets` (a `comm_close` each); return what that sent."""
    for widget in widgets:
        widget.close()
    return Cost(len(widgets), ENVELOPE_BYTES * len(widgets))


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (tuple, list)):
        return CHILD_BYTES * len(value) if all(isinstance(v, w.Widget) for v in value) else 16 * len(value)
    return 16


def visible_classes(widget: w.DOMWidget, visible: bool) -> tuple[str, ...]:
    """The widget's classes with `sw-hidden` added or removed, to set along with other traits in
    one message."""
    classes = widget._dom_classes
    if (HIDDEN not in classes) == visible:
        return classes
    shown = tuple(c for c in classes if c != HIDDEN)
    return shown if visible else (*shown, HIDDEN)
