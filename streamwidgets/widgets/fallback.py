"""The static fallback: the answer as plain text, markdown and HTML next to the widget.

Widgets render only where a kernel (or saved widget state) is around; nbconvert HTML, GitHub and
nbviewer show a saved notebook's other mimetypes instead (nbconvert skips the widget view when no
widget state was saved). So the output carries the widget view plus, once the stream ends, the
answer itself, with a status line that says how it ended and, when it ended short, why.

The answer is model output. The HTML form is the pane's own safe render (no second render of the
whole answer when the stream ends). The markdown form is for renderers that may pass raw HTML
through (markdown-it with `html=True`, nbconvert's markdown filter): see `safe_markdown`. No
form ever contains more than the answer and its status — no request, no key.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any, Optional

from ..formatting import STATUS_WORDS, origin
from ..markdown import _closes_fence, _is_safe_link, escape_html
from ..state import StreamState

if TYPE_CHECKING:
    from .view import StreamView

__all__ = ["WIDGET_MIMETYPE", "placeholder_bundle", "final_bundle", "status_line", "safe_markdown"]

WIDGET_MIMETYPE = "application/vnd.jupyter.widget-view+json"
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~&$])")
_PLAIN_LIMIT = 2000


def _widget_part(widget: Any) -> dict[str, Any]:
    return {WIDGET_MIMETYPE: widget._repr_mimebundle_()[WIDGET_MIMETYPE]}


def status_line(state: StreamState, model: Optional[str], badge: Optional[str] = None) -> str:
    """ "offline demo standing in for openai · gpt-4.1-mini · done · 412 tokens" — plain text; the
    model name is the one that was requested, and the first part says where the answer came from
    when it was not a live provider (`state.source`, else the view's badge)."""
    parts = [p for p in (origin(state.source, state.provider) or badge, model) if p]
    parts.append(STATUS_WORDS.get(state.phase, state.phase))
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
    who = f" from {model}" if model else ""
    return {**_widget_part(widget), "text/plain": f"[streaming an answer{who}; the live view needs a running kernel]"}


def final_bundle(
    view: StreamView, model: Optional[str], badge: Optional[str] = None, note: Optional[str] = None
) -> dict[str, Any]:
    """The view's answer as text/plain, safe text/markdown and safe text/html, next to its widget.

    After the end, or with `note` (why the answer so far is saved while it still streams). Error
    texts go through the view's `redact`, as in the problem box.
    """
    text = view.text
    state = view.state
    status = status_line(state, model, badge)
    why = view.redact(ending(state, note))
    plain = text if len(text) <= _PLAIN_LIMIT else text[: _PLAIN_LIMIT - 1] + "…"
    footer = f"[{status}]" + (f"\n{why}" if why else "")
    markdown_footer = f"*{_escape_all(status)}*" + (f"\n\n{_escape_all(why)}" if why else "")
    html_footer = f'<p class="sw-static-status"><em>{escape_html(status)}</em></p>' + (
        f'<p class="sw-static-reason">{escape_html(why)}</p>' if why else ""
    )
    return {
        **_widget_part(view.widget),
        "text/plain": f"{plain}\n\n{footer}" if plain else footer,
        "text/markdown": f"{safe_markdown(text)}\n\n{markdown_footer}" if text else markdown_footer,
        "text/html": f'<div class="sw-static">{view.answer_html()}{html_footer}</div>',
    }


# ----------------------------------------------------------------------------- safe markdown

#: What can start raw HTML in CommonMark (a tag, a closing tag, a comment, a declaration, a
#: processing instruction) or an autolink: `<` and then one of these. Any other `<` is text.
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
#: Lines that make a container (a list item, a quote) or a link reference definition, inside which
#: a line scanner cannot tell code from text as a parser would: their code is escaped too.
_COMPLEX = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)|^[ \t]*>|^ {0,3}\[[^\]]*\]:", re.M)
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_LINK = re.compile(r"\]\([ \t]*<?[ \t]*([^\s)>]*)")
_DEFINITION = re.compile(r"^( {0,3})\[([^\]]*)\]:[ \t]*<?(\S*)", re.M)


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
            if _closes_fence(line.rstrip("\n"), fence):
                fence = None
            continue
        opened = _FENCE.match(line.rstrip("\n")) if simple else None
        if opened and not (opened.group(2)[0] == "`" and "`" in opened.group(3)):
            fence = opened.group(2)
            out.append(line)
            continue
        # With no `>` from here on no tag can be completed: every `<` left is text.
        out.append(_escape_line(line) if start <= last_gt else _LINK.sub(_link, line))
    return _DEFINITION.sub(_definition, "".join(out))


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
        j = i
        while j < n and line[j] == "`":
            j += 1
        run = j - i
        k = j
        close = -1
        while k < n:
            if line[k] == "`":
                m = k
                while m < n and line[m] == "`":
                    m += 1
                if m - k == run:
                    close = m
                    break
                k = m
            else:
                k += 1
        if close < 0:
            i = j  # no closing run: the backticks are text
            continue
        if "|" not in line[i:close]:
            spans.append((i, close))
        i = close
    return spans


def _safe_destination(url: str) -> bool:
    return _is_safe_link(html.unescape(url))  # `&#106;avascript:` is `javascript:` to a renderer


def _link(match: re.Match[str]) -> str:
    return match.group(0) if _safe_destination(match.group(1)) else "]\\(" + match.group(0)[2:]


def _definition(match: re.Match[str]) -> str:
    indent = match.group(1)
    return match.group(0) if _safe_destination(match.group(3)) else indent + "\\" + match.group(0)[len(indent) :]


def _escape_all(chunk: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", chunk)
