"""The token view: the answer's tokens as the model chose them, each tinted by its probability.

Shown under the answer when the request asked for log-probabilities (`logprobs=N`) and the
provider sent them. Every token says its probability in words — a `title` on each, and on the
less likely ones (the tinted ones) an accessible label with the alternatives, which hover and
keyboard focus show in a small box drawn by CSS alone (no script runs in widget HTML). Colour is
never the only cue: the less likely tokens are also underlined, dotted and then solid. The tints
come in a light and a dark set whose text keeps at least 4.5:1 contrast on them
(`tests/widgets/test_token_view.py` computes it, `tests/browser/test_token_view_browser.py` measures it).

Model tokens are untrusted text: every token and alternative is escaped, and labels are
attributes built from escaped text. Bytes stay flat with the answer's length, as in the answer
pane (`_markdown_pane`): the tokens since the last seal live in one `HTML` widget, re-sent each
frame; once that holds `SEAL_CHARS` of HTML it is sealed — never sent again — and a new live widget
takes the next tokens. Sealed widgets sit in pages of `PAGE_SIZE`, so no `children` list that is
re-sent grows without bound. At the end a small table lists the least likely choices.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any, Optional

import ipywidgets as w

from ..core import StreamState, Token
from ..markdown import DARK_CONTEXTS, escape_html
from ._sync import Parts, opened, set_traits
from ._theme import shared_model
from ._traffic import NOTHING, Cost

__all__ = ["TokenPane", "BUCKETS", "LIGHT_TINTS", "DARK_TINTS", "TINT_TEXT", "token_html", "tokens_static_html"]

#: (lowest probability, class, words): the tint of a token by its probability.
BUCKETS: tuple[tuple[float, str, str], ...] = (
    (0.9, "sw-p90", "90% or more"),
    (0.6, "sw-p60", "60–90%"),
    (0.3, "sw-p30", "30–60%"),
    (0.1, "sw-p10", "10–30%"),
    (0.0, "sw-p0", "under 10%"),
)
#: Backgrounds of the tinted buckets, and the text colour on them, per theme (AA: >= 4.5:1).
LIGHT_TINTS = {"sw-p60": "#fdf0c4", "sw-p30": "#fbd78b", "sw-p10": "#f9b48c", "sw-p0": "#f59a9a"}
DARK_TINTS = {"sw-p60": "#3d3300", "sw-p30": "#573c00", "sw-p10": "#6b2d07", "sw-p0": "#7a1f1f"}
TINT_TEXT = {"light": "#141414", "dark": "#f4f4f4"}
#: Characters of HTML the live widget holds before it is sealed. The live widget is sent whole
#: on every frame, and the view's pace counts what is sent again (`_scheduler.Pace`): 6,000 held
#: a view with tokens to about one frame a second; 1,500 (a dozen tokens) keeps its frames close
#: to those of a view without, for one more small widget every dozen tokens.
SEAL_CHARS = 1500
PAGE_SIZE = 16
#: Alternatives named in a token's label, and rows of the least-likely table.
_NAMED = 5
_TABLE_ROWS = 6
#: Tokens a saved notebook keeps as static HTML (a longer answer keeps its start and says so).
STATIC_TOKENS = 4000
SIMULATED = "simulated by the scripted demo"


def _bucket(probability: float) -> str:
    for low, name, _ in BUCKETS:
        if probability >= low:
            return name
    return BUCKETS[-1][1]


def _percent(probability: float) -> str:
    if probability >= 0.995:
        return f"{probability:.1%}" if probability < 0.9995 else ">99.9%"
    if probability < 0.001:
        return "<0.1%"
    return f"{probability:.0%}" if probability >= 0.1 else f"{probability:.1%}"


def _shown(text: str) -> str:
    """A token's text as a label quotes it: spaces and line breaks made visible."""
    return "‘" + text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") + "’"


def _label(token: Token) -> str:
    alternatives = ", ".join(
        f"{_shown(text)} {_percent(math.exp(logprob))}" for text, logprob in token.top[:_NAMED] if text != token.text
    )
    said = f"{_shown(token.text)} {_percent(token.probability)} likely"
    return f"{said}; alternatives: {alternatives}" if alternatives else said


def token_html(token: Token) -> str:
    """One token: a plain span with its probability in a `title` when it was near-certain, else a
    focusable `mark` tinted by its bucket, with the alternatives in its accessible label."""
    probability = token.probability
    bucket = _bucket(probability)
    text = escape_html(token.text)
    if bucket == "sw-p90":
        return f'<span class="sw-t" title="{escape_html(_label(token))}">{text}</span>'
    return (
        f'<mark class="sw-t {bucket}" tabindex="0" title="{_percent(probability)}" '
        f'aria-label="{escape_html(_label(token))}">{text}</mark>'
    )


def least_likely(tokens: Sequence[Token], rows: int = _TABLE_ROWS) -> list[tuple[int, Token]]:
    """The `rows` least likely choices (position, token), in the order of the answer."""
    chosen = heapq.nsmallest(rows, enumerate(tokens), key=lambda pair: (pair[1].logprob, pair[0]))
    return sorted((pair for pair in chosen if pair[1].text.strip()), key=lambda pair: pair[0])


def table_html(tokens: Sequence[Token]) -> str:
    rows = []
    for position, token in least_likely(tokens):
        best = next(((t, lp) for t, lp in token.top if t != token.text), None)
        instead = f"{escape_html(_shown(best[0]))} ({_percent(math.exp(best[1]))})" if best else "—"
        rows.append(
            f"<tr><td>{position + 1:,}</td><td><code>{escape_html(_shown(token.text))}</code></td>"
            f"<td>{_percent(token.probability)}</td><td>{instead}</td></tr>"
        )
    if not rows:
        return ""
    return (
        '<table class="sw-tokens-table"><caption>Least likely choices</caption>'
        '<thead><tr><th scope="col">token #</th><th scope="col">chosen</th><th scope="col">chance</th>'
        '<th scope="col">likeliest other</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>"
    )


def _legend() -> str:
    chips = "".join(f'<span class="sw-t {name}">{words}</span> ' for _, name, words in BUCKETS[1:])
    return f'<span class="sw-tokens-legend" aria-hidden="true">{chips}</span>'


def heading_html(simulated: bool, count: int, done: bool) -> str:
    source = f' <span class="sw-tokens-simulated">({SIMULATED})</span>' if simulated else ""
    counted = f" · {count:,} tokens" if done and count else ""
    return (
        f'<div class="sw-section-title">Token probabilities{source}{counted}</div>'
        f'<div class="sw-tokens-help">Each token is tinted by the chance the model gave it; hover over or '
        f"Tab to a tinted one to see its alternatives. {_legend()}</div>"
    )


def _css(tints: dict[str, str], text: str, scope: str) -> str:
    return "".join(
        f"{scope} mark.sw-t.{name}, {scope} .sw-tokens-legend .{name} {{ background: {colour}; color: {text}; }}"
        for name, colour in tints.items()
    )


_DARK_SCOPES = ", ".join(f"{context} .sw-tokens" for context in DARK_CONTEXTS)
TOKENS_CSS = (
    ".sw-tokens { margin: 4px 0; }"
    ".sw-tokens-help { font-size: var(--sw-small-size, 11px); color: var(--jp-ui-font-color2, inherit); margin: 0 0 3px 0; }"
    ".sw-tokens-simulated { font-weight: normal; font-style: italic; }"
    ".sw-view .sw-tokens-toggle { width: auto; align-self: flex-start; padding: 0 12px; margin: 0 0 4px 0; }"
    ".sw-tokens-legend .sw-t { padding: 0 4px; margin-right: 2px; }"
    ".sw-tokens-flow, .sw-tokens-flow .widget-vbox, .sw-tokens-flow .jupyter-widget-vbox { display: block !important; }"
    ".sw-tokens-flow { white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.7; max-height: min(30em, 70vh);"
    " overflow-y: auto; font-size: var(--sw-text-size, 14px); }"
    ".sw-tokens-flow .widget-html, .sw-tokens-flow .jupyter-widget-html, .sw-tokens-flow .widget-html-content,"
    " .sw-tokens-flow .jupyter-widget-html-content { display: inline !important; margin: 0; padding: 0;"
    " line-height: inherit; height: auto; font-size: inherit; white-space: pre-wrap; }"
    ".sw-t { position: relative; border-radius: 2px; }"
    "mark.sw-t { padding: 0; }"
    "mark.sw-t.sw-p10 { text-decoration: underline dotted; text-underline-offset: 3px; }"
    "mark.sw-t.sw-p0 { text-decoration: underline solid 2px; text-underline-offset: 3px; }"
    "mark.sw-t:focus { outline: 2px solid var(--sw-live, #1565c0); outline-offset: 1px; }"
    "mark.sw-t:hover::after, mark.sw-t:focus::after { content: attr(aria-label); position: absolute; left: 0;"
    " top: 100%; z-index: 20; white-space: pre; padding: 2px 6px; border-radius: 3px;"
    " font-size: var(--sw-small-size, 11px); line-height: 1.5; text-decoration: none;"
    " background: var(--jp-layout-color0, #fff); color: var(--jp-content-font-color1, #111);"
    " border: 1px solid var(--jp-border-color1, #999); box-shadow: 0 1px 4px rgba(0, 0, 0, 0.25); }"
    ".sw-bounds .sw-t { box-shadow: inset 1px 0 0 rgba(127, 127, 127, 0.9), inset -1px 0 0 rgba(127, 127, 127, 0.9); }"
    # In a narrow column (`compare`) the table scrolls sideways instead of being clipped at the
    # column's edge (its cells keep their tokens whole).
    ".sw-tokens-least, .sw-tokens-least .widget-html-content { min-width: 0; max-width: 100%; }"
    ".sw-tokens-table { border-collapse: collapse; margin: 6px 0 2px 0; font-size: var(--sw-small-size, 12px);"
    " display: block; max-width: 100%; overflow-x: auto; }"
    ".sw-tokens-table caption { text-align: left; font-weight: 600; color: var(--jp-ui-font-color2, inherit); }"
    ".sw-tokens-table th, .sw-tokens-table td { border: 1px solid var(--jp-border-color2, rgba(127, 127, 127, 0.3));"
    " padding: 1px 8px; text-align: left; white-space: pre; }"
    + _css(LIGHT_TINTS, TINT_TEXT["light"], ".sw-tokens")
    + "".join(_css(DARK_TINTS, TINT_TEXT["dark"], context + " .sw-tokens") for context in DARK_CONTEXTS)
)


def tokens_style_widget() -> w.HTML:
    """The token view's `<style>`: one model per kernel, made with the first token view."""
    return shared_model(
        "tokens-style",
        lambda: w.HTML(
            value=f"<style>{TOKENS_CSS}</style>", layout=w.Layout(display="none"), _dom_classes=("sw-style",)
        ),
    )


def tokens_static_html(tokens: Sequence[Token], simulated: bool) -> str:
    """The tinted answer for a saved notebook: the same markup with its own style (light tints)."""
    shown = tokens[:STATIC_TOKENS]
    more = len(tokens) - len(shown)
    rest = f'<p class="sw-note">… and {more:,} more tokens, not saved here.</p>' if more > 0 else ""
    body = "".join(token_html(token) for token in shown)
    return (
        f'<div class="sw-tokens"><style>{TOKENS_CSS}</style>{heading_html(simulated, len(tokens), True)}'
        f'<div class="sw-tokens-flow">{body}</div>{rest}{table_html(tokens)}</div>'
    )


class TokenPane:
    """The token view as a pane (`_pane.py`): drawn every frame, it appends the new tokens and
    says what that sent.

    Most answers carry no log-probabilities, so the widgets are made with the first tokens
    (`widget` is None until then; `heading`, `toggle` and `flow` exist from that frame on). A
    Continue brings a new part whose tokens start again from the first: the pane keeps the
    tokens of earlier parts on screen and appends the new part's after them.
    """

    heading: w.HTML
    toggle: w.ToggleButton
    flow: w.Box
    _live: w.HTML
    _pages: list[w.Box]

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self.widget: Optional[w.Box] = None
        #: The table of least likely choices, added when the stream ends.
        self.table: Optional[w.HTML] = None
        self.simulated = False
        self.tokens: list[Token] = []  # every token shown, across parts
        self._live_html: list[str] = []
        self._live_chars = 0
        self._sealed: list[w.HTML] = []
        self._part: Optional[StreamState] = None
        self._part_count = 0
        self._finished = False

    def draw(self, state: StreamState, now: float, final: bool) -> Cost:
        """Show the part's new tokens; `final` adds the token count and the least-likely table."""
        if self.widget is None and not state.tokens:
            return NOTHING
        sent = self._make(state.script is not None) if self.widget is None else NOTHING
        if state is not self._part:
            self._part, self._part_count = state, 0
        new = state.tokens[self._part_count :]
        if new:
            self._part_count = len(state.tokens)
            self.tokens.extend(new)
            fresh = 0
            for token in new:
                piece = token_html(token)
                self._live_html.append(piece)
                self._live_chars += len(piece)
                fresh += len(piece)
                if self._live_chars >= SEAL_CHARS:
                    sent += self._seal()
            # Only the new tokens' HTML is sent for good; the rest of the live widget is sent again.
            sent += set_traits(self._live, value="".join(self._live_html)) + Cost(fresh=fresh)
        if final and not self._finished:
            self._finished = True
            sent += set_traits(self.heading, value=heading_html(self.simulated, len(self.tokens), True))
            sent += self._add_table()
        return sent

    def static_html(self) -> str:
        return tokens_static_html(self.tokens, self.simulated)

    def saved_html(self, state: StreamState) -> str:
        """The tinted answer in a saved notebook, with its own style ("" before any token)."""
        return self.static_html() if self.widget is not None else ""

    def _make(self, simulated: bool) -> Cost:
        parts = self._parts
        self.simulated = simulated
        self.heading = parts.html("sw-tokens-head", value=heading_html(simulated, 0, False))
        self.toggle = w.ToggleButton(
            value=False,
            description="Show token boundaries",
            tooltip="Outline where each token starts and ends",
            layout=parts.layout,
            _dom_classes=("sw-tokens-toggle",),
        )
        self.toggle.observe(self._bounds, names="value")
        self._live = parts.html("sw-tokens-live")
        self._pages = [parts.box(w.VBox, [self._live], "sw-tokens-page")]
        self.flow = parts.box(w.VBox, list(self._pages), "sw-tokens-flow")
        # The style is one model per kernel, opened with the first token view (not counted here).
        self.widget = parts.box(w.VBox, [tokens_style_widget(), self.heading, self.toggle, self.flow], "sw-tokens")
        return opened(self.heading, self.toggle, self._live, *self._pages, self.flow, self.widget)

    def _add_table(self) -> Cost:
        table = table_html(self.tokens)
        if not table or self.widget is None:
            return NOTHING
        self.table = self._parts.html("sw-tokens-least", value=table)
        return opened(self.table) + set_traits(self.widget, children=(*self.widget.children, self.table))

    def _seal(self) -> Cost:
        """The live widget keeps what it holds for good; a new one takes the next tokens."""
        sent = set_traits(self._live, value="".join(self._live_html))
        self._sealed.append(self._live)
        self._live = self._parts.html("sw-tokens-live")
        self._live_html = []
        self._live_chars = 0
        sent += opened(self._live)
        page = self._pages[-1]
        if len(page.children) >= PAGE_SIZE:
            page = self._parts.box(w.VBox, [self._live], "sw-tokens-page")
            self._pages.append(page)
            return sent + opened(page) + set_traits(self.flow, children=tuple(self._pages))
        return sent + set_traits(page, children=(*page.children, self._live))

    def _bounds(self, change: dict[str, Any]) -> None:
        classes = tuple(c for c in self.flow._dom_classes if c != "sw-bounds")
        set_traits(self.flow, _dom_classes=(*classes, "sw-bounds") if change["new"] else classes)
