"""Recordings a person edited, or made to hurt, through `parse()`: sans-IO.

A recording is JSON Lines anyone can open in an editor. Whatever a line holds — a field of the
wrong type, bytes that are not UTF-8, base64 that is not, a part line after every line — `parse()`
must not raise: each line that does not fit is one warning in the state, the rest of the
recording is read, and an answer of many parts costs memory linear in its size.
"""

from __future__ import annotations

import base64
import json
import tracemalloc
from pathlib import Path
from typing import Any, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamwidgets as sw
from streamwidgets.core._events import ReasoningDelta, TextDelta
from streamwidgets.core._recordings import MAX_PROBLEMS, load_recording
from streamwidgets.core._state import StreamState

HEADER = {"streamwidgets_recording": 1, "provider": "demo", "api": "chat", "model": "demo"}
DONE = b"data: [DONE]\n\n"


def chunk(text: str) -> bytes:
    obj = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}}],
    }
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def read(data: bytes, t: Any = 0.0) -> str:
    return json.dumps({"t": t, "data": base64.b64encode(data).decode()})


Line = Union[str, bytes, dict, list]


def write(path: Path, header: Union[dict, bytes], *lines: Line) -> Path:
    with open(path, "wb") as f:
        for line in (header, *lines):
            if isinstance(line, (dict, list)):
                line = json.dumps(line)
            f.write((line if isinstance(line, bytes) else line.encode()) + b"\n")
    return path


# --------------------------------------------------------------------------- wrong types, line by line


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ({"t": 0.1, "data": 5}, "line 2 of the recording has data that is not base64; it was skipped"),
        ({"t": 0.1, "data": "!!not base64!!"}, "line 2 of the recording has data that is not base64"),
        (
            {"t": 0.1, "status": "five hundred", "data": ""},
            "line 2 of the recording has a status that is no HTTP status",
        ),
        ({"t": 0.1, "status": True, "data": ""}, "has a status that is no HTTP status"),
        ({"t": 0.1, "status": 500, "data": ["x"]}, "has an error body that is not base64"),
        ('"data"', "line 2 of the recording is JSON but not an object (str); it was skipped"),
        ("[1, 2]", "is JSON but not an object (list)"),
        ("not json at all", "line 2 of the recording is not JSON; it was skipped"),
        ("[" * 100_000, "line 2 of the recording is not JSON"),
        (b'{"t": 0.1, "data": "\xff\xfe"}', "line 2 of the recording is not UTF-8 text; it was skipped"),
    ],
)
def test_a_line_that_does_not_fit_is_one_warning_and_the_rest_is_read(tmp_path, line, says):
    path = write(tmp_path / "r.jsonl", HEADER, line, read(chunk("Hello") + chunk(" world") + DONE))
    state = sw.parse(path)
    assert (state.status, state.text) == ("complete", "Hello world")
    assert len(state.warnings) == 1 and says in state.warnings[0], state.warnings


@pytest.mark.parametrize("t", ["soon", None, True, -1, float("nan"), float("inf"), [0.5]])
def test_a_time_that_is_no_number_keeps_its_data_at_the_previous_time(tmp_path, t):
    line = json.dumps({"t": t, "data": base64.b64encode(chunk(" world")).decode()}, allow_nan=True)
    path = write(tmp_path / "r.jsonl", HEADER, read(chunk("Hello"), 0.5), line, read(DONE, 0.7))
    recording = load_recording(path)
    assert [at for at, _ in recording.chunks] == [0.5, 0.5, 0.7]  # never a wait of inf or NaN
    state = sw.parse(path)
    assert (state.status, state.text) == ("complete", "Hello world")
    assert state.warnings == ["line 3 of the recording has a time that is not a number of seconds; its data is kept"]


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("api", 5, "the recording's header field 'api' is not text (int); it was ignored"),
        ("api", "grpc", "names an API streamwidgets does not know ('grpc'"),
        ("provider", ["demo"], "the recording's header field 'provider' is not text (list)"),
        ("provider", "not-a-provider", "names a provider streamwidgets does not know ('not-a-provider')"),
        ("model", {"name": "m"}, "the recording's header field 'model' is not text (dict)"),
        ("recorded_at", 20240101, "the recording's header field 'recorded_at' is not text (int)"),
    ],
)
def test_a_header_field_of_the_wrong_type_is_ignored_with_a_warning(tmp_path, field, value, says):
    path = write(tmp_path / "r.jsonl", {**HEADER, field: value}, read(chunk("Hello") + DONE))
    state = sw.parse(path)
    assert (state.status, state.text) == ("complete", "Hello")
    assert state.model is None or isinstance(state.model, str)
    assert len(state.warnings) == 1 and says in state.warnings[0], state.warnings
    replayed = sw.run(sw.replay(path, speed=0))  # a replay reads the same recording the same way
    assert (replayed.text, replayed.warnings) == (state.text, state.warnings)


def test_a_header_that_is_no_json_or_no_utf8_is_read_without_it(tmp_path):
    broken = write(tmp_path / "a.jsonl", b'{"streamwidgets_recording": 1, "model": ', read(chunk("Hi") + DONE))
    state = sw.parse(broken)
    assert (state.status, state.text) == ("complete", "Hi")
    assert state.warnings == ["line 1 of the recording (its header) is not JSON; it was read without it"]
    latin = write(tmp_path / "b.jsonl", b'{"streamwidgets_recording": 1, "model": "caf\xe9"}', read(chunk("Hi") + DONE))
    state = sw.parse(latin)
    assert (state.status, state.text, state.model) == ("complete", "Hi", "m")  # the stream names its model
    assert len(state.warnings) == 1 and "header is not UTF-8 text" in state.warnings[0]


def test_a_part_that_starts_at_no_number_starts_after_the_whole_answer(tmp_path):
    part = {"streamwidgets_part": 2, "carried": "most of it"}
    path = write(tmp_path / "r.jsonl", HEADER, read(chunk("Hello")), part, read(chunk(" again") + DONE))
    state = sw.parse(path)
    assert (len(state.parts), state.text, state.status) == (2, "Hello again", "complete")
    assert len(state.warnings) == 1 and "line 3 of the recording says where a part starts" in state.warnings[0]


def test_a_million_bad_lines_keep_a_bounded_number_of_warnings(tmp_path):
    lines = ["nope"] * 50_000
    path = write(tmp_path / "r.jsonl", HEADER, *lines, read(chunk("Hi") + DONE))
    recording = load_recording(path)
    assert len(recording.problems) == MAX_PROBLEMS + 1
    assert recording.problems[-1] == f"… and {50_000 - MAX_PROBLEMS:,} more lines of the recording that did not fit"
    state = sw.parse(path)
    assert (state.status, state.text) == ("complete", "Hi") and len(state.warnings) == MAX_PROBLEMS + 1


# --------------------------------------------------------------------------- a Messages index that is no number


def test_a_messages_index_that_is_a_list_is_a_warning_and_the_text_of_the_same_read_is_kept():
    def event(obj: dict) -> bytes:
        return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n".encode()

    body = b"".join(
        [
            event({"type": "message_start", "message": {"id": "msg", "model": "claude", "usage": {}}}),
            event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}),
            event({"type": "content_block_start", "index": [1], "content_block": {"type": "tool_use", "id": "t"}}),
            event(
                {
                    "type": "content_block_delta",
                    "index": [1],
                    "delta": {"type": "input_json_delta", "partial_json": "{}"},
                }
            ),
            event(
                {"type": "content_block_delta", "index": {"i": 0}, "delta": {"type": "text_delta", "text": " there"}}
            ),
            event({"type": "message_stop"}),
        ]
    )
    state = sw.parse(body)  # one read: everything before and after the bad events is kept
    assert (state.status, state.text, state.tool_calls) == ("complete", "Hello there", [])
    assert state.warnings == [
        "a tool call came with a content block index that is not a whole number and was skipped",
        "a tool call's arguments came with a content block index that is not a whole number and was skipped",
    ]


def test_an_event_no_reader_foresaw_is_a_warning_and_the_stream_goes_on(monkeypatch):
    from streamwidgets.core.dialects import ChatDialect

    real = ChatDialect.translate

    def fussy(self, sse):
        if "boom" in sse.data:
            raise TypeError("a shape nobody foresaw")
        return real(self, sse)

    monkeypatch.setattr(ChatDialect, "translate", fussy)
    state = sw.parse(chunk("Hello") + chunk("boom") + chunk(" world") + DONE, api="chat")
    assert (state.status, state.text) == ("complete", "Hello world")
    assert state.warnings == ["an event could not be read (TypeError) and was skipped"]


# --------------------------------------------------------------------------- many parts, linear memory


def many_parts(path: Path, parts: int, text: str = "") -> Path:
    """A recording of `parts` parts: each one part line (and, with `text`, one read of it)."""
    with open(path, "w") as f:
        f.write(json.dumps(HEADER) + "\n" + read(chunk("Start. ")) + "\n")
        body = read(chunk(text)) + "\n" if text else ""
        for n in range(2, parts + 1):
            f.write(json.dumps({"streamwidgets_part": n}) + "\n" + body)
    return path


@pytest.mark.parametrize("text", ["", "word "], ids=["one line per part", "a word per part"])
def test_a_recording_of_thirty_thousand_parts_costs_linear_memory(tmp_path, text):
    """Each part copied every earlier part (and the answer so far) into itself: 30,000 one-line
    parts (750 kB) exhausted 3 GB. A bound, not a timing."""
    n = 30_000
    path = many_parts(tmp_path / "parts.jsonl", n, text)
    tracemalloc.start()
    try:
        state = sw.parse(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200_000_000, f"{n:,} parts took {peak:,} bytes at the peak"
    assert len(state.parts) == n and len(state.earlier) == n - 1 and state.part_number == n
    assert state.text == "Start. " + text * (n - 1) and state.text_length == len(state.text)
    parts = list(state.parts)
    assert parts[0].text == "Start. " and parts[-1] is state and state.parts[-2] is parts[-2]
    assert parts[n // 2].text == "Start. " + text * (n // 2)


def test_parts_after_a_thousand_citations_share_them(tmp_path):
    """Each part copied the citations so far: a first part citing 1,000 pages, then 30,000 empty
    parts (a 1 MB recording), took 1.4 GB. A part shares them until it finds one of its own."""
    n = 30_000
    pages = [{"url": f"https://example.org/{i}", "title": f"Page {i}"} for i in range(1000)]
    sources = b"data: " + json.dumps({"id": "c1", "object": "venym.sources", "sources": pages}).encode() + b"\n\n"
    with open(tmp_path / "cited.jsonl", "w") as f:
        f.write(json.dumps(HEADER) + "\n" + read(chunk("See [1].") + sources) + "\n")
        f.write("".join(json.dumps({"streamwidgets_part": i}) + "\n" for i in range(2, n)))
        f.write(json.dumps({"streamwidgets_part": n}) + "\n" + read(sources.replace(b"/1", b"/new1")) + "\n")
    tracemalloc.start()
    try:
        state = sw.parse(tmp_path / "cited.jsonl")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200_000_000, f"{n:,} parts after 1,000 citations took {peak:,} bytes at the peak"
    assert len(state.parts) == n and state.text == "See [1]."
    first, middle = state.parts[0], state.parts[n // 2]
    assert len(first.citations) == len(middle.citations) == 1000 and middle.citations == first.citations
    assert len(state.citations) == 1000 and state.citations.refused == 111  # the last part's own, past the limit
    assert len(first.citations) == 1000, "a later part's citations changed an earlier part's"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text("ab", max_size=4),  # the part's own text
            st.text("xy", max_size=2),  # its own reasoning
            st.sampled_from(["whole", "keep", "prefix", "more", "other"]),  # how the next part carries it
            st.integers(0, 12),
            st.sets(st.integers(0, 8), max_size=3),  # parts read now (builds and hands on what is held)
        ),
        min_size=1,
        max_size=8,
    )
)
def test_linked_parts_read_as_copied_parts_would(steps):
    """Each part links to the one before and keeps only its own text; read in any order, every
    part's text and reasoning are what copying the answer so far into each part gave."""
    state, texts, reasonings = StreamState(), [], []
    carried_text = carried_reasoning = ""
    for own, thought, how, n, reads in steps:
        if own:
            state.apply(TextDelta(own))
        if thought:
            state.apply(ReasoningDelta(thought))
        texts.append(carried_text + own)
        reasonings.append(carried_reasoning + thought)
        for i in sorted(reads):
            if i < len(texts):
                part = state.parts[i]
                assert (part.text, part.reasoning) == (texts[i], reasonings[i])
        whole = texts[-1]
        if how == "whole":
            state, carried_text = state.next_part(), whole
        elif how == "keep":
            state, carried_text = state.next_part(keep=n), whole[:n]
        else:
            given = {"prefix": whole[:n], "more": whole + "\n\n", "other": "z" * n}[how]
            state, carried_text = state.next_part(given), given
        carried_reasoning = reasonings[-1]
    texts.append(carried_text)
    reasonings.append(carried_reasoning)
    assert state.part_number == len(state.parts) == len(texts)
    for part, text, reasoning in zip(state.parts, texts, reasonings, strict=True):
        assert (part.text, part.text_length, part.reasoning, part.reasoning_length) == (
            text,
            len(text),
            reasoning,
            len(reasoning),
        )
