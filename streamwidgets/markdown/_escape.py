"""Escaping model output for HTML, and the URLs a link may point to.

Model output, titles and URLs are untrusted HTML: every text and attribute goes through
`escape_html`, a link in rendered markdown must pass `is_safe_link`, and a URL shown as a link in
a source list or tool pane must pass the stricter `safe_url`.
"""

from __future__ import annotations

import html
import re
from typing import Optional
from urllib.parse import urlsplit

__all__ = ["escape_html", "safe_url", "is_safe_link"]

_LINK_SCHEMES = frozenset({"http", "https", "mailto"})
# Browsers drop ASCII tab and newline anywhere in a URL and C0 controls and spaces around it,
# so `java\tscript:` is `javascript:` to them: judge the scheme with those characters removed.
_URL_IGNORED_RE = re.compile(r"[\x00-\x20\x7f]")
_SCHEME_RE = re.compile(r"([^:/?#]*):")


def escape_html(s: str) -> str:
    """Escape text for an HTML text node or a double- or single-quoted attribute value."""
    return html.escape(s, quote=True)


def safe_url(url: object) -> Optional[str]:
    """Return `url` (trimmed) if it is an absolute http(s) URL fit for an `href`, else None.

    For source lists and tool panes, where a link comes straight from the provider: anything that
    is not plainly http(s) (`javascript:`, `data:`, a relative path, a URL with spaces or control
    characters in it) is shown as text instead. Escape the result with `escape_html` when putting
    it into an attribute.
    """
    if not isinstance(url, str):
        return None
    candidate = url.strip()
    if not candidate or _URL_IGNORED_RE.search(candidate):
        return None
    try:
        parts = urlsplit(candidate)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return candidate


def is_safe_link(url: str) -> bool:
    """Allow http, https, mailto and relative URLs in links and images; nothing else.

    markdown-it's default also lets `data:image/(gif|png|jpeg|webp)` through. We refuse `data:`
    entirely: raster data images cannot run script, but a model has no business inlining base64
    blobs into an answer (they would cost the byte budget on every re-render of the tail), and
    one simple rule — the same for links and images — is the easiest to audit.
    """
    candidate = _URL_IGNORED_RE.sub("", url)
    match = _SCHEME_RE.match(candidate)
    if match is None:
        return True
    return match.group(1).lower() in _LINK_SCHEMES
