"""The tool-calls pane: each call's name and arguments.

While a call streams its arguments are shown raw, as they arrive (half a JSON object does not
parse). Once the call is complete they are pretty-printed — or, when they are not valid JSON (the
stream was cut, or the model wrote bad JSON), shown exactly as received with a note saying so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .. import formatting
from ..markdown import escape_html
from ..state import ToolCall
from .sync import Parts, set_traits, visible_classes
from .traffic import NOTHING, Cost

__all__ = ["ToolCallsPane", "tool_calls_html", "format_arguments"]

_MAX_NAME = 120


def format_arguments(arguments: str, *, complete: bool) -> tuple[str, str]:
    """(text to show, note): pretty JSON once complete and valid, else the raw string."""
    if not complete:
        return arguments, "receiving arguments…"
    if not arguments.strip():
        return "", "no arguments"
    parsed = _json_or_none(arguments)
    if parsed is None:
        return arguments, "the arguments are not valid JSON; shown exactly as received"
    return json.dumps(parsed[0], indent=2, ensure_ascii=False), ""


def _json_or_none(text: str) -> tuple[object] | None:
    try:
        return (json.loads(text),)
    except ValueError:
        return None


def _call_html(call: ToolCall, complete: bool) -> str:
    name = escape_html(formatting.shorten(call.name or "(unnamed tool)", _MAX_NAME))
    ident = f' <span class="sw-tool-id">{escape_html(formatting.shorten(call.id, 80))}</span>' if call.id else ""
    text, note = format_arguments(call.arguments, complete=complete)
    args = f'<pre class="sw-tool-args">{escape_html(text)}</pre>' if text else ""
    note_html = f'<div class="sw-note">{escape_html(note)}</div>' if note else ""
    return f'<div class="sw-tool"><div class="sw-tool-name">{name}(){ident}</div>{args}{note_html}</div>'


def tool_calls_html(calls: Sequence[ToolCall], *, done: bool) -> str:
    """A call is complete when the stream ended, or when a later call started and its arguments parse.

    Parallel calls may interleave (chat `index`), so a later call alone does not prove an earlier
    one finished; valid JSON with a successor does.
    """
    last = len(calls) - 1

    def complete(i: int, call: ToolCall) -> bool:
        return done or (i < last and _json_or_none(call.arguments) is not None)

    body = "".join(_call_html(call, complete(i, call)) for i, call in enumerate(calls))
    title = "Tool call" if len(calls) == 1 else f"Tool calls ({len(calls)})"
    return f'<div class="sw-section-title">{title}</div>{body}'


class ToolCallsPane:
    """Re-rendered whole when a call grows; tool arguments are short next to an answer.

    The view makes the pane when the first call arrives, with it already in place (most answers
    call no tool). It hides again when a Continue starts a part without calls.
    """

    def __init__(self, parts: Parts, calls: Sequence[ToolCall], *, done: bool) -> None:
        self.widget = parts.html("sw-tools", value=tool_calls_html(calls, done=done))
        self._shown = _key(calls, done)

    def render(self, calls: Sequence[ToolCall], *, done: bool) -> Cost:
        key = _key(calls, done)
        if key == self._shown:
            return NOTHING
        self._shown = key
        html = tool_calls_html(calls, done=done) if calls else ""
        return set_traits(self.widget, value=html, _dom_classes=visible_classes(self.widget, bool(calls)))


def _key(calls: Sequence[ToolCall], done: bool) -> tuple[int, int, bool]:
    """What decides whether the pane must be redrawn: how many calls, how much of them, and the end."""
    return len(calls), sum(len(c.arguments) + len(c.name or "") + len(c.id or "") for c in calls), done
