"""`StreamView`: the panes that show one streamed answer, drawn from a `StreamState`.

The view only lays out and draws. It never reads the network and never paces itself: the frame
scheduler (`_scheduler.py`) decides when a frame is drawn and whether it is a slow one (the
header's clock, usage and the problem box), from what the view says changed (`dirty`, `news`)
and what its last frames cost (`draw` for the answer's panes, `draw_slow` for the others). Its
panes are the rows of one table (`_panes.PANES`: when each is made, at which rate it is drawn,
where it sits), and every pane speaks one protocol (`_pane.py`): `draw(state, now, final)` sends
what changed and returns what that cost.

A Continue after a cut-off answer goes on in the same view: the person reads one answer, and the
next part's state (which carries the answer so far, see `StreamState.next_part`) grows in the
same markdown pane.

Parts that most answers never need — reasoning, the token view, tool calls, sources, the problem
box and the Continue button — are made the first time they have something to show (a pane the
first frame its row's `made` holds): every widget is a `comm_open` of about a kilobyte, and a
view that made them all up front spent a third of a short answer's bytes on parts nobody saw.
The view puts a part made in a frame in its place at the end of that frame (one `children`
update, however many were made).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Optional

import ipywidgets as w

from ..core import Redact, RetryNote, StreamState, ToolCall, unchanged
from ..net import Labels, Source
from . import _panes
from ._citations import CitationsPane
from ._controls import Controls
from ._defaults import view_defaults
from ._header import Announcer, Header
from ._markdown_pane import MarkdownPane
from ._panes import BODY, CHANGES, FRAMES, ROW, SLOW, Context, PaneSpec, Place, Rate
from ._problems import ProblemBox
from ._reasoning import ReasoningPane
from ._scheduler import Pace
from ._sheet import stylesheet_widget
from ._sparkline import TokenTrace
from ._sync import Parts, set_traits
from ._theme import scale_class, scale_widget
from ._tokens import TokenPane
from ._toolcalls import ToolCallsPane, shown_calls
from ._traffic import NOTHING, Cost
from ._usage import UsageMeter

__all__ = ["StreamView", "view_for"]

_NEVER = RetryNote(tries=-1, reason="")  # no retry note a state ever has


class StreamView:
    """The widgets for one answer. `widget` is the `VBox` to display.

    `model`, `provider` and `api` (chat, responses or messages: it tells apart views of one
    model) label the header until the stream names its own model; `note` is a line under it.
    `max_fps` bounds how often the answer is redrawn, `slow_fps` the header, usage and problem
    box; the live clock in the header ticks once a second even when no event arrives.
    `overhead_bytes_per_second` slows the frames down when each one costs much besides the
    answer text it carries (envelopes, the live tail sent again, new widgets): the answer itself
    is sent once, and the rest stays within that rate. The scheduler keeps all three (`pace`).
    `scale` (1.5 for a projector; `set_defaults(scale=...)` sets it for the kernel) sizes the
    text, code and math of this view. `redact` takes keys out of the provider's words (the
    handle sets it from the request).
    """

    def __init__(
        self,
        state: Optional[StreamState] = None,
        *,
        model: Optional[str] = None,
        provider: Optional[str] = None,
        api: Optional[str] = None,
        max_tokens: Optional[int] = None,
        citation_markers: bool = False,
        note: Optional[str] = None,
        badge: Optional[str] = None,
        max_fps: float = 20.0,
        slow_fps: float = 1.0,
        overhead_bytes_per_second: float = Pace.overhead_bytes_per_second,
        style: bool = True,
        scale: Optional[float] = None,
        sparkline: bool = True,
        clock: Callable[[], float] = time.monotonic,
        redact: Redact = unchanged,
    ) -> None:
        scale = view_defaults().scale if scale is None else scale
        scale_css = scale_class(scale) if scale != 1 else None
        #: How this view asks to be paced; the scheduler does the pacing.
        self.pace = Pace(max_fps, slow_fps, overhead_bytes_per_second)
        self._clock = clock
        self._state = state if state is not None else StreamState(model=model, provider=provider)
        labels = Labels(model, provider, api, max_tokens, citation_markers, note, badge)

        self._parts = parts = Parts()
        self._redact = redact
        #: Tokens per 100 ms for the usage meter's sparkline (`sparkline=False` leaves it out).
        self.trace: Optional[TokenTrace] = TokenTrace() if sparkline else None
        # The header is made with its first look, which the first frame then need not send.
        self._context = Context(
            parts,
            labels,
            self._state,
            clock(),
            lambda text: self._redact(text),
            self.trace,
            lambda state: self.controls.offers(state),
        )
        #: The panes made so far, by name (see `_panes.PANES`: the others are made when they first
        #: have something to show), and the table's rows by rate.
        self._rows = rows = _panes.PANES
        self._panes: dict[str, Any] = {}
        self._at = {rate: tuple(row for row in rows if row.rate == rate) for rate in (CHANGES, FRAMES, SLOW)}
        for row in rows:
            if row.made is None:
                self._make(row)

        # The status region sits right after the header that carries its words, so that a view
        # drawn anew (the final display update) puts them in the page first.
        self._header_row = parts.box(w.HBox, list(self._row()), "sw-header-row")
        self._style = stylesheet_widget() if style else None
        self._scale_style = scale_widget(scale) if scale_css else None
        classes = ("sw-view", scale_css) if scale_css else ("sw-view",)
        self.widget = parts.box(w.VBox, list(self._children()), *classes)

        # What the current part looks like on screen (see `attach`).
        self._shown_version = -1
        self._shown_phase: Optional[str] = None
        self._shown_retry: Optional[RetryNote] = _NEVER
        self.attach(self._state)

    # ------------------------------------------------------------------ the parts

    def pane(self, name: str) -> Any:
        """The pane called `name` (a row of `_panes.PANES`), or None until it is made."""
        return self._panes.get(name)

    def _shown(self, name: str) -> Any:
        """The pane called `name` once it made its widget (None until then)."""
        pane = self._panes.get(name)
        return pane if pane is not None and pane.widget is not None else None

    def _make(self, row: PaneSpec[Any]) -> Any:
        pane = self._panes[row.name] = row.make(self._context)
        return pane

    @property
    def header(self) -> Header:
        return self._panes["header"]

    @property
    def announcer(self) -> Announcer:
        """The status region a screen reader hears."""
        return self.header.announcer

    @property
    def controls(self) -> Controls:
        return self._panes["controls"]

    @property
    def usage(self) -> UsageMeter:
        return self._panes["usage"]

    @property
    def answer(self) -> MarkdownPane:
        """The answer's markdown pane."""
        return self._panes["answer"].markdown

    @property
    def answer_box(self) -> w.Box:
        """The box the answer scrolls in."""
        return self._panes["answer"].widget

    @property
    def reasoning(self) -> Optional[ReasoningPane]:
        """The reasoning pane, once it was made (None until reasoning arrives)."""
        return self._shown("reasoning")

    @property
    def tools(self) -> Optional[ToolCallsPane]:
        return self._shown("tools")

    @property
    def citations(self) -> Optional[CitationsPane]:
        return self._shown("citations")

    @property
    def tokens(self) -> Optional[TokenPane]:
        """The token view, once it was made (None until tokens with log-probabilities arrive)."""
        return self._shown("tokens")

    @property
    def problems(self) -> Optional[ProblemBox]:
        return self._shown("problems")

    @property
    def cancel_button(self) -> w.Button:
        return self.controls.cancel_button

    @property
    def continue_button(self) -> Optional[w.Button]:
        return self.controls.continue_button

    # ------------------------------------------------------------------ feeding

    @property
    def state(self) -> StreamState:
        """The state of the stream being shown (the latest part after a Continue)."""
        return self._state

    @property
    def text(self) -> str:
        """The whole answer shown, across Continue parts."""
        return self._state.text

    @property
    def reasoning_text(self) -> str:
        return self._state.reasoning

    @property
    def redact(self) -> Redact:
        """What takes keys out of the provider's words before the header and problem box show them."""
        return self._redact

    @redact.setter
    def redact(self, redact: Redact) -> None:
        self._redact = redact  # the panes made with the view's redaction follow it

    @property
    def end_said_later(self) -> bool:
        """The status region says how the stream ended only when `say_end()` is called (see
        `Header.end_said_later`: `show()` sets it)."""
        return self.header.end_said_later

    @end_said_later.setter
    def end_said_later(self, later: bool) -> None:
        self.header.end_said_later = later

    def attach(self, state: StreamState) -> None:
        """Show `state` from now on (the next part of the answer shown, or the stream's first)."""
        self._state = state
        self._shown_version = -1
        self._shown_phase = None
        self._shown_retry = _NEVER

    def add_note(self, note: str) -> None:
        """Add words to the line under the header (a comparison's "temperature 0.7"), shown at once."""
        labels = self.header.labels
        self.header.labels = replace(labels, note=" · ".join(n for n in (labels.note, note) if n))
        self.header.draw(self._state, self._clock(), self._state.done)

    def on_cancel(self, callback: Optional[Callable[[], object]]) -> None:
        """What the Cancel button does (the button stays disabled without one)."""
        self.controls.on_cancel(callback)

    async def confirm(self, call: ToolCall) -> bool:
        """Ask, under the cards, whether to run `call` (`confirm=True`): True when Run is
        clicked, False for Skip. The tool pane draws the question in the next frame (the call
        waiting is a change of the state); a cancel while it waits takes the question away."""
        shown = shown_calls(self._state)
        card = next((i + 1 for i, c in enumerate(shown) if c is call), len(shown))
        tools = self._panes.get("tools") or self._make(next(r for r in self._rows if r.name == "tools"))
        return await tools.ask(call, card)

    def on_continue(self, callback: Optional[Callable[[], object]]) -> None:
        """What the Continue button does (the button stays hidden without one)."""
        self.controls.on_continue(callback)

    @property
    def can_continue(self) -> bool:
        """The stream ended short of a full answer and someone can start the next part."""
        return self.controls.offers(self._state)

    # ------------------------------------------------------------------ what changed (for the scheduler)

    @property
    def dirty(self) -> bool:
        """The state changed since the last frame."""
        return self._state.version != self._shown_version

    @property
    def news(self) -> bool:
        """A change worth a frame at once, header and all: a new phase (the first token, the first
        thought, the end, a new part) or a retry's countdown starting."""
        state = self._state
        return state.phase != self._shown_phase or state.retry is not self._shown_retry

    @property
    def live(self) -> bool:
        """Still streaming: the header's clock goes on even while no event arrives."""
        return not self._state.done

    # ------------------------------------------------------------------ drawing

    def draw(self, now: float, *, final: bool = False) -> Cost:
        """Draw what changed of the answer (its text, reasoning, tool calls, sources) and the
        buttons; everything, finished, when `final` (a state that is done is final too). Return
        what the frame sent."""
        state = self._state
        final = final or state.done
        sent = NOTHING
        if self.trace is not None and self.dirty:
            self.trace.sample(now, state.estimated_completion_tokens)  # one measure all along
        if self.dirty or final:
            sent += self._draw(CHANGES, state, now, final)
        sent += self._draw(FRAMES, state, now, final) + self._regroup()
        self._shown_version = state.version
        self._shown_phase = state.phase
        self._shown_retry = state.retry
        return sent

    def draw_slow(self, now: float, *, final: bool = False) -> Cost:
        """Draw the parts that change all the time but matter less: the header (its clock and
        rates), usage and the problem box. Return what that sent."""
        state = self._state
        final = final or state.done
        return self._draw(SLOW, state, now, final) + self._regroup()

    def _draw(self, rate: Rate, state: StreamState, now: float, final: bool) -> Cost:
        """Draw the panes of `rate`, making those that have something to show for the first time."""
        sent = NOTHING
        for row in self._at[rate]:
            pane = self._panes.get(row.name)
            if pane is None:
                if row.made is None or not row.made(state):
                    continue
                pane = self._make(row)
            sent += pane.draw(state, now, final)
        return sent

    def refresh(self, now: Optional[float] = None, *, final: bool = False) -> int:
        """Draw everything that changed now (no scheduler asked); return the messages sent."""
        now = self._clock() if now is None else now
        return (self.draw(now, final=final) + self.draw_slow(now, final=final)).messages

    def _regroup(self) -> Cost:
        """Put the parts made since the last frame in their places (nothing is sent otherwise)."""
        return set_traits(self._header_row, children=self._row()) + set_traits(self.widget, children=self._children())

    def say_end(self, state: StreamState) -> int:
        """Let the status region say how `state` ended (see `end_said_later`); return the messages
        sent (none when a Continue has moved on to another part meanwhile)."""
        if state is not self._state:
            return 0
        return self.header.say_end(state, self._clock()).messages

    def _placed(self, place: Place) -> tuple[w.Widget, ...]:
        """The widgets of the panes made so far that sit in `place`, in order."""
        return tuple(
            widget
            for row in self._rows
            if row.place == place and row.name in self._panes
            for widget in row.widgets(self._panes[row.name])
            if widget is not None
        )

    def _row(self) -> tuple[w.Widget, ...]:
        return self._placed(ROW)

    def _children(self) -> tuple[w.Widget, ...]:
        """The view's parts that exist, top to bottom."""
        chrome = (self._style, self._scale_style, self._header_row)
        return (*(part for part in chrome if part is not None), *self._placed(BODY))

    # ------------------------------------------------------------------ helpers

    def catch_up(self) -> None:
        """Draw a state nobody drew yet (before reading what the panes show)."""
        if self.dirty:
            self.refresh()

    def answer_html(self) -> str:
        """The answer as the pane shows it: a state not drawn yet is drawn first."""
        self.catch_up()
        return self.answer.html

    def __repr__(self) -> str:
        return f"<StreamView {self._state.phase} {self._state.text_length} chars, part {len(self._state.parts)}>"

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, object]:
        """Display the view itself (`StreamView(sw.parse(recording))` as a cell's last line shows
        the recorded answer): a state nobody drew yet is drawn first."""
        self.catch_up()
        return self.widget._repr_mimebundle_(**kwargs)


def view_for(source: Source, **options: Any) -> StreamView:
    """A view labelled as `source` labels itself (model, provider, API, token limit, its note and
    badge) until the stream names its own model. `options` go to `StreamView`."""
    labels = source.labels()
    return StreamView(
        model=labels.model,
        provider=labels.provider,
        api=labels.api,
        max_tokens=labels.max_tokens,
        citation_markers=labels.citation_markers,
        note=labels.note,
        badge=labels.badge,
        **options,
    )
