"""The offline stand-in is the local model when the `[local]` extra is installed: with no key
(a preset whose key variable is unset, or no provider at all) the question goes to
SmolLM2-135M-Instruct in its own process, and every sink says so; `STREAMWIDGETS_OFFLINE=demo`,
the scenario models and `provider="demo"` keep the scripted demo; `provider="local"` asks for the
model by name; without the extra, the scripted demo answers as before and `provider="local"`
fails with the install line in the state.

Real throughout: the model's own process on 127.0.0.1, the embedded provider, real sockets. The
test suite sets `STREAMWIDGETS_OFFLINE=demo` (tests/conftest.py); these tests lift it. A missing
extra fails them, never skips them.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import streamwidgets as sw
from streamwidgets.core import StreamState
from streamwidgets.core._formatting import local_note
from streamwidgets.net import as_source
from streamwidgets.net._request import OFFLINE_ENV
from streamwidgets.server._local import MISSING_MESSAGE
from streamwidgets.widgets._view import view_for

pytestmark = pytest.mark.local

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What is a closure?"
MODEL = "smollm2-135m-instruct"


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No key for openai, and the choice of stand-in left to the package (the suite forces the demo)."""
    monkeypatch.delenv(OFFLINE_ENV, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return monkeypatch


def arun(prompt: Any = QUESTION, **options: Any) -> StreamState:
    return asyncio.run(sw.arun(prompt, **options))


def header(prompt: str = QUESTION, **options: Any) -> str:
    """The header a view of this question shows before any token (its badge and its note)."""
    view = view_for(as_source(prompt, **options))
    view.refresh(0.0)
    return str(view.header.widget.value)


def assert_the_local_model_answered(state: StreamState) -> None:
    assert state.status == "complete", state.message
    assert state.text.strip()
    assert state.provider == "local" and state.model == MODEL and state.origin == "live"
    assert state.script is None  # no lesson was played
    assert state.usage is not None and state.usage.completion_tokens


def test_no_key_and_the_extra_installed_the_local_model_answers_and_says_so(offline):
    state = arun(provider="openai", max_tokens=24)
    assert_the_local_model_answered(state)
    note = local_note("openai", "OPENAI_API_KEY")
    assert state.warnings == [note]  # run()/arun() show no badge: the state says it
    assert "no OPENAI_API_KEY is set for openai" in note and "often wrong" in note
    html = header(provider="openai")
    assert '<span class="sw-badge">local model</span>' in html and "SmolLM2-135M running on this machine" in html
    assert "scripted demo" not in html


def test_no_provider_at_all_the_local_model_answers(offline):
    state = arun(max_tokens=16)
    assert_the_local_model_answered(state)
    assert state.warnings == [local_note()]
    assert '<span class="sw-badge">local model</span>' in header()


def test_the_conversation_and_the_model_options_reach_the_local_model(offline):
    conversation = [
        {"role": "system", "content": "You answer in one short sentence."},
        {"role": "user", "content": "Name a color."},
    ]
    first = arun(conversation, temperature=0, seed=7, max_tokens=12)
    again = arun(conversation, temperature=0, seed=7, max_tokens=12)
    assert_the_local_model_answered(first)
    assert first.text == again.text  # greedy: the same answer, so the options reached the model


def test_streamwidgets_offline_demo_keeps_the_scripted_demo(offline):
    offline.setenv(OFFLINE_ENV, "demo")
    state = arun(provider="openai", demo={"tokens_per_second": 0, "first_token_delay": 0})
    assert state.status == "complete" and state.origin == "offline demo"
    assert state.script == "closures"  # the lesson the demo played, not a model's answer
    assert any("no OPENAI_API_KEY is set" in w for w in state.warnings)
    html = header(provider="openai")
    assert '<span class="sw-badge">scripted demo</span>' in html and "local model" not in html


@pytest.mark.parametrize(
    "options",
    [{"provider": "demo"}, {"model": "demo-markdown"}, {"model": "demo"}, {"provider": "openai", "offline": True}],
    ids=["provider=demo", "a scenario model", "model=demo", "offline=True"],
)
def test_the_scenarios_and_the_imitations_stay_the_scripted_demo(offline, options):
    state = arun(**options, demo={"tokens_per_second": 0, "first_token_delay": 0})
    assert state.status == "complete" and state.origin == "offline demo" and state.provider != "local"
    assert state.script  # the demo named what it played
    assert '<span class="sw-badge">scripted demo</span>' in header(**options)


def test_what_the_local_model_cannot_do_goes_to_the_scripted_demo(offline):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    assert as_source("Weather in Paris and Rome?", provider="openai", tools=tools).labels().badge == "scripted demo"
    assert as_source(QUESTION, provider="anthropic").labels().badge == "scripted demo"  # Messages: not served
    assert as_source(QUESTION, provider="openai", api="responses").labels().badge == "scripted demo"


def test_provider_local_asks_for_the_local_model_by_name(monkeypatch):
    monkeypatch.setenv(OFFLINE_ENV, "demo")  # even where the demo is the stand-in, the name wins
    state = arun(provider="local", max_tokens=16, include_usage=True)
    assert_the_local_model_answered(state)
    assert state.warnings == []  # asked for by name: nothing stands in for anything
    html = header(provider="local")
    assert '<span class="sw-badge">local model</span>' in html and local_note() in html


def test_show_in_a_terminal_streams_the_local_model_and_says_so(offline):
    async def show() -> tuple[StreamState, str]:
        out = io.StringIO()
        state = await sw.show(QUESTION, provider="openai", out=out, max_tokens=24)
        return state, out.getvalue()

    state, printed = asyncio.run(show())
    assert_the_local_model_answered(state)
    assert state.text.strip()[:20] in printed
    assert f"({local_note('openai', 'OPENAI_API_KEY')})" in printed
    assert "scripted" not in printed


def python(code: str) -> dict[str, Any]:
    """Run `code` in a fresh interpreter (nothing of this process's model or modules) and read
    the JSON it prints last."""
    env = {k: v for k, v in __import__("os").environ.items() if k not in (OFFLINE_ENV, "OPENAI_API_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=str(ROOT),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_the_extra_the_scripted_demo_answers_and_provider_local_says_how_to_install():
    seen = python(
        """
        import json, sys
        sys.modules["llama_cpp"] = None  # as if the extra were not installed
        import streamwidgets as sw
        plain = sw.run("What is a closure?", provider="openai", demo={"tokens_per_second": 0})
        local = sw.run("What is a closure?", provider="local")
        print(json.dumps({
            "plain": [plain.status, plain.origin, plain.script, plain.provider],
            "local": [local.status, local.message, local.text],
        }))
        """
    )
    assert seen["plain"] == ["complete", "offline demo", "closures", "openai"]
    status, message, text = seen["local"]
    assert status == "error" and text == ""
    assert MISSING_MESSAGE in message and "\n" not in message and "Traceback" not in message


def test_starting_the_local_model_leaves_the_event_loop_free():
    """The first stream starts the model's process (a second or two of loading): the loop must
    keep running meanwhile (widgets draw, other cells run), so the start happens in a thread."""
    seen = python(
        """
        import asyncio, json
        import streamwidgets as sw
        from streamwidgets.server import _local

        async def main():
            ticks = {"while_starting": 0}
            done = asyncio.Event()

            async def ticker():
                while not done.is_set():
                    if _local._lock.locked() and _local._current is None:
                        ticks["while_starting"] += 1
                    await asyncio.sleep(0.01)

            task = asyncio.create_task(ticker())
            state = await sw.arun("Name a color.", provider="local", max_tokens=5)
            done.set()
            await task
            return state.status, ticks["while_starting"]

        status, ticks = asyncio.run(main())
        print(json.dumps({"status": status, "ticks": ticks}))
        """
    )
    assert seen["status"] == "complete"
    assert seen["ticks"] > 0  # the loop ran while the model was loading
