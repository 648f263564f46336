"""streamwidgets: stream LLM answers live into Jupyter widgets.

The pipeline is bytes → `sse` → `dialects` → `state` → `widgets`; `docs/design.md` is the map.

`import streamwidgets` is cheap: each public name is imported on first use, so that a script,
the CLI or `streamwidgets.sse` never pays for the notebook stack (IPython, ipywidgets) or the
HTTP stack they do not use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS = {
    # the notebook view
    "show": "widgets.launch",
    "show_replay": "widgets.launch",
    "show_sdk": "widgets.launch",
    "StreamHandle": "widgets.handle",
    "StreamView": "widgets.view",
    "ChatPanel": "widgets.chat",
    "cancel_all": "widgets.handle",
    "set_defaults": "widgets.defaults",
    # in the classroom
    "compare": "widgets.compare",
    "Comparison": "widgets.compare",
    "log_to": "classlog",
    "log_report": "classlog",
    "load_ipython_extension": "magic",
    # streaming without a view
    "make_request": "client",
    "StreamRequest": "client",
    "arun": "client",
    "run": "client",
    "astream": "client",
    "stream_into": "client",
    "continue_request": "client",
    "Chat": "client",
    "sdk_into": "sdk",
    "replay_into": "recording",
    # what a stream becomes
    "StreamState": "state",
    "ToolCall": "state",
    "StreamErrorInfo": "state",
    "Source": "events",
    "Usage": "events",
    # presets
    "Provider": "providers",
    "PROVIDERS": "providers",
    "get_provider": "providers",
    # exceptions, for callers that ask for them (`arun(..., raise_on_error=True)`)
    "StreamError": "errors",
    "HTTPStatusError": "errors",
    "IncompleteStreamError": "errors",
}

# `parse` is both a submodule and a function: bind the function now, or importing the
# submodule anywhere would leave `streamwidgets.parse` pointing at the module. It is core only.
from .parse import parse  # noqa: E402 (after the table it explains)

__all__ = [
    "show",
    "show_replay",
    "show_sdk",
    "StreamHandle",
    "StreamView",
    "ChatPanel",
    "cancel_all",
    "set_defaults",
    "compare",
    "Comparison",
    "log_to",
    "log_report",
    "load_ipython_extension",
    "make_request",
    "StreamRequest",
    "arun",
    "run",
    "astream",
    "stream_into",
    "continue_request",
    "Chat",
    "sdk_into",
    "replay_into",
    "parse",
    "StreamState",
    "ToolCall",
    "StreamErrorInfo",
    "Source",
    "Usage",
    "Provider",
    "PROVIDERS",
    "get_provider",
    "StreamError",
    "HTTPStatusError",
    "IncompleteStreamError",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'streamwidgets' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from .classlog import log_report, log_to
    from .client import Chat, StreamRequest, arun, astream, continue_request, make_request, run, stream_into
    from .errors import HTTPStatusError, IncompleteStreamError, StreamError
    from .events import Source, Usage
    from .magic import load_ipython_extension
    from .providers import PROVIDERS, Provider, get_provider
    from .recording import replay_into
    from .sdk import sdk_into
    from .state import StreamErrorInfo, StreamState, ToolCall
    from .widgets.chat import ChatPanel
    from .widgets.compare import Comparison, compare
    from .widgets.defaults import set_defaults
    from .widgets.handle import StreamHandle, cancel_all
    from .widgets.launch import show, show_replay, show_sdk
    from .widgets.view import StreamView
