"""Hardening against real peers and hostile servers.

Each case is a bad server's real behaviour, played by a small loopback server that writes raw
HTTP/1.1 by hand, as a bad server does: a body kept open after the terminator, a connection cut
after a placeholder usage, a 500 whose body is an event stream, a media type in capitals, an event
nested 100,000 deep, a JSON answer where a stream was asked for. Every case must end with the right
status, the provider's own words where there are any, and the partial answer kept. Pure functions
(`parse()`, `StreamState`) are tested without the server.
"""

from __future__ import annotations

import asyncio
import base64
import json
from urllib.parse import quote

import pytest
from support.hostile import (
    API_OF,
    DONE,
    FULL,
    HTML,
    JSON,
    PATH_OF,
    HostileServer,
    Reply,
    chat,
    event,
    hostile_fixture,
    message_start,
    text_block,
)

import streamwidgets as sw
from streamwidgets import arun, astream, make_request
from streamwidgets.core._errors import error_from_http
from streamwidgets.core._events import RefusalDelta, Terminator, TextDelta, ToolCallDelta, Usage, UsageReport
from streamwidgets.core._json import TooDeep, loads
from streamwidgets.core._state import StreamState, ToolCall

#: Whole answers where a stream was asked for (the server ignored `stream`).
WHOLE_MESSAGE = {
    "id": "msg_9",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [
        {"type": "thinking", "thinking": "Paris is asked for.", "signature": "sig"},
        {"type": "text", "text": "Let me check the weather."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 20, "output_tokens": 11},
}
WHOLE_RESPONSE = {
    "id": "resp_9",
    "object": "response",
    "status": "completed",
    "model": "gpt-x",
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look it up."}]},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "content": [
                {
                    "type": "output_text",
                    "text": "It is sunny.",
                    "annotations": [{"type": "url_citation", "url": "https://example.org/w", "title": "Weather"}],
                }
            ],
        },
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "log", "arguments": '{"ok":true}'},
    ],
    "usage": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12},
    "error": None,
}

#: The text of a Messages stream cut after a placeholder usage (`output_tokens: 1`).
CUT_PIECES = ("The stream is cut here, ", "after a placeholder usage ", "and four deltas ", "of text.")
DEEP_LIST = b"[" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000


def _replies() -> dict[str, Reply]:
    replies: dict[str, Reply] = {}

    def add(case: str, api: str, reply: Reply) -> None:
        replies[f"/{case}/v1/{PATH_OF[api]}"] = reply

    for name, body in FULL.items():
        add(f"hold-{name}", API_OF[name], Reply(tuple(body), end="hold"))
    vllm_error = event({"error": {"message": "The model is overloaded.", "type": "ServiceUnavailable", "code": 503}})
    add("hold-error", "chat", Reply((chat("Partial"), vllm_error, DONE), end="hold"))
    add("cut-messages", "messages", Reply((message_start(), *text_block(*CUT_PIECES)[:-1]), end="cut"))
    usage_last = chat(choices=[], usage={"prompt_tokens": 7, "completion_tokens": 9, "total_tokens": 16})
    add(
        "cut-after-usage",
        "chat",
        Reply((chat("Counted"), chat(" in full."), chat(finish="stop"), usage_last), end="cut"),
    )
    for i, spelling in enumerate(
        ("Text/Event-Stream; charset=utf-8", "TEXT/EVENT-STREAM", " text/event-stream ;charset=UTF-8")
    ):
        add(f"media-{i}", "chat", Reply(tuple(FULL["chat"]), headers=(("Content-Type", spelling),)))
    litellm = b'data: {"error": {"message": "litellm.APIConnectionError: upstream refused", "type": "None", "param": null, "code": "500"}}\n\n'
    add("litellm-500", "chat", Reply((litellm,), "500 Internal Server Error"))
    for api in ("chat", "responses", "messages"):
        deep = [b"data: " + DEEP_LIST + b"\n\n", b"data: " + DEEP_OBJECT + b"\n\n"]
        body = [*FULL[api][:2], *deep, *FULL[api][2:]]
        add(f"deep-{api}", api, Reply(tuple(body)))
    add("json-error-200", "chat", Reply((b'{"error": {"message": "Insufficient balance", "code": "balance"}}',)))
    add("whole-messages", "messages", Reply((json.dumps(WHOLE_MESSAGE).encode(),), headers=JSON))
    add("whole-responses", "responses", Reply((json.dumps(WHOLE_RESPONSE).encode(),), headers=JSON))
    echo = {"error": {"message": f"Incorrect API key provided: {ECHOED_KEY}.", "code": "invalid_api_key"}}
    quoted = f"key={quote(ECHOED_KEY, safe='')} and {json.dumps(ECHOED_KEY)}".encode()
    add("echo-401", "chat", Reply((json.dumps(echo).encode(),), "401 Unauthorized", JSON))
    add("echo-page", "chat", Reply((b"<html><title>Denied</title>" + quoted + b"</html>",), "403 Forbidden", HTML))
    moved = (("Location", "https://new-home.example.org/v1/chat/completions"), ("Content-Type", "text/html"))
    add("moved", "chat", Reply((b"<html>Moved</html>",), "308 Permanent Redirect", moved))
    return replies


#: A key that a hostile (or careless) provider quotes back in its error bodies.
ECHOED_KEY = "sk-echo/+SENTINEL=0123456789"


hostile = hostile_fixture(_replies)


def ask(server: HostileServer, case: str, api: str = "chat", **options):
    request = make_request("hi", base_url=server.url(case), api=api, model="m", api_key="k", **options)
    return asyncio.run(arun(request))


# --------------------------------------------------------------------------- 8. the terminator ends it at once


@pytest.mark.parametrize("name", sorted(FULL))
def test_terminator_ends_the_answer_at_once_though_the_body_stays_open(hostile, name):
    state = ask(hostile, f"hold-{name}", API_OF[name], stall_timeout=30)
    assert (state.status, state.text) == ("complete", "Hello there."), state.message
    # The server holds the body open for HOLD (20 s) and notes a client that leaves meanwhile:
    # had the client waited for the body's end, it would not have left.
    visit = hostile.visit(f"/hold-{name}/v1/{PATH_OF[API_OF[name]]}")
    assert visit.left.wait(5.0), "the client never closed the connection"


def test_an_error_before_done_still_wins_and_ends_at_once(hostile):
    state = ask(hostile, "hold-error", stall_timeout=30)
    assert state.status == "error" and state.text == "Partial"
    assert (state.error.message, state.error.code) == ("The model is overloaded.", 503)
    assert hostile.visit("/hold-error/v1/chat/completions").left.wait(5.0)  # left while the body was held


def test_astream_stops_at_the_terminator(hostile):
    async def collect():
        request = make_request("hi", base_url=hostile.url("hold-messages"), api="messages", model="m", stall_timeout=30)
        return [e async for e in astream(request)]

    events = asyncio.run(collect())
    assert type(events[-1]) is Terminator
    assert "".join(e.text for e in events if type(e) is TextDelta) == "Hello there."
    assert hostile.visit("/hold-messages/v1/messages").left.wait(5.0)  # left while the body was held


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_sdk_stream_is_complete_and_closed_at_its_terminator(hostile, mode):
    # The anthropic SDK reads on after message_stop until the body ends: the SDK source closes the SDK
    # stream at the terminator, so the task ends at once and the server sees the client leave.
    anthropic = pytest.importorskip("anthropic")

    base = hostile.url("hold-messages")[: -len("/v1")]
    kwargs = {"model": "m", "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hi"}]}

    async def main():
        if mode == "async":
            client = anthropic.AsyncAnthropic(base_url=base, api_key="k", max_retries=0)
            state = await asyncio.wait_for(arun(sw.sdk(await client.messages.create(**kwargs))), 5)
            await client.close()
        else:
            sync = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
            state = await asyncio.wait_for(arun(sw.sdk(sync.messages.create(**kwargs))), 5)
            sync.close()
        return state

    before = len(hostile.visits)
    state = asyncio.run(main())
    assert (state.status, state.text) == ("complete", "Hello there."), state.message
    # Closed while the server still held the body (20 s): not at the body's end.
    assert hostile.visits[before].left.wait(5.0), "the SDK stream was not closed at the terminator"


def test_a_replay_and_parse_ignore_what_follows_the_terminator():
    late = chat(" (after the end)") + event({"error": {"message": "an echo after the end"}})
    body = b"".join(FULL["chat"]) + late
    whole = sw.parse(body)
    assert (whole.status, whole.text, whole.error, whole.warnings) == ("complete", "Hello there.", None, [])
    bytewise = sw.parse([body[i : i + 1] for i in range(len(body))])
    assert (bytewise.status, bytewise.text) == ("complete", "Hello there.")
    replayed = asyncio.run(arun(sw.replay(body, speed=0, tokens_per_second=0)))
    assert (replayed.status, replayed.text) == ("complete", "Hello there.")


def test_no_event_counts_after_the_terminator():
    state = StreamState()
    state.extend([TextDelta("a"), Terminator(), TextDelta("b"), UsageReport(Usage(1, 1, 2))])
    assert (state.text, state.usage, state.terminated) == ("a", None, True)
    state.close()
    assert state.status == "complete"


# --------------------------------------------------------------------------- 5. the best token count


def test_a_cut_messages_stream_does_not_trust_the_placeholder_count(hostile):
    state = ask(hostile, "cut-messages", "messages")
    assert state.status == "incomplete" and state.text == "".join(CUT_PIECES)
    assert "closed before the answer was finished" in state.message
    assert state.usage.completion_tokens == 1, "usage stays as reported"
    estimate = state.estimated_completion_tokens
    assert estimate > 1 and state.completion_tokens == (estimate, True)
    assert "(1 tokens)" not in state.message
    assert f"The partial answer (about {estimate} tokens) is kept." in state.message


def test_a_count_reported_after_all_the_output_is_trusted_even_when_cut(hostile):
    state = ask(hostile, "cut-after-usage")
    assert state.status == "incomplete" and state.text == "Counted in full."
    assert state.completion_tokens == (9, False)
    assert "(9 tokens)" in state.message


def test_the_live_count_is_the_best_known():
    state = StreamState()
    state.apply(UsageReport(Usage(12, 1, 13)), 0.0)  # message_start's placeholder
    assert state.completion_tokens == (1, False)
    state.apply(TextDelta("x" * 400), 1.0)
    assert state.completion_tokens == (100, True), "output after the report makes it stale"
    state.apply(UsageReport(Usage(12, 90, 102)), 1.5)  # message_delta: the real count
    assert state.completion_tokens == (90, False)
    state.apply(Terminator(), 2.0)
    state.close(now=2.0)
    assert state.completion_tokens == (90, False) and state.usage == Usage(12, 90, 102)


# --------------------------------------------------------------------------- 6. not an event stream


@pytest.mark.parametrize(
    "body,looks_like",
    [
        (
            b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
            "an HTML page: 502 Bad Gateway",
        ),
        (b"Internal Server Error\n", "plain text: Internal Server Error"),
        (b'{"status": "ok"}', 'JSON but no answer: {"status": "ok"}'),
        (b"[1, 2, 3]", "JSON but no answer (list)"),
        (b"{not json", "JSON that could not be read"),
    ],
)
def test_parse_of_a_body_that_is_no_event_stream_says_so(body, looks_like):
    state = sw.parse(body)
    assert state.status == "incomplete"
    assert len(state.warnings) == 1
    assert state.warnings[0].startswith(f"this is not an event stream: it looks like {looks_like}")


def test_parse_reads_a_whole_json_answer_of_each_dialect():
    chat_answer = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Whole answer."}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    state = sw.parse(json.dumps(chat_answer, indent=2).encode())
    assert (state.status, state.text, state.finish_reason, state.usage.total_tokens) == (
        "complete",
        "Whole answer.",
        "stop",
        5,
    )
    assert state.warnings == [
        "this is not an event stream: it looks like a whole JSON answer (the server did not stream), read as one"
    ]

    message = sw.parse(json.dumps(WHOLE_MESSAGE).encode())
    assert (message.status, message.text, message.reasoning, message.finish) == (
        "complete",
        "Let me check the weather.",
        "Paris is asked for.",
        "tool_calls",
    )
    assert message.tool_calls == [ToolCall("toolu_1", "get_weather", '{"city": "Paris"}')]
    assert (message.usage.prompt_tokens, message.usage.completion_tokens) == (20, 11)

    response = sw.parse(json.dumps(WHOLE_RESPONSE).encode())
    assert (response.status, response.text, response.reasoning) == ("complete", "It is sunny.", "Look it up.")
    assert [(s.url, s.title) for s in response.citations] == [("https://example.org/w", "Weather")]
    assert response.tool_calls == [ToolCall("call_1", "log", '{"ok":true}')]
    assert response.usage.total_tokens == 12


def test_parse_of_a_json_error_body_gives_the_providers_words():
    state = sw.parse(b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}')
    assert state.status == "error" and (state.error.message, state.error.code) == ("Overloaded", "overloaded_error")
    assert state.warnings == ["this is not an event stream: it looks like a JSON error"]


def test_a_real_event_stream_gets_no_such_warning():
    for body in (b"".join(FULL["messages"]), b": keep-alive\n\n" + DONE, b'error: {"message": "legacy"}\n\n'):
        assert not any("not an event stream" in w for w in sw.parse(body).warnings)


def test_the_client_reads_a_whole_json_answer_of_responses_and_messages(hostile):
    message = ask(hostile, "whole-messages", "messages")
    assert (message.status, message.text, message.finish) == ("complete", "Let me check the weather.", "tool_calls")
    assert message.tool_calls[0].arguments == '{"city": "Paris"}'
    assert "application/json" in message.warnings[0]
    response = ask(hostile, "whole-responses", "responses")
    assert (response.status, response.text, len(response.citations)) == ("complete", "It is sunny.", 1)


def test_a_200_event_stream_whose_body_is_a_json_error(hostile):
    state = ask(hostile, "json-error-200")
    assert state.status == "error"
    assert (state.error.message, state.error.code) == ("Insufficient balance", "balance")


# --------------------------------------------------------------------------- 7. media types, and 7b. a 5xx event stream


@pytest.mark.parametrize("case", ["media-0", "media-1", "media-2"])
def test_the_event_stream_media_type_is_case_insensitive(hostile, case):
    state = ask(hostile, case)
    assert (state.status, state.text, state.warnings) == ("complete", "Hello there.", [])


def test_a_5xx_whose_body_is_an_event_stream_gives_the_error_event(hostile):
    state = ask(hostile, "litellm-500")
    assert state.status == "error" and state.error.http_status == 500
    assert state.error.message.startswith("The class gateway (LiteLLM) lost its connection to the model server")
    assert state.error.code == "500"
    assert "data:" not in state.message


def test_error_from_http_reads_an_event_stream_body_without_headers():
    # A replayed recording has no headers; the body alone tells.
    body = b'event: error\ndata: {"type": "error", "error": {"type": "api_error", "message": "Upstream failed"}}'
    error = error_from_http(502, body)
    assert (error.message, error.code, error.http_status) == ("Upstream failed", "api_error", 502)
    assert error_from_http(500, b"data: not json\n\n").message == "The provider had an internal error — data: not json"


# --------------------------------------------------------------------------- 11. nesting 100,000 deep


@pytest.mark.parametrize("deep", [DEEP_LIST, DEEP_OBJECT], ids=["list", "object"])
def test_json_nested_too_deep_is_malformed_not_an_exception(deep):
    with pytest.raises(TooDeep):
        loads(deep.decode())
    assert issubclass(TooDeep, ValueError)
    assert error_from_http(500, deep).message.startswith("The provider had an internal error")


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("deep", [DEEP_LIST, DEEP_OBJECT], ids=["list", "object"])
def test_parse_skips_one_deep_event_with_one_warning(api, deep):
    wire = FULL[api]
    state = sw.parse(b"".join([*wire[:2], b"data: " + deep + b"\n\n", *wire[2:]]), api=api)
    assert (state.status, state.text) == ("complete", "Hello there.")
    assert state.warnings == ["an event's data was nested too deeply to read and was skipped"]


def test_deep_tool_call_arguments_are_one_warning():
    # An object where the arguments string belongs, 1,000 deep: orjson reads it, but json.dumps
    # cannot write it back as the arguments string.
    nested = '{"a":' * 1000 + "1" + "}" * 1000
    call = '{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ' + nested + "}}"
    state = sw.parse(f'data: {{"choices": [{{"index": 0, "delta": {{"tool_calls": [{call}]}}}}]}}\n\n'.encode() + DONE)
    assert state.status == "complete" and [(c.id, c.name, c.arguments) for c in state.tool_calls] == [
        ("call_1", "f", "")
    ]
    assert state.warnings == ["a tool call's arguments were nested too deeply to read and were skipped"]


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_the_client_survives_deep_events(hostile, api):
    state = ask(hostile, f"deep-{api}", api)
    assert (state.status, state.text) == ("complete", "Hello there."), state.message
    assert state.warnings == ["an event's data was nested too deeply to read and was skipped"] * 2


# --------------------------------------------------------------------------- 12. linear accumulators


class Counted(str):
    """A fragment that counts the characters copied when something is concatenated onto it with
    `+`/`+=` (the quadratic pattern): Python asks the right operand's `__radd__` first."""

    copied = 0

    def __radd__(self, other: str) -> str:
        Counted.copied += len(other)
        return str.__add__(other, self)


@pytest.mark.timeout(120)
def test_two_hundred_thousand_one_byte_tool_deltas_are_linear():
    n = 200_000
    state = StreamState()
    Counted.copied = 0
    for i in range(n):
        state.apply(ToolCallDelta(0, "call_1" if i == 0 else None, "f" if i == 0 else None, Counted("x")), float(i))
    for _ in range(n):
        state.apply(RefusalDelta(Counted("r")))
    assert Counted.copied == 0, "the accumulated arguments or refusal were copied on every delta"
    (call,) = state.tool_calls
    assert (call.id, call.name, call.arguments_length) == ("call_1", "f", n)
    assert call.arguments == "x" * n and call.arguments == "x" * n  # read twice: joined once, kept
    assert state.refusal == "r" * n
    assert state.estimated_completion_tokens == (2 * n) // 4


def test_the_public_attributes_still_read_as_strings():
    state = StreamState()
    assert state.refusal is None
    state.extend([RefusalDelta(""), ToolCallDelta("k", "id", "f", '{"a"'), ToolCallDelta("k", arguments=": 1}")])
    assert state.refusal is None, "an empty refusal delta is no refusal"
    assert state.tool_calls == [ToolCall("id", "f", '{"a": 1}')] and repr(state.tool_calls[0]).startswith("ToolCall(")
    state.apply(RefusalDelta("I can't"))
    assert state.refusal == "I can't"
    state.tool_calls[0].arguments = "{}"
    assert (state.tool_calls[0].arguments, state.tool_calls[0].arguments_length) == ("{}", 2)


# --------------------------------------------------------------------------- 14. a key echoed back


@pytest.mark.parametrize("case", ["echo-401", "echo-page"])
def test_a_key_the_provider_echoes_back_is_redacted_where_the_bytes_come_in(hostile, case, tmp_path):
    request = make_request("hi", base_url=hostile.url(case), model="m", api_key=ECHOED_KEY)
    record = tmp_path / "rec.jsonl"
    state = asyncio.run(arun(request, record=record))
    assert state.status == "error"
    recorded = b"".join(base64.b64decode(json.loads(line).get("data", "")) for line in record.read_text().splitlines())
    forms = (ECHOED_KEY, quote(ECHOED_KEY, safe=""), json.dumps(ECHOED_KEY)[1:-1])
    for text in (
        state.message,
        str(state.error),
        repr(state),
        "\n".join(state.warnings),
        recorded.decode("utf-8", "replace"),
    ):
        for form in forms:
            assert form not in text, (form, text)
    assert "***" in (state.message if case == "echo-401" else recorded.decode())  # redacted, not dropped


# --------------------------------------------------------------------------- 13. a redirect


def test_a_redirect_is_reported_with_its_target_and_never_followed_with_the_key(hostile):
    state = ask(hostile, "moved")
    assert state.status == "error" and state.error is not None and state.error.http_status == 308
    assert "https://new-home.example.org/v1/chat/completions" in state.message and "base_url" in state.message
    assert [v.path for v in hostile.visits].count("/moved/v1/chat/completions") == 1  # one request, not followed
