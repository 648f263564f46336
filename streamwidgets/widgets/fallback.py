"""The static fallback: the answer as plain text, markdown and HTML next to the widget.

Widgets render only where a kernel (or saved widget state) is around; nbconvert HTML, GitHub and
nbviewer show a saved notebook's other mimetypes instead (nbconvert skips the widget view when no
widget state was saved). So the output carries the widget view plus, once the stream ends, the
answer itself, with a status line that says how it ended and, when it ended short, why.

The answer is model output. The HTML form is the pane's own safe render (no second render of the
whole answer when the stream ends). The markdown form is for renderers that may pass raw HTML
through (markdown-it with `html=True`, nbconvert's markdown filter): every `<` outside code and
TeX math is escaped, and the result is checked by parsing it the way such a renderer would; if
anything still parses as HTML or as an unsafe link, all markdown syntax is escaped instead. No
form ever contains more than the answer and its status — no request, no key.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Optional

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..formatting import STATUS_WORDS, origin
from ..markdown import _is_safe_link as is_safe_link
from ..markdown import escape_html
from ..state import StreamState

if TYPE_CHECKING:
    from .view import StreamView

__all__ = ["WIDGET_MIMETYPE", "placeholder_bundle", "final_bundle", "status_line", "safe_markdown"]

WIDGET_MIMETYPE = "application/vnd.jupyter.widget-view+json"
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~&$])")
_PLAIN_LIMIT = 2000
#: Inline code (a run of backticks up to the same run) and TeX math (`$$…$$`, `$…$`): kept as written.
_VERBATIM = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)|\$\$.+?\$\$|(?<![\\$])\$(?!\s).+?(?<![\s\\])\$", re.S)


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


def safe_markdown(text: str) -> str:
    """`text` as markdown that no renderer turns into raw HTML or an unsafe link.

    Code blocks, inline code and `$…$` math keep every character; elsewhere `<` becomes `&lt;`
    (which renders as `<`). The result is parsed with raw HTML allowed; should any HTML or unsafe
    link be left, every markdown character outside code blocks is escaped instead.
    """
    light = _escape_outside_code(text, _escape_angles)
    if _is_inert(light):
        return light
    heavy = _escape_outside_code(text, _escape_all)
    if _is_inert(heavy):
        return heavy
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}text\n{text}\n{fence}"  # never reached by any payload known; literal all the same


def _escape_angles(chunk: str) -> str:
    out, last = [], 0
    for match in _VERBATIM.finditer(chunk):
        out.append(chunk[last : match.start()].replace("<", "&lt;"))
        out.append(match.group(0))
        last = match.end()
    out.append(chunk[last:].replace("<", "&lt;"))
    return "".join(out)


def _escape_all(chunk: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", chunk)


def _escape_outside_code(text: str, escape: Any) -> str:
    """Apply `escape` to every line that is not in a top-level code block of `text`."""
    lines = text.splitlines(keepends=True)
    code = set()
    for token in _html_parser().parse(text):
        if token.level == 0 and token.type in ("fence", "code_block") and token.map:
            code.update(range(*token.map))
    out, run = [], []
    for number, line in enumerate(lines):
        if number in code:
            if run:
                out.append(escape("".join(run)))
                run = []
            out.append(line)
        else:
            run.append(line)
    if run:
        out.append(escape("".join(run)))
    return "".join(out)


class _AnyLink(MarkdownIt):
    def validateLink(self, url: str) -> bool:  # see every link, to judge it in `_is_inert`
        return True


@lru_cache(maxsize=1)
def _html_parser() -> MarkdownIt:
    """How a renderer that passes HTML through reads markdown (CommonMark, raw HTML on)."""
    return _AnyLink("commonmark", {"html": True}).enable(["table", "strikethrough"])


def _is_inert(markdown: str) -> bool:
    """Nothing in `markdown` parses as raw HTML, and every link and image is safe."""

    def inert(tokens: list[Token]) -> bool:
        for token in tokens:
            if token.type in ("html_block", "html_inline"):
                return False
            for name in ("href", "src"):
                url = token.attrGet(name)
                if url is not None and not is_safe_link(str(url)):
                    return False
            if token.children and not inert(token.children):
                return False
        return True

    return inert(_html_parser().parse(markdown))
