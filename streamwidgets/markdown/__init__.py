"""Rendering untrusted model output for the page: safe markdown (no raw HTML, http(s)/mailto links
only, images as links), Pygments-coloured code, typeset math (MathML), the healed live tail,
`IncrementalMarkdown`, which re-renders only the open end of a growing text, the static
forms of a finished answer saved next to its widget, and markdown written for a person to read
(a conversation, a class log)."""

from __future__ import annotations

from ._escape import escape_html, safe_url
from ._highlight import CODE_CHUNK_CLASS, DARK_CONTEXTS, MARKDOWN_CLASS, PYGMENTS_CSS
from ._incremental import IncrementalMarkdown, Patch
from ._math import MATH_CSS
from ._parser import CITATION_CLASS, render_markdown
from ._static import fences_closed, safe_markdown, static_html, static_markdown
from ._writing import conversation_markdown, quote_block

__all__ = [
    "render_markdown",
    "IncrementalMarkdown",
    "Patch",
    "escape_html",
    "safe_url",
    "safe_markdown",
    "fences_closed",
    "static_markdown",
    "static_html",
    "conversation_markdown",
    "quote_block",
    "MARKDOWN_CLASS",
    "CITATION_CLASS",
    "CODE_CHUNK_CLASS",
    "PYGMENTS_CSS",
    "DARK_CONTEXTS",
    "MATH_CSS",
]
