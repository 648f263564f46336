"""streamwidgets: stream LLM answers live into Jupyter widgets.

The package reads as the data path, one layer per folder, each importing only those below it:
`core` (sans-IO: bytes → events → state) → `markdown` and `server` (the embedded provider) →
`net` (sources and the one feed loop) → `widgets` (the view) → `apps` (what a user calls).
`docs/design.md` is the map.

`import streamwidgets` is cheap: each public name is imported on first use, so that a script,
the CLI or `streamwidgets.core` never pays for the notebook stack (IPython, ipywidgets) or the
HTTP stack they do not use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS = {
    # every sink takes any source: a prompt (or a ready request), a replay, an SDK stream
    "show": "apps._show",
    "arun": "apps._run",
    "run": "apps._run",
    "astream": "apps._run",
    "replay": "net._sources",
    "sdk": "net._sources",
    "parse": "core._parse",
    "make_request": "net._request",
    "StreamRequest": "net._request",
    "Limits": "core._limits",
    # the notebook view
    "StreamHandle": "widgets._handle",
    "StreamView": "widgets._view",
    "ChatPanel": "widgets._chat",
    "Chat": "net._conversation",
    "cancel_all": "widgets._running",
    "set_defaults": "widgets._defaults",
    # in the classroom
    "compare": "apps._compare",
    "Comparison": "apps._compare",
    "log_to": "apps._classlog",
    "log_report": "apps._classlog",
    "load_ipython_extension": "apps._magic",
    # what a stream becomes
    "StreamState": "core._state",
    "ToolCall": "core._state",
    "Tool": "core._tools",
    "ToolResult": "core._tools",
    "StreamErrorInfo": "core._state",
    "Citation": "core._events",
    "Usage": "core._events",
    # presets
    "Provider": "core._providers",
    "PROVIDERS": "core._providers",
    "get_provider": "core._providers",
    # exceptions, for callers that ask for them (`arun(..., raise_on_error=True)`)
    "StreamError": "core._errors",
    "HTTPStatusError": "core._errors",
    "IncompleteStreamError": "core._errors",
}

__all__ = [
    "show",
    "arun",
    "run",
    "astream",
    "replay",
    "sdk",
    "parse",
    "make_request",
    "StreamRequest",
    "Limits",
    "StreamHandle",
    "StreamView",
    "ChatPanel",
    "Chat",
    "cancel_all",
    "set_defaults",
    "compare",
    "Comparison",
    "log_to",
    "log_report",
    "load_ipython_extension",
    "StreamState",
    "ToolCall",
    "Tool",
    "ToolResult",
    "StreamErrorInfo",
    "Citation",
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
    from .apps._classlog import log_report, log_to
    from .apps._compare import Comparison, compare
    from .apps._magic import load_ipython_extension
    from .apps._run import arun, astream, run
    from .apps._show import show
    from .core._errors import HTTPStatusError, IncompleteStreamError, StreamError
    from .core._events import Citation, Usage
    from .core._limits import Limits
    from .core._parse import parse
    from .core._providers import PROVIDERS, Provider, get_provider
    from .core._state import StreamErrorInfo, StreamState, ToolCall
    from .core._tools import Tool, ToolResult
    from .net._conversation import Chat
    from .net._request import StreamRequest, make_request
    from .net._sources import replay, sdk
    from .widgets._chat import ChatPanel
    from .widgets._defaults import set_defaults
    from .widgets._handle import StreamHandle
    from .widgets._running import cancel_all
    from .widgets._view import StreamView
