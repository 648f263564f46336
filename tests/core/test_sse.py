"""The SSE decoder against the WHATWG parsing rules, one rule per test, plus chunking invariance."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwidgets.core._sse import ServerSentEvent, SSEDecoder


def decode(data: bytes, chunks: list[int] | None = None) -> tuple[list[ServerSentEvent], SSEDecoder]:
    d = SSEDecoder()
    events: list[ServerSentEvent] = []
    if chunks is None:
        events += d.feed(data)
    else:
        pos = 0
        for size in chunks:
            events += d.feed(data[pos : pos + size])
            pos += size
        events += d.feed(data[pos:])
    events += d.close()
    return events, d


def one(data: bytes) -> ServerSentEvent:
    events, _ = decode(data)
    assert len(events) == 1, events
    return events[0]


def test_simple_event_defaults():
    assert one(b"data: hello\n\n") == ServerSentEvent("message", "hello", None, None)


def test_only_one_leading_space_is_stripped():
    assert one(b"data:  two spaces\n\n").data == " two spaces"
    assert one(b"data:none\n\n").data == "none"
    assert one(b"data:\tx\n\n").data == "\tx"


def test_multi_line_data_joined_with_newline():
    assert one(b"data: a\ndata: b\ndata:\n\n").data == "a\nb\n"


def test_empty_data_line_dispatches_empty_string():
    assert one(b"data\n\n").data == ""
    assert one(b"data:\n\n").data == ""


def test_block_without_data_is_not_dispatched_but_id_is_kept():
    events, d = decode(b"event: x\nid: 5\n\ndata: y\n\n")
    assert events == [ServerSentEvent("message", "y", "5", None)]
    assert d.last_event_id == "5"


def test_event_type_resets_after_dispatch():
    events, _ = decode(b"event: a\ndata: 1\n\ndata: 2\n\n")
    assert [e.event for e in events] == ["a", "message"]


def test_empty_event_type_is_message():
    assert one(b"event:\ndata: 1\n\n").event == "message"


@pytest.mark.parametrize("sep", [b"\n", b"\r\n", b"\r"])
def test_line_endings(sep):
    data = sep.join([b"event: e", b"data: a", b"data: b", b"", b"data: c", b"", b""])
    events, _ = decode(data)
    assert events == [ServerSentEvent("e", "a\nb"), ServerSentEvent("message", "c")]


def test_mixed_line_endings_in_one_stream():
    events, _ = decode(b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r")
    assert [e.data for e in events] == ["a\nb\nc", "d"]


def test_crlf_split_across_chunks_is_one_line_ending():
    d = SSEDecoder()
    assert d.feed(b"data: a\r") == []
    assert d.feed(b"\n") == []  # the LF completes the CRLF; it is not a blank line
    assert d.feed(b"\r\n") == [ServerSentEvent("message", "a")]


def test_cr_then_blank_cr_dispatches_immediately():
    d = SSEDecoder()
    assert d.feed(b"data: a\r\r") == [ServerSentEvent("message", "a")]


def test_bom_stripped_once_at_start_only():
    assert one(b"\xef\xbb\xbfdata: a\n\n").data == "a"
    events, _ = decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n")
    assert events == []  # the second BOM makes the field name "\ufeffdata", which is ignored
    assert one(b"data: \xef\xbb\xbfa\n\n").data == "\ufeffa"


def test_bom_split_across_chunks():
    events, _ = decode(b"\xef\xbb\xbfdata: a\n\n", chunks=[1, 1, 1])
    assert events == [ServerSentEvent("message", "a")]


def test_comments_are_not_data_but_are_exposed():
    events, d = decode(b": keep-alive\n:ok\ndata: x\n: OPENROUTER PROCESSING\n\n")
    assert events == [ServerSentEvent("message", "x")]
    assert d.comment_count == 3
    assert d.take_comments() == [" keep-alive", "ok", " OPENROUTER PROCESSING"]
    assert d.take_comments() == []


def test_field_without_colon_uses_empty_value():
    events, _ = decode(b"data\ndata\n\n")
    assert events[0].data == "\n"
    assert one(b"event\ndata: x\n\n").event == "message"


def test_unknown_fields_ignored_but_kept_aside():
    events, d = decode(b'error: {"code": 500}\nfoo: bar\ndata: x\n\n')
    assert events == [ServerSentEvent("message", "x")]
    assert d.take_unknown_fields() == [("error", '{"code": 500}'), ("foo", "bar")]


def test_id_is_sticky_and_can_be_reset_to_empty():
    events, _ = decode(b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n")
    assert [e.id for e in events] == ["1", "1", ""]


def test_id_with_nul_is_ignored():
    events, _ = decode(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n")
    assert [e.id for e in events] == ["1", "1"]


@pytest.mark.parametrize(
    "value,expected",
    [
        (b"3000", 3000),
        (b"0", 0),
        (b"-5", None),
        (b"1.5", None),
        (b" 7", None),
        (b"", None),
        ("\u0661".encode(), None),
        (b"12a", None),
    ],
)
def test_retry_only_ascii_digits(value, expected):
    # one space after the colon is stripped; " 7" in the parametrize is a second space
    events, d = decode(b"retry: " + value + b"\ndata: x\n\n")
    assert events[0].retry == expected
    assert d.retry == expected


def test_retry_without_data_still_sets_reconnection_time():
    events, d = decode(b"retry: 10\n\n")
    assert events == [] and d.retry == 10


def test_invalid_utf8_becomes_replacement_character():
    assert one(b"data: a\xffb\n\n").data == "a\ufffdb"


def test_multibyte_character_split_across_chunks():
    text = "data: héllo 🌊 世界\n\n".encode()
    for cut in range(1, len(text)):
        events, _ = decode(text, chunks=[cut])
        assert events == [ServerSentEvent("message", "héllo 🌊 世界")]


def test_truncated_multibyte_at_end_of_stream_is_replaced():
    events, d = decode(b"data: a\xf0\x9f")
    assert events == []
    assert d.unterminated == ServerSentEvent("message", "a\ufffd")


def test_unterminated_final_block_is_not_dispatched_but_exposed():
    events, d = decode(b"data: x\n\ndata: [DONE]\n")
    assert events == [ServerSentEvent("message", "x")]
    assert d.unterminated == ServerSentEvent("message", "[DONE]")
    events, d = decode(b"data: x\n\ndata: [DONE]")
    assert d.unterminated.data == "[DONE]"
    events, d = decode(b"data: x\n\n")
    assert d.unterminated is None


def test_each_event_returned_by_the_feed_that_completes_it():
    d = SSEDecoder()
    assert d.feed(b"data: 1\n") == []
    assert d.feed(b"\ndata: 2") == [ServerSentEvent("message", "1")]
    assert d.feed(b"\n\n") == [ServerSentEvent("message", "2")]


def test_feed_after_close_raises():
    d = SSEDecoder()
    d.close()
    with pytest.raises(RuntimeError):
        d.feed(b"data: x\n\n")


STREAM = (
    "\ufeffretry: 100\n: hi\r\nevent: a\ndata: one\r\ndata:two\rid: 7\n\n"
    "data: é🌊\n\n:c\r\n\r\ndata\nevent: b\nid: x\x00y\n\n"
    'data: {"k": "v"}\r\n\r\nx-unknown: 1\ndata:  sp\n\ndata: tail'
).encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=12), max_size=60))
def test_chunking_invariance(cuts):
    whole, d0 = decode(STREAM)
    split, d1 = decode(STREAM, chunks=cuts)
    assert split == whole
    assert d1.unterminated == d0.unterminated
    assert d1.comment_count == d0.comment_count
    assert d1.retry == d0.retry


def test_byte_by_byte_equals_whole():
    whole, _ = decode(STREAM)
    assert decode(STREAM, chunks=[1] * len(STREAM))[0] == whole
    assert [e.data for e in whole] == ["one\ntwo", "é🌊", "", '{"k": "v"}', " sp"]


@pytest.mark.timeout(60)
def test_one_mebibyte_line_byte_by_byte_stays_linear():
    # Fed one byte at a time, quadratic joining would copy ~5e11 bytes (hours); linear work
    # finishes in about a second, so the timeout is the proof (no timing is asserted).
    big = b"data: " + b"x" * (1024 * 1024) + b"\n\n"
    d = SSEDecoder()
    events = []
    for i in range(len(big)):
        events += d.feed(big[i : i + 1])
    assert len(events) == 1 and len(events[0].data) == 1024 * 1024


# --------------------------------------------------------------------------- the event size limit


def _fed(decoder: SSEDecoder, data: bytes, size: int) -> list:
    return [e for i in range(0, len(data), size) for e in decoder.feed(data[i : i + size])]


@pytest.mark.parametrize("size", [1, 7, 4096])
@pytest.mark.parametrize(
    "oversized",
    [
        b": " + b"c" * 5000 + b"\n\n",  # a comment line
        b"data: " + b"d" * 5000 + b"\n\n",  # one long data line
        b"data: 0123456789\n" * 500 + b"\n",  # a block of many short lines
        b"event: x\ndata: " + b"d" * 5000 + b"\r\ndata: tail\r\n\r\n",  # CRLF, a field line before it
    ],
    ids=["comment", "line", "block", "crlf"],
)
def test_an_event_past_the_limit_is_discarded_and_the_stream_goes_on(size, oversized):
    decoder = SSEDecoder(max_event_chars=1000)
    body = b"data: before\n\n" + oversized + b"data: after\n\n"
    events = _fed(decoder, body, size) + decoder.close()
    assert [e.data for e in events] == ["before", "after"]
    assert decoder.dropped == 1 and decoder.unterminated is None


def test_an_event_within_the_limit_is_kept_whole_however_it_is_cut():
    decoder = SSEDecoder(max_event_chars=1000)
    body = b"data: " + b"k" * 900 + b"\ndata: " + b"m" * 50 + b"\n\n"
    assert [e.data for e in _fed(decoder, body, 3)] == ["k" * 900 + "\n" + "m" * 50]
    assert decoder.dropped == 0


def test_a_long_line_costs_constant_memory():
    import tracemalloc

    decoder = SSEDecoder(max_event_chars=1 << 20)
    chunk = b"x" * 65536
    tracemalloc.start()
    try:
        decoder.feed(b": ")
        for _ in range(50 * 16):  # a 50 MB comment line
            decoder.feed(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert decoder.feed(b"\n\ndata: ok\n\n") == [ServerSentEvent(data="ok")]
    assert peak < 8 << 20, f"{peak / 1e6:.0f} MB buffered for a line that is discarded"
