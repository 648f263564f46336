"""Continue continues, on every API and every server: the next part is the rest of the answer,
never the answer started again, and the parts meet at a word boundary.

Where the server continues a final assistant turn (llama.cpp's server on Chat, Responses and
Messages; the embedded demo on every API; Messages everywhere) the partial answer is sent as that
turn alone, a prefill; elsewhere it is an assistant turn and a short instruction, and the next
part, a new text, is joined with a space. Real throughout: the embedded provider over loopback,
and llama.cpp's own server from the `[local]` extra (marked `local`: a missing extra fails).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import streamwidgets as sw
from streamwidgets.core import StreamState, TextDelta
from streamwidgets.net import Live, make_request
from streamwidgets.server import DemoServer

FAST = {"tokens_per_second": 0}
QUESTION = "Explain binary search"
APIS = ("chat", "responses", "messages", "gemini")


def test_a_new_part_is_joined_at_a_word_boundary_and_a_prefill_as_it_comes():
    first = StreamState(model="m")
    first.apply(TextDelta("made of tiny particles"))
    for joins, delta, whole in [
        (True, "The answer is", "made of tiny particles The answer is"),
        (True, " which move", "made of tiny particles which move"),
        (True, "\n\nNext", "made of tiny particles\n\nNext"),
        (False, "es", "made of tiny particleses"),  # a prefill's rest: as the model wrote it
    ]:
        following = first.next_part(first.text, joins=joins)
        following.apply(TextDelta(delta))
        following.apply(TextDelta(" more"))
        assert following.text == whole + " more", (joins, delta)
        assert following.part_text == whole[len(first.text) :] + " more"
    spaced = StreamState(model="m")
    spaced.apply(TextDelta("ends in a space "))
    after = spaced.next_part(spaced.text, joins=True)
    after.apply(TextDelta("Then"))
    assert after.text == "ends in a space Then"


@pytest.mark.parametrize("api", APIS)
def test_the_demo_continues_a_cut_answer_on_every_api(api: str, demo_server: DemoServer, tmp_path: Path):
    whole = sw.run(QUESTION, provider="demo", api=api, model="demo", demo=FAST)
    record = tmp_path / "continued.jsonl"
    cut = sw.run(QUESTION, provider="demo", api=api, model="demo-cutoff", demo=FAST, parts=2, record=record)
    assert [p.status for p in cut.parts] == ["incomplete", "complete"], cut.message
    assert cut.text.strip() == whole.text.strip()  # the rest, not the answer again
    again = make_request(QUESTION, provider="demo", api=api, model="demo-cutoff").continued(cut.parts[0].text)
    assert not again.joins  # the demo continues a final assistant turn: a prefill, no instruction
    assert "Continue exactly" not in str(again.body())
    assert sw.parse(record).text == cut.text  # the recording plays both parts back as they were
    # Reached by `base_url=` alone (no preset says it continues a prefill): asked to go on
    # (Messages prefills on every server).
    asked = make_request(QUESTION, api=api, base_url=demo_server.base_url, model="demo-cutoff")
    follow = asked.continued(cut.parts[0].text)
    assert follow.joins == ("Continue exactly" in str(follow.body())) == (api != "messages")
    rest = sw.run(QUESTION, api=api, base_url=demo_server.base_url, model="demo-cutoff", demo=FAST, parts=2)
    assert rest.text.strip() == whole.text.strip() and len(rest.parts) == 2


@pytest.fixture
def local_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.getbasetemp() / "continue-local-state"
    path.mkdir(exist_ok=True)
    monkeypatch.setenv("STREAMWIDGETS_LOCAL_STATE", str(path))
    return path


def junction_is_a_word_boundary(state: StreamState) -> bool:
    """The parts meet between words: white space on one side, or a prefill's rest of a word."""
    before, after = state.parts[0].text, state.part_text
    return bool(after) and (before[-1:].isspace() or after[:1].isspace() or not after[:1].isupper())


@pytest.mark.local
@pytest.mark.parametrize("api", ["chat", "messages"])
def test_the_local_model_continues_its_answer_with_parts(api: str, local_state: Path):
    """`parts=2` after a token-limit cut: greedy decoding from the prefill gives exactly the
    answer one longer part gives (it started again before: "…tiny particlesThe answer…")."""
    question = "What is photosynthesis?"
    one = sw.run(question, provider="local", api=api, max_tokens=40, temperature=0)
    two = sw.run(question, provider="local", api=api, max_tokens=20, temperature=0, parts=2)
    assert len(two.parts) == 2 and two.parts[0].finish == "length", two.message
    assert junction_is_a_word_boundary(two), (two.parts[0].text[-20:], two.part_text[:20])
    assert two.text == one.text
    assert not two.part_text.strip().startswith(two.parts[0].text.split()[0])  # not started again


@pytest.mark.local
def test_the_local_model_continues_over_responses(local_state: Path):
    """llama.cpp's Responses says `completed` for a token-limit cut (so nothing offers Continue
    by itself), but a continued request continues there too: a `message` item it accepts."""
    question = "What is photosynthesis?"
    one = sw.run(question, provider="local", api="responses", max_tokens=40, temperature=0)
    first = sw.run(question, provider="local", api="responses", max_tokens=20, temperature=0)
    request = make_request(question, provider="local", api="responses", max_tokens=20, temperature=0)
    rest = sw.run(Live(request.continued(first.text)))
    assert rest.status == "complete", rest.message
    assert (first.text.rstrip() + rest.text) == one.text
    assert os.environ.get("STREAMWIDGETS_LOCAL_STATE")
