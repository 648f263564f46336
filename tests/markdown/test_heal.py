"""The healed live tail: a half-written last block never shows a stray marker or a false heading.

Fixtures (`markdown_fixtures/heal_*.md` and the math ones) are fed in random token sizes; in every
frame, the text a reader sees has no `**`, backtick, `~~`, `](` or raw math delimiter unless the
final render shows one too, and every heading is the start of a heading of the final render. The
end of the stream is the whole text's own render, except that a cut-off answer's dangling
markers stay out of view (and out of nothing else: the text is untouched).
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_cases import FIXTURE_TEXTS, cuts_from_sizes, slow
from test_math import visible
from widget_harness import Wire

from streamwidgets.core._events import Finish, ReasoningDelta, Terminator, TextDelta
from streamwidgets.core._state import StreamState
from streamwidgets.markdown import IncrementalMarkdown, render_markdown
from streamwidgets.markdown._heal import heal_text
from streamwidgets.widgets import StreamView
from streamwidgets.widgets._markdown_pane import MarkdownPane


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    """Widgets send to a recording kernel, as in the pane tests."""
    return Wire().install(monkeypatch)


HEAL_FIXTURES = sorted(name for name in FIXTURE_TEXTS if name.startswith(("heal_", "math_")))
ALSO = ["tutorial_answer", "tables", "setext_headings", "citations", "big_mixed"]
MARKERS = ("**", "`", "~~", "](", "$$", "\\(", "\\[")
_HEADING_RE = re.compile(r"<h([1-6])>(.*?)</h\1>", re.S)
_TAG_RE = re.compile(r"<[^>]*>")


def shown(html_text: str) -> str:
    return "".join(visible(html_text).text)


def headings(html_text: str) -> list[str]:
    return [" ".join(_TAG_RE.sub("", m.group(2)).split()) for m in _HEADING_RE.finditer(html_text)]


def check_frame(frame: str, final: str, where: str) -> None:
    final_text = shown(final)
    text = shown(frame)
    for marker in MARKERS:
        if marker not in final_text:
            assert marker not in text, f"{marker!r} in frame {where}: …{text[-80:]!r}"
    final_headings = headings(final)
    for heading in headings(frame):
        assert any(h.startswith(heading) for h in final_headings), f"heading {heading!r} at {where}"


def stream_healed(text: str, cuts: list[int]) -> IncrementalMarkdown:
    final = render_markdown(text)
    im = IncrementalMarkdown(heal=True)
    for cut in cuts:
        im.update(text[:cut])
        check_frame(im.html, final, f"{cut}/{len(text)} after {text[max(0, cut - 25) : cut]!r}")
    im.finish(text)
    assert im.html == final
    return im


def test_the_healing_fixtures_cover_every_construct() -> None:
    text = FIXTURE_TEXTS["heal_inline"] + FIXTURE_TEXTS["heal_blocks"]
    for construct in ("**", "*i", "_u", "~~", "`", "``", "](", "![", "<https", "<span", "\n====", "\n----", "|---"):
        assert construct in text, construct
    assert "\\(" in text and "$$" in text and "\\[" in text
    assert "\n- first" in text  # a list right under a line: its `-` must not flash a heading


@pytest.mark.parametrize("name", HEAL_FIXTURES)
@slow(15)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=40))
def test_random_token_sizes_show_no_stray_markers(name: str, sizes: list[int]) -> None:
    text = FIXTURE_TEXTS[name]
    stream_healed(text, cuts_from_sizes(text, sizes))


@pytest.mark.parametrize("name", HEAL_FIXTURES)
def test_every_character_boundary_shows_no_stray_markers(name: str) -> None:
    text = FIXTURE_TEXTS[name]
    stream_healed(text, list(range(1, len(text) + 1)))


@pytest.mark.parametrize("name", ALSO)
def test_other_fixtures_in_random_tokens(name: str) -> None:
    text = FIXTURE_TEXTS[name]
    rng = random.Random(name)
    stream_healed(text, cuts_from_sizes(text, [rng.randint(1, 9) for _ in range(200)]))


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ("a **bold", "a **bold"),  # the renderer closes it: shown bold
        ("a **", "a "),
        ("a **bold*", "a **bold"),  # half a closer
        ("`code", "`code`"),
        ("`", ""),
        ("``a`", "``a` ``"),
        ("see [the docs](https://exa", "see the docs"),
        ("see [the do", "see the do"),
        ("see [the docs]", "see the docs"),
        ("cited [1", "cited "),
        ("an ![ima", "an "),
        ("an ![image](https://x", "an "),
        ("a <span cla", "a "),
        ("<https://example.co", ""),
        ("x < y", "x < y"),
        ("\\(e^{i", "\\(e^{i\\)"),
        ("$$\\int", "$$\\int$$"),
        ("\\[x\\", "\\[x\\]"),
        ("$$x$", "$$x$$"),
        ("done \\(", "done "),
        ("costs $", "costs "),
        ("costs $5", "costs $5"),
        ("a \\", "a "),
        ("`a **b` c", "`a **b` c"),
        ("$$a`b", "$$a`b`"),  # no formula holds a backtick: the code span is what is open
    ],
)
def test_heal_text(tail: str, expected: str) -> None:
    assert heal_text(tail)[0] == expected


def test_open_emphasis_is_closed_or_dropped() -> None:
    im = IncrementalMarkdown(heal=True)
    im.update("Some **bold and *both")
    assert im.html == "<p>Some <strong>bold and <em>both</em></strong></p>\n"
    im.update("Some **bold and *both* ~~gone")
    assert "<s>gone</s></strong>" in im.html
    im.update("Some **bold and *both* ~~gone~~ **")
    assert "**" not in shown(im.html)


def test_a_block_ended_by_a_blank_line_is_shown_as_it_will_stay() -> None:
    im = IncrementalMarkdown(heal=True)
    im.update("a **b\n")
    assert im.html == "<p>a <strong>b</strong></p>\n"  # the paragraph may still go on
    im.update("a **b\n\n")
    assert im.html == render_markdown("a **b")  # it has ended: its ** is text for good


def test_a_line_over_a_half_typed_underline_stays_a_paragraph() -> None:
    im = IncrementalMarkdown(heal=True)
    for text in ("Intro line\n-", "Intro line\n--", "Intro line\n="):
        im.update(text)
        assert im.html == "<p>Intro line</p>\n", text
    im.update("Intro line\n- item")
    assert "<h" not in im.html and "<li>item</li>" in im.html
    im.finish("Intro line\n---\n")
    assert im.html == "<h2>Intro line</h2>\n"


def test_a_half_received_table_row_and_a_header_without_delimiters_wait() -> None:
    im = IncrementalMarkdown(heal=True)
    im.update("Intro\n\n| a | b |")
    assert "|" not in shown(im.html)
    im.update("Intro\n\n| a | b |\n|--")
    assert "|" not in shown(im.html)
    im.update("Intro\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3")
    assert "<td>1</td>" in im.html and "3" not in shown(im.html)


def test_an_empty_heading_being_typed_is_not_shown() -> None:
    im = IncrementalMarkdown(heal=True)
    im.update("Text\n\n#")
    assert "<h1>" not in im.html


def test_a_cut_off_answer_drops_its_dangling_markers_from_the_view_only(wire: Wire) -> None:
    text = "A complete paragraph.\n\nThen **bold and `code and [a link](https://exa"
    pane = MarkdownPane()
    pane.update(text)
    pane.finish(text, cut_off=True)
    seen = shown(pane.html)
    assert not any(marker in seen for marker in ("**", "`", "](", "["))
    assert "<p>A complete paragraph.</p>" in pane.html
    assert pane.text == text  # the text is untouched
    pane.finish(text)  # the same text as a complete answer: its own render
    assert pane.html == render_markdown(text)


def test_a_cut_off_answer_ending_in_a_fence_or_a_complete_block_is_its_own_render(wire: Wire) -> None:
    for text in ("Intro\n\n```python\nprint(1)\n", "Intro **bold**.\n"):
        pane = MarkdownPane()
        pane.update(text[:-3])
        pane.finish(text, cut_off=True)
        assert shown(pane.html) == shown(render_markdown(text)), text


def test_a_pane_without_healing_shows_the_render_of_the_text_so_far(wire: Wire) -> None:
    pane = MarkdownPane(heal=False)
    pane.update("a **b")
    assert pane.html == render_markdown("a **b")


@pytest.mark.parametrize("ending", ["cancelled", "cut", "complete"])
def test_the_view_hides_a_cut_off_answers_dangling_markers(wire: Wire, ending: str) -> None:
    """Notebook 03's cut-off answer used to end on a stray `**`: the view finishes a stream that
    stopped short with its last block healed, and a complete one with its exact render."""
    text = "First paragraph.\n\nThen **bold and `code"
    state = StreamState(model="m")
    view = StreamView(state, api="chat")
    view.on_cancel(lambda: None)
    view.on_continue(lambda: None)
    state.begin(0.0)
    state.apply(TextDelta(text), 0.5)
    view.refresh(0.5)
    if ending == "complete":
        state.apply(Finish("stop"), 0.6)
        state.apply(Terminator(), 0.7)
    state.close(cancelled=ending == "cancelled", now=1.0)  # "cut": no terminator came
    view.refresh(1.0)
    assert state.done and state.text == text
    html_text = view.answer.html
    if ending == "complete":
        assert not state.can_continue and html_text == render_markdown(text)
    else:
        assert state.can_continue
        assert "**" not in shown(html_text) and "`" not in shown(html_text)
        assert "<strong>bold and <code>code</code></strong>" in html_text


@pytest.mark.parametrize("ending", ["cut", "answered"])
def test_reasoning_cut_off_while_thinking_hides_its_dangling_markers(wire: Wire, ending: str) -> None:
    """A stream that ends while the model still thinks leaves the reasoning as all there is to
    read: it is finished healed, as a cut-off answer is; reasoning that an answer followed is
    finished exactly."""
    thought = "First I recall the rule.\n\nThen **the key step and `x"
    state = StreamState(model="m")
    view = StreamView(state, api="chat")
    view.on_continue(lambda: None)
    state.begin(0.0)
    state.apply(ReasoningDelta(thought), 0.5)
    view.refresh(0.5)
    if ending == "answered":
        state.apply(TextDelta("The answer."), 0.6)
    state.close(now=1.0)  # no terminator came: cut off
    view.refresh(1.0)
    assert view.reasoning is not None and state.reasoning == thought
    html_text = view.reasoning.markdown.html
    if ending == "cut":
        assert "**" not in shown(html_text) and "`" not in shown(html_text)
    else:
        assert html_text == render_markdown(thought)
