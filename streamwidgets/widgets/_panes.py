"""The panes of a view, in one table: what each is, when it is made, how often it is drawn, where
it sits, its rules in the stylesheet and its form in a saved notebook.

`StreamView` makes, draws and lays out its panes from `PANES`; the theme puts each row's `css` in
the stylesheet in the table's order; the saved output (`_fallback.py`) writes each row's
`saved_html` and `saved_text`. So a new pane is a module (a class that speaks `_pane.Pane`, and
its `CSS`) and a row here, in its place top to bottom.

Most answers need few of the panes, and every widget is a `comm_open` of about a kilobyte: a pane
with `made` is made (by the view) the first frame that predicate holds, and makes its widgets
then; until then it costs nothing and is not in the layout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Literal, Optional, TypeVar

import ipywidgets as w

from ..core import Redact, StreamState
from ..net import Labels
from . import _answer, _citations, _controls, _header, _problems, _reasoning, _toolcalls, _usage
from ._answer import AnswerPane
from ._citations import CitationsPane
from ._controls import Controls
from ._header import Header
from ._problems import ProblemBox, reported
from ._reasoning import ReasoningPane
from ._sparkline import TokenTrace
from ._sync import Parts
from ._tokens import TokenPane
from ._toolcalls import ToolCallsPane, shown_calls, tool_calls_text
from ._usage import UsageMeter

__all__ = ["PANES", "PaneSpec", "Context", "Rate", "Place", "CHANGES", "FRAMES", "SLOW", "ROW", "BODY", "ALWAYS"]

Rate = Literal["changes", "frames", "slow"]
#: Drawn in each frame in which the state changed, and in the final one: the answer's panes.
CHANGES: Rate = "changes"
#: Drawn in every frame, changed or not (the buttons: who may cancel or continue is not in the state).
FRAMES: Rate = "frames"
#: Drawn at the slow rate (`Pace.slow_fps`): what changes all the time but matters less.
SLOW: Rate = "slow"

Place = Literal["row", "body"]
#: In the header row, left to right (the status region right after the header, the buttons last).
ROW: Place = "row"
#: In the view's column under the header row, top to bottom.
BODY: Place = "body"

#: `made` of a pane made with the view.
ALWAYS = None


@dataclass(frozen=True)
class Context:
    """What a pane is made with besides the states it then draws."""

    parts: Parts
    labels: Labels
    #: The state the view was made with, and when (the header's first look).
    state: StreamState
    now: float
    #: The view's redaction, whatever it is set to later.
    redact: Redact
    #: Tokens per 100 ms (None: no sparkline).
    trace: Optional[TokenTrace]
    #: Whether the view offers Continue (or Retry) for a state.
    offers: Callable[[StreamState], bool]


P = TypeVar("P")


def _widget(pane: Any) -> tuple[Optional[w.Widget]]:
    return (pane.widget,)


@dataclass(frozen=True)
class PaneSpec(Generic[P]):
    """One pane: `name` (the view's `pane(name)`), `make` it from the view's `Context`, when it is
    `made` (`ALWAYS`, or the first frame whose state it holds for), its `rate`, its `place` (its
    `widgets` that exist, in order, go there), its `css` in the view's stylesheet, and in a saved
    notebook its `saved_html` (inside the answer's box, or after its status line when
    `after_status`) and its `saved_text` (lines before the answer in the text forms)."""

    name: str
    make: Callable[[Context], P]
    made: Optional[Callable[[StreamState], bool]]
    rate: Rate
    place: Place = BODY
    widgets: Callable[[P], Iterable[Optional[w.Widget]]] = _widget
    css: str = ""
    saved_html: Optional[Callable[[P, StreamState], str]] = None
    after_status: bool = False
    saved_text: Optional[Callable[[StreamState], str]] = None


#: Every pane of a view, in its place top to bottom (the header row first, left to right).
PANES: tuple[PaneSpec[Any], ...] = (
    PaneSpec[Header](
        "header",
        lambda c: Header(c.parts, c.labels, c.state, c.now, c.redact),
        ALWAYS,
        SLOW,  # and at once when the phase changes (the scheduler's `news`)
        ROW,
        widgets=lambda header: (header.widget, header.announcer.widget),
        css=_header.CSS,
    ),
    PaneSpec[Controls](
        "controls",
        lambda c: Controls(c.parts),
        ALWAYS,
        FRAMES,
        ROW,
        widgets=lambda controls: controls.buttons,
        css=_controls.CSS,
    ),
    PaneSpec[ReasoningPane](
        "reasoning",
        lambda c: ReasoningPane(c.parts),
        lambda state: state.reasoning_length > 0,
        CHANGES,
        css=_reasoning.CSS,
        saved_html=ReasoningPane.saved_html,
    ),
    # The calls before the answer they led to: the timeline of a tool loop reads downward.
    PaneSpec[ToolCallsPane](
        "tools",
        lambda c: ToolCallsPane(c.parts),
        lambda state: bool(shown_calls(state)),  # or the first Run / Skip question (`StreamView.confirm`)
        CHANGES,
        widgets=lambda tools: (tools.widget, tools.questions),
        css=_toolcalls.CSS,
        saved_html=ToolCallsPane.saved_html,
        saved_text=lambda state: tool_calls_text(shown_calls(state)),
    ),
    PaneSpec[AnswerPane](
        "answer",
        lambda c: AnswerPane(c.parts, citation_markers=c.labels.citation_markers),
        ALWAYS,
        CHANGES,
        css=_answer.CSS,
        saved_html=AnswerPane.saved_html,
    ),
    # The token view carries its own sheet (`_tokens.TOKENS_CSS`), sent with the first one.
    PaneSpec[TokenPane](
        "tokens",
        lambda c: TokenPane(c.parts),
        lambda state: bool(state.tokens),
        CHANGES,
        saved_html=TokenPane.saved_html,
        after_status=True,
    ),
    PaneSpec[CitationsPane](
        "citations",
        lambda c: CitationsPane(c.parts),
        lambda state: bool(state.citations),
        CHANGES,
        css=_citations.CSS,
        saved_html=CitationsPane.saved_html,
    ),
    PaneSpec[UsageMeter](
        "usage",
        lambda c: UsageMeter(c.parts, c.labels.max_tokens, c.trace),
        ALWAYS,
        SLOW,
        css=_usage.CSS,
    ),
    PaneSpec[ProblemBox](
        "problems",
        lambda c: ProblemBox(c.parts, c.offers, c.redact),
        reported,
        SLOW,
        css=_problems.CSS,
    ),
)
