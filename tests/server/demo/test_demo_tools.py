"""`demo-tools`, a function-calling model, over real HTTP in all three dialects: it reads the
tools it is sent, calls the ones that fit with arguments valid under their schemas (two at once
when two fit), streams the calls as each API streams them, answers from the results it gets
back, says when a result is an error, and refuses a result that answers no call, or a bad tool
declaration, with the provider's own 400. The official `openai` and `anthropic` SDKs parse the
whole exchange into their typed objects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import jsonschema
import openai
import pytest
from support.http import post

from streamwidgets.server import script_for_request

FAST = {"tokens_per_second": 0, "first_token_delay": 0}
KEY = "sk-demo-not-a-real-key"
JSON = {"content-type": "application/json"}
APIS = ("chat", "responses", "messages")

WEATHER = {
    "name": "get_weather",
    "description": "The current weather in a city.",
    "schema": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "A city name, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
}
ADD = {
    "name": "add",
    "description": "Add two numbers and return their sum.",
    "schema": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
}
SEARCH = {
    "name": "search_docs",
    "description": "Search the documentation.",
    "schema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": 10},
            "sort": {"type": "string", "enum": ["relevance", "date"]},
            "filters": {
                "type": "object",
                "properties": {"section": {"type": "string"}, "exact": {"type": "boolean"}},
                "required": ["section", "exact"],
            },
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        },
        "required": ["query", "limit", "sort", "filters", "tags"],
    },
}
SCHEMAS = {tool["name"]: tool["schema"] for tool in (WEATHER, ADD, SEARCH)}


def declared(api: str, *tools: dict[str, Any]) -> list[dict[str, Any]]:
    """`tools` in `api`'s spelling."""
    out = []
    for tool in tools:
        spec = {"name": tool["name"], "description": tool["description"]}
        if api == "chat":
            out.append({"type": "function", "function": {**spec, "parameters": tool["schema"]}})
        elif api == "responses":
            out.append({"type": "function", **spec, "parameters": tool["schema"]})
        else:
            out.append({**spec, "input_schema": tool["schema"]})
    return out


def first_body(api: str, prompt: str, *tools: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "demo-tools", "stream": True, "demo": dict(FAST)}
    if api == "responses":
        body["input"] = prompt
    else:
        body["messages"] = [{"role": "user", "content": prompt}]
    if api == "messages":
        body["max_tokens"] = 1024
    if tools:
        body["tools"] = declared(api, *tools)
    return {**body, **extra}


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


def events(raw: bytes) -> list[dict[str, Any]]:
    """The JSON payloads of a stream, in order (comments and `[DONE]` left out)."""
    out = []
    for block in raw.decode("utf-8").split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(json.loads(line[len("data: ") :]))
    return out


def streamed_calls(api: str, raw: bytes) -> list[dict[str, Any]]:
    """The calls of a stream as the wire carries them, checking each API's shape on the way:
    (id, name, the argument fragments, the joined arguments)."""
    payloads = events(raw)
    calls: dict[Any, dict[str, Any]] = {}
    if api == "chat":
        for chunk in payloads:
            for choice in chunk["choices"]:
                for part in choice["delta"].get("tool_calls", []):
                    call = calls.setdefault(part["index"], {"id": None, "name": None, "fragments": []})
                    if "id" in part:  # the first fragment names the call, with empty arguments
                        assert call["id"] is None and part["type"] == "function"
                        assert part["function"]["arguments"] == ""
                        call.update(id=part["id"], name=part["function"]["name"])
                    else:
                        call["fragments"].append(part["function"]["arguments"])
        finish = [c["finish_reason"] for chunk in payloads for c in chunk["choices"] if c["finish_reason"]]
        assert finish == (["tool_calls"] if calls else ["stop"])
    elif api == "responses":
        done: dict[str, dict[str, Any]] = {}
        for event in payloads:
            kind = event["type"]
            if kind == "response.output_item.added" and event["item"]["type"] == "function_call":
                item = event["item"]
                assert item["arguments"] == "" and item["status"] == "in_progress"
                calls[item["id"]] = {"id": item["call_id"], "name": item["name"], "fragments": []}
            elif kind == "response.function_call_arguments.delta":
                calls[event["item_id"]]["fragments"].append(event["delta"])
            elif kind == "response.function_call_arguments.done":
                assert event["arguments"] == "".join(calls[event["item_id"]]["fragments"])
            elif kind == "response.output_item.done" and event["item"]["type"] == "function_call":
                done[event["item"]["id"]] = event["item"]
        assert set(done) == set(calls)
        for item_id, item in done.items():
            assert item["status"] == "completed" and item["arguments"] == "".join(calls[item_id]["fragments"])
        assert payloads[-1]["type"] == "response.completed"
        final = [o for o in payloads[-1]["response"]["output"] if o["type"] == "function_call"]
        assert [o["call_id"] for o in final] == [c["id"] for c in calls.values()]
    else:
        for event in payloads:
            if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
                block = event["content_block"]
                assert block["input"] == {}
                calls[event["index"]] = {"id": block["id"], "name": block["name"], "fragments": []}
            elif event["type"] == "content_block_delta" and event["index"] in calls:
                assert event["delta"]["type"] == "input_json_delta"
                calls[event["index"]]["fragments"].append(event["delta"]["partial_json"])
        stops = [e["delta"]["stop_reason"] for e in payloads if e["type"] == "message_delta"]
        assert stops == (["tool_use"] if calls else ["end_turn"])
    out = list(calls.values())
    for call in out:
        call["arguments"] = "".join(call["fragments"])
        assert len([f for f in call["fragments"] if f]) >= 2, call  # the arguments come in pieces
    return out


def streamed_text(api: str, raw: bytes) -> str:
    payloads = events(raw)
    if api == "chat":
        return "".join(c["delta"].get("content") or "" for p in payloads for c in p["choices"])
    if api == "responses":
        return "".join(p["delta"] for p in payloads if p["type"] == "response.output_text.delta")
    return "".join(
        p["delta"]["text"]
        for p in payloads
        if p["type"] == "content_block_delta" and p["delta"]["type"] == "text_delta"
    )


def valid(call: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments, parsed and validated against its tool's schema."""
    arguments = json.loads(call["arguments"])
    jsonschema.validate(arguments, SCHEMAS[call["name"]])
    return arguments


def follow_up(api: str, body: dict[str, Any], calls: list[dict[str, Any]], outputs: list[Any]) -> dict[str, Any]:
    """`body` with the assistant's calls and the tools' outputs appended, as each API spells them.
    An output is a string, or `(string, True)` for a result the tool marks as an error."""
    results = [(o, False) if isinstance(o, str) else o for o in outputs]
    body = {**body, "demo": dict(FAST)}
    if api == "chat":
        assistant = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls
            ],
        }
        tools = [
            {"role": "tool", "tool_call_id": c["id"], "content": r} for c, (r, _) in zip(calls, results, strict=True)
        ]
        body["messages"] = [*body["messages"], assistant, *tools]
    elif api == "responses":
        asked = body["input"]
        items = [{"role": "user", "content": asked}] if isinstance(asked, str) else list(asked)
        items += [
            {"type": "function_call", "call_id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in calls
        ]
        items += [
            {"type": "function_call_output", "call_id": c["id"], "output": r}
            for c, (r, _) in zip(calls, results, strict=True)
        ]
        body["input"] = items
    else:
        uses = [
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": json.loads(c["arguments"])} for c in calls
        ]
        answers = [
            {"type": "tool_result", "tool_use_id": c["id"], "content": r, **({"is_error": True} if e else {})}
            for c, (r, e) in zip(calls, results, strict=True)
        ]
        body["messages"] = [
            *body["messages"],
            {"role": "assistant", "content": uses},
            {"role": "user", "content": answers},
        ]
    return body


def rejection(api: str, response: httpx.Response) -> str:
    """The message of a 400, checked to be in the route's own envelope."""
    assert response.status_code == 400, response.text
    body = response.json()
    if api == "messages":
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        return body["error"]["message"]
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["type"] == "invalid_request_error"
    return body["error"]["message"]


# ---------------------------------------------------------------------------- calling


@pytest.mark.parametrize("api", APIS)
def test_one_call_with_arguments_from_the_question(demo_server, http, api):
    body = first_body(api, "What is 17 plus 25?", WEATHER, ADD)
    raw = post(http, demo_server, api, body).content
    calls = streamed_calls(api, raw)
    assert [c["name"] for c in calls] == ["add"]
    assert valid(calls[0]) == {"a": 17, "b": 25}
    assert streamed_text(api, raw) == "I'll call `add`."
    script = script_for_request(api, body)
    assert [(c.name, c.arguments) for c in script.tool_calls] == [(c["name"], c["arguments"]) for c in calls]


@pytest.mark.parametrize("api", APIS)
def test_every_required_property_typed_and_in_range(demo_server, http, api):
    raw = post(http, demo_server, api, first_body(api, "Find the docs about streaming, please.", SEARCH)).content
    (call,) = streamed_calls(api, raw)
    arguments = valid(call)
    assert arguments["query"] == "Find the docs about streaming, please"  # the question's words
    assert 1 <= arguments["limit"] <= 10 and arguments["sort"] in ("relevance", "date")
    assert len(arguments["tags"]) >= 2 and isinstance(arguments["filters"]["exact"], bool)


@pytest.mark.parametrize("api", APIS)
def test_two_fitting_tools_are_called_in_one_answer(demo_server, http, api):
    body = first_body(api, "What's the weather in Paris, and what is 17 plus 25?", WEATHER, ADD)
    calls = streamed_calls(api, post(http, demo_server, api, body).content)
    assert [c["name"] for c in calls] == ["get_weather", "add"]
    assert len({c["id"] for c in calls}) == 2
    assert valid(calls[0])["city"] == "Paris" and valid(calls[1]) == {"a": 17, "b": 25}


@pytest.mark.parametrize("api", APIS)
def test_one_tool_for_two_cities_is_called_twice_unless_parallel_calls_are_off(demo_server, http, api):
    prompt = "Weather in Oslo and Lisbon, in Fahrenheit?"
    calls = streamed_calls(api, post(http, demo_server, api, first_body(api, prompt, WEATHER)).content)
    assert [valid(c) for c in calls] == [
        {"city": "Oslo", "unit": "fahrenheit"},
        {"city": "Lisbon", "unit": "fahrenheit"},
    ]
    off = (
        {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}
        if api == "messages"
        else {"parallel_tool_calls": False}
    )
    calls = streamed_calls(api, post(http, demo_server, api, first_body(api, prompt, WEATHER, **off)).content)
    assert [valid(c)["city"] for c in calls] == ["Oslo"]


@pytest.mark.parametrize("api", APIS)
def test_tool_choice_none_named_and_required(demo_server, http, api):
    none = {"type": "none"} if api == "messages" else "none"
    raw = post(http, demo_server, api, first_body(api, "Weather in Rome?", WEATHER, tool_choice=none)).content
    assert streamed_calls(api, raw) == [] and "tool_choice: none" in streamed_text(api, raw)

    named = {
        "chat": {"type": "function", "function": {"name": "add"}},
        "responses": {"type": "function", "name": "add"},
        "messages": {"type": "tool", "name": "add"},
    }[api]
    body = first_body(api, "Weather in Rome?", WEATHER, ADD, tool_choice=named)
    calls = streamed_calls(api, post(http, demo_server, api, body).content)
    assert [c["name"] for c in calls] == ["add"] and valid(calls[0])

    missing = {**named, "function": {"name": "nope"}} if api == "chat" else {**named, "name": "nope"}
    message = rejection(api, post(http, demo_server, api, first_body(api, "Hi", WEATHER, tool_choice=missing)))
    assert "nope" in message

    required = {"type": "any"} if api == "messages" else "required"
    message = rejection(api, post(http, demo_server, api, first_body(api, "Hi", tool_choice=required)))
    assert "tool_choice" in message and "tools" in message


@pytest.mark.parametrize("api", APIS)
def test_without_tools_a_plain_answer_that_says_so(demo_server, http, api):
    raw = post(http, demo_server, api, first_body(api, "Weather in Paris and Tokyo?")).content
    assert streamed_calls(api, raw) == []
    assert streamed_text(api, raw).startswith("No tools came with this request, so I have nothing to call")


@pytest.mark.parametrize("api", APIS)
def test_the_same_request_gives_the_same_bytes(demo_server, http, api):
    body = first_body(api, "What's the weather in Paris, and what is 17 plus 25?", WEATHER, ADD)
    body["demo"] = {**FAST, "seed": "same"}
    first, second = (post(http, demo_server, api, body).content for _ in range(2))
    assert first == second and b"get_weather" in first


# ---------------------------------------------------------------------------- results


@pytest.mark.parametrize("api", APIS)
def test_the_answer_quotes_the_results(demo_server, http, api):
    body = first_body(api, "What's the weather in Paris, and what is 17 plus 25?", WEATHER, ADD)
    calls = streamed_calls(api, post(http, demo_server, api, body).content)
    outputs = [json.dumps({"temperature": 18, "unit": "celsius", "condition": "Sunny"}), "42"]
    raw = post(http, demo_server, api, follow_up(api, body, calls, outputs)).content
    assert streamed_calls(api, raw) == []
    text = streamed_text(api, raw)
    assert "In Paris it is 18 °C and sunny." in text and "The sum is 42." in text


@pytest.mark.parametrize("api", APIS)
def test_an_error_result_is_said_and_the_rest_answered(demo_server, http, api):
    body = first_body(api, "What's the weather in Paris, and what is 17 plus 25?", WEATHER, ADD)
    calls = streamed_calls(api, post(http, demo_server, api, body).content)
    failed: Any = ("the weather service is down", True) if api == "messages" else "Error: the weather service is down"
    raw = post(http, demo_server, api, follow_up(api, body, calls, [failed, "42"])).content
    text = streamed_text(api, raw)
    assert "The call to `get_weather` failed" in text and "the weather service is down" in text
    assert "The sum is 42." in text and "answered with the results that did come back" in text


@pytest.mark.parametrize("api", APIS)
def test_a_failed_call_is_retried_once_with_the_arguments_the_error_suggests(demo_server, http, api):
    body = first_body(api, "Weather in Pariss?", WEATHER)
    (call,) = streamed_calls(api, post(http, demo_server, api, body).content)
    assert valid(call)["city"] == "Pariss"  # the question's word, as it was typed
    failed: Any = "Error: unknown city 'Pariss'. Did you mean Paris?"
    failed = (failed[len("Error: ") :], True) if api == "messages" else failed
    second = follow_up(api, body, [call], [failed])
    raw = post(http, demo_server, api, second).content
    (retry,) = streamed_calls(api, raw)
    assert retry["name"] == "get_weather" and valid(retry) == {"city": "Paris", "unit": "celsius"}
    assert retry["id"] != call["id"]
    assert streamed_text(api, raw) == (
        "The call to `get_weather` failed: unknown city 'Pariss'. Did you mean Paris? "
        "I'll call it again with other arguments."
    )

    again: Any = ("unknown city 'Paris'. Did you mean Lyon?", True)
    again = again if api == "messages" else "Error: " + again[0]
    raw = post(http, demo_server, api, follow_up(api, second, [retry], [again])).content
    assert streamed_calls(api, raw) == []  # once, not forever
    text = streamed_text(api, raw)
    assert "unknown city 'Paris'. Did you mean Lyon?" in text and "cannot answer that part without the tool" in text


@pytest.mark.parametrize("api", APIS)
def test_a_result_for_no_call_made_is_refused(demo_server, http, api):
    body = first_body(api, "Weather in Paris?", WEATHER)
    calls = streamed_calls(api, post(http, demo_server, api, body).content)
    sent = follow_up(api, body, calls, ["18 °C"])
    wrong = "call_not_made" if api != "messages" else "toolu_not_made"
    if api == "chat":
        sent["messages"][-1]["tool_call_id"] = wrong
        expected = (
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
        )
    elif api == "responses":
        sent["input"][-1]["call_id"] = wrong
        expected = f"No tool call found for function call output with call_id {wrong}."
    else:
        sent["messages"][-1]["content"][0]["tool_use_id"] = wrong
        expected = f"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: {wrong}."
    assert rejection(api, post(http, demo_server, api, sent)).startswith(expected)


@pytest.mark.parametrize("api", APIS)
def test_a_call_left_without_its_result_is_refused(demo_server, http, api):
    body = first_body(api, "Weather in Oslo and Lisbon?", WEATHER)
    calls = streamed_calls(api, post(http, demo_server, api, body).content)
    sent = follow_up(api, body, calls, ["4 °C", "19 °C"])
    if api == "chat":
        del sent["messages"][-1]
        expected = "An assistant message with 'tool_calls' must be followed by tool messages"
    elif api == "responses":
        del sent["input"][-1]
        expected = f"No tool output found for function call {calls[1]['id']}."
    else:
        del sent["messages"][-1]["content"][1]
        expected = "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after"
    message = rejection(api, post(http, demo_server, api, sent))
    assert message.startswith(expected) and calls[1]["id"] in message


# ---------------------------------------------------------------------------- declarations


BAD_TOOLS = {
    "chat": [
        (
            [{"type": "function", "function": {"parameters": {}}}],
            "Missing required parameter: 'tools[0].function.name'.",
        ),
        (
            [{"type": "function", "function": {"name": "f", "parameters": "{}"}}],
            "Invalid type for 'tools[0].function.parameters': expected an object, but got a string instead.",
        ),
        ([{"type": "function"}], "Missing required parameter: 'tools[0].function'."),
        ([{"type": "tool", "function": {"name": "f"}}], "Invalid value: 'tool'. Supported values are:"),
        ([{"type": "function", "function": {"name": "get weather"}}], "Invalid 'tools[0].function.name': string"),
        ({"name": "f"}, "Invalid type for 'tools': expected an array"),
    ],
    "responses": [
        ([{"type": "function", "parameters": {}}], "Missing required parameter: 'tools[0].name'."),
        (
            [{"type": "function", "name": "f", "parameters": []}],
            "Invalid type for 'tools[0].parameters': expected an object, but got an array instead.",
        ),
    ],
    "messages": [
        ([{"input_schema": {"type": "object"}}], "tools.0.custom.name: Field required"),
        ([{"name": "f"}], "tools.0.custom.input_schema: Field required"),
        ([{"name": "f", "input_schema": "{}"}], "tools.0.custom.input_schema: Input should be a valid dictionary"),
        (
            [{"name": "f", "input_schema": {"type": "object"}}, {"name": "f", "input_schema": {"type": "object"}}],
            "tools: Tool names must be unique.",
        ),
    ],
}


@pytest.mark.parametrize(
    "api, tools, expected", [(api, tools, expected) for api, rows in BAD_TOOLS.items() for tools, expected in rows]
)
def test_bad_tool_declarations_are_refused_in_the_providers_words(demo_server, http, api, tools, expected):
    body = {**first_body(api, "Hi"), "tools": tools}
    assert rejection(api, post(http, demo_server, api, body)).startswith(expected)


def test_hostile_schemas_and_results_cost_nothing(demo_server, http):
    """A schema may ask for 10^60 items or characters, or bound a number by 1e400 (infinite to
    JSON parsers), and a question may hold a 500-digit number: the model stays within bounds
    and answers. A result of a megabyte of spaces is read in linear time."""
    huge = 10**60
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "minItems": huge},
            "name": {"type": "string", "minLength": huge},
            "n": {"type": "integer", "minimum": "INF", "default": "INF"},
            "x": {"type": "number", "exclusiveMaximum": "-INF"},
            "nothing": {"type": "null"},
        },
        "required": ["tags", "name", "n", "x", "nothing"],
    }
    tool = {"name": "hostile", "description": "x", "schema": schema}
    body = first_body("chat", "9" * 500 + " and 7", tool)
    sent = json.dumps(body).replace('"INF"', "1e400").replace('"-INF"', "-1e400")  # JSON, not Python's
    raw = http.post(f"{demo_server.base_url}/chat/completions", content=sent, headers=JSON).content
    (call,) = streamed_calls("chat", raw)
    arguments = json.loads(call["arguments"])
    assert len(arguments["tags"]) == 100 and len(arguments["name"]) == 1000
    assert arguments["n"] == 7 and arguments["nothing"] is None  # the 500-digit number is no number
    outputs = [" " * 1_000_000 + "fine"]
    again = json.dumps(follow_up("chat", body, [call], outputs)).replace('"INF"', "1e400").replace('"-INF"', "-1e400")
    response = http.post(f"{demo_server.base_url}/chat/completions", content=again, headers=JSON)
    answer = streamed_text("chat", response.content)
    assert answer == "`hostile` says: fine\n"


# ---------------------------------------------------------------------------- the SDKs


def test_openai_chat_stream_helper_parses_the_exchange(demo_server):
    client = openai.OpenAI(base_url=demo_server.base_url, api_key=KEY, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "What's the weather in Paris, and what is 17 plus 25?"}]
    tools: Any = declared("chat", WEATHER, ADD)
    with client.chat.completions.stream(
        model="demo-tools", messages=messages, tools=tools, extra_body={"demo": FAST}
    ) as stream:
        done = [e for e in stream if e.type == "tool_calls.function.arguments.done"]
        completion = stream.get_final_completion()
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and [e.name for e in done] == ["get_weather", "add"]
    calls = choice.message.tool_calls
    assert calls is not None and [c.function.name for c in calls] == ["get_weather", "add"]
    assert json.loads(calls[1].function.arguments) == {"a": 17, "b": 25}
    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append(
        {"role": "tool", "tool_call_id": calls[0].id, "content": '{"temperature": 18, "condition": "sunny"}'}
    )
    messages.append({"role": "tool", "tool_call_id": calls[1].id, "content": "42"})
    with client.chat.completions.stream(
        model="demo-tools", messages=messages, tools=tools, extra_body={"demo": FAST}
    ) as stream:
        answer = stream.get_final_completion().choices[0]
    assert answer.finish_reason == "stop" and not answer.message.tool_calls
    assert "In Paris it is 18 °C and sunny." in (answer.message.content or "")

    messages[-1]["tool_call_id"] = "call_nobody_made"
    with pytest.raises(openai.BadRequestError, match="must be a response to a preceeding message"):
        client.chat.completions.create(model="demo-tools", messages=messages, tools=tools, extra_body={"demo": FAST})


def test_openai_responses_stream_helper_parses_the_exchange(demo_server):
    client = openai.OpenAI(base_url=demo_server.base_url, api_key=KEY, max_retries=0)
    tools: Any = declared("responses", WEATHER, ADD)
    asked: list[Any] = [{"role": "user", "content": "What's the weather in Paris, and what is 17 plus 25?"}]
    with client.responses.stream(model="demo-tools", input=asked, tools=tools, extra_body={"demo": FAST}) as stream:
        response = stream.get_final_response()
    calls = [item for item in response.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["get_weather", "add"] and all(c.call_id.startswith("call_") for c in calls)
    assert json.loads(calls[0].arguments)["city"] == "Paris"
    items: list[Any] = [*asked, *(c.model_dump(exclude_none=True) for c in calls)]
    items += [
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": '{"temp": 18, "sky": "clear"}'},
        {"type": "function_call_output", "call_id": calls[1].call_id, "output": "42"},
    ]
    with client.responses.stream(model="demo-tools", input=items, tools=tools, extra_body={"demo": FAST}) as stream:
        answer = stream.get_final_response()
    assert "In Paris it is 18 °C and clear." in answer.output_text and "The sum is 42." in answer.output_text

    items[-1] = {**items[-1], "call_id": "call_nobody_made"}
    with pytest.raises(openai.BadRequestError, match="No tool call found for function call output"):
        client.responses.create(model="demo-tools", input=items, tools=tools, extra_body={"demo": FAST})


def test_anthropic_stream_helper_parses_the_exchange(demo_server):
    client = anthropic.Anthropic(base_url=demo_server.base_url[: -len("/v1")], api_key=KEY, max_retries=0)
    tools: Any = declared("messages", WEATHER, ADD)
    messages: list[Any] = [{"role": "user", "content": "What's the weather in Paris, and what is 17 plus 25?"}]
    with client.messages.stream(
        model="demo-tools", max_tokens=1024, messages=messages, tools=tools, extra_body={"demo": FAST}
    ) as stream:
        message = stream.get_final_message()
    assert message.stop_reason == "tool_use"
    uses = [block for block in message.content if block.type == "tool_use"]
    assert [u.name for u in uses] == ["get_weather", "add"] and uses[1].input == {"a": 17, "b": 25}
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": uses[0].id, "content": "no such city", "is_error": True},
                {"type": "tool_result", "tool_use_id": uses[1].id, "content": [{"type": "text", "text": "42"}]},
            ],
        }
    )
    with client.messages.stream(
        model="demo-tools", max_tokens=1024, messages=messages, tools=tools, extra_body={"demo": FAST}
    ) as stream:
        answer = stream.get_final_message()
    text = "".join(block.text for block in answer.content if block.type == "text")
    assert answer.stop_reason == "end_turn" and "The sum is 42." in text
    assert "The call to `get_weather` failed: no such city." in text

    messages[-1]["content"] = messages[-1]["content"][1:]
    with pytest.raises(anthropic.BadRequestError, match="ids were found without `tool_result` blocks"):
        client.messages.create(
            model="demo-tools", max_tokens=1024, messages=messages, tools=tools, extra_body={"demo": FAST}
        )
