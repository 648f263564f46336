"""The scripted demo simulates token log-probabilities when asked, over real HTTP, and refuses
the logprob fields as OpenAI and Anthropic do when they are wrong."""

from __future__ import annotations

import json
import math
from typing import Any

import httpx
import pytest
from support.http import post

import streamwidgets as sw

FAST = {"tokens_per_second": 0, "first_token_delay": 0}
QUESTION = "What is a closure in Python?"


@pytest.fixture(scope="module")
def http():
    with httpx.Client(timeout=10) as client:
        yield client


def body(api: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"model": "demo", "stream": True, "demo": FAST}
    if api == "responses":
        out["input"] = QUESTION
    else:
        out["messages"] = [{"role": "user", "content": QUESTION}]
    if api == "messages":
        out["max_tokens"] = 512
    out.update(extra)
    return out


def data_lines(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: {")]


def check_tokens(state) -> None:
    assert state.status == "complete"
    assert len(state.tokens) > 50
    assert "".join(t.text for t in state.tokens) == state.text
    assert all(0 < t.probability <= 1 for t in state.tokens)
    assert all(len(t.top) == 5 for t in state.tokens)
    assert all(any(text == t.text for text, _ in t.top) or t.logprob < min(lp for _, lp in t.top) for t in state.tokens)
    # plausible: most tokens are near-certain, some are not, and some chosen tokens were not the likeliest
    sure = sum(t.probability > 0.9 for t in state.tokens) / len(state.tokens)
    assert 0.4 < sure < 0.95
    assert any(t.top[0][0] != t.text for t in state.tokens)


def test_chat_chunks_carry_simulated_logprobs_in_openai_shape(demo_server, http):
    response = post(http, demo_server, "chat", body("chat", logprobs=True, top_logprobs=5))
    assert response.status_code == 200 and response.headers["x-demo-script"] == "closures"
    chunks = data_lines(response.content)
    texts = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    for chunk in texts:
        entries = chunk["choices"][0]["logprobs"]["content"]
        assert "".join(e["token"] for e in entries) == chunk["choices"][0]["delta"]["content"]
        for entry in entries:
            assert set(entry) == {"token", "logprob", "bytes", "top_logprobs"}
            assert bytes(entry["bytes"]).decode() == entry["token"] and entry["logprob"] <= 0
    check_tokens(sw.parse(response.content))


def test_responses_deltas_carry_them_when_include_asks(demo_server, http):
    payload = body("responses", include=["message.output_text.logprobs"], top_logprobs=5)
    response = post(http, demo_server, "responses", payload)
    assert response.status_code == 200
    check_tokens(sw.parse(response.content))
    done = [e for e in data_lines(response.content) if e.get("type") == "response.output_text.done"]
    assert len(done[0]["logprobs"]) == len(sw.parse(response.content).tokens)


def test_whole_answers_carry_them_too(demo_server, http):
    chat = post(http, demo_server, "chat", body("chat", stream=False, logprobs=True, top_logprobs=5))
    check_tokens(sw.parse(chat.content))
    payload = body("responses", stream=False, include=["message.output_text.logprobs"], top_logprobs=5)
    check_tokens(sw.parse(post(http, demo_server, "responses", payload).content))


def test_not_asked_means_none_sent(demo_server, http):
    response = post(http, demo_server, "chat", body("chat"))
    assert all(c["choices"][0].get("logprobs") is None for c in data_lines(response.content) if c["choices"])
    assert sw.parse(response.content).tokens == ()


def test_the_same_request_gets_the_same_probabilities_and_temperature_spreads_them(demo_server, http):
    def tokens(**extra):
        return sw.parse(
            post(http, demo_server, "chat", body("chat", logprobs=True, top_logprobs=3, **extra)).content
        ).tokens

    assert tokens(temperature=0.7, seed=1) == tokens(temperature=0.7, seed=1)
    cold, hot = tokens(temperature=0), tokens(temperature=1.5)
    assert [t.text for t in cold] == [t.text for t in hot]  # the scripted text stays the same
    assert all(t.top[0][0] == t.text for t in cold)  # greedy: the chosen token is the likeliest
    mean = lambda ts: sum(t.probability for t in ts) / len(ts)  # noqa: E731
    assert mean(cold) > mean(hot) + 0.1


def test_the_client_asks_for_them_with_logprobs_n(demo_server):
    for api in ("chat", "responses"):
        state = sw.run(QUESTION, provider="demo", api=api, logprobs=2, demo=FAST)
        assert state.tokens and all(len(t.top) == 2 for t in state.tokens)
        assert all(math.isfinite(t.logprob) for t in state.tokens)


@pytest.mark.parametrize(
    ("api", "extra", "message"),
    [
        ("chat", {"top_logprobs": 5}, "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled."),
        ("chat", {"logprobs": False, "top_logprobs": 2}, "only allowed when 'logprobs' is enabled"),
        ("chat", {"logprobs": "yes"}, "Invalid type for 'logprobs': expected a boolean, but got a string instead."),
        ("chat", {"logprobs": True, "top_logprobs": 21}, "Invalid 'top_logprobs': integer above maximum value."),
        ("responses", {"top_logprobs": -1}, "Invalid 'top_logprobs': integer below minimum value."),
        ("responses", {"include": "message.output_text.logprobs"}, "Invalid type for 'include': expected an array"),
        ("responses", {"include": ["message.output_text.logprob"]}, "Invalid value: 'message.output_text.logprob'."),
    ],
)
def test_wrong_logprob_fields_get_openais_400(demo_server, http, api, extra, message):
    response = post(http, demo_server, api, body(api, **extra))
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]


def test_an_include_error_lists_the_supported_values(demo_server, http):
    response = post(http, demo_server, "responses", body("responses", include=["nope"]))
    error = response.json()["error"]
    assert "Supported values are:" in error["message"] and "'message.output_text.logprobs'" in error["message"]
    assert error["param"] == "include[0]"


def test_messages_has_no_logprob_fields(demo_server, http):
    response = post(http, demo_server, "messages", body("messages", logprobs=True))
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("logprobs: Extra inputs are not permitted")
