"""The request matrix: every preset × every API it serves builds the right URL, body and auth
headers (the key exactly once, in the header the provider documents); every API it does not
serve is refused with a message that names the ones it has. The expectations are written out
here from the providers' documentation, not derived from the presets table."""

from __future__ import annotations

import re

import pytest

from streamwidgets import make_request
from streamwidgets.core._events import TextDelta
from streamwidgets.core._providers import PROVIDERS
from streamwidgets.core._state import StreamState

KEY = "sk-test-SENTINEL-0123456789abcdef"
BEARER = ("Authorization", "Bearer " + KEY)
X_API_KEY = ("x-api-key", KEY)
NONE = None

#: provider -> {api: (auth header, value) or None}, and the base URL; from each provider's docs.
EXPECTED = {
    "demo": ("http://127.0.0.1:9/v1", {"chat": NONE, "responses": NONE, "messages": NONE}),
    # the local model's server: a key drawn at each start, sent as each dialect sends one
    "local": ("http://127.0.0.1:9/v1", {"chat": BEARER, "responses": BEARER, "messages": X_API_KEY}),
    "venym": ("https://venym.io/v1", {"chat": BEARER}),
    "engy": ("https://api.engy.ai/v1", {"chat": BEARER, "responses": BEARER, "messages": X_API_KEY}),
    "everyais": ("https://api.everyais.com/v1", {"chat": BEARER, "responses": BEARER, "messages": X_API_KEY}),
    "vultr": ("https://api.vultrinference.com/v1", {"chat": BEARER, "responses": BEARER, "messages": X_API_KEY}),
    "openai": ("https://api.openai.com/v1", {"chat": BEARER, "responses": BEARER}),
    "anthropic": ("https://api.anthropic.com/v1", {"messages": X_API_KEY}),
    "openrouter": ("https://openrouter.ai/api/v1", {"chat": BEARER}),
    "deepseek": ("https://api.deepseek.com/v1", {"chat": BEARER}),
    "groq": ("https://api.groq.com/openai/v1", {"chat": BEARER}),
    "mistral": ("https://api.mistral.ai/v1", {"chat": BEARER}),
    "perplexity": ("https://api.perplexity.ai", {"chat": BEARER}),
    "gemini": ("https://generativelanguage.googleapis.com/v1beta/openai", {"chat": BEARER}),
    "ollama": ("http://127.0.0.1:11434/v1", {"chat": BEARER, "responses": BEARER}),
    "llamacpp": ("http://127.0.0.1:8080/v1", {"chat": BEARER}),
    "vllm": ("http://127.0.0.1:8000/v1", {"chat": BEARER, "responses": BEARER}),
    "litellm": ("http://127.0.0.1:4000/v1", {"chat": BEARER, "responses": BEARER, "messages": BEARER}),
}
#: Servers that reject `stream_options`, or send usage without being asked.
NO_STREAM_OPTIONS = {"mistral", "perplexity", "anthropic"}
PATHS = {"chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}
APIS = tuple(PATHS)
CONVERSATION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is SSE?"}]

CASES = [(name, api) for name, (_, apis) in EXPECTED.items() for api in apis]
REFUSED = [(name, api) for name, (_, apis) in EXPECTED.items() for api in APIS if api not in apis]


def test_the_table_covers_every_preset():
    assert set(EXPECTED) == set(PROVIDERS)


def test_a_gateway_preset_reads_its_address_from_the_environment(monkeypatch):
    monkeypatch.setenv("LITELLM_BASE_URL", "http://hub.example:4000/v1")
    assert (
        make_request("hi", provider="litellm", api_key=KEY, model="m").url
        == "http://hub.example:4000/v1/chat/completions"
    )
    monkeypatch.setenv("LITELLM_BASE_URL", "hub.example:4000")
    with pytest.raises(ValueError, match="needs its scheme"):
        make_request("hi", provider="litellm", api_key=KEY, model="m")


def build(name, api, **kw):
    # The demo and local presets would start the embedded server or the local model.
    base = EXPECTED[name][0] if name in ("demo", "local") else None
    return make_request(
        CONVERSATION, provider=name, api=api, api_key=KEY, model="m", base_url=base, offline=False, **kw
    )


def key_count(request) -> int:
    headers = request.headers()
    return sum(value.count(KEY) for value in headers.values()) + sum(name.count(KEY) for name in headers)


@pytest.mark.parametrize(("name", "api"), CASES, ids=lambda v: str(v))
def test_each_declared_api_builds_the_documented_request(name, api):
    request = build(name, api, max_tokens=64)
    base, auths = EXPECTED[name]
    assert request.url == base + PATHS[api]
    headers = request.headers()
    assert headers["Accept"] == "text/event-stream" and headers["Content-Type"] == "application/json"
    auth = auths[api]
    if auth is None:
        assert key_count(request) == 0
    else:
        assert headers[auth[0]] == auth[1]
        assert key_count(request) == 1, headers.keys()
    assert ("anthropic-version" in headers) == (api == "messages")
    body = request.body()
    assert body["model"] == "m" and body["stream"] is True
    if api == "chat":
        assert body["messages"] == CONVERSATION and body["max_tokens"] == 64
        has_options = name not in NO_STREAM_OPTIONS
        assert (body.get("stream_options") == {"include_usage": True}) == has_options
        assert has_options or "stream_options" not in body
    elif api == "responses":
        assert body["input"] == CONVERSATION and body["max_output_tokens"] == 64 and "max_tokens" not in body
        assert "stream_options" not in body
    else:
        assert body["system"] == "Be brief." and body["messages"] == CONVERSATION[1:]
        assert body["max_tokens"] == 64 and "stream_options" not in body
    assert KEY not in repr(request) and KEY not in str(body)


@pytest.mark.parametrize(("name", "api"), REFUSED, ids=lambda v: str(v))
def test_an_api_the_preset_does_not_serve_is_refused_by_name(name, api):
    with pytest.raises(ValueError) as caught:
        build(name, api)
    message = str(caught.value)
    assert repr(api) in message and repr(name) in message
    for served in EXPECTED[name][1]:
        assert repr(served) in message


@pytest.mark.parametrize("api", APIS)
def test_a_custom_base_url_accepts_every_api_and_sends_the_key_once(api):
    request = make_request("hi", base_url="https://llm.example.edu/v1/", api=api, api_key=KEY, model="m")
    assert request.provider.name == "custom"
    assert request.url == "https://llm.example.edu/v1" + PATHS[api]
    assert key_count(request) == 1
    header = "x-api-key" if api == "messages" else "Authorization"
    assert KEY in request.headers()[header]


def test_an_unknown_api_names_the_three():
    with pytest.raises(ValueError, match="chat, responses, messages"):
        make_request("hi", base_url="http://127.0.0.1:9/v1", api="completions", model="m")


def test_include_usage_is_the_presets_default_and_can_be_turned_off():
    custom = make_request("hi", base_url="http://127.0.0.1:9/v1", model="m")
    assert custom.body()["stream_options"] == {"include_usage": True}
    strict = make_request("hi", base_url="http://127.0.0.1:9/v1", model="m", include_usage=False)
    assert "stream_options" not in strict.body()
    assert "stream_options" not in build("mistral", "chat").body()
    assert build("mistral", "chat", include_usage=True).body()["stream_options"] == {"include_usage": True}
    # a stream_options the caller writes out goes as written (vLLM's continuous usage)
    own = {"include_usage": True, "continuous_usage_stats": True}
    assert (
        make_request("hi", base_url="http://127.0.0.1:9/v1", model="m", stream_options=own).body()["stream_options"]
        == own
    )


def test_the_token_limit_is_sent_under_each_dialects_name():
    for api, name in (("chat", "max_tokens"), ("responses", "max_output_tokens"), ("messages", "max_tokens")):
        for spelling in ("max_tokens", "max_output_tokens"):
            body = make_request("hi", base_url="http://127.0.0.1:9/v1", model="m", api=api, **{spelling: 7}).body()
            assert body[name] == 7, (api, spelling)
            assert [k for k in body if k.startswith("max_")] == [name], (api, spelling)
    chat = make_request("hi", base_url="http://127.0.0.1:9/v1", model="m", max_completion_tokens=9).body()
    assert chat["max_completion_tokens"] == 9 and "max_tokens" not in chat  # OpenAI's newer name stays
    assert make_request("hi", base_url="http://127.0.0.1:9/v1", model="m", api="messages").body()["max_tokens"] > 0


@pytest.mark.parametrize("api", APIS)
def test_a_continuation_is_the_dialects_own(api):
    request = make_request("Explain recursion", base_url="http://127.0.0.1:9/v1", model="m", api=api)
    state = StreamState()
    state.apply(TextDelta("Recursion is when a function calls itself. "))
    state.close()
    nxt = request.continued(state.text)
    turns = nxt.messages[len(request.messages) :]
    assert turns[0]["role"] == "assistant"
    if api == "messages":  # an assistant prefill, which may not end in white space
        assert turns == [{"role": "assistant", "content": "Recursion is when a function calls itself."}]
        assert nxt.carried == "Recursion is when a function calls itself."
    else:
        assert [t["role"] for t in turns] == ["assistant", "user"] and nxt.carried == state.text
    again = nxt.continued(state.text)  # a continuation of a continuation replaces those turns
    assert len(again.messages) == len(nxt.messages)


@pytest.mark.parametrize(
    ("prompt", "extra", "error", "says"),
    [
        (["hi", "there"], {}, TypeError, "a list prompt is a conversation"),
        (None, {}, TypeError, "the prompt is missing"),
        (42, {}, TypeError, "a string or a list of messages, not int"),
        ("hi", {"messages": [{"role": "user", "content": "x"}]}, ValueError, "not messages="),
        ("hi", {"input": [{"role": "user", "content": "x"}]}, ValueError, "not input="),
    ],
    ids=["list-of-strings", "none", "number", "messages-kwarg", "input-kwarg"],
)
def test_a_prompt_mistake_says_what_is_accepted(prompt, extra, error, says):
    with pytest.raises(error, match=re.escape(says)):
        make_request(prompt, base_url="http://127.0.0.1:9/v1", model="m", **extra)


def test_a_base_url_without_its_scheme_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=re.escape("'http://localhost:8000/v1'")):
        make_request("hi", base_url="localhost:8000/v1", model="m")


def test_a_base_url_with_a_query_but_no_key_is_kept():
    # A key in the base URL is refused: tests/net/test_leaks.py, with every form it could leak in.
    assert make_request("hi", base_url="https://llm.example.edu/v1?region=eu", model="m").url.startswith("https://")
