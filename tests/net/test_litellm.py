"""The class gateway: a real LiteLLM proxy on loopback in front of the embedded provider.

The proxy runs from its own venv (`scripts/_setup.sh` `setup_litellm`, outside the repo: LiteLLM's
pins would fight the project's), started here on a free port and stopped by its PID. Chat,
Responses, Messages and Gemini's native API (LiteLLM's Google route), and chat translated by
LiteLLM into Gemini's, stream through it with `provider="litellm"` and the text and usage intact; a model over its budget gets LiteLLM's own error, in plain words, and is not retried.

Offline, budgets are per deployment (kept in the proxy's memory): LiteLLM's per-student virtual
keys need its Postgres database through Prisma, whose engines are fetched from a host outside the
package registries on first use, so they cannot be set up here (see docs/classroom.md).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.http import free_port, wait_for_http

from streamwidgets import arun
from streamwidgets.server import DemoServer, scripted_answer

pytestmark = pytest.mark.gateway

VENV = Path(os.environ.get("SW_LITELLM_VENV", Path.home() / ".cache" / "streamwidgets" / "litellm-venv"))
MASTER_KEY = "sk-teacher-TEST-0123456789"
PROMPT = "Explain recursion"


def _config(upstream: str) -> str:
    root = upstream.removesuffix("/v1")
    return f"""
model_list:
  - model_name: demo
    litellm_params: {{model: openai/demo, api_base: "{upstream}", api_key: upstream-demo}}
  - model_name: demo-claude
    litellm_params: {{model: anthropic/demo, api_base: "{root}", api_key: upstream-demo}}
  - model_name: demo-tools
    litellm_params: {{model: openai/demo-tools, api_base: "{upstream}", api_key: upstream-demo}}
  - model_name: demo-tools-claude
    litellm_params: {{model: anthropic/demo-tools, api_base: "{root}", api_key: upstream-demo}}
  - model_name: demo-gemini
    litellm_params: {{model: gemini/demo, api_base: "{upstream}", api_key: upstream-demo}}
  - model_name: demo-tools-gemini
    litellm_params: {{model: gemini/demo-tools, api_base: "{upstream}", api_key: upstream-demo}}
  - model_name: demo-paid
    litellm_params:
      model: openai/demo
      api_base: "{upstream}"
      api_key: upstream-demo
      input_cost_per_token: 0.001
      output_cost_per_token: 0.001
      max_budget: 0.1
      budget_duration: 1d
general_settings:
  master_key: {MASTER_KEY}
"""


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory, demo_server: DemoServer) -> Iterator[str]:
    litellm = VENV / "bin" / "litellm"
    if not litellm.exists():  # scripts/test installs it before any test runs
        pytest.fail(f"no LiteLLM proxy at {litellm}: `source scripts/_setup.sh; setup_litellm` installs it")
    home = tmp_path_factory.mktemp("litellm")
    (home / "config.yaml").write_text(_config(demo_server.base_url))
    port = free_port()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": "127.0.0.1,localhost"}
    log = open(home / "proxy.log", "wb")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        [str(litellm), "--config", str(home / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)],
        cwd=home,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    started = time.monotonic()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(f"{url}/health/liveliness", 240, process, home / "proxy.log")
        print(f"LiteLLM proxy ready after {time.monotonic() - started:.1f} s")
        yield f"{url}/v1"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


@pytest.fixture()
def student(proxy: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """What a student's notebook has: the gateway's address and a key — never the teacher's real one."""
    monkeypatch.setenv("LITELLM_BASE_URL", proxy)
    monkeypatch.setenv("LITELLM_API_KEY", MASTER_KEY)
    return proxy


@pytest.mark.parametrize(
    ("api", "model"),
    [
        ("chat", "demo"),
        ("responses", "demo"),
        ("messages", "demo-claude"),
        ("gemini", "demo-gemini"),  # Google's own route, /v1beta/models/{model}:streamGenerateContent
        ("chat", "demo-gemini"),  # LiteLLM's Gemini provider, translating chat to Google's API
    ],
)
def test_each_api_streams_through_the_gateway_with_text_and_usage_intact(student: str, api: str, model: str):
    state = asyncio.run(arun(PROMPT, provider="litellm", model=model, api=api))
    expected = scripted_answer("demo", PROMPT)
    assert state.status == "complete", state.message
    assert state.text == expected.text
    assert state.usage is not None and state.usage.completion_tokens == expected.usage.completion_tokens
    assert state.usage.prompt_tokens is not None and state.usage.prompt_tokens > 0
    assert state.time_to_first_token is not None and state.retry is None


def test_a_model_over_its_budget_gets_litellms_own_error_in_plain_words(student: str):
    first = asyncio.run(arun(PROMPT, provider="litellm", model="demo-paid"))
    assert (
        first.status == "complete"
        and first.usage is not None
        and first.usage.cost == pytest.approx((first.usage.prompt_tokens + first.usage.completion_tokens) * 0.001)
    )
    over = asyncio.run(arun(PROMPT, provider="litellm", model="demo-paid"))
    assert over.status == "error" and over.error is not None and over.error.http_status == 429
    # A spent budget is not retried, though it comes as a 429: waiting does not refill it.
    assert over.retry is None and "budget" in over.message.lower()
    assert over.message.startswith("The provider reported an error: No deployments available - crossed budget")
    assert MASTER_KEY not in over.message


def get_weather(city: str) -> dict:
    """The current weather in a city."""
    return {"city": city, "temperature": 17, "unit": "celsius"}


@pytest.mark.parametrize(
    ("api", "model"),
    [
        ("chat", "demo-tools"),
        ("responses", "demo-tools"),
        ("messages", "demo-tools-claude"),
        ("gemini", "demo-tools-gemini"),
        ("chat", "demo-tools-gemini"),
    ],
)
def test_the_tool_loop_runs_through_the_gateway(student: str, api: str, model: str):
    """LiteLLM translates the tools field and the result turns of each API; the loop runs the
    calls and the model answers from their results."""
    state = asyncio.run(
        arun("Weather in Paris and Tokyo?", provider="litellm", model=model, api=api, tools=[get_weather])
    )
    assert state.status == "complete", state.message
    assert len(state.parts) == 2 and state.parts[0].finish == "tool_calls"
    calls = state.parts[0].tool_calls
    assert [c.name for c in calls] == ["get_weather", "get_weather"]
    assert all(c.result is not None and c.result.status == "done" for c in calls)
    assert "Paris" in state.part_text and "17" in state.part_text
