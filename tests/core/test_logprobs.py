"""Token log-probabilities read from every dialect that sends them: the tokens' texts always join
to the answer text, alternatives are kept (bounded), and the limits bound the tokens too."""

from __future__ import annotations

import json
import math

import pytest

import streamwidgets as sw
from streamwidgets.core import Feed, Limits, StreamState, Token
from streamwidgets.core.dialects import ChatDialect, GeminiDialect, MessagesDialect, Normalizer, ResponsesDialect
from streamwidgets.core.dialects._logprobs import check_logprobs, logprob_params


def entry(token: str, logprob: float, top=(), *, with_bytes: bool = True, raw: bytes | None = None) -> dict:
    data = token.encode() if raw is None else raw
    out = {"token": token, "logprob": logprob, "top_logprobs": [entry(t, lp, with_bytes=with_bytes) for t, lp in top]}
    if with_bytes:
        out["bytes"] = list(data)
    return out


def chat_chunk(content: str, entries: list | None) -> bytes:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": None}
    if entries is not None:
        choice["logprobs"] = {"content": entries, "refusal": None}
    obj = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def responses_delta(delta: str, entries: list) -> bytes:
    obj = {"type": "response.output_text.delta", "item_id": "m1", "output_index": 0, "content_index": 0}
    obj.update(delta=delta, logprobs=entries, sequence_number=1)
    return b"event: response.output_text.delta\ndata: " + json.dumps(obj).encode() + b"\n\n"


RESPONSES_END = (
    b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r","model":"m",'
    b'"status":"completed","output":[]}}\n\n'
)
DONE = b"data: [DONE]\n\n"


def test_chat_tokens_join_to_the_text_with_their_alternatives():
    body = (
        chat_chunk("Hello", [entry("Hello", -0.01, [("Hello", -0.01), ("Hi", -4.7)])])
        + chat_chunk(" world!", [entry(" world", -0.3, [(" world", -0.3), (" there", -1.5)]), entry("!", -0.9)])
        + DONE
    )
    state = sw.parse(body)
    assert state.text == "Hello world!"
    assert "".join(t.text for t in state.tokens) == state.text
    assert [t.text for t in state.tokens] == ["Hello", " world", "!"]
    first = state.tokens[0]
    assert first.top == (("Hello", -0.01), ("Hi", -4.7))
    assert 0 < first.probability <= 1 and math.isclose(first.probability, math.exp(-0.01))
    assert state.tokens[2].top == ()
    assert not state.warnings


def test_a_character_split_between_tokens_goes_to_the_token_that_completes_it():
    # "é" is two bytes; a tokenizer may cut between them (OpenAI sends `token` as an escape then).
    raw = "é".encode()
    entries = [entry("caf", -0.1), entry("\\xc3", -0.2, raw=raw[:1]), entry("\\xa9", -0.3, raw=raw[1:])]
    state = sw.parse(chat_chunk("café", entries) + DONE)
    assert [t.text for t in state.tokens] == ["caf", "", "é"]
    assert "".join(t.text for t in state.tokens) == state.text == "café"


def test_tokens_that_do_not_add_up_become_one_token_and_one_warning():
    body = (
        chat_chunk("Hi there", [entry("Hey", -0.5), entry(" you", -0.25)]) + chat_chunk("!", [entry("?", -1.0)]) + DONE
    )
    state = sw.parse(body)
    assert [t.text for t in state.tokens] == ["Hi there", "!"]
    assert math.isclose(state.tokens[0].logprob, -0.75)
    assert "".join(t.text for t in state.tokens) == state.text
    assert sum("did not add up" in w for w in state.warnings) == 1


def test_chat_without_logprobs_has_no_tokens_and_hostile_entries_are_skipped():
    assert sw.parse(chat_chunk("plain", None) + DONE).tokens == ()
    junk = [None, {"token": "x"}, {"token": "x", "logprob": "high"}, {"token": "x", "logprob": float("nan")}]
    state = sw.parse(chat_chunk("x", [*junk, entry("x", 3.0, [("y", True)])]) + DONE)
    assert [t.text for t in state.tokens] == ["x"]
    assert state.tokens[0].logprob == 0.0  # a logprob above 0 is no probability: clamped
    assert state.tokens[0].top == ()


def test_alternatives_are_bounded_and_sorted():
    top = [(f"t{i}", -float(i)) for i in range(30, 0, -1)] + [("x" * 500, -0.5)]
    state = sw.parse(chat_chunk("a", [entry("a", -0.1, top)]) + DONE)
    alternatives = state.tokens[0].top
    assert len(alternatives) <= 20
    assert [lp for _, lp in alternatives] == sorted((lp for _, lp in alternatives), reverse=True)
    assert all(len(text) <= 64 for text, _ in alternatives)


def test_the_whole_chat_completion_body_carries_tokens():
    body = {
        "id": "c",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Yes."},
                "logprobs": {"content": [entry("Yes", -0.05, [("Yes", -0.05), ("No", -3.0)]), entry(".", -0.01)]},
                "finish_reason": "stop",
            }
        ],
    }
    state = sw.parse(json.dumps(body).encode())
    assert state.text == "Yes." and [t.text for t in state.tokens] == ["Yes", "."]


def test_responses_deltas_carry_tokens():
    body = (
        responses_delta("The", [entry("The", -0.2, [("The", -0.2), ("A", -1.8)])])
        + responses_delta(" sky", [entry(" sky", -1.2, [(" sea", -0.9), (" sky", -1.2)])])
        + RESPONSES_END
    )
    state = sw.parse(body)
    assert state.text == "The sky"
    assert [t.text for t in state.tokens] == ["The", " sky"]
    assert state.tokens[1].top[0] == (" sea", -0.9)  # a less likely token was chosen


def test_a_whole_response_object_carries_tokens():
    body = {
        "id": "r",
        "object": "response",
        "model": "m",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "m1",
                "content": [{"type": "output_text", "text": "Ok", "annotations": [], "logprobs": [entry("Ok", -0.1)]}],
            }
        ],
    }
    state = sw.parse(json.dumps(body).encode())
    assert [t.text for t in state.tokens] == ["Ok"]


def test_llama_cpp_style_chunks_without_bytes_read_from_the_token_strings():
    entries = [entry("4", -0.02, [("4", -0.02), ("5", -4.1)], with_bytes=False)]
    state = sw.parse(chat_chunk("4", entries) + DONE)
    assert state.tokens == [Token("4", -0.02, (("4", -0.02), ("5", -4.1)))]


def test_tokens_are_cut_with_the_answer_at_its_limit():
    chunks = [chat_chunk("abcd", [entry("ab", -0.1), entry("cd", -0.2)]) for _ in range(10)]
    state = StreamState()
    feed = Feed(state, Normalizer(), clock=None, limits=Limits(max_answer_chars=10))
    for chunk in chunks:
        feed.push(chunk)
    feed.end()
    assert state.status == "incomplete" and state.text_length == 10
    assert "".join(t.text for t in state.tokens) == state.text[: sum(len(t.text) for t in state.tokens)]
    assert len(state.tokens) == 5


def test_endless_empty_tokens_are_not_all_kept():
    empty = [{"token": "", "logprob": -0.1, "bytes": []}] * 500
    state = sw.parse(chat_chunk("", empty) + chat_chunk("a", [*empty, entry("a", -0.1)]) + DONE)
    assert len(state.tokens) <= 8
    assert "".join(t.text for t in state.tokens) == "a"


def test_each_dialect_asks_in_its_own_words():
    chat = ChatDialect.build_body("m", [{"role": "user", "content": "hi"}], {"logprobs": 5}, include_usage=False)
    assert chat["logprobs"] is True and chat["top_logprobs"] == 5
    native = ChatDialect.build_body("m", [], {"logprobs": True, "top_logprobs": 2}, include_usage=False)
    assert native["logprobs"] is True and native["top_logprobs"] == 2
    responses = ResponsesDialect.build_body("m", [], {"logprobs": 0, "include": ["x"]}, include_usage=False)
    assert responses["include"] == ["x", "message.output_text.logprobs"] and responses["top_logprobs"] == 0
    assert "logprobs" not in responses
    gemini = GeminiDialect.build_body("m", [], {"logprobs": 4, "temperature": 0}, include_usage=False)
    assert gemini["generationConfig"]["responseLogprobs"] is True and gemini["generationConfig"]["logprobs"] == 4
    assert "logprobs" not in gemini
    assert logprob_params({"temperature": 0}, lambda params, n: None) == {"temperature": 0}


@pytest.mark.parametrize("value", [21, -1, 2.5, "5"])
def test_out_of_range_logprobs_are_refused_before_sending(value):
    with pytest.raises(ValueError, match="from 0 to 20"):
        sw.make_request("hi", provider="demo", logprobs=value)


def test_messages_has_no_logprobs_and_says_so():
    with pytest.raises(ValueError, match="Anthropic Messages API: it sends no token log-probabilities"):
        sw.make_request("hi", provider="demo", api="messages", logprobs=3)
    check_logprobs(None, MessagesDialect)  # not asked: nothing to say
