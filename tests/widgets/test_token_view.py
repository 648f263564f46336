"""The token view, checked on real widget state: tints by probability with words beside them,
labels that name the alternatives, escaped model tokens, and bytes that stay flat as the answer
grows (sealed widgets are never sent again)."""

from __future__ import annotations

import html
import math
import re

import pytest
from widget_harness import markup_problems, widget_strings
from xss_payloads import PAYLOADS

import streamwidgets as sw
from streamwidgets.core import StreamState, Token, TokenLogprobs
from streamwidgets.core._events import Started, Terminator, TextDelta
from streamwidgets.widgets._fallback import final_bundle
from streamwidgets.widgets._sync import Parts
from streamwidgets.widgets._tokens import (
    BUCKETS,
    DARK_TINTS,
    LIGHT_TINTS,
    TINT_TEXT,
    TOKENS_CSS,
    TokenPane,
    token_html,
)
from streamwidgets.widgets._view import StreamView

FAST = {"tokens_per_second": 0, "first_token_delay": 0}
TAG = re.compile(r'<(span|mark) class="sw-t( sw-p\d+)?"[^>]*>(.*?)</\1>', re.S)


def luminance(hex_colour: str) -> float:
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(hex_colour[i : i + 2], 16) / 255) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def flow_html(pane: TokenPane) -> str:
    return "".join(child.value for page in pane.flow.children for child in page.children)


def shown_text(markup: str) -> str:
    return html.unescape("".join(m.group(3) for m in TAG.finditer(markup)))


@pytest.fixture(scope="module")
def demo_view(demo_server):
    state = sw.run("What is a closure in Python?", provider="demo", logprobs=5, demo=FAST)
    view = StreamView(state)
    view.refresh(final=True)
    return view


def test_the_view_shows_every_token_of_the_answer_labelled_simulated(demo_view):
    pane = demo_view.tokens
    assert pane is not None and pane.widget in demo_view.widget.children
    assert shown_text(flow_html(pane)) == demo_view.state.text == "".join(t.text for t in pane.tokens)
    assert "simulated by the scripted demo" in pane.heading.value
    assert f"{len(pane.tokens):,} tokens" in pane.heading.value


def test_each_token_is_tinted_by_its_bucket_and_says_its_probability_in_words(demo_view):
    tokens = demo_view.tokens.tokens
    marks = list(TAG.finditer(flow_html(demo_view.tokens)))
    assert len(marks) == len(tokens)
    tinted = 0
    for match, token in zip(marks, tokens, strict=True):
        element = match.group(0)
        expected = next(name for low, name, _ in BUCKETS if token.probability >= low)
        if expected == "sw-p90":
            assert match.group(1) == "span" and match.group(2) is None and 'title="' in element
        else:
            tinted += 1
            assert match.group(2) == f" {expected}" and 'tabindex="0"' in element
            label = html.unescape(re.search(r'aria-label="([^"]*)"', element).group(1))
            assert "likely" in label and "alternatives:" in label and "%" in label
            assert re.search(r'title="[<>0-9.%]+"', element.replace("&lt;", "<").replace("&gt;", ">"))
    assert 0 < tinted < len(tokens)


def test_the_least_likely_choices_table_lists_the_lowest_ones(demo_view):
    table = demo_view.tokens.table
    assert table is not None and "Least likely choices" in table.value
    lowest = min(t.probability for t in demo_view.tokens.tokens if t.text.strip())
    assert f"{lowest:.0%}" in table.value or f"{lowest:.1%}" in table.value


def test_the_tints_keep_aa_contrast_in_light_and_dark():
    assert set(LIGHT_TINTS) == set(DARK_TINTS) == {name for _, name, _ in BUCKETS[1:]}
    for tints, text in ((LIGHT_TINTS, TINT_TEXT["light"]), (DARK_TINTS, TINT_TEXT["dark"])):
        for name, background in tints.items():
            assert contrast(text, background) >= 4.5, (name, background)
            assert f"mark.sw-t.{name}" in TOKENS_CSS and background in TOKENS_CSS
    # colour is never the only cue: the two least likely buckets are underlined too
    assert "sw-p10 { text-decoration: underline dotted" in TOKENS_CSS
    assert "sw-p0 { text-decoration: underline solid" in TOKENS_CSS
    assert "<script" not in TOKENS_CSS and "javascript:" not in TOKENS_CSS


@pytest.mark.parametrize("payload", PAYLOADS[:20])
def test_hostile_tokens_are_escaped(payload):
    state = StreamState()
    pieces = [payload[i : i + 7] for i in range(0, len(payload), 7)]
    for piece in pieces:
        state.apply(TextDelta(piece))
        state.apply(TokenLogprobs((Token(piece, -1.5, ((payload, -0.5), (piece, -1.5))),)))
    state.apply(Terminator())
    state.close()
    view = StreamView(state)
    view.refresh(final=True)
    problems = []
    for node, name, text in widget_strings(view.tokens.widget):
        if "sw-style" in node._dom_classes:
            assert text == f"<style>{TOKENS_CSS}</style>" or name != "value"
            continue
        problems += markup_problems(text)
    assert not problems
    assert shown_text(flow_html(view.tokens)) == payload
    static = final_bundle(view, None)["text/html"]
    assert "sw-tokens" in static and not markup_problems(static.replace(f"<style>{TOKENS_CSS}</style>", ""))


def grow(pane: TokenPane, count: int, per_frame: int = 10) -> tuple[int, list[tuple[str, str]]]:
    """Feed `count` tokens in frames; return the bytes the pane reported and each sealed widget's
    value when it was sealed and at the end."""
    state = StreamState()
    tokens = state.tokens = []
    sent = 0
    seen: dict[str, str] = {}
    for i in range(0, count, per_frame):
        tokens.extend(Token(f" w{(i + k) % 97}", -((i + k) % 13) / 4, ((" x", -0.3),)) for k in range(per_frame))
        sent += pane.draw(state, 0.0, False).bytes
        for widget in pane._sealed:
            seen.setdefault(widget.model_id, widget.value)
    return sent, [(seen[w.model_id], w.value) for w in pane._sealed]


def test_bytes_per_token_stay_flat_and_sealed_widgets_are_never_changed():
    small, sealed_small = grow(TokenPane(Parts()), 2_000)
    large, sealed_large = grow(TokenPane(Parts()), 20_000)
    assert sealed_large and all(first == last for first, last in sealed_large + sealed_small)
    per_token_small, per_token_large = small / 2_000, large / 20_000
    assert per_token_large < 1.25 * per_token_small, (per_token_small, per_token_large)


def test_a_page_never_holds_more_than_its_size():
    pane = TokenPane(Parts())
    grow(pane, 20_000)
    assert len(pane.flow.children) > 1 and all(len(page.children) <= 16 for page in pane.flow.children)


def test_the_boundaries_toggle_sets_one_class():
    pane = TokenPane(Parts())
    assert pane.widget is None  # no tokens, no widgets
    state = StreamState()
    state.tokens = [Token("a", -0.1)]
    pane.draw(state, 0.0, False)
    assert "sw-bounds" not in pane.flow._dom_classes
    pane.toggle.value = True
    assert "sw-bounds" in pane.flow._dom_classes
    pane.toggle.value = False
    assert "sw-bounds" not in pane.flow._dom_classes


def test_no_logprobs_no_pane(demo_server):
    view = StreamView(sw.run("What is a closure in Python?", provider="demo", demo=FAST))
    view.refresh(final=True)
    assert view.tokens is None
    assert "sw-tokens" not in final_bundle(view, None)["text/html"]


def test_a_continued_part_adds_its_tokens_after_the_first_ones():
    first = StreamState()
    first.extend([Started("m"), TextDelta("ab"), TokenLogprobs((Token("ab", -0.1),))])
    first.close()
    view = StreamView(first)
    view.refresh()
    second = first.next_part()
    second.extend([TextDelta("cd"), TokenLogprobs((Token("cd", -2.0),)), Terminator()])
    second.close()
    view.attach(second)
    view.refresh(final=True)
    assert [t.text for t in view.tokens.tokens] == ["ab", "cd"]


def test_the_saved_notebook_keeps_the_tinted_answer(demo_view):
    static = final_bundle(demo_view, "demo")["text/html"]
    assert static.count('class="sw-t') >= len(demo_view.tokens.tokens)
    assert "Least likely choices" in static and "simulated by the scripted demo" in static


def test_a_token_label_shows_its_spaces():
    markup = token_html(Token(" a", math.log(0.4), ((" the", math.log(0.5)), (" a", math.log(0.4)))))
    assert "‘␣a’ 40% likely; alternatives: ‘␣the’ 50%" in html.unescape(markup)


#: Greedy with the package's repetition guards off: the probabilities llama.cpp reports are the
#: model's own, before penalties, so only then is the chosen token always the likeliest.
GREEDY = {"temperature": 0, "repeat_penalty": 1.0, "dry_multiplier": 0}


@pytest.mark.local
def test_the_token_view_fills_from_the_local_models_logprobs():
    state = sw.run("What is 2+2?", provider="local", logprobs=5, seed=1, max_tokens=24, **GREEDY)
    assert state.status == "complete" and state.script is None and len(state.tokens) > 3
    view = StreamView(state)
    view.refresh(final=True)
    pane = view.tokens
    assert pane is not None and "simulated" not in pane.heading.value
    assert shown_text(flow_html(pane)) == state.text == "".join(t.text for t in pane.tokens)
    assert all(0 < t.probability <= 1 and len(t.top) == 5 for t in pane.tokens)
    assert all(t.top[0][0] == t.text for t in pane.tokens if t.text.strip())  # temperature 0: the likeliest
    again = sw.run("What is 2+2?", provider="local", logprobs=5, seed=1, max_tokens=24, **GREEDY)
    assert again.text == state.text  # temperature 0 with a seed reproduces the answer
