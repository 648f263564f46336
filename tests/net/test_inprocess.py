"""The scripted provider in-process (`net/_inprocess.py`): no socket, the same answers.

Every scenario on every API ends in the same final state in-process (through its httpx
transport, read by `Live` as any provider is) as over HTTP against the session's embedded
server; where no socket can be opened, a question still gets its answer, at the scripted pace; a
stream the reader leaves says so in its record.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

import streamwidgets as sw
from streamwidgets.net import Live, _inprocess, as_source, make_request
from streamwidgets.net._inprocess import IN_PROCESS_BASE, INPROCESS_ENV, in_process_base
from streamwidgets.server import SCENARIOS, DemoServer, in_process

APIS = ("chat", "responses", "messages", "gemini")
#: Scenarios that never end by themselves: read under a deadline.
FOREVER = {"demo-stall"}
#: As fast as the script goes, with fixed ids: the same bytes both ways.
FAST = {"tokens_per_second": 0, "first_token_delay": 0, "seed": 7}
MODELS = [*SCENARIOS, "demo-http-400", "demo-http-503"]


def _request(model: str, api: str, prompt: str = "What is streaming?", **demo: Any) -> Any:
    return make_request(
        prompt,
        provider="demo",
        model=model,
        api=api,
        retries=0,
        deadline=1.0 if model in FOREVER else None,
        extra_body={"demo": {**FAST, **demo}},
    )


def _inside(request: Any) -> Live:
    """The request answered in-process: addressed to the in-process host, which the client's
    transport answers with no socket."""
    return Live(replace(request, base_url=in_process_base(request.embedded)))


def _final(state: sw.StreamState) -> dict[str, Any]:
    error = state.error
    return {
        "status": state.status,
        "text": state.text,
        "reasoning": state.reasoning,
        "citations": [(c.url, c.title) for c in state.citations],
        "tool_calls": [(c.name, c.arguments) for c in state.tool_calls],
        "finish": (state.finish_reason, state.finish),
        "usage": state.usage,
        "error": None if error is None else (error.message, error.code, error.http_status),
        "incomplete": state.incomplete_reason,
        "script": state.script,
    }


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("model", MODELS)
def test_the_same_final_state_as_over_http(model: str, api: str, demo_server: DemoServer) -> None:
    request = _request(model, api)
    assert request.embedded is not None and request.base_url is None
    inside = sw.run(_inside(request))
    over_http = sw.run(Live(replace(request, base_url=demo_server.base_url)))
    assert _final(inside) == _final(over_http)
    assert inside.origin == "offline demo"
    if model == "demo-search":
        assert inside.citations  # the comparison is about something


def test_a_turned_away_try_is_retried_in_process() -> None:
    request = replace(_request("demo-ratelimit", "chat", prompt="In-process retry: what is a closure?"), retries=1)
    state = sw.run(_inside(request))
    assert state.status == "complete" and state.script == "closures"


def test_no_socket_still_answers_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("streamwidgets.server.start_server", refused)
    monkeypatch.setattr(_inprocess, "_failed", None)  # forgotten again after the test
    monkeypatch.delenv(INPROCESS_ENV, raising=False)
    state = sw.run("What is streaming?", extra_body={"demo": {"tokens_per_second": 0}})
    assert state.status == "complete" and state.text and state.origin == "offline demo"
    assert state.script == "streaming LLM answers"
    source = as_source("What is streaming?").resolved()  # the failure is remembered: no second try
    assert isinstance(source, Live) and (source.request.base_url or "").startswith(IN_PROCESS_BASE)
    note = source.labels().note or ""
    assert note.count("ran in-process") == 1 and "PermissionError" in note


def test_asked_for_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INPROCESS_ENV, "1")
    source = as_source("What is streaming?", provider="demo")
    assert "ran in-process" in (source.labels().note or "")  # the view says so before it starts
    resolved = source.resolved()
    assert isinstance(resolved, Live) and resolved.request.base_url == f"{IN_PROCESS_BASE}/v1"
    assert "ran in-process" in (resolved.labels().note or "")
    monkeypatch.setenv(INPROCESS_ENV, "0")
    monkeypatch.setattr(_inprocess, "_failed", None)
    custom = as_source("Hi", base_url="http://127.0.0.1:9/v1", model="m").resolved()
    assert isinstance(custom, Live) and custom.request.base_url == "http://127.0.0.1:9/v1"
    assert custom.in_process() is None


def test_the_pace_is_kept(demo_server: DemoServer) -> None:
    request = _request("demo-long", "chat", tokens_per_second=50, tokens=50, first_token_delay=0)
    took = []
    for source in (_inside(request), Live(replace(request, base_url=demo_server.base_url))):
        start = time.monotonic()
        state = sw.run(source)
        took.append(time.monotonic() - start)
        assert state.status == "complete"
    assert took[0] > 0.5 and took[1] > 0.5
    assert abs(took[0] - took[1]) < 0.6


def test_a_reader_that_leaves_is_recorded() -> None:
    before = max((record.id for record in in_process().connections), default=0)
    state = sw.run(_inside(_request("demo-stall", "chat")))
    assert state.status == "incomplete"
    records = [record for record in in_process().connections if record.id > before]
    assert [record.outcome for record in records] == ["client_disconnected"]
    assert records[0].scenario == "demo-stall" and records[0].bytes_sent > 0
