"""The pane table (`_panes.PANES`) drives the view, the stylesheet and the saved output: the view
makes each pane when its row says, draws it at its row's rate and lays it out in the table's
order; the sheet carries each row's rules in that order; and a new pane is one class and one row.
"""

from __future__ import annotations

from typing import Any, Optional

import ipywidgets as w
import pytest

from streamwidgets.core._events import (
    Citation,
    CitationsFound,
    ErrorEvent,
    ReasoningDelta,
    Started,
    Terminator,
    TextDelta,
    Token,
    TokenLogprobs,
    ToolCallDelta,
)
from streamwidgets.core._state import StreamState
from streamwidgets.widgets import StreamView, _panes
from streamwidgets.widgets._fallback import final_bundle
from streamwidgets.widgets._panes import BODY, CHANGES, FRAMES, PANES, ROW, SLOW, Context, PaneSpec
from streamwidgets.widgets._sheet import stylesheet
from streamwidgets.widgets._sync import Parts, opened, set_traits
from streamwidgets.widgets._theme import as_sent
from streamwidgets.widgets._traffic import NOTHING, Cost


def everything() -> StreamState:
    """A state with something for every pane: reasoning, a call, text, tokens, sources, an error."""
    state = StreamState(model="m")
    state.begin(0.0)
    for event in (
        Started(model="m"),
        ReasoningDelta("Hmm."),
        ToolCallDelta(0, "c1", "f", "{}"),
        TextDelta("Hi [1]."),
        TokenLogprobs((Token("Hi [1].", -2.0),)),
        CitationsFound((Citation("https://example.org/", "Example"),)),
        ErrorEvent("The server broke.", "server_error", 500),
    ):
        state.apply(event, 0.1)
    state.close(now=0.2)
    return state


def header_row(view: StreamView) -> w.Box:
    return next(child for child in view.widget.children if "sw-header-row" in child._dom_classes)


def body(view: StreamView) -> list[w.Widget]:
    """The view's children under the header row (its style sheets and the row left out)."""
    chrome = ("sw-style", "sw-header-row")
    return [child for child in view.widget.children if not set(chrome) & set(child._dom_classes)]


def owner(view: StreamView, widget: w.Widget) -> int:
    """The index in `PANES` of the row whose pane placed `widget`."""
    for i, row in enumerate(PANES):
        pane = view.pane(row.name)
        if pane is not None and any(widget is own for own in row.widgets(pane)):
            return i
    raise AssertionError(f"no pane placed {widget!r}")


def test_the_table_names_each_pane_once_and_the_view_follows_its_order():
    assert len({row.name for row in PANES}) == len(PANES)
    assert [row.place for row in PANES] == sorted((row.place for row in PANES), key=(ROW, BODY).index)
    view = StreamView(everything())
    view.on_continue(lambda: None)
    view.refresh(1.0)
    in_row = [owner(view, widget) for widget in header_row(view).children]
    in_body = [owner(view, widget) for widget in body(view)]
    assert in_row == sorted(in_row) and in_body == sorted(in_body)
    made = {PANES[i].name for i in in_row + in_body}
    assert made == {row.name for row in PANES}  # every pane had something to show


def test_a_pane_with_made_is_not_even_made_before_its_first_frame_to_show_something():
    state = StreamState(model="m")
    view = StreamView(state)
    later = [row.name for row in PANES if row.made is not None]
    assert later and all(view.pane(name) is None for name in later)
    state.begin(0.0)
    state.apply(TextDelta("Plain."), 0.1)
    state.apply(Terminator(), 0.1)
    state.close(now=0.2)
    view.refresh(0.2)
    assert all(view.pane(name) is None for name in later)  # a plain answer needs none of them
    view = StreamView(everything())
    view.refresh(1.0)
    assert all(view.pane(name) is not None for name in later)


def test_the_stylesheet_carries_each_panes_rules_in_the_order_of_the_table():
    sheet = stylesheet()
    at = []
    for row in PANES:
        if row.css:
            rules = as_sent(row.css)
            assert sheet.count(rules) == 1, row.name
            at.append(sheet.index(rules))
    assert at == sorted(at) and len(at) >= 5


# ----------------------------------------------------------------------------- a new pane


class WordCount:
    """A pane made for this test: how many words the answer has, under the answer."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self.widget: Optional[w.HTML] = None
        self.draws = 0

    def draw(self, state: StreamState, now: float, final: bool) -> Cost:
        self.draws += 1
        words = f"{len(state.text.split())} words"
        if self.widget is None:
            self.widget = self._parts.html("sw-words", value=words)
            return opened(self.widget)
        return set_traits(self.widget, value=words)

    def saved_html(self, state: StreamState) -> str:
        return f'<p class="sw-static-words">{self.widget.value if self.widget is not None else ""}</p>'


WORDS_CSS = """
/* Small and grey. */
.sw-words { font-size: var(--sw-small-size); }
"""


@pytest.fixture(params=[CHANGES, SLOW])
def with_words(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """`PANES` with one more row, right after the answer."""
    row: PaneSpec[WordCount] = PaneSpec(
        "words",
        lambda c: WordCount(c.parts),
        lambda state: state.text_length > 0,
        request.param,
        css=WORDS_CSS,
        saved_html=WordCount.saved_html,
    )
    at = [r.name for r in PANES].index("answer") + 1
    stylesheet()  # the kernel's sheet is made once: before the table changes, as it was
    monkeypatch.setattr(_panes, "PANES", (*PANES[:at], row, *PANES[at:]))
    return str(request.param)


def test_a_new_pane_is_one_class_and_one_row(with_words: str):
    state = StreamState(model="m")
    view = StreamView(state)
    assert view.pane("words") is None
    view.refresh(0.0)
    assert view.pane("words") is None  # nothing to count yet: not made
    state.begin(0.0)
    state.apply(TextDelta("one two three"), 0.1)
    # Drawn at its rate: by `draw` (every frame with a change) or by `draw_slow`.
    view.draw(0.1)
    assert (view.pane("words") is not None) == (with_words == CHANGES)
    view.draw_slow(0.1)
    words = view.pane("words")
    assert words.widget.value == "3 words"
    children = body(view)
    assert children.index(words.widget) == children.index(view.answer_box) + 1  # its place
    drawn = words.draws
    (view.draw_slow if with_words == CHANGES else view.draw)(0.2)
    assert words.draws == drawn  # not at the other rate
    state.apply(Terminator(), 0.3)
    state.close(now=0.3)
    view.refresh(0.3)
    html = final_bundle(view, "m", widget=False)["text/html"]
    assert html.index("one two three") < html.index('<p class="sw-static-words">3 words</p>')
    assert ".sw-words { font-size: var(--sw-small-size); }" in stylesheet.__wrapped__()  # type: ignore[attr-defined]
    assert "Small and grey" not in stylesheet.__wrapped__()  # type: ignore[attr-defined]


def test_a_pane_made_with_the_view_and_drawn_every_frame(monkeypatch: pytest.MonkeyPatch):
    """`ALWAYS` and `FRAMES`: made with the view, drawn by every frame even without a change,
    placed in the header row after the buttons."""
    seen: list[Any] = []

    class Ticker:
        def __init__(self, context: Context) -> None:
            seen.append(context)
            self.widget = context.parts.html("sw-ticker")
            self.draws = 0

        def draw(self, state: StreamState, now: float, final: bool) -> Cost:
            self.draws += 1
            return NOTHING

    row: PaneSpec[Ticker] = PaneSpec("ticker", Ticker, _panes.ALWAYS, FRAMES, ROW)
    stylesheet()
    monkeypatch.setattr(_panes, "PANES", (*PANES, row))
    view = StreamView(StreamState(model="m"), model="m", redact=lambda text: text.replace("k", "*"))
    ticker = view.pane("ticker")
    assert ticker is not None and seen[0].labels.model == "m"
    assert seen[0].redact("key") == "*ey"
    view.redact = lambda text: text.upper()
    assert seen[0].redact("key") == "KEY"  # the view's redaction, whatever it is set to later
    view.draw(0.0)
    view.draw(0.1)  # nothing changed: still drawn
    assert ticker.draws == 2
    assert header_row(view).children[-1] is ticker.widget
