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
from html.parser import HTMLParser
from pathlib import Path
from typing import Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from xss_payloads import PAYLOADS

import streamwidgets.markdown as markdown_module
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

FIXTURES = sorted((Path(__file__).parent / "markdown_fixtures").glob("*.md"))
FIXTURE_TEXTS = {path.stem: path.read_text(encoding="utf-8") for path in FIXTURES}
WORDS_RE = re.compile(r"\s*\S+|\s+")


def slow(examples: int) -> settings:
    """Rendering is slow next to what hypothesis expects of a test, and machines are shared."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --------------------------------------------------------------------------------- helpers


def stream(
    text: str,
    cuts: Sequence[int],
    *,
    citations: Optional[Sequence[str]] = None,
    check_exact: bool = False,
) -> IncrementalMarkdown:
    """Feed `text` in pieces ending at `cuts`, checking the patches (and, if asked, each render)."""
    im = IncrementalMarkdown(citations)
    mirror = list(im.segments)
    for cut in cuts:
        prefix = text[:cut]
        im.update(prefix).apply(mirror)
        assert mirror == list(im.segments)
        if check_exact and im.exact:
            assert im.html == render_markdown(prefix, citations), f"after {cut} of {len(text)} chars"
    im.finish(text).apply(mirror)
    assert mirror == list(im.segments)
    return im


def cuts_from_sizes(text: str, sizes: Sequence[int]) -> list[int]:
    cuts, position, i = [], 0, 0
    while position < len(text):
        position = min(len(text), position + sizes[i % len(sizes)])
        cuts.append(position)
        i += 1
    return cuts


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


def test_a_long_code_fence_is_not_rerendered_quadratically(monkeypatch: pytest.MonkeyPatch) -> None:
    highlighted = []
    real = markdown_module._highlight

    def counting(code: str, lang: str, attrs: str) -> str:
        highlighted.append(len(code))
        return real(code, lang, attrs)

    monkeypatch.setattr(markdown_module, "_highlight", counting)
    code = "".join(f"def function_{i}(x):  # line {i}\n    return x * {i}\n" for i in range(1000))
    text = "Intro.\n\n```python\n" + code + "```\n\nAfter.\n"
    im = IncrementalMarkdown()
    tokens = WORDS_RE.findall(text)
    position, saw_chunks, patch_bytes = 0, False, 0
    for i in range(0, len(tokens), 50):
        position += sum(len(t) for t in tokens[i : i + 50])
        patch = im.update(text[:position])
        patch_bytes += sum(len(s) for s in patch.segments)
        saw_chunks = saw_chunks or any(CODE_CHUNK_CLASS in s for s in im.segments)
    im.finish(text)
    work = sum(highlighted)
    assert saw_chunks
    assert im.html == render_markdown(text)
    assert CODE_CHUNK_CLASS not in im.html
    # chunks once, the consolidation once, small partial lines: linear, not quadratic
    assert work < 2.5 * len(code)
    assert patch_bytes < 3 * len(im.html)


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

_INLINE = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "alpha",
                "beta",
                "x",
                "foo",
                "[foo]",
                "[Foo][]",
                "[l](/u)",
                "`c`",
                "*e*",
                "**s**",
                "_u_",
                "~~d~~",
                "a*b",
                "<b>",
                "&amp;",
                "\\*",
                "[1]",
                "[2]",
                "ü",
                "日本",
                "<http://a.b>",
                "![i](/p.png)",
                "[x][bar]",
            ]
        ),
        st.text(alphabet="*_`[]()#>-|!\\~<:&=+.1 ", min_size=1, max_size=4),
    ),
    min_size=1,
    max_size=7,
).map(" ".join)


@st.composite
def _paragraph(draw: st.DrawFn) -> str:
    return "\n".join(draw(st.lists(_INLINE, min_size=1, max_size=3)))


@st.composite
def _heading(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return "#" * draw(st.integers(1, 7)) + " " + draw(_INLINE)
    return draw(_INLINE) + "\n" + draw(st.sampled_from(["=", "-"])) * draw(st.integers(1, 4))


@st.composite
def _list(draw: st.DrawFn) -> str:
    marker = draw(st.sampled_from(["-", "*", "+", "1.", "2)", "10."]))
    lines = []
    for i in range(draw(st.integers(1, 5))):
        indent = " " * draw(st.sampled_from([0, 0, 2, 3, 4]))
        mark = marker if not marker[0].isdigit() else f"{i + 1}{marker[-1]}"
        task = draw(st.sampled_from(["", "", "[ ] ", "[x] "]))
        lines.append(f"{indent}{mark} {task}{draw(_INLINE)}")
        if draw(st.integers(0, 4)) == 0:
            lines.append(draw(st.sampled_from(["", "  "])) + draw(_INLINE))  # lazy or continued
        if draw(st.integers(0, 4)) == 0:
            lines.append("")  # makes the list loose
    return "\n".join(lines)


@st.composite
def _fence(draw: st.DrawFn) -> str:
    char = draw(st.sampled_from(["`", "~"]))
    size = draw(st.integers(3, 5))
    indent = " " * draw(st.integers(0, 3))
    info = draw(st.sampled_from(["", "python", "js", "nosuchlang", "py {x}", '"><x>']))
    body = draw(st.lists(st.sampled_from(["x = 1", "  y()", "", "```", "~~~", "# c", "'''s", "<b>"]), max_size=5))
    out = [indent + char * size + info, *body]
    closing = draw(st.sampled_from(["same", "longer", "shorter", "none"]))
    if closing != "none":
        length = {"same": size, "longer": size + 1, "shorter": size - 1}[closing]
        out.append(" " * draw(st.integers(0, 3)) + char * length)
    return "\n".join(out)


@st.composite
def _table(draw: st.DrawFn) -> str:
    cols = draw(st.integers(1, 3))
    rows = [
        "| " + " | ".join(draw(st.sampled_from(["a", "b c", "`|`", "\\|", "*e*", ""])) for _ in range(cols)) + " |"
        for _ in range(draw(st.integers(1, 4)))
    ]
    delimiter = (
        "|"
        + "|".join(
            draw(st.sampled_from(["---", ":-", "-:", ":-:"]))
            for _ in range(draw(st.sampled_from([cols, cols, cols + 1])))
        )
        + "|"
    )
    return "\n".join([rows[0], delimiter, *rows[1:]])


@st.composite
def _quote(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        prefix = draw(st.sampled_from(["> ", ">", "> > ", ""]))
        lines.append(prefix + draw(_INLINE))
    return "\n".join(lines)


@st.composite
def _refdef(draw: st.DrawFn) -> str:
    label = draw(st.sampled_from(["foo", "Foo", "bar", "l", "1", "x"]))
    url = draw(st.sampled_from(["/u", "https://e.com/a", "<https://e.com/b c>", "javascript:x", "data:,x"]))
    title = draw(st.sampled_from(["", ' "t"', " 't'", " (t)", ' "multi\nline"', " 'open"]))
    return f"[{label}]: {url}{title}"


_BLOCK = st.one_of(
    _paragraph(),
    _heading(),
    _list(),
    _fence(),
    _table(),
    _quote(),
    _refdef(),
    st.sampled_from(["---", "***", "- - -", "    indented code", "<div>\nraw html\n</div>", "", ">", "-", "1."]),
    st.text(alphabet="*_`[]()#>-|=~:!\\ 1.\t", max_size=10),
)


@st.composite
def markdown_documents(draw: st.DrawFn) -> str:
    blocks = draw(st.lists(_BLOCK, min_size=1, max_size=8))
    separators = draw(st.lists(st.sampled_from(["\n", "\n\n", "\n\n\n"]), min_size=len(blocks), max_size=len(blocks)))
    return "".join(b + s for b, s in zip(blocks, separators, strict=True))[: -1 if draw(st.booleans()) else None]


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
    assert markdown_module._closes_fence(line, markup) == (fence.map[1] == 2)


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


_SAFE_SCHEMES = {"http", "https", "mailto"}
_FORBIDDEN_TAGS = {
    "script",
    "iframe",
    "object",
    "embed",
    "svg",
    "style",
    "form",
    "base",
    "meta",
    "link",
    "frame",
    "frameset",
    "applet",
    "template",
    "noscript",
    "textarea",
    "select",
    "button",
}
_URL_ATTRIBUTES = {
    "href",
    "src",
    "action",
    "formaction",
    "srcset",
    "xlink:href",
    "data",
    "poster",
    "background",
    "cite",
}
_ALLOWED_ATTRIBUTES = {
    "href",
    "src",
    "alt",
    "title",
    "class",
    "style",
    "target",
    "rel",
    "type",
    "disabled",
    "checked",
    "start",
}


# Inside <math>: layout MathML only (no maction, no annotation-xml, no href, style or class), and
# the TeX annotation. Typeset math comes from the kernel; anything else there is a finding.
_MATHML_TAGS = set(
    [
        "math",
        "semantics",
        "annotation",
        "mrow",
        "mi",
        "mn",
        "mo",
        "ms",
        "mtext",
        "mspace",
        "msub",
        "msup",
        "msubsup",
        "mfrac",
        "msqrt",
        "mroot",
        "mstyle",
        "mtable",
        "mtr",
        "mtd",
        "mover",
        "munder",
        "munderover",
        "mpadded",
        "mphantom",
        "menclose",
        "merror",
        "mmultiscripts",
        "mprescripts",
        "none",
    ]
)
_MATHML_ATTRIBUTES = set(
    [
        "xmlns",
        "display",
        "alttext",
        "encoding",
        "mathvariant",
        "displaystyle",
        "scriptlevel",
        "stretchy",
        "fence",
        "separator",
        "lspace",
        "rspace",
        "minsize",
        "maxsize",
        "movablelimits",
        "accent",
        "accentunder",
        "width",
        "height",
        "depth",
        "linethickness",
        "rowspacing",
        "columnspacing",
        "columnalign",
        "rowalign",
        "columnlines",
        "rowlines",
        "frame",
        "framespacing",
        "notation",
        "symmetric",
        "largeop",
        "form",
        "mathcolor",
        "mathsize",
        "voffset",
        "align",
    ]
)


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.math = 0

    def handle_endtag(self, tag: str) -> None:
        if tag == "math" and self.math:
            self.math -= 1

    def _check_math(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        if tag not in _MATHML_TAGS:
            self.problems.append(f"<{tag}> inside <math>")
        for name, value in attrs:
            if name not in _MATHML_ATTRIBUTES:
                self.problems.append(f"{name}= on <{tag}> inside <math>")
            elif name == "encoding" and value != "application/x-tex":
                self.problems.append(f"encoding={value!r}")
            elif name == "xmlns" and value != "http://www.w3.org/1998/Math/MathML":
                self.problems.append(f"xmlns={value!r}")
            elif name != "alttext" and re.search(r"javascript|url\(|expression|[<>\"']", value or "", re.I):
                self.problems.append(f"{name}={value!r} on <{tag}>")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        if tag == "math":
            self.math += 1
        if self.math:
            self._check_math(tag, attrs)
            return
        if tag in _FORBIDDEN_TAGS:
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.problems.append(f"{name}= on <{tag}>")
            if name not in _ALLOWED_ATTRIBUTES:
                self.problems.append(f"unexpected attribute {name} on <{tag}>")
            if name in _URL_ATTRIBUTES:
                bare = re.sub(r"[\x00-\x20\x7f]", "", value).lower()
                scheme = re.match(r"([^:/?#]*):", bare)
                if scheme and scheme.group(1) not in _SAFE_SCHEMES:
                    self.problems.append(f"{name}={value!r} on <{tag}>")
            if name == "style" and not re.fullmatch(r"text-align:(left|right|center)", value):
                self.problems.append(f"style={value!r}")
            if name == "target" and value == "_blank":
                rel = dict(attrs).get("rel") or ""
                if "noopener" not in rel:
                    self.problems.append("target=_blank without rel=noopener")

    handle_startendtag = handle_starttag


def audit(markup: str) -> list[str]:
    """What in `markup` could run script or leak the opener: empty means safe."""
    auditor = _Audit()
    auditor.feed(markup)
    auditor.close()
    return auditor.problems


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
