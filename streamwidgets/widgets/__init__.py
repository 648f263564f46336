"""The notebook view: ipywidgets panes for a streamed answer, a shared frame scheduler, and the
kernel integration that streams in the background (`show`, `StreamHandle`, `cancel_all`).

In Jupyter only standard ipywidgets are used, so that JupyterLab, Notebook 7, VS Code, Colab and
Voila need no frontend build; in marimo, which renders anywidgets only, the same panes and
scheduler draw into one small anywidget (`MarimoView`, the `[marimo]` extra).
"""

from __future__ import annotations

from ._cells import deliver, under_runner
from ._cells import watch as watch_cells
from ._chat import ChatPanel
from ._defaults import set_defaults
from ._fallback import WIDGET_MIMETYPE, placeholder_text
from ._handle import StreamHandle, cancel_all, frame_pause
from ._marimo import MarimoView, marimo_view_for
from ._marimo_cells import cancel_with_cell, in_marimo
from ._output import SavedOutput, saves_as, watch_boxes
from ._scheduler import FrameScheduler, scheduler_for
from ._sheet import stylesheet_widget
from ._sync import Parts, set_traits
from ._view import StreamView, view_for

__all__ = [
    "StreamHandle",
    "StreamView",
    "MarimoView",
    "ChatPanel",
    "cancel_all",
    "set_defaults",
    "FrameScheduler",
    "scheduler_for",
    # what `apps` uses
    "view_for",
    "marimo_view_for",
    "in_marimo",
    "cancel_with_cell",
    "frame_pause",
    "watch_cells",
    "under_runner",
    "deliver",
    "WIDGET_MIMETYPE",
    "placeholder_text",
    "SavedOutput",
    "saves_as",
    "watch_boxes",
    "Parts",
    "set_traits",
    "stylesheet_widget",
]
