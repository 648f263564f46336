"""Every sink takes every source, and they all go through one feed loop.

Sinks: `arun()`, `run()`, `astream()`, `show()` on a terminal, and the view (what `show()` builds in
a kernel: a `StreamHandle` with a `StreamView`). Sources: a prompt sent live to the embedded
provider, `replay(path)` of a recording, and `sdk(stream)` of an openai SDK stream pointed at the
embedded provider. The deadline, the answer limit, `record=`, the final status — and, for the
live source, retries — must come out the same whichever sink runs which source. Real sockets
throughout: the embedded provider on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import io
import json
import pydoc
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import openai
import pytest

import streamwidgets as sw
from streamwidgets.core import StreamState
from streamwidgets.core._events import Started, TextDelta
from streamwidgets.core._limits import Limits
from streamwidgets.net import RunOptions, Source, SourceContext, as_source
from streamwidgets.server import DemoServer
from streamwidgets.widgets import StreamHandle, scheduler_for
from streamwidgets.widgets._handle import frame_pause
from streamwidgets.widgets._view import view_for

FAST = {"tokens_per_second": 0, "first_token_delay": 0}
PROMPT = "Explain binary search"


# ----------------------------------------------------------------------------- the sinks


async def via_arun(source: Any, **options: Any) -> StreamState:
    return await sw.arun(source, **options)


async def via_run(source: Any, **options: Any) -> StreamState:
    return await asyncio.to_thread(sw.run, source, **options)  # run() blocks: a thread with no loop of its own


async def via_astream(source: Any, **options: Any) -> StreamState:
    seen = []
    async with sw.astream(source, **options) as events:
        async for event in events:
            seen.append(event)
    text = "".join(e.text for e in seen if type(e).__name__ == "TextDelta")
    assert text == events.state.part_text or events.state.done  # the events are the state's
    return events.state


async def via_terminal(source: Any, **options: Any) -> StreamState:
    out = io.StringIO()
    handle = sw.show(source, out=out, **options)
    state = await handle
    assert state.text.strip()[:20] in out.getvalue() or not state.text.strip()
    return state


async def via_view(source: Any, record: Any = None, parts: int = 1, **options: Any) -> StreamState:
    chosen = as_source(source, **options)
    view = view_for(chosen)
    scheduler = scheduler_for()
    run = RunOptions(record=record, parts=parts, pause=frame_pause(scheduler, view))
    handle = StreamHandle(chosen, run, view=view, scheduler=scheduler)
    state = await handle
    assert view.answer.text == state.text  # the view drew the final state
    return state


SINKS: dict[str, Callable[..., Awaitable[StreamState]]] = {
    "arun": via_arun,
    "run": via_run,
    "astream": via_astream,
    "terminal": via_terminal,
    "view": via_view,
}


# ----------------------------------------------------------------------------- the sources


@pytest.fixture(scope="module")
def recordings(demo_server: DemoServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Recordings made once from the embedded provider: a whole answer, a long one, and one
    that stalls (its last read comes 60 s after the others)."""
    home = tmp_path_factory.mktemp("recordings")
    base = demo_server.base_url
    made = {}
    for name, model in (("answer", "demo"), ("long", "demo-long")):
        path = home / f"{name}.jsonl"
        state = sw.run(PROMPT, model=model, base_url=base, record=path, demo={**FAST, "tokens": 3000})
        assert state.status == "complete"
        made[name] = path
    lines = made["answer"].read_text().splitlines()
    wire = b"".join(base64.b64decode(json.loads(line)["data"]) for line in lines[1:] if '"data"' in line)
    events = [e + b"\n\n" for e in wire.split(b"\n\n") if e]
    assert len(events) > 10
    first, rest = b"".join(events[:6]), b"".join(events[6:])
    stalled = home / "stalled.jsonl"
    body = [lines[0]] + [
        json.dumps({"t": t, "data": base64.b64encode(d).decode()}) for t, d in ((0.0, first), (60.0, rest))
    ]
    stalled.write_text("\n".join(body) + "\n")
    made["stalled"] = stalled
    return made


def source_for(
    kind: str, demo_server: DemoServer, recordings: dict[str, Path], model: str
) -> tuple[Any, dict[str, Any]]:
    """(the source, the request options it needs), for `model` (a scenario of the embedded provider)."""
    if kind == "live":
        return PROMPT, {"model": model, "base_url": demo_server.base_url, "demo": _pace(model)}
    if kind == "replay":
        name = {"demo-stall": "stalled", "demo-long": "long"}.get(model, "answer")
        return sw.replay(recordings[name], speed=1 if model == "demo-stall" else 0), {}
    return _LazySdk(demo_server.base_url, model), {}


def _pace(model: str) -> dict[str, Any]:
    return {"tokens_per_second": 20, "first_token_delay": 0} if model == "demo-stall" else {**FAST, "tokens": 3000}


class _LazySdk:
    """An SDK stream opened when the test runs: an async one on the test's loop, or a sync one for
    `run()`, which runs the stream on a loop of its own (an async client belongs to one loop)."""

    def __init__(self, base_url: str, model: str) -> None:
        self.base_url, self.model = base_url, model

    async def open(self, sync: bool) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": PROMPT}],
            "stream": True,
            "stream_options": {"include_usage": True},
            "extra_body": {"demo": _pace(self.model)},
        }
        if sync:
            client = openai.OpenAI(base_url=self.base_url, api_key="sk-test-sinks", max_retries=0)
            return sw.sdk(client.chat.completions.create(**kwargs))
        aclient = openai.AsyncOpenAI(base_url=self.base_url, api_key="sk-test-sinks", max_retries=0)
        return sw.sdk(await aclient.chat.completions.create(**kwargs))


async def opened(source: Any, sync: bool = False) -> Any:
    return await source.open(sync) if isinstance(source, _LazySdk) else source


def run_case(sink: str, kind: str, demo_server: DemoServer, recordings: dict[str, Path], model: str, **options: Any):
    source, request_options = source_for(kind, demo_server, recordings, model)

    async def main() -> tuple[StreamState, float]:
        chosen = await opened(source, sync=sink == "run")
        started = time.monotonic()
        state = await SINKS[sink](chosen, **request_options, **options)
        return state, time.monotonic() - started

    return asyncio.run(main())


SOURCES = ("live", "replay", "sdk")
PAIRS = [(sink, kind) for sink in SINKS for kind in SOURCES]


@pytest.mark.parametrize(("sink", "kind"), PAIRS)
def test_a_whole_answer_is_complete_everywhere(sink, kind, demo_server, recordings):
    state, _ = run_case(sink, kind, demo_server, recordings, "demo")
    assert state.status == "complete", state.message
    assert "binary search" in state.text.lower()
    assert state.origin == kind


@pytest.mark.parametrize(("sink", "kind"), PAIRS)
def test_the_deadline_ends_a_stalled_answer_everywhere(sink, kind, demo_server, recordings):
    state, took = run_case(sink, kind, demo_server, recordings, "demo-stall", deadline=1.0)
    assert state.status == "incomplete", state.message
    assert "deadline of 1 s" in state.message and state.text  # the text so far is kept
    assert took < 30  # the stall itself lasts until the client leaves (a minute for the recording)


@pytest.mark.parametrize(("sink", "kind"), PAIRS)
def test_the_answer_limit_is_the_same_everywhere(sink, kind, demo_server, recordings):
    state, _ = run_case(sink, kind, demo_server, recordings, "demo-long", max_answer_chars=500)
    assert state.status == "incomplete" and state.text_length == 500
    assert "max_answer_chars=" in state.message


@pytest.mark.parametrize(("sink", "kind"), PAIRS)
def test_record_keeps_what_any_source_streamed(sink, kind, demo_server, recordings, tmp_path):
    path = tmp_path / "again.jsonl"
    state, _ = run_case(sink, kind, demo_server, recordings, "demo", record=path)
    assert state.status == "complete"
    again = sw.parse(path)
    assert (again.text, again.status, again.usage) == (state.text, "complete", state.usage)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["streamwidgets_recording"] == 1 and "sk-test" not in path.read_text()


@pytest.mark.parametrize("sink", list(SINKS))
def test_retries_are_the_same_for_every_sink(sink, demo_server, recordings):
    state, _ = run_case(sink, "live", demo_server, recordings, "demo-ratelimit", retries=2)
    assert state.status == "complete" and state.retry is not None and state.retry.tries == 2


@pytest.mark.parametrize("kind", ["replay", "sdk"])
def test_a_request_option_on_another_source_is_a_clear_error(kind, demo_server, recordings):
    source, _ = source_for(kind, demo_server, recordings, "demo")

    async def main() -> None:
        with pytest.raises(TypeError, match=r"retries: not an option of a (replay|sdk) source"):
            await sw.arun(await opened(source), retries=2)

    asyncio.run(main())


@pytest.mark.parametrize("sink", list(SINKS))
def test_continue_from_any_sink_records_and_logs_every_part(sink, demo_server, recordings, tmp_path):
    record, log = tmp_path / "parts.jsonl", tmp_path / "log.jsonl"
    options = {"model": "demo-cutoff", "base_url": demo_server.base_url, "demo": FAST}

    async def main() -> StreamState:
        if sink == "view":
            chosen = as_source(PROMPT, **options)
            handle = StreamHandle(
                chosen, RunOptions(record=record, parts=2), view=view_for(chosen), scheduler=scheduler_for()
            )
            from streamwidgets.apps._classlog import log_parts

            log_parts(handle.stream, log)
            return await handle
        return await SINKS[sink](PROMPT, record=record, log=log, parts=2, **options)

    state = asyncio.run(main())
    whole = sw.run(PROMPT, model="demo", base_url=demo_server.base_url, demo=FAST)
    assert state.status == "complete" and len(state.parts) == 2 and state.text == whole.text
    replayed = sw.parse(record)
    assert replayed.text == state.text and len(replayed.parts) == 2
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["parts"] for e in entries] == [1, 2] and entries[-1]["text"] == state.text


def test_a_replay_of_a_continued_answer_plays_every_part(demo_server, tmp_path):
    path = tmp_path / "two.jsonl"
    live = sw.run(PROMPT, model="demo-cutoff", base_url=demo_server.base_url, demo=FAST, record=path, parts=2)
    again = sw.run(sw.replay(path, speed=0))
    assert (again.text, len(again.parts), again.status) == (live.text, 2, "complete")
    assert [base64.b64decode(json.loads(line)["data"]) for line in path.read_text().splitlines() if '"data"' in line]


@pytest.mark.parametrize("kind", SOURCES)
def test_the_events_tap_yields_no_more_than_the_answer_limit(kind, demo_server, recordings):
    """`astream` yields the text the state kept and no more, even when one read carries far more
    than the limit (demo-long streams thousands of characters per read), and says why it stopped."""
    source, request_options = source_for(kind, demo_server, recordings, "demo-long")

    async def main() -> tuple[str, StreamState]:
        chosen = await opened(source, sync=False)
        texts = []
        async with sw.astream(chosen, **request_options, max_answer_chars=1000) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    texts.append(event.text)
        return "".join(texts), events.state

    yielded, state = asyncio.run(main())
    assert len(yielded) == 1000 and yielded == state.text
    assert state.status == "incomplete" and "max_answer_chars=" in state.message


def test_forgetting_await_says_what_to_do_and_the_call_still_runs_when_awaited(demo_server):
    pending = sw.arun("Explain recursion", base_url=demo_server.base_url, model="demo", demo={"tokens_per_second": 0})
    with pytest.raises(AttributeError, match=r"has not run yet: await it first — `state = await sw.arun\(...\)`"):
        pending.text  # noqa: B018
    assert "not awaited yet" in repr(pending)
    state = asyncio.run(pending)  # still a coroutine: it runs as one
    assert state.status == "complete"

    async def many() -> list[StreamState]:
        task = asyncio.create_task(sw.arun("Hi", base_url=demo_server.base_url, model="demo-fast"))
        both = await asyncio.gather(sw.arun("Hi", base_url=demo_server.base_url, model="demo-fast"), task)
        return list(both)

    assert [s.status for s in asyncio.run(many())] == ["complete", "complete"]


def test_the_text_of_an_unfinished_answer_comes_with_a_hint(demo_server):
    async def main() -> tuple[list[str], str]:
        handle = sw.show(
            "Explain recursion", base_url=demo_server.base_url, model="demo-long",
            demo={"tokens_per_second": 200, "first_token_delay": 0}, display=False, out=io.StringIO(),
        )  # fmt: skip
        while not handle.state.text:
            await asyncio.sleep(0.02)
        with pytest.warns(UserWarning, match="still streaming: this is the text so far") as caught:
            partial = handle.text
        handle.cancel()
        await handle
        return [str(w.message) for w in caught], partial

    said, partial = asyncio.run(main())
    assert len(said) == 1 and partial


# ----------------------------------------------------------------------------- the keywords


SINK_FUNCTIONS = {"show": sw.show, "arun": sw.arun, "run": sw.run, "astream": sw.astream, "compare": sw.compare}


@pytest.mark.parametrize("name", list(SINK_FUNCTIONS))
def test_every_sink_lists_its_keywords_in_its_signature(name):
    """`help(sw.show)` and an editor show every keyword: only the body fields are `**params`."""
    from streamwidgets.apps._keywords import REQUEST_KEYWORDS
    from streamwidgets.core._limits import LIMIT_NAMES

    parameters = inspect.signature(SINK_FUNCTIONS[name]).parameters
    listed = {
        *REQUEST_KEYWORDS,
        "limits",
        *LIMIT_NAMES,
        "max_steps",
        "tool_timeout",
        "confirm",
        "record",
        "log",
        "parts",
    }
    assert listed <= set(parameters), sorted(listed - set(parameters))
    assert [p.name for p in parameters.values() if p.kind is p.VAR_KEYWORD] == ["params"]
    shown = pydoc.render_doc(SINK_FUNCTIONS[name], renderer=pydoc.plaintext)
    assert "max_answer_chars" in shown and "limits" in shown and "stall_timeout" in shown
    if name in ("show", "compare"):
        assert {"max_fps", "scale", "display"} <= set(parameters)


@pytest.mark.parametrize("name", list(SINK_FUNCTIONS))
@pytest.mark.parametrize(
    ("typo", "meant"),
    [("recrod", "record"), ("sytem", "system"), ("max_answer_char", "max_answer_chars"), ("limts", "limits")],
)
def test_a_misspelled_keyword_of_a_sink_is_a_type_error_that_names_it(name, typo, meant):
    with pytest.raises(TypeError, match=f"unknown option {typo}=: did you mean {meant}=\\?"):
        SINK_FUNCTIONS[name]("hi", **{typo: 1})


def test_another_sinks_keyword_is_a_type_error_and_a_body_field_s_typo_still_the_request_s(demo_server):
    with pytest.raises(TypeError, match=r"arun\(\) got an unexpected keyword argument 'max_fps'"):
        sw.arun("hi", max_fps=10)  # it used to reach the request's body
    with pytest.raises(TypeError, match=r"show\(\) got an unexpected keyword argument 'raise_on_error'"):
        sw.show("hi", raise_on_error=True)
    with pytest.raises(ValueError, match=r"unknown option temprature=: did you mean temperature=\?"):
        sw.run("hi", model="demo", base_url=demo_server.base_url, temprature=0.2)


def test_the_limits_are_one_value_and_each_limit_one_keyword_of_the_same_name(demo_server, recordings):
    """`limits=Limits(...)` and the flat keywords are one spelling: a keyword changes its field."""
    options = {"model": "demo-long", "base_url": demo_server.base_url, "demo": {**FAST, "tokens": 3000}}
    state = sw.run(PROMPT, limits=Limits(max_answer_chars=300, deadline=60), **options)
    assert state.status == "incomplete" and state.text_length == 300 and "max_answer_chars=" in state.message
    state = sw.run(PROMPT, limits=Limits(max_answer_chars=300), max_answer_chars=200, **options)
    assert state.text_length == 200
    replayed = as_source(sw.replay(recordings["long"]), limits=Limits(max_answer_chars=300, deadline=60), deadline=9)
    assert replayed.limits == Limits(max_answer_chars=300, deadline=9)
    with pytest.raises(TypeError, match=r"limits= is a Limits\(\.\.\.\)"):
        sw.run(PROMPT, limits={"max_answer_chars": 10}, **options)
    with pytest.raises(TypeError, match="a ready request carries its options"):
        as_source(sw.make_request(PROMPT, **options), limits=Limits())


# ----------------------------------------------------------------------------- what a source sees


class _Says(Source):
    """A source that reports beside its items: an event learned outside them, then its own end
    after a chat answer whose `[DONE]` a reader swallowed (as an SDK does)."""

    def __init__(self) -> None:
        self.context: Any = None

    async def items(self, context: SourceContext) -> Any:
        self.context = context
        context.say(Started(script="a lesson"))
        yield b'data: {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}\n\n'
        yield b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
        context.ended()


def test_a_source_reports_through_its_context_and_its_own_end_stands_for_the_terminator(tmp_path):
    source = _Says()
    path = tmp_path / "says.jsonl"

    async def main() -> tuple[list[Any], StreamState]:
        async with sw.astream(source, record=path) as events:
            seen = [event async for event in events]
        return seen, events.state

    seen, state = asyncio.run(main())
    assert isinstance(source.context, SourceContext) and not hasattr(source.context, "state")
    assert type(seen[0]).__name__ == "Started" and state.script == "a lesson"  # before the first item
    assert (state.status, state.text, state.finish) == ("complete", "Hi", "stop")
    assert sw.parse(path).status == "complete"  # the recording holds the terminator too


def test_the_transport_knows_no_provider_s_own_header():
    """The demo's `X-Demo-Script` is read by the source (`heard_script`, which `Live` hands the
    headers to, whichever transport answered: a socket, `fetch`, or in-process), not by the transport."""
    from streamwidgets.net import _sources, _transport

    assert "x-demo-script" not in inspect.getsource(_transport).lower()
    assert "x-demo-script" in inspect.getsource(_sources.heard_script).lower()
    assert "heard_script" in inspect.getsource(_sources.Live.items)
