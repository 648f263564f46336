"""Markdown rendering: safety of `render_markdown`, exactness of `IncrementalMarkdown`.

The law: however a text is chunked, after `finish` the segments join to `render_markdown(text)`;
and whenever no open-fence chunks are showing (`exact`), the segments join to the render of the
text so far. Checked on the fixture documents in `markdown_fixtures/` streamed in random pieces,
and on random documents composed from the block grammar.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Optional

import pytest
from html_audit import audit
from hypothesis import given
from hypothesis import strategies as st
from markdown_cases import FIXTURE_TEXTS, FIXTURES, cuts_from_sizes, markdown_documents, slow, stream
from markdown_it import MarkdownIt
from xss_payloads import PAYLOADS

from streamwidgets.markdown import (
    CITATION_CLASS,
    CODE_CHUNK_CLASS,
    PYGMENTS_CSS,
    IncrementalMarkdown,
    Patch,
    escape_html,
    render_markdown,
    safe_url,
)
from streamwidgets.markdown._scan import closes_fence

WORDS_RE = re.compile(r"\s*\S+|\s+")


# --------------------------------------------------------------------------------- helpers


def word_cuts(text: str, group: Sequence[int]) -> list[int]:
    pieces = WORDS_RE.findall(text)
    assert "".join(pieces) == text
    cuts, position, i, k = [], 0, 0, 0
    while i < len(pieces):
        take = group[k % len(group)]
        position += sum(len(p) for p in pieces[i : i + take])
        cuts.append(position)
        i += take
        k += 1
    return cuts


# --------------------------------------------------------------------------------- fixtures


def test_there_are_enough_fixtures() -> None:
    assert len(FIXTURES) >= 15
    assert len(FIXTURE_TEXTS["big_mixed"]) > 4000


@pytest.mark.parametrize("name", sorted(FIXTURE_TEXTS))
@slow(20)
@given(sizes=st.lists(st.integers(1, 20), min_size=1, max_size=50))
def test_fixture_streamed_in_random_pieces_renders_exactly(name: str, sizes: list[int]) -> None:
    text = FIXTURE_TEXTS[name]
    im = stream(text, cuts_from_sizes(text, sizes))
    assert im.html == render_markdown(text)
    assert im.exact and im.finished


@pytest.mark.parametrize("name", sorted(FIXTURE_TEXTS))
@slow(10)
@given(group=st.lists(st.integers(1, 6), min_size=1, max_size=20))
def test_fixture_streamed_in_whole_words_renders_exactly(name: str, group: list[int]) -> None:
    text = FIXTURE_TEXTS[name]
    assert stream(text, word_cuts(text, group)).html == render_markdown(text)


@pytest.mark.parametrize("name", sorted(FIXTURE_TEXTS))
def test_fixture_intermediate_renders_are_exact_outside_open_fences(name: str) -> None:
    text = FIXTURE_TEXTS[name]
    im = stream(text, cuts_from_sizes(text, [7, 3, 11, 1, 5]), check_exact=True)
    assert im.html == render_markdown(text)


@pytest.mark.parametrize("name", ["big_mixed", "tutorial_answer", "code_fences", "blockquotes"])
def test_fixture_with_windows_line_endings_split_inside_crlf(name: str) -> None:
    text = FIXTURE_TEXTS[name].replace("\n", "\r\n")
    cuts = [i + 1 for i, ch in enumerate(text) if ch == "\r"] + [len(text)]  # cut after every \r
    im = stream(text, sorted(set(cuts)), check_exact=True)
    assert im.html == render_markdown(text) == render_markdown(FIXTURE_TEXTS[name])


def test_text_with_nul_and_lone_carriage_returns() -> None:
    text = "a\0b\rline two\r\r# head\0ing\r- item\r\n- item\r"
    for size in (1, 2, 3):
        assert stream(text, cuts_from_sizes(text, [size]), check_exact=True).html == render_markdown(text)


# --------------------------------------------------------------------------------- the hard cases


HARD_CASES = {
    "later reference definition changes earlier links": (
        "See [the docs] and [Docs][the docs] and ![logo].\n\n"
        + "Filler paragraph.\n\n" * 4
        + "[the docs]: https://example.com/docs 'Docs'\n[logo]: https://example.com/logo.png\n"
    ),
    "definition typed then broken by trailing garbage": "[a] and [b]\n\n[a]: /u 'title' garbage\n[b]: /v\n",
    "definition title on the next line": "[x]\n\ntext\n\n[x]: https://e.com/x\n'a title\nover lines'\n\nend\n",
    "definition inside a quote and a list": "[q] [l]\n\n> [q]: /quote\n\n- [l]: /list\n- item\n",
    "first definition wins": "[d]\n\n[d]: /first\n\nmiddle\n\n[d]: /second\n",
    "setext heading": "Title\n---\n\nPara\nTwo lines\n===\n\nNot\n\n---\n",
    "list becomes loose": "- a\n- b\n- c\n\n- d\n\npara\n",
    "loose by inner paragraph": "1. one\n2. two\n\n   more\n3. three\n",
    "lazy continuation": "> quote\nlazy line\n\n- item\nlazy item line\n\npara\n",
    "table grows row by row": "intro\n\n| a | b |\n|---|:-:|\n"
    + "".join(f"| {i} | {i * i} |\n" for i in range(12))
    + "\nafter\n",
    "table interrupts a paragraph": "line one\n| h1 | h2 |\n| --- | --- |\n| c | d |\n",
    "html blocks are escaped": "<div>\n<script>alert(1)</script>\n</div>\n\n<p onclick=x>hi</p>\n",
    "block quotes": "> a\n> > b\n> c\n\n> d\n\ne\n> f\n",
    "ends mid-line": "# Head\n\nSome text that stops in the mid",
    "fence closes then text": "```python\ndef f():\n    return 1\n```\nafter the fence\n",
    "fence with longer close": "~~~~\n~~~\nstill code\n~~~~~\n\nout\n",
    "unclosed fence at the end": "text\n\n```js\nlet a = 1;\nlet b = 2;",
    "fence in a list item": "1. step\n\n   ```bash\n   pip install x\n   ```\n2. next\n",
    "indented code after list": "- a\n\n      code in item\n\n    code\n\nend\n",
    "heading then hr then setext": "# H\n***\nSetext\n===\n",
    "empty list items": "-\n\n-\n  foo\n-   \n+\n",
    "emphasis across lines": "*start\nend* and **strong\nmore**\n\nnext\n",
    "citations": "Claim [1]. Another [2][3].\n\n- item [4]\n\n`[1]`\n",
}


@pytest.mark.parametrize("name", sorted(HARD_CASES))
@pytest.mark.parametrize("size", [1, 2, 5, 13])
def test_hard_case_streams_exactly(name: str, size: int) -> None:
    text = HARD_CASES[name]
    im = stream(text, cuts_from_sizes(text, [size]), check_exact=True)
    assert im.html == render_markdown(text)


def test_later_definition_rerenders_only_from_the_block_that_used_it() -> None:
    head = "# Title\n\nNo links here.\n\n"
    text = head + "Uses [ref].\n\n" + "Filler.\n\n" * 5 + "[ref]: https://example.com/r\n"
    im = IncrementalMarkdown()
    im.update(text[: text.index("[ref]:")])
    assert "<a " not in im.html
    before = im.segments
    patch = im.finish(text)
    assert patch.start == 2  # heading and first paragraph are untouched
    assert im.segments[:2] == before[:2]
    assert 'href="https://example.com/r"' in im.html
    assert im.html == render_markdown(text)


def test_committed_blocks_are_not_rerendered_per_update() -> None:
    text = "".join(f"Paragraph {i} with *some* text.\n\n" for i in range(40))
    im = IncrementalMarkdown()
    for cut in cuts_from_sizes(text, [9]):
        committed = len(im.segments) - 1  # all but the live tail
        patch = im.update(text[:cut])
        assert patch.start >= committed
        assert len(patch.segments) <= 3  # at most a block or two newly final, and the tail
    im.finish(text)
    assert len(im.segments) >= 40


def test_patch_kinds_append_replace_consolidate_reset() -> None:
    im = IncrementalMarkdown()
    first = im.update("# A\n\npara")
    assert first.start == 0
    grown = im.update("# A\n\npara one\n\nnext")
    assert grown.start <= 1 and im.segments[0] == "<h1>A</h1>\n"
    im.update("# A\n\npara one\n\nnext\n\n```\nx\ny\n")
    assert not im.exact
    chunks = len(im.segments)
    closed = im.update("# A\n\npara one\n\nnext\n\n```\nx\ny\nz\n```\n")
    assert im.exact and len(im.segments) < chunks + 1
    assert closed.segments[0].startswith("<pre><code>x\ny\nz\n")
    reset = im.update("Something else")
    assert reset == Patch(0, im.segments, reset=True)
    assert im.html == render_markdown("Something else")


def test_unchanged_text_gives_an_empty_patch_and_finish_is_final() -> None:
    im = IncrementalMarkdown()
    im.update("hello *world*")
    assert im.update("hello *world*") == Patch(len(im.segments), ())
    im.finish("hello *world*")
    assert im.finish("hello *world*") == Patch(len(im.segments), ())
    again = im.update("hello *world* and more")  # after finish, new text starts afresh
    assert again.reset and im.html == render_markdown("hello *world* and more")


# --------------------------------------------------------------------------------- random documents


@slow(250)
@given(text=markdown_documents(), sizes=st.lists(st.integers(1, 20), min_size=1, max_size=30))
def test_random_documents_stream_exactly(text: str, sizes: list[int]) -> None:
    im = stream(text, cuts_from_sizes(text, sizes), check_exact=True)
    assert im.html == render_markdown(text)


@slow(60)
@given(
    text=markdown_documents(),
    group=st.lists(st.integers(1, 4), min_size=1, max_size=10),
    urls=st.lists(
        st.sampled_from(["https://a.example/1", "http://b.example/2", "javascript:x", "ftp://c"]), max_size=4
    ),
)
def test_random_documents_with_citations_stream_exactly(text: str, group: list[int], urls: list[str]) -> None:
    im = stream(text, word_cuts(text, group), citations=urls, check_exact=True)
    assert im.html == render_markdown(text, urls)


_LINE_SOUP = [
    "[a]: /u",
    "[a]:",
    "/dest",
    "[a]",
    "'t'",
    '"t',
    't"',
    "(t",
    "t)",
    "",
    "> [b]: /v",
    "> [b]:",
    ">",
    "> - x",
    "- [a]: /w",
    "- [c]",
    "[b]",
    "   ```",
    "```",
    "~~~",
    "| x | y |",
    "|-|-|",
    "x | y",
    "para",
    "===",
    "---",
    "  - item",
    "1. x",
    "2) y",
    "    code",
    "[a",
    "b]: /w",
    "[a b]",
    "> > q",
    "  > q",
    "* * *",
    "# h",
    "<div>",
    "\t- t",
    "- ",
    "1.",
    "> | t |",
    "> |---|",
]


@slow(300)
@given(lines=st.lists(st.sampled_from(_LINE_SOUP), max_size=14), newline=st.booleans())
def test_line_soup_streamed_char_by_char(lines: list[str], newline: bool) -> None:
    """Lines that fight over where blocks end: lazy lines, definitions whose titles run on, ..."""
    text = "\n".join(lines) + ("\n" if newline else "")
    assert stream(text, range(1, len(text) + 1), check_exact=True).html == render_markdown(text)


def test_definition_title_running_on_inside_a_quote() -> None:
    """Found by the line soup: the quote takes in the lazy lines once the title closes."""
    text = '> [b]: /v\n"t\n[a]: /u\n"t'
    assert stream(text, range(1, len(text) + 1), check_exact=True).html == render_markdown(text)


@slow(300)
@given(
    markup=st.sampled_from(["```", "~~~", "````", "~~~~~"]),
    line=st.text(alphabet=" \t`~x", max_size=9),
)
def test_closing_fence_detection_agrees_with_markdown_it(markup: str, line: str) -> None:
    tokens = MarkdownIt("commonmark").parse(f"{markup}\n{line}\nafter\n")
    fence = tokens[0]
    assert fence.type == "fence" and fence.map is not None
    assert closes_fence(line, markup) == (fence.map[1] == 2)


# --------------------------------------------------------------------------------- citations


def test_citation_markers_link_to_their_sources() -> None:
    text = "Claim [1], another [2], out of range [3], zero [0], escaped \\[1], code `[1]`, link [t [1]](/x)."
    out = render_markdown(text, ['https://a.example/?q="x"&y=1', "javascript:alert(1)"])
    assert out.count(f'class="{CITATION_CLASS}"') == 1
    assert 'href="https://a.example/?q=&quot;x&quot;&amp;y=1"' in out
    assert "[2]" in out and "javascript" not in out  # the unsafe source stays a plain marker
    assert "<code>[1]</code>" in out
    assert render_markdown(text) == render_markdown(text, [])


def test_citations_in_code_fences_and_real_reference_links_are_left_alone() -> None:
    out = render_markdown(FIXTURE_TEXTS["citations"], ["https://s.example/1", "https://s.example/2"])
    assert '<pre><code class="language-text">[2] inside a fence\n</code></pre>' in out
    assert 'href="https://www.nasa.gov/webb"' in out  # the [1]: definition makes [NASA][1] a link
    assert out.count('href="https://s.example/2"') == 2


def test_changing_citations_mid_stream_rerenders_from_the_first_changed_marker() -> None:
    text = FIXTURE_TEXTS["tutorial_answer"] + "\nSources: see [2].\n\nThe end.\n"
    im = IncrementalMarkdown(["https://one.example"])
    im.update(text[: text.index("Sources:") + 20])
    committed = len(im.segments) - 1
    patch = im.set_citations(["https://one.example", "https://two.example"])
    assert patch.start >= committed - 1  # only the block with the [2] marker and the tail
    im.finish(text)
    assert im.html == render_markdown(text, ["https://one.example", "https://two.example"])
    assert im.set_citations(["https://one.example", "https://two.example"]) == Patch(len(im.segments), ())
    im.set_citations(None)
    assert im.html == render_markdown(text)


# --------------------------------------------------------------------------------- security


def test_there_are_at_least_30_payloads() -> None:
    assert len(PAYLOADS) >= 30


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payload_rendered_whole_has_no_executable_markup(payload: str) -> None:
    out = render_markdown(payload, ["javascript:alert(1)", "https://ok.example"])
    assert audit(out) == []
    assert "<script" not in out.lower()  # as text it is escaped: &lt;script


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payload_streamed_has_no_executable_markup_at_any_step(payload: str) -> None:
    text = f"Intro.\n\n{payload}\n\n```\n{payload}\n" + "\n".join(payload.splitlines()) + "\n```\n\n" + payload
    im = IncrementalMarkdown(["data:text/html,x", "https://ok.example"])
    for cut in cuts_from_sizes(text, [3]):
        im.update(text[:cut])
        for segment in im.segments:
            assert audit(segment) == [], (cut, segment)
    im.finish(text)
    assert audit(im.html) == []


def test_audit_catches_what_it_should() -> None:
    assert audit('<a href="javascript:x">') and audit("<img src=x onerror=y>") and audit("<svg>")
    assert audit('<a href=" JaVa\tScript:x">') and audit('<img src="data:image/png;base64,AA">')
    assert audit('<a href="https://x" target="_blank">')
    assert not audit('<a href="https://x" target="_blank" rel="noopener noreferrer">')
    assert audit('<math><mrow href="javascript:x"><mi>x</mi></mrow></math>')
    assert audit('<math><mrow style="color:red"></mrow></math>') and audit('<math><mi class="x">')
    assert audit("<math><maction actiontype='toggle'></maction></math>")
    assert audit("<math><annotation-xml encoding='text/html'><img></annotation-xml></math>")
    assert audit("<math><mtext><img src=x></mtext></math>") and audit("<math><mi>x</mi></math><svg>")
    assert not audit(render_markdown("$x$ \\[\\frac{1}{2}\\]"))


def test_links_open_in_a_new_tab_without_opener() -> None:
    out = render_markdown("[a](https://a.example) <https://b.example> [r]\n\n[r]: /rel")
    assert out.count('target="_blank" rel="noopener noreferrer"') == 3


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/a?b=c",
        "http://example.com",
        "/relative/path",
        "docs/x.md#h",
        "#frag",
        "mailto:a@b.c",
        "//cdn.example/x",
    ],
)
def test_allowed_links(url: str) -> None:
    assert "<a href=" in render_markdown(f"[x]({url})")


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "vbscript:x",
        "data:image/png;base64,AAAA",
        "data:text/html,x",
        "file:///etc",
        "ftp://x.example",
        "chrome://settings",
        "jav%61script:x",
    ],
)
def test_refused_links_and_images(url: str) -> None:
    out = render_markdown(f"[x]({url}) ![y]({url})")
    assert "<a " not in out and "<img" not in out


def test_code_fence_info_string_is_escaped_into_the_class() -> None:
    out = render_markdown('```"><script>alert(1)</script>\nx\n```')
    assert out.startswith('<pre><code class="language-&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;">')


def test_escape_html() -> None:
    assert (
        escape_html("<a href=\"x\" title='y'>&</a>")
        == "&lt;a href=&quot;x&quot; title=&#x27;y&#x27;&gt;&amp;&lt;/a&gt;"
    )


@pytest.mark.parametrize(
    "url,expected",
    [
        ("https://example.com/a b", None),
        ("  https://example.com/ok  ", "https://example.com/ok"),
        ("HTTP://EXAMPLE.COM", "HTTP://EXAMPLE.COM"),
        ("http://", None),
        ("https:example.com", None),
        ("javascript:alert(1)", None),
        ("java\tscript:alert(1)", None),
        ("data:text/html,x", None),
        ("/relative", None),
        ("//example.com/x", None),
        ("mailto:a@b.c", None),
        ("https://exa\nmple.com", None),
        ("https://[::1", None),
        (None, None),
        (42, None),
    ],
)
def test_safe_url(url: object, expected: Optional[str]) -> None:
    assert safe_url(url) == expected


# --------------------------------------------------------------------------------- highlighting


def test_code_is_highlighted_with_classes_and_unknown_languages_are_plain() -> None:
    out = render_markdown("```python\nimport os  # c\nx = 'a<b'\n```\n\n```nosuchlang\n<tag> & \"q\"\n```")
    assert '<span class="k">import</span>' in out and '<span class="c"># c</span>' in out
    assert '<span class="s">&#x27;a&lt;b&#x27;</span>' in out or "<span class=\"s\">'a&lt;b'</span>" in out
    assert "style=" not in out  # colours come from the stylesheet, not inline
    assert '<pre><code class="language-nosuchlang">&lt;tag&gt; &amp; &quot;q&quot;\n</code></pre>' in out


def test_stylesheet_follows_the_jupyterlab_theme_variables() -> None:
    for role in ("k", "s", "c", "m", "nf", "nb", "o"):
        assert f".sw-md pre .{role}{{" in PYGMENTS_CSS
    assert "var(--jp-mirror-editor-keyword-color," in PYGMENTS_CSS
    assert 'body[data-jp-theme-light="false"] .sw-md' in PYGMENTS_CSS
    assert f"pre.{CODE_CHUNK_CLASS}{{" in PYGMENTS_CSS
    spans = set(re.findall(r'<span class="([^"]+)"', render_markdown(FIXTURE_TEXTS["big_mixed"])))
    assert spans and all(f".sw-md pre .{cls}{{" in PYGMENTS_CSS for cls in spans)


def test_rendering_keeps_text_content() -> None:
    """Every visible character of the source survives (a sanity check on escaping)."""
    text = FIXTURE_TEXTS["unicode"]
    visible = html.unescape(re.sub(r"<[^>]+>", "", render_markdown(text)))
    for word in ("Größe", "今日は良い天気ですね。", "🚀", "Привет", "héllo wörld — 你好 🌍"):
        assert word in visible


@pytest.mark.parametrize("partial", ["`", "``", "  ``", "~~"])
def test_half_a_closing_fence_is_not_shown_while_streaming(partial):
    fence = "~~~" if partial.strip().startswith("~") else "```"
    md = IncrementalMarkdown()
    md.update(f"{fence}python\nx = 1\n")
    before = md.html
    md.update(f"{fence}python\nx = 1\n{partial}")
    assert md.html == before  # no stray backtick flashes in the code block
    md.update(f"{fence}python\nx = 1\n{partial}{'`' if fence == '```' else '~'}\n")
    text = f"{fence}python\nx = 1\n{fence}\n"
    md.finish(text)
    assert md.html == render_markdown(text)
