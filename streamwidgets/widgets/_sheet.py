"""The stylesheet every view carries, put together from the pane table.

Above the panes and their table (`_panes.PANES`), below the front ends that carry it: the rules
every part shares (`_theme.py`), each pane's own rules in the order of the table, the chat panel's,
then code highlighting and math. The Jupyter view sends it in one shared `HTML` model per kernel
(`stylesheet_widget`); the marimo view puts the same text in its own shadow root.
"""

from __future__ import annotations

from functools import cache

import ipywidgets as w

from ..markdown import MATH_CSS, PYGMENTS_CSS
from . import _panes
from ._theme import CHAT_RULES, SHARED_RULES, as_sent, shared_model

__all__ = ["stylesheet", "stylesheet_widget"]


@cache
def stylesheet() -> str:
    """The sheet every view carries: the shared rules, each pane's in the order of the pane table,
    the chat's, then code highlighting and math."""
    source = "\n".join((SHARED_RULES, *(row.css for row in _panes.PANES), CHAT_RULES))
    return as_sent(source) + "\n" + PYGMENTS_CSS + "\n" + MATH_CSS


def stylesheet_widget() -> w.HTML:
    """The `<style>` widget every view includes; one model per kernel, drawn in each view.

    Sharing the model means the ~8 KB sheet crosses the wire once per kernel, not once per
    view, while every view still carries its own `<style>` element in the page (see
    `shared_model`).

    The widget is hidden: a `<style>` element applies wherever it sits in the page, so it needs
    no box of its own and adds no gap above the view.
    """
    return shared_model(
        "style",
        lambda: w.HTML(
            value=f"<style>{stylesheet()}</style>", layout=w.Layout(display="none"), _dom_classes=("sw-style",)
        ),
    )
