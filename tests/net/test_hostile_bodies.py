"""Hostile bodies from a broken provider on loopback: the loop keeps answering, input Python itself
chokes on is mended, and everything that grows is bounded.

Each case is a real body from a small loopback server (`support/hostile.py`), read by the real
client. What is asserted is behaviour, never a latency: the loop answered a ticker *while* one
network read was being decoded (the ticker saw the answer grow inside it), Cancel and the deadline
acted before that read was done, and a subprocess's memory stayed under a bound far above what it
uses now and far below what it used before. The latencies themselves are measured in
`benchmarks/bench_loop.py`.

The bomb: gzip members of 1 MiB of blank lines and one text event each ("x"), 48 of them in one
chunk of 53 kB, which the client reads at once and which inflates to 48 MiB. Before the feed loop
handed control back between pieces, nothing else ran until all 48 MiB were parsed: a ticker saw
the answer jump from nothing to 48 x's, a Cancel or a deadline acted after the last one.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import pytest
from support.hostile import DONE, HostileServer, Reply, chat, event, hostile_fixture

from streamwidgets import make_request
from streamwidgets.core._state import StreamState
from streamwidgets.net._pipeline import Stream
from streamwidgets.net._sources import Live

GZIP_SSE = (("Content-Type", "text/event-stream"), ("Content-Encoding", "gzip"))
MiB = 1 << 20
#: The markers in the one network read of the bomb: a ticker that sees fewer, sees inside it.
MARKERS = 48
ROOT = Path(__file__).resolve().parents[2]


def marker_member() -> bytes:
    """One gzip member: 1 MiB of blank lines, then a text event of one "x" (1.1 kB packed)."""
    text = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    delta = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}
    return gzip.compress(b"\n" * MiB + event({**text, **delta}), 9)


def _replies() -> dict[str, Reply]:
    bomb = marker_member() * MARKERS
    replies = {
        # One chunk, then the body stays open: everything the client does, it does inside one read.
        "/bomb/v1/chat/completions": Reply((bomb,), headers=GZIP_SSE, end="hold"),
    }
    # One-character text events, packed: 100,000 events (4.8 MB) per 14 kB gzip member.
    tiny = gzip.compress(b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n' * 100_000, 9)
    replies["/tiny/v1/chat/completions"] = Reply((tiny,), headers=GZIP_SSE, loop=(tiny,), end="hold")
    return replies


hostile = hostile_fixture(_replies)


async def watched(
    stream: Stream, stop: Callable[[StreamState], bool] = lambda state: False
) -> tuple[StreamState, list[int]]:
    """Run `stream` as the view runs it (a task of the loop), with a ticker beside it that notes
    the answer's length each time the loop lets it run, and cancels the task (as the Cancel button
    does: `task.cancel()`) once `stop(state)` says so."""
    task = asyncio.ensure_future(stream.run())
    seen: list[int] = []
    while not task.done():
        await asyncio.sleep(0.002)
        seen.append(stream.state.text_length)
        if stop(stream.state):
            task.cancel()
            break
    with suppress(asyncio.CancelledError):
        await task
    return stream.state, seen


def bomb_stream(server: HostileServer, **options) -> Stream:
    request = make_request("hi", base_url=server.url("bomb"), model="m", api_key="k", retries=0, **options)
    return Stream(Live(request))


def inside_the_read(seen: list[int]) -> set[int]:
    """The answer lengths the ticker saw strictly inside the one network read."""
    return {n for n in seen if 0 < n < MARKERS}


@pytest.mark.timeout(120)
def test_the_loop_answers_a_ticker_and_cancel_acts_inside_a_gzip_bomb(hostile):
    # Cancel a quarter of the way in: the ticker, which may miss a marker or two between its
    # ticks on a fast machine, must still have seen several lengths strictly inside the read.
    quarter = MARKERS // 4
    state, seen = asyncio.run(watched(bomb_stream(hostile), stop=lambda state: state.text_length >= quarter))
    assert len(inside_the_read(seen)) >= 3, f"the ticker saw only {sorted(set(seen))}: the loop was held"
    assert state.status == "cancelled", state.message
    assert quarter <= state.text_length < MARKERS, "cancel acted only after the whole read was parsed"
    assert state.text == "x" * state.text_length
    assert hostile.visit("/bomb/v1/chat/completions").left.wait(10), "the connection was not closed"


@pytest.mark.timeout(120)
def test_the_deadline_acts_inside_a_gzip_bomb(hostile):
    # Parsing the read's 48 MiB takes seconds on any machine; the deadline comes long before.
    state, seen = asyncio.run(watched(bomb_stream(hostile, deadline=0.3)))
    assert state.status == "incomplete", state.message
    assert "deadline of 0.3 s" in (state.incomplete_reason or "")
    assert state.text_length < MARKERS, "the deadline acted only after the whole read was parsed"
    assert state.text == "x" * state.text_length, "the text that arrived is kept"
    assert inside_the_read(seen) or state.text_length == 0
    assert hostile.visit("/bomb/v1/chat/completions").left.wait(10), "the connection was not closed"


# --------------------------------------------------------------------------- memory, in a subprocess

_CHILD = """
import asyncio, json, resource, sys
from streamwidgets import arun

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

async def main(url, chars):
    await arun("warm up", base_url="http://127.0.0.1:9/v1", model="m", api_key="k", retries=0)
    before = rss()
    state = await arun("hi", base_url=url, model="m", api_key="k", retries=0, max_answer_chars=chars)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"growth": peak - before, "status": state.status, "chars": state.text_length,
                      "reason": state.incomplete_reason}))

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def child(url: str, chars: int) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, url, str(chars)], env=env, capture_output=True, text=True, timeout=200
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- input Python chokes on


def _raw_replies() -> dict[str, Reply]:
    lone = b'data: {"choices":[{"index":0,"delta":{"content":"broken \\ud800 here"}}]}\n\n'
    huge_cost = (
        b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"cost":' + b"7" * 4000 + b"}}\n\n"
    )
    huge_int = b'data: {"choices":[{"index":0,"delta":{"content":" and on."}}],"n":' + b"9" * 5000 + b"}\n\n"
    retry = b"retry: " + b"1" * 5000 + b"\n\n"

    def call(i: int, arguments: str = "") -> bytes:
        tool = {"index": i, "id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": arguments}}
        return event({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [tool]}}]})

    def cited(j: int) -> bytes:
        notes = [{"type": "url_citation", "url_citation": {"url": f"https://e.org/{j}/{i}"}} for i in range(500)]
        return event({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"annotations": notes}}]})

    big = "y" * 1_500_000  # 4 calls of 1.5M characters: past an answer limit of 4,000,000
    return {
        "/tools/v1/chat/completions": Reply((chat("Calling"), *(call(i, big) for i in range(4)), DONE)),
        "/flood/v1/chat/completions": Reply(
            (
                chat("Many"),
                b"".join(call(i) for i in range(1500)),
                *(cited(j) for j in range(3)),
                chat(finish="stop"),
                DONE,
            )
        ),
        "/lone/v1/chat/completions": Reply((chat("Before "), lone, chat(finish="stop"), DONE)),
        "/numbers/v1/chat/completions": Reply((chat("Counted"), huge_int, retry, huge_cost, chat(finish="stop"), DONE)),
    }


raw = hostile_fixture(_raw_replies)


def _ask(server: HostileServer, case: str) -> StreamState:
    request = make_request("hi", base_url=server.url(case), model="m", api_key="k", retries=0)
    return asyncio.run(Stream(Live(request)).run())


@pytest.mark.timeout(60)
def test_tool_call_arguments_count_against_the_answer_limit(raw):
    """4 x 15 MB of arguments were kept whole while the message said the text was cut."""
    state = _ask(raw, "tools")
    assert state.status == "incomplete" and "max_answer_chars" in (state.incomplete_reason or "")
    assert state.output_length == 4_000_000 and state.text == "Calling"
    assert sum(len(c.arguments) for c in state.tool_calls) == 4_000_000 - len("Calling")


@pytest.mark.timeout(60)
def test_a_flood_of_tool_calls_and_citations_is_refused_past_its_limits_and_the_answer_goes_on(raw):
    state = _ask(raw, "flood")
    assert (state.status, state.text) == ("complete", "Many"), state.message
    assert (len(state.tool_calls), len(state.citations)) == (1000, 1000)
    assert sum("max_tool_calls=" in w for w in state.warnings) == 1, state.warnings
    assert sum("max_citations=" in w for w in state.warnings) == 1, state.warnings


@pytest.mark.timeout(60)
def test_a_lone_surrogate_becomes_a_replacement_character_with_one_warning(raw):
    state = _ask(raw, "lone")
    assert state.status == "complete", state.message
    assert state.text == "Before broken \ufffd here"
    state.text.encode("utf-8")  # printable, sendable, loggable
    assert sum("surrogate" in w for w in state.warnings) == 1, state.warnings


@pytest.mark.timeout(60)
def test_numbers_no_float_holds_and_a_huge_retry_lose_no_text(raw):
    state = _ask(raw, "numbers")
    assert state.status == "complete", state.message
    assert state.text == "Counted and on.", "an event with a 5,000-digit number was lost"
    assert state.usage is not None and state.usage.cost is None and state.usage.completion_tokens == 2
    assert sum("number Python cannot use" in w for w in state.warnings) == 1, state.warnings
    assert sum("retry: line of 5,000 digits" in w for w in state.warnings) == 1, state.warnings


@pytest.mark.timeout(60)
def test_the_cli_prints_an_answer_with_a_lone_surrogate_and_a_huge_cost(raw):
    """`streamwidgets ask` exited 2 with nothing printed (a surrogate) or 1 (a 4,000-digit cost)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for case, text in (("lone", "Before broken \ufffd here"), ("numbers", "Counted and on.")):
        command = [sys.executable, "-m", "streamwidgets", "ask", "hi", "--base-url", raw.url(case), "--model", "m"]
        out = subprocess.run(
            command, env={**env, "OPENAI_API_KEY": "k"}, capture_output=True, timeout=60, encoding="utf-8"
        )
        assert out.returncode == 0, (case, out.returncode, out.stderr)
        assert text in out.stdout, (case, out.stdout)


def test_an_sdk_event_with_a_lone_surrogate_is_mended_like_one_from_the_wire():
    """An SDK hands over Python strings: one with a lone surrogate made the event's UTF-8 encode
    raise, and the stream end as an error."""
    from streamwidgets import parse
    from streamwidgets.net._sdk import sdk_event_bytes

    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "a\ud800b"}}]}
    state = parse(sdk_event_bytes(chunk) + b"data: [DONE]\n\n")
    assert (state.status, state.text) == ("complete", "a\ufffdb")
    assert sum("surrogate" in w for w in state.warnings) == 1, state.warnings
