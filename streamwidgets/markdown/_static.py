"""The static export of a finished answer: its markdown and HTML forms, saved next to the widget.

A saved notebook shows an output's other mimetypes where the widget cannot render (nbconvert
HTML, GitHub, nbviewer). The HTML form is the pane's own safe render with a status line under it
(no second render of the whole answer when the stream ends). The markdown form is for renderers
that may pass raw HTML through (markdown-it with `html=True`, nbconvert's markdown filter): the
answer made inert by `safe_markdown`, the lines around it (a tool loop's timeline, the status line)
escaped as plain text. Neither form holds more than the answer and its status.

Pure: no widgets, no I/O.
"""

from __future__ import annotations

import html
import re
from typing import Optional

from ._escape import escape_html, is_safe_link
from ._scan import closes_fence, code_span_end, opens_fence

__all__ = ["safe_markdown", "static_markdown", "static_html", "fences_closed"]

#: What can start raw HTML in CommonMark (a tag, a closing tag, a comment, a declaration, a
#: processing instruction) or an autolink: `<` and then one of these. Any other `<` is text.
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
#: Lines that make a container (a list item, a quote) or a link reference definition, inside which
#: a line scanner cannot tell code from text as a parser would: their code is escaped too.
_COMPLEX = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)|^[ \t]*>|^ {0,3}\[[^\]]*\]:", re.M)
_LINK = re.compile(r"\]\([ \t]*<?[ \t]*([^\s)>]*)")
_DEFINITION = re.compile(r"^( {0,3})\[([^\]]*)\]:[ \t]*<?(\S*)", re.M)
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~&$])")


def static_markdown(text: str, status: str, reason: str = "", *, before: str = "") -> str:
    """The `text/markdown` form: the lines `before` the answer (a tool loop's timeline), the
    answer made inert, then its status line and, when it ended short, why. All but the answer are
    plain text, escaped, so that none can open a code fence the answer would close (and the raw
    HTML the answer keeps inside a fence of its own would then be read as HTML)."""
    head = "  \n".join(_escape_markdown(line) for line in before.splitlines())
    footer = f"*{_escape_markdown(status)}*" + (f"\n\n{_escape_markdown(reason)}" if reason else "")
    return "\n\n".join(part for part in (head, safe_markdown(text), footer) if part)


def static_html(answer_html: str, status: str, reason: str = "") -> str:
    """The `text/html` form: the answer as the pane rendered it (already safe), then its status
    line and, when it ended short, why."""
    footer = f'<p class="sw-static-status"><em>{escape_html(status)}</em></p>' + (
        f'<p class="sw-static-reason">{escape_html(reason)}</p>' if reason else ""
    )
    return f'<div class="sw-static">{answer_html}{footer}</div>'


def safe_markdown(text: str) -> str:
    """`text` as markdown that a renderer passing raw HTML through still shows as text.

    Every `<` that could start a tag, comment or autolink becomes `&lt;` (which renders as `<`);
    a `<` before a space, a digit or `=`, or after the last `>`, stays, so TeX math (`$a < b$`)
    mostly reads as written. Inline
    code on one line keeps every character, and so do fenced code blocks of a document with no
    lists, quotes or link definitions (there, where a fence ends is plain from its lines). Links
    and definitions to anything but http(s), mailto or a relative URL lose their link syntax.
    No parse of the whole answer: this runs when a stream ends, on the kernel's loop.
    """
    if not _TAG_START.search(text) and "](" not in text and "]:" not in text:
        return text  # nothing to escape (most answers): no copy, no scan line by line
    simple = not _COMPLEX.search(text)
    out: list[str] = []
    fence: Optional[str] = None
    offset, last_gt = 0, text.rfind(">")
    for line in text.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        if fence is not None:
            out.append(line)
            if closes_fence(line.rstrip("\n"), fence):
                fence = None
            continue
        fence = opens_fence(line.rstrip("\n")) if simple else None
        if fence is not None:
            out.append(line)
            continue
        # With no `>` from here on no tag can be completed: every `<` left is text.
        out.append(_escape_line(line) if start <= last_gt else _LINK.sub(_link, line))
    return _DEFINITION.sub(_definition, "".join(out))


def fences_closed(markdown: str) -> str:
    """`markdown` with a fence it leaves open closed at its end, so that it can be joined to
    another document: the next one's first fence must not close this one's and turn its code
    into markup. (Closing a fence only ever makes more of a document read as code.)"""
    fence: Optional[str] = None
    for line in markdown.splitlines():
        if fence is None:
            fence = opens_fence(line)
        elif closes_fence(line, fence):
            fence = None
    return markdown if fence is None else f"{markdown.rstrip(chr(10))}\n{fence}"


def _escape_line(line: str) -> str:
    """Escape the tag starts of one line outside its inline code spans."""
    if "<" not in line:
        return _LINK.sub(_link, line) if "](" in line else line
    out, last = [], 0
    for start, end in _code_spans(line):
        out.append(_TAG_START.sub("&lt;", line[last:start]))
        out.append(line[start:end])
        last = end
    out.append(_TAG_START.sub("&lt;", line[last:]))
    return _LINK.sub(_link, "".join(out))


def _code_spans(line: str) -> list[tuple[int, int]]:
    """Where `line` has code spans as CommonMark reads them: a run of backticks not escaped by
    a backslash, up to the next run of the same length. A span holding `|` is left out (in a
    table row the pipe splits cells first)."""
    spans, i, n = [], 0, len(line)
    while i < n:
        if line[i] != "`":
            i += 2 if line[i] == "\\" else 1
            continue
        run_end, close = code_span_end(line, i)
        if close < 0:
            i = run_end  # no closing run: the backticks are text
            continue
        if "|" not in line[i:close]:
            spans.append((i, close))
        i = close
    return spans


def _safe_destination(url: str) -> bool:
    return is_safe_link(html.unescape(url))  # `&#106;avascript:` is `javascript:` to a renderer


def _link(match: re.Match[str]) -> str:
    return match.group(0) if _safe_destination(match.group(1)) else "]\\(" + match.group(0)[2:]


def _definition(match: re.Match[str]) -> str:
    indent = match.group(1)
    return match.group(0) if _safe_destination(match.group(3)) else indent + "\\" + match.group(0)[len(indent) :]


def _escape_markdown(chunk: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", chunk)
