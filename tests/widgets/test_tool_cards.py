"""The tool cards: each call's name, arguments and result in the view, the timeline across tool
steps, escaping, and the Run / Skip questions of `confirm=True` clicked on real widgets, over a
real stream from the embedded provider."""

from __future__ import annotations

import asyncio
import json

import pytest
from widget_harness import markup_problems
from xss_payloads import PAYLOADS

from streamwidgets import make_request
from streamwidgets.core._events import Finish, Terminator, TextDelta, ToolCallDelta
from streamwidgets.core._state import StreamState
from streamwidgets.core._tools import DECLINED, ToolResult
from streamwidgets.net._sources import Live
from streamwidgets.widgets import StreamHandle, StreamView, scheduler_for
from streamwidgets.widgets._toolcalls import RESULT_SHOWN_CHARS


def asked(*calls: tuple[str, str, str]) -> StreamState:
    state = StreamState()
    for i, (cid, name, args) in enumerate(calls):
        state.apply(ToolCallDelta(i, cid, name, args), 1.0)
    state.extend([Finish("tool_calls"), Terminator()], 1.0)
    state.close(now=1.0)
    return state


def test_cards_show_each_result_and_stay_above_the_answer_across_steps():
    first = asked(("c1", "add", '{"a": 2, "b": 3}'), ("c2", "divide", '{"a": 1, "b": 0}'), ("c3", "search", "{}"))
    calls = first.tool_calls
    calls[0].result = ToolResult("done", content='{"sum": 5}', seconds=0.012)
    calls[1].result = ToolResult("error", error="ZeroDivisionError: division by zero", seconds=0.001)
    calls[2].result = ToolResult("done", content="z" * (RESULT_SHOWN_CHARS * 2), note="the result had 4,000 characters")
    view = StreamView(first)
    view.refresh(1.0)
    html = view.tools.widget.value
    assert "Tool calls (3)" in html and "add()" in html and "divide()" in html
    assert "{\n  &quot;sum&quot;: 5\n}" in html and "done in 12 ms" in html
    assert "failed" in html and "ZeroDivisionError: division by zero" in html
    assert f"showing {RESULT_SHOWN_CHARS:,} of {RESULT_SHOWN_CHARS * 2:,} characters" in html
    assert "the result had 4,000 characters" in html

    second = first.next_part()
    view.attach(second)
    second.extend([TextDelta("The sum is 5.")], 2.0)
    view.refresh(2.0)
    assert view.tools.widget.value.count('class="sw-tool"') == 3  # the step's cards stay
    assert "sw-hidden" not in view.tools.widget._dom_classes
    children = list(view.widget.children)
    assert children.index(view.tools.widget) < children.index(view.answer_box)
    assert view.answer.text == "The sum is 5."


def test_a_card_says_how_a_call_stands_while_it_runs_or_waits():
    state = asked(("c1", "add", "{}"), ("c2", "add", "{}"))
    state.tool_calls[0].result = ToolResult("running")
    state.tool_calls[1].result = ToolResult("waiting")
    view = StreamView(state)
    view.refresh(1.0)
    html = view.tools.widget.value
    assert "running…" in html and "waiting for you: Run or Skip" in html
    state.tool_calls[1].result = ToolResult("declined", content=DECLINED)
    state.version += 1
    view.refresh(2.0)
    assert "skipped: you declined" in view.tools.widget.value


@pytest.mark.parametrize("payload", PAYLOADS)
def test_everything_in_a_card_is_escaped(payload):
    state = asked(("id" + payload, payload[:60] or "x", json.dumps({"q": payload})), ("c2", "t", payload))
    state.tool_calls[0].result = ToolResult("done", content=payload, note=payload)
    state.tool_calls[1].result = ToolResult("error", error=payload)
    view = StreamView(state)
    view.refresh(1.0)
    assert markup_problems(view.tools.widget.value) == []


def _handle(api: str, tools: list, **options) -> StreamHandle:
    request = make_request("Weather in Paris and Tokyo?", model="demo-tools", api=api, tools=tools, **options)
    view = StreamView(model="demo-tools")
    return StreamHandle(Live(request), view=view, scheduler=scheduler_for(), confirm=True)


def get_weather(city: str) -> dict:
    """The weather in a city."""
    return {"city": city, "temperature": 20}


async def _questions(handle: StreamHandle, n: int) -> list:
    view = handle.view
    assert view is not None
    for _ in range(2000):
        questions = view.tools.questions if view.tools is not None else None
        if questions is not None and len(questions.children) == n:
            return list(questions.children)
        await asyncio.sleep(0.01)
    raise AssertionError("the Run / Skip questions never appeared")


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_confirm_run_and_skip_on_real_buttons(api):
    async def main() -> StreamHandle:
        handle = _handle(api, [get_weather])
        rows = await _questions(handle, 2)
        assert handle.view is not None and handle.view.tools is not None
        assert handle.view.tools.questions in handle.view.widget.children
        assert "Run <code>get_weather(city=&#x27;Paris&#x27;)</code>? (card 1, id " in rows[0].children[0].value
        assert [b.description for b in rows[0].children[1:]] == ["Run", "Skip"]
        rows[0].children[1].click()  # Run the Paris call
        rows[1].children[2].click()  # Skip the Tokyo one
        await handle
        return handle

    handle = asyncio.run(main())
    state = handle.state
    assert state.status == "complete", state.message
    results = [c.result for c in state.parts[0].tool_calls]
    assert [r.status for r in results if r] == ["done", "declined"]
    assert DECLINED in state.text  # the demo model quotes what it was sent
    assert handle.view is not None and handle.view.tools is not None
    assert handle.view.tools.questions is not None and handle.view.tools.questions.children == ()
    assert "skipped: you declined" in handle.view.tools.widget.value


def test_cancel_while_waiting_for_a_click_ends_the_answer():
    async def main() -> StreamHandle:
        handle = _handle("chat", [get_weather])
        await _questions(handle, 2)
        handle.cancel()
        await handle
        return handle

    handle = asyncio.run(main())
    assert handle.state.status == "cancelled"
    assert [c.result.status for c in handle.state.parts[0].tool_calls if c.result] == ["cancelled", "cancelled"]
    assert handle.view is not None and handle.view.tools is not None
    assert handle.view.tools.questions is not None and handle.view.tools.questions.children == ()


def test_the_saved_output_keeps_the_timeline():
    from streamwidgets.widgets._fallback import final_bundle

    first = asked(("c1", "add", '{"a": 2, "b": 3}'))
    first.tool_calls[0].result = ToolResult("done", content="5", seconds=0.002)
    second = first.next_part()
    second.extend([TextDelta("The sum is 5."), Finish("stop"), Terminator()], 2.0)
    second.close(now=2.0)
    view = StreamView(second)
    bundle = final_bundle(view, "demo-tools")
    html = bundle["text/html"]
    assert html.index("add()") < html.index("The sum is 5.")
    assert markup_problems(html) == []
    assert bundle["text/plain"].startswith('[tool] add({"a": 2, "b": 3}) → done in 2 ms: 5')
    assert "\\[tool\\] add\\(" in bundle["text/markdown"] and "The sum is 5." in bundle["text/markdown"]


def test_the_questions_are_drawn_by_the_pane_and_counted():
    """`confirm` only records a question: the next frame makes its row (and says what that
    sent), the frame after the click takes it away and closes its widgets."""

    async def main() -> None:
        state = asked(("c1", "add", "{}"))
        state.tool_calls[0].result = ToolResult("waiting")
        view = StreamView(state)
        view.refresh(1.0)
        assert view.tools is not None and view.tools.questions is None
        asking = asyncio.ensure_future(view.confirm(state.tool_calls[0]))
        await asyncio.sleep(0)
        state.version += 1
        cost = view.draw(2.0)
        questions = view.tools.questions
        assert questions is not None and questions in view.widget.children
        children = list(view.widget.children)
        assert children.index(view.tools.widget) < children.index(questions) < children.index(view.answer_box)
        (row,) = questions.children
        assert cost.messages >= 5  # the row, its label and two buttons, and the box, opened
        row.children[2].click()  # Skip
        assert await asking is False
        state.tool_calls[0].result = ToolResult("declined", content=DECLINED)
        state.version += 1
        cost = view.draw(3.0)
        assert questions.children == () and cost.messages >= 5  # the box updated, four widgets closed
        assert row.comm is None and row.children[1].comm is None

    asyncio.run(main())


def test_arguments_nested_100000_deep_show_raw_with_a_note():
    from streamwidgets.widgets._toolcalls import format_arguments

    deep = '{"value": ' + "[" * 100_000 + "]" * 100_000 + "}"
    text, note = format_arguments(deep, complete=True)
    assert text == deep and "nested too deeply" in note


def test_a_card_shows_what_the_function_receives_and_no_reordering_character():
    from streamwidgets.core._state import ToolCall
    from streamwidgets.core._tools import ToolResult
    from streamwidgets.widgets._toolcalls import call_summary, tool_calls_html

    call = ToolCall("c1", "save\u202etxt.exe", '{"path": "a\u202etxt.exe", "force": "yes"}')
    call.result = ToolResult("waiting", received={"path": "a\u202etxt.exe", "force": True})
    html = tool_calls_html([call], done=False)
    assert "\u202e" not in html and "\\u202e" in html
    assert "&quot;force&quot;: true" in html and "as the function receives them" in html  # True, not "yes"
    summary = call_summary(call)
    assert "\u202e" not in summary and summary.startswith("save\\u202etxt.exe(") and "force=True" in summary
