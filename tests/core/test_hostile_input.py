"""Input Python itself chokes on, and everything a stream makes grow: sans-IO, through `parse()`,
the `Normalizer`, the `SSEDecoder` and the `StreamState`.

What a broken provider sent (each seen live): a lone surrogate in a JSON string, a `retry:` of
5,000 digits, a 4,000-digit cost, NaN; tool-call arguments past the answer limit, a flood of tool
calls or citations, events that never tell their dialect. Each must end with the text kept, one
warning that says what happened, and memory and work bounded.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

import streamwidgets as sw
from streamwidgets.core import _formatting as formatting
from streamwidgets.core import _json
from streamwidgets.core._events import Citation, CitationsFound, Problem, ReasoningDelta, TextDelta, ToolCallDelta
from streamwidgets.core._feed import Feed
from streamwidgets.core._limits import DEFAULT_LIMITS, FIELD_CHARS, Limits
from streamwidgets.core._sse import ServerSentEvent, SSEDecoder
from streamwidgets.core._state import PIECES, StreamState, ToolCall
from streamwidgets.core.dialects import MessagesDialect, Normalizer, ResponsesDialect
from streamwidgets.core.dialects._common import KEYS
from streamwidgets.core.dialects._normalizer import WAITING_EVENTS, WAITING_LIMIT

DONE = b"data: [DONE]\n\n"
SURROGATE = "surrogate"
NUMBER = "number Python cannot use"


def chunk(delta: dict, **extra) -> bytes:
    obj = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    obj.update(choices=[{"index": 0, "delta": delta, "finish_reason": None}], **extra)
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def raw(data: bytes) -> bytes:
    return b"data: " + data + b"\n\n"


@pytest.fixture(params=["orjson", "stdlib"])
def json_reader(request, monkeypatch):
    """Every JSON case with orjson and without it: the results never depend on it."""
    if request.param == "stdlib":
        monkeypatch.setattr(_json, "orjson", None)
    elif _json.orjson is None:
        pytest.fail("orjson is part of the test setup (streamwidgets[fast])")
    return request.param


def said(state: StreamState, words: str) -> int:
    return sum(words in warning for warning in state.warnings)


# --------------------------------------------------------------------------- lone surrogates


def test_a_lone_surrogate_becomes_a_replacement_character_with_one_warning(json_reader):
    body = (
        chunk({"content": "a"})
        + raw(b'{"choices":[{"index":0,"delta":{"content":"b\\ud800c"}}]}')
        + raw(b'{"choices":[{"index":0,"delta":{"content":"\\udfff d"}}]}')
        + DONE
    )
    state = sw.parse(body)
    assert (state.status, state.text) == ("complete", "ab\ufffdc\ufffd d")
    state.text.encode("utf-8")
    assert said(state, SURROGATE) == 1, state.warnings


def test_a_surrogate_pair_is_one_character_and_no_warning(json_reader):
    state = sw.parse(raw(b'{"choices":[{"index":0,"delta":{"content":"\\ud83c\\udf0a"}}]}') + DONE)
    assert (state.text, state.warnings) == ("\U0001f30a", [])


def test_lone_surrogates_are_mended_in_keys_tool_calls_errors_and_every_dialect(json_reader):
    call = raw(
        b'{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c\\ud801",'
        b'"function":{"name":"f\\udc00","arguments":"{\\"\\ud800\\": 1}"}}]}}]}'
    )
    state = sw.parse(call + raw(b'{"error":{"message":"bad \\udbff"}}') + DONE)
    (tool,) = state.tool_calls
    assert (tool.id, tool.name, tool.arguments) == ("c\ufffd", "f\ufffd", '{"\ufffd": 1}')
    assert state.error is not None and state.error.message == "bad \ufffd"
    assert said(state, SURROGATE) == 1
    assert _json.loads('{"k\\ud800": ["\\udc00", {"\\udfff": 1}]}') == {"k\ufffd": ["\ufffd", {"\ufffd": 1}]}
    messages = (
        b"event: content_block_delta\ndata: "
        + json.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}})
        .encode()
        .replace(b'"x"', b'"x\\ud800"')
        + b"\n\n"
    )
    assert sw.parse(messages).text == "x\ufffd"
    responses = b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"y\\ud800"}\n\n'
    state = sw.parse(responses)
    assert state.text == "y\ufffd" and said(state, SURROGATE) == 1


def test_a_whole_json_answer_with_a_lone_surrogate_says_so_before_its_terminator(json_reader):
    body = b'{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"content":"z\\ud800"},"finish_reason":"stop"}]}'
    state = sw.parse(body)
    assert (state.status, state.text) == ("complete", "z\ufffd")
    assert said(state, SURROGATE) == 1


# --------------------------------------------------------------------------- numbers no float holds


@pytest.mark.parametrize(
    "number",
    [b"1" * 5000, b"-" + b"9" * 4000, b"7" * 309, b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-2.5E+400"],
)
def test_a_number_no_float_holds_is_ignored_and_the_event_kept(json_reader, number):
    usage = raw(
        b'{"choices":[{"index":0,"delta":{"content":" kept"}}],"usage":{"completion_tokens":2,"cost":' + number + b"}}"
    )
    state = sw.parse(chunk({"content": "Text"}) + usage + DONE)
    assert (state.status, state.text) == ("complete", "Text kept")
    assert state.usage is not None and (state.usage.cost, state.usage.completion_tokens) == (None, 2)
    assert said(state, NUMBER) == 1, state.warnings


def test_numbers_a_float_holds_are_read_as_they_are(json_reader):
    assert _json.loads("[" + "9" * 308 + ", 1e308, -1e-400, 0.5, 12]") == [float("9" * 308), 1e308, -0.0, 0.5, 12]
    notes: set[str] = set()
    assert _json.loads('{"a": [1e999, {"b": NaN}], "c": "NaN and Infinity are words"}', notes) == {
        "a": [None, {"b": None}],
        "c": "NaN and Infinity are words",
    }
    assert notes == {_json.NUMBER_IGNORED}


def test_malformed_json_is_still_malformed(json_reader):
    with pytest.raises(ValueError):
        _json.loads('{"a": NaN')
    with pytest.raises(_json.TooDeep):
        _json.loads("[" * 100_000)


def test_many_mended_events_say_it_once_per_kind(json_reader):
    bad = raw(b'{"choices":[{"index":0,"delta":{"content":"\\ud800"}}],"usage":{"cost":NaN}}')
    state = sw.parse(bad * 500 + DONE)
    assert state.text == "\ufffd" * 500
    assert (said(state, SURROGATE), said(state, NUMBER), len(state.warnings)) == (1, 1, 2)


# --------------------------------------------------------------------------- retry:


def test_a_retry_of_five_thousand_digits_is_ignored_and_said_once():
    decoder = SSEDecoder()
    events = decoder.feed(b"retry: 1500\n\nretry: " + b"9" * 5000 + b"\ndata: x\n\n")
    assert [e.data for e in events] == ["x"] and events[0].retry is None and decoder.retry == 1500
    body = chunk({"content": "a"}) + (b"retry: " + b"1" * 5000 + b"\n\n") * 3 + chunk({"content": "b"}) + DONE
    state = sw.parse(body)
    assert (state.status, state.text) == ("complete", "ab")
    assert said(state, "retry: line of 5,000 digits") == 1 and len(state.warnings) == 1


def test_a_ten_digit_retry_is_a_time():
    decoder = SSEDecoder()
    decoder.feed(b"retry: 9999999999\n\n")
    assert decoder.retry == 9_999_999_999


# --------------------------------------------------------------------------- showing numbers


@pytest.mark.parametrize("value", [int("1" * 4000), float("nan"), float("inf"), -float("inf")])
def test_a_cost_no_float_holds_is_shown_as_a_question_mark(value):
    assert formatting.cost(value) == "$?"


def test_a_count_past_the_digit_limit_is_shown_as_a_question_mark():
    assert formatting.count(int("9" * 4000)).startswith("9,999,999,")  # within Python's limit: its digits
    assert formatting.count(10**5000) == "?"


@pytest.mark.parametrize("bad", [-5, -1.0, 1e308, 10**13])
def test_a_negative_or_impossible_token_count_is_unreported_in_every_dialect(bad):
    """A count below 0 or past `MOST_TOKENS` is no count, whichever API sent it; a negative cost is
    no cost."""
    bodies = {
        "chat": chunk({"content": "Hi"}, usage={"prompt_tokens": bad, "completion_tokens": 2, "cost": -0.25}),
        "messages": raw(json.dumps({"type": "message_start", "message": {"usage": {"input_tokens": bad}}}).encode())
        + raw(json.dumps({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 2}}).encode()),
        "responses": raw(
            json.dumps(
                {"type": "response.completed", "response": {"usage": {"input_tokens": bad, "output_tokens": 2}}}
            ).encode()
        ),
    }
    for api, body in bodies.items():
        usage = sw.parse([body], api=api).usage
        assert usage is not None and usage.prompt_tokens is None and usage.completion_tokens == 2, (api, usage)
        assert usage.cost is None, (api, usage)


# --------------------------------------------------------------------------- the answer limit covers tool calls


def feed_events(events: list, limits: Limits, state: StreamState | None = None) -> StreamState:
    state = state or StreamState()
    feed = Feed(state, Normalizer("chat"), clock=None, limits=limits)
    for event in events:
        feed.push([event])
    feed.end("the test ended")
    return state


def test_tool_call_arguments_are_cut_at_the_answer_limit():
    big = "x" * 1500
    events = [ToolCallDelta(i, f"c{i}", "f", big) for i in range(4)]
    state = feed_events(events, Limits(max_answer_chars=4000))
    assert state.output_length == 4000
    assert [c.arguments_length for c in state.tool_calls] == [1500, 1500, 1000]
    assert state.tool_calls[2].arguments == "x" * 1000
    assert state.status == "incomplete" and "max_answer_chars" in (state.incomplete_reason or "")
    assert "tool-call arguments" in (state.incomplete_reason or "")


def test_the_limit_cuts_tool_arguments_first_then_text_then_reasoning():
    state = StreamState()
    state.extend([ReasoningDelta("r" * 10), TextDelta("t" * 10), ToolCallDelta(0, "c", "f", "a" * 10)])
    state.clip(25)
    assert (state.text, state.tool_calls[0].arguments, state.reasoning) == ("t" * 10, "a" * 5, "r" * 10)
    state.clip(8)
    assert (state.text, state.tool_calls[0].arguments, state.reasoning) == ("", "", "r" * 8)
    assert state.output_length == 8 and state.tool_calls.arguments_length == 0


def test_tool_arguments_past_the_default_limit_through_parse():
    """4 x 15 MB deltas kept 15.7M characters while the message said the text was cut."""
    arguments = "y" * 1_100_000
    body = b"".join(
        chunk({"tool_calls": [{"index": i, "id": f"c{i}", "function": {"name": "f", "arguments": arguments}}]})
        for i in range(4)
    )
    state = sw.parse(body + DONE)
    assert state.status == "incomplete" and "max_answer_chars" in (state.incomplete_reason or "")
    assert state.output_length == 4_000_000 == state.tool_calls.arguments_length
    assert sum(len(c.arguments) for c in state.tool_calls) == 4_000_000


# --------------------------------------------------------------------------- tool calls and citations counted


def test_tool_calls_past_their_limit_are_refused_with_one_warning_and_the_stream_goes_on():
    events = [ToolCallDelta(("auto", i), f"c{i}", "f", "{}") for i in range(30)]
    events += [ToolCallDelta(("auto", 29), arguments="more"), TextDelta("after")]
    state = feed_events(events, Limits(max_tool_calls=10))
    assert len(state.tool_calls) == 10 and [c.id for c in state.tool_calls] == [f"c{i}" for i in range(10)]
    assert state.tool_calls.arguments_length == 20, "a refused call's fragments are not counted"
    assert state.text == "after"
    assert said(state, "max_tool_calls=") == 1


def test_a_tool_call_with_a_name_longer_than_a_field_is_refused():
    events = [ToolCallDelta(0, "c0", "n" * (FIELD_CHARS + 1), "{}"), ToolCallDelta(1, "c1", "ok", "{}")]
    state = feed_events(events, Limits())
    assert [c.name for c in state.tool_calls] == ["ok"]
    assert said(state, "max_tool_calls=") == 1


def test_citations_past_their_limit_are_refused_with_one_warning():
    events = [CitationsFound(tuple(Citation(f"https://e.org/{i}", f"t{i}") for i in range(j, j + 7))) for j in (0, 7)]
    events.append(
        CitationsFound((Citation("https://e.org/0", "again"), Citation("https://x.org/" + "u" * FIELD_CHARS)))
    )
    state = feed_events(events, Limits(max_citations=10))
    assert [c.url for c in state.citations] == [f"https://e.org/{i}" for i in range(10)]
    assert said(state, "max_citations=") == 1
    following = state.next_part()
    assert following.citations == state.citations and following.citations.limit == 10


def test_a_url_longer_than_a_field_is_refused():
    state = feed_events(
        [CitationsFound((Citation("https://e.org/" + "p" * FIELD_CHARS), Citation("https://ok.org")))], Limits()
    )
    assert [c.url for c in state.citations] == ["https://ok.org"] and said(state, "max_citations=") == 1


@pytest.mark.parametrize(
    "deadline", [True, False, "5", 0, -1, float("nan"), [5], 10**400, pytest.param(10**5000, id="10**5000")]
)
def test_a_deadline_that_is_no_number_of_seconds_is_the_named_value_error(deadline):
    """`deadline=True` is not one second, and `deadline="5"` is named, not a `TypeError` from a
    comparison; through a request's keyword too."""
    with pytest.raises(ValueError, match="deadline must be a number of seconds above 0"):
        Limits(deadline=deadline)
    with pytest.raises(ValueError, match="deadline must be a number of seconds above 0"):
        sw.make_request("hi", provider="demo", deadline=deadline)
    assert Limits(deadline=5).deadline == 5 and Limits(deadline=0.5).deadline == 0.5


@pytest.mark.parametrize("seconds", [True, "5", 0, -1, float("nan"), 10**400])
def test_a_stall_timeout_that_is_no_number_of_seconds_is_named_before_anything_is_sent(seconds):
    """`stall_timeout=True` was one second, `"5"` and NaN failed at the first read as a client
    error, -1 stalled at once: each is the named `ValueError` when the request is made."""
    with pytest.raises(ValueError, match="stall_timeout must be a number of seconds above 0"):
        sw.make_request("hi", provider="demo", stall_timeout=seconds)


@pytest.mark.parametrize("retries", [True, "2", 1.5, -1])
def test_retries_that_are_no_whole_number_are_the_named_value_error(retries):
    with pytest.raises(ValueError, match="retries must be a whole number, 0 \\(no retry\\) or more"):
        sw.make_request("hi", provider="demo", retries=retries)
    assert sw.make_request("hi", provider="demo", retries=0).retries == 0


def test_the_new_limits_are_checked_and_reach_every_request():
    for bad in ({"max_tool_calls": 0}, {"max_citations": 1.5}, {"max_tool_calls": True}):
        with pytest.raises(ValueError, match="limit must be a positive whole number"):
            Limits(**bad)
    request = sw.make_request("hi", provider="demo", max_tool_calls=5, max_citations=6)
    assert (request.limits.max_tool_calls, request.limits.max_citations) == (5, 6)
    assert "max_tool_calls" not in request.body() and "max_citations" not in request.body()

    # one spelling: a field of `Limits` is the keyword that sets it
    assert Limits(max_answer_chars=7) == dataclasses.replace(DEFAULT_LIMITS, max_answer_chars=7)
    with pytest.raises(TypeError, match="unexpected keyword argument 'answer_chars'"):
        Limits(answer_chars=7)


class _Counting(ToolCall):
    __slots__ = ()
    reads = 0

    @property
    def arguments_length(self) -> int:
        _Counting.reads += 1
        return self._length


def test_the_answer_limit_does_not_walk_every_tool_call_per_read(monkeypatch):
    """It summed every call's arguments after each read: 400k empty calls took 24 s, 800k 111 s."""
    import streamwidgets.core._state as state_module

    monkeypatch.setattr(state_module, "ToolCall", _Counting)
    n = 3000
    _Counting.reads = 0
    state = feed_events([ToolCallDelta(("auto", i), f"c{i}", "f") for i in range(n)], Limits(max_tool_calls=n))
    assert len(state.tool_calls) == n
    assert _Counting.reads == 0, f"{_Counting.reads:,} reads of a call's length for {n:,} calls"


# --------------------------------------------------------------------------- memory of many small pieces


def test_one_character_deltas_are_joined_per_batch():
    """A piece per one-character delta cost ~80 bytes each (80 MB for a million): each push's
    pieces are joined at its end, so the pieces kept are one per push, not one per delta."""
    state = StreamState()
    feed = Feed(state, Normalizer("chat"), clock=None)
    one = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    for _ in range(100):
        feed.push(one * 1000)
    assert state.text_length == 100_000 and len(state._text) <= 100
    assert state.text == "a" * 100_000


def test_one_byte_tool_fragments_are_joined_as_they_come():
    """Within one batch too: a call's newest pieces are joined every `PIECES` fragments, and only
    the newest (joining all of them each time was quadratic)."""
    state = StreamState()
    state.extend([ToolCallDelta(0, "c", "f")] + [ToolCallDelta(0, arguments="x") for _ in range(60_000)])
    state.extend(ToolCallDelta(0, arguments="y") for _ in range(60_000))
    (call,) = state.tool_calls
    assert len(call._pieces) <= 120_000 // PIECES + PIECES and call.arguments_length == 120_000
    assert call.arguments == "x" * 60_000 + "y" * 60_000
    assert len(call._pieces) == 1


# --------------------------------------------------------------------------- what the readers remember


def test_events_that_never_tell_their_dialect_are_not_all_kept():
    normalizer = Normalizer()
    untold = b"data: {}\n\n" * 1000
    problems = []
    for _ in range(30):
        problems += [e for e in normalizer.feed(untold) if isinstance(e, Problem)]
        assert len(normalizer._waiting) <= WAITING_EVENTS
    assert normalizer.dialect_name == "chat"
    assert sum("did not tell which API" in p.message for p in problems) == 1
    assert normalizer._waiting == []
    big = Normalizer()
    big.feed(b"data: " + b"q" * (WAITING_LIMIT // 2) + b"\n\n")
    big.feed(b"data: " + b"q" * (WAITING_LIMIT // 2 + 10) + b"\n\n")
    assert big.dialect_name == "chat" and big._waiting == []


def test_the_dialects_forget_the_oldest_blocks_and_calls():
    messages = MessagesDialect()
    responses = ResponsesDialect()
    for i in range(KEYS + 500):
        start = {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}
        messages.translate(ServerSentEvent("content_block_start", json.dumps(start)))
        added = {"type": "response.output_item.added", "item": {"type": "function_call", "id": f"fc{i}", "name": "f"}}
        responses.translate(ServerSentEvent("response.output_item.added", json.dumps(added)))
    assert len(messages._blocks) == KEYS and len(responses._calls) == KEYS
    assert KEYS + 499 in messages._blocks and 0 not in messages._blocks


def test_one_character_deltas_pushed_one_at_a_time_keep_few_pieces():
    """A stream of one-character deltas that arrive one per network read (a loaded machine, a
    trickling server) is folded one event per batch; each once kept a string of its own (~70
    bytes apiece: 140 MB for two million). Token-sized deltas now grow the last piece."""
    import tracemalloc

    from streamwidgets.core._feed import Feed
    from streamwidgets.core._state import StreamState
    from streamwidgets.core.dialects import Normalizer

    event = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    state = StreamState()
    feed = Feed(state, Normalizer(None, None))
    feed.begin()
    feed.push(event)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(100_000):
            feed.push(event)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert state.text_length == 100_001
    assert grown < 1_000_000, f"100,000 one-character deltas kept {grown:,} bytes"
