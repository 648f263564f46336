"""`MarkdownPane`: a growing markdown text shown with standard ipywidgets, at linear byte cost.

Every widget message costs about half a kilobyte of Jupyter envelope, and re-sending a widget's
whole value is what makes the naive `HTML.value = render(all)` quadratic. The pane shows the
segments of `IncrementalMarkdown` in `HTML` widgets that each hold a run of whole segments:

* the last, *live* widget holds the blocks committed since it was opened plus the live tail, and
  is updated every frame (one message);
* once its committed part reaches a threshold, it is *sealed*: set to just that part and never
  touched again, and a new live widget takes the tail (a `comm_open` and a `children` update).

Sealing costs a new widget (about 2 kB on the wire); not sealing costs re-sending the committed
part with every frame. The threshold that balances the two is about
sqrt(2 x cost of a new widget x HTML added per frame), which the pane tracks. (Keeping committed
blocks in a widget of their own instead costs an extra message per committing frame, which
measured worse.) Widgets live in pages (`VBox`es of at most `page_size`), so no `children` list
that gets re-sent grows without bound, and all widgets share one `Layout` and one `HTMLStyle`, so
a new `HTML` widget opens one comm instead of three.

Because each widget holds whole segments, every widget is well-formed HTML on its own and `html`
(the values joined) is exactly `render_markdown(text)` after `finish`. While the text grows, its
last block is shown healed (see `streamwidgets.markdown._heal`): no stray `**`, backtick, half link or
raw formula delimiter; `finish(text, cut_off=True)` keeps that healed form for an answer that
stopped short, so its dangling markers stay out of view (the text itself is untouched).

Every change says what it sent (`update`, `finish` and `set_citations` return a `Cost`), with
the HTML it committed for good as `fresh`: the frame scheduler paces a view by the rest.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import ipywidgets as w
from ipywidgets.widgets.widget_string import HTMLStyle

from ..markdown import MARKDOWN_CLASS, IncrementalMarkdown, Patch
from ._sync import closed, opened, set_traits
from ._theme import shared_model
from ._traffic import NOTHING, Cost

__all__ = ["MarkdownPane"]

# A new widget costs ~2 kB on the wire (its comm_open, ~1.1 kB with shared layout and style, and
# the children update of its page); the committed part comes in lumps, so re-sending it costs
# more than its average size. Sweeping this weight from 300 to 5,000 on two 20k-token answers
# changed the bytes by less than 7%; 1,000 was best.
_SEAL_WEIGHT = 1000
_MIN_SEAL = 512
_MAX_SEAL = 32768


@dataclass
class _Run:
    """Segments [start, end) shown by one widget; the live run (the last) has end None."""

    widget: w.HTML
    start: int
    end: Optional[int] = None


class MarkdownPane:
    """A pane that shows a growing markdown text; `widget` is the container to display.

    `update(text)` takes the full text so far (the view calls it at most ~20 times a second),
    `finish(text)` the final text, `set_citations(urls)` the sources `[n]` markers link to; each
    returns what it sent. `made` is what making the pane sent (its first three widgets).
    `seal_at` fixes the seal threshold (characters of HTML) instead of adapting it; `heal=False`
    shows the tail exactly as the text so far renders.
    """

    def __init__(
        self,
        css_class: str = "sw-answer",
        citations: Optional[Sequence[str]] = None,
        *,
        seal_at: Optional[int] = None,
        page_size: int = 16,
        heal: bool = True,
    ) -> None:
        self._markdown = IncrementalMarkdown(citations, heal=heal)
        self._segments: list[str] = list(self._markdown.segments)
        self._seal_at = seal_at
        self._page_size = page_size
        self._growth = 0.0  # smoothed HTML added per update, for the adaptive threshold
        # Shared by every pane in the kernel: a new widget of the pane opens one comm, not three.
        self._layout = shared_model("pane-layout", lambda: w.Layout(margin="0", width="100%"))
        self._style = shared_model("html-style", HTMLStyle)
        self._committed = 0  # characters of HTML in the segments before the tail
        self._runs: list[_Run] = [_Run(self._new_html(""), 0)]
        self._pages: list[w.VBox] = [w.VBox([self._runs[0].widget], layout=self._layout)]
        # Classes given at creation ride in the widget's first message (add_class sends one each).
        self.widget = w.VBox(
            self._pages, layout=self._layout, _dom_classes=(css_class, MARKDOWN_CLASS, "jp-RenderedHTMLCommon")
        )
        self.made = opened(self._runs[0].widget, self._pages[0], self.widget)

    # -- public ---------------------------------------------------------------------------------

    @property
    def html(self) -> str:
        """The concatenation of the widgets' current values: what the browser shows."""
        return "".join(run.widget.value for run in self._runs)

    @property
    def text(self) -> str:
        return self._markdown.text

    def update(self, text: str) -> Cost:
        """Show the text so far."""
        return self._apply(self._markdown.update(text))

    def finish(self, text: str, cut_off: bool = False) -> Cost:
        """Show the final text, exactly as `render_markdown` renders it; `cut_off` (the answer
        stopped short) leaves its last block healed, without the markers the cut left dangling."""
        return self._apply(self._markdown.finish(text, cut_off))

    def set_citations(self, urls: Optional[Sequence[str]]) -> Cost:
        """Link `[n]` markers to these source URLs (re-renders only blocks with changed markers)."""
        return self._apply(self._markdown.set_citations(urls))

    def close(self) -> None:
        """Close every widget of the pane (their comms too)."""
        for run in self._runs:
            run.widget.close()
        for page in self._pages:
            page.close()
        self.widget.close()

    # -- internals ------------------------------------------------------------------------------

    def _new_html(self, value: str) -> w.HTML:
        return w.HTML(value=value, layout=self._layout, style=self._style)

    def _threshold(self) -> int:
        if self._seal_at is not None:
            return self._seal_at
        balanced = math.sqrt(2 * _SEAL_WEIGHT * max(self._growth, 1.0))
        return int(min(_MAX_SEAL, max(_MIN_SEAL, balanced)))

    def _apply(self, patch: Patch) -> Cost:
        old_size = sum(len(s) for s in self._segments[patch.start :])
        patch.apply(self._segments)
        added = sum(len(s) for s in patch.segments) - old_size
        self._growth = 0.8 * self._growth + 0.2 * max(0, added)
        tail = len(self._segments) - 1
        # Only the tail changed (most frames): what is committed stayed as it was.
        committed = sum(len(s) for s in self._segments[:tail]) if patch.start < tail else self._committed
        fresh, self._committed = max(0, committed - self._committed), committed
        starts = [run.start for run in self._runs]
        first = max(0, bisect_right(starts, min(patch.start, tail)) - 1)  # first run touched
        dropped = self._fit_runs(first, tail)
        sent = NOTHING
        for run in self._runs[first:-1]:
            sent += set_traits(run.widget, value="".join(self._segments[run.start : run.end]))
        sent += self._sync_live()
        sent += self._sync_pages(min(first, len(self._runs) - 1))
        sent += closed(*(run.widget for run in dropped))
        # The block still being written is what any live frame must send: it counts as text too.
        return sent + Cost(fresh=fresh + (len(self._segments[-1]) if sent.messages else 0))

    def _fit_runs(self, first: int, tail: int) -> list[_Run]:
        """Make the sealed runs end before the tail segment; return the runs to close.

        Segments can go (a fence's chunks become one block, a new text starts over): the first
        sealed run that reaches the tail becomes the live run again, and the runs after it go.
        """
        for i in range(first, len(self._runs) - 1):
            end = self._runs[i].end
            assert end is not None
            if end > tail:
                dropped = self._runs[i + 1 :]
                del self._runs[i + 1 :]
                self._runs[i].end = None
                return dropped
        return []

    def _sync_live(self) -> Cost:
        live = self._runs[-1]
        tail = len(self._segments) - 1  # the segments before the tail are committed
        committed = sum(len(s) for s in self._segments[live.start : tail])
        if tail > live.start and committed >= self._threshold():
            live.end = tail
            sent = set_traits(live.widget, value="".join(self._segments[live.start : tail]))
            widget = self._new_html(self._segments[tail])
            self._runs.append(_Run(widget, tail))
            return sent + opened(widget)
        return set_traits(live.widget, value="".join(self._segments[live.start :]))

    def _sync_pages(self, first_run: int) -> Cost:
        """Put the widgets into pages of `page_size`, sending only the lists that changed."""
        size = self._page_size
        widgets = [run.widget for run in self._runs]
        wanted = (len(widgets) + size - 1) // size
        sent = NOTHING
        for index in range(first_run // size, wanted):
            children = tuple(widgets[index * size : (index + 1) * size])
            if index < len(self._pages):
                sent += set_traits(self._pages[index], children=children)
            else:
                page = w.VBox(children, layout=self._layout)
                self._pages.append(page)
                sent += opened(page)
        removed = self._pages[wanted:]
        del self._pages[wanted:]
        sent += set_traits(self.widget, children=tuple(self._pages))
        return sent + closed(*removed)
