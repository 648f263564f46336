"""Retry before the first token: the policy (pure), and the client against the embedded provider
on a real socket. The countdown and Cancel in a real kernel are `tests/kernel/test_classroom.py`."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from pathlib import Path

import pytest
from support.http import free_port

from streamwidgets import arun, make_request
from streamwidgets.core._events import ErrorEvent
from streamwidgets.core._formatting import seconds
from streamwidgets.core._recordings import load_recording
from streamwidgets.net import Stream, as_source
from streamwidgets.net._retry import RetryPolicy, retry_reason, wait_hint
from streamwidgets.server import DemoServer
from streamwidgets.widgets._header import header_html

# ----------------------------------------------------------------------------- the policy


def test_the_wait_comes_from_whichever_way_the_provider_says_it():
    now = 1_700_000_000.0
    assert wait_hint({"Retry-After": "12"}) == 12
    assert wait_hint({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert wait_hint({"Retry-After": "Tue, 14 Nov 2023 22:13:32 GMT"}, now=now) == pytest.approx(12, abs=1)
    assert wait_hint({"x-ratelimit-reset-requests": "6m0s", "x-ratelimit-reset-tokens": "20ms"}) == 360
    assert wait_hint({"x-ratelimit-reset-tokens": "1.5s"}) == 1.5
    assert wait_hint({"anthropic-ratelimit-requests-reset": "2023-11-14T22:13:35Z"}, now=now) == pytest.approx(15)
    gemini = json.dumps(
        {"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}]}}
    )
    assert wait_hint({}, gemini.encode()) == 12
    assert wait_hint({}, b'{"error": {"message": "Rate limit reached. Please try again in 1.2s."}}') == 1.2
    assert wait_hint({}, b'{"error": {"message": "try again in 1m30s"}}') == 90
    assert wait_hint({"retry-after": "soon"}, b"nothing here") is None


def test_which_failures_are_retried():
    assert retry_reason(ErrorEvent("slow down", "rate_limit_exceeded", 429)) == "rate limited by the provider"
    assert retry_reason(ErrorEvent("busy", "overloaded_error", 529)) == "the provider is overloaded"
    assert retry_reason(ErrorEvent("busy", None, 503)) == "the provider is overloaded"
    assert retry_reason(ErrorEvent("nothing answers", "connect_error")) == "could not connect"
    # Waiting does not cure an empty account (OpenAI answers 429 for it), a bad key or a bug.
    assert retry_reason(ErrorEvent("quota", "insufficient_quota", 429)) is None
    assert retry_reason(ErrorEvent("No deployments available - crossed budget: Exceeded budget", 429, 429)) is None
    assert retry_reason(ErrorEvent("bad key", "invalid_api_key", 401)) is None
    assert retry_reason(ErrorEvent("oops", "server_error", 500)) is None
    assert retry_reason(ErrorEvent("stopped after some text", "server_error")) is None


def test_the_wait_has_jitter_a_backoff_a_bound_and_a_ceiling():
    policy = RetryPolicy(retries=3, base=1.0, cap=20.0, max_wait=60.0)
    limited = ErrorEvent("slow down", None, 429, retry_after=2.0)
    waits = {policy.delay(limited, 1, rng=lambda r=r: r) for r in (0.0, 0.5, 1.0)}
    assert min(waits) == 2.0 and 2.0 < max(waits) <= 2.4 and len(waits) == 3  # never sooner than asked
    unhinted = ErrorEvent("busy", None, 503)
    assert [policy.delay(unhinted, n, rng=lambda: 1.0) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert policy.delay(unhinted, 1, rng=lambda: 0.0) == 0.5  # at least half the backoff
    assert policy.delay(unhinted, 4) is None  # three retries, then the error is shown
    assert policy.delay(ErrorEvent("daily quota", None, 429, retry_after=3600), 1) is None
    assert RetryPolicy(retries=0).delay(limited, 1) is None
    with pytest.raises(ValueError, match="retries"):
        make_request("hi", provider="demo", retries=-1)


# ----------------------------------------------------------------------------- real sockets


def test_a_429_with_retry_after_is_retried_after_about_that_and_succeeds(demo_server: DemoServer):
    request = make_request(
        "Explain SSE (retry test 1)",
        model="demo-ratelimit",
        base_url=demo_server.base_url,
        demo={"tokens_per_second": 0},
    )
    started = time.monotonic()
    state = asyncio.run(arun(request))
    took = time.monotonic() - started
    assert state.status == "complete" and state.text.startswith("**Server-Sent Events")
    assert state.retry is not None and state.retry.tries == 2 and state.retry.until is None
    assert took >= 2.0, took  # it waited what Retry-After asked (a lower bound: load only adds)
    # Time to first token is the model's, counted from the try that answered: it leaves out the
    # 2 s wait, which a count from the first try would include.
    assert state.time_to_first_token is not None and state.time_to_first_token < took - 2.0


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_each_api_retries_a_503_twice_and_says_how_many_tries(demo_server: DemoServer, api: str):
    state = asyncio.run(
        arun(
            f"Explain recursion ({api})",
            model="demo-overloaded",
            base_url=demo_server.base_url,
            api=api,
            demo={"tokens_per_second": 0},
        )
    )
    assert state.status == "complete" and state.retry is not None and state.retry.tries == 3
    took = state.retry.took(state)
    assert took is not None and state.elapsed is not None and took > state.elapsed  # all tries, not the last
    assert f"after 3 tries over {seconds(took)}" in header_html(state)


def test_the_terminal_says_it_waits_and_how_many_tries_it_took(demo_server: DemoServer):
    import io

    from streamwidgets.apps._terminal import TerminalPrinter

    request = make_request(
        "Explain SSE (terminal)", model="demo-ratelimit", base_url=demo_server.base_url, demo={"tokens_per_second": 0}
    )
    out = io.StringIO()
    stream = Stream(as_source(request))
    printer = TerminalPrinter(stream.state, out)
    stream.notify = printer.notify
    asyncio.run(stream.run())
    printer.finish()
    text = out.getvalue()
    assert text.startswith("(rate limited by the provider — retrying in 2 s, try 2 of 4)\n**Server-Sent Events")
    assert re.search(r"after 2 tries over [\d.]+ s\]", text), text[-200:]


def test_a_dead_port_says_how_long_all_its_tries_took():
    """Nothing listens: every try fails to connect at once, the waits between them are what
    takes the time, and the header says so (not the last try's 2 ms)."""
    port = free_port()
    state = asyncio.run(arun("Hi", base_url=f"http://127.0.0.1:{port}/v1", model="m", retries=2))
    assert state.status == "error" and state.retry is not None and state.retry.tries == 3
    took = state.retry.took(state)
    assert took is not None and took >= 0.5 and took > (state.elapsed or 0)
    assert f"after 3 tries over {seconds(took)}" in header_html(state)


def test_retries_zero_shows_the_error_at_once_with_its_wait(demo_server: DemoServer):
    state = asyncio.run(
        arun("Explain SSE (no retry)", model="demo-ratelimit", base_url=demo_server.base_url, retries=0)
    )
    # No try after the first, so no wait: the error is shown as soon as the 429 arrives.
    assert state.status == "error" and state.error is not None and state.error.http_status == 429
    assert state.error.retry_after == 2 and state.retry is None
    assert "retry after 2 s" in state.message


def test_too_few_retries_give_up_and_keep_the_providers_words(demo_server: DemoServer):
    state = asyncio.run(
        arun("Explain SSE (give up)", model="demo-overloaded", base_url=demo_server.base_url, retries=1)
    )
    assert state.status == "error" and state.error is not None and state.error.http_status == 503
    assert state.retry is not None and state.retry.tries == 2
    assert "temporarily unavailable" in state.message


def test_no_retry_after_the_first_token(demo_server: DemoServer):
    before = len(demo_server.connections)
    broken = asyncio.run(arun("Explain SSE (after text)", model="demo-error", base_url=demo_server.base_url))
    cut = asyncio.run(
        arun("Explain SSE (cut)", model="demo-cutoff", base_url=demo_server.base_url, demo={"cutoff": "abort"})
    )
    assert broken.status == "error" and broken.text and broken.retry is None
    assert cut.status == "incomplete" and cut.text and cut.retry is None
    assert broken.can_continue and cut.can_continue  # Continue is offered instead
    assert len(demo_server.connections) - before == 2  # one stream each: nothing was sent twice


def test_a_refused_connection_is_retried_until_the_server_is_up():
    port = free_port()
    server = DemoServer(port=port)
    starter = threading.Timer(0.4, server.start)
    starter.start()
    try:
        state = asyncio.run(
            arun(
                "Explain recursion",
                provider="demo",
                model="demo",
                base_url=f"http://127.0.0.1:{port}/v1",
                demo={"tokens_per_second": 0},
            )
        )
    finally:
        starter.join()
        server.stop()
    assert state.status == "complete" and state.retry is not None and state.retry.tries >= 2
    assert state.retry.reason == "could not connect"


def test_a_recording_keeps_only_the_try_that_answered(demo_server: DemoServer, tmp_path: Path):
    path = tmp_path / "answer.jsonl"
    state = asyncio.run(
        arun(
            "Explain SSE (recorded)",
            model="demo-ratelimit",
            base_url=demo_server.base_url,
            record=path,
            demo={"tokens_per_second": 0},
        )
    )
    recording = load_recording(path)
    assert state.status == "complete" and recording.status is None and recording.chunks
    assert b"Rate limit" not in path.read_bytes()
