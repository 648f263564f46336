"""The kernel's defaults for new views: `set_defaults(scale=1.5)` once, and every answer shown
afterwards (by `show`, a replay, a chat) is drawn at that size.

A classroom sets this once at the top of a notebook for the projector instead of passing
`scale=` to every call; a view's own `scale=` still wins.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from ._theme import scale_class

__all__ = ["ViewDefaults", "set_defaults", "view_defaults"]


@dataclass(frozen=True)
class ViewDefaults:
    """What a new view uses when the call does not say. `scale` sizes text, code and math."""

    scale: float = 1.0


_current = [ViewDefaults()]  # the kernel's one setting, replaced whole by `set_defaults`


def view_defaults() -> ViewDefaults:
    return _current[0]


def set_defaults(*, scale: Optional[float] = None) -> ViewDefaults:
    """Set the defaults for the views made from now on; return the previous ones (to restore)."""
    previous = _current[0]
    if scale is not None:
        scale_class(scale)  # refuse a bad scale here, not at the next `show()`
        _current[0] = replace(previous, scale=float(scale))
    return previous
