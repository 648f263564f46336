"""The static fallback: the answer as plain text, markdown and HTML next to the widget.

Widgets render only where a kernel (or saved widget state) is around; nbconvert HTML, GitHub and
nbviewer show a saved notebook's other mimetypes instead (nbconvert skips the widget view when no
widget state was saved). So the output carries the widget view plus, once the stream ends, the
answer itself — the reasoning, the tool cards, the answer and its sources as the panes drew them —
with a status line that says how it ended and, when it ended short, why. Each pane says what it
saves in its row of the pane table (`_panes.PANES`: `saved_html`, `saved_text`).

A notebook runner (`jupyter nbconvert --execute`, papermill, Jupyter Book) saves the widget state,
and nbconvert then picks the widget view, which only a widget manager loaded from a CDN can draw:
offline the page showed nothing. Nobody watches a runner's answers live, so what it saves is the
answer alone, without the widget view (`keeps_widget`); every exporter and viewer then shows the
HTML form, with or without a network. Voila, which runs a notebook the same way but draws its
widgets live, keeps it.

The answer is model output: its markdown and HTML forms are made in `streamwidgets.markdown`
(`static_markdown`, `static_html`); this module assembles the bundle. No form ever contains more
than the answer and its status — no request, no key.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional

from ..core import StreamState, formatting
from ..markdown import static_html, static_markdown
from . import _panes
from ._cells import under_runner

if TYPE_CHECKING:
    from ._view import StreamView

__all__ = ["WIDGET_MIMETYPE", "placeholder_bundle", "placeholder_text", "final_bundle", "status_line", "keeps_widget"]

WIDGET_MIMETYPE = "application/vnd.jupyter.widget-view+json"
_PLAIN_LIMIT = 2000


def _widget_part(widget: Any) -> dict[str, Any]:
    return {WIDGET_MIMETYPE: widget._repr_mimebundle_()[WIDGET_MIMETYPE]}


def status_line(state: StreamState, model: Optional[str], badge: Optional[str] = None) -> str:
    """ "offline demo standing in for openai · gpt-4.1-mini · done · 412 tokens" — plain text; the
    model name is the one that was requested, and the first part says where the answer came from
    when it was not a live provider (`state.origin`, else the view's badge)."""
    parts = [p for p in (formatting.origin(state.origin, state.provider) or badge, model) if p]
    parts.append(formatting.STATUS_WORDS.get(state.phase, state.phase))
    tokens, estimated = state.completion_tokens
    if tokens:
        parts.append(f"{'about ' if estimated else ''}{tokens:,} tokens")
    return " · ".join(parts)


def ending(state: StreamState, note: Optional[str] = None) -> str:
    """Why an answer is not the whole one, in words ("" for a complete answer): the runner's
    `note` for one still streaming, else what the state says for a failed, cancelled or cut one."""
    if note:
        return note
    if not state.done or (state.status == "complete" and state.finish in (None, "stop", "tool_calls")):
        return ""
    return state.message


def placeholder_bundle(widget: Any, model: Optional[str]) -> dict[str, Any]:
    """While streaming: the widget, and a text line for places that cannot show it."""
    return {**_widget_part(widget), "text/plain": placeholder_text(model)}


def placeholder_text(model: Optional[str]) -> str:
    who = f" from {model}" if model else ""
    return f"[streaming an answer{who}; the live view needs a running kernel]"


def keeps_widget(shell: Any) -> bool:
    """Whether the answers of the cell `shell` runs now are saved with their widget view: not
    under a notebook runner (see the module's docstring), unless that runner is Voila's (which
    starts its kernels with `VOILA_PREHEAT` and, but for pre-heated ones, `SERVER_SOFTWARE=voila/…`)."""
    voila = "VOILA_PREHEAT" in os.environ or os.environ.get("SERVER_SOFTWARE", "").startswith("voila/")
    return voila or not under_runner(shell)


def _saved_html(view: StreamView) -> tuple[str, str]:
    """The panes' saved HTML (each already safe), top to bottom as the view shows them: what goes
    in the answer's box, and what follows its status line. A state not drawn yet is drawn first."""
    view.catch_up()
    state = view.state
    inside: list[str] = []
    after: list[str] = []
    for row in _panes.PANES:
        pane = view.pane(row.name)
        if row.saved_html is not None and pane is not None:
            (after if row.after_status else inside).append(row.saved_html(pane, state))
    return "".join(inside), "".join(after)


def _saved_text(state: StreamState) -> str:
    """The panes' lines before the answer in the text forms (a tool loop's timeline)."""
    texts = (row.saved_text(state) for row in _panes.PANES if row.saved_text is not None)
    return "\n".join(text for text in texts if text)


def final_bundle(
    view: StreamView,
    model: Optional[str],
    badge: Optional[str] = None,
    note: Optional[str] = None,
    *,
    widget: bool = True,
) -> dict[str, Any]:
    """The view's answer as text/plain, safe text/markdown and safe text/html, next to its widget
    (`widget=False`: the answer alone, what a notebook runner saves; see `keeps_widget`).

    After the end, or with `note` (why the answer so far is saved while it still streams). Error
    texts go through the view's `redact`, as in the problem box.
    """
    text = view.text
    state = view.state
    status = status_line(state, model, badge)
    why = view.redact(ending(state, note))
    plain = text if len(text) <= _PLAIN_LIMIT else text[: _PLAIN_LIMIT - 1] + "…"
    footer = f"[{status}]" + (f"\n{why}" if why else "")
    lines = view.redact(_saved_text(state))
    head = f"{lines}\n\n" if lines else ""
    inside, after = _saved_html(view)
    return {
        **(_widget_part(view.widget) if widget else {}),
        "text/plain": f"{head}{plain}\n\n{footer}" if plain else f"{head}{footer}",
        "text/markdown": static_markdown(text, status, why, before=lines),
        "text/html": static_html(inside, status, why) + after,
    }
