"""The sources pane: numbered citations with title and domain.

Titles and URLs come from the provider (or from the web pages it searched), so they are untrusted:
a URL becomes a link only when it is http(s), and every text is escaped. Links open in a new tab
without giving the opened page a handle on the notebook (`noopener`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import ipywidgets as w

from ..core import Citation, StreamState, formatting
from ..markdown import escape_html, safe_url
from ._sync import Parts, opened, set_traits
from ._traffic import NOTHING, Cost

__all__ = ["CitationsPane", "citations_html", "CSS"]

#: The pane's rules in the view's stylesheet (`_sheet.stylesheet`), with why in comments.
CSS = """
.sw-sources ol { margin: 0; padding-left: 1.8em; font-size: 0.92em; }
.sw-inert { color: var(--jp-content-font-color2, inherit); }
"""

_MAX_TITLE = 160
_MAX_URL = 120


def _item(source: Citation) -> str:
    url = safe_url(source.url)
    host = formatting.domain(source.url) if url else None
    title = (source.title or "").strip() or host or source.url
    title_html = escape_html(formatting.shorten(title, _MAX_TITLE))
    if url is None:
        shown = escape_html(formatting.shorten(source.url, _MAX_URL))
        return (
            f'<li><span class="sw-inert">{title_html}</span> '
            f'<span class="sw-inert-url" title="not a web link, not opened">{shown} (not a web link)</span></li>'
        )
    domain = f' <span class="sw-domain">{escape_html(host)}</span>' if host and host != title else ""
    return (
        f'<li><a href="{escape_html(url)}" target="_blank" rel="noopener noreferrer nofollow">'
        f"{title_html}</a>{domain}</li>"
    )


def citations_html(sources: Sequence[Citation]) -> str:
    items = "".join(_item(source) for source in sources)
    return f'<div class="sw-section-title">Sources</div><ol>{items}</ol>'


class CitationsPane:
    """Sources only ever get appended (the state de-duplicates them), so their count says when to redraw.

    The widget is made when the first sources arrive, with them already in place (None until
    then): most answers cite nothing, and a widget made empty and filled a moment later costs
    two messages.
    """

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self.widget: Optional[w.HTML] = None
        self._shown = 0

    def draw(self, state: StreamState, now: float, final: bool) -> Cost:
        """Redraw when more sources came (a view's sources only grow, across Continue parts too)."""
        sources = state.citations
        if len(sources) == self._shown:
            return NOTHING
        self._shown = len(sources)
        if self.widget is None:
            self.widget = self._parts.html("sw-sources", value=citations_html(sources))
            return opened(self.widget)
        return set_traits(self.widget, value=citations_html(sources))

    def saved_html(self, state: StreamState) -> str:
        """The sources in a saved notebook, as drawn ("" before any)."""
        return f'<div class="sw-static-sources">{self.widget.value}</div>' if self.widget is not None else ""
