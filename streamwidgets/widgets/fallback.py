"""The static fallback: the finished answer as plain text, markdown and HTML next to the widget.

Widgets render only where a kernel (or saved widget state) is around; nbconvert HTML, GitHub and
nbviewer show a saved notebook's other mimetypes instead (nbconvert skips the widget view when no
widget state was saved). So the output carries the widget view plus, once the stream ends, the
answer itself. The answer is model output: the HTML form is our own safe render, and no form ever
contains more than the answer and a one-line status — no request, no key.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..formatting import STATUS_WORDS
from ..markdown import escape_html, render_markdown
from ..state import StreamState

__all__ = ["WIDGET_MIMETYPE", "placeholder_bundle", "final_bundle", "status_line"]

WIDGET_MIMETYPE = "application/vnd.jupyter.widget-view+json"
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~])")
_PLAIN_LIMIT = 2000


def _widget_part(widget: Any) -> dict[str, Any]:
    return {WIDGET_MIMETYPE: widget._repr_mimebundle_()[WIDGET_MIMETYPE]}


def status_line(state: StreamState, model: Optional[str], badge: Optional[str] = None) -> str:
    """ "offline demo · gpt-4.1-mini · done · 412 tokens" — plain text; the model name is the one
    that was requested, and the badge says when the answer came from a stand-in or a replay."""
    parts = [p for p in (badge, model) if p]
    parts.append(STATUS_WORDS.get(state.phase, state.phase))
    tokens, estimated = state.completion_tokens
    if tokens:
        parts.append(f"{'about ' if estimated else ''}{tokens:,} tokens")
    return " · ".join(parts)


def placeholder_bundle(widget: Any, model: Optional[str]) -> dict[str, Any]:
    """While streaming: the widget, and a text line for places that cannot show it."""
    who = f" from {model}" if model else ""
    return {**_widget_part(widget), "text/plain": f"[streaming an answer{who}; the live view needs a running kernel]"}


def final_bundle(
    widget: Any, text: str, state: StreamState, model: Optional[str], badge: Optional[str] = None
) -> dict[str, Any]:
    """After the end: the same widget, plus the answer as text/plain, text/markdown and safe text/html."""
    status = status_line(state, model, badge)
    plain = text if len(text) <= _PLAIN_LIMIT else text[: _PLAIN_LIMIT - 1] + "…"
    markdown_status = _MARKDOWN_SPECIAL.sub(r"\\\1", status)
    return {
        **_widget_part(widget),
        "text/plain": f"{plain}\n\n[{status}]" if plain else f"[{status}]",
        "text/markdown": f"{text}\n\n*{markdown_status}*",
        "text/html": (
            f'<div class="sw-static">{render_markdown(text)}'
            f'<p class="sw-static-status"><em>{escape_html(status)}</em></p></div>'
        ),
    }
