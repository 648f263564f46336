"""One row per scenario: the tables and the model list come from the rows, building a script
changes nothing, and a script costs the same memory whatever its length."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import tracemalloc
from pathlib import Path

import httpx
import pytest

import streamwidgets.server as server_package
from streamwidgets.server import FLAVORS, scripted_answer
from streamwidgets.server.demo._errors import scripted_rejection
from streamwidgets.server.demo._models import demo_models
from streamwidgets.server.demo._requests import parse_request
from streamwidgets.server.demo._scenarios import SCENARIOS, TryCounter, build_script, scenarios_table
from streamwidgets.server.demo.apis.chat import chat_stream
from streamwidgets.server.demo.apis.messages import messages_stream
from streamwidgets.server.demo.apis.responses import responses_stream

ROOT = Path(__file__).resolve().parents[3]


def test_the_readme_teachers_table_is_the_rows():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("| model | what the stream does |")
    table = readme[start : readme.index("\n\n", start) + 1]
    assert table == scenarios_table("markdown"), "paste `python -m streamwidgets.server --scenarios-table`"


def test_the_package_docstring_table_is_the_rows():
    doc = server_package.__doc__ or ""
    rule = re.escape("=" * 19 + " ")
    found = re.search(rf"^{rule}=+\n.*?^{rule}=+\n.*?^{rule}=+\n", doc, re.S | re.M)
    assert found is not None
    assert found.group() == scenarios_table("text"), "paste `python -m streamwidgets.server --scenarios-table text`"


def test_the_table_is_printed_by_the_module():
    for args, style in (([], "markdown"), (["text"], "text")):
        out = subprocess.run(
            [sys.executable, "-m", "streamwidgets.server", "--scenarios-table", *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert out.stdout == scenarios_table(style)


def test_every_row_is_served_and_listed(demo_server):
    listed = [m["id"] for m in httpx.get(demo_server.base_url + "/models", timeout=10).json()["data"]]
    assert listed == demo_models()
    assert listed[: len(SCENARIOS)] == list(SCENARIOS) and "demo-http-529" in listed
    table = scenarios_table("markdown")
    for name, row in SCENARIOS.items():
        assert f"| `{name}` | {row.description} |" in table
        script = scripted_answer(name, "How does binary search work?")
        turned_away = row.turned_away is not None
        assert (script.rejection is not None) == turned_away, name
        if not turned_away:
            assert script.pacing.tokens_per_second == row.tokens_per_second
            assert script.pacing.first_token_delay == row.first_token_delay


def test_build_script_is_pure():
    request = parse_request("chat", {"model": "demo-overloaded", "messages": [{"role": "user", "content": "Hi"}]})
    before = repr(request)
    first = build_script(request, now=1.0, nonce="n", tries=1)
    second = build_script(request, now=1.0, nonce="n", tries=1)
    assert repr(request) == before
    assert first.rejection is not None and second.rejection is not None
    assert first.rejection is not second.rejection and first.rejection == second.rejection
    assert first.rejection.retry_after == 1 and "this was try 1" in first.rejection.message
    pristine = scripted_rejection(503)
    assert pristine.retry_after == 1 and "turns away" not in pristine.message
    answered = build_script(request, now=1.0, nonce="n", tries=3)
    assert answered.rejection is None and answered == build_script(request, now=1.0, nonce="n", tries=3)


def test_the_try_counter_follows_the_rows():
    counter = TryCounter()
    overloaded = parse_request("chat", {"model": "demo-overloaded", "messages": [{"role": "user", "content": "Q"}]})
    plain = parse_request("chat", {"model": "demo", "messages": [{"role": "user", "content": "Q"}]})
    assert [counter.try_of(overloaded) for _ in range(4)] == [1, 2, 3, 1]
    assert [counter.try_of(plain) for _ in range(2)] == [1, 1]


def _peak(work) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_long_script_is_lazy():
    # 1e5 tokens (the bound of demo.tokens) once cost ~32 MB before the first byte; now the pieces
    # are made as they are written.
    built = []
    peak = _peak(lambda: built.append(scripted_answer("demo-long", "Write a long tutorial", tokens=100_000)))
    assert peak < 1_000_000, f"building the script allocated {peak:,} bytes"
    script = built[0]
    assert len(script.text_tokens) == 100_000 and script.usage.completion_tokens == 100_000
    for writer in (chat_stream, responses_stream, messages_stream):
        steps = writer(script, FLAVORS["demo"])
        peak = _peak(lambda steps=steps: list(itertools.islice(steps, 5_000)))
        assert peak < 4_000_000, f"{writer.__name__}: the first 5,000 steps allocated {peak:,} bytes"


@pytest.mark.parametrize("tokens", [1, 2, 7, 60, 1_000, 30_000])
def test_a_long_script_has_exactly_its_tokens(tokens: int):
    script = scripted_answer("demo-long", "asyncio", tokens=tokens)
    pieces = list(script.text_tokens)
    assert len(pieces) == len(script.text_tokens) == tokens
    assert "".join(pieces) == script.text
