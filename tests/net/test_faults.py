"""The fault matrix: every numbered item of the hardening issue, in each API where it applies.

One hostile loopback server (`support/hostile.py`) plays every case; each case is a row: what
the server writes, the options of the request, and what must come out — the status, words of
the message, and the text kept. Items that are no server reply (the SDK helpers, `parse()`, keys
handed in, proxies) have their own parametrized tests below, over the same APIs.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import pickle
import zlib
from dataclasses import dataclass, field
from typing import Any, Optional

import pytest
from support.hostile import (
    DONE,
    JSON,
    PATH_OF,
    HostileServer,
    Reply,
    chat,
    event,
    hostile_fixture,
    message_start,
    typed,
)

import streamwidgets as sw
from streamwidgets import Chat, arun, make_request
from streamwidgets.core._state import StreamState

APIS = ("chat", "responses", "messages")
KEY = "sk-faults-SENTINEL-0123456789"
#: What each API's full answer says, in pieces.
PIECES = ("Hello", " there.")


# --------------------------------------------------------------------------- streams of each API


def start(api: str) -> list[bytes]:
    if api == "responses":
        item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
        part = {"type": "output_text", "text": "", "annotations": []}
        return [
            typed("response.created", response={"id": "resp_1", "model": "m", "status": "in_progress"}),
            typed("response.output_item.added", output_index=0, item=item),
            typed("response.content_part.added", item_id="msg_1", output_index=0, content_index=0, part=part),
        ]
    if api == "messages":
        return [message_start(), typed("content_block_start", index=0, content_block={"type": "text", "text": ""})]
    return []


def deltas(api: str, *pieces: str) -> list[bytes]:
    if api == "responses":
        return [
            typed("response.output_text.delta", item_id="msg_1", output_index=0, content_index=0, delta=p)
            for p in pieces
        ]
    if api == "messages":
        return [typed("content_block_delta", index=0, delta={"type": "text_delta", "text": p}) for p in pieces]
    return [chat(p) for p in pieces]


def finish(api: str) -> list[bytes]:
    if api == "responses":
        usage = {"input_tokens": 5, "output_tokens": 3}
        text = "".join(PIECES)
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [part]}
        where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
        return [
            typed("response.output_text.done", **where, text=text),
            typed("response.content_part.done", **where, part=part),
            typed("response.output_item.done", output_index=0, item=item),
            typed("response.completed", response={"id": "resp_1", "status": "completed", "usage": usage}),
        ]
    if api == "messages":
        return [
            typed("content_block_stop", index=0),
            typed("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 3}),
            typed("message_stop"),
        ]
    return [chat(finish="stop"), DONE]


def stream(api: str, *pieces: str, middle: tuple[bytes, ...] = ()) -> tuple[bytes, ...]:
    """A whole stream of `api` saying `pieces`, with `middle` (bad events) after the first delta."""
    pieces = pieces or PIECES
    body = deltas(api, *pieces)
    return (*start(api), *body[:1], *middle, *body[1:], *finish(api))


def tool_stream(api: str, n: int) -> tuple[bytes, ...]:
    """A tool call whose arguments arrive one byte per event, `n` events."""
    if api == "responses":
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}
        head = [typed("response.output_item.added", output_index=0, item=item)]
        body = [typed("response.function_call_arguments.delta", item_id="fc_1", delta="x") for _ in range(n)]
    elif api == "messages":
        block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
        head = [message_start(), typed("content_block_start", index=0, content_block=block)]
        delta = {"type": "input_json_delta", "partial_json": "x"}
        body = [typed("content_block_delta", index=0, delta=delta) for _ in range(n)]
    else:
        first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
        head = [chat(choices=[{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}])]
        one = {"index": 0, "function": {"arguments": "x"}}
        body = [chat(choices=[{"index": 0, "delta": {"tool_calls": [one]}, "finish_reason": None}]) for _ in range(n)]
    return (*head, b"".join(body), *finish(api))


def error_event(api: str) -> bytes:
    """An error event inside a stream, as each API's servers send one."""
    if api == "responses":
        return typed("error", code="server_error", message="Upstream overloaded")
    if api == "messages":
        return typed("error", error={"type": "overloaded_error", "message": "Upstream overloaded"})
    return event({"error": {"message": "Upstream overloaded", "code": "server_error"}})


UNTYPED_ERROR = event({"error": {"message": "Upstream overloaded", "code": "server_error"}})

WHOLE = {
    "chat": {
        "id": "c9",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    },
    "responses": {
        "id": "resp_9",
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": [
            {
                "type": "message",
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello there."}],
            }
        ],
        "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
    },
    "messages": {
        "id": "msg_9",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "Hello there."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 2},
    },
}


def gz(*pieces: bytes) -> tuple[bytes, ...]:
    """A gzip body, sent in a few pieces (a chunk boundary falls inside the compressed bytes)."""
    data = gzip.compress(b"".join(pieces))
    third = max(1, len(data) // 3)
    return (data[:third], data[third : 2 * third], data[2 * third :])


def deflate(*pieces: bytes) -> tuple[bytes, ...]:
    data = zlib.compress(b"".join(pieces))
    return (data[:10], data[10:])


GZIP = (("Content-Type", "text/event-stream"), ("Content-Encoding", "gzip"))
DEFLATE = (("Content-Type", "text/event-stream"), ("Content-Encoding", "deflate"))
JSON_GZIP = (("Content-Type", "application/json"), ("Content-Encoding", "gzip"))
AUTH_HEADER = {"chat": "authorization", "responses": "authorization", "messages": "x-api-key"}


# --------------------------------------------------------------------------- the matrix


@dataclass(frozen=True)
class Case:
    """One row: issue item, what the server writes for an API, and what must come out."""

    item: str
    name: str
    reply: Any  # Reply, or a function of the API giving one
    status: str
    says: tuple[str, ...] = ()
    text: Optional[str] = "Hello there."
    options: dict[str, Any] = field(default_factory=dict)
    apis: tuple[str, ...] = APIS
    check: Any = None  # an extra check of the state, given (state, api)

    def reply_for(self, api: str) -> Reply:
        return self.reply(api) if callable(self.reply) else self.reply


def _warned(*words: str) -> Any:
    def check(state: StreamState, api: str) -> None:
        assert any(all(w in warning for w in words) for warning in state.warnings), state.warnings

    return check


def _few_warnings(state: StreamState, api: str) -> None:
    assert len(state.warnings) == 11, state.warnings  # 10 kept, and the line that counts the rest
    assert "490 more warnings" in state.warnings[-1] and "max_warnings" in state.warnings[-1]


def _args(n: int) -> Any:
    def check(state: StreamState, api: str) -> None:
        (call,) = state.tool_calls
        assert (call.name, call.arguments) == ("f", "x" * n)

    return check


def _key_gone(state: StreamState, api: str) -> None:
    assert state.error is not None and state.error.http_status == 401
    for text in (state.message, str(state.error), repr(state), *state.warnings):
        assert KEY not in text
    assert "***" in state.message


LONG = "y" * 1000

CASES = [
    Case("1", "whole-json", lambda api: Reply((json.dumps(WHOLE[api]).encode(),), headers=JSON), "complete",
         check=_warned("application/json")),
    Case("2", "untyped-error", lambda api: Reply((*start(api), *deltas(api, "Partial"), UNTYPED_ERROR)),
         "error", ("Upstream overloaded",), "Partial"),
    Case("2", "typed-error", lambda api: Reply((*start(api), *deltas(api, "Partial"), error_event(api))),
         "error", ("Upstream overloaded",), "Partial"),
    Case("3", "5xx-event-stream", lambda api: Reply((error_event(api),), "500 Internal Server Error"), "error",
         ("Upstream overloaded", "HTTP 500"), ""),
    Case("5", "cut", lambda api: Reply((*start(api), *deltas(api, *PIECES)), end="cut"), "incomplete",
         ("closed before the answer was finished", "about 3 tokens", "is kept")),
    Case("7", "media-type", lambda api: Reply(stream(api), headers=(("Content-Type", "Text/Event-Stream; Charset=UTF-8"),)),
         "complete"),
    Case("8", "hold-after-terminator", lambda api: Reply(stream(api), end="hold"), "complete",
         options={"stall_timeout": 30}),
    Case("9", "gzip-stream", lambda api: Reply(gz(*stream(api)), headers=GZIP), "complete"),
    Case("9", "deflate-stream", lambda api: Reply(deflate(*stream(api)), headers=DEFLATE), "complete"),
    Case("9", "gzip-error-body",
         Reply(gz(b'{"error": {"message": "Invalid key given", "code": "invalid_api_key"}}'), "401 Unauthorized", JSON_GZIP),
         "error", ("Invalid key given", "HTTP 401"), ""),
    Case("9", "gzip-bomb", lambda api: Reply(gz(b": " + b"\0" * (40 << 20) + b"\n\n", *stream(api)), headers=GZIP),
         "complete", options={"max_event_chars": 1 << 20}, check=_warned("discarded", "max_event_chars")),
    Case("9", "broken-gzip", lambda api: Reply((b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\xff" * 20,), headers=GZIP),
         "incomplete", ("could not be read", "gzip bytes are broken"), ""),
    Case("9", "cut-gzip", lambda api: Reply(gz(*stream(api))[:2], headers=GZIP), "incomplete",
         ("could not be read", "end before"), ""),
    Case("10", "long-line", lambda api: Reply(stream(api, middle=(b"data: " + b"z" * 300_000, b"z" * 300_000 + b"\n\n"))),
         "complete", options={"max_event_chars": 100_000}, check=_warned("more than 100,000 characters", "discarded")),
    Case("10", "long-comment", lambda api: Reply(stream(api, middle=(b": " + b"k" * 300_000, b"k" * 300_000 + b"\n\n"))),
         "complete", options={"max_event_chars": 100_000}, check=_warned("discarded")),
    Case("10", "long-answer", lambda api: Reply((*start(api), *deltas(api, *[LONG] * 50), *finish(api))),
         "incomplete", ("10,000 characters", "max_answer_chars", "is kept"), LONG * 10,
         {"max_answer_chars": 10_000}),
    Case("10", "many-bad-events", lambda api: Reply(stream(api, middle=(b"data: {not json\n\n" * 500,))),
         "complete", options={"max_warnings": 10}, check=_few_warnings),
    Case("10", "trickle", lambda api: Reply((*start(api), *deltas(api, "Hello"), *[b" "] * 100), pace=0.1, end="hold"),
         "incomplete", ("deadline of 1 s", "deadline="), "Hello", {"deadline": 1.0, "stall_timeout": 30}),
    Case("10", "endless-keep-alives", lambda api: Reply((*start(api), *deltas(api, "Hello")), loop=(b": keep-alive\n\n",),
         pace=0.05, end="hold"), "incomplete", ("deadline of 1 s",), "Hello", {"deadline": 1.0, "stall_timeout": 30}),
    Case("11", "deep-json", lambda api: Reply(stream(api, middle=(b"data: " + b"[" * 100_000 + b"\n\n",))), "complete",
         check=_warned("nested too deeply")),
    Case("12", "one-byte-tool-deltas", lambda api: Reply(tool_stream(api, 20_000)), "complete", text="", check=_args(20_000)),
    Case("13", "redirect", Reply((b"<html>Moved</html>",), "307 Temporary Redirect",
         (("Location", "https://elsewhere.example.org/v1"), ("Content-Type", "text/html"))), "error",
         ("https://elsewhere.example.org/v1", "base_url", "HTTP 307"), ""),
    Case("13", "503-stalled-body", Reply((b'{"error": {"message": "Service overl',), "503 Service Unavailable", JSON,
         end="hold"), "error", ("HTTP 503", "Service overl", "the rest of its body never arrived"), "",
         {"stall_timeout": 1.0, "retries": 0}, check=lambda state, api: "stalled" not in state.message),
    Case("14", "key-echoed", lambda api: Reply(status="401 Unauthorized", headers=JSON, echo=AUTH_HEADER[api]), "error",
         ("Bad key:",), "", check=_key_gone),
]  # fmt: skip


def _replies() -> dict[str, Reply]:
    return {f"/{c.name}/{api}/v1/{PATH_OF[api]}": c.reply_for(api) for c in CASES for api in c.apis}


hostile = hostile_fixture(_replies)


def ask(server: HostileServer, case: str, api: str, *, key: str = KEY, **options: Any) -> StreamState:
    base = server.url(f"{case}/{api}")
    request = make_request("hi", base_url=base, api=api, model="m", api_key=key, **options)
    return asyncio.run(arun(request))


@pytest.mark.parametrize(
    "case,api", [pytest.param(c, api, id=f"{c.item}-{c.name}-{api}") for c in CASES for api in c.apis]
)
def test_fault(hostile, case: Case, api: str):
    state = ask(hostile, case.name, api, **case.options)
    assert state.status == case.status, state.message
    for words in case.says:
        assert words in state.message, (words, state.message)
    if case.text is not None:
        assert state.text == case.text, state.text[:200]
    if case.check is not None:
        case.check(state, api)
    if case.reply_for(api).end == "hold":  # the server holds the body open for 20 s...
        # ...and notes a client that leaves meanwhile: the terminator, the deadline or the stall
        # timeout ended the answer, not the end of the body.
        assert hostile.visit(f"/{case.name}/{api}/v1/{PATH_OF[api]}").left.wait(5.0), (
            "the client waited for the body's end"
        )


def test_the_client_leaves_at_the_terminator_and_at_a_limit(hostile):
    # 8 and 10: the connection is closed at once, not when the server ends the body.
    for case, options in (("hold-after-terminator", {}), ("trickle", {"deadline": 0.5})):
        for api in APIS:
            ask(hostile, case, api, stall_timeout=30, **options)
            assert hostile.visit(f"/{case}/{api}/v1/{PATH_OF[api]}").left.wait(2.0), (case, api)


# --------------------------------------------------------------------------- 4. the SDKs' stream helpers


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_sdk_stream_helpers_complete_and_close_at_the_terminator(hostile, api, mode):
    import warnings

    path = f"/hold-after-terminator/{api}/v1/{PATH_OF[api]}"
    base = hostile.url(f"hold-after-terminator/{api}")
    messages = [{"role": "user", "content": "hi"}]

    def helper(sync: bool) -> Any:
        if api == "messages":
            anthropic = pytest.importorskip("anthropic")
            client = (anthropic.Anthropic if sync else anthropic.AsyncAnthropic)(
                base_url=base[: -len("/v1")], api_key=KEY, max_retries=0
            )
            return client, client.messages.stream(model="m", max_tokens=64, messages=messages)
        openai = pytest.importorskip("openai")
        client = (openai.OpenAI if sync else openai.AsyncOpenAI)(base_url=base, api_key=KEY, max_retries=0)
        if api == "chat":
            return client, client.chat.completions.stream(model="m", messages=messages)
        return client, client.responses.stream(model="m", input="hi")

    async def main() -> StreamState:
        client, manager = helper(mode == "sync")
        state = await asyncio.wait_for(sw.arun(sw.sdk(manager)), 15)  # a body read to its end would take 20 s
        closing = client.close()
        if asyncio.iscoroutine(closing):
            await closing
        return state

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        state = asyncio.run(main())
    assert (state.status, state.text) == ("complete", "Hello there."), state.message
    # The server holds the body for 20 s and notes a client that leaves meanwhile: the SDK did
    # not read on until the body's end.
    assert hostile.visit(path).left.wait(5.0), "the SDK read on while the server held the body"


# --------------------------------------------------------------------------- 6. parse() of what is no event stream


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    "body,looks_like",
    [(b"<html><title>Bad gateway</title></html>", "an HTML page"), (b"Internal error\n", "plain text")],
)
def test_parse_says_when_a_body_is_no_event_stream(api, body, looks_like):
    state = sw.parse(body, api=api)
    assert state.status == "incomplete" and state.text == ""
    assert state.warnings[0].startswith(f"this is not an event stream: it looks like {looks_like}")


@pytest.mark.parametrize("api", APIS)
def test_parse_keeps_its_limits_and_never_raises(api):
    # 9-11 in parse(): an event far too long is discarded as it comes, the answer is kept.
    body = [*stream(api, middle=(b"data: " + b"z" * (17 << 20), b"z\n\n"))]
    state = sw.parse(body, api=api)
    assert (state.status, state.text) == ("complete", "Hello there.")
    assert any("discarded" in w for w in state.warnings)


# --------------------------------------------------------------------------- 15-17. keys handed in


@pytest.mark.parametrize("api", APIS)
def test_a_key_with_its_newline_is_sent_stripped_and_redacted_in_both_forms(hostile, api):
    state = ask(hostile, "key-echoed", api, key=KEY + "\n")
    sent = hostile.visit(f"/key-echoed/{api}/v1/{PATH_OF[api]}").headers[AUTH_HEADER[api]]
    assert sent.endswith(KEY) and "\n" not in sent
    assert state.status == "error" and state.error.http_status == 401
    _key_gone(state, api)


@pytest.mark.parametrize("api", APIS)
def test_chat_options_keep_the_key_only_as_a_secret(api):
    chat_ = Chat(api_key=KEY, api=api, base_url="http://127.0.0.1:9/v1", model="m")
    for text in (repr(chat_), repr(chat_.options), repr(vars(chat_))):
        assert KEY not in text
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(chat_)
    headers = {k.lower(): v for k, v in chat_.request("hi").headers().items()}
    assert headers[AUTH_HEADER[api]].endswith(KEY)


# --------------------------------------------------------------------------- 18. loopback never goes through a proxy


@pytest.mark.parametrize("api", APIS)
def test_loopback_bypasses_the_proxies_of_the_environment(hostile, api, monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there: a proxy used would fail
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    state = ask(hostile, "media-type", api)
    assert (state.status, state.text) == ("complete", "Hello there."), state.message


# --------------------------------------------------------------------------- 9-10 without a server


def test_warnings_keep_the_first_ones_and_count_the_rest():
    from streamwidgets.core._events import Problem

    state = StreamState()
    state.warnings.limit = 3
    for i in range(1_000):
        state.apply(Problem(f"bad event {i}"))
    assert state.warnings[:3] == ["bad event 0", "bad event 1", "bad event 2"]
    assert len(state.warnings) == 4 and state.warnings[-1].startswith("… and 997 more warnings")
    again = pickle.loads(pickle.dumps(state))
    assert again.warnings == state.warnings and again.warnings.dropped == 997


def test_a_clipped_answer_keeps_the_text_up_to_the_limit_and_is_never_complete():
    from streamwidgets.core._events import ReasoningDelta, Terminator, TextDelta

    state = StreamState()
    state.extend([ReasoningDelta("r" * 10), TextDelta("a" * 60), TextDelta("b" * 60), Terminator()])
    state.clip(100)
    assert (state.text, state.reasoning, state.output_length) == ("a" * 60 + "b" * 30, "r" * 10, 100)
    state.close(reason="cut")
    assert state.status == "incomplete"


@pytest.mark.parametrize(
    "options,words",
    [
        ({"max_answer_chars": 0}, "answer_chars limit must be a positive whole number"),
        ({"max_event_chars": 1.5}, "event_chars limit"),
        ({"max_warnings": True}, "warnings limit"),
        ({"deadline": 0}, "deadline must be a number of seconds above 0"),
    ],
)
def test_a_limit_out_of_range_is_refused_in_words(options, words):
    with pytest.raises(ValueError, match=words):
        make_request("hi", base_url="http://127.0.0.1:9/v1", model="m", **options)


def test_the_default_limits_are_documented_and_the_limits_stay_out_of_the_body():
    request = make_request("hi", base_url="http://127.0.0.1:9/v1", model="m", deadline=5, max_answer_chars=10)
    assert (request.limits.deadline, request.limits.max_answer_chars) == (5, 10)
    assert not {"deadline", "max_answer_chars"} & set(request.body())
    import streamwidgets.core._limits as limits

    defaults = limits.DEFAULT_LIMITS
    assert (defaults.max_event_chars, defaults.max_answer_chars, defaults.max_warnings, defaults.deadline) == (
        16 * 1024 * 1024,
        4_000_000,
        100,
        None,
    )


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate", "gzip, gzip", "x-gzip"])
def test_body_decoder_undoes_each_encoding_however_the_bytes_are_cut(encoding):
    from streamwidgets.net._decode import BodyDecoder

    data = b"".join(stream("chat")) * 50
    if encoding == "raw-deflate":
        packed, header = zlib.compress(data)[2:-4], "deflate"
    elif encoding == "deflate":
        packed, header = zlib.compress(data), encoding
    elif encoding == "gzip, gzip":
        packed, header = gzip.compress(gzip.compress(data)), encoding
    else:
        packed, header = gzip.compress(data), encoding
    decoder = BodyDecoder(header)
    out = b"".join(p for i in range(0, len(packed), 5) for p in decoder.feed(packed[i : i + 5]))
    assert out + b"".join(decoder.flush()) == data


def test_a_decompression_bomb_inflates_in_bounded_pieces():
    from streamwidgets.net._decode import PIECE, BodyDecoder

    bomb = gzip.compress(b"\0" * (64 << 20))  # 64 MB from about 64 kB
    sizes = [len(p) for p in BodyDecoder("gzip").feed(bomb)]
    assert sum(sizes) == 64 << 20 and max(sizes) <= PIECE


def test_an_encoding_that_is_not_asked_for_is_named():
    from streamwidgets.net._decode import BodyDecoder, UndecodableBody

    with pytest.raises(UndecodableBody, match="compressed as br, which streamwidgets does not decode"):
        BodyDecoder("br")
    assert BodyDecoder("identity").identity and BodyDecoder(None).identity
