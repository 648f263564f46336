"""The notebook view: ipywidgets panes for a streamed answer, a shared frame scheduler, and the
kernel integration that streams in the background (`show`, `StreamHandle`, `cancel_all`).

Only standard ipywidgets are used, so that JupyterLab, Notebook 7, VS Code, Colab and Voila need
no frontend build.
"""

from __future__ import annotations

from ._chat import ChatPanel
from ._defaults import set_defaults
from ._handle import StreamHandle, cancel_all
from ._scheduler import FrameScheduler, scheduler_for
from ._view import StreamView

__all__ = [
    "StreamHandle",
    "StreamView",
    "ChatPanel",
    "cancel_all",
    "set_defaults",
    "FrameScheduler",
    "scheduler_for",
]
