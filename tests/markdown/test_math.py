"""Math in answers: TeX becomes sanitized MathML in the kernel, safely and incrementally.

The math fixtures in `markdown_fixtures/` (`math_*.md`) also run through every exactness test of
`test_markdown.py`; here: what the math looks like, where it is not math, that a formula split at
any point streams to the same render, that no frame shows the raw delimiter of a formula that
later closes, that hostile TeX stays inert, and that a pathological formula falls back to text.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Optional

import pytest
from html_audit import audit
from hypothesis import given
from hypothesis import strategies as st
from markdown_cases import FIXTURE_TEXTS, cuts_from_sizes, slow, stream
from widget_harness import widget_strings

from streamwidgets.core._events import ReasoningDelta, TextDelta
from streamwidgets.core._state import StreamState
from streamwidgets.markdown import IncrementalMarkdown, render_markdown
from streamwidgets.markdown._math import MATH_CLASS, MAX_DEPTH, MAX_TEX, TEX_CLASS, render_tex
from streamwidgets.widgets import StreamView

MATH_FIXTURES = sorted(name for name in FIXTURE_TEXTS if name.startswith("math_"))
# Fixtures where every formula closes: no frame may show a raw opening delimiter.
CLOSING = ["math_inline", "math_display", "math_environments"]


class _Visible(HTMLParser):
    """The text a reader sees: not code, not the TeX annotation kept for copy; TeX shown as
    text (an open or unconvertible formula) is collected apart."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tex: list[str] = []
        self.maths = 0
        self._skip = 0
        self._tex = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag in ("code", "pre", "annotation"):
            self._skip += 1
        if tag == "math":
            self.maths += 1
        if tag == "span":
            self._tex = self._tex + 1 if (TEX_CLASS in classes or self._tex) else 0

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre", "annotation"):
            self._skip -= 1
        if tag == "span" and self._tex:
            self._tex -= 1

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        (self.tex if self._tex else self.text).append(data)


def visible(html_text: str) -> _Visible:
    parser = _Visible()
    parser.feed(html_text)
    parser.close()
    return parser


# --------------------------------------------------------------------------------- what it renders


def test_the_four_delimiters_become_mathml_with_their_tex_kept() -> None:
    out = render_markdown("Area $$\\int_0^1 x^2\\,dx = \\tfrac13$$ and \\(e^{i\\pi}+1=0\\), $a^2$, \\[b\\].")
    assert out.count("<math ") == 4
    assert out.count('display="block"') == 2 and out.count('display="inline"') == 2
    assert 'alttext="\\int_0^1 x^2\\,dx = \\tfrac13"' in out  # the backslashes survive
    assert 'alttext="e^{i\\pi}+1=0"' in out
    assert "$" not in visible(out).text[0] + "".join(visible(out).text)
    assert "\\(" not in "".join(visible(out).text) and "\\[" not in "".join(visible(out).text)


def test_display_math_on_its_own_lines_is_a_centred_scrolling_box() -> None:
    for text in ("$$\nx^2\n$$\n", "\\[\nx^2\n\\]\n", "$$x^2$$\n"):
        out = render_markdown(text)
        assert out.startswith(f'<span class="{MATH_CLASS}"><math ') and 'display="block"' in out, text
        assert "<p>" not in out


def test_environments_are_converted_whole() -> None:
    out = render_markdown(FIXTURE_TEXTS["math_environments"])
    assert out.count("<mtable") >= 3  # align, pmatrix, cases
    assert "\\begin{align}" in out and "<math" in out
    assert TEX_CLASS not in out


def test_prices_escaped_dollars_and_code_are_not_math() -> None:
    out = render_markdown(FIXTURE_TEXTS["math_prices_code"])
    seen = visible(out)
    assert "it costs $5 and $10, or $5-$10 with tax" in "".join(seen.text)
    assert "$x$ is not math" in "".join(seen.text)
    # Exactly the three formulas outside code: $x$, $$1 + 1 = 2$$ and the table's $x^2$.
    assert seen.maths == 3
    assert "<code>$x$</code>" in out and "<code>\\(z\\)</code>" in out
    assert "$indented$ \\(code\\)" in out


@pytest.mark.parametrize(
    "text",
    ["it costs $5 and $10", "$ 5 $", "a $x $ b", "$x$5", "\\$x\\$", "`$x$`", "    $x$", "```\n$$x$$\n```"],
)
def test_pandoc_rule_and_code_keep_these_as_text(text: str) -> None:
    assert "<math" not in render_markdown(text)


@pytest.mark.parametrize("text", ["$x$", "$x$.", "($x$)", "$x^2$, $y$", "**$x$**", "- $x$", "> $x$"])
def test_these_are_math(text: str) -> None:
    assert "<math" in render_markdown(text)


def test_backslashes_inside_math_are_not_eaten_by_markdown_escapes() -> None:
    out = render_markdown("\\(a\\,b\\;c\\!d\\{e\\}\\)")
    assert 'alttext="a\\,b\\;c\\!d\\{e\\}"' in out


def test_a_formula_the_converter_refuses_shows_its_tex_in_the_math_style() -> None:
    out = render_markdown(FIXTURE_TEXTS["math_broken"])
    seen = visible(out)
    assert "\\frac{1}{" in "".join(seen.tex)
    assert "never closed" in "".join(seen.tex)  # open at the end of the text
    assert "<math" not in out


def test_a_finished_formula_is_converted_once() -> None:
    tex = "\\oint_C \\mathbf{F}\\cdot d\\mathbf{r} = 42"
    render_tex.cache_clear()
    text = f"Before \\({tex}\\) after, and more words"
    im = IncrementalMarkdown(heal=True)
    for cut in range(text.index("\\)") + 2, len(text) + 1):
        im.update(text[:cut])
    info = render_tex.cache_info()
    assert info.misses == 1 + 0 and info.hits >= len(text) - text.index("\\)") - 3


# --------------------------------------------------------------------------------- streaming


@pytest.mark.parametrize("name", MATH_FIXTURES)
def test_math_split_at_every_boundary_streams_to_the_whole_render(name: str) -> None:
    text = FIXTURE_TEXTS[name]
    whole = render_markdown(text)
    for cut in range(1, len(text)):
        im = IncrementalMarkdown()
        im.update(text[:cut])
        im.finish(text)
        assert im.html == whole, cut
        healed = IncrementalMarkdown(heal=True)
        healed.update(text[:cut])
        healed.finish(text)
        assert healed.html == whole, cut


@pytest.mark.parametrize("name", MATH_FIXTURES)
@pytest.mark.parametrize("sizes", [[1], [2, 5, 3], [7, 1, 13]])
def test_math_fixtures_stream_exactly(name: str, sizes: list[int]) -> None:
    text = FIXTURE_TEXTS[name]
    assert stream(text, cuts_from_sizes(text, sizes), check_exact=True).html == render_markdown(text)


@pytest.mark.parametrize("name", CLOSING)
def test_no_frame_shows_the_raw_delimiter_of_a_formula_that_later_closes(name: str) -> None:
    text = FIXTURE_TEXTS[name]
    im = IncrementalMarkdown(heal=True)
    for cut in range(1, len(text) + 1):
        im.update(text[:cut])
        shown = "".join(visible(im.html).text)
        for delimiter in ("$$", "\\(", "\\[", "\\)", "\\]"):
            assert delimiter not in shown, (cut, text[:cut][-30:], shown[-60:])
    im.finish(text)
    assert im.html == render_markdown(text)


def test_an_open_formula_shows_its_tex_then_swaps_once() -> None:
    text = "Euler: \\(e^{i\\pi}+1=0\\) done"
    im = IncrementalMarkdown(heal=True)
    kinds = []
    for cut in range(1, len(text) + 1):
        im.update(text[:cut])
        seen = visible(im.html)
        kind = "math" if seen.maths else "tex" if seen.tex and "".join(seen.tex).strip() else "none"
        if not kinds or kinds[-1] != kind:
            kinds.append(kind)
    assert kinds == ["none", "tex", "math"]


# --------------------------------------------------------------------------------- safety

LATEX_ATTACKS = [
    "\\href{javascript:alert(1)}{x}",
    "\\style{background:url(javascript:alert(1))}{x}",
    "\\class{jp-Dialog}{x}",
    "\\unicode{x3c}script\\unicode{x3e}",
    "\\text{<script>alert(1)</script>}",
    "\\text{<img src=x onerror=alert(1)>}",
    '\\mathrm{"><img src=x onerror=alert(1)>}',
    "\\color{red;background:url(javascript:alert(1))}x",
    '\\operatorname{x" onload="alert(1)}',
    "\\toggle{a}{b}\\endtoggle",
    "\\tag{<b>1</b>} x",
]


@pytest.mark.parametrize("tex", LATEX_ATTACKS)
@pytest.mark.parametrize("form", ["${}$", "$${}$$", "\\({}\\)", "\\[{}\\]", "$$\n{}\n$$"])
def test_hostile_tex_gives_only_inert_mathml(tex: str, form: str) -> None:
    out = render_markdown(form.replace("{}", tex))
    assert audit(out) == [], out


def test_sanitizer_drops_what_the_converter_lets_through() -> None:
    out = render_tex("\\href{https://evil.example}{x} \\style{color:red}{y} \\class{z}{w}")
    markup = re.sub(r'alttext="[^"]*"|<annotation[^>]*>[^<]*</annotation>', "", out)  # the TeX, as text
    assert "href" not in markup and "style" not in markup and "class" not in markup
    assert "<mi>x</mi>" in out and "<mi>y</mi>" in out  # the formula itself still reads
    assert "<script" not in render_tex("\\text{<script>alert(1)</script>}").lower()


def test_pathological_formulas_fall_back_to_text() -> None:
    huge = "x+" * 50_000  # 100 kB of TeX
    deep = "{" * (MAX_DEPTH + 5) + "x" + "}" * (MAX_DEPTH + 5)
    lefts = "\\left(" * (MAX_DEPTH + 1) + "x" + "\\right)" * (MAX_DEPTH + 1)
    for tex in (huge, deep, lefts):
        out = render_tex(tex)
        assert out.startswith(f'<span class="{TEX_CLASS}">') and "<math" not in out
    assert len(huge) > MAX_TEX
    assert "<math" in render_tex("{" * (MAX_DEPTH - 1) + "x" + "}" * (MAX_DEPTH - 1))
    out = render_markdown(f"big: ${huge}$")
    assert TEX_CLASS in out


def test_math_audit_catches_what_it_should() -> None:
    assert audit('<math><mrow href="javascript:x"><mi>x</mi></mrow></math>')
    assert audit('<math><mrow style="color:red"></mrow></math>')
    assert audit("<math><maction actiontype='toggle'></maction></math>")
    assert audit("<math><annotation-xml encoding='text/html'><img></annotation-xml></math>")
    assert not audit(render_markdown(FIXTURE_TEXTS["math_display"]))


def test_the_fixtures_render_only_layout_mathml() -> None:
    for name in MATH_FIXTURES:
        assert audit(render_markdown(FIXTURE_TEXTS[name])) == [], name


def test_fixture_files_exist() -> None:
    assert len(MATH_FIXTURES) >= 5
    assert all((Path(__file__).parent / "markdown_fixtures" / f"{name}.md").exists() for name in MATH_FIXTURES)


# --------------------------------------------------------------------------------- random documents

_PIECES = [
    "$x$",
    "$",
    "$$",
    "\\(",
    "\\)",
    "\\[",
    "\\]",
    "\\begin{align}",
    "\\end{align}",
    "a^2",
    " ",
    "\n",
    "\n\n",
    "\n$$\n",
    "\n\\[\n",
    "\n\\]\n",
    "`",
    "- ",
    "> ",
    "# ",
    "|",
    "**",
    "5",
    "\\",
    "text",
    "&",
    "<b>",
]


@slow(60)
@given(
    pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=40),
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=20),
    heal=st.booleans(),
)
def test_random_math_documents_stream_to_their_whole_render(pieces: list[str], sizes: list[int], heal: bool) -> None:
    text = "".join(pieces)
    whole = render_markdown(text)
    im = IncrementalMarkdown(heal=heal)
    for cut in cuts_from_sizes(text, sizes):
        im.update(text[:cut])
        assert audit(im.html) == []
        if not heal and im.exact:
            assert im.html == render_markdown(text[:cut])
    im.finish(text)
    assert im.html == whole


@pytest.mark.parametrize("tex", LATEX_ATTACKS)
def test_hostile_tex_through_the_answer_and_reasoning_panes(tex: str) -> None:
    """Streamed a few characters at a time into a view's answer and reasoning: every HTML value
    the widgets hold, at every frame, passes the strict audit (layout MathML only)."""
    text = f"Intro ${tex}$ and \\({tex}\\).\n\n$$\n{tex}\n$$\n\n- \\[{tex}\\]\n"
    state = StreamState(model="m")
    view = StreamView(state, api="chat")
    state.begin(0.0)
    for i in range(0, len(text), 3):
        state.apply(ReasoningDelta(text[i : i + 3]), 0.1)
        view.refresh(0.1)
    for i in range(0, len(text), 3):
        state.apply(TextDelta(text[i : i + 3]), 0.2)
        view.refresh(0.2)
        for html_text in _html_values(view):
            assert audit(html_text) == [], html_text
    state.close(now=1.0)
    view.refresh(1.0)
    assert view.answer.html == render_markdown(text)
    assert "<math" in view.answer.html or TEX_CLASS in view.answer.html
    for html_text in _html_values(view):
        assert audit(html_text) == [], html_text


def _html_values(view: StreamView) -> list[str]:
    """The HTML the answer and reasoning panes hold (the markdown panes of the view)."""
    assert view.reasoning is not None
    panes = (view.answer.widget, view.reasoning.markdown.widget)
    return [node.value for pane in panes for node, name, _ in widget_strings(pane) if name == "value"]
