"""Gemini's native API live in a real kernel: the view fills its panes from Gemini's chunks
(thought parts, grounding sources, tool calls run in the kernel), and Cancel closes the
connection, as the embedded provider records."""

from __future__ import annotations

import time

import pytest
from kernels import Kernel

from streamwidgets.server import DemoServer

pytestmark = pytest.mark.kernel


def test_a_gemini_answer_fills_the_view_live_with_its_reasoning_and_sources(kernel: Kernel):
    kernel.execute(
        "g = sw.show('What is streaming?', api='gemini', model='demo-reasoning', base_url=BASE,"
        " demo={'tokens_per_second': 200})"
    )
    deadline = time.monotonic() + 15
    while kernel.value("g.state.text_length") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    live = kernel.value("[g.state.status, g.done, len(g.state.reasoning) > 0]")
    assert live == ["streaming", False, True]
    final = kernel.value(
        "[(await g).status, g.state.finish, g.view.answer.text == g.state.text,"
        " g.view.pane('reasoning') is not None, g.state.usage.reasoning_tokens > 0]"
    )
    assert final == ["complete", "stop", True, True, True]

    kernel.execute(
        "s = sw.show('How do LLMs stream answers?', api='gemini', model='demo-search', base_url=BASE, demo={'tokens_per_second': 0})"
    )
    shown = kernel.value(
        "[(await s).status, len(s.state.citations), all(c.url in s.view.pane('citations').widget.value"
        " for c in s.state.citations)]"
    )
    assert shown[0] == "complete" and shown[1] >= 3 and shown[2]


def test_tools_run_in_the_kernel_over_gemini(kernel: Kernel):
    kernel.execute(
        "def get_weather(city: str) -> dict:\n"
        "    '''The weather in a city.'''\n"
        "    return {'city': city, 'temperature_c': 21}\n"
        "t = sw.show(\"What's the weather in Paris?\", api='gemini', model='demo-tools', base_url=BASE,"
        " tools=[get_weather], demo={'tokens_per_second': 0})"
    )
    final = kernel.value("[(await t).status, t.state.finish, '21' in t.state.text, len(t.state.parts)]")
    assert final[:3] == ["complete", "stop", True] and final[3] == 2


def test_cancel_closes_a_gemini_stream(kernel: Kernel, demo_server: DemoServer):
    last = max((c.id for c in demo_server.connections), default=0)
    kernel.execute(
        "c = sw.show('Write a long tutorial', api='gemini', model='demo-long', base_url=BASE,"
        " demo={'tokens_per_second': 100})"
    )
    button = kernel.value("c.view.cancel_button.model_id")
    deadline = time.monotonic() + 10
    while kernel.value("c.state.text_length") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    clicked = kernel.click(button)
    record = demo_server.wait_for_disconnect(timeout=10.0, after=last)
    assert record is not None and record.outcome == "client_disconnected"
    assert record.closed_at_mono >= clicked
    state = kernel.value("[(await c).status, c.state.text_length > 0, c.view.answer.text == c.state.text]")
    assert state == ["cancelled", True, True]
