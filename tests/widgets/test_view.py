"""The view, pane by pane, on real widgets: feed a `StreamState`, refresh, read the widget state.

Also the view's safety: untrusted text through every pane must never become executable markup,
and an API key must never reach a widget, a repr or the saved output.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import time
from pathlib import Path

import pytest
from support.hostile import JSON, HostileServer, Reply
from virtual_time import run_virtual
from widget_harness import Played, Wire, markup_problems, walk, widget_strings

import streamwidgets as sw
from streamwidgets import make_request
from streamwidgets.apps._terminal import TerminalPrinter, printable
from streamwidgets.core._events import (
    Citation,
    CitationsFound,
    ErrorEvent,
    Finish,
    Heartbeat,
    Problem,
    ReasoningDelta,
    RefusalDelta,
    Started,
    Terminator,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from streamwidgets.core._parse import parse
from streamwidgets.core._state import StreamState
from streamwidgets.markdown import escape_html, render_markdown
from streamwidgets.net import as_source
from streamwidgets.widgets import StreamHandle, StreamView, cancel_all, scheduler_for
from streamwidgets.widgets._answer import ENDED
from streamwidgets.widgets._fallback import WIDGET_MIMETYPE, final_bundle, placeholder_bundle
from streamwidgets.widgets._handle import running
from streamwidgets.widgets._sheet import stylesheet
from streamwidgets.widgets._theme import HIDDEN
from streamwidgets.widgets._toolcalls import format_arguments

SENTINEL = "sk-test-SENTINEL-0123456789abcdef"


def feed(state: StreamState, *events, t: float = 1.0) -> None:
    for event in events:
        state.apply(event, t)


def shown(part: object) -> bool:
    """A part (a pane or a widget) is on screen: it was made, and it is not hidden.

    The parts most answers never need (reasoning, tool calls, sources, the problem box, Continue)
    are None until the view makes them.
    """
    if part is None:
        return False
    widget = getattr(part, "widget", part)
    return HIDDEN not in widget._dom_classes


def value(pane: object) -> str:
    """What a pane shows ("" when it was never made)."""
    return pane.widget.value if pane is not None else ""  # type: ignore[attr-defined]


def full_stream(state: StreamState) -> None:
    state.begin(0.0)
    feed(state, Started(model="demo-reasoning"), t=0.1)
    feed(state, ReasoningDelta("Let me think about **this**."), t=0.2)
    feed(
        state, CitationsFound((Citation("https://www.example.com/a", "Example A"), Citation("https://b.org/x"))), t=0.3
    )
    feed(state, TextDelta("# Answer\n\nThe answer is 42 [1].\n"), t=0.5)
    feed(state, ToolCallDelta(0, "call_1", "get_weather", '{"city": '), t=0.6)
    feed(state, ToolCallDelta(0, arguments='"Paris", "days": [1, 2]}'), t=0.7)
    feed(state, Finish("stop"), UsageReport(Usage(12, 34, 46, 5, 7, 0.000037)), Terminator(), t=0.8)
    state.close(now=1.0)


# ----------------------------------------------------------------------------- panes


def test_every_pane_after_a_complete_stream():
    state = StreamState(model="demo", provider="demo")
    view = StreamView(state, max_tokens=100)
    full_stream(state)
    view.refresh(1.0)

    header = view.header.widget.value
    assert "demo-reasoning" in header and "done" in header
    assert "first token 200 ms" in header and "1.0 s" in header and "tok/s" in header
    assert "sw-pulse" not in header  # no sign of life once finished

    assert shown(view.reasoning.widget)
    assert view.reasoning.widget.selected_index is None  # collapsed when the answer started
    assert view.reasoning.widget.titles == ("Reasoning (7 tokens)",)
    assert "<strong>this</strong>" in view.reasoning.markdown.html

    assert "<h1" in view.answer.html and "The answer is 42" in view.answer.html

    sources = view.citations.widget.value
    assert shown(view.citations.widget)
    assert sources.count("<li>") == 2
    assert 'href="https://www.example.com/a" target="_blank" rel="noopener noreferrer nofollow"' in sources
    assert ">Example A</a>" in sources and "example.com" in sources
    assert ">b.org</a>" in sources  # no title: the domain stands in

    tools = view.tools.widget.value
    assert shown(view.tools.widget)
    assert "get_weather" in tools and "call_1" in tools
    assert json.dumps({"city": "Paris", "days": [1, 2]}, indent=2).replace('"', "&quot;") in tools

    usage = view.usage.widget.value
    for text in ("prompt 12", "completion 34", "cached 5", "reasoning 7", "total 46", "cost $0.000037"):
        assert text in usage
    assert "estimated" not in usage
    assert "width: 34.0%" in usage and "34 of 100 tokens allowed" in usage

    assert view.problems is None  # a clean answer never made the problem box
    assert view.cancel_button.disabled and not shown(view.cancel_button)  # nothing left to cancel
    assert view.continue_button is None


def test_parts_are_made_or_shown_only_when_they_have_something_to_show():
    view = StreamView(StreamState(model="m", provider="p"))
    view.on_cancel(lambda: None)
    view.refresh(0.0)
    for part in (view.reasoning, view.tools, view.citations, view.problems, view.continue_button):
        assert part is None
    assert not shown(view.usage)
    assert shown(view.cancel_button) and not view.cancel_button.disabled
    assert "waiting for the first token" in view.header.widget.value
    assert "sw-pulse" in view.header.widget.value


def test_a_plain_answer_never_opens_the_parts_it_does_not_need(monkeypatch):
    """Every widget is a comm_open of about a kilobyte: an answer with no reasoning, sources,
    tool calls or problem opens only the answer, the header row and the usage meter."""
    StreamView(StreamState())  # the kernel's shared stylesheet, layout and style models
    wire = Wire().install(monkeypatch)
    state = StreamState(model="m")
    view = StreamView(state, api="chat")
    view.on_cancel(lambda: None)
    view.on_continue(lambda: None)
    state.begin(0.0)
    view.refresh(0.0)
    feed(state, TextDelta("Hello **world**.\n\nA second paragraph."), t=0.5)
    view.refresh(0.5)
    feed(state, UsageReport(Usage(3, 9, 12)), Finish("stop"), Terminator(), t=0.9)
    state.close(now=1.0)
    view.refresh(1.0)
    opened = [m for m in wire.messages if m.msg_type == "comm_open"]
    classes = {c for node in walk(view.widget) for c in node._dom_classes}
    assert not classes & {"sw-reasoning-box", "sw-tools", "sw-sources", "sw-problems", "sw-continue"}
    # view, header row, header, Cancel, the status region, usage, the scroll box that follows the
    # answer's end, and the answer's box, page and live HTML widget
    assert len(opened) == 10, [m.size for m in opened]
    assert sum(m.size for m in opened) < 9_500


def test_parts_made_late_go_to_their_place_and_hide_again_on_a_clean_continue():
    first = StreamState(model="m")
    view = StreamView(first)
    view.on_continue(lambda: None)
    feed(first, TextDelta("Partial"), ToolCallDelta(0, "c1", "lookup", '{"q": 1}'))
    view.refresh(0.0)
    feed(first, CitationsFound((Citation("https://a.example/", "A"),)), ReasoningDelta("hm"))
    first.close(reason="the connection broke.")
    view.refresh(0.1)
    order = [
        view.header.widget,
        view.reasoning.widget,
        view.tools.widget,  # the calls above the answer they lead to (a tool loop's timeline)
        view.answer_box,
        view.citations.widget,
        view.usage.widget,
        view.problems.widget,
    ]
    children = [child for child in view.widget.children if "sw-style" not in child._dom_classes]
    assert children[0].children[:3] == (view.header.widget, view.announcer.widget, view.cancel_button)
    assert [children[0].children[0], *children[1:]] == order
    assert view.answer_box.children == (view.answer.widget,)
    assert view.continue_button in children[0].children and shown(view.continue_button)
    assert all(shown(part) for part in order)

    second = view.state.next_part()
    view.attach(second)
    feed(second, TextDelta(" and the rest."))
    view.refresh(1.0)
    assert not shown(view.tools) and not shown(view.problems) and not shown(view.continue_button)
    assert shown(view.citations)  # the first part's sources still belong to the answer


def test_the_header_names_the_api_and_puts_a_note_on_a_line_of_its_own():
    """Three views of one model through chat, responses and messages must not look alike; an
    offline note must not push the buttons out of the header row."""
    state = StreamState()
    view = StreamView(state, model="demo", provider="demo", api="responses", note="Offline demo: <no key>")
    view.refresh(0.0)
    header = view.header.widget.value
    assert 'demo · <span class="sw-api">responses</span>' in header
    assert "via demo" not in header  # the provider is not repeated when it is the model's name
    line, note = header.split('<div class="sw-header-note">')
    assert "Offline demo" not in line and note == "Offline demo: &lt;no key&gt;</div>"
    plain = StreamView(StreamState(), model="gpt", provider="openai")
    plain.refresh(0.0)
    assert "sw-api" not in plain.header.widget.value and "sw-header-note" not in plain.header.widget.value
    assert "via openai" in plain.header.widget.value
    view.attach(state.next_part())  # a later part keeps the labels of the source
    view.refresh(1.0)
    assert '<span class="sw-api">responses</span>' in view.header.widget.value


def test_cancel_shows_only_while_it_can_act():
    done = parse(b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n', api="chat")
    recorded = StreamView(done)  # a finished answer that nobody can cancel
    recorded._repr_mimebundle_()
    assert recorded.cancel_button.disabled and not shown(recorded.cancel_button)
    state = StreamState()
    live = StreamView(state)
    live.refresh(0.0)
    assert not shown(live.cancel_button)  # nobody to tell: no button to click
    live.on_cancel(lambda: None)
    feed(state, TextDelta("a"))
    live.refresh(0.1)
    assert shown(live.cancel_button) and not live.cancel_button.disabled
    state.close(cancelled=True)
    live.refresh(0.2)
    assert live.cancel_button.disabled and not shown(live.cancel_button)


def test_waiting_shows_keepalives_as_a_sign_of_life():
    state = StreamState(model="m")
    view = StreamView(state)
    state.begin(0.0)
    feed(state, Heartbeat(": keepalive"), Heartbeat(": keepalive"), Heartbeat(), t=3.0)
    view.refresh(3.5)
    header = view.header.widget.value
    assert "server alive · 3 keepalives" in header
    assert "3 s" in header  # the live clock counts from the request, whole seconds


def test_reasoning_opens_while_thinking_collapses_once_and_respects_the_reader():
    state = StreamState()
    view = StreamView(state)
    state.begin(0.0)
    feed(state, ReasoningDelta("step one"), t=0.1)
    view.refresh(0.1)
    assert shown(view.reasoning.widget)
    assert view.reasoning.widget.selected_index == 0
    assert view.reasoning.widget.titles == ("Thinking…",)
    assert "sw-status-thinking" in view.header.widget.value

    feed(state, TextDelta("Answer"), t=0.2)
    view.refresh(0.2)
    assert view.reasoning.widget.selected_index is None

    view.reasoning.widget.selected_index = 0  # the reader opens it again
    feed(state, ReasoningDelta(" and step two"), TextDelta(" goes on"), t=0.3)
    view.refresh(0.3)
    state.close(now=0.4)
    view.refresh(0.4)
    assert view.reasoning.widget.selected_index == 0
    assert "step two" in view.reasoning.markdown.html


def test_a_stream_that_ends_while_thinking_keeps_its_reasoning_open():
    state = StreamState()
    view = StreamView(state)
    feed(state, ReasoningDelta("only thoughts"))
    view.refresh(0.0)
    state.close()
    view.refresh(0.1)
    assert view.reasoning.widget.selected_index == 0
    assert "incomplete" in view.header.widget.value


@pytest.mark.parametrize(
    ("events", "close", "status", "kind", "words"),
    [
        (
            [TextDelta("Partial"), ErrorEvent("Overloaded, try later", "overloaded_error", None, 2.0)],
            {},
            "error",
            "sw-kind-error",
            ["Overloaded, try later", "code overloaded_error", "retry after 2 s", "is kept"],
        ),
        (
            [TextDelta("Partial")],
            {"reason": "the connection broke: peer closed."},
            "incomplete",
            "sw-kind-warn",
            ["Incomplete: the connection broke: peer closed.", "is kept"],
        ),
        ([TextDelta("Partial")], {"cancelled": True}, "cancelled", "sw-kind-info", ["Cancelled by you.", "is kept"]),
        (
            [TextDelta("Partial"), Finish("length"), Terminator()],
            {},
            "complete",
            "sw-kind-warn",
            ["cut short by the token limit"],
        ),
        (
            [RefusalDelta("I can't help with that."), Finish("stop"), Terminator()],
            {},
            "complete",
            "sw-kind-warn",
            ["I can&#x27;t help with that."],
        ),
        (
            [ErrorEvent("Unauthorized: the API key is missing or wrong", "invalid_api_key", 401)],
            {},
            "error",
            "sw-kind-error",
            ["Unauthorized", "HTTP 401"],
        ),
    ],
)
def test_final_statuses_explain_themselves_and_keep_the_partial_answer(events, close, status, kind, words):
    state = StreamState(model="m")
    view = StreamView(state)
    view.on_continue(lambda: None)
    view.on_cancel(lambda: None)
    state.begin(0.0)
    feed(state, *events, t=0.5)
    view.refresh(0.5)
    assert not view.cancel_button.disabled and shown(view.cancel_button)  # while streaming
    state.close(now=1.0, **close)
    assert state.status == status
    view.refresh(1.0)
    box = value(view.problems)
    assert shown(view.problems) and kind in box
    for word in words:
        assert word in box
    if state.text:
        assert "Partial" in view.answer.html  # the partial answer stays above the box
        assert view.continue_button.description == "Continue"
    assert view.cancel_button.disabled and not shown(view.cancel_button)  # Continue takes its place
    continuable = status in ("error", "incomplete", "cancelled") or state.finish == "length"
    assert shown(view.continue_button) is continuable
    if continuable and not state.text:
        assert view.continue_button.description == "Retry"


def test_a_continued_answer_grows_in_the_same_view():
    first = StreamState(model="m")
    view = StreamView(first)
    view.on_continue(lambda: None)
    feed(first, TextDelta("The first part, "), Finish("length"), Terminator())
    first.close()
    view.refresh(0.0)
    assert view.can_continue and view.continue_button.description == "Continue"
    second = first.next_part()
    view.attach(second)  # the next part carries the answer so far...
    feed(second, TextDelta("and the rest."), Terminator())
    second.close()
    view.refresh(1.0)
    assert view.answer.text == view.text == "The first part, and the rest."
    assert "part 2" in view.header.widget.value and not view.can_continue
    third = second.next_part()
    view.attach(third)  # ...and the one after it too
    feed(third, TextDelta(" More."), Terminator())
    third.close()
    view.refresh(2.0)
    assert view.answer.text == "The first part, and the rest. More."
    assert len(view.state.parts) == 3 and view.state.part_text == " More."


def test_warnings_are_listed_without_hiding_the_answer():
    state = StreamState()
    view = StreamView(state)
    feed(state, TextDelta("ok"), *[Problem(f"bad JSON in chunk {i}") for i in range(25)], Terminator())
    state.close()
    view.refresh(1.0)
    box = view.problems.widget.value
    assert "25 parts of the stream could not be read" in box
    assert "bad JSON in chunk 19" in box and "bad JSON in chunk 20" not in box and "… and 5 more" in box
    assert "ok" in view.answer.html


def test_an_estimate_is_marked_as_one():
    state = StreamState()
    view = StreamView(state, max_tokens=10)
    state.begin(0.0)
    feed(state, TextDelta("x" * 20), t=0.5)
    view.refresh(0.5)
    assert "completion ≈ 5 (so far, estimated)" in view.usage.widget.value
    feed(state, TextDelta("y" * 40), t=0.6)
    state.close(now=0.7)
    view.refresh(0.7)
    usage = view.usage.widget.value
    assert "completion ≈ 15 (estimated, about 4 characters per token)" in usage
    assert "about 15 of 10 tokens allowed" in usage and "width: 100.0%" in usage and "sw-bar-full" in usage


def test_the_token_limit_bar_needs_a_limit():
    state = StreamState()
    view = StreamView(state)
    feed(state, TextDelta("abcd"), UsageReport(Usage(completion_tokens=50)))
    view.refresh(0.0)
    assert "completion 50" in view.usage.widget.value
    assert "sw-bar" not in view.usage.widget.value
    view2 = StreamView(state, max_tokens=200)
    view2.refresh(0.0)
    assert "width: 25.0%" in view2.usage.widget.value


def test_tool_arguments_raw_while_streaming_pretty_when_complete_raw_when_invalid():
    assert format_arguments('{"a": 1', complete=False) == ('{"a": 1', "receiving arguments…")
    assert format_arguments('{"a":[1,2]}', complete=True) == ('{\n  "a": [\n    1,\n    2\n  ]\n}', "")
    text, note = format_arguments('{"a": 1', complete=True)
    assert text == '{"a": 1' and "not valid JSON" in note
    assert format_arguments("", complete=True) == ("", "no arguments")

    state = StreamState()
    view = StreamView(state)
    feed(state, ToolCallDelta(0, "c1", "first", '{"x":'))
    view.refresh(0.0)
    assert "receiving arguments" in view.tools.widget.value
    feed(state, ToolCallDelta(0, arguments=" 1}"), ToolCallDelta(1, "c2", "second", '{"y": tru'))
    view.refresh(0.1)
    tools = view.tools.widget.value
    assert "{\n  &quot;x&quot;: 1\n}" in tools  # the first call is complete: a later one began
    assert "Tool calls (2)" in tools and tools.count("receiving arguments") == 1
    state.close()
    view.refresh(0.2)
    assert "not valid JSON; shown exactly as received" in view.tools.widget.value
    assert "{&quot;y&quot;: tru" in view.tools.widget.value


def test_sources_only_link_web_urls():
    state = StreamState()
    view = StreamView(state)
    feed(
        state,
        CitationsFound(
            (
                Citation("javascript:alert(1)", "Click me"),
                Citation("data:text/html,<script>alert(1)</script>", None),
                Citation("  HTTPS://Example.com/x?a=1&b=2 ", "Fine"),
                Citation("ftp://files.example.com/f", "FTP"),
            )
        ),
    )
    view.refresh(0.0)
    html = view.citations.widget.value
    assert html.count("<a ") == 1
    assert "Click me" in html and "javascript:alert(1) (not a web link)" in html
    assert "&lt;script&gt;" in html
    assert "not a web link" in html.split("FTP")[1]
    assert markup_problems(html) == []


def test_citation_markers_are_handed_to_the_answer_pane():
    state = StreamState()
    view = StreamView(state, citation_markers=True)
    feed(state, CitationsFound((Citation("https://a.example/1", "A"), Citation("https://b.example/2", "B"))))
    feed(state, TextDelta("Fact [1] and fact [2].\n\n"), Terminator())
    state.close()
    view.refresh(0.0)
    assert 'href="https://a.example/1"' in view.answer.html
    assert 'href="https://b.example/2"' in view.answer.html


TRANSCRIPTS = sorted((Path(__file__).parents[1] / "core" / "transcripts").glob("*/*.sse"))


@pytest.mark.parametrize("recording", TRANSCRIPTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_recorded_provider_stream_renders(recording: Path):
    """Real streams from every provider the field guide covers, through `parse` and into a view."""
    meta = json.loads(recording.with_suffix(".json").read_text())
    state = parse(recording, provider=meta["provider"], api=meta["dialect"])
    view = StreamView(state, model="recorded", provider=meta["provider"], max_tokens=100)
    bundle = view._repr_mimebundle_()
    assert bundle[WIDGET_MIMETYPE]["model_id"] == view.widget.model_id
    assert view.answer.text == state.text
    assert f"sw-status-{state.status}" in view.header.widget.value
    assert (view.reasoning is not None) == bool(state.reasoning)
    assert shown(view.citations) == bool(state.citations)
    assert shown(view.tools) == bool(state.tool_calls)
    if state.status != "complete" or state.warnings:
        assert shown(view.problems)
    if state.error is not None:
        assert escape_html(state.error.message[:40]) in value(view.problems)
    assert audit_view(view) == []


# ----------------------------------------------------------------------------- frames and bytes


def test_unchanged_frames_send_nothing_and_a_fast_frame_leaves_the_slow_parts(monkeypatch):
    """Which frames are slow is the scheduler's call (tests/widgets/test_scheduler.py); a frame
    that is not slow draws the answer and leaves the header and usage as they were."""
    wire = Wire().install(monkeypatch)
    state = StreamState(model="m")
    view = StreamView(state, max_fps=20, slow_fps=2)
    state.begin(0.0)
    feed(state, TextDelta("Hello"), t=0.0)
    view.refresh(0.0)
    before = len(wire.updates())
    assert view.refresh(0.01) == 0 and len(wire.updates()) == before  # nothing changed: nothing sent
    assert not view.dirty and not view.news

    header = view.header.widget.value
    usage = view.usage.widget.value
    feed(state, TextDelta(" world"), UsageReport(Usage(1, 2)), t=0.1)
    assert view.dirty and not view.news  # more of the same phase: no news
    sent = view.draw(0.1)
    assert sent.messages >= 1 and "Hello world" in view.answer.html
    assert view.header.widget.value == header and view.usage.widget.value == usage  # slow: not yet
    feed(state, TextDelta("!"), t=0.6)
    slow = view.draw(0.6) + view.draw_slow(0.6)
    assert view.usage.widget.value != usage  # a slow frame draws them too
    assert len(wire.updates()) - before == sent.messages + slow.messages


def test_the_view_counts_the_messages_it_sends(monkeypatch):
    wire = Wire().install(monkeypatch)
    state = StreamState(model="m")
    view = StreamView(state)
    start = len(wire.messages)
    counted = view.refresh(0.0)
    for i in range(40):
        feed(state, TextDelta(f"word {i} " + ("\n\n" if i % 5 == 4 else "")), t=i * 0.1)
        counted += view.refresh(i * 0.1)
    state.close(now=5.0)
    counted += view.refresh(5.0)
    assert counted == len(wire.messages) - start


# ----------------------------------------------------------------------------- untrusted text

XSS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg/onload=alert(1)>",
    "<iframe src=javascript:alert(1)></iframe>",
    '"><img src=x onerror=alert(1)>',
    "'><svg onload=alert(1)>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![img](javascript:alert(1))",
    '<a href="javascript:alert(1)">x</a>',
    "<object data=javascript:alert(1)>",
    "<embed src=javascript:alert(1)>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<details open ontoggle=alert(1)>",
    "<body onload=alert(1)>",
    "<a href='&#106;avascript:alert(1)'>x</a>",
    "[a](&#106;avascript:alert(1))",
    "<<script>script>alert(1)<</script>/script>",
    "```html\n<script>alert(1)</script>\n```",
    "<style>@import 'javascript:alert(1)'</style>",
    "<form action=javascript:alert(1)><button>x</button></form>",
    "<base href=javascript:alert(1)//>",
]

try:  # the markdown engineer's list, when it is there, adds its own cases
    from xss_payloads import PAYLOADS as _SHARED  # type: ignore[import-not-found]

    XSS += [p for p in _SHARED if p not in XSS]
except ImportError:
    pass


#: The only `<style>` outside the sheet: the header's rule that gives the status region its
#: words, which arrive escaped to letters, digits, a little punctuation and CSS escapes.
ANNOUNCER_RULE = re.compile(
    r'<style>\.sw-say-[0-9a-f]{10} \.sw-said::after\{content:"(?:[^\W_]|[ ,.:;!?\'()_-]|\\[0-9a-f]{1,6} )*"\}</style>'
)
SCALE_RULE = re.compile(r"<style>\.sw-scale-\d+ \{ --sw-scale: \d+(\.\d+)?; \}</style>")


def audit_view(view: StreamView) -> list[str]:
    problems = []
    for node, name, text in widget_strings(view.widget):
        if "sw-style" in node._dom_classes and name == "value":
            # our own sheet, or a scale's one rule, nothing else
            assert text == f"<style>{stylesheet()}</style>" or SCALE_RULE.fullmatch(text), text
            continue
        if "sw-header" in node._dom_classes and name == "value":
            rule = ANNOUNCER_RULE.match(text)
            assert rule is not None, text[:300]
            text = text[rule.end() :]
        problems += [f"{type(node).__name__}.{name}: {p}" for p in markup_problems(text)]
    return problems


@pytest.mark.parametrize("payload", XSS)
def test_no_executable_markup_from_any_pane(payload):
    state = StreamState(model=payload, provider=payload)
    view = StreamView(state, model=payload, provider=payload, note=payload, max_tokens=50, citation_markers=True)
    view.on_continue(lambda: None)
    state.begin(0.0)
    feed(state, Started(model=payload), ReasoningDelta(payload + "\n\n" + payload), t=0.1)
    view.refresh(0.1)
    feed(
        state,
        CitationsFound(
            (Citation(payload, payload), Citation("https://ok.example/" + payload, payload), Citation(payload))
        ),
        TextDelta(
            payload + "\n\nsee [1] and [2]\n\n" + payload + "\n\n| a | b |\n|---|---|\n| " + payload + " | x |\n"
        ),
        ToolCallDelta(0, payload, payload, payload),
        ToolCallDelta(1, "c2", "ok", json.dumps({"p": payload})),
        RefusalDelta(payload),
        Problem(payload),
        t=0.2,
    )
    view.refresh(0.2)
    assert audit_view(view) == []
    feed(state, ErrorEvent(payload, payload, 500), t=0.3)
    state.close(now=0.4)
    view.refresh(0.4)
    assert payload in state.message
    assert audit_view(view) == []
    bundle = final_bundle(view, payload)
    assert markup_problems(bundle["text/html"]) == []


def test_the_saved_answer_keeps_the_tex_in_markdown_and_the_mathml_in_html():
    text = "The area is $$\\int_0^1 x^2\\,dx = \\tfrac13$$ and \\(e^{i\\pi}+1=0\\); it costs $5 and $10."
    state = StreamState(model="m")
    view = StreamView(state, model="m")
    state.begin(0.0)
    feed(state, Started(model="m"), TextDelta(text), Finish("stop"), Terminator(), t=0.1)
    state.close(now=0.2)
    view.refresh(0.2)
    bundle = final_bundle(view, "m")
    markdown, html = bundle["text/markdown"], bundle["text/html"]
    # JupyterLab, VS Code and GitHub typeset the markdown form with their own engine: the TeX as written
    assert "$$\\int_0^1 x^2\\,dx = \\tfrac13$$" in markdown and "e^{i\\pi}+1=0" in markdown
    # the HTML form is the pane's render: typeset MathML, the TeX kept on the element, prices as text
    assert html.count("<math") == 2 and 'display="block"' in html
    assert 'alttext="\\int_0^1 x^2\\,dx = \\tfrac13"' in html
    assert "$5 and $10" in html and "$$" not in html
    assert markup_problems(html) == []


# ----------------------------------------------------------------------------- the key


def test_an_api_key_never_reaches_the_view_a_repr_or_the_saved_output():
    request = make_request("hi", provider="openai", api_key=SENTINEL, base_url="http://127.0.0.1:9/v1", max_tokens=20)

    leaky = Played(
        (
            TextDelta("partial answer"),
            ErrorEvent(f"Incorrect API key provided: {SENTINEL}", "invalid_api_key", 401),
            Problem(f"could not read chunk Authorization: Bearer {SENTINEL}"),
            RuntimeError(f"a library bug that shows the key {SENTINEL} and Bearer {SENTINEL}"),
        ),
        key=SENTINEL,
    )

    async def main() -> StreamHandle:
        view = StreamView(model=request.model, provider=request.provider.name)
        handle = StreamHandle(leaky, view=view, scheduler=scheduler_for())
        await handle
        return handle

    handle = asyncio.run(main())
    view = handle.view
    assert handle.state.status == "error"
    assert "partial answer" in view.answer.html
    texts = [text for _node, _name, text in widget_strings(view.widget)]
    assert texts and not [t for t in texts if SENTINEL in t or "0123456789abcdef" in t]
    assert "***" in view.problems.widget.value
    for shown_text in (repr(handle), repr(request), repr(view), repr(handle.state)):
        assert SENTINEL not in shown_text
    bundle = final_bundle(view, request.model)
    assert SENTINEL not in json.dumps(bundle)
    assert SENTINEL not in json.dumps(placeholder_bundle(view.widget, request.model))


# ----------------------------------------------------------------------------- the handle


def test_a_background_stream_can_be_awaited_and_draws_its_final_frame():
    async def main() -> StreamHandle:
        view = StreamView(model="m")
        events = [TextDelta(f"token{i} ") for i in range(30)] + [Terminator()]
        handle = StreamHandle(Played(events, delay=0.002), view=view, scheduler=scheduler_for())
        assert not handle.done and handle in running()
        state = await handle
        assert state is handle.state and handle.done and handle not in running()
        return handle

    handle = asyncio.run(main())
    assert handle.state.status == "complete"
    assert "token29" in handle.view.answer.html
    assert "done" in handle.view.header.widget.value


def test_cancel_keeps_the_partial_answer_and_cancel_all_stops_every_stream(monkeypatch):
    def on_screen(view: StreamView) -> tuple[str, str, bool, tuple[str, ...]]:
        return view.answer.html, value(view.problems), view.cancel_button.disabled, view.answer_box._dom_classes

    async def main() -> tuple[list[StreamHandle], list[tuple[str, str, bool, tuple[str, ...]]]]:
        handles = []
        for _ in range(3):
            events = [TextDelta(f"t{i} ") for i in range(1000)]
            view = StreamView(clock=time.monotonic)
            handles.append(StreamHandle(Played(events, delay=0.01), view=view, scheduler=scheduler_for()))
        await asyncio.sleep(0.1)
        assert handles[0].cancel()
        await handles[0]
        # The moment the await returns, before any later frame could catch up: the final frame.
        shown = [on_screen(handles[0].view)]
        assert cancel_all() == 2
        for handle in handles[1:]:
            await handle  # a cancelled stream is awaited like any other: no CancelledError
            shown.append(on_screen(handle.view))
        assert not handles[0].cancel()
        return handles, shown

    handles, shown = run_virtual(monkeypatch, main())
    for handle, (answer, problems, cancel_disabled, box) in zip(handles, shown, strict=True):
        state = handle.state
        assert state.status == "cancelled" and state.text.startswith("t0 t1 ")
        assert "Cancelled by you." in problems
        assert answer == render_markdown(state.text)  # every token that arrived, and nothing else
        assert cancel_disabled and ENDED in box


def test_the_cancel_button_cancels_the_task(monkeypatch):
    async def main() -> StreamHandle:
        view = StreamView(clock=time.monotonic)
        events = [TextDelta("x ")] * 1000
        handle = StreamHandle(Played(events, delay=0.01), view=view, scheduler=scheduler_for())
        await asyncio.sleep(0.05)
        assert not view.cancel_button.disabled
        view.cancel_button.click()
        started = time.monotonic()
        await handle
        assert time.monotonic() - started < 0.01  # at once, not at the next token
        return handle

    assert run_virtual(monkeypatch, main()).state.status == "cancelled"


def test_an_exception_in_the_task_ends_up_in_the_view():
    broken = Played((TextDelta("kept"), ValueError("surprise")))

    async def main() -> StreamHandle:
        view = StreamView()
        handle = StreamHandle(broken, view=view, scheduler=scheduler_for())
        await handle
        return handle

    handle = asyncio.run(main())
    assert handle.state.status == "error"
    assert "ValueError: surprise" in handle.view.problems.widget.value
    assert "kept" in handle.view.answer.html


# ----------------------------------------------------------------------------- terminal and fallback


def test_the_terminal_gets_plain_text_without_control_sequences():
    assert printable("a\x1b]0;pwned\x07b\x1b[2Jc\u202etxt.exe\n\tz") == "a]0;pwnedb[2Jctxt.exe\n\tz"
    state = StreamState()
    out = io.StringIO()
    printer = TerminalPrinter(state, out, interval=0.0)
    feed(state, TextDelta("Hello \x1b[31mred"))
    printer.notify()
    feed(
        state, TextDelta(" world"), CitationsFound((Citation("https://a.example/", "A"),)), Finish("stop"), Terminator()
    )
    state.close()
    printer.finish()
    text = out.getvalue()
    assert "\x1b" not in text
    assert text.startswith("Hello [31mred world\n")
    assert "[1] A https://a.example/" in text
    assert "about 5 tokens" in text


def test_a_custom_server_is_labelled_by_its_host_and_zero_usage_details_are_hidden():
    from streamwidgets.net._sources import provider_label

    custom = make_request("hi", base_url="http://gpu.lab.example.edu:8000/v1", model="m")
    assert provider_label(custom) == "gpu.lab.example.edu:8000"
    assert provider_label(make_request("hi", provider="openai", api_key="k", offline=False)) == "openai"
    state = StreamState(provider="custom")
    view = StreamView(state, model="m", provider=provider_label(custom))
    feed(state, TextDelta("x"), UsageReport(Usage(5, 3, 8, 0, 0)), Terminator())
    state.close()
    view.refresh(2.0)
    assert "via gpu.lab.example.edu:8000" in view.header.widget.value
    usage = view.usage.widget.value
    assert "prompt 5" in usage and "total 8" in usage
    assert "cached" not in usage and "reasoning" not in usage  # a reported 0 says nothing a reader needs
    assert state.usage is not None and state.usage.cached_tokens == 0  # the data keeps it


def test_an_offline_stand_in_and_a_replay_wear_a_badge_in_the_header_and_the_saved_answer():
    state = StreamState()
    view = StreamView(
        state, model="gpt-4.1-mini", provider="openai", note="Offline demo: no key.", badge="offline demo"
    )
    feed(state, TextDelta("Hi"), Terminator())
    state.close()
    view.refresh(1.0)
    line = view.header.widget.value.split('<div class="sw-header-note">')[0]
    assert line.index('<span class="sw-badge">offline demo</span>') < line.index("gpt-4.1-mini")
    bundle = final_bundle(view, "gpt-4.1-mini", "offline demo")
    assert bundle["text/plain"].endswith("[offline demo · gpt-4.1-mini · done · about 1 tokens]")
    hostile = StreamView(StreamState(), badge="<img src=x onerror=alert(1)>")
    hostile.refresh(0.0)
    assert "<img" not in hostile.header.widget.value


def test_the_terminal_writes_at_most_once_per_interval_on_its_clock():
    now = [100.0]
    state, out = StreamState(), io.StringIO()
    printer = TerminalPrinter(state, out, interval=0.05, clock=lambda: now[0])
    feed(state, TextDelta("one"))
    printer.notify()
    assert out.getvalue() == "one"  # the first token at once
    feed(state, TextDelta(" two"))
    now[0] += 0.01
    printer.notify()
    assert out.getvalue() == "one"  # within the interval: held back, not written per token
    now[0] += 0.05
    printer.notify()
    assert out.getvalue() == "one two"
    feed(state, TextDelta(" three"), Terminator())
    state.close()
    printer.finish()  # the end is written whatever the clock says
    assert out.getvalue().startswith("one two three\n")


def test_show_with_display_false_streams_into_a_view_it_does_not_display(monkeypatch):
    """`display=False` lets a person place views themselves (`HBox([h.view.widget ...])`): nothing
    goes to the cell's output — no view, and no static answer when the stream ends."""
    import IPython.display

    from streamwidgets.apps import _show as launch

    outputs: list[tuple[str, object]] = []
    monkeypatch.setattr(launch, "_kernel_shell", lambda: type("Shell", (), {"execution_count": 3})())
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: outputs.append(("display", k["display_id"])))
    monkeypatch.setattr(IPython.display, "update_display", lambda *a, **k: outputs.append(("update", k["display_id"])))
    recording = Path(__file__).parents[1] / "core" / "transcripts" / "chat" / "everyais_include_usage.sse"

    async def main() -> tuple[StreamHandle, StreamHandle]:
        placed = sw.show(sw.replay(recording, speed=0, model="m", api="chat"), display=False)
        shown_ = sw.show(sw.replay(recording, speed=0, model="m"))
        await placed
        await shown_
        return placed, shown_

    placed, displayed = asyncio.run(main())
    assert placed.view is not None and placed.displayed_in is None
    assert placed.state.status == "complete" and placed.view.answer.text == placed.state.text != ""
    assert "sw-status-complete" in placed.view.header.widget.value and "sw-api" in placed.view.header.widget.value
    assert displayed.displayed_in == 3
    assert [kind for kind, _ in outputs] == ["display", "update"]  # the displayed one only
    assert outputs[0][1] == outputs[1][1]


def test_the_final_output_carries_the_answer_for_nbconvert_and_github():
    state = StreamState()
    view = StreamView(state)
    feed(state, TextDelta("# Title\n\nSome *answer* <img src=x onerror=alert(1)>"), Finish("stop"), Terminator())
    state.close()
    bundle = final_bundle(view, "demo_model")
    assert bundle[WIDGET_MIMETYPE]["model_id"] == view.widget.model_id
    assert bundle["text/markdown"].startswith("# Title\n\nSome *answer*")
    assert bundle["text/markdown"].endswith("*demo\\_model · done · about 13 tokens*")
    assert "<h1" in bundle["text/html"] and markup_problems(bundle["text/html"]) == []
    assert bundle["text/plain"].startswith("# Title")
    placeholder = placeholder_bundle(view.widget, "demo")
    assert set(placeholder) == {WIDGET_MIMETYPE, "text/plain"}


def test_every_part_has_a_stable_css_class():
    state = StreamState()
    view = StreamView(state)
    view.on_continue(lambda: None)
    feed(
        state,
        ReasoningDelta("hm"),
        TextDelta("so"),
        ToolCallDelta(0, "c", "f", "{}"),
        Problem("bad chunk"),
        CitationsFound((Citation("https://a.example/"),)),
    )
    state.close()
    view.refresh(0.0)
    classes = {c for node in walk(view.widget) for c in node._dom_classes}
    for expected in (
        "sw-view",
        "sw-header",
        "sw-cancel",
        "sw-continue",
        "sw-reasoning-box",
        "sw-answer",
        "sw-reasoning",
        "sw-tools",
        "sw-sources",
        "sw-usage",
        "sw-problems",
        "sw-style",
    ):
        assert expected in classes
    assert view.cancel_button.tooltip and view.continue_button.tooltip


# ----------------------------------------------------------------------------- a spent quota


def _quota_429(message: str, code: str) -> Reply:
    body = json.dumps({"error": {"message": message, "type": code, "code": code}}).encode()
    return Reply((body,), "429 Too Many Requests", (*JSON, ("Retry-After", "1")))


@pytest.mark.parametrize(
    "message,code,spent",
    [
        ("You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", True),
        ("Rate limit reached for requests per minute. Please try again in 1s.", "rate_limit_exceeded", False),
    ],
)
def test_a_spent_quota_says_waiting_will_not_help_and_offers_no_retry(message: str, code: str, spent: bool):
    """A 429 whose body says the quota is gone is not retried, and the view says so: no "retry
    after 1 s", no Retry button. A per-minute 429 (with `retries=0`, so that it ends at once)
    still shows its wait and offers Retry."""
    server = HostileServer({"/q/v1/chat/completions": _quota_429(message, code)}).start()
    try:
        request = make_request("hi", base_url=server.url("q"), model="m", api_key="k", retries=0 if not spent else 2)

        async def main() -> StreamHandle:
            handle = StreamHandle(as_source(request), view=StreamView(model="m"), scheduler=scheduler_for())
            await handle
            return handle

        handle = asyncio.run(main())
    finally:
        server.stop()
    view = handle.view
    assert handle.state.status == "error" and len(server.visits) == 1  # not retried either way
    box, header = value(view.problems), view.header.widget.value
    assert ("retry after 1 s" in box) is not spent
    assert "retry after" not in header  # the header says how it ended, the box what to do
    assert ("will not pass by waiting" in box) is spent
    assert view.can_continue is not spent
    assert (view.continue_button is not None and shown(view.continue_button)) is not spent
    if not spent:
        assert view.continue_button.description == "Retry"
