"""The embedded provider validates requests as the real APIs do, over real HTTP.

A typo'd field, an unknown model or an out-of-range value used to be answered like a good
request, so a teacher demonstrated the wrong thing without knowing. Each is now the provider's
own error, in the route's own envelope and in the provider's own words: OpenAI's on the chat,
Responses and legacy completions routes, Anthropic's on `/messages`.
"""

from __future__ import annotations

from typing import Any, Optional

import anthropic
import httpx
import openai
import pytest
from anthropic.types import message_create_params
from openai.types import completion_create_params
from openai.types.chat import completion_create_params as chat_create_params
from openai.types.responses import response_create_params
from support.http import post

from streamwidgets.core._providers import DEMO_FLAVORS, PROVIDERS
from streamwidgets.server import SCENARIOS
from streamwidgets.server.demo._fields import FIELDS
from streamwidgets.server.demo._models import unknown_model

FAST = {"tokens_per_second": 0, "first_token_delay": 0}
#: A field to leave out of `body_for`'s body.
_DROP: Any = object()


@pytest.fixture(scope="module")
def http():
    with httpx.Client(timeout=10) as client:
        yield client


def body_for(api: str, model: str = "demo", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "stream": True, "demo": FAST}
    if api == "gemini":  # the model and the stream are in its path (`post`)
        question = {"role": "user", "parts": [{"text": "How does binary search work?"}]}
        body = {"model": model, "contents": [question], "demo": FAST}
    elif api == "responses":
        body["input"] = "How does binary search work?"
    else:
        body["messages"] = [{"role": "user", "content": "How does binary search work?"}]
    if api == "messages":
        body["max_tokens"] = 1024
    body.update(extra)
    return {name: value for name, value in body.items() if value is not _DROP}


def openai_error(response: httpx.Response, status: int) -> dict[str, Any]:
    """The error object of OpenAI's envelope, asserting the status and the envelope's shape."""
    assert response.status_code == status, response.text
    payload = response.json()
    assert set(payload) == {"error"} and set(payload["error"]) == {"message", "type", "param", "code"}, payload
    return payload["error"]


def anthropic_error(response: httpx.Response, status: int) -> dict[str, Any]:
    """The error object of Anthropic's envelope, asserting the status and the envelope's shape."""
    assert response.status_code == status, response.text
    payload = response.json()
    assert payload["type"] == "error" and set(payload["error"]) == {"type", "message"}, payload
    assert payload["request_id"].startswith("req_")
    return payload["error"]


def served(response: httpx.Response) -> bool:
    return response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")


# ---------------------------------------------------------------------------- unknown fields


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_an_unknown_field_is_a_400_in_openai_words(demo_server, http, api):
    error = openai_error(post(http, demo_server, api, body_for(api, modle="demo-fast")), 400)
    assert error == {
        "message": "Unrecognized request argument supplied: modle (did you mean model?)",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }


def test_an_unknown_field_is_a_400_in_anthropic_words(demo_server, http):
    error = anthropic_error(post(http, demo_server, "messages", body_for("messages", modle="demo-fast")), 400)
    assert error == {
        "type": "invalid_request_error",
        "message": "modle: Extra inputs are not permitted (did you mean model?)",
    }


def test_several_unknown_fields_are_all_named(demo_server, http):
    body = body_for("chat", tempreture=0.2, max_token=5, colour="blue")
    message = openai_error(post(http, demo_server, "chat", body), 400)["message"]
    assert message == (
        "Unrecognized request arguments supplied: tempreture (did you mean temperature?), "
        "max_token (did you mean max_tokens?), colour"
    )
    body = body_for("messages", tempreture=0.2, stop=["x"])
    message = anthropic_error(post(http, demo_server, "messages", body), 400)["message"]
    assert message == (
        "tempreture: Extra inputs are not permitted (did you mean temperature?); stop: Extra inputs are not permitted "
        "(a field of the Chat Completions API (/v1/chat/completions), not of this one)"
    )


def test_a_field_of_another_api_says_which_api_it_belongs_to(demo_server, http):
    body = body_for("chat", input="hi")
    message = openai_error(post(http, demo_server, "chat", body), 400)["message"]
    assert message == (
        "Unrecognized request argument supplied: input (a field of the Responses API (/v1/responses), not of this one)"
    )
    body = body_for("responses", max_tokens=100)
    message = openai_error(post(http, demo_server, "responses", body), 400)["message"]
    assert message.startswith("Unrecognized request argument supplied: max_tokens (did you mean max_output_tokens?)")
    body = body_for("messages", n=2)
    message = anthropic_error(post(http, demo_server, "messages", body), 400)["message"]
    assert (
        message
        == "n: Extra inputs are not permitted (a field of the Chat Completions API (/v1/chat/completions), not of this one)"
    )


def test_an_unknown_demo_option_is_named_with_the_closest(demo_server, http):
    body = body_for("chat", demo={**FAST, "tokns": 50})
    message = openai_error(post(http, demo_server, "chat", body), 400)["message"]
    assert message == "Unrecognized request argument supplied: demo.tokns (did you mean demo.tokens?)"
    body = body_for("messages", demo={"first_token_dely": 0})
    message = anthropic_error(post(http, demo_server, "messages", body), 400)["message"]
    assert message == "demo.first_token_dely: Extra inputs are not permitted (did you mean demo.first_token_delay?)"


@pytest.mark.parametrize("flavor", ["venym", "engy", "everyais", "vultr"])
def test_flavor_routes_refuse_unknown_fields_too(demo_server, http, flavor):
    error = openai_error(post(http, demo_server, "chat", body_for("chat", modle="x"), flavor), 400)
    assert error["message"] == "Unrecognized request argument supplied: modle (did you mean model?)"
    if flavor != "venym":  # Venym serves chat only; the others all three APIs
        error = anthropic_error(post(http, demo_server, "messages", body_for("messages", modle="x"), flavor), 400)
        assert error["message"].startswith("modle: Extra inputs are not permitted")


def test_engy_legacy_completions_checks_its_own_fields(demo_server, http):
    url = demo_server.flavor_url("engy") + "/completions"
    assert (
        http.post(url, json={"model": "glm-5.2", "prompt": "hi", "echo": False, "best_of": 1, "demo": FAST}).status_code
        == 200
    )
    error = openai_error(http.post(url, json={"model": "glm-5.2", "prompt": "hi", "messages": []}), 400)
    assert error["message"].startswith("Unrecognized request argument supplied: messages")
    error = openai_error(http.post(url, json={"model": "glm-5.2", "prompt": "hi", "temperature": 3}), 400)
    assert error["message"] == (
        "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead."
    )


def test_the_default_route_accepts_the_extras_of_the_presets_it_stands_in_for(demo_server, http):
    """Offline, Perplexity, Mistral, OpenRouter, Groq... are answered on the default route; their
    own documented fields pass there, and only there."""
    extras = {"search_recency_filter": "week", "safe_prompt": False, "provider": {"sort": "price"}, "top_k": 40}
    assert served(post(http, demo_server, "chat", body_for("chat", "sonar", **extras)))
    error = openai_error(
        post(http, demo_server, "chat", body_for("chat", "glm-5.2", search_recency_filter="week"), "engy"), 400
    )
    assert error["message"] == "Unrecognized request argument supplied: search_recency_filter"


def test_the_field_lists_hold_every_parameter_of_the_official_sdks():
    """What the SDKs can send is never refused as unknown (the server's lists are its own)."""
    sdk = {
        "chat": chat_create_params.CompletionCreateParamsBase,
        "responses": response_create_params.ResponseCreateParamsBase,
        "messages": message_create_params.MessageCreateParamsBase,
        "completions": completion_create_params.CompletionCreateParamsBase,
    }
    for api, params in sdk.items():
        missing = set(params.__annotations__) - FIELDS[api]
        assert not missing, (api, missing)
        assert "stream" in FIELDS[api] and "demo" in FIELDS[api]


def test_the_sdks_get_the_400_as_their_own_error(demo_server):
    """What a notebook sees: the SDK's BadRequestError with the provider's message."""
    client = openai.OpenAI(base_url=demo_server.base_url, api_key="sk-demo", max_retries=0)
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(
        openai.BadRequestError, match=r"Unrecognized request argument supplied: modle \(did you mean model\?\)"
    ):
        client.chat.completions.create(model="demo", messages=messages, extra_body={"modle": "demo-fast"})
    with pytest.raises(openai.NotFoundError, match="The model 'demo-reasonig' does not exist"):
        client.chat.completions.create(model="demo-reasonig", messages=messages)
    claude = anthropic.Anthropic(base_url=demo_server.url, api_key="sk-demo", max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match=r"temperature: range: 0\.\.1"):
        claude.messages.create(model="demo", max_tokens=10, messages=messages, extra_body={"temperature": 1.5})
    # A request with every sampling field a lesson uses is answered.
    answer = client.chat.completions.create(
        model="demo",
        messages=messages,
        temperature=0.2,
        top_p=0.9,
        n=1,
        seed=7,
        stop=["\n\n\n"],
        presence_penalty=0.5,
        frequency_penalty=-0.5,
        max_completion_tokens=20,
        user="student-1",
        extra_body={"demo": FAST},
    )
    assert answer.choices[0].message.content


# ---------------------------------------------------------------------------- unknown models


def test_an_unknown_model_is_a_404_naming_the_closest_and_the_demo_models(demo_server, http):
    error = openai_error(post(http, demo_server, "chat", body_for("chat", "demo-reasonig")), 404)
    assert error["code"] == "model_not_found" and error["type"] == "invalid_request_error"
    message = error["message"]
    assert message.startswith(
        "The model 'demo-reasonig' does not exist or you do not have access to it. Did you mean demo-reasoning?"
    )
    assert all(name in message for name in SCENARIOS) and "demo-http-<status> (400, 401" in message
    error = openai_error(post(http, demo_server, "responses", body_for("responses", "gpt-4.1-mnii")), 404)
    assert (
        error["message"].startswith("The model 'gpt-4.1-mnii' does not exist")
        and "Did you mean gpt-4.1-mini?" in error["message"]
    )


def test_an_unknown_model_on_messages_is_anthropics_not_found_error(demo_server, http):
    error = anthropic_error(post(http, demo_server, "messages", body_for("messages", "claude-sonet-4-5")), 404)
    assert error["type"] == "not_found_error"
    assert error["message"].startswith("model: claude-sonet-4-5. Did you mean claude-sonnet-4-5?")


def test_no_close_name_still_lists_the_models(demo_server, http):
    message = openai_error(post(http, demo_server, "chat", body_for("chat", "zzzzzz")), 404)["message"]
    assert "Did you mean" not in message and "The demo server's models are demo, demo-markdown" in message


@pytest.mark.parametrize(
    ("model", "flavor"),
    [
        ("demo", "demo"),
        ("DEMO-Reasoning", "demo"),
        ("demo-http-401", "demo"),
        ("venym/demo-tools", "venym"),
        ("demo-reasoning:online", "demo"),
        ("gpt-4o-2024-08-06", "demo"),  # a dated snapshot
        ("claude-sonnet-4-5-20250929", "demo"),
        ("mistral-large-2411", "demo"),  # Mistral's YYMM versions
        ("openai/gpt-4.1-mini:online", "demo"),  # OpenRouter's prefix and suffix
        ("models/gemini-2.5-flash", "demo"),  # Gemini's own spelling
        ("qwen3:8b", "demo"),  # an Ollama tag
        ("venym/qwen-27b:online", "venym"),
        ("glm-5.2", "engy"),
        ("deepseek-v4.1-flash", "vultr"),
        ("anything-the-user-chose", "everyais"),  # everyais: the model is the user's own
    ],
)
def test_known_and_decorated_names_are_answered(demo_server, http, model, flavor):
    response = post(http, demo_server, "chat", body_for("chat", model), flavor)
    assert served(response) or (model == "demo-http-401" and response.status_code == 401), (model, response.text)


@pytest.mark.parametrize(
    ("model", "flavor", "closest"),
    [
        ("gpt-4.1-mini", "engy", None),  # a seed provider's route answers its own names only
        ("venym/qwen-72b", "venym", "venym/qwen-27b"),
        ("demo-http-418", "demo", "demo-http-4"),  # not one of the scripted statuses
        ("glm-5.2", "demo", None),  # Engy's model, on the route that does not stand in for Engy
    ],
)
def test_names_a_route_does_not_answer(demo_server, http, model, flavor, closest):
    message = openai_error(post(http, demo_server, "chat", body_for("chat", model), flavor), 404)["message"]
    assert message.startswith(f"The model '{model}' does not exist")
    assert "it also answers that provider's documented model names" in message
    if closest is not None:
        assert f"Did you mean {closest}" in message


def test_every_presets_default_model_is_answered_where_the_client_sends_it_offline(demo_server, http):
    """Offline, a preset's requests go to its flavor route (the seeds) or the default route, in
    its default API; its default model must be answered there, not refused as unknown."""
    checked = 0
    for preset in PROVIDERS.values():
        if preset.default_model is None or preset.name == "local":
            continue  # the local preset's requests go to the local model, never to the demo
        flavor = preset.name if preset.name in DEMO_FLAVORS else "demo"
        assert unknown_model(preset.default_model, flavor, preset.default_api) is None, preset.name
        response = post(
            http, demo_server, preset.default_api, body_for(preset.default_api, preset.default_model), flavor
        )
        assert served(response), (preset.name, response.text)
        checked += 1
    assert checked >= 14


# ---------------------------------------------------------------------------- values


OPENAI_VALUES: list[tuple[str, dict[str, Any], str, Optional[str]]] = [
    (
        "chat",
        {"temperature": 5},
        "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 5 instead.",
        "decimal_above_max_value",
    ),
    (
        "chat",
        {"temperature": -1},
        "Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -1 instead.",
        "decimal_below_min_value",
    ),
    (
        "chat",
        {"temperature": "hot"},
        "Invalid type for 'temperature': expected a decimal, but got a string instead.",
        "invalid_type",
    ),
    (
        "chat",
        {"temperature": True},
        "Invalid type for 'temperature': expected a decimal, but got a boolean instead.",
        "invalid_type",
    ),
    (
        "chat",
        {"top_p": 1.5},
        "Invalid 'top_p': decimal above maximum value. Expected a value <= 1, but got 1.5 instead.",
        "decimal_above_max_value",
    ),
    (
        "chat",
        {"max_tokens": 0},
        "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead.",
        "integer_below_min_value",
    ),
    (
        "chat",
        {"max_completion_tokens": "10"},
        "Invalid type for 'max_completion_tokens': expected an integer, but got a string instead.",
        "invalid_type",
    ),
    (
        "chat",
        {"n": 200},
        "Invalid 'n': integer above maximum value. Expected a value <= 128, but got 200 instead.",
        "integer_above_max_value",
    ),
    ("chat", {"n": 1.5}, "Invalid type for 'n': expected an integer, but got a decimal instead.", "invalid_type"),
    (
        "chat",
        {"stream": "yes"},
        "Invalid type for 'stream': expected a boolean, but got a string instead.",
        "invalid_type",
    ),
    (
        "chat",
        {"presence_penalty": 3},
        "Invalid 'presence_penalty': decimal above maximum value. Expected a value <= 2, but got 3 instead.",
        "decimal_above_max_value",
    ),
    (
        "responses",
        {"temperature": 2.5},
        "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 2.5 instead.",
        "decimal_above_max_value",
    ),
    (
        "responses",
        {"max_output_tokens": 5},
        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 5 instead.",
        "integer_below_min_value",
    ),
    (
        "responses",
        {"stream": 1},
        "Invalid type for 'stream': expected a boolean, but got an integer instead.",
        "invalid_type",
    ),
    (
        "responses",
        {"top_p": []},
        "Invalid type for 'top_p': expected a decimal, but got an array instead.",
        "invalid_type",
    ),
]


@pytest.mark.parametrize(("api", "change", "message", "code"), OPENAI_VALUES)
def test_values_out_of_range_or_of_the_wrong_type_in_openai_words(demo_server, http, api, change, message, code):
    error = openai_error(post(http, demo_server, api, body_for(api, **change)), 400)
    (name,) = change
    assert error == {"message": message, "type": "invalid_request_error", "param": name, "code": code}


ANTHROPIC_VALUES: list[tuple[dict[str, Any], str]] = [
    ({"temperature": 1.5}, "temperature: range: 0..1"),  # Anthropic's range is 0-1, not OpenAI's 0-2
    ({"temperature": -1}, "temperature: range: 0..1"),
    ({"temperature": "hot"}, "temperature: Input should be a valid number"),
    ({"top_p": 2}, "top_p: range: 0..1"),
    ({"top_k": -1}, "top_k: Input should be greater than or equal to 0"),
    ({"max_tokens": 0}, "max_tokens: Input should be greater than or equal to 1"),
    ({"max_tokens": "lots"}, "max_tokens: Input should be a valid integer"),
    ({"max_tokens": _DROP}, "max_tokens: Field required"),
    ({"model": _DROP}, "model: Field required"),
    ({"stream": "yes"}, "stream: Input should be a valid boolean"),
]


@pytest.mark.parametrize(("change", "message"), ANTHROPIC_VALUES)
def test_values_out_of_range_or_of_the_wrong_type_in_anthropic_words(demo_server, http, change, message):
    error = anthropic_error(post(http, demo_server, "messages", body_for("messages", **change)), 400)
    assert error == {"type": "invalid_request_error", "message": message}


def test_values_at_the_bounds_and_nulls_are_answered(demo_server, http):
    for api, change in [
        ("chat", {"temperature": 0, "top_p": 1, "n": 128, "max_tokens": 1}),
        ("chat", {"temperature": 2.0, "max_completion_tokens": None, "stream": False}),
        ("chat", {"temperature": None, "top_logprobs": 20, "logprobs": True}),
        ("responses", {"temperature": 2, "max_output_tokens": 16}),
        ("messages", {"temperature": 1, "top_p": 0.0, "top_k": 0, "max_tokens": 1}),
    ]:
        response = post(http, demo_server, api, body_for(api, **change))
        assert response.status_code == 200, (api, change, response.text)


def test_a_missing_model_is_refused_in_each_providers_words(demo_server, http):
    error = openai_error(post(http, demo_server, "chat", body_for("chat", model=_DROP)), 400)
    assert error["message"] == "You must provide a model parameter." and error["param"] == "model"
    error = openai_error(post(http, demo_server, "responses", body_for("responses", model="  ")), 400)
    assert error["message"] == "You must provide a model parameter."
    error = openai_error(post(http, demo_server, "chat", body_for("chat", model=["demo"])), 400)
    assert error["message"] == "Invalid type for 'model': expected a string, but got an array instead."
