"""Test helpers for the widget tests: an event runner and a comm that records what widgets send.

`Played` is a source of scripted normalized events with real `anyio.sleep` pauses between them,
streamed through the same feed loop as the network's bytes (used where a test needs exact events).

`Wire` replaces `comm.create_comm` (the hook the `comm` package provides for exactly this), so
that every `comm_open` and state update a widget sends is recorded with its time and JSON size —
the same messages a kernel would publish on iopub.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any, Optional, Union

import anyio
import comm
import ipywidgets as w
from comm.base_comm import BaseComm

from streamwidgets.core._events import Event
from streamwidgets.core._feed import Item
from streamwidgets.core._redact import Redactor
from streamwidgets.core._state import StreamState
from streamwidgets.net import Source, SourceContext


@dataclass(frozen=True, eq=False)
class Played(Source):
    """A source that plays scripted normalized events, `delay` seconds apart, through the real feed
    loop (the kernel tests and the benchmarks use the real client and the embedded server). An
    exception among the events is raised there, as a source that breaks would raise it; `key`
    is a key the source redacts, as a live request redacts its own."""

    events: Sequence[Union[Event, Exception]] = ()
    delay: float = 0.0
    key: Optional[str] = None

    async def items(self, context: SourceContext) -> AsyncIterator[Item]:  # no network: no pause
        for event in self.events:
            await anyio.sleep(self.delay)
            if isinstance(event, Exception):
                raise event
            yield [event]

    def redact(self, text: str) -> str:
        return self.redactor_of().text(text)

    def redactor(self) -> Optional[Redactor]:
        return self.redactor_of() if self.key else None

    def redactor_of(self) -> Redactor:
        return Redactor(self.key or "")

    def then(self, state: StreamState) -> Optional[Source]:
        return self if state.can_continue else None


@dataclass
class Sent:
    at: float
    msg_type: str
    size: int


@dataclass
class Wire:
    """Every message widgets sent while installed."""

    messages: list[Sent] = field(default_factory=list)

    def install(self, monkeypatch: Any) -> Wire:
        wire = self

        class RecordingComm(BaseComm):
            def publish_msg(
                self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
            ) -> None:
                size = len(json.dumps({"data": data, "metadata": metadata, **keys}, default=str))
                wire.messages.append(Sent(time.monotonic(), msg_type, size))

        monkeypatch.setattr(comm, "create_comm", lambda *args, **kwargs: RecordingComm(*args, **kwargs))
        return self

    def updates(self, since: float = 0.0) -> list[Sent]:
        return [m for m in self.messages if m.msg_type == "comm_msg" and m.at >= since]

    def max_in_window(self, window: float = 1.0, since: float = 0.0) -> int:
        """The most messages (of any type) sent within any `window` seconds."""
        times = [m.at for m in self.messages if m.at >= since]
        best = start = 0
        for end in range(len(times)):
            while times[end] - times[start] > window:
                start += 1
            best = max(best, end - start + 1)
        return best


def walk(widget: w.Widget) -> list[w.Widget]:
    """A widget and all widgets below it (children of boxes and accordions)."""
    out, stack = [], [widget]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(child for child in getattr(node, "children", ()) if isinstance(child, w.Widget))
    return out


def widget_strings(root: w.Widget) -> list[tuple[w.Widget, str, str]]:
    """(widget, trait, text) for every string in the synced state of every widget below `root`,
    including their layouts and styles."""
    found = []
    for node in walk(root):
        for owner in (node, getattr(node, "layout", None), getattr(node, "style", None)):
            if not isinstance(owner, w.Widget):
                continue
            for name, value in owner.get_state().items():
                values: Sequence[Any] = value if isinstance(value, (list, tuple)) else [value]
                found.extend((node, name, v) for v in values if isinstance(v, str))
    return found


FORBIDDEN_TAGS = {
    "script",
    "iframe",
    "object",
    "embed",
    "svg",
    "maction",  # <math> is typeset answer math; its links and HTML-carrying parts are not
    "annotation-xml",
    "base",
    "meta",
    "link",
    "form",
    "frame",
    "frameset",
}
URL_ATTRS = {"href", "src", "action", "formaction", "xlink:href", "data", "poster", "background", "srcset"}


#: The one SVG a pane may hold: the usage meter's sparkline, made of numbers only — the svg with
#: these attributes, and inside it a title and one path of bars drawn with numbers only.
_SPARKLINE_ATTRS = {"class", "role", "aria-label", "width", "height", "viewbox", "preserveaspectratio", "fill"}
_PATH = re.compile(r"^[MVh0-9. ]*$")


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self._in_sparkline = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        self._check(tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        self._check(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._in_sparkline = False

    def _sparkline(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> bool:
        """The sparkline's own markup (checked strictly), which is no problem."""
        names = {name for name, _ in attrs}
        if tag == "svg" and dict(attrs).get("class") == "sw-sparkline" and names <= _SPARKLINE_ATTRS:
            self._in_sparkline = True
            return dict(attrs).get("fill") in (None, "currentColor")
        if not self._in_sparkline:
            return False
        if tag == "title" and not attrs:
            return True
        return tag == "path" and names == {"d"} and bool(_PATH.match(dict(attrs)["d"] or ""))

    def _check(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        if self._sparkline(tag, attrs):
            return
        if self._in_sparkline:
            self.problems.append(f"<{tag}> inside the sparkline")
        if tag in FORBIDDEN_TAGS:
            self.problems.append(f"<{tag}> tag")
        if tag == "style":
            self.problems.append("<style> tag")
        for name, value in attrs:
            value = (value or "").strip()
            if name.startswith("on"):
                self.problems.append(f"{name}= on <{tag}>")
            elif name in URL_ATTRS and not value.lower().startswith(("http://", "https://", "#")):
                self.problems.append(f"{name}={value!r} on <{tag}>")
            elif name == "style" and any(bad in value.lower() for bad in ("url(", "expression", "javascript")):
                self.problems.append(f"style={value!r} on <{tag}>")


def markup_problems(html: str) -> list[str]:
    """What in `html` could run script or load a non-web URL in the notebook page."""
    audit = _Audit()
    audit.feed(html)
    audit.close()
    return audit.problems
