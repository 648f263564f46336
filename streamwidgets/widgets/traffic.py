"""What a change to a widget tree costs in comm messages, for panes that do not count their own.

The markdown pane seals finished blocks into new widgets and re-renders only its live tail; how
many messages a frame costs depends on its internals. Comparing two snapshots of the tree (model
ids, `value` and `children` by identity, layouts and styles included) gives the count without
knowing them: a changed widget is one update message, a new model (a widget, or a `Layout` or
style it does not share with an older one) is one `comm_open`. The byte count is an estimate —
the changed text plus a fixed envelope per message — good enough to pace frames by.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import ipywidgets as w

__all__ = ["Cost", "NOTHING", "Snapshot", "snapshot", "messages_between", "ENVELOPE_BYTES"]

#: What a comm message costs on the wire besides its state: header, parent header, metadata,
#: signature and delimiters (measured on ipykernel 7: 600–700 bytes).
ENVELOPE_BYTES = 650
_CHILD_BYTES = 48  # one "IPY_MODEL_<32 hex>" reference in a children list


@dataclass(frozen=True)
class Cost:
    """What drawing something sent: comm messages (the scheduler's budget) and about how many bytes
    (what paces a view's frames)."""

    messages: int = 0
    bytes: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.messages + other.messages, self.bytes + other.bytes)


NOTHING = Cost()

#: A widget's model id → (its `value`, its `children`), the traits a pane changes while streaming.
Snapshot = dict[str, tuple[object, object]]

_MISSING = object()


def _walk(widget: w.Widget) -> Iterator[w.Widget]:
    stack = [widget]
    while stack:
        node = stack.pop()
        yield node
        for part in (getattr(node, "layout", None), getattr(node, "style", None)):
            if isinstance(part, w.Widget):
                yield part
        children = getattr(node, "children", None)
        if children:
            stack.extend(child for child in children if isinstance(child, w.Widget))


def snapshot(root: w.Widget) -> Snapshot:
    return {
        node.model_id: (getattr(node, "value", _MISSING), getattr(node, "children", _MISSING)) for node in _walk(root)
    }


def messages_between(before: Snapshot, after: Snapshot) -> Cost:
    """The messages (and estimated bytes) that turned `before` into `after`."""
    sent = size = 0
    for model_id, (value, children) in after.items():
        old = before.get(model_id)
        value_changed = old is None or (old[0] is not value and old[0] != value)
        children_changed = old is None or (old[1] is not children and old[1] != children)
        if value_changed or children_changed:
            sent += 1
            size += ENVELOPE_BYTES
            if value_changed and isinstance(value, str):
                size += len(value)
            if children_changed and isinstance(children, tuple):
                size += _CHILD_BYTES * len(children)
    return Cost(sent, size)
