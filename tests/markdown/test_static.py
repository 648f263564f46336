"""The markdown form of a saved answer (`safe_markdown`) is inert wherever it is rendered.

A saved notebook keeps each answer as `text/markdown` beside the widget; GitHub, nbconvert and
Jupyter Book render that markdown with raw HTML passing through. Every XSS payload, in every
context a block can sit in, must come out of such a renderer harmless, and code and math must
stay as written.
"""

from __future__ import annotations

import pytest
from html_audit import audit
from xss_payloads import PAYLOADS

from streamwidgets.markdown import safe_markdown


def _rendered(markdown: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown)


CONTEXTS = (
    "{}",
    "Intro.\n\n{}\n\nOutro.",
    "- a list item\n\n  {}",
    "> a quote\n{}",
    "| a | b |\n|---|---|\n| {} | x |",
    "```\ncode\n```\n\n{}\n\n```\n{}\n```",
    "  ```\n  indented fence\n```\n{}\n```",
    "`code` and `{}`",
    "[a]: /u '\n```\n'\n{}\n```",
    "$math$ {} $$x$$",
)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_markdown_form_runs_no_payload_when_html_passes_through(payload: str):
    for context in CONTEXTS:
        text = context.replace("{}", payload)
        assert audit(_rendered(safe_markdown(text))) == [], text


def test_the_markdown_form_keeps_code_and_math_as_written():
    text = (
        "Use `List<int>` and $a < b$ here.\n\n"
        '```html\n<div class="x">&amp;</div>\n```\n\n'
        "A <b>bold</b> claim & a [link](https://example.org), [not one](javascript:alert(1)).\n\n"
        "Finally $$\\sum_{i<n} x_i$$."
    )
    safe = safe_markdown(text)
    assert "`List<int>`" in safe and "$a < b$" in safe and "$$\\sum_{i<n} x_i$$" in safe
    assert '```html\n<div class="x">&amp;</div>\n```' in safe
    html = _rendered(safe)
    assert "<b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert '<a href="https://example.org">link</a>' in html and "javascript" not in html.split("not one")[0]
    assert "<code>List&lt;int&gt;</code>" in html
    assert "<a" not in html.split("link</a>")[1]  # the javascript: link is text
    in_a_list = safe_markdown("- item\n\n```\n<img src=x onerror=alert(1)>\n```\n")
    assert "&lt;img" in in_a_list  # with a list about, code is escaped too
