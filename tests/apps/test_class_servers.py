"""A class past one machine: two model servers behind one gateway, and one of them dies mid-class.

Two `streamwidgets serve-local` processes (the real 135M model, llama.cpp's own server) stand for
two machines; one LiteLLM proxy (its own venv) routes one model name to both, with a key per
student (`benchmarks/class_keys.py`) and the router settings the docs show
(`benchmarks/_class_hub.py` `gateway_config`). Students ask through `provider="litellm"`, each
with their own key. The answers spread over both servers (each server's own `/metrics` counts the
tokens it generated); then one server is killed while answers stream from it: those end with an
error in plain words, their partial text kept, the others finish, and the next questions go to
the server that is left.

It needs both LiteLLM (`scripts/_setup.sh` `setup_litellm`) and the local model
(`setup_local_model`): either missing is a failure, never a skip. Marked `gateway` and `local`;
`scripts/test` runs it once, in its gateway step. The config the docs show is checked against the
one the test runs, in the fast suite.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from support.http import free_port, wait_for_http

import streamwidgets as sw
from streamwidgets import StreamState

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _class_hub import Deployment, Gateway, MissingPart, gateway_config

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
MODEL = "class-model"
#: Every answer exactly this long (`ignore_eos`), so a server's token count says how many it gave.
SHORT = 16
LONG = 160
_COUNTER = re.compile(r"^llamacpp:(tokens_predicted_total|requests_processing)\s+([0-9.e+]+)", re.M)


@dataclass
class Machine:
    name: str
    process: subprocess.Popen[bytes]
    url: str
    key: str

    def counters(self) -> dict[str, float]:
        """The server's own counts (llama.cpp's /metrics): tokens generated, answers in flight."""
        r = httpx.get(f"{self.url}/metrics", headers={"Authorization": f"Bearer {self.key}"}, timeout=10)
        r.raise_for_status()
        return {name: float(value) for name, value in _COUNTER.findall(r.text)}

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """`serve-local` and its model process share the group it was started in: stop both by its PID."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _private_key_file(folder: Path, name: str) -> Path:
    """A key file as a teacher keeps it: mode 0600, in a folder only its owner can enter."""
    path = folder / f"{name}.key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(secrets.token_urlsafe(32) + "\n")
    return path


def test_the_gateway_config_in_the_docs_is_the_one_the_test_runs():
    """docs/classroom.md shows `gateway_config`'s output for two servers, byte for byte."""
    docs = (REPO / "docs" / "classroom.md").read_text()
    heading = "# config.yaml for two GPU servers, as benchmarks/_class_hub.py gateway_config writes it\n"
    shown = docs.split(heading, 1)[1].split("```", 1)[0]
    machines = [
        Deployment(f"http://gpu-{i}.class.internal:8000/v1", f"os.environ/MODEL_KEY_{i}",
                   "openai/Qwen/Qwen2.5-7B-Instruct", f"gpu-{i}")
        for i in (1, 2)
    ]  # fmt: skip
    assert shown == gateway_config("class-model", machines, "os.environ/LITELLM_MASTER_KEY")


@pytest.fixture(scope="module")
def room() -> Iterator[tuple[list[Machine], Gateway]]:
    from streamwidgets.server.local import base_url, find_weights, local_model_missing

    missing = local_model_missing()
    if missing is not None or find_weights("smollm2-135m") is None:  # scripts/test installs both first
        pytest.fail(f"no local model ({missing or 'no SmolLM2-135M'}): `source scripts/_setup.sh; setup_local_model`")
    ARTIFACTS.mkdir(exist_ok=True)
    folder = ARTIFACTS / f"class-servers-{secrets.token_hex(4)}"
    folder.mkdir(mode=0o700)
    machines: list[Machine] = []
    gateway = None
    try:
        for name in ("machine-1", "machine-2"):
            port = free_port()
            key_file = _private_key_file(folder, name)
            with open(folder / f"{name}.log", "wb") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", "streamwidgets", "serve-local", "--model", "smollm2-135m",
                     "--slots", "4", "--port", str(port), "--key-file", str(key_file)],
                    cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                    env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
                )  # fmt: skip
            machines.append(Machine(name, process, base_url(port).removesuffix("/v1"), key_file.read_text().strip()))
        try:
            gateway = Gateway(
                folder,
                MODEL,
                [Deployment(f"{m.url}/v1", m.key, "openai/smollm2-135m", m.name) for m in machines],
                students=12,
            )
        except MissingPart as exc:
            pytest.fail(str(exc))
        for m in machines:
            wait_for_http(f"{m.url}/health", 120, m.process, folder / f"{m.name}.log", key=m.key)
        print(f"gateway ready after {gateway.wait():.1f} s")
        yield machines, gateway
    finally:
        if gateway is not None:
            gateway.stop()
        for m in machines:
            m.stop()
    shutil.rmtree(folder, ignore_errors=True)


async def ask(gateway: Gateway, student: int, question: str, tokens: int) -> StreamState:
    return await sw.arun(
        question,
        provider="litellm",
        model=MODEL,
        base_url=gateway.base_url,
        api_key=gateway.keys[student],
        max_tokens=tokens,
        ignore_eos=True,
        temperature=0.3,
    )


@pytest.mark.gateway
@pytest.mark.local
def test_answers_spread_over_two_servers_and_a_dead_one_ends_its_answers_in_plain_words(room):
    machines, gateway = room
    before = [m.counters()["tokens_predicted_total"] for m in machines]

    # 1. Eight students at once: every answer whole, and both servers gave some of them.
    async def class_asks() -> list[StreamState]:
        return list(await asyncio.gather(*(ask(gateway, i, "Explain recursion", SHORT) for i in range(8))))

    states = asyncio.run(class_asks())
    assert all(s.status == "complete" and s.text for s in states), [s.message for s in states]
    answers = [(m.counters()["tokens_predicted_total"] - b) / SHORT for m, b in zip(machines, before, strict=True)]
    print(f"answers per server: {answers}")
    assert sum(answers) == 8 and min(answers) >= 1, answers

    # A key that is not the class's is refused by the gateway, not passed to a server.
    refused = asyncio.run(
        sw.arun("Hi", provider="litellm", model=MODEL, base_url=gateway.base_url, api_key="sk-class-not-ours")
    )
    assert refused.status == "error" and refused.error is not None and refused.error.http_status == 401

    # 2. Four long answers stream; the server with most of them in flight dies (SIGKILL: the machine is gone).
    async def one_dies() -> tuple[list[StreamState], int, float]:
        seen: dict[int, str] = {}

        async def student(i: int) -> StreamState:
            async with sw.astream(
                "Tell a long story about a cat",
                provider="litellm", model=MODEL, base_url=gateway.base_url, api_key=gateway.keys[i],
                max_tokens=LONG, ignore_eos=True, temperature=0.3,
            ) as events:  # fmt: skip
                async for _ in events:
                    seen[i] = events.state.text
            return events.state

        tasks = [asyncio.create_task(student(i)) for i in range(4)]
        deadline = time.monotonic() + 120
        while sum(1 for text in seen.values() if len(text) > 20) < 4:
            assert time.monotonic() < deadline and not any(t.done() for t in tasks), seen
            await asyncio.sleep(0.1)
        in_flight = [m.counters()["requests_processing"] for m in machines]
        victim = max(range(2), key=lambda i: in_flight[i])
        os.killpg(machines[victim].process.pid, signal.SIGKILL)  # serve-local and its model process
        killed = time.monotonic()
        states = await asyncio.wait_for(asyncio.gather(*tasks), 180)
        print(f"in flight when killed: {in_flight}; answers ended {time.monotonic() - killed:.1f} s after")
        return states, int(in_flight[victim]), killed

    states, cut, _ = asyncio.run(one_dies())
    victim = next(i for i, m in enumerate(machines) if m.process.poll() is not None)
    survivor = machines[1 - victim]
    broken = [s for s in states if s.status == "error"]
    assert cut >= 1 and len(broken) == cut, [s.message for s in states]
    for s in broken:
        assert s.text  # the partial answer is kept...
        assert s.message.startswith(  # ...and the student reads what happened and what to do
            "The provider reported an error: The class gateway (LiteLLM) lost its connection to the model "
            "server behind it (the server stopped or cannot be reached). Ask again"
        ), s.message
        assert s.message.endswith("is kept.") and "Exception" not in s.message and gateway.keys[0] not in s.message
    assert all(s.status == "complete" and s.completion_tokens[0] == LONG for s in states if s.status != "error")

    # 3. The next questions go to the server that is left (the dead one is cooled down or retried past).
    left_before = survivor.counters()["tokens_predicted_total"]

    async def next_questions() -> list[StreamState]:
        return list(await asyncio.gather(*(ask(gateway, 8 + i, "What is a prime number?", SHORT) for i in range(4))))

    after = asyncio.run(next_questions())
    assert all(s.status == "complete" and s.text and s.retry is None for s in after), [s.message for s in after]
    assert survivor.counters()["tokens_predicted_total"] - left_before == 4 * SHORT
