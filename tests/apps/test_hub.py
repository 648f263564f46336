"""A class on a real JupyterHub, on loopback: three students run the classroom notebook at once.

The real parts, each in its own process (`benchmarks/_class_hub.py`, which `bench_class.py`
measures with 10 and 30): JupyterHub with configurable-http-proxy (SimpleLocalProcessSpawner, the
dummy authenticator, students and servers made through its REST API), one LiteLLM proxy as the
class gateway with a key per student, and the embedded provider behind it. Each student's kernel
runs `benchmarks/class_notebook.ipynb` over the kernel websocket, through the hub's proxy, as
JupyterLab does. A missing part (`scripts/_setup.sh` `setup_litellm`, `setup_hub`) is a failure.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _class_hub import MODEL, PROMPT, Answer, ClassHub, MissingPart

from streamwidgets.server import scripted_answer

pytestmark = pytest.mark.hub

STUDENTS = 3


async def teach(hub: ClassHub) -> dict[str, Any]:
    """Start the servers while the gateway starts, then run the notebook in every kernel at once."""
    started = time.monotonic()
    students = await hub.admit(list(hub.roster))
    print(f"servers ready after {time.monotonic() - started:.1f} s")
    await asyncio.to_thread(hub.gateway_ready)
    print(f"gateway ready after {time.monotonic() - started:.1f} s")
    provider = hub.provider.removesuffix("/v1")
    async with httpx.AsyncClient(timeout=30) as client:
        before = (await client.get(f"{provider}/_demo/connections")).json()  # the gateway's warm-up
        run = await hub.run_class(students)
        since = {"after": before[-1]["id"]} if before else {}
        after = (await client.get(f"{provider}/_demo/connections", params=since)).json()
        refused = await client.post(
            f"{hub.gateway}/chat/completions",
            json={"model": MODEL, "messages": [{"role": "user", "content": PROMPT}]},
            headers={"Authorization": "Bearer sk-class-not-one-of-ours"},
        )
    print(f"class run in {run.seconds:.1f} s")
    frames = {s.name: list(s.channel.received) for s in students if s.channel is not None}
    return {"run": run, "upstream": after, "refused": refused, "frames": frames}


def test_three_students_stream_their_answers_through_the_gateway_and_nothing_is_left_behind(tmp_path: Path):
    hub = ClassHub(tmp_path / "class", STUDENTS)
    try:
        try:
            took = hub.start()
        except MissingPart as exc:
            pytest.fail(str(exc))
        print(f"hub answered after {took['hub']:.1f} s")
        outcome = asyncio.run(teach(hub))
    finally:
        stopping = time.monotonic()
        left = hub.close()
        print(f"stopped in {time.monotonic() - stopping:.1f} s")

    expected = scripted_answer(MODEL, PROMPT)
    answers: list[Answer] = outcome["run"].answers
    assert len(answers) == STUDENTS
    for a in answers:
        assert a.ok, (a.student, a.probe.get("status"), a.probe.get("message"), [c.traceback for c in a.cells])
        assert a.probe["text"] == expected.text and a.probe["tokens"] == expected.usage.completion_tokens
        # Through the gateway, live: the kernel's request went to LITELLM_BASE_URL, not to an offline demo.
        assert a.probe["base_url"] == hub.gateway and a.probe["origin"] == "live" and a.probe["offline_note"] is None
        # The spawner gave each student their own key; no frame the browser got ever carried it.
        key = hub.roster[a.student]
        assert a.probe["key_sha256"] == hashlib.sha256(key.encode()).hexdigest()
        assert not any(key in frame for frame in outcome["frames"][a.student])
        assert a.widget_updates > 0  # the view streamed into the notebook, update by update
    assert len({a.probe["key_sha256"] for a in answers}) == STUDENTS
    # The provider behind the gateway streamed each answer whole, once per student.
    upstream = [r for r in outcome["upstream"] if r["path"] == "/v1/chat/completions"]
    assert [r["outcome"] for r in upstream] == ["finished"] * STUDENTS
    assert all(r["tokens_sent"] == expected.usage.completion_tokens for r in upstream)
    # A key that is not the class's gets the gateway's own refusal.
    assert outcome["refused"].status_code == 401 and "not one of the class's keys" in outcome["refused"].text

    # Everything that was started (hub, proxy, servers, kernels, gateway, provider) stopped by
    # itself at the orderly stop, and nothing with those PIDs runs now.
    roles = sorted({role.split(":")[0] for role, _ in hub.seen.values()})
    assert roles == ["gateway", "hub", "kernel", "provider", "proxy", "server"]
    assert left == [], f"still running after the hub, gateway and provider were stopped: {left}"
    assert hub.running() == []
