"""Gemini's native API on the client side: the request it writes and what its reader makes of
what the transcripts do not cover (token log-probabilities, whole answers, the tool turns)."""

from __future__ import annotations

import json

import pytest

import streamwidgets as sw
from streamwidgets import parse
from streamwidgets.core.dialects import GeminiDialect, Normalizer
from streamwidgets.core.dialects._request import CallResult


def _event(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\r\n\r\n"


def test_the_request_names_the_model_in_the_path_and_sends_the_key_in_googles_header():
    request = sw.make_request("hi", provider="gemini", api_key="AIza-test", model="gemini-2.5-pro")
    assert request.api == "gemini"
    assert request.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    headers = request.headers()
    assert headers["x-goog-api-key"] == "AIza-test"
    assert "Authorization" not in headers
    chat = sw.make_request("hi", provider="gemini", api="chat", api_key="AIza-test")
    assert chat.url == "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"
    assert chat.headers()["Authorization"] == "Bearer AIza-test"


def test_the_body_puts_each_setting_where_google_reads_it():
    body = sw.make_request(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is a closure?"},
            {"role": "assistant", "content": "A function with its scope."},
            {"role": "user", "content": "An example?"},
        ],
        provider="gemini",
        api_key="k",
        temperature=0.3,
        top_p=0.9,
        max_tokens=200,
        stop="END",
        seed=7,
        safety_settings=[{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        generationConfig={"candidateCount": 1},
    ).body()
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert [turn["role"] for turn in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][1]["parts"] == [{"text": "A function with its scope."}]
    assert body["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True},
        "temperature": 0.3,
        "topP": 0.9,
        "maxOutputTokens": 200,
        "stopSequences": ["END"],
        "seed": 7,
        "candidateCount": 1,
    }
    assert body["safetySettings"][0]["threshold"] == "BLOCK_NONE"
    assert "model" not in body and "stream" not in body  # the model is in the path; the path says stream


def test_a_misspelled_setting_is_named_before_anything_is_sent():
    with pytest.raises(ValueError, match="did you mean temperature="):
        sw.make_request("hi", provider="gemini", api_key="k", temprature=0.2)


def test_tool_turns_send_back_the_calls_and_their_results_in_googles_shape():
    turns = GeminiDialect.tool_turns(
        "Checking.",
        [
            CallResult("fc_1", "get_weather", '{"city": "Paris"}', '{"temp": 21}'),
            CallResult("gemini-call-2", "get_weather", '{"city": "Oslo"}', "no such city", is_error=True),
        ],
    )
    assert turns == [
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {"functionCall": {"id": "fc_1", "name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},  # its id was made up here
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "fc_1", "name": "get_weather", "response": {"result": '{"temp": 21}'}}},
                {"functionResponse": {"name": "get_weather", "response": {"error": "no such city"}}},
            ],
        },
    ]
    assert GeminiDialect.tools_field([{"name": "f", "description": "d", "parameters": {"type": "object"}}]) == [
        {"functionDeclarations": [{"name": "f", "description": "d", "parameters": {"type": "object"}}]}
    ]


def test_token_log_probabilities_are_read_from_logprobs_result():
    chunk = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "Hello world"}]},
                "logprobsResult": {
                    "chosenCandidates": [
                        {"token": "Hello", "logProbability": -0.1},
                        {"token": " world", "logProbability": -0.7},
                    ],
                    "topCandidates": [
                        {
                            "candidates": [
                                {"token": "Hello", "logProbability": -0.1},
                                {"token": "Hi", "logProbability": -2.5},
                            ]
                        },
                        {"candidates": [{"token": " world", "logProbability": -0.7}]},
                    ],
                },
                "finishReason": "STOP",
            }
        ]
    }
    state = parse(_event(chunk), api="gemini")
    assert state.text == "Hello world" and state.status == "complete"
    assert [(t.text, t.logprob) for t in state.tokens] == [("Hello", -0.1), (" world", -0.7)]
    assert state.tokens[0].top == (("Hello", -0.1), ("Hi", -2.5))


def test_a_whole_answer_and_the_json_array_without_alt_sse_are_read_as_the_stream_is():
    chunks = [
        {"candidates": [{"content": {"parts": [{"text": "Step", "thought": True}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "Done."}]}, "finishReason": "STOP"}]},
    ]
    for body in (json.dumps(chunks), json.dumps(chunks[1])):
        events = Normalizer().read_whole_body(body.encode()).events
        state = parse([_event(c) for c in json.loads(body if body.startswith("[") else f"[{body}]")], api="gemini")
        assert events, body
        assert state.text == "Done." and state.status == "complete"
    whole = Normalizer().read_whole_body(json.dumps(chunks).encode())
    assert whole.looks_like.startswith("a whole JSON answer")


def test_googles_error_envelope_names_the_status_and_the_retry_delay():
    body = json.dumps(
        {
            "error": {
                "code": 429,
                "message": "Resource has been exhausted (e.g. check quota).",
                "status": "RESOURCE_EXHAUSTED",
                "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}],
            }
        }
    ).encode()
    from streamwidgets.core._errors import error_from_http

    error = error_from_http(429, body, {"content-type": "application/json"})
    assert error.code == "RESOURCE_EXHAUSTED" and error.http_status == 429
    assert "Resource has been exhausted" in error.message


@pytest.mark.parametrize("bad", [-3, -1.0, 1e308, 10**13, 2.5, "12", True, None])
def test_usage_that_is_no_count_is_read_as_unreported(bad):
    """`usageMetadata` with a negative count, `1e308` or what is no whole number: that count is
    unreported (as in every dialect, `_common.count`), the others stay."""
    usage = {"promptTokenCount": bad, "candidatesTokenCount": 7, "thoughtsTokenCount": bad, "totalTokenCount": bad}
    state = parse([_event({"candidates": [{"content": {"parts": [{"text": "Hi"}]}}], "usageMetadata": usage})])
    assert state.usage is not None and state.text == "Hi"
    assert state.usage.prompt_tokens is None and state.usage.reasoning_tokens is None
    assert state.usage.completion_tokens == 7 and state.usage.total_tokens is None
    fine = parse([_event({"usageMetadata": {"promptTokenCount": 0, "candidatesTokenCount": 3.0}})])
    assert fine.usage is not None and (fine.usage.prompt_tokens, fine.usage.completion_tokens) == (0, 3)
    assert fine.usage.total_tokens == 3


def test_a_megabyte_block_reason_is_cut_as_any_providers_code():
    """`promptFeedback.blockReason` is a word (`SAFETY`); a megabyte there becomes a message of a
    line, and a code and finish reason of a hundred characters, not a megabyte each."""
    reason = "SAFETY_" + "X" * 1_000_000
    state = parse([_event({"promptFeedback": {"blockReason": reason}})])
    assert state.status == "error" and state.error is not None
    assert state.message.startswith("The provider reported an error: the prompt was blocked (SAFETY_XXX")
    assert len(state.message) < 400 and len(str(state.error.code)) <= 100 and len(state.finish_reason or "") <= 100
    short = parse([_event({"promptFeedback": {"blockReason": "SAFETY"}})])
    assert short.error is not None and short.error.code == "SAFETY" and short.finish_reason == "SAFETY"
    assert "the prompt was blocked (SAFETY)" in short.message


def test_a_megabyte_model_name_or_response_id_is_cut_for_the_header():
    huge = "gemini-" + "9" * 1_000_000
    state = parse(
        [_event({"modelVersion": huge, "responseId": huge, "candidates": [{"content": {"parts": [{"text": "Hi"}]}}]})]
    )
    assert state.text == "Hi" and state.model is not None and state.response_id is not None
    assert state.model.startswith("gemini-999") and len(state.model) <= 200 and len(state.response_id) <= 200
    plain = parse(
        [_event({"modelVersion": "gemini-2.5-flash", "candidates": [{"content": {"parts": [{"text": "Hi"}]}}]})]
    )
    assert plain.model == "gemini-2.5-flash"
