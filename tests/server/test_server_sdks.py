"""The official `openai` and `anthropic` SDKs, pointed at the embedded provider with `base_url=`,
parse every API and flavor it serves; what they rebuild matches the server's own script and
what `streamwidgets.parse` makes of the raw bytes of the same request."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import httpx
import openai
import pytest

import streamwidgets
from streamwidgets.server import FLAVORS, DemoServer, Script, script_for_request

KEY = "sk-demo-not-a-real-key"
FAST = {"tokens_per_second": 0, "first_token_delay": 0}
PROMPT = "How does photosynthesis work? What is the weather in Oslo and Lisbon?"
MODELS = ("demo-reasoning", "demo-search", "demo-tools", "demo-xss")
ALL_FLAVORS = tuple(FLAVORS)


def openai_client(server: DemoServer, flavor: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.flavor_url(flavor), api_key=KEY, max_retries=0)


def anthropic_client(server: DemoServer, flavor: str) -> anthropic.Anthropic:
    # The Anthropic SDK appends /v1/messages to its base URL.
    return anthropic.Anthropic(base_url=server.flavor_url(flavor)[: -len("/v1")], api_key=KEY, max_retries=0)


def demo(seed: str) -> dict[str, Any]:
    return {"demo": {**FAST, "seed": seed}}


WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def tools_for(api: str, model: str) -> dict[str, Any]:
    """A weather tool in `api`'s spelling, for `demo-tools` (which calls only the tools it is sent)."""
    if model != "demo-tools":
        return {}
    spec = {"name": "get_weather", "description": "The current weather in a city."}
    if api == "chat":
        return {"tools": [{"type": "function", "function": {**spec, "parameters": WEATHER_SCHEMA}}]}
    if api == "responses":
        return {"tools": [{"type": "function", **spec, "parameters": WEATHER_SCHEMA}]}
    return {"tools": [{**spec, "input_schema": WEATHER_SCHEMA}]}


# What each SDK call sends, as the server reads it: the same dicts give the expected script.
def chat_body(model: str, seed: str) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT}],
        "stream": True,
        "stream_options": {"include_usage": True},
        **tools_for("chat", model),
        **demo(seed),
    }


def responses_body(model: str, seed: str) -> dict[str, Any]:
    return {"model": model, "input": PROMPT, "stream": True, **tools_for("responses", model), **demo(seed)}


def messages_body(model: str, seed: str) -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": PROMPT}],
        "stream": True,
        **tools_for("messages", model),
        **demo(seed),
    }


def sdk_kwargs(body: dict[str, Any]) -> dict[str, Any]:
    kwargs = {k: v for k, v in body.items() if k != "demo"}
    kwargs["extra_body"] = {"demo": body["demo"]}
    return kwargs


# ---------------------------------------------------------------------------- rebuilding


def rebuild_chat(chunks: list[Any]) -> dict[str, Any]:
    text, reasoning, usage, sources = "", "", None, []
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        if getattr(chunk, "sources", None):  # Venym's leading event, not a chat chunk
            sources = chunk.sources
        if getattr(chunk, "usage", None):
            usage = chunk.usage
        for choice in getattr(chunk, "choices", None) or []:
            delta = choice.delta
            text += delta.content or ""
            reasoning += getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None) or ""
            for call in delta.tool_calls or []:
                entry = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] = entry["id"] or (call.id or "")
                if call.function is not None:
                    entry["name"] += call.function.name or ""
                    entry["arguments"] += call.function.arguments or ""
    return {
        "text": text,
        "reasoning": reasoning,
        "usage": usage,
        "calls": [calls[i] for i in sorted(calls)],
        "sources": sources,
    }


def rebuild_responses(events: list[Any]) -> dict[str, Any]:
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    reasoning = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    calls = [
        {"id": e.item.call_id, "name": e.item.name, "arguments": e.item.arguments}
        for e in events
        if e.type == "response.output_item.done" and e.item.type == "function_call"
    ]
    final = events[-1]
    return {"text": text, "reasoning": reasoning, "usage": final.response.usage, "calls": calls, "last": final.type}


def check_usage(script: Script, prompt: int, completion: int, total: int | None, reasoning: int | None = None) -> None:
    assert (prompt, completion) == (script.usage.prompt_tokens, script.usage.completion_tokens)
    if total is not None:
        assert total == script.usage.total_tokens
    if reasoning is not None:
        assert reasoning == script.usage.reasoning_tokens


def check_calls(script: Script, calls: list[dict[str, str]]) -> None:
    assert [(c["name"], c["arguments"]) for c in calls] == [(c.name, c.arguments) for c in script.tool_calls]
    assert all(c["id"] for c in calls)


# ---------------------------------------------------------------------------- openai: chat


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("flavor", ALL_FLAVORS)
def test_openai_chat_sync(demo_server, flavor, model):
    body = chat_body(model, f"chat-{flavor}")
    script = script_for_request("chat", body)
    got = rebuild_chat(list(openai_client(demo_server, flavor).chat.completions.create(**sdk_kwargs(body))))
    assert got["text"] == script.text and got["reasoning"] == script.reasoning
    check_calls(script, got["calls"])
    usage = got["usage"]
    check_usage(script, usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    if flavor == "venym" and script.sources:
        assert [s["url"] for s in got["sources"]] == [s.url for s in script.sources]


@pytest.mark.parametrize("flavor", ALL_FLAVORS)
def test_openai_chat_async(demo_server, flavor):
    body = chat_body("demo-reasoning", "async")
    script = script_for_request("chat", body)

    async def main() -> dict[str, Any]:
        client = openai.AsyncOpenAI(base_url=demo_server.flavor_url(flavor), api_key=KEY, max_retries=0)
        async with client:
            stream = await client.chat.completions.create(**sdk_kwargs(body))
            return rebuild_chat([chunk async for chunk in stream])

    got = asyncio.run(main())
    assert got["text"] == script.text and got["reasoning"] == script.reasoning
    check_usage(script, got["usage"].prompt_tokens, got["usage"].completion_tokens, got["usage"].total_tokens)


def test_openai_chat_non_streaming(demo_server):
    body = {**chat_body("demo-tools", "whole"), "stream": False}
    del body["stream_options"]
    completion = openai_client(demo_server, "demo").chat.completions.create(**sdk_kwargs(body))
    script = script_for_request("chat", body)
    message = completion.choices[0].message
    assert message.content == script.text and completion.choices[0].finish_reason == "tool_calls"
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == [
        (c.name, c.arguments) for c in script.tool_calls
    ]
    check_usage(
        script, completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens
    )


# ---------------------------------------------------------------------------- openai: responses


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("flavor", ALL_FLAVORS)
def test_openai_responses_sync(demo_server, flavor, model):
    body = responses_body(model, f"responses-{flavor}")
    script = script_for_request("responses", body)
    client = openai_client(demo_server, flavor)
    got = rebuild_responses(list(client.responses.create(**sdk_kwargs(body))))
    assert got["last"] == "response.completed"
    assert got["text"] == script.text
    # Engy's page: "On /v1/responses, reasoning is not returned" (its tokens are still billed).
    assert got["reasoning"] == ("" if flavor == "engy" else script.reasoning)
    check_calls(script, got["calls"])
    usage = got["usage"]
    check_usage(
        script,
        usage.input_tokens,
        usage.output_tokens,
        usage.total_tokens,
        usage.output_tokens_details.reasoning_tokens,
    )

    # The SDK's stricter helper checks item identities and event order, then assembles the response.
    helper_kwargs = sdk_kwargs(body)
    del helper_kwargs["stream"]
    with client.responses.stream(**helper_kwargs) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output_text == script.text and final.usage.output_tokens == script.usage.completion_tokens
    if script.sources:
        annotations = [a for item in final.output if item.type == "message" for a in item.content[0].annotations]
        assert {a.url for a in annotations} <= {s.url for s in script.sources} and annotations


def test_openai_responses_async_and_incomplete(demo_server):
    body = responses_body("demo-length", "async")
    script = script_for_request("responses", body)

    async def main() -> list[Any]:
        client = openai.AsyncOpenAI(base_url=demo_server.base_url, api_key=KEY, max_retries=0)
        async with client:
            stream = await client.responses.create(**sdk_kwargs(body))
            return [event async for event in stream]

    events = asyncio.run(main())
    got = rebuild_responses(events)
    assert got["last"] == "response.incomplete" and got["text"] == script.text
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
    assert got["usage"].output_tokens == script.usage.completion_tokens == 60


# ---------------------------------------------------------------------------- anthropic: messages


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("flavor", ALL_FLAVORS)
def test_anthropic_messages_sync(demo_server, flavor, model):
    body = messages_body(model, f"messages-{flavor}")
    script = script_for_request("messages", body)
    client = anthropic_client(demo_server, flavor)
    helper_kwargs = sdk_kwargs(body)
    del helper_kwargs["stream"]
    with client.messages.stream(**helper_kwargs) as stream:
        streamed_text = "".join(stream.text_stream)
        message = stream.get_final_message()
    text = "".join(b.text for b in message.content if b.type == "text")
    thinking = "".join(b.thinking for b in message.content if b.type == "thinking")
    assert streamed_text == text == script.text and thinking == script.reasoning
    tools = [b for b in message.content if b.type == "tool_use"]
    assert [(t.name, t.input) for t in tools] == [(c.name, json.loads(c.arguments)) for c in script.tool_calls]
    assert message.stop_reason == ("tool_use" if script.tool_calls else "end_turn")
    usage = message.usage
    check_usage(
        script,
        usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens,
        usage.output_tokens,
        None,
    )
    cited = [c.url for b in message.content if b.type == "text" for c in (b.citations or [])]
    assert set(cited) <= {s.url for s in script.sources} and bool(cited) == bool(script.sources)

    raw = list(client.messages.create(**sdk_kwargs(body)))
    assert raw[0].type == "message_start" and raw[-1].type == "message_stop"
    deltas = "".join(e.delta.text for e in raw if e.type == "content_block_delta" and e.delta.type == "text_delta")
    assert deltas == script.text


def test_anthropic_messages_async(demo_server):
    body = messages_body("demo-reasoning", "async")
    script = script_for_request("messages", body)

    async def main() -> Any:
        client = anthropic.AsyncAnthropic(base_url=demo_server.url, api_key=KEY, max_retries=0)
        kwargs = sdk_kwargs(body)
        del kwargs["stream"]
        async with client.messages.stream(**kwargs) as stream:
            return await stream.get_final_message()

    message = asyncio.run(main())
    assert message.content[0].thinking == script.reasoning and message.content[1].text == script.text
    assert message.usage.output_tokens == script.usage.completion_tokens


def test_anthropic_thinking_disabled_and_non_streaming(demo_server):
    body = {**messages_body("demo-reasoning", "off"), "stream": False, "thinking": {"type": "disabled"}}
    message = anthropic_client(demo_server, "demo").messages.create(**sdk_kwargs(body))
    script = script_for_request("messages", body)
    assert [b.type for b in message.content] == ["text"] and message.content[0].text == script.text
    assert message.usage.output_tokens == script.usage.completion_tokens == len(script.text_tokens)


# ---------------------------------------------------------------------------- errors through the SDKs


def test_sdks_raise_their_typed_errors(demo_server):
    client = openai_client(demo_server, "demo")
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="demo-http-429", messages=messages, stream=True)
    assert caught.value.status_code == 429 and caught.value.response.headers["retry-after"] == "2"
    assert KEY not in str(caught.value)
    with pytest.raises(openai.AuthenticationError):
        client.responses.create(model="demo-http-401", input="hi", stream=True)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="demo-http-404", messages=messages)

    claude = anthropic_client(demo_server, "demo")
    with pytest.raises(anthropic.RateLimitError) as limited:
        claude.messages.create(model="demo-http-429", max_tokens=10, messages=messages, stream=True)
    assert limited.value.body["error"]["type"] == "rate_limit_error"
    with pytest.raises(anthropic.InternalServerError):
        claude.messages.create(model="demo-http-500", max_tokens=10, messages=messages)

    # Errors inside a 200 stream: the chat chunk's `error` field and Anthropic's `event: error`.
    for flavor in ("demo", "everyais", "engy"):
        with pytest.raises(openai.APIError, match="demo-error"):
            for _ in openai_client(demo_server, flavor).chat.completions.create(
                model="demo-error", messages=messages, stream=True, extra_body={"demo": FAST}
            ):
                pass
    with pytest.raises(anthropic.APIStatusError, match="demo-error"):
        for _ in claude.messages.create(
            model="demo-error", max_tokens=10, messages=messages, stream=True, extra_body={"demo": FAST}
        ):
            pass
    failed = list(client.responses.create(model="demo-error", input="hi", stream=True, extra_body={"demo": FAST}))
    assert failed[-1].type == "response.failed" and failed[-1].response.error.code == "server_error"


# ---------------------------------------------------------------------------- the library's own parser


API_BODIES = {
    "chat": ("chat/completions", chat_body),
    "responses": ("responses", responses_body),
    "messages": ("messages", messages_body),
}


@pytest.mark.parametrize("api", list(API_BODIES))
@pytest.mark.parametrize("flavor", ALL_FLAVORS)
def test_streamwidgets_parse_agrees_with_the_sdks(demo_server, flavor, api):
    """`streamwidgets.parse` on the raw bytes gives what the SDK rebuilt from the same stream."""
    endpoint, make = API_BODIES[api]
    body = make("demo-tools" if api == "chat" else "demo-reasoning", f"parse-{flavor}-{api}")
    raw = httpx.post(f"{demo_server.flavor_url(flavor)}/{endpoint}", json=body, timeout=10).content
    state = streamwidgets.parse(raw, api=api, provider=flavor)
    assert state.status == "complete" and state.warnings == []

    if api == "chat":
        sdk = rebuild_chat(list(openai_client(demo_server, flavor).chat.completions.create(**sdk_kwargs(body))))
        usage = sdk["usage"]
        sdk_usage = (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
        assert [(c.id, c.name, c.arguments) for c in state.tool_calls] == [
            (c["id"], c["name"], c["arguments"]) for c in sdk["calls"]
        ]
        if flavor == "engy":
            assert state.usage.cost == pytest.approx(usage.cost)
    elif api == "responses":
        sdk = rebuild_responses(list(openai_client(demo_server, flavor).responses.create(**sdk_kwargs(body))))
        usage = sdk["usage"]
        sdk_usage = (usage.input_tokens, usage.output_tokens, usage.total_tokens)
        assert state.usage.reasoning_tokens == usage.output_tokens_details.reasoning_tokens
    else:
        kwargs = sdk_kwargs(body)
        del kwargs["stream"]
        with anthropic_client(demo_server, flavor).messages.stream(**kwargs) as stream:
            message = stream.get_final_message()
        sdk = {
            "text": "".join(b.text for b in message.content if b.type == "text"),
            "reasoning": "".join(b.thinking for b in message.content if b.type == "thinking"),
        }
        usage = message.usage
        prompt = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        sdk_usage = (prompt, usage.output_tokens, prompt + usage.output_tokens)
    assert state.text == sdk["text"] and state.reasoning == sdk["reasoning"]
    assert (state.usage.prompt_tokens, state.usage.completion_tokens, state.usage.total_tokens) == sdk_usage
