"""Gemini's native API end to end: the client's dialect against the embedded provider's Gemini
spec, over real loopback sockets. The oracle is the same scenario over chat: each API carries the
same answer in its own shape, so the final states must agree on everything a person sees."""

from __future__ import annotations

import asyncio
import json

import pytest

import streamwidgets as sw
from streamwidgets import arun, make_request
from streamwidgets.server import DemoServer

FAST = {"demo": {"tokens_per_second": 0, "first_token_delay": 0}}
#: Every scenario that ends by itself (demo-stall waits for the client: below, with a deadline).
SCENARIOS = [
    "demo",
    "demo-markdown",
    "demo-reasoning",
    "demo-search",
    "demo-fast",
    "demo-deep",
    "demo-long",
    "demo-slow",
    "demo-error",
    "demo-error-early",
    "demo-cutoff",
    "demo-malformed",
    "demo-xss",
    "demo-length",
    "demo-ratelimit",
    "demo-overloaded",
]
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def seen(state: sw.StreamState) -> dict:
    """What a person sees of an answer."""
    return {
        "status": state.status,
        "text": state.text,
        "reasoning": state.reasoning,
        "citations": [c.url for c in state.citations],
        "tool_calls": [(c.name, json.loads(c.arguments or "{}")) for c in state.tool_calls],
        "finish": state.finish,
        "error": state.error is not None,
    }


def ask(server: DemoServer, api: str, model: str, prompt: str = "What is streaming?", **kw) -> sw.StreamState:
    request = make_request(prompt, model=model, api=api, base_url=server.base_url, retries=3, **{**FAST, **kw})
    return asyncio.run(arun(request))


@pytest.mark.parametrize("model", SCENARIOS)
def test_every_scenario_gives_over_gemini_what_it_gives_over_chat(demo_server: DemoServer, model: str):
    gemini = ask(demo_server, "gemini", model)
    chat = ask(demo_server, "chat", model)
    assert seen(gemini) == seen(chat)
    if gemini.status == "complete":
        assert gemini.usage is not None and gemini.usage.completion_tokens
    if model == "demo-reasoning":
        assert gemini.reasoning and gemini.usage is not None and gemini.usage.reasoning_tokens


def test_a_stalled_stream_ends_at_the_deadline_with_its_text(demo_server: DemoServer):
    state = ask(demo_server, "gemini", "demo-stall", deadline=1.5)
    assert state.status == "incomplete" and state.text
    assert "deadline" in state.message


def test_declared_tools_come_back_as_whole_function_calls(demo_server: DemoServer):
    declared = [
        {
            "functionDeclarations": [
                {"name": "get_weather", "description": "The weather in a city.", "parameters": WEATHER}
            ]
        }
    ]
    state = ask(demo_server, "gemini", "demo-tools", "What's the weather in Paris?", tools=declared)
    assert state.status == "complete" and state.finish == "tool_calls"
    assert [(c.name, json.loads(c.arguments)) for c in state.tool_calls] == [("get_weather", {"city": "Paris"})]


def test_the_tool_loop_runs_python_functions_and_sends_their_results_back(demo_server: DemoServer):
    calls: list[str] = []

    def get_weather(city: str) -> dict:
        """The weather in a city."""
        calls.append(city)
        return {"city": city, "temperature_c": 21, "sky": "clear"}

    state = ask(demo_server, "gemini", "demo-tools", "What's the weather in Paris?", tools=[get_weather])
    assert calls == ["Paris"]
    assert state.status == "complete" and state.finish == "stop"
    assert "21" in state.text


def test_token_probabilities_fill_the_token_view(demo_server: DemoServer):
    state = ask(demo_server, "gemini", "demo", logprobs=3)
    assert state.status == "complete" and state.tokens
    assert "".join(t.text for t in state.tokens) == state.text
    assert all(len(t.top) <= 3 for t in state.tokens)


def test_googles_errors_before_the_stream_read_in_its_words(demo_server: DemoServer):
    state = ask(demo_server, "gemini", "demo", temperature=9)
    assert state.status == "error" and state.error is not None
    assert state.error.http_status == 400 and state.error.code == "INVALID_ARGUMENT"
    assert "temperature" in state.error.message


def test_offline_the_gemini_preset_is_answered_in_geminis_shape(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("STREAMWIDGETS_OFFLINE", "demo")
    request = make_request("What is a closure?", provider="gemini", **FAST)
    assert request.api == "gemini" and request.offline_note and "Google Gemini" in request.offline_note
    state = asyncio.run(arun(request))
    assert state.status == "complete" and state.text
