"""Gemini's native API on the embedded provider, over real loopback sockets.

Every scenario of `SCENARIOS` streams in Gemini's shape, read from the raw body: `data:` events
framed by CRLF, no terminator, the finish reason on the last chunk only, cumulative usage, thought
parts, whole function calls, grounding metadata, Google's error object inside the stream. Then the
whole answer (`generateContent`), the JSON array (no `alt=sse`), the refusals in Google's envelope,
log-probabilities, and the tool loop. The client's Gemini dialect is not used: the bytes are read
here.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import httpx
import pytest

from streamwidgets.server import SCENARIOS, DemoServer
from streamwidgets.server.demo._requests import parse_request
from streamwidgets.server.demo._scenarios import build_script
from streamwidgets.server.demo.apis import Endpoint

FAST = {"tokens_per_second": 0, "first_token_delay": 0}
PROMPT = "How does binary search work?"
WEATHER = {
    "name": "get_weather",
    "description": "The current weather in a city.",
    "parameters": {
        "type": "OBJECT",
        "properties": {"city": {"type": "STRING"}, "unit": {"type": "STRING", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"],
    },
}
TOOL_PROMPT = "What's the weather in Paris and in Tokyo right now?"


@pytest.fixture(scope="module")
def http():
    with httpx.Client(timeout=30) as client:
        yield client


def url(
    server: DemoServer, model: str, method: str = "streamGenerateContent", *, sse: bool = True, base: str = ""
) -> str:
    query = "?alt=sse" if sse and method == "streamGenerateContent" else ""
    return f"{base or server.base_url}/models/{model}:{method}{query}"


def body(prompt: str = PROMPT, *, contents: Optional[list[Any]] = None, demo: Any = None, **fields: Any) -> dict:
    """A request as the client writes it: thought summaries asked for, the demo at full speed."""
    generation = {"thinkingConfig": {"includeThoughts": True}, **fields.pop("generationConfig", {})}
    return {
        "contents": contents or [{"role": "user", "parts": [{"text": prompt}]}],
        "generationConfig": generation,
        "demo": {**FAST, **(demo or {})},
        **fields,
    }


def read_events(raw: bytes) -> tuple[list[str], bytes]:
    """(the data of each whole event, the bytes after the last one). Every line ends in CRLF,
    every event is one `data:` line then a blank line; blank lines between events (heartbeats)
    are nothing."""
    bare = raw.replace(b"\r\n", b"")
    assert b"\n" not in bare and b"\r" not in bare, "every line ends in CRLF"
    end = raw.rfind(b"\r\n\r\n")
    whole, rest = (raw[: end + 4], raw[end + 4 :]) if end >= 0 else (b"", raw)
    events = []
    for block in whole.split(b"\r\n\r\n"):
        block = block.strip(b"\r\n")
        if block:
            assert block.startswith(b"data: ") and b"\r\n" not in block, block[:80]
            events.append(block[len(b"data: ") :].decode())
    return events, rest


def expected(model: str, request: dict[str, Any]):
    """The script the server follows for `request` (answered: past any turned-away try)."""
    parsed = parse_request("gemini", request, endpoint=Endpoint(model=model, stream=True))
    return build_script(parsed, now=0.0, nonce="0" * 24, tries=100)


def candidate(chunk: dict[str, Any]) -> dict[str, Any]:
    assert set(chunk) == {"candidates", "usageMetadata", "modelVersion", "responseId"}, chunk
    (first,) = chunk["candidates"]
    assert first["index"] == 0 and first["content"]["role"] == "model"
    return first


def parts(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [part for chunk in chunks for part in candidate(chunk)["content"]["parts"]]


def google_error(response: httpx.Response, status: int, name: str) -> dict[str, Any]:
    """The error object of Google's envelope, asserting the status and the envelope's shape."""
    assert response.status_code == status, response.text
    payload = response.json()
    assert set(payload) == {"error"}, payload
    error = payload["error"]
    assert {"code", "message", "status"} <= set(error) <= {"code", "message", "status", "details"}, error
    assert error["code"] == status and error["status"] == name
    return error


def scenario_request(name: str) -> dict[str, Any]:
    if name == "demo-tools":
        return body(TOOL_PROMPT, tools=[{"functionDeclarations": [WEATHER]}])
    if name == "demo-search":
        return body("How does photosynthesis work?")
    if SCENARIOS[name].turned_away is not None:
        # The shared server counts the tries of each model and prompt, whatever the API: a prompt
        # no other test sends, so the first try here is the first it counts.
        return body("How does binary search work? (turned away, then answered, over Gemini)")
    return body()


# ---------------------------------------------------------------------------- every scenario


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_scenario_streams_in_geminis_shape(demo_server, http, name: str):
    row = SCENARIOS[name]
    request = scenario_request(name)
    if row.turned_away is not None:
        for _ in range(row.turned_away.tries):
            refused = http.post(url(demo_server, name), json=request)
            status = row.turned_away.status
            error = google_error(refused, status, {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status])
            assert refused.headers["retry-after"] == str(row.turned_away.retry_after)
            assert {
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": f"{row.turned_away.retry_after}s",
            } in error["details"]
    script = expected(name, request)
    if name == "demo-stall":
        raw = stalled_body(demo_server, name, request)
    else:
        response = http.post(url(demo_server, name), json=request, headers={"x-goog-api-key": "any key"})
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-demo-script"] == script.label and response.headers["x-request-id"]
        raw = response.content
    events, rest = read_events(raw)
    assert rest == b"", "every event is whole: no terminator, nothing after the last event"
    assert "[DONE]" not in events

    broken = [event for event in events if not _parses(event)]
    assert len(broken) == (1 if name == "demo-malformed" else 0)
    payloads = [json.loads(event) for event in events if _parses(event)]
    error = payloads.pop() if payloads and "error" in payloads[-1] else None
    chunks = payloads
    assert chunks or script.ending == "error"
    assert {chunk["modelVersion"] for chunk in chunks} <= {name} and len({c["responseId"] for c in chunks}) <= 1

    said = parts(chunks)
    assert "".join(p["text"] for p in said if "text" in p and not p.get("thought")) == script.text
    assert "".join(p["text"] for p in said if p.get("thought")) == script.reasoning
    calls = [p["functionCall"] for p in said if "functionCall" in p]
    assert [(c["name"], c["args"]) for c in calls] == [(c.name, json.loads(c.arguments)) for c in script.tool_calls]
    assert len({c["id"] for c in calls}) == len(calls)

    finishes = [candidate(chunk).get("finishReason") for chunk in chunks]
    totals = [chunk["usageMetadata"]["totalTokenCount"] for chunk in chunks]
    assert totals == sorted(totals), "usage is cumulative"
    if script.ending == "error":
        assert error is not None and set(error) == {"error"} and not any(finishes)
        assert set(error["error"]) == {"code", "message", "status"}
        assert error["error"]["message"] == script.error.message
        assert (error["error"]["code"], error["error"]["status"]) in ((500, "INTERNAL"), (429, "RESOURCE_EXHAUSTED"))
        return
    assert error is None
    if script.ending in ("cutoff", "stall"):
        assert not any(finishes), "a cut-off stream ends without a finish reason"
        return
    assert finishes[:-1] == [None] * (len(chunks) - 1)
    assert finishes[-1] == {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}[script.ending]
    usage = chunks[-1]["usageMetadata"]
    thoughts = usage.get("thoughtsTokenCount", 0)
    assert usage["promptTokenCount"] + usage["candidatesTokenCount"] + thoughts == usage["totalTokenCount"]
    assert usage["totalTokenCount"] == script.usage.total_tokens and thoughts == script.usage.reasoning_tokens
    grounded = [candidate(chunk).get("groundingMetadata") for chunk in chunks]
    assert grounded[:-1] == [None] * (len(chunks) - 1)
    if script.sources:
        metadata = grounded[-1]
        assert metadata["webSearchQueries"] == [script.search_query]
        assert [c["web"] for c in metadata["groundingChunks"]] == [
            {"uri": s.url, "title": s.title} for s in script.sources
        ]
        assert metadata["groundingSupports"] and all(s["segment"]["text"] for s in metadata["groundingSupports"])


def _parses(event: str) -> bool:
    try:
        json.loads(event)
    except ValueError:
        return False
    return True


def stalled_body(server: DemoServer, name: str, request: dict[str, Any]) -> bytes:
    """The body of a stream that goes silent: what arrived before the silence, then the client leaves."""
    raw = b""
    with httpx.Client(timeout=httpx.Timeout(10, read=0.5)) as client:
        with client.stream("POST", url(server, name), json=request) as response:
            assert response.status_code == 200
            try:
                for piece in response.iter_raw():
                    raw += piece
            except httpx.ReadTimeout:
                pass
    assert raw
    return raw


# ---------------------------------------------------------------------------- the routes and the framing


def test_generate_content_answers_one_json_object(demo_server, http):
    request = body(demo={"seed": 7})
    answer = http.post(url(demo_server, "demo-reasoning", "generateContent"), json=request)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    script = expected("demo-reasoning", request)
    (first,) = answer.json()["candidates"]
    assert first["content"]["parts"] == [{"text": script.reasoning, "thought": True}, {"text": script.text}]
    assert first["finishReason"] == "STOP"
    assert answer.json()["usageMetadata"]["totalTokenCount"] == script.usage.total_tokens


def test_without_alt_sse_the_stream_is_one_json_array(demo_server, http):
    request = body()
    answer = http.post(url(demo_server, "demo", sse=False), json=request)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    chunks = json.loads(answer.content)
    assert isinstance(chunks, list) and len(chunks) > 2
    assert "".join(p.get("text", "") for p in parts(chunks) if not p.get("thought")) == expected("demo", request).text
    assert candidate(chunks[-1])["finishReason"] == "STOP"
    failed = json.loads(http.post(url(demo_server, "demo-error", sse=False), json=request).content)
    assert failed[-1]["error"]["status"] == "INTERNAL"


def test_a_heartbeat_is_a_blank_line_before_the_first_chunk(demo_server, http):
    request = body(demo={"first_token_delay": 0.35, "keepalive_interval": 0.1})
    raw = http.post(url(demo_server, "demo-slow"), json=request).content
    assert raw.startswith(b"\r\n") and raw.lstrip(b"\r\n").startswith(b"data: {")
    events, rest = read_events(raw)
    assert (
        rest == b""
        and "".join(p.get("text", "") for p in parts(map(json.loads, events)))
        == expected("demo-slow", request).reasoning + expected("demo-slow", request).text
    )


@pytest.mark.parametrize(
    "base",
    ["{root}/v1beta", "{root}/v1", "{root}/venym/v1", "{root}/engy/v1beta"],
)
def test_the_route_lives_under_each_version_and_flavor(demo_server, http, base: str):
    answer = http.post(url(demo_server, "demo", base=base.format(root=demo_server.url)) + "&key=any", json=body())
    assert answer.status_code == 200 and read_events(answer.content)[0]


def test_another_apis_path_is_not_under_v1beta(demo_server, http):
    answer = http.post(demo_server.url + "/v1beta/chat/completions", json={"model": "demo", "messages": []})
    assert answer.status_code == 404


def test_a_seeded_request_gives_the_same_bytes(demo_server, http):
    request = body(demo={"seed": "same"})
    first, second = (http.post(url(demo_server, "demo-search"), json=request).content for _ in range(2))
    assert first == second


def test_the_model_list_is_served_under_v1beta(demo_server, http):
    listed = http.get(demo_server.url + "/v1beta/models").json()["data"]
    assert [m["id"] for m in listed][: len(SCENARIOS)] == list(SCENARIOS)


# ---------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"contnts": []}, 'Unknown name "contnts": Cannot find field. (did you mean contents?)'),
        (
            {"generationConfig": {"temprature": 1}},
            "at 'generation_config': Cannot find field. (did you mean temperature?)",
        ),
        ({"generationConfig": {"thinkingConfig": {"includeThought": True}}}, "(did you mean includeThoughts?)"),
        (
            {"generationConfig": {"temperature": 5}},
            "generation_config.temperature: temperature must be between 0 and 2, not 5",
        ),
        ({"generationConfig": {"topP": 1.5}}, "top_p must be between 0 and 1"),
        ({"generationConfig": {"maxOutputTokens": 0}}, "max_output_tokens must be at least 1"),
        ({"generationConfig": {"temperature": "hot"}}, "Invalid value at 'generation_config.temperature' (TYPE_FLOAT)"),
        ({"generationConfig": {"responseLogprobs": True, "logprobs": 21}}, "logprobs must be between 0 and 20"),
        ({"generationConfig": {"logprobs": 2}}, "logprobs may only be set when response_logprobs is true"),
        ({"generationConfig": {"stopSequences": "end"}}, "stop_sequences must be a list"),
        ({"contents": [{"role": "assistant", "parts": [{"text": "hi"}]}]}, "Please use a valid role: user, model."),
        ({"contents": [{"role": "user", "parts": []}]}, "contents[0].parts: contents.parts must not be empty"),
        ({"contents": [{"role": "user", "parts": [{"thought": True}]}]}, "required oneof field 'data'"),
        ({"demo": {"tokns": 5}}, "(did you mean demo.tokens?)"),
        ({"tools": [{"functionDeclaration": [WEATHER]}]}, "(did you mean functionDeclarations?)"),
        ({"tools": [{"functionDeclarations": [{**WEATHER, "name": "get weather"}]}]}, "Invalid function name"),
        (
            {"tools": [{"functionDeclarations": [WEATHER, WEATHER]}]},
            "Duplicate function declaration found: get_weather",
        ),
        ({"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}, "Function calling config is set without"),
    ],
)
def test_a_bad_request_is_googles_400(demo_server, http, change: dict[str, Any], words: str):
    request = {**body(), **change}
    if "generationConfig" in change:
        request["generationConfig"] = change["generationConfig"]
    if "contnts" in change:
        del request["contents"]
    error = google_error(http.post(url(demo_server, "demo"), json=request), 400, "INVALID_ARGUMENT")
    assert words in error["message"], error["message"]
    assert error["details"][0]["@type"] == "type.googleapis.com/google.rpc.BadRequest"


def test_no_contents_is_refused(demo_server, http):
    error = google_error(http.post(url(demo_server, "demo"), json={"demo": FAST}), 400, "INVALID_ARGUMENT")
    assert error["message"] == "* GenerateContentRequest.contents: contents is not specified"


def test_an_unknown_model_is_googles_404_with_the_closest_name(demo_server, http):
    error = google_error(http.post(url(demo_server, "demo-reasonig"), json=body()), 404, "NOT_FOUND")
    assert error["message"].startswith("models/demo-reasonig is not found for API version v1beta")
    assert "Did you mean demo-reasoning?" in error["message"]
    assert http.post(url(demo_server, "gemini-2.5-flash"), json=body()).status_code == 200  # standing in for the preset


@pytest.mark.parametrize(
    ("status", "name"),
    [
        (400, "INVALID_ARGUMENT"),
        (403, "PERMISSION_DENIED"),
        (404, "NOT_FOUND"),
        (429, "RESOURCE_EXHAUSTED"),
        (500, "INTERNAL"),
        (503, "UNAVAILABLE"),
    ],
)
def test_the_scripted_http_errors_are_in_googles_envelope(demo_server, http, status: int, name: str):
    answer = http.post(url(demo_server, f"demo-http-{status}"), json=body())
    error = google_error(answer, status, name)
    retry = [d for d in error.get("details", []) if d["@type"].endswith("RetryInfo")]
    assert bool(retry) == (status in (429, 503)) and answer.headers.get("x-request-id")
    if retry:
        assert retry[0]["retryDelay"] == answer.headers["retry-after"] + "s"


def test_a_wrong_method_and_a_foreign_origin_are_refused_in_googles_envelope(demo_server, http):
    google_error(http.get(url(demo_server, "demo")), 405, "UNIMPLEMENTED")
    refused = http.post(url(demo_server, "demo"), json=body(), headers={"origin": "https://evil.example"})
    google_error(refused, 403, "PERMISSION_DENIED")


# ---------------------------------------------------------------------------- thoughts and log-probabilities


def test_thoughts_are_counted_but_not_sent_without_include_thoughts(demo_server, http):
    request = body(generationConfig={"thinkingConfig": {"includeThoughts": False}})
    events, _ = read_events(http.post(url(demo_server, "demo-reasoning"), json=request).content)
    chunks = [json.loads(event) for event in events]
    assert not [p for p in parts(chunks) if p.get("thought")]
    script = expected("demo-reasoning", request)
    assert chunks[-1]["usageMetadata"]["thoughtsTokenCount"] == len(script.reasoning_tokens) > 0
    off = body(generationConfig={"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 0}})
    events, _ = read_events(http.post(url(demo_server, "demo-reasoning"), json=off).content)
    last = json.loads(events[-1])
    assert "thoughtsTokenCount" not in last["usageMetadata"]


def test_log_probabilities_are_aligned_with_each_chunks_text(demo_server, http):
    request = body(generationConfig={"responseLogprobs": True, "logprobs": 3, "temperature": 0.7})
    events, _ = read_events(http.post(url(demo_server, "demo"), json=request).content)
    texts = 0
    for chunk in map(json.loads, events):
        first = candidate(chunk)
        text = "".join(p["text"] for p in first["content"]["parts"] if not p.get("thought"))
        if not text:
            continue
        texts += 1
        result = first["logprobsResult"]
        assert "".join(c["token"] for c in result["chosenCandidates"]) == text
        assert len(result["topCandidates"]) == len(result["chosenCandidates"])
        for chosen, top in zip(result["chosenCandidates"], result["topCandidates"], strict=True):
            assert chosen["logProbability"] <= 0 and len(top["candidates"]) == 3
            probabilities = [c["logProbability"] for c in top["candidates"]]
            assert probabilities == sorted(probabilities, reverse=True)
    assert texts > 3
    plain, _ = read_events(http.post(url(demo_server, "demo"), json=body()).content)
    assert not any("logprobsResult" in candidate(json.loads(event)) for event in plain)


# ---------------------------------------------------------------------------- the tool loop


def tool_turns(calls: list[dict[str, Any]], results: list[Any], *, ids: bool = True, role: str = "user") -> list:
    model = {
        "role": "model",
        "parts": [{"functionCall": call if ids else {k: v for k, v in call.items() if k != "id"}} for call in calls],
    }
    answers = []
    for call, result in zip(calls, results, strict=True):
        answer = {"name": call["name"], "response": result}
        if ids:
            answer["id"] = call["id"]
        answers.append({"functionResponse": answer})
    return [model, {"role": role, "parts": answers}]


def stream_parts(http: httpx.Client, server: DemoServer, request: dict[str, Any], model: str = "demo-tools") -> list:
    response = http.post(url(server, model), json=request)
    assert response.status_code == 200, response.text
    events, _ = read_events(response.content)
    return parts([json.loads(event) for event in events])


def test_the_tool_loop_in_geminis_shape(demo_server, http):
    tools = [{"functionDeclarations": [WEATHER]}, {"googleSearch": {}}]
    question = {"role": "user", "parts": [{"text": TOOL_PROMPT}]}
    said = stream_parts(http, demo_server, body(contents=[question], tools=tools))
    calls = [p["functionCall"] for p in said if "functionCall" in p]
    assert [c["args"]["city"] for c in calls] == ["Paris", "Tokyo"] and all(c["id"] for c in calls)
    results = [{"result": json.dumps({"temperature": t, "conditions": "sunny"})} for t in (18, 21)]
    for ids, role in ((True, "user"), (False, "function")):
        contents = [question, *tool_turns(calls, results, ids=ids, role=role)]
        answer = "".join(
            p.get("text", "") for p in stream_parts(http, demo_server, body(contents=contents, tools=tools))
        )
        assert "In Paris it is 18 °C and sunny." in answer and "In Tokyo it is 21 °C and sunny." in answer
    failed = [question, *tool_turns(calls[:1], [{"error": "unknown city"}])]
    answer = "".join(p.get("text", "") for p in stream_parts(http, demo_server, body(contents=failed, tools=tools)))
    assert "failed" in answer


def test_tool_choice_in_geminis_words(demo_server, http):
    two = [{"functionDeclarations": [WEATHER, {"name": "add", "description": "Add two numbers."}]}]
    named = {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["add"]}}
    said = stream_parts(http, demo_server, body(TOOL_PROMPT, tools=two, toolConfig=named))
    assert [p["functionCall"]["name"] for p in said if "functionCall" in p] == ["add"]
    none = {"functionCallingConfig": {"mode": "NONE"}}
    said = stream_parts(http, demo_server, body(TOOL_PROMPT, tools=two, toolConfig=none))
    assert not [p for p in said if "functionCall" in p]
    wrong = {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["nope"]}}
    google_error(
        http.post(url(demo_server, "demo-tools"), json=body(tools=two, toolConfig=wrong)), 400, "INVALID_ARGUMENT"
    )


def test_tool_turns_that_do_not_fit_are_refused(demo_server, http):
    question = {"role": "user", "parts": [{"text": TOOL_PROMPT}]}
    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}
    model, answers = tool_turns([call], [{"result": "18"}])
    cases = [
        (
            [question, answers],
            "Please ensure that function response turn comes immediately after a function call turn.",
        ),
        (
            [question, model],
            "Please ensure that the number of function response parts is equal to the number of function call parts",
        ),
        ([question, model, question], "Please ensure that the number of function response parts is equal"),
        (
            [question, model, tool_turns([{**call, "id": "call_2"}], [{"result": "18"}])[1]],
            "answers no call named 'get_weather' with id 'call_2'",
        ),
    ]
    for contents, words in cases:
        request = body(contents=contents, tools=[{"functionDeclarations": [WEATHER]}])
        for model_name in ("demo-tools", "demo"):  # checked on every model, as the providers check them
            error = google_error(http.post(url(demo_server, model_name), json=request), 400, "INVALID_ARGUMENT")
            assert words in error["message"], error["message"]
