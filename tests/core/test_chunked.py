"""The chunk merger (`core/_chunked.py`), checked against h11 itself.

What h11 makes of the reframed bytes must be what it makes of the raw ones — the same body, the
same trailers, the same error — however the bytes are cut into reads; and a read of many chunks
must reach h11 as one.
"""

from __future__ import annotations

import random
from typing import Optional

import h11
import pytest

from streamwidgets.core._chunked import Dechunker, Reframer

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunked(*payloads: bytes, trailer: bytes = b"\r\n") -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in payloads) + b"0\r\n" + trailer


def through_h11(reads: list[bytes], method: str = "POST", responses: int = 1) -> tuple[list, Optional[str]]:
    """What a client's h11 makes of these reads: its events (Data merged per message), or the error."""
    conn = h11.Connection(h11.CLIENT)
    seen: list = []
    done = 0

    def request() -> None:
        conn.send(h11.Request(method=method, target="/", headers=[("Host", "x"), ("Content-Length", "0")]))
        conn.send(h11.EndOfMessage())

    request()
    try:
        for data in [*reads, b""]:
            conn.receive_data(data)
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    break
                if event is h11.PAUSED:
                    if done < responses and conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                        conn.start_next_cycle()
                        request()
                        continue
                    break
                if isinstance(event, h11.Data) and seen and isinstance(seen[-1], bytes):
                    seen[-1] += event.data
                elif isinstance(event, h11.Data):
                    seen.append(bytes(event.data))
                elif isinstance(event, h11.Response | h11.InformationalResponse):
                    seen.append((event.status_code, event.headers))
                elif isinstance(event, h11.EndOfMessage):
                    seen.append(("end", event.headers))
                    done += 1
                elif isinstance(event, h11.ConnectionClosed):
                    seen.append("closed")
                    return seen, None
    except h11.RemoteProtocolError:
        return seen, "error"
    return seen, None


def reframed(reads: list[bytes], method: str = "POST") -> tuple[list[bytes], Reframer]:
    frames = Reframer()
    frames.sent(method.encode() + b" / HTTP/1.1\r\n")
    return [out for out in (frames.received(data) for data in reads) if out], frames


def cut(data: bytes, rng: random.Random, most: int = 40) -> list[bytes]:
    points = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, most))))
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def same_as_h11(raw: bytes, reads: list[bytes], method: str = "POST", responses: int = 1) -> Reframer:
    out, frames = reframed(reads, method)
    assert through_h11(out, method, responses) == through_h11(reads, method, responses)
    return frames


EVENTS = [b'data: {"n": %d, "t": "%s"}\n\n' % (i, b"x" * (i % 37)) for i in range(400)]


def test_chunk_boundaries_split_anywhere() -> None:
    rng = random.Random(1)
    raw = HEAD + chunked(*EVENTS, trailer=b"X-Usage: 12\r\nX-More: a\r\n\r\n")
    for _ in range(30):
        frames = same_as_h11(raw, cut(raw, rng))
        assert not frames.passing
    for at in range(1, 120):  # every cut through the head and the first chunks, one by one
        same_as_h11(raw, [raw[:at], raw[at:]])


def test_one_read_of_many_chunks_reaches_h11_as_one() -> None:
    raw = HEAD + chunked(*EVENTS)
    out, frames = reframed([raw])
    assert not frames.passing
    body = out[0][len(HEAD) :]
    assert body.count(b"\r\n") == 4  # one size line, the CRLF after its data, the last chunk and its blank line
    assert through_h11(out)[0][1] == b"".join(EVENTS)


CRLF_EVENTS = [b'data: {"n": %d}\r\n\r\n' % i for i in range(300)]  # SSE may end its lines with CRLF


@pytest.mark.parametrize(
    "payloads",
    [
        CRLF_EVENTS,  # every chunk's data holds CRLFs: the split pieces prove nothing, chunk by chunk it is
        [*EVENTS[:50], b"a\r\nb", *EVENTS[50:100]],  # one chunk among many holds one
        [b"3\r\nabc", *EVENTS[:20]],  # its data looks like a chunk of its own
        [b"\r\n", b"x\r\n\r\n", *EVENTS[:20]],  # data that is only CRLFs
    ],
    ids=["crlf-lines", "one-crlf", "chunk-lookalike", "only-crlf"],
)
def test_data_holding_crlf_is_read_by_its_sizes(payloads: list[bytes]) -> None:
    rng = random.Random(2)
    raw = HEAD + chunked(*payloads)
    for reads in ([raw], *(cut(raw, rng) for _ in range(20))):
        frames = same_as_h11(raw, reads)
        assert not frames.passing
    assert through_h11(reframed([raw])[0])[0][1] == b"".join(payloads)


def test_a_read_is_split_at_its_crlfs_once_at_most(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks the split cannot take (an extension on every one) are read one by one, and the
    rest of the read is not split again after each: that would be quadratic in the read."""
    splits = []
    split = Dechunker._split_chunks

    def counted(data: bytes, i: int, out: list[bytes]) -> int:
        splits.append(i)
        return split(data, i, out)

    monkeypatch.setattr(Dechunker, "_split_chunks", staticmethod(counted))
    body = b"".join(b"%x;e=1\r\n%s\r\n" % (len(p), p) for p in EVENTS) + b"0\r\n\r\n"
    payload, used = Dechunker().feed(body)
    assert (payload, used) == (b"".join(EVENTS), len(body))
    assert splits == [0]


def test_chunk_extensions_are_dropped_as_h11_drops_them() -> None:
    raw = HEAD + b'5;name=value\r\nhello\r\n6;a;b="q s" \r\n world\r\n0;last\r\n\r\n'
    for at in range(1, len(raw)):
        frames = same_as_h11(raw, [raw[:at], raw[at:]])
        assert not frames.passing


def test_trailers_reach_h11_as_they_came() -> None:
    raw = HEAD + chunked(b"data: a\n\n", trailer=b"X-A: 1\r\nX-B: 2\r\n\r\n")
    for at in range(1, len(raw)):
        same_as_h11(raw, [raw[:at], raw[at:]])
    seen, error = through_h11(reframed([raw])[0])
    assert error is None and seen[-2] == ("end", [(b"x-a", b"1"), (b"x-b", b"2")])


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\nhello\r\n",  # not hex
        b"-5\r\nhello\r\n",  # negative
        b"123456789012345678901\r\n",  # too long for h11
        b"5\r\nhelloXY0\r\n\r\n",  # no CRLF after the data
        b"5\nhello\r\n",  # a bare LF ends the size line
        b"5 ;x\r\nhello\r\n0\r\n\r\n",  # a blank before an extension
        b"5\r\nhello\r\n" + b"1" * 20000,  # a size line that never ends
    ],
)
def test_bad_framing_is_h11s_to_report(body: bytes) -> None:
    raw = HEAD + b"3\r\nabc\r\n" + body
    assert through_h11([raw])[1] == "error"
    for at in range(1, len(raw), max(1, len(raw) // 300)):
        seen, error = through_h11(reframed([raw[:at], raw[at:]])[0])
        assert error == "error", at
        if at > len(HEAD) + 8:  # what came before the break still arrives
            assert seen[1].startswith(b"abc")


def test_a_body_that_ends_early_is_h11s_to_report() -> None:
    raw = HEAD + b"a\r\nhello"
    out, _ = reframed([raw])
    assert through_h11(out) == through_h11([raw])
    assert through_h11(out)[1] == "error"


def test_content_length_bodies_and_keep_alive() -> None:
    # a JSON error of known length, then (the same connection) a chunked stream
    first = b'HTTP/1.1 429 Too Many\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"e": "slow"}'
    raw = first + HEAD + chunked(*EVENTS[:50])
    rng = random.Random(2)
    for _ in range(100):
        frames = same_as_h11(raw, cut(raw, rng), responses=2)
        assert not frames.passing


def test_informational_and_empty_responses_have_no_body() -> None:
    raw = b"HTTP/1.1 100 Continue\r\n\r\n" + HEAD + chunked(*EVENTS[:20])
    out, frames = reframed([raw])
    assert not frames.passing and through_h11(out) == through_h11([raw])
    raw = b"HTTP/1.1 204 No Content\r\n\r\n" + HEAD + chunked(*EVENTS[:20])
    frames = same_as_h11(raw, [raw], responses=2)
    assert not frames.passing


def test_what_it_does_not_follow_passes_through_unchanged() -> None:
    close_delimited = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + chunked(b"not chunks")
    head_response = HEAD + chunked(b"never read")
    gzip_then_chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + chunked(b"x")
    for raw, method in ((close_delimited, "POST"), (head_response, "HEAD"), (gzip_then_chunked, "POST")):
        out, frames = reframed([raw[:30], raw[30:]], method)
        assert frames.passing and b"".join(out) == raw


def test_the_dechunker_alone() -> None:
    chunks = Dechunker()
    payload, used = chunks.feed(b"3\r\nabc\r\n2\r\nde\r\n0\r\nX: 1\r\n\r\nHTTP/1.1 200")
    assert (payload, chunks.done, chunks.trailer) == (b"abcde", True, b"X: 1\r\n\r\n")
    assert used == len(b"3\r\nabc\r\n2\r\nde\r\n0\r\nX: 1\r\n\r\n")
    broken = Dechunker()
    assert broken.feed(b"3\r\nab")[0] == b"ab"
    assert broken.feed(b"cQ")[0] == b"c" and broken.broken == b""
