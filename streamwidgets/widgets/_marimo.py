"""`MarimoView`: the view for marimo, which renders anywidgets and no standard ipywidgets.

The same pane table (`_panes.PANES`: which panes, in which order, made when, drawn at which rate)
and the same frame scheduler (`_scheduler.py`, through the `Drawable` protocol) drive it as they
drive `StreamView`; only the last step differs. Each pane's part is HTML made in Python by the
functions the Jupyter panes use (`header_html`, `tool_calls_html`, `citations_html`, `usage_html`,
`problem_html`, all escaped), and the answer and the reasoning are `IncrementalMarkdown`'s
segments (markdown and math rendered and sanitized in Python: one renderer, one set of XSS
guarantees). One small ES module (`_marimo.js`) places that HTML and sends clicks back; it never
parses markdown.

What the page receives, per frame, is one custom message: its sequence number, and in a binary
buffer the frame itself, compressed (`packed`; a frame too small to gain is sent as it is): the panes whose HTML changed, and the markdown
patches (`[start, segments]`: segments from `start` on are replaced) — so a sealed block crosses
once and only the live tail is sent again. Rendered HTML is repetitive (highlighted code, the same
classes again and again) and JSON would escape every quote in it: packed, a frame costs about half
its JSON even after marimo carries the buffer in base64. The `snapshot` trait holds everything at
once, packed the same way; it is set when the view is made, when a page asks for it (it saw a gap
in the sequence: it attached late or reconnected) and with the final frame, so that a page opened
later, a saved session and an exported HTML page show the answer.

Every marimo message carries about 180 bytes of envelope (`ENVELOPE_BYTES`), against Jupyter's
~650: the cost each frame reports to the scheduler is counted with it, and with base64's third.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Optional

from ..core import Redact, StreamState, ToolCall, unchanged
from ..markdown import MARKDOWN_CLASS, IncrementalMarkdown, Patch, escape_html
from ..net import Labels, Source, script_note
from . import _panes
from ._citations import citations_html
from ._controls import CONTINUE, RETRY, Buttons
from ._defaults import view_defaults
from ._header import announcement, header_html
from ._panes import CHANGES, FRAMES, SLOW, Rate
from ._problems import problem_html
from ._reasoning import ReasoningPane
from ._scheduler import Pace
from ._sheet import stylesheet
from ._sparkline import TokenTrace, sparkline_svg
from ._theme import scale_class
from ._toolcalls import call_summary, shown_calls, tool_calls_html, visible
from ._traffic import NOTHING, Cost
from ._usage import usage_html

__all__ = ["MarimoView", "marimo_view_for", "ESM", "ENVELOPE_BYTES", "widget_class", "packed", "unpacked"]

#: The front end: one ES module shipped in the package.
ESM = Path(__file__).with_name("_marimo.js")
#: What marimo wraps around one widget message (its `model-lifecycle` op), measured in marimo 0.25.
ENVELOPE_BYTES = 180
#: The scheduler's overhead budget (`Pace`): half the Jupyter view's, as a packed frame costs about
#: half its JSON — so a frame waits for the next about as long as in Jupyter (a long live tail
#: pushes it back as much), and what that costs on the wire is halved.
OVERHEAD_BYTES_PER_SECOND = Pace.overhead_bytes_per_second / 2
#: The panes the marimo view does not draw: the token view (its hover cards are widgets of their own).
NOT_IN_MARIMO = frozenset({"tokens"})

#: Rules only this front end needs: its wrappers take no room, its buttons look like Jupyter's.
MARIMO_CSS = """
.sw-pane, .sw-seg { display: contents; }
.sw-view { display: flex; flex-direction: column; gap: 4px; }
.sw-header-row { display: flex; }
.sw-view .sw-header { flex: 1 1 auto; min-width: 0; }
.sw-view button.jupyter-button { font: inherit; font-size: var(--sw-ui-size); line-height: 1.8;
  border: 1px solid rgba(127, 127, 127, 0.5); border-radius: 4px; background: transparent; color: inherit;
  cursor: pointer; }
.sw-view button.jupyter-button:disabled { cursor: default; opacity: 0.5; }
.sw-view details.sw-reasoning-box > summary { cursor: pointer; font-size: var(--sw-ui-size); opacity: 0.8; }
.sw-tool-ask { display: flex; gap: 6px; align-items: center; }
/* JupyterLab's rendered-markdown spacing, which marimo's page does not carry. */
.sw-md p, .sw-md ul, .sw-md ol, .sw-md pre, .sw-md table, .sw-md blockquote { margin: 0 0 0.7em; }
.sw-md ul { list-style: disc; padding-left: 1.6em; }
.sw-md ol { list-style: decimal; padding-left: 1.6em; }
"""


@cache
def widget_class() -> type:
    """The anywidget class of the view (anywidget is imported here: the `[marimo]` extra)."""
    import anywidget
    import traitlets

    class StreamWidget(anywidget.AnyWidget):
        """The widget a marimo cell shows: its own rule (a `scale=`), its classes and its snapshot (packed
        JSON: the whole answer again, which the page needs only when it attaches or at the end)."""

        # The stylesheet rides with the code, which marimo serves over HTTP once per page (its
        # `_esm` never crosses the websocket), not in each view's state.
        _esm = ESM.read_text(encoding="utf-8") + f"\nconst SHEET = {json.dumps(stylesheet() + MARIMO_CSS)};\n"
        css = traitlets.Unicode("").tag(sync=True)
        classes = traitlets.List(traitlets.Unicode()).tag(sync=True)
        snapshot = traitlets.Bytes(b"").tag(sync=True)

    return StreamWidget


@dataclass
class _Question:
    """One Run / Skip question of `confirm=True`, and the click's answer (True for Run)."""

    call: ToolCall
    card: int
    answer: Any  # asyncio.Future[bool]


class _Markdown:
    """A growing markdown text as segments: what the page was sent, and the patch of a frame."""

    def __init__(self, citations: Optional[list[str]] = None) -> None:
        self.renderer = IncrementalMarkdown(citations)
        self.segments: list[str] = list(self.renderer.segments)
        self.length = -1
        self.finished = False
        self._start: Optional[int] = None  # the first segment changed since the last frame
        self._committed = 0

    def apply(self, patch: Patch) -> None:
        patch.apply(self.segments)
        self._start = patch.start if self._start is None else min(self._start, patch.start)

    def take(self) -> tuple[Optional[list[Any]], int]:
        """The patch since the last frame (None: nothing changed) and the HTML committed by it."""
        if self._start is None:
            return None, 0
        start, self._start = self._start, None
        committed = sum(len(s) for s in self.segments[:-1])
        fresh, self._committed = max(0, committed - self._committed), committed
        return [start, self.segments[start:]], fresh


class MarimoView(Buttons):
    """The panes of one answer in one anywidget (`widget`); see the module's docstring.

    It takes `StreamView`'s keywords and speaks the same protocols: the scheduler's (`pace`,
    `dirty`, `news`, `live`, `draw`, `draw_slow`) and the handle's (`attach`, `redact`,
    `on_cancel`, `on_continue`, `confirm`).
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
        overhead_bytes_per_second: float = OVERHEAD_BYTES_PER_SECOND,
        scale: Optional[float] = None,
        sparkline: bool = True,
        clock: Callable[[], float] = time.monotonic,
        redact: Redact = unchanged,
    ) -> None:
        scale = view_defaults().scale if scale is None else scale
        classes = ["sw-view", scale_class(scale)] if scale != 1 else ["sw-view"]
        css = f".{classes[1]} {{ --sw-scale: {round(scale * 100) / 100:g}; }}" if scale != 1 else ""
        self.pace = Pace(max_fps, slow_fps, overhead_bytes_per_second)
        self.labels = Labels(model, provider, api, max_tokens, citation_markers, note, badge)
        self.redact: Redact = redact
        self.trace: Optional[TokenTrace] = TokenTrace() if sparkline else None
        self._clock = clock
        self._state = state if state is not None else StreamState(model=model, provider=provider)
        self._rows = tuple(row for row in _panes.PANES if row.name not in NOT_IN_MARIMO)
        self._at = {rate: tuple(row for row in self._rows if row.rate == rate) for rate in (CHANGES, FRAMES, SLOW)}
        self._made = {row.name for row in self._rows if row.made is None}
        self._html: dict[str, str] = {}  # what the page shows of each pane
        self._changed: dict[str, str] = {}  # what changed since the last frame
        self._order_sent = False
        self._said = ""
        self._said_changed = False
        self.end_said_later = False  # the marimo view says the end with its final frame
        self._markdown = {"answer": _Markdown([] if citation_markers else None), "reasoning": _Markdown()}
        self._cited = -1
        self._questions: dict[int, _Question] = {}
        self._ids = itertools.count(1)
        self._on_cancel: Optional[Callable[[], object]] = None
        self._on_continue: Optional[Callable[[], object]] = None
        self._seq = 0
        self._saved = -1  # the sequence number of the last snapshot left in the widget's state
        self._fresh = 0
        self._shown_version = -1
        self._shown_phase: Optional[str] = None
        self._shown_retry: Any = object()
        self.sent = NOTHING  # everything this view sent, for benchmarks and tests
        now = clock()
        for rate in (CHANGES, FRAMES, SLOW):
            self._draw(rate, self._state, now, False)
        self._take_frame()  # the first look rides in the widget's first state, not in a message
        self._seq = 0
        self.widget = widget_class()(css=css, classes=classes, snapshot=packed(self.snapshot()))
        self.widget.on_msg(self._received)

    # ------------------------------------------------------------------ the handle's side

    @property
    def state(self) -> StreamState:
        return self._state

    @property
    def text(self) -> str:
        return self._state.text

    def attach(self, state: StreamState) -> None:
        """Show `state` from now on (the next part of the answer, or the stream's first)."""
        self._state = state
        self._shown_version = -1
        self._shown_phase = None
        self._markdown["answer"].finished = self._markdown["reasoning"].finished = False

    async def confirm(self, call: ToolCall) -> bool:
        """Ask under the cards whether to run `call`: True when Run is clicked, False for Skip."""
        shown = shown_calls(self._state)
        card = next((i + 1 for i, c in enumerate(shown) if c is call), len(shown))
        key = next(self._ids)
        self._questions[key] = _Question(call, card, asyncio.get_running_loop().create_future())
        self._made.add("tools")  # the question makes the pane, calls shown or not
        self._order_sent = False
        self._shown_version = -1  # drawn in the next frame (the call waiting changes the state too)
        try:
            return bool(await self._questions[key].answer)
        finally:
            del self._questions[key]
            self._shown_version = -1

    def say_end(self, state: StreamState) -> int:
        return 0  # said with the final frame (`end_said_later` stays False)

    # ------------------------------------------------------------------ the scheduler's side

    @property
    def dirty(self) -> bool:
        return self._state.version != self._shown_version

    @property
    def news(self) -> bool:
        state = self._state
        return state.phase != self._shown_phase or state.retry is not self._shown_retry

    @property
    def live(self) -> bool:
        return not self._state.done

    def draw(self, now: float, *, final: bool = False) -> Cost:
        """Send what changed of the answer's panes and the buttons (everything, finished, when
        `final`) in one message; return what it cost."""
        state = self._state
        final = final or state.done
        if self.trace is not None and self.dirty:
            self.trace.sample(now, state.estimated_completion_tokens)
        if self.dirty or final:
            self._draw(CHANGES, state, now, final)
        self._draw(FRAMES, state, now, final)
        self._shown_version, self._shown_phase, self._shown_retry = state.version, state.phase, state.retry
        return self._send(final)

    def draw_slow(self, now: float, *, final: bool = False) -> Cost:
        """Send the header, usage and problem box when they changed."""
        state = self._state
        final = final or state.done
        self._draw(SLOW, state, now, final)
        return self._send(final, end=True)

    def refresh(self, now: Optional[float] = None, *, final: bool = False) -> int:
        """Draw everything that changed now (no scheduler asked); return the messages sent."""
        now = self._clock() if now is None else now
        return (self.draw(now, final=final) + self.draw_slow(now, final=final)).messages

    def catch_up(self) -> None:
        if self.dirty:
            self.refresh()

    def snapshot(self) -> dict[str, Any]:
        """Everything the page shows, at the sequence number of the last frame sent."""
        return {
            "seq": self._seq,
            "order": self._order(),
            "panes": dict(self._html),
            "md": {name: [0, list(md.segments)] for name, md in self._markdown.items()},
            "said": self._said,
        }

    # ------------------------------------------------------------------ drawing

    def _draw(self, rate: Rate, state: StreamState, now: float, final: bool) -> None:
        for row in self._at[rate]:
            if row.name not in self._made:
                if row.made is None or not row.made(state):
                    continue
                self._made.add(row.name)
                self._order_sent = False
            html = _FORMS[row.name](self, state, now, final)
            if html != self._html.get(row.name):
                self._html[row.name] = self._changed[row.name] = html

    def _take_frame(self) -> Optional[dict[str, Any]]:
        """The message of this frame (None: nothing changed), and its committed HTML."""
        message: dict[str, Any] = {}
        fresh = 0
        if self._changed:
            message["panes"], self._changed = self._changed, {}
        patches = {}
        for name, md in self._markdown.items():
            patch, committed = md.take()
            if patch is not None:
                patches[name] = patch
                fresh += committed
        if patches:
            message["md"] = patches
        if not self._order_sent:
            message["order"], self._order_sent = self._order(), True
        if self._said_changed:
            message["said"], self._said_changed = self._said, False
        if not message:
            return None
        self._seq += 1
        message["seq"] = self._seq
        self._fresh = fresh
        return message

    def _send(self, final: bool, end: bool = False) -> Cost:
        """Send this frame's message; at the `end` (the last draw of a final frame) also leave the
        whole view in the widget's state, once per part."""
        message = self._take_frame()
        cost = NOTHING
        if message is not None:
            text = json.dumps(message, separators=(",", ":"))
            seq = message.pop("seq")
            data = packed(message)
            wire = _base64(len(data))
            if wire < len(text):  # a frame of a few characters is sent as it is
                self.widget.send({"seq": seq}, buffers=[data])
            else:
                wire = len(text)
                self.widget.send({**message, "seq": seq})
            # The answer's share of the wire: its committed HTML's share of the frame.
            cost = Cost(1, wire + ENVELOPE_BYTES, self._fresh * wire // len(text))
        if final and end and self._saved != self._seq:
            # The end stays in the widget's state: a page opened later, or the saved notebook, shows it.
            self._saved = self._seq
            snapshot = packed(self.snapshot())
            self.widget.snapshot = snapshot
            cost += Cost(1, _base64(len(snapshot)) + ENVELOPE_BYTES, 0)
        self.sent += cost
        return cost

    def _order(self) -> list[list[str]]:
        return [[row.name, row.place] for row in self._rows if row.name in self._made]

    def _received(self, _widget: Any, content: Any, _buffers: Any = None) -> None:
        """A click (or a page asking for the snapshot), sent by `_marimo.js`."""
        if not isinstance(content, dict):
            return
        event = content.get("event")
        if event == "resync":
            self.widget.snapshot = packed(self.snapshot())
        elif event == "cancel" and self._on_cancel is not None and not self._state.done:
            self._on_cancel()
        elif event == "continue" and self._on_continue is not None and self.offers(self._state):
            self._on_continue()
        elif event in ("run", "skip"):
            ask = content.get("ask")
            question = self._questions.get(ask) if isinstance(ask, int) else None
            if question is not None and not question.answer.done():
                loop = question.answer.get_loop()
                loop.call_soon_threadsafe(_choose, question.answer, event == "run")

    # ------------------------------------------------------------------ the panes' HTML

    def _header(self, state: StreamState, now: float, final: bool) -> str:
        said = announcement(state, state.text, self.redact)
        if said != self._said:
            self._said, self._said_changed = said, True
        labels = self.labels
        note = " ".join(n for n in (labels.note, script_note(state)) if n) or None
        return (
            '<div class="sw-header">'
            + header_html(
                state,
                now=now,
                model=labels.model,
                provider=labels.provider,
                api=labels.api,
                part=len(state.parts),
                note=note,
                badge=labels.badge,
            )
            + "</div>"
        )

    def _controls(self, state: StreamState, now: float, final: bool) -> str:
        active = not state.done and self._on_cancel is not None
        hidden = "" if active else " sw-hidden"
        html = (
            f'<button class="jupyter-button sw-cancel{hidden}" data-sw-act="cancel"'
            f' title="Stop this answer and close the connection"{"" if active else " disabled"}>Cancel</button>'
        )
        if self.offers(state):
            word, tip = CONTINUE if state.text_length else RETRY
            html += f'<button class="jupyter-button sw-continue" data-sw-act="continue" title="{tip}">{word}</button>'
        return html

    def _reasoning(self, state: StreamState, now: float, final: bool) -> str:
        md = self._markdown["reasoning"]
        answering = bool(state.text_length or state.tool_calls)
        if state.reasoning_length != md.length or (final and not md.finished):
            if final:
                md.apply(md.renderer.finish(state.reasoning, cut_off=state.can_continue and not answering))
                md.finished = True
            else:
                md.apply(md.renderer.update(state.reasoning))
            md.length = state.reasoning_length
        usage = state.usage
        tokens = usage.reasoning_tokens if usage is not None else None
        title = ReasoningPane.title(state.reasoning_length, answering or final, tokens)
        opened = "" if answering or final else " open"
        return (
            f'<details class="sw-reasoning-box"{opened}><summary>{escape_html(title)}</summary>'
            f'<div class="sw-reasoning {MARKDOWN_CLASS} jp-RenderedHTMLCommon" data-sw-md="reasoning"></div></details>'
        )

    def _tools(self, state: StreamState, now: float, final: bool) -> str:
        calls = shown_calls(state)
        html = f'<div class="sw-tools">{tool_calls_html(calls, done=final)}</div>' if calls else ""
        rows = []
        for key, question in self._questions.items():
            call = question.call
            which = f" (card {question.card}" + (f", id {escape_html(visible(call.id[:40]))})" if call.id else ")")
            rows.append(
                f'<div class="sw-tool-ask"><span class="sw-tool-question">Run <code>{escape_html(call_summary(call))}'
                f"</code>?{which}</span>"
                f'<button class="jupyter-button sw-tool-run" data-sw-act="run" data-sw-ask="{key}"'
                ' title="Run this call now">Run</button>'
                f'<button class="jupyter-button sw-tool-skip" data-sw-act="skip" data-sw-ask="{key}"'
                ' title="Do not run it; the model is told you declined">Skip</button></div>'
            )
        if rows:
            html += f'<div class="sw-tool-questions">{"".join(rows)}</div>'
        return html

    def _answer(self, state: StreamState, now: float, final: bool) -> str:
        md = self._markdown["answer"]
        if self.labels.citation_markers and len(state.citations) != self._cited:
            md.apply(md.renderer.set_citations([c.url for c in state.citations]))
            self._cited = len(state.citations)
        if state.text_length != md.length or (final and not md.finished):
            if final:
                md.apply(md.renderer.finish(state.text, cut_off=state.can_continue))
                md.finished = True
            else:
                md.apply(md.renderer.update(state.text))
            md.length = state.text_length
        ended = " sw-ended" if final else ""
        return (
            f'<div class="sw-answer-box{ended}"><div class="sw-answer {MARKDOWN_CLASS} jp-RenderedHTMLCommon"'
            ' data-sw-md="answer"></div></div>'
        )

    def _citations(self, state: StreamState, now: float, final: bool) -> str:
        return f'<div class="sw-sources">{citations_html(state.citations)}</div>' if state.citations else ""

    def _usage(self, state: StreamState, now: float, final: bool) -> str:
        sparkline = sparkline_svg(self.trace.per_bin()) if self.trace is not None else ""
        html = usage_html(state, max_tokens=self.labels.max_tokens, earlier=state.earlier, sparkline=sparkline)
        return f'<div class="sw-usage">{html}</div>' if html else ""

    def _problems(self, state: StreamState, now: float, final: bool) -> str:
        html = problem_html(state, can_continue=self.offers(state), redact=self.redact)
        return f'<div class="sw-problems">{html}</div>' if html else ""

    def __repr__(self) -> str:
        return f"<MarimoView {self._state.phase} {self._state.text_length} chars, part {len(self._state.parts)}>"


def packed(data: dict[str, Any]) -> bytes:
    """A frame or a snapshot as it crosses: its JSON, compressed with raw deflate (the page unpacks
    it with the browser's own `DecompressionStream("deflate-raw")`)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    return deflate.compress(json.dumps(data, separators=(",", ":")).encode()) + deflate.flush()


def unpacked(data: bytes) -> dict[str, Any]:
    """A frame or a snapshot from what crossed (`packed`'s inverse)."""
    return dict(json.loads(zlib.decompress(data, -15)))


def _base64(size: int) -> int:
    """The characters `size` bytes take in base64, as marimo carries binary buffers."""
    return (size + 2) // 3 * 4


def _choose(answer: Any, run: bool) -> None:
    if not answer.done():
        answer.set_result(run)


#: Each pane of the table, as HTML for the marimo page (the token view is not drawn there).
_FORMS: dict[str, Callable[[MarimoView, StreamState, float, bool], str]] = {
    "header": MarimoView._header,
    "controls": MarimoView._controls,
    "reasoning": MarimoView._reasoning,
    "tools": MarimoView._tools,
    "answer": MarimoView._answer,
    "citations": MarimoView._citations,
    "usage": MarimoView._usage,
    "problems": MarimoView._problems,
}


def marimo_view_for(source: Source, **options: Any) -> MarimoView:
    """A marimo view labelled as `source` labels itself (as `view_for` does for Jupyter)."""
    labels = source.labels()
    return MarimoView(
        model=labels.model,
        provider=labels.provider,
        api=labels.api,
        max_tokens=labels.max_tokens,
        citation_markers=labels.citation_markers,
        note=labels.note,
        badge=labels.badge,
        **options,
    )
