"""Setting widget traits only when they change, and counting the messages that costs.

Every trait change on a live widget is one comm message to the browser (with about 0.5 KB of
envelope), so the frame scheduler budgets in messages. Panes report what they sent through these
helpers instead of guessing.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

__all__ = ["set_traits", "set_visible"]


def set_traits(widget: w.Widget, **values: Any) -> int:
    """Set the traits whose value differs, in one message; return the number of messages (0 or 1)."""
    changed = {name: value for name, value in values.items() if getattr(widget, name) != value}
    if not changed:
        return 0
    with widget.hold_sync():
        for name, value in changed.items():
            setattr(widget, name, value)
    return 1


def set_visible(widget: w.DOMWidget, visible: bool) -> int:
    """Show or hide a widget through its layout (a message to the layout's own model)."""
    return set_traits(widget.layout, display=None if visible else "none")
