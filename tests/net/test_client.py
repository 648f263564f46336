"""The client against the embedded provider over real loopback sockets: no mocked httpx anywhere."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import httpx
import pytest
from support.hostile import JSON, HostileServer, Reply
from support.http import free_port

import streamwidgets as sw
from streamwidgets import Chat, arun, astream, make_request, run
from streamwidgets.core._errors import HTTPStatusError, IncompleteStreamError, StreamError
from streamwidgets.core._events import Terminator, TextDelta
from streamwidgets.net import Secret, Stream, as_source

SENTINEL = "sk-test-SENTINEL-0123456789abcdef0123"
APIS = ("chat", "responses", "messages")
FAST = {"demo": {"tokens_per_second": 0, "first_token_delay": 0}}


def req(server, model="demo", api="chat", prompt="What is streaming?", flavor=None, **kw):
    base = server.flavor_url(flavor) if flavor else server.base_url
    params = {**FAST, **kw}
    return make_request(prompt, model=model, api=api, base_url=base, api_key=SENTINEL, **params)


def go(coro):
    """Run a coroutine on a fresh loop and fail on any exception a task left unhandled."""
    problems: list[dict] = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: problems.append(context))
        return await coro

    result = asyncio.run(main())
    assert problems == [], problems
    return result


def open_connections(server) -> list:
    return [c for c in server.connections if c.closed_at is None]


def wait_all_closed(server, timeout=3.0) -> list:
    deadline = time.monotonic() + timeout
    while open_connections(server) and time.monotonic() < deadline:
        time.sleep(0.01)
    return open_connections(server)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("flavor", [None, "venym", "engy", "everyais", "vultr"])
def test_every_api_and_flavor_completes(demo_server, api, flavor):
    state = go(arun(req(demo_server, api=api, flavor=flavor, model="demo-reasoning")))
    assert state.status == "complete", state.message
    assert state.text
    # Engy's page: "On /v1/responses, reasoning is not returned."
    assert bool(state.reasoning) == (not (flavor == "engy" and api == "responses"))
    assert state.usage is not None and state.usage.completion_tokens
    assert state.time_to_first_token is not None
    assert state.warnings == []


def test_search_sources_and_tool_calls(demo_server):
    for api in APIS:
        state = go(arun(req(demo_server, api=api, model="demo-search")))
        assert state.status == "complete" and len(state.citations) >= 3, (api, state.citations)
        assert all(s.url.startswith("https://") for s in state.citations)
        schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        spec = {"name": "get_weather", "description": "The weather in a city."}
        declared = {
            "chat": [{"type": "function", "function": {**spec, "parameters": schema}}],
            "responses": [{"type": "function", **spec, "parameters": schema}],
            "messages": [{**spec, "input_schema": schema}],
        }[api]
        tools = go(
            arun(req(demo_server, api=api, model="demo-tools", prompt="Weather in Paris and Tokyo?", tools=declared))
        )
        assert tools.status == "complete" and tools.finish == "tool_calls"
        assert len(tools.tool_calls) == 2, tools.tool_calls
        for call in tools.tool_calls:
            assert call.name and call.id
            json.loads(call.arguments)


# ------------------------------------------------------------------ fault matrix

FAULTS = {
    # scenario: (status, partial text expected, words expected in the message)
    "demo-error": ("error", True, "error"),
    "demo-error-early": ("error", False, "error"),
    "demo-cutoff": ("incomplete", True, "before the answer was finished"),
    "demo-malformed": ("complete", True, "Complete"),
    "demo-length": ("complete", True, "token limit"),
    "demo-http-401": ("error", False, "HTTP 401"),
    "demo-http-402": ("error", False, "HTTP 402"),
    "demo-http-404": ("error", False, "HTTP 404"),
    "demo-http-429": ("error", False, "retry after"),
    "demo-http-500": ("error", False, "HTTP 500"),
    "demo-http-503": ("error", False, "HTTP 503"),
}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("scenario", sorted(FAULTS))
def test_fault_matrix(demo_server, api, scenario):
    status, partial, words = FAULTS[scenario]
    before = len(demo_server.connections)
    limit = {"max_tokens": 40} if scenario == "demo-length" else {}
    state = go(arun(req(demo_server, api=api, model=scenario, **limit)))
    assert state.status == status, (state.status, state.message)
    assert bool(state.text) == partial, state.text
    assert words.lower() in state.message.lower(), state.message
    if scenario == "demo-malformed":
        assert state.warnings and "not valid JSON" in state.warnings[0]
    if scenario.startswith("demo-http"):
        assert state.error.http_status == int(scenario[-3:])
        assert state.error.message and state.error.code is not None
    if scenario == "demo-http-429":
        assert state.error.retry_after is not None
    assert SENTINEL not in state.message and SENTINEL not in repr(state)
    assert wait_all_closed(demo_server) == [], f"left open: {open_connections(demo_server)}"
    assert len(demo_server.connections) >= before


@pytest.mark.parametrize("api", APIS)
def test_stall_ends_incomplete_with_the_reason_and_closes(demo_server, api):
    request = req(demo_server, api=api, model="demo-stall")
    request.stall_timeout = 0.5
    state = go(arun(request))
    assert state.status == "incomplete"
    assert state.text, "the partial answer is kept"
    assert "stalled" in state.message and "0.5 s" in state.message
    record = demo_server.wait_for_disconnect(timeout=2.0, after=len(demo_server.connections) - 1)
    assert record is not None and record.outcome == "client_disconnected"


def test_raise_on_error_gives_typed_exceptions_with_state(demo_server):
    with pytest.raises(HTTPStatusError) as info:
        go(arun(req(demo_server, model="demo-http-429"), raise_on_error=True))
    assert info.value.status_code == 429 and info.value.state.error.retry_after is not None
    with pytest.raises(StreamError) as info:
        go(arun(req(demo_server, model="demo-error"), raise_on_error=True))
    assert info.value.state.text
    with pytest.raises(IncompleteStreamError):
        go(arun(req(demo_server, model="demo-cutoff"), raise_on_error=True))
    assert go(arun(req(demo_server), raise_on_error=True)).status == "complete"


def test_connection_refused_is_a_readable_error():
    url = f"http://127.0.0.1:{free_port()}/v1"
    request = make_request("hi", base_url=url, model="demo")  # nothing listens there
    state = go(arun(request))
    assert state.status == "error"
    # what the network did, with the fix, and never "the provider reported"
    assert "Nothing answers on 127.0.0.1:" in state.message and "the server is running" in state.message
    assert "provider reported" not in state.message


# ------------------------------------------------------------------ cancel


@pytest.mark.parametrize("api", APIS)
def test_cancel_closes_the_connection_and_keeps_the_partial_answer(demo_server, api):
    async def main():
        request = req(demo_server, api=api, model="demo-long", demo={"tokens_per_second": 200, "first_token_delay": 0})
        stream = Stream(as_source(request))
        state = stream.state
        before = len(demo_server.connections)
        task = asyncio.get_running_loop().create_task(stream.run())
        while state.text_length < 50:
            await asyncio.sleep(0.005)
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        record = await asyncio.to_thread(demo_server.wait_for_disconnect, 2.0, after=before)
        return state, record, cancelled_at

    state, record, cancelled_at = go(main())
    assert state.status == "cancelled" and state.text_length >= 50
    assert "Cancelled by you" in state.message and "kept" in state.message
    assert record is not None and record.outcome == "client_disconnected"
    assert record.closed_at_mono >= cancelled_at  # closed by the cancel; benchmarks/bench_cancel.py measures how fast


def test_cancel_while_waiting_for_the_first_token(demo_server):
    async def main():
        request = req(demo_server, model="demo-slow", demo={"first_token_delay": 5})
        stream = Stream(as_source(request))
        state = stream.state
        before = len(demo_server.connections)
        task = asyncio.get_running_loop().create_task(stream.run())
        # Cancel once the server has the request and is holding back its first token (5 s away).
        while len(demo_server.connections) == before and not task.done():
            await asyncio.sleep(0.005)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return state, await asyncio.to_thread(demo_server.wait_for_disconnect, 2.0, after=before)

    state, record = go(main())
    assert state.status == "cancelled" and state.text == ""
    assert record is not None and record.outcome == "client_disconnected"


def test_no_task_left_behind(demo_server):
    async def main():
        await arun(req(demo_server))
        task = asyncio.get_running_loop().create_task(arun(req(demo_server, model="demo-long")))
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0.05)
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert go(main()) == []
    assert wait_all_closed(demo_server) == []


# ------------------------------------------------------------------ entry points


def test_astream_yields_normalized_events(demo_server):
    async def main():
        async with astream(req(demo_server)) as events:
            return [e async for e in events], events.state

    events, state = go(main())
    assert any(isinstance(e, TextDelta) for e in events)
    assert any(isinstance(e, Terminator) for e in events)
    assert state.status == "complete" and state.text == "".join(e.text for e in events if isinstance(e, TextDelta))


def test_leaving_astream_early_closes_the_connection(demo_server):
    async def main():
        before = len(demo_server.connections)
        async with astream(req(demo_server, model="demo-long", demo={"tokens_per_second": 200})) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    break
        # Read before anything else runs: the stream is closed by the `async with`, in this task,
        # not later by the garbage collector's finalizer in another one.
        status = events.state.status
        return status, events.state, await asyncio.to_thread(demo_server.wait_for_disconnect, 2.0, after=before)

    status, state, record = go(main())
    assert status == "cancelled" and state.text
    assert record is not None and record.outcome == "client_disconnected"


def test_run_is_blocking_and_refuses_inside_a_loop(demo_server):
    state = run(req(demo_server))
    assert state.status == "complete"

    async def inside():
        with pytest.raises(RuntimeError, match="await arun"):
            run(req(demo_server))

    go(inside())


def test_demo_provider_starts_the_embedded_server_by_itself():
    state = run("What is binary search?", demo={"tokens_per_second": 0, "first_token_delay": 0})
    assert state.status == "complete" and state.provider == "demo"
    assert "search" in state.text.lower()


def test_offline_fallback_names_itself(monkeypatch):
    monkeypatch.delenv("VENYM_API_KEY", raising=False)
    request = make_request("hi", provider="venym")
    assert request.offline_note and "VENYM_API_KEY" in request.offline_note
    assert request.base_url is None and request.embedded == "venym"  # nothing started yet
    assert "/venym/v1" in request.resolved().base_url
    monkeypatch.delenv("EVERYAIS_MODEL", raising=False)
    monkeypatch.delenv("EVERYAIS_API_KEY", raising=False)
    assert make_request("hi", provider="everyais").model == "demo"  # no model needed offline
    monkeypatch.setenv("VENYM_API_KEY", SENTINEL)
    real = make_request("hi", provider="venym")
    assert real.offline_note is None and real.base_url == "https://venym.io/v1"


def test_continue_after_a_cutoff(demo_server):
    first = req(demo_server, model="demo-cutoff", prompt="Explain binary search")
    state = go(arun(first))
    assert state.status == "incomplete" and state.text
    again = first.continued(state.text)
    assert again.carried == state.text and again.part == 2
    assert again.messages[-2] == {"role": "assistant", "content": state.text}
    more = go(arun(first, parts=2))  # the same demo-cutoff model: the fault happened, the rest arrives
    assert more.status == "complete" and len(more.parts) == 2 and more.parts[0].status == "incomplete"
    whole = go(arun(req(demo_server, model="demo", prompt="Explain binary search")))
    assert more.text == whole.text  # exactly the rest of the answer the partial was the start of
    assert more.text == more.parts[0].text + more.part_text
    twice = again.continued(more.text)
    assert len(twice.messages) == len(again.messages)  # replaces, not stacks, the continuation turns
    for api in ("messages", "responses"):
        first = req(demo_server, api=api, model="demo-cutoff", prompt="Explain binary search")
        rest = go(arun(first, parts=2))
        assert rest.status == "complete" and rest.text.strip() == whole.text.strip(), api


def test_chat_keeps_the_conversation(demo_server):
    chat = Chat(system="Be brief.", model="demo", base_url=demo_server.base_url, **FAST)
    first = go(chat.send("What is a list in Python?"))
    second = go(chat.send("And a tuple?"))
    assert first.status == second.status == "complete"
    assert [m["role"] for m in chat.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert chat.messages[2]["content"] == first.text


def test_request_body_per_api(demo_server):
    chat = req(demo_server, api="chat", max_tokens=50, temperature=0.2).body()
    assert chat["stream"] is True and chat["stream_options"] == {"include_usage": True}
    assert chat["max_tokens"] == 50 and chat["temperature"] == 0.2
    responses = req(demo_server, api="responses", max_tokens=50).body()
    assert responses["input"][0]["role"] == "user" and responses["max_output_tokens"] == 50
    messages = make_request(
        [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}], provider="anthropic", api_key=SENTINEL
    )
    body, headers = messages.body(), messages.headers()
    assert body["system"] == "S" and body["messages"] == [{"role": "user", "content": "U"}]
    assert body["max_tokens"] > 0
    assert headers["x-api-key"] == SENTINEL and "Authorization" not in headers
    assert make_request("x", provider="mistral", api_key="k").body().get("stream_options") is None


# ------------------------------------------------------------------ secrets


def test_sentinel_key_never_leaks(demo_server, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    request = req(demo_server, model="demo-http-401")
    texts = [repr(request), str(request), f"{request}", repr(request.api_key), str(request.api_key)]
    state = go(arun(request, record=tmp_path / "rec.jsonl"))
    texts += [repr(state), state.message, str(state.error), json.dumps(state.__dict__, default=str)]
    try:
        go(arun(request, raise_on_error=True))
    except StreamError as exc:
        texts += [str(exc), repr(exc)]
    texts += [caplog.text, (tmp_path / "rec.jsonl").read_text()]
    for text in texts:
        assert SENTINEL not in text
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(Secret(SENTINEL))


def test_key_is_redacted_from_client_side_errors():
    request = make_request("hi", base_url=f"http://127.0.0.1:9/{SENTINEL}/v1", api_key=SENTINEL, model="m")
    state = go(arun(request))
    assert state.status == "error" and SENTINEL not in state.message


# ------------------------------------------------------------------ recordings and SDK streams


def test_record_then_parse_and_replay_give_the_same_state(demo_server, tmp_path):
    path = tmp_path / "answer.jsonl"
    live = go(arun(req(demo_server, model="demo-search"), record=path))
    parsed = sw.parse(path)
    replayed = go(arun(sw.replay(path, speed=0)))
    from streamwidgets.core._recordings import recording_meta

    meta = recording_meta(path)
    # base_url= with no provider= is a custom server, whatever answers there
    assert (meta["provider"], meta["api"], meta["model"]) == ("custom", "chat", "demo-search")
    assert recording_meta(b"data: x\n\n") == {}
    for other in (parsed, replayed):
        assert (other.text, other.citations, other.usage, other.status) == (
            live.text,
            live.citations,
            live.usage,
            "complete",
        )


def test_openai_sdk_streams_go_through_the_same_state(demo_server):
    openai = pytest.importorskip("openai")

    async def main():
        client = openai.AsyncOpenAI(base_url=demo_server.base_url, api_key=SENTINEL)
        stream = await client.chat.completions.create(
            model="demo-search",
            messages=[{"role": "user", "content": "SSE?"}],
            stream=True,
            stream_options={"include_usage": True},
            extra_body=FAST,
        )
        state = await arun(sw.sdk(stream))
        rstream = await client.responses.create(model="demo-reasoning", input="SSE?", stream=True, extra_body=FAST)
        rstate = await arun(sw.sdk(rstream))
        await client.close()
        return state, rstate

    state, rstate = go(main())
    ours = go(arun(req(demo_server, model="demo-search", prompt="SSE?")))
    assert (state.status, state.text, state.citations, state.usage) == (
        "complete",
        ours.text,
        ours.citations,
        ours.usage,
    )
    assert rstate.status == "complete" and rstate.reasoning

    sync = openai.OpenAI(base_url=demo_server.base_url, api_key=SENTINEL)
    stream = sync.chat.completions.create(
        model="demo",
        messages=[{"role": "user", "content": "SSE?"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_body=FAST,
    )
    synced = go(arun(sw.sdk(stream)))
    sync.close()
    plain = go(arun(req(demo_server, model="demo", prompt="SSE?")))
    assert (synced.status, synced.text, synced.usage) == ("complete", plain.text, plain.usage)


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("mode", ["sync", "async", "manager"])
def test_openai_stream_helpers_give_the_same_state_without_warnings(demo_server, api, mode):
    # `client.chat.completions.stream()` wraps each chunk in its own events and `responses.stream()`
    # parses into models that pydantic warns about when dumped: neither may show.
    import warnings

    openai = pytest.importorskip("openai")
    model = "demo-reasoning" if api == "responses" else "demo-search"
    kwargs = {"model": model, "extra_body": FAST}
    if api == "chat":
        kwargs.update(messages=[{"role": "user", "content": "SSE?"}], stream_options={"include_usage": True})
    else:
        kwargs.update(input="SSE?")

    async def main():
        if mode == "sync":
            client = openai.OpenAI(base_url=demo_server.base_url, api_key=SENTINEL, max_retries=0)
            helper = client.chat.completions if api == "chat" else client.responses
            with helper.stream(**kwargs) as stream:
                state = await arun(sw.sdk(stream))
            client.close()
            return state
        client = openai.AsyncOpenAI(base_url=demo_server.base_url, api_key=SENTINEL, max_retries=0)
        helper = client.chat.completions if api == "chat" else client.responses
        if mode == "manager":  # the helper's manager itself, not entered: the source enters it
            state = await arun(sw.sdk(helper.stream(**kwargs)))
        else:
            async with helper.stream(**kwargs) as stream:
                state = await arun(sw.sdk(stream))
        await client.close()
        return state

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        state = go(main())
    ours = go(arun(req(demo_server, api=api, model=model, prompt="SSE?")))
    assert state.status == "complete", state.message
    assert (state.text, state.reasoning, state.usage, state.finish) == (ours.text, ours.reasoning, ours.usage, "stop")
    assert state.text and state.usage is not None and state.warnings == []


def test_anthropic_sdk_stream_goes_through_the_same_state(demo_server):
    anthropic = pytest.importorskip("anthropic")

    async def main():
        client = anthropic.AsyncAnthropic(base_url=demo_server.url, api_key=SENTINEL)
        stream = await client.messages.create(
            model="demo-reasoning",
            max_tokens=1024,
            stream=True,
            extra_body=FAST,
            messages=[{"role": "user", "content": "SSE?"}],
        )
        state = await arun(sw.sdk(stream))
        await client.close()
        return state

    state = go(main())
    ours = go(arun(req(demo_server, api="messages", model="demo-reasoning", prompt="SSE?")))
    assert (state.status, state.text, state.reasoning, state.usage) == (
        "complete",
        ours.text,
        ours.reasoning,
        ours.usage,
    )


def test_sync_sdk_stream_cancel_closes_it(demo_server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=demo_server.base_url, api_key=SENTINEL)

    async def main():
        before = len(demo_server.connections)
        stream = client.chat.completions.create(
            model="demo-long",
            messages=[{"role": "user", "content": "x"}],
            stream=True,
            extra_body={"demo": {"tokens_per_second": 100}},
        )
        running = Stream(sw.sdk(stream))
        state = running.state
        task = asyncio.get_running_loop().create_task(running.run())
        while state.text_length < 20:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return state, await asyncio.to_thread(demo_server.wait_for_disconnect, 2.0, after=before)

    state, record = go(main())
    client.close()
    assert state.status == "cancelled" and state.text
    assert record is not None and record.outcome == "client_disconnected"


@pytest.mark.parametrize("kind", ["openai", "openai-helper", "anthropic"])
def test_a_sync_sdk_stream_cancelled_in_a_stall_closes_its_connection(demo_server, kind):
    # The worker thread is blocked in a read that no byte will end: closing the socket from the
    # loop does not wake it, so the stream must be shut down at its socket.
    pace = {"demo": {"tokens_per_second": 400, "first_token_delay": 0}}  # the stall starts at once
    before = len(demo_server.connections)
    if kind == "anthropic":
        anthropic = pytest.importorskip("anthropic")
        client = anthropic.Anthropic(base_url=demo_server.url, api_key=SENTINEL, max_retries=0)
        stream = client.messages.create(
            model="demo-stall", max_tokens=64, stream=True, extra_body=pace, messages=[{"role": "user", "content": "x"}]
        )
    else:
        openai = pytest.importorskip("openai")
        client = openai.OpenAI(base_url=demo_server.base_url, api_key=SENTINEL, max_retries=0)
        kwargs = {"model": "demo-stall", "messages": [{"role": "user", "content": "x"}], "extra_body": pace}
        if kind == "openai":
            stream = client.chat.completions.create(stream=True, **kwargs)
        else:
            stream = client.chat.completions.stream(**kwargs).__enter__()
    state = run(sw.sdk(stream), deadline=0.5)
    record = demo_server.wait_for_disconnect(timeout=2.0, after=before)
    client.close()
    assert state.status == "incomplete" and state.text and "deadline" in state.message
    assert record is not None and record.outcome == "client_disconnected"


def test_http_error_body_shapes():
    from streamwidgets.core._errors import error_from_http

    anthropic = error_from_http(529, b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')
    assert (anthropic.message, anthropic.code, anthropic.http_status) == ("Overloaded", "overloaded_error", 529)
    openrouter = error_from_http(402, b'{"error":{"code":402,"message":"Insufficient credits"},"user_id":"u"}')
    assert (openrouter.message, openrouter.code) == ("Insufficient credits", 402)
    ollama = error_from_http(404, b'{"error":{"message":"model not found","type":"not_found_error","code":null}}')
    assert ollama.code == "not_found_error"
    html = error_from_http(502, b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>")
    assert html.message == "Bad gateway \u2014 502 Bad Gateway"
    empty = error_from_http(503, b"", {"retry-after": "7"})
    assert empty.message.startswith("The provider is unavailable") and empty.retry_after == 7.0


#: A whole chat completion, sent by a server that ignores `stream=true`.
WHOLE_ANSWER = {
    "id": "x",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Whole answer."}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}


def test_not_a_stream_json_answer_is_still_read():
    # A server that ignores stream=true answers with one JSON completion.
    whole = Reply((json.dumps(WHOLE_ANSWER).encode(),), headers=JSON)
    with HostileServer({"/whole/v1/chat/completions": whole}) as server:
        state = run(make_request("hi", base_url=server.url("whole"), model="m"))
    assert (state.status, state.text, state.usage.total_tokens, state.finish_reason) == (
        "complete",
        "Whole answer.",
        5,
        "stop",
    )


def test_httpx_is_really_used_over_loopback(demo_server):
    # Sanity: the embedded provider is a real HTTP server, reachable by a plain httpx client.
    r = httpx.get(demo_server.url + "/v1/models")
    assert r.status_code == 200 and any(m["id"] == "demo" for m in r.json()["data"])


# ------------------------------------------------------------------ proxies and keys on the way in


def test_loopback_never_goes_through_a_proxy(demo_server, monkeypatch):
    """University networks set HTTP_PROXY / ALL_PROXY; the embedded demo and local servers
    (Ollama, llama.cpp, vLLM on 127.0.0.1) must not go to the proxy, nor their keys with it."""
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there: a proxied request fails
    for base in (demo_server.base_url, demo_server.base_url.replace("127.0.0.1", "localhost")):
        state = go(arun(make_request("hi", model="demo", base_url=base, api_key=SENTINEL, **FAST)))
        assert state.status == "complete", (base, state.message)
    from streamwidgets.net._transport import is_loopback

    assert is_loopback("::1") and is_loopback("127.0.0.2") and is_loopback("LOCALHOST".lower())
    assert not is_loopback("api.openai.com") and not is_loopback("10.0.0.5")


def test_a_key_is_stripped_on_the_way_in_and_a_chat_keeps_it_only_as_a_secret(demo_server):
    request = make_request("hi", base_url=demo_server.base_url, model="demo", api_key=SENTINEL + "\n")
    assert request.headers()["Authorization"] == "Bearer " + SENTINEL  # a key read from a file
    chat = Chat(model="demo", base_url=demo_server.base_url, api_key=SENTINEL, **FAST)
    for text in (repr(chat), repr(chat.options), str(vars(chat))):
        assert SENTINEL not in text
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(chat)
    assert chat.request("hi").headers()["Authorization"] == "Bearer " + SENTINEL
    assert go(chat.send("What is a list?")).status == "complete"


def test_network_failures_name_the_fix_and_are_not_called_the_providers_words():
    local = go(arun(make_request("hi", provider="ollama", base_url=None, offline=False, model="m", **FAST)))
    assert local.status == "error" and local.error is not None and local.error.code == "connect_error"
    assert "is Ollama running?" in local.message and "offline=True" in local.message
    assert "provider reported" not in local.message
    closed = go(arun(make_request("hi", base_url="http://127.0.0.1:9/v1", model="m")))
    assert "Nothing answers on 127.0.0.1:9" in closed.message and "provider reported" not in closed.message

    import socket

    import httpx

    from streamwidgets.core._errors import connect_failed
    from streamwidgets.net._transport import where

    try:
        try:
            raise socket.gaierror(-3, "Temporary failure in name resolution")
        except OSError as lookup:
            raise httpx.ConnectError("[Errno -3] Temporary failure in name resolution") from lookup
    except httpx.ConnectError as offline:
        said = connect_failed(offline, where(make_request("hi", provider="openai", api_key="k", offline=False)))
    assert said.startswith("Can't reach api.openai.com") and "seems offline" in said and "offline=True" in said


def test_the_scripted_demo_says_which_lesson_it_played(monkeypatch):
    """Offline, the demo reads no question: the state names the lesson it chose (from the server's
    X-Demo-Script header), and the words shown for it say the demo matched words, not meaning."""
    from streamwidgets.core._formatting import script_note

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fast = {"tokens_per_second": 0, "first_token_delay": 0}
    state = run("What is binary search?", provider="openai", demo=fast)
    assert state.status == "complete" and state.script == "binary search"
    note = script_note(state.script)
    assert note and "binary search" in note and "does not understand it" in note and ".[local]" in note
    assert any("offline" in w.lower() for w in state.warnings)  # headless: the stand-in says so
    odd = run("Qwxz plorb?", provider="openai", demo=fast)
    assert odd.script == "none" and "no lesson" in (script_note(odd.script) or "")
