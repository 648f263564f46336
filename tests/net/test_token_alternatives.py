"""The token view keeps as many alternatives per token as the request asked for.

A server may send more than asked (20 `top_logprobs` per token when 5 were): each one kept cost
~200 bytes, ~4.7 kB per token, and a 400,000-token answer took 1.9 GB. Real sockets: a scripted
server on 127.0.0.1 (`support/hostile.py`) that always sends 20.
"""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from support.hostile import DONE, Reply, chat, hostile_fixture, typed

import streamwidgets as sw

WORDS = ["The", " sea", " is", " calm", " today", "."]


def entry(token: str, logprob: float) -> dict:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode())}


def alternatives(word: str) -> list[dict]:
    """20 alternatives, the least likely first (a server need not sort them)."""
    others = [entry(f"{word}~{i}", -0.1 * (i + 1)) for i in range(19)]
    return list(reversed([entry(word, -0.05), *others]))


def chunk_with_logprobs(word: str) -> bytes:
    logprobs = {"content": [{**entry(word, -0.05), "top_logprobs": alternatives(word)}]}
    choice = {"index": 0, "delta": {"content": word}, "logprobs": logprobs, "finish_reason": None}
    obj = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return f"data: {json.dumps(obj)}\n\n".encode()


def responses_delta(word: str) -> bytes:
    logprobs = [{**entry(word, -0.05), "top_logprobs": alternatives(word)}]
    return typed("response.output_text.delta", item_id="msg_1", delta=word, logprobs=logprobs)


def _replies() -> dict[str, Reply]:
    completed = typed("response.completed", response={"id": "r", "status": "completed", "usage": {}})
    return {
        "/twenty/v1/chat/completions": Reply((*map(chunk_with_logprobs, WORDS), chat(finish="stop"), DONE)),
        "/twenty/v1/responses": Reply((*map(responses_delta, WORDS), completed)),
    }


server = hostile_fixture(_replies)


def kept(state: sw.StreamState) -> list[int]:
    return [len(token.top) for token in state.tokens]


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("asked", [5, 1, 0])
def test_no_more_alternatives_are_kept_than_were_asked_for(server, api, asked):
    state = asyncio.run(sw.arun("hi", base_url=server.url("twenty"), api=api, model="m", api_key="k", logprobs=asked))
    assert state.status == "complete" and state.text == "".join(WORDS)
    sent = server.visit(f"/twenty/v1/{'chat/completions' if api == 'chat' else 'responses'}").json()
    assert sent["top_logprobs"] == asked
    assert len(state.tokens) == len(WORDS) and kept(state) == [asked] * len(WORDS)
    for token, word in zip(state.tokens, WORDS, strict=True):  # the most likely ones, most likely first
        assert [text for text, _ in token.top] == [word, *(f"{word}~{i}" for i in range(19))][:asked]
        assert math.isclose(token.probability, math.exp(-0.05))


def test_a_recording_replays_with_as_many_alternatives_as_the_answer_kept(server, tmp_path):
    path = tmp_path / "tokens.jsonl"
    live = asyncio.run(sw.arun("hi", base_url=server.url("twenty"), model="m", api_key="k", logprobs=5, record=path))
    assert json.loads(path.read_text().splitlines()[0])["logprobs"] == 5
    for again in (sw.parse(path), sw.run(sw.replay(path, speed=0))):
        assert kept(again) == kept(live) == [5] * len(WORDS) and again.tokens == live.tokens


def test_without_a_number_the_most_are_kept(server):
    state = asyncio.run(sw.arun("hi", base_url=server.url("twenty"), model="m", api_key="k", logprobs=True))
    assert kept(state) == [20] * len(WORDS)
