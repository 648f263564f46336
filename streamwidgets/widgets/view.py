"""`StreamView`: the panes that show one streamed answer, drawn from a `StreamState`.

The view only renders. It never reads the network and never schedules itself: whoever feeds the
state calls `refresh()` (the frame scheduler, or a test), and the view sends to the browser only
what changed since the last frame — the answer's live tail every frame, the slow-moving parts
(header timings, usage, the problem box) at a lower rate, and everything once more at the end.

A Continue after a cut-off answer goes on in the same view: the person reads one answer, and the
new stream's text (which starts with the old answer, see `client.continue_request`) grows in the
same markdown pane.

Parts that most answers never need — reasoning, tool calls, sources, the problem box and the
Continue button — are made the first time they have something to show: every widget is a
`comm_open` of about a kilobyte, and a view that made them all up front spent a third of a short
answer's bytes on parts nobody saw.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Optional

import ipywidgets as w

from ..events import Source
from ..state import StreamState, joined_text
from .defaults import view_defaults
from .header import Announcer, Header, announcement, header_html
from .markdown_pane import MarkdownPane
from .problems import ProblemBox, problem_html
from .reasoning import ReasoningPane
from .sources import SourcesPane
from .sparkline import TokenTrace, sparkline_svg
from .sync import Parts, set_traits, visible_classes
from .theme import scale_class, scale_widget, stylesheet_widget
from .toolcalls import ToolCallsPane
from .traffic import NOTHING, Cost, messages_between, snapshot
from .usage import UsageMeter

__all__ = ["StreamView"]

#: Ways a stream can end that a second request can pick up from.


def _unchanged(text: str) -> str:
    return text


class StreamView:
    """The widgets for one answer. `widget` is the `VBox` to display.

    `model`, `provider` and `api` (chat, responses or messages: it tells apart views of one
    model) label the header until the stream names its own model; `note` is a line under it.
    `max_fps` bounds how often the answer is redrawn, `slow_fps` the header, usage and problem
    box; the live clock in the header ticks once a second even when no event arrives.
    `max_bytes_per_second` slows the frames down when each one is heavy (about 24 KB/s keeps a
    1,000 tokens/s answer under 8 bytes on the wire per byte of markdown).
    `scale` (1.5 for a projector; `set_defaults(scale=...)` sets it for the kernel) sizes the
    text, code and math of this view.
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
        max_bytes_per_second: float = 24_000.0,
        style: bool = True,
        scale: Optional[float] = None,
        sparkline: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        scale = view_defaults().scale if scale is None else scale
        scale_css = scale_class(scale) if scale != 1 else None
        if max_fps <= 0 or slow_fps <= 0 or max_bytes_per_second <= 0:
            raise ValueError("max_fps, slow_fps and max_bytes_per_second must be positive")
        self.min_interval = 1.0 / max_fps
        self.max_bytes_per_second = max_bytes_per_second
        self.last_frame_bytes = 0
        self.slow_interval = 1.0 / slow_fps
        self.timer_interval = max(1.0, self.slow_interval)
        self._clock = clock

        self._segments: list[StreamState] = []
        self._carried_text = ""
        self._prefix_reasoning = ""
        self._prefix_sources: list[Source] = []
        self._labels = {"model": model, "provider": provider, "api": api, "note": note, "badge": badge}
        self._max_tokens = max_tokens
        self._citation_markers = citation_markers
        state = state if state is not None else StreamState(model=model, provider=provider)

        self._parts = parts = Parts()
        #: Applied to error and warning texts before they are shown: a provider or proxy may echo
        #: the key back in its error message. The handle sets it from the request.
        self.redact: Callable[[str], str] = _unchanged
        # What a screen reader hears: once per phase, never per token (see `header.Announcer`).
        self.announcer = Announcer(parts)
        #: Set by `show()`, which draws the output anew when the stream ends: the view then says
        #: how it ended only when `say_end()` is called a moment later, so that the words change
        #: in the status region the page goes on showing, not in the one it is taking away.
        self.end_said_later = False
        self._said = ""
        self._end_said = False
        # Made with its first look, which the first frame then need not send.
        self.header = Header(parts, self._header_html(state, clock()))
        self.answer = MarkdownPane(css_class="sw-answer")
        self.usage = UsageMeter(parts)
        #: Tokens per 100 ms for the usage meter's sparkline (`sparkline=False` leaves it out).
        self.trace: Optional[TokenTrace] = TokenTrace() if sparkline else None
        # Made when first needed (see the module's docstring); None until then.
        self.reasoning: Optional[ReasoningPane] = None
        self.tools: Optional[ToolCallsPane] = None
        self.sources: Optional[SourcesPane] = None
        self.problems: Optional[ProblemBox] = None
        self.continue_button: Optional[w.Button] = None
        # Shown only while it can act: a greyed-out Cancel on a finished answer is noise, and
        # Continue takes its place when the answer can go on. It starts out as a live stream's
        # first frame shows it (whoever streams sets `on_cancel` before that frame).
        self.cancel_button = parts.button(
            "sw-cancel",
            description="Cancel",
            tooltip="Stop this answer and close the connection",
            icon="stop",
        )
        # The status region sits right after the header that carries its words, so that a view
        # drawn anew (the final display update) puts them in the page first.
        self._header_row = parts.box(
            w.HBox, [self.header.widget, self.announcer.widget, self.cancel_button], "sw-header-row"
        )
        # The answer scrolls in a box of its own that follows the growing end (see theme.py).
        self.answer_box = parts.box(w.VBox, [self.answer.widget], "sw-answer-box")
        self._style = stylesheet_widget() if style else None
        self._scale_style = scale_widget(scale) if scale_css else None
        classes = ("sw-view", scale_css) if scale_css else ("sw-view",)
        self.widget = parts.box(w.VBox, list(self._children()), *classes)

        self._on_cancel: Optional[Callable[[], object]] = None
        self._on_continue: Optional[Callable[[], object]] = None
        self.cancel_button.on_click(lambda _button: self._on_cancel and self._on_cancel())

        # What the current part looks like on screen (see `_reset_marks`).
        self._shown_version = -1
        self._shown_phase: Optional[str] = None
        self._slow_at = float("-inf")
        self._answer_length = -1
        self._answer_finished = False
        self._cited = -1
        self.last_refresh = float("-inf")
        self.attach(state)

    # ------------------------------------------------------------------ feeding

    @property
    def state(self) -> StreamState:
        """The state of the stream being shown (the latest part after a Continue)."""
        return self._segments[-1]

    @property
    def segments(self) -> tuple[StreamState, ...]:
        return tuple(self._segments)

    @property
    def text(self) -> str:
        """The whole answer shown, across Continue parts (`state.joined_text`)."""
        return joined_text(self._carried_text, self.state.text)

    @property
    def reasoning_text(self) -> str:
        return self._prefix_reasoning + self.state.reasoning

    def attach(
        self,
        state: StreamState,
        *,
        model: Optional[str] = None,
        provider: Optional[str] = None,
        api: Optional[str] = None,
        max_tokens: Optional[int] = None,
        citation_markers: Optional[bool] = None,
        note: Optional[str] = None,
    ) -> None:
        """Show `state` from now on; a state attached after another one continues its answer.

        The placeholder state a view starts with (never fed) is replaced, not continued.
        """
        pristine = len(self._segments) == 1 and self.state.version == 0
        if pristine:
            self._segments.clear()
        if self._segments:
            previous = self.state
            self._carried_text = self.text
            self._prefix_reasoning += previous.reasoning
            seen = {s.url for s in self._prefix_sources}
            self._prefix_sources += [s for s in previous.sources if s.url not in seen]
        self._segments.append(state)
        for name, value in (("model", model), ("provider", provider), ("api", api), ("note", note)):
            if value is not None:
                self._labels[name] = value
        if max_tokens is not None:
            self._max_tokens = max_tokens
        if citation_markers is not None:
            self._citation_markers = citation_markers
        self._reset_marks()

    def on_cancel(self, callback: Optional[Callable[[], object]]) -> None:
        """What the Cancel button does (the button stays disabled without one)."""
        self._on_cancel = callback

    def on_continue(self, callback: Optional[Callable[[], object]]) -> None:
        """What the Continue button does (the button stays hidden without one)."""
        self._on_continue = callback

    # ------------------------------------------------------------------ scheduling

    @property
    def dirty(self) -> bool:
        """The state changed since the last frame."""
        return self.state.version != self._shown_version

    def is_urgent(self) -> bool:
        """A new phase (first token, first thought, the end) is drawn at once, never a frame late."""
        return self.state.phase != self._shown_phase

    def ready_at(self) -> float:
        """The earliest time for the next ordinary frame: the frame rate, and the byte rate.

        A frame that sent many bytes (a long live tail, a big table being written) pushes the next
        one back, so that one view never sends more than `max_bytes_per_second` on average.
        """
        return self.last_refresh + max(self.min_interval, self.last_frame_bytes / self.max_bytes_per_second)

    def wants_refresh(self, now: float) -> bool:
        tick = self.next_tick_at()
        return self.dirty or (tick is not None and now >= tick)

    def next_tick_at(self) -> Optional[float]:
        """When the live clock in the header next needs a redraw, or None once the stream ended."""
        if self.state.done:
            return None
        return self._slow_at + self.timer_interval

    # ------------------------------------------------------------------ drawing

    def refresh(self, now: Optional[float] = None, *, final: bool = False) -> int:
        """Draw the state; return how many comm messages that sent (0 when nothing changed).

        `final` forces every pane to be redrawn and finished; a state that is done is final too.
        """
        now = self._clock() if now is None else now
        state = self.state
        final = final or state.done
        phase = state.phase
        sent = NOTHING
        if self.trace is not None and self.dirty:
            self.trace.sample(now, state.estimated_completion_tokens)  # one measure all along
        if self.dirty or final:
            sent += self._draw_content(state, final)
        if final or now - self._slow_at >= self.slow_interval:
            sent += self._draw_slow(state, now)
            self._slow_at = now
        elif phase != self._shown_phase:  # the status word changes at once, the rest at the slow rate
            sent += self._draw_header(state, now)
        sent += self._draw_controls(state)
        self._shown_version = state.version
        self._shown_phase = phase
        self.last_refresh = now
        self.last_frame_bytes = sent.bytes
        return sent.messages

    def _draw_content(self, state: StreamState, final: bool) -> Cost:
        sent = NOTHING
        sources = self._sources(state)
        if self._citation_markers and len(sources) != self._cited:
            # Before the answer is drawn, so that its `[n]` markers link from the first frame.
            before = snapshot(self.answer.widget)
            self.answer.set_citations([s.url for s in sources])
            self._cited = len(sources)
            sent += messages_between(before, snapshot(self.answer.widget))
        text = self.text
        length = len(text)
        if length != self._answer_length or (final and not self._answer_finished):
            before = snapshot(self.answer.widget)
            if final:
                self.answer.finish(text, cut_off=state.can_continue)
                self._answer_finished = True
            else:
                self.answer.update(text)
            self._answer_length = length
            sent += messages_between(before, snapshot(self.answer.widget))
        reasoning = self.reasoning_text
        if reasoning:
            if self.reasoning is None:
                self.reasoning = ReasoningPane(self._parts)
                sent += self._regroup()
            usage = state.usage
            sent += self.reasoning.render(
                reasoning,
                answering=bool(length or state.tool_calls),
                done=final,
                reasoning_tokens=usage.reasoning_tokens if usage is not None else None,
                cut_off=state.can_continue and not (length or state.tool_calls),
            )
        calls = state.tool_calls
        if self.tools is not None:
            sent += self.tools.render(calls, done=final)
        elif calls:
            self.tools = ToolCallsPane(self._parts, calls, done=final)
            sent += self._regroup()
        if self.sources is not None:
            sent += self.sources.render(sources)
        elif sources:
            self.sources = SourcesPane(self._parts, sources)
            sent += self._regroup()
        return sent

    def _children(self) -> tuple[w.Widget, ...]:
        """The view's parts that exist, top to bottom."""
        parts = (
            self._style,
            self._scale_style,
            self._header_row,
            self.reasoning.widget if self.reasoning is not None else None,
            self.answer_box,
            self.tools.widget if self.tools is not None else None,
            self.sources.widget if self.sources is not None else None,
            self.usage.widget,
            self.problems.widget if self.problems is not None else None,
        )
        return tuple(part for part in parts if part is not None)

    def _regroup(self) -> Cost:
        """Put a part made since the last frame in its place; return what that cost (its models
        and the view's new children list)."""
        before = snapshot(self.widget)  # the new part is not in the tree yet
        self.widget.children = self._children()
        return messages_between(before, snapshot(self.widget))

    def _draw_header(self, state: StreamState, now: float) -> Cost:
        return self.header.show(self._header_html(state, now))

    def _header_html(self, state: StreamState, now: float) -> str:
        labels = self._labels
        said = announcement(state, joined_text(self._carried_text, state.text), self.redact)
        if state.done and self.end_said_later and not self._end_said:
            said = self._said  # until `say_end()`
        self._said = said
        return self.announcer.rule(said) + header_html(
            state,
            now=now,
            model=labels["model"],
            provider=labels["provider"],
            api=labels["api"],
            part=max(1, len(self._segments)),
            note=labels["note"],
            badge=labels["badge"],
        )

    def say_end(self, state: StreamState) -> int:
        """Let the status region say how `state` ended (see `end_said_later`); return the messages
        sent (none when a Continue has moved on to another part meanwhile)."""
        if state is not self.state or not state.done or self._end_said:
            return 0
        self._end_said = True
        return self._draw_header(state, self._clock()).messages

    def _draw_slow(self, state: StreamState, now: float) -> Cost:
        sent = self._draw_header(state, now)
        trace = sparkline_svg(self.trace.per_bin()) if self.trace is not None else ""
        sent += self.usage.render(state, max_tokens=self._max_tokens, earlier=self._segments[:-1], sparkline=trace)
        html = problem_html(state, can_continue=self.can_continue, redact=self.redact)
        if self.problems is not None:
            sent += self.problems.show(html)
        elif html:
            self.problems = ProblemBox(self._parts, html)
            sent += self._regroup()
        return sent

    def _draw_controls(self, state: StreamState) -> Cost:
        active = not state.done and self._on_cancel is not None
        cancel = self.cancel_button
        sent = set_traits(cancel, disabled=not active, _dom_classes=visible_classes(cancel, active))
        show = self.can_continue
        description, tooltip = (
            ("Continue", "Ask the model to go on from where the answer stopped")
            if self.text
            else ("Retry", "Send the same request again")
        )
        button = self.continue_button
        if button is not None:
            classes = visible_classes(button, show)
            return sent + set_traits(button, description=description, tooltip=tooltip, _dom_classes=classes)
        if show:
            sent += self._add_button(description, tooltip)
        return sent

    def _add_button(self, description: str, tooltip: str) -> Cost:
        """Make the Continue button, in Cancel's place at the end of the header row."""
        before = snapshot(self._header_row)
        button = self._parts.button("sw-continue", icon="play", description=description, tooltip=tooltip)
        self.continue_button = button
        button.on_click(lambda _button: self._on_continue and self._on_continue())
        self._header_row.children = (*self._header_row.children, button)
        return messages_between(before, snapshot(self._header_row))

    @property
    def can_continue(self) -> bool:
        """The stream ended short of a full answer and someone can start the next part."""
        return self._on_continue is not None and self.state.can_continue

    # ------------------------------------------------------------------ helpers

    def _sources(self, state: StreamState) -> list[Source]:
        if not self._prefix_sources:
            return state.sources
        seen = {s.url for s in self._prefix_sources}
        return self._prefix_sources + [s for s in state.sources if s.url not in seen]

    def _reset_marks(self) -> None:
        """Forget what was drawn of the current part, so that the next frame draws it."""
        self._shown_version = -1
        self._shown_phase = None
        self._slow_at = float("-inf")
        self._answer_length = len(self._carried_text)
        self._answer_finished = False
        self._cited = -1
        self._end_said = False

    def answer_html(self) -> str:
        """The answer as the pane shows it (the static output reuses this render): a state not
        drawn yet is drawn first."""
        if self.dirty:
            self.refresh()
        return self.answer.html

    def __repr__(self) -> str:
        return f"<StreamView {self.state.phase} {len(self.text)} chars, part {len(self._segments)}>"

    def _repr_mimebundle_(self, **kwargs: object) -> dict[str, object]:
        """Display the view itself (`StreamView(sw.parse(recording))` as a cell's last line shows
        the recorded answer): a state nobody drew yet is drawn first."""
        if self.dirty:
            self.refresh()
        return self.widget._repr_mimebundle_(**kwargs)
