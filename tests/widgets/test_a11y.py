"""What a screen reader gets from a view, read from the widgets' state while real streams from the
embedded provider play into it: one polite status region whose words change once per phase and
never per token, no live region around the answer, named buttons; and the `scale` option.

The region's words are the `content` of a CSS rule the header carries (see `header.Announcer`),
so the test reads them back from that rule, as the browser does.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Iterator
from typing import Any, Optional

import pytest
from widget_harness import walk

from streamwidgets import make_request
from streamwidgets.core._events import ErrorEvent, Terminator, TextDelta
from streamwidgets.core._state import StreamState
from streamwidgets.net import as_source
from streamwidgets.server import DemoServer
from streamwidgets.widgets import StreamHandle, StreamView, scheduler_for, set_defaults
from streamwidgets.widgets._header import announcement, css_string
from streamwidgets.widgets._traffic import Cost

RULE = re.compile(
    r'<style>\.(sw-say-[0-9a-f]{10}) \.sw-said::after\{content:"((?:[^"\\<]|\\[0-9a-f]{1,6} )*)"\}</style>'
)
LIVE = re.compile(r"aria-live|role=\"(status|alert|log|marquee|timer)\"")


def said(view: StreamView) -> str:
    """The words of the view's status region, as the browser reads them from the header's rule."""
    rule = RULE.match(view.header.widget.value)
    assert rule is not None, view.header.widget.value[:200]
    assert rule.group(1) in view.announcer.widget._dom_classes, "the rule is this view's own"
    return re.sub(r"\\([0-9a-f]{1,6}) ", lambda m: chr(int(m.group(1), 16)), rule.group(2))


class Frames:
    """Every frame the view drew: what the status region said and how long the answer was."""

    def __init__(self, view: StreamView) -> None:
        self.said: list[str] = []
        self.lengths: list[int] = []
        self.region_values = [view.announcer.widget.value]
        view.announcer.widget.observe(lambda change: self.region_values.append(change["new"]), "value")
        draw, draw_slow = view.draw, view.draw_slow

        def seen(sent: Cost) -> Cost:
            self.said.append(said(view))
            self.lengths.append(len(view.answer.html))
            return sent

        view.draw = lambda now, *, final=False: seen(draw(now, final=final))  # type: ignore[method-assign]
        view.draw_slow = lambda now, *, final=False: seen(draw_slow(now, final=final))  # type: ignore[method-assign]

    @property
    def heard(self) -> list[str]:
        """The announcements: every change of the region's words to something to say."""
        out = []
        last = ""
        for words in self.said:
            if words != last and words:
                out.append(words)
            last = words
        return out


def stream(
    server: DemoServer, model: str, *, cancel_after: Optional[int] = None, **demo: Any
) -> tuple[StreamHandle, Frames]:
    """Stream `model` from the embedded provider into a view, as `show()` does in a kernel."""
    request = make_request(
        "Explain photosynthesis.", model=model, base_url=server.base_url, demo={"first_token_delay": 0, **demo}
    )

    async def main() -> tuple[StreamHandle, Frames]:
        view = StreamView(model=request.model, provider="demo", api=request.api)
        frames = Frames(view)
        handle = StreamHandle(as_source(request), view=view, scheduler=scheduler_for())
        if cancel_after is not None:
            while len(handle.state.text) < cancel_after and not handle.done:
                await asyncio.sleep(0.01)
            handle.cancel()
        await handle
        return handle, frames

    return asyncio.run(main())


def words(text: str) -> str:
    n = len(text.split())
    return f"{n:,} word{'' if n == 1 else 's'}"


def test_a_streamed_answer_is_announced_at_its_start_and_its_end_and_never_per_token(demo_server: DemoServer):
    handle, frames = stream(demo_server, "demo-markdown", tokens_per_second=300)
    assert handle.state.status == "complete"
    assert frames.heard == ["answering", f"answer complete, {words(handle.text)}"]
    growing = [b for a, b in itertools.pairwise(frames.lengths) if b > a]
    assert len(growing) >= 10, f"the answer was drawn in {len(growing)} growing frames: too few to show anything"
    # The region itself is sent once and never touched: only its words (in the header) change.
    assert len(frames.region_values) == 1
    assert re.fullmatch(
        r'<div class="sw-said" role="status" aria-live="polite" aria-atomic="true"></div>', frames.region_values[0]
    )


def test_thinking_then_answering_are_two_phases(demo_server: DemoServer):
    handle, frames = stream(demo_server, "demo-reasoning", tokens_per_second=400)
    assert handle.state.reasoning and handle.state.status == "complete"
    assert frames.heard == ["thinking", "answering", f"answer complete, {words(handle.text)}"]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("demo-error", r"answer failed: .{10,}, {words} kept"),
        ("demo-cutoff", r"answer cut off before the end, {words} kept"),
        ("demo-length", r"answer stopped at the token limit, {words}"),
        ("demo-error-early", r"answer failed: .{10,}, 0 words kept"),
    ],
)
def test_how_an_answer_ended_is_said_once_in_words(demo_server: DemoServer, model: str, expected: str):
    handle, frames = stream(demo_server, model, tokens_per_second=400)
    end = expected.replace("{words}", re.escape(words(handle.text)))
    heard = frames.heard
    assert re.fullmatch(end, heard[-1]), heard
    assert heard[:-1] in ([], ["answering"]), heard
    if model == "demo-error":
        assert handle.state.error is not None and handle.state.error.message[:30] in heard[-1]


def test_a_cancel_is_said_once_with_what_was_kept(demo_server: DemoServer):
    handle, frames = stream(demo_server, "demo-long", tokens_per_second=200, cancel_after=200)
    assert handle.state.status == "cancelled" and len(handle.text) >= 200
    assert frames.heard == ["answering", f"answer cancelled, {words(handle.text)} kept"]


def test_the_answer_is_no_live_region_and_the_header_is_not_one_either(demo_server: DemoServer):
    """The header is redrawn every second (its clock): a live header would read the clock."""
    handle, _frames = stream(demo_server, "demo-markdown", tokens_per_second=0)
    view = handle.view
    assert view.answer.html and not LIVE.search(view.answer.html)
    header = RULE.sub("", view.header.widget.value)
    assert "sw-status-complete" in header and not LIVE.search(header)
    live = [node for node in walk(view.widget) if LIVE.search(str(getattr(node, "value", "")))]
    assert live == [view.announcer.widget], "one live region per view"


def test_every_button_has_a_name_and_says_what_it_does():
    state = StreamState()
    view = StreamView(state)
    view.on_cancel(lambda: None)
    view.on_continue(lambda: None)
    state.begin(0.0)
    view.refresh(0.0)
    state.apply(TextDelta("partial"))
    state.apply(ErrorEvent("overloaded", "overloaded_error"))
    state.close()
    view.refresh(1.0)
    buttons = [node for node in walk(view.widget) if node.__class__.__name__ == "Button"]
    assert {b.description for b in buttons} == {"Cancel", "Continue"}
    assert all(b.description.strip() and b.tooltip for b in buttons)


def test_provider_words_reach_the_rule_escaped_and_redacted():
    hostile = 'bad "key" sk-abc\\ </style><script>alert(1)</script>\n'
    escaped = css_string(hostile)
    assert not set('"\\<>\n') & set(re.sub(r"\\[0-9a-f]{1,6} ", "", escaped))
    assert re.sub(r"\\([0-9a-f]{1,6}) ", lambda m: chr(int(m.group(1), 16)), escaped) == hostile
    state = StreamState()
    state.apply(ErrorEvent(hostile, "bad"))
    state.close()
    text = announcement(state, "one two", redact=lambda t: t.replace("sk-abc", "***"))
    assert text.startswith("answer failed: bad") and "sk-abc" not in text and text.endswith(", 2 words kept")


def test_a_view_drawn_anew_at_the_end_says_how_it_ended_a_moment_later():
    """`show()` replaces the live output with the final one when the stream ends, and the page
    draws the view anew: the end words must change in the new region, not in the old one."""
    state = StreamState()
    view = StreamView(state)
    view.end_said_later = True
    state.begin(0.0)
    view.refresh(0.0)
    state.apply(TextDelta("a short answer"), 0.1)
    view.refresh(0.1)
    state.apply(Terminator(), 0.2)
    state.close(now=0.2)
    view.refresh(0.2)
    assert said(view) == "answering" and "sw-status-complete" in view.header.widget.value
    assert view.say_end(state) == 1
    assert said(view) == "answer complete, 3 words"
    assert view.say_end(state) == 0  # said once
    second = StreamState()
    view.attach(second)  # a Continue moved on before the words were due: nothing to say for the old part
    assert view.say_end(state) == 0


@pytest.fixture
def defaults() -> Iterator[None]:
    previous = set_defaults()
    yield
    set_defaults(scale=previous.scale)


def test_scale_for_one_view_and_for_the_kernel(defaults: None):
    def scale_of(view: StreamView) -> Optional[str]:
        classes = [c for c in view.widget._dom_classes if c.startswith("sw-scale-")]
        rules = [
            n.value
            for n in view.widget.children
            if "sw-style" in n._dom_classes and n.value.startswith("<style>.sw-scale-")
        ]
        assert len(classes) == len(rules) <= 1
        if classes:
            assert rules[0].startswith(f"<style>.{classes[0]} ")
        return classes[0] if classes else None

    assert scale_of(StreamView(StreamState())) is None  # the notebook's own size costs no rule
    assert scale_of(StreamView(StreamState(), scale=1.5)) == "sw-scale-150"
    set_defaults(scale=2)
    assert scale_of(StreamView(StreamState())) == "sw-scale-200"
    assert scale_of(StreamView(StreamState(), scale=1)) is None  # the view's own choice wins
    with pytest.raises(ValueError, match="scale must be between"):
        set_defaults(scale=10)
    with pytest.raises(ValueError, match="scale must be between"):
        StreamView(StreamState(), scale=0.1)
    assert scale_of(StreamView(StreamState())) == "sw-scale-200"  # a refused scale changes nothing
