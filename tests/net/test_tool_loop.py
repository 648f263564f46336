"""The tool loop over real loopback sockets: the calls run, the results go back in each API's
exact shape, and nothing a model (or a tool) does can crash the loop.

The hostile server plays a scripted reply per request and keeps every request body, so each test
reads back the second request the client really sent; the embedded provider's `demo-tools` model
is the friendly peer that reads the results and answers with them.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Optional

import anyio
import pytest
from support.hostile import DONE, FULL, HostileServer, Reply, event, hostile_fixture, message_start, typed

import streamwidgets as sw
from streamwidgets.core._tools import DECLINED, MAX_RESULT_CHARS
from streamwidgets.net._request import make_request

APIS = ("chat", "responses", "messages")
PATH_OF = {"chat": "chat/completions", "responses": "responses", "messages": "messages"}
KEY = "sk-tool-SENTINEL-0123456789abcdef"


# --------------------------------------------------------------------------- the wire of a tool call


def calls_stream(api: str, calls: list[tuple[str, str, str]]) -> tuple[bytes, ...]:
    """A stream that ends asking for `calls` ((id, name, arguments text) each), arguments in two
    fragments, as each API streams them."""
    out: list[bytes] = []
    if api == "chat":
        for i, (cid, name, args) in enumerate(calls):
            head = {"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}
            out.append(_chat_delta({"tool_calls": [head]}))
            for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                out.append(_chat_delta({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
        out += [_chat_delta({}, finish="tool_calls"), DONE]
    elif api == "responses":
        out.append(typed("response.created", response={"id": "resp_1", "model": "m", "status": "in_progress"}))
        for i, (cid, name, args) in enumerate(calls):
            item = {"type": "function_call", "id": f"fc_{i}", "call_id": cid, "name": name, "arguments": ""}
            out.append(typed("response.output_item.added", output_index=i, item=item))
            for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                out.append(typed("response.function_call_arguments.delta", item_id=f"fc_{i}", delta=piece))
            out.append(typed("response.output_item.done", output_index=i, item={**item, "arguments": args}))
        usage = {"input_tokens": 5, "output_tokens": 7}
        out.append(typed("response.completed", response={"id": "resp_1", "status": "completed", "usage": usage}))
    else:
        out.append(message_start())
        for i, (cid, name, args) in enumerate(calls):
            block = {"type": "tool_use", "id": cid, "name": name, "input": {}}
            out.append(typed("content_block_start", index=i, content_block=block))
            for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                out.append(typed("content_block_delta", index=i, delta=delta))
            out.append(typed("content_block_stop", index=i))
        out += [
            typed("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 9}),
            typed("message_stop"),
        ]
    return tuple(out)


def _chat_delta(delta: dict, finish: Optional[str] = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return event({"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]})


ANSWER = {api: Reply(tuple(FULL[api])) for api in APIS}  # "Hello there."


server = hostile_fixture(scope="function")


def script(server: HostileServer, api: str, *replies: Reply) -> None:
    server.replies[f"/t/v1/{PATH_OF[api]}"] = list(replies)


def request(server: HostileServer, api: str, tools: list):
    return make_request(
        "What is 2 + 3?", base_url=server.url("t"), api=api, model="m", api_key=KEY, tools=tools, retries=0
    )


def bodies(server: HostileServer) -> list[dict]:
    return [visit.json() for visit in server.visits]


# --------------------------------------------------------------------------- tools


def add(a: int, b: int) -> int:
    """Add two whole numbers.

    Args:
        a: The first number.
        b: The second.
    """
    return a + b


async def slow_add(a: int, b: int) -> int:
    """Add, slowly."""
    await anyio.sleep(60)
    return a + b


# --------------------------------------------------------------------------- each API's exact shape


@pytest.mark.parametrize("api", APIS)
def test_the_second_request_carries_the_results_in_the_apis_own_shape(server, api):
    script(server, api, Reply(calls_stream(api, [("call_a", "add", '{"a": 2, "b": 3}')])), ANSWER[api])
    state = sw.run(request(server, api, [add]))
    assert state.status == "complete" and state.text == "Hello there.", state.message
    assert len(state.parts) == 2
    [call] = state.parts[0].tool_calls
    assert call.result is not None and (call.result.status, call.result.content) == ("done", "5")

    first, second = bodies(server)
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {"type": "integer", "description": "The second."},
        },
        "required": ["a", "b"],
    }
    if api == "chat":
        assert first["tools"] == [
            {
                "type": "function",
                "function": {"name": "add", "description": "Add two whole numbers.", "parameters": schema},
            }
        ]
        assert second["messages"][1:] == [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": "5"},
        ]
    elif api == "responses":
        assert first["tools"] == [
            {"type": "function", "name": "add", "description": "Add two whole numbers.", "parameters": schema}
        ]
        assert second["input"][1:] == [
            {"type": "function_call", "call_id": "call_a", "name": "add", "arguments": '{"a": 2, "b": 3}'},
            {"type": "function_call_output", "call_id": "call_a", "output": "5"},
        ]
    else:
        assert first["tools"] == [{"name": "add", "description": "Add two whole numbers.", "input_schema": schema}]
        assert second["messages"][1:] == [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "call_a", "name": "add", "input": {"a": 2, "b": 3}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_a", "content": "5"}]},
        ]
    assert second["tools"] == first["tools"]  # the model may call again


@pytest.mark.parametrize("api", APIS)
def test_the_embedded_demo_tools_model_reads_the_results_and_answers(api):
    def get_weather(city: str, unit: str = "celsius") -> dict:
        """The weather in a city."""
        return {"city": city, "temperature": 21 if city == "Paris" else 9, "unit": unit}

    state = sw.run("Weather in Paris and Tokyo?", model="demo-tools", api=api, tools=[get_weather])
    assert state.status == "complete", state.message
    calls = state.parts[0].tool_calls
    assert [json.loads(c.arguments)["city"] for c in calls] == ["Paris", "Tokyo"]
    assert all(c.result is not None and c.result.status == "done" for c in calls)
    assert "In Paris it is 21 °C" in state.text and "In Tokyo it is 9 °C" in state.text
    # Usage adds up over the steps: the meter reads every part's.
    assert all(part.usage is not None for part in state.parts)


# --------------------------------------------------------------------------- parallel calls


@pytest.mark.parametrize("api", APIS)
def test_parallel_calls_run_at_the_same_time(server, api):
    """Each call waits for the other to start: run one after the other, both would time out."""
    both = anyio.Event()
    started: list[str] = []

    async def meet(name: str) -> str:
        """Wait for the other call."""
        started.append(name)
        if len(started) == 2:
            both.set()
        await both.wait()
        return f"met {name}"

    calls = [("c1", "meet", '{"name": "x"}'), ("c2", "meet", '{"name": "y"}')]
    script(server, api, Reply(calls_stream(api, calls)), ANSWER[api])
    state = sw.run(request(server, api, [meet]), tool_timeout=10)
    results = [c.result for c in state.parts[0].tool_calls]
    assert [(r.status, r.content) for r in results if r] == [("done", "met x"), ("done", "met y")]
    assert state.status == "complete"


# --------------------------------------------------------------------------- max_steps


def test_max_steps_stops_a_model_that_keeps_asking(server):
    script(server, "chat", Reply(calls_stream("chat", [("c1", "add", '{"a": 1, "b": 1}')])))
    state = sw.run(request(server, "chat", [add]), max_steps=3)
    assert len(server.visits) == 3 and len(state.parts) == 3
    assert state.finish == "tool_calls"
    assert any("Stopped after 3 requests (max_steps=3)" in w for w in state.warnings)
    assert state.tool_calls[0].result is None  # the last step's calls were not run
    assert all(part.tool_calls[0].result.status == "done" for part in state.parts[:2])


# --------------------------------------------------------------------------- bad input never crashes the loop


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque thing>"


def leaky() -> str:
    """Fails, quoting the key."""
    raise RuntimeError(f"the server said no to {KEY}")


def opaque() -> Opaque:
    """Returns what JSON cannot hold."""
    return Opaque()


def huge() -> str:
    """Returns far too much."""
    return "x" * (MAX_RESULT_CHARS * 3)


async def stuck() -> str:
    """Never finishes."""
    await anyio.sleep(60)
    return "never"


BAD_CALLS = [
    ("c1", "made_up", "{}"),
    ("c2", "add", '{"a": 1, "b": '),
    ("c3", "add", '{"a": 1, "b": "two"}'),
    ("c4", "leaky", "{}"),
    ("c5", "stuck", "{}"),
    ("c6", "opaque", "{}"),
    ("c7", "huge", "{}"),
    ("c8", "add", "[1, 2]"),
]


@pytest.mark.parametrize("api", APIS)
def test_every_bad_call_goes_back_as_an_error_result_and_the_loop_goes_on(server, api):
    script(server, api, Reply(calls_stream(api, BAD_CALLS)), ANSWER[api])
    state = sw.run(request(server, api, [add, leaky, opaque, huge, stuck]), tool_timeout=0.5)
    assert state.status == "complete" and state.text == "Hello there.", state.message
    results = {c.id: c.result for c in state.parts[0].tool_calls}
    assert all(r is not None for r in results.values())

    def error(cid: str) -> str:
        result = results[cid]
        assert result is not None and result.status == "error" and result.is_error, (cid, result)
        return result.error or ""

    assert "no tool named 'made_up'" in error("c1") and "add, huge, leaky, opaque, stuck" in error("c1")
    assert "not valid JSON" in error("c2")
    assert "b: Input should be a valid integer" in error("c3")
    assert "RuntimeError: the server said no to" in error("c4") and KEY not in error("c4")
    assert "did not finish within 0.5 s" in error("c5")
    assert "must be a JSON object, not list" in error("c8")
    opaque_result, huge_result = results["c6"], results["c7"]
    assert opaque_result is not None and (opaque_result.status, opaque_result.content) == ("done", "<Opaque thing>")
    assert "not JSON; it was sent as str()" in (opaque_result.note or "")
    assert huge_result is not None and huge_result.status == "done"
    assert huge_result.content.startswith("x" * MAX_RESULT_CHARS) and len(huge_result.content) < MAX_RESULT_CHARS + 200
    assert "the first 16,000 were sent" in huge_result.content and "48,000 characters" in (huge_result.note or "")

    second = server.visits[1].body.decode()
    assert KEY not in second
    sent = _results_sent(json.loads(second), api)
    assert sent["c1"][0].startswith("Error: there is no tool named") and sent["c6"][0] == "<Opaque thing>"
    assert sent["c3"][0].startswith("Error: invalid arguments") and "b:" in sent["c3"][0]
    if api == "messages":
        assert [cid for cid, (_, failed) in sent.items() if failed] == ["c1", "c2", "c3", "c4", "c5", "c8"]
        # Arguments that were no JSON object go as an empty `input`: Messages requires an object.
        uses = json.loads(second)["messages"][1]["content"]
        assert [u["input"] for u in uses if u["id"] in ("c2", "c8")] == [{}, {}]


def _results_sent(body: dict, api: str) -> dict[str, tuple[str, bool]]:
    if api == "chat":
        return {m["tool_call_id"]: (m["content"], False) for m in body["messages"] if m.get("role") == "tool"}
    if api == "responses":
        return {i["call_id"]: (i["output"], False) for i in body["input"] if i.get("type") == "function_call_output"}
    return {b["tool_use_id"]: (b["content"], b.get("is_error", False)) for b in body["messages"][-1]["content"]}


def test_a_model_that_asks_for_a_tool_nobody_offered_gets_an_error_not_a_crash(server):
    script(server, "chat", Reply(calls_stream("chat", [("c1", "rm_rf", '{"path": "/"}')])), ANSWER["chat"])
    state = sw.run(request(server, "chat", [add]))
    [call] = state.parts[0].tool_calls
    assert call.result is not None and call.result.status == "error" and state.status == "complete"


# --------------------------------------------------------------------------- cancel


@pytest.mark.parametrize("api", APIS)
def test_cancel_during_a_tool_stops_it_and_sends_nothing_more(server, api):
    script(server, api, Reply(calls_stream(api, [("c1", "slow_add", '{"a": 1, "b": 2}')])), ANSWER[api])
    events = sw.astream(request(server, api, [slow_add]))

    async def main() -> None:
        async with events:
            async for _ in events:
                pass
            # never reached: the tool runs for a minute

    async def cancel_when_running() -> None:
        with anyio.move_on_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(main)
                while True:
                    await anyio.sleep(0.01)
                    calls = events.state.parts[0].tool_calls
                    if calls and calls[0].result is not None and calls[0].result.status == "running":
                        group.cancel_scope.cancel()
                        return

    asyncio.run(cancel_when_running())
    state = events.state
    assert state.status == "cancelled" and len(state.parts) == 2
    result = state.parts[0].tool_calls[0].result
    assert result is not None and result.status == "cancelled"
    assert len(server.visits) == 1  # the results were never sent


def test_confirm_needs_a_view(server):
    with pytest.raises(ValueError, match="needs a notebook's view"):
        sw.run(request(server, "chat", [add]), confirm=True)
    with pytest.raises(ValueError, match="needs a notebook's view"):
        sw.show("hi", model="demo-tools", tools=[add], confirm=True)
    assert DECLINED == "The user declined to run this tool."


def test_record_and_the_class_log_take_every_step(tmp_path):
    def get_weather(city: str) -> dict:
        """The weather in a city."""
        return {"city": city, "sky": "clear"}

    recording, log = tmp_path / "tools.jsonl", tmp_path / "log.jsonl"
    state = sw.run("Weather in Paris and Tokyo?", model="demo-tools", tools=[get_weather], record=recording, log=log)
    assert state.status == "complete" and len(state.parts) == 2
    replayed = sw.run(sw.replay(recording, speed=0))
    assert replayed.text == state.text and len(replayed.parts) == 2
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["parts"], line["finish"]) for line in lines] == [(1, "tool_calls"), (2, "stop")]


# --------------------------------------------------------------------------- tools that misbehave


def exits(path: str) -> str:
    """A tool that parses its input as a command line would: argparse exits on bad arguments."""
    import argparse

    argparse.ArgumentParser(prog="exits", exit_on_error=True).parse_args(["--nonsense", path])
    return "unreachable"


class Unspeakable(Exception):
    def __str__(self) -> str:
        raise ValueError("no words")


def mute(x: int) -> int:
    """A tool whose error cannot say what it is."""
    raise Unspeakable()


class Deep:
    def __str__(self) -> str:
        return str(self)  # recurses until Python stops it


def deep(x: int) -> object:
    """A tool whose result cannot be read."""
    return Deep()


def nested(value: object) -> str:
    """A tool that takes anything."""
    return "fine"


def test_a_tool_that_exits_or_whose_words_fail_is_an_error_result_and_the_answer_goes_on(server):
    """SystemExit (argparse on bad arguments), an exception whose __str__ raises, a result whose
    __str__ recurses, and arguments nested 30,000 deep: each an error result on its own card,
    the other calls of the step run, and the loop goes on to the answer."""
    deep_args = '{"value": ' + "[" * 30_000 + "]" * 30_000 + "}"  # within the 64 KiB a call may have
    calls = [
        ("c1", "exits", '{"path": "x"}'),
        ("c2", "mute", '{"x": 1}'),
        ("c3", "deep", '{"x": 1}'),
        ("c4", "nested", deep_args),
        ("c5", "add", '{"a": 2, "b": 3}'),
    ]
    script(server, "chat", Reply(calls_stream("chat", calls)), ANSWER["chat"])
    state = sw.run(request(server, "chat", [exits, mute, deep, nested, add]))
    assert state.status == "complete" and state.text == "Hello there.", state.message
    results = {c.id: c.result for c in state.parts[0].tool_calls}
    words = {cid: (r.status, r.error or r.content) for cid, r in results.items() if r is not None}
    assert words["c1"][0] == "error" and "tried to exit the program (SystemExit 2)" in words["c1"][1]
    assert words["c2"] == ("error", "Unspeakable: (its message could not be read)")
    assert words["c3"][0] == "error" and "its result could not be read" in words["c3"][1]
    assert words["c4"][0] == "error" and ("nested too deeply" in words["c4"][1] or "not valid JSON" in words["c4"][1])
    assert words["c5"] == ("done", "5")


def test_the_deadline_counts_for_the_whole_answer_not_each_step():
    """A first step of ~1.8 s and a tool of 1 s: `deadline=2.5` has passed when the second step
    starts, so the answer ends there (a deadline per step gave the second step 2.5 s of its own,
    and the answer completed after ~3.4 s)."""

    def slow_weather(city: str) -> dict:
        """The weather in a city, slowly."""
        time.sleep(1.0)
        return {"city": city, "temperature": 21}

    started = time.monotonic()
    state = sw.run(
        "Weather in Paris?", model="demo-tools", tools=[slow_weather], deadline=2.5,
        demo={"tokens_per_second": 40, "first_token_delay": 0},
    )  # fmt: skip
    took = time.monotonic() - started
    assert state.status == "incomplete" and "deadline of 2.5 s" in state.message, state.message
    assert state.parts[0].tool_calls[0].result.status == "done"
    assert took < 3.2, took


def test_each_call_s_timeout_counts_its_own_time_not_a_wait_for_a_thread():
    """45 calls at once (more than a worker pool's 40 places), each 0.5 s long, each within a
    0.9 s timeout: every one runs at once in a thread of its own, so none times out waiting."""
    from streamwidgets.core._tools import Tool
    from streamwidgets.net._tool_runner import _call

    def half_a_second() -> str:
        """Takes half a second."""
        time.sleep(0.5)
        return "done"

    tool = Tool.from_function(half_a_second)

    async def main() -> list[str]:
        results: list[str] = []

        async def one() -> None:
            with anyio.fail_after(0.9):
                results.append(await _call(tool, {}))

        async with anyio.create_task_group() as group:
            for _ in range(45):
                group.start_soon(one)
        return results

    assert anyio.run(main) == ["done"] * 45


def test_megabytes_of_arguments_are_an_error_and_are_not_sent_back(server):
    huge = '{"a": 1, "b": 2, "pad": "' + "x" * 1_000_000 + '"}'
    script(server, "chat", Reply(calls_stream("chat", [("c1", "add", huge)])), ANSWER["chat"])
    state = sw.run(request(server, "chat", [add]))
    [call] = state.parts[0].tool_calls
    assert call.result is not None and call.result.status == "error"
    assert f"{len(huge):,} characters long" in (call.result.error or "")
    assert len(server.visits[1].body) < 10_000  # the next request does not carry the megabyte again
