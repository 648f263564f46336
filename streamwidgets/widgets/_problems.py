"""The problem box: how the answer ended when it did not simply finish, in plain words.

It sits below the answer, so that the partial answer stays readable above the explanation. Error
messages come from the provider (and proxies' HTML pages), so everything is escaped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Optional

import ipywidgets as w

from ..core import Redact, StreamState, formatting, unchanged
from ..markdown import escape_html
from ._sync import Parts, opened, set_traits, visible_classes
from ._traffic import NOTHING, Cost

__all__ = ["ProblemBox", "problem_html", "reported", "CSS"]

#: The pane's rules in the view's stylesheet (`_sheet.stylesheet`), with why in comments.
CSS = """
.sw-problem-box { border-radius: 3px; padding: 4px 8px; margin: 4px 0 2px 0; border-left: 4px solid; }
/* Tints, not the theme's pale --jp-*-color3: the text keeps the theme's own colour, dark or light. */
.sw-kind-error { border-color: var(--sw-error); background: rgba(211, 47, 47, 0.12); }
.sw-kind-warn { border-color: var(--sw-warn); background: rgba(245, 124, 0, 0.12); }
.sw-kind-info { border-color: var(--jp-info-color1, #0288d1); background: rgba(2, 136, 209, 0.10); }
.sw-problem-box, .sw-problem-box * { color: var(--jp-content-font-color1, inherit); }
.sw-problem-box ul { margin: 2px 0; padding-left: 1.4em; }
"""

_MAX_WARNINGS = 20
_MAX_TEXT = 2000


def _kind(state: StreamState) -> str:
    if state.status == "error":
        return "error"
    if state.status == "incomplete":
        return "warn"
    if state.status == "cancelled":
        return "info"
    if state.status == "complete" and (state.finish not in (None, "stop", "tool_calls") or state.refusal):
        return "warn"
    return ""


def reported(state: StreamState) -> bool:
    """There is a problem to report (`problem_html` says something)."""
    return bool(_kind(state) or state.warnings)


def _warnings_html(warnings: Sequence[str], redact: Redact) -> str:
    n = len(warnings)
    items = "".join(
        f"<li>{escape_html(redact(formatting.shorten(text, 300)))}</li>" for text in warnings[:_MAX_WARNINGS]
    )
    more = f"<li>… and {formatting.count(n - _MAX_WARNINGS)} more</li>" if n > _MAX_WARNINGS else ""
    what = "part" if n == 1 else "parts"
    return (
        f'<details class="sw-warnings"><summary>{formatting.count(n)} {what} of the stream could not be read '
        f"and {'was' if n == 1 else 'were'} skipped</summary><ul>{items}{more}</ul></details>"
    )


def problem_html(state: StreamState, *, can_continue: bool = False, redact: Redact = unchanged) -> str:
    """ "" when there is nothing to report: the answer is complete and clean, or still streaming cleanly."""
    kind = _kind(state)
    body = []
    if kind:
        message = state.message
        if can_continue and state.can_continue:
            has_answer = state.text_length or state.reasoning_length or state.tool_calls
            message += " Continue asks the model for the rest." if has_answer else " Retry sends the request again."
        body.append(f'<div class="sw-problem-message">{escape_html(redact(message))}</div>')
        if state.refusal:
            refusal = escape_html(redact(formatting.shorten(state.refusal, _MAX_TEXT)))
            body.append(f'<blockquote class="sw-refusal">{refusal}</blockquote>')
    if state.warnings:
        kind = kind or "warn"
        body.append(_warnings_html(state.warnings, redact))
    if not body:
        return ""
    # Not a live region: the view's status region already says how the answer ended, once.
    return f'<div class="sw-problem-box sw-kind-{kind}">{"".join(body)}</div>'


class ProblemBox:
    """Made with the first problem to report (a clean answer has none: `widget` stays None), and
    hidden again when a Continue starts a part that streams cleanly. `redact` takes keys out of
    the provider's words; `offers(state)` says whether the view offers Continue (or Retry)."""

    def __init__(self, parts: Parts, offers: Callable[[StreamState], bool], redact: Redact = unchanged) -> None:
        self._parts = parts
        self._offers = offers
        self.redact = redact
        self.widget: Optional[w.HTML] = None

    def draw(self, state: StreamState, now: float, final: bool) -> Cost:
        html = problem_html(state, can_continue=self._offers(state), redact=self.redact)
        if self.widget is None:
            if not html:
                return NOTHING
            self.widget = self._parts.html("sw-problems", value=html)
            return opened(self.widget)
        return set_traits(self.widget, value=html, _dom_classes=visible_classes(self.widget, bool(html)))
