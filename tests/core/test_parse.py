"""`parse()` on malformed input, on every kind of source, and the pipeline's side channels."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamwidgets as sw
from streamwidgets.core._events import ReasoningDelta, TextDelta
from streamwidgets.core._sse import ServerSentEvent
from streamwidgets.core.dialects import Normalizer, detect_dialect
from streamwidgets.core.dialects._common import ThinkSplitter


def chunk(content: str, **extra) -> bytes:
    obj = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
        **extra,
    }
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


GOOD = chunk("Hello") + chunk(" world")
DONE = b"data: [DONE]\n\n"


@pytest.mark.parametrize(
    "bad,warning",
    [
        (b"data: {not json\n\n", "not valid JSON"),
        (b"data: [1, 2, 3]\n\n", "not an object (list)"),
        (b"data: 42\n\n", "not an object (int)"),
        (b'data: "text"\n\n', "not an object (str)"),
        (b"data: null\n\n", "not an object (NoneType)"),
        (b'data: {"choices": ["oops"]}\n\n', "choice was not an object"),
    ],
)
def test_malformed_event_is_skipped_with_a_warning_and_nothing_lost(bad, warning):
    state = sw.parse(GOOD + bad + chunk("!") + DONE)
    assert state.text == "Hello world!"
    assert state.status == "complete"
    assert len(state.warnings) == 1 and warning in state.warnings[0]


def test_wrong_shapes_inside_an_object_never_raise():
    weird = [
        {"choices": {"0": 1}},
        {"choices": [{"delta": [1, 2]}]},
        {"choices": [{"delta": {"content": 5, "tool_calls": "x", "annotations": {}}}]},
        {"choices": [{"delta": {"tool_calls": [1, {"function": "f"}]}}]},
        {"usage": [1], "citations": "x", "search_results": 3},
        {"usage": {"prompt_tokens": "ten", "completion_tokens": True, "cost": {"total_cost": "1"}}},
        {"error": None, "object": 7},
        {"choices": [{"delta": {"content": [{"type": "thinking", "thinking": 3}, 4, {"type": "text"}]}}]},
    ]
    body = GOOD + b"".join(b"data: " + json.dumps(w).encode() + b"\n\n" for w in weird) + DONE
    state = sw.parse(body)
    assert state.text == "Hello world"
    assert state.status == "complete"


@pytest.mark.parametrize("dialect", ["responses", "messages"])
def test_unknown_event_types_are_ignored(dialect):
    body = (
        b'event: response.future_thing\ndata: {"type":"response.future_thing","x":1}\n\n'
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"ok"}\n\n'
        b'event: response.completed\ndata: {"type":"response.completed","response":{}}\n\n'
        if dialect == "responses"
        else b'event: message_future\ndata: {"type":"message_future"}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"new_delta"}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    state = sw.parse(body, api=dialect)
    assert (state.text, state.status, state.warnings) == ("ok", "complete", [])


def test_one_mebibyte_data_line():
    big = "x" * (1 << 20)
    state = sw.parse(chunk(big) + DONE)
    assert state.text == big and state.status == "complete"
    state = sw.parse(b"data: {" + b"y" * (1 << 20) + b"\n\n" + DONE, api="chat")
    assert state.status == "complete" and "not valid JSON" in state.warnings[0]
    assert len(state.warnings[0]) < 200  # the message quotes a preview, not the megabyte


def test_invalid_utf8_is_replaced_not_raised():
    body = (
        b'data: {"choices":[{"delta":{"content":"caf\xc3"}}]}\n\n'
        + b"data: "
        + b'{"choices":[{"delta":{"content":"\xff!"}}]}\n\n'
        + DONE
    )
    state = sw.parse(body)
    assert state.text == "caf\ufffd\ufffd!"
    assert state.status == "complete"


def test_random_bytes_never_raise():
    import random

    rng = random.Random(5)
    for _ in range(200):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(300)))
        sw.parse(blob)
        sw.parse(GOOD + blob + DONE)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([None, "chat", "responses", "messages"]))
def test_arbitrary_bytes_give_a_final_state(blob, dialect):
    state = sw.parse(blob, api=dialect)
    assert state.status in ("complete", "incomplete", "error")
    assert isinstance(state.message, str) and state.message


def test_sources_of_every_kind(tmp_path):
    path = tmp_path / "rec.sse"
    path.write_bytes(GOOD + DONE)
    for source in (GOOD + DONE, bytearray(GOOD + DONE), [GOOD, DONE], iter([GOOD, DONE]), str(path), path):
        state = sw.parse(source)
        assert (state.text, state.status) == ("Hello world", "complete")


def test_stream_cut_without_terminator_is_incomplete_and_says_why():
    state = sw.parse(GOOD + b'data: {"choices":[{"delta":{"content":" and')
    assert state.status == "incomplete"
    assert state.text == "Hello world"
    assert "ended before" in state.message and "kept" in state.message
    assert any("middle of an event" in w for w in state.warnings)


def test_done_without_blank_line_still_completes():
    assert sw.parse(GOOD + b"data: [DONE]\n").status == "complete"
    assert sw.parse(GOOD + b"data: [DONE]").status == "complete"


def test_heartbeats_counted_from_comments_and_pings():
    state = sw.parse(b": keep-alive\n\n: ping - 2025-01-01\n\n" + GOOD + DONE)
    assert state.heartbeats == 2
    msg = b'event: ping\ndata: {"type": "ping"}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n'
    assert sw.parse(msg).heartbeats == 1


def test_detection():
    assert detect_dialect(ServerSentEvent("message_start", "{}")) == "messages"
    assert detect_dialect(ServerSentEvent("response.created", "{}")) == "responses"
    assert detect_dialect(ServerSentEvent("message", '{"type":"response.output_text.delta"}')) == "responses"
    assert detect_dialect(ServerSentEvent("message", '{"type":"content_block_delta"}')) == "messages"
    assert detect_dialect(ServerSentEvent("message", '{"choices":[]}')) == "chat"
    assert detect_dialect(ServerSentEvent("message", "[DONE]")) == "chat"
    assert detect_dialect(ServerSentEvent("error", '{"error":{"message":"x"}}')) is None


def test_error_first_then_detected_dialect_keeps_the_error():
    body = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    state = sw.parse(body)
    assert state.status == "error"
    assert (state.error.message, state.error.code) == ("Overloaded", "overloaded_error")


def test_think_tags_split_across_deltas():
    splitter = ThinkSplitter()
    pieces = ["<thi", "nk>plan ", "it</th", "ink>Answer <b", "> done<"]
    events = [e for p in pieces for e in splitter.feed(p)] + splitter.flush()
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert (reasoning, text) == ("plan it", "Answer <b> done<")


def test_think_tags_by_provider_rule_and_override():
    body = chunk("<think>hmm</think>") + chunk("Yes [1].") + DONE
    assert sw.parse(body, provider="perplexity").reasoning == "hmm"
    assert sw.parse(body, provider="perplexity").text == "Yes [1]."
    assert sw.parse(body).text == "<think>hmm</think>Yes [1]."
    assert sw.parse(body, think_tags=True).reasoning == "hmm"


def test_unknown_provider_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown provider 'nope'"):
        sw.parse(b"", provider="nope")


def test_normalizer_is_reusable_incrementally():
    n = Normalizer()
    events = []
    for i in range(len(GOOD)):
        events += n.feed(GOOD[i : i + 1])
    events += n.feed(DONE) + n.close()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello world"
    assert n.dialect_name == "chat"


@pytest.mark.parametrize(
    ("dialect", "start"),
    [
        (
            "responses",
            'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Half an ans"}\n\n',
        ),
        (
            "messages",
            'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Half an ans"}}\n\n',
        ),
        ("chat", 'data: {"choices":[{"delta":{"content":"Half an ans"}}]}\n\n'),
    ],
)
def test_an_error_envelope_without_a_type_inside_any_stream_is_the_providers_error(dialect, start):
    """Proxies put `{"error": {...}}` with no `type` into a 200 Responses or Messages stream; the
    user must read the provider's words (as the openai SDK raises with them), not "connection ended"."""
    body = start + 'data: {"error": {"message": "Upstream model overloaded, try again", "code": "overloaded"}}\n\n'
    state = sw.parse(body.encode(), api=dialect)
    assert state.status == "error" and state.text == "Half an ans"
    assert state.error is not None and state.error.message == "Upstream model overloaded, try again"
    assert state.error.code == "overloaded"


def test_a_gateway_that_lost_its_model_server_mid_answer_says_so_in_plain_words():
    """LiteLLM's router, when the server it streams from dies, ends the stream with its own error
    event (the exception's class, then the HTTP library's words): the student reads what happened
    and what to do, the partial answer kept."""
    lost = {
        "error": {
            "message": "litellm.APIConnectionError: APIConnectionError: OpenAIException - Response payload is not "
            "completed: <TransferEncodingError: 400, message='Not enough data to satisfy transfer length header.'>",
            "type": None,
            "param": None,
            "code": "500",
        }
    }
    state = sw.parse(GOOD + b"data: " + json.dumps(lost).encode() + b"\n\n")
    assert state.status == "error" and state.text == "Hello world"
    assert state.message.startswith(
        "The provider reported an error: The class gateway (LiteLLM) lost its connection to the model server "
        "behind it (the server stopped or cannot be reached). Ask again"
    )
    assert "TransferEncodingError" not in state.message and state.message.endswith("is kept.")
