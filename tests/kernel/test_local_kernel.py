"""The local model in a real ipykernel: the model runs in a child process of the kernel, a view
streams its answer, a click on Cancel closes the connection and frees the model, and a kernel
that is shut down leaves no model process behind."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from kernels import running_kernel

pytestmark = [pytest.mark.kernel, pytest.mark.local]

NEVER_END = "{'0': -100, '2': -100, '4': -100}"  # the model's end-of-turn tokens, banned


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_the_local_model_streams_into_a_view_cancel_frees_it_and_no_process_outlives_the_kernel(tmp_path: Path):
    kernels = running_kernel(
        tmp_path, setup="import os\nfrom streamwidgets.server import local_model\nm = local_model()"
    )
    kernel = next(kernels)
    try:
        pid, base_url, name, kernel_pid = kernel.value("[m.pid, m.base_url, m.model, os.getpid()]")
        assert name == "smollm2-135m-instruct"
        assert pid != kernel_pid and parent_of(pid) == kernel_pid  # the model runs beside the kernel, not in it
        root = base_url.removesuffix("/v1")

        status, text, used = kernel.value(
            "[(s := await sw.arun('Name three colors.', base_url=m.base_url, model=m.model, include_usage=True,"
            " max_tokens=40)).status, s.text, s.usage.completion_tokens]"
        )
        assert status == "complete" and text.strip() and 0 < used <= 40

        before = httpx.get(f"{root}/_local/generations").json()[-1]["id"]
        kernel.execute(
            "h = sw.show('Write a long story about a dragon.', base_url=m.base_url, model=m.model,"
            f" max_tokens=2000, logit_bias={NEVER_END})"
        )
        deadline = time.monotonic() + 30
        while kernel.value("h.state.text_length") < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        kernel.click(kernel.value("h.view.cancel_button.model_id"))
        state = kernel.value("[(await h).status, h.state.text_length > 0]")
        assert state == ["cancelled", True]

        deadline = time.monotonic() + 30
        records: list[dict] = []
        while time.monotonic() < deadline:
            records = [
                g for g in httpx.get(f"{root}/_local/generations", params={"after": before}).json() if g["ended_at"]
            ]
            if records:
                break
            time.sleep(0.05)
        assert records and records[0]["outcome"] == "client_disconnected"
        assert records[0]["completion_tokens"] < 2000  # the server saw the click and stopped generating
        again = kernel.value("(await sw.arun('Say hello.', base_url=m.base_url, model=m.model, max_tokens=10)).status")
        assert again == "complete"  # the model is free again
    finally:
        kernels.close()  # shuts the kernel down
    assert gone(pid)


def test_with_no_key_a_view_in_a_kernel_streams_the_local_model_and_wears_its_badge(tmp_path: Path):
    """The offline default in a notebook: no key, the extra installed, so `sw.show(question)` starts
    the model beside the kernel on its first stream and the view says which model answered."""
    kernels = running_kernel(
        tmp_path,
        setup="import os\nos.environ.pop('STREAMWIDGETS_OFFLINE', None)\nos.environ.pop('OPENAI_API_KEY', None)",
    )
    kernel = next(kernels)
    try:
        status, provider, text, header, kernel_pid = kernel.value(
            "[(s := await (h := sw.show('What is a closure?', provider='openai', max_tokens=24))).status,"
            " s.provider, s.text, h.view.header.widget.value, os.getpid()]"
        )
        assert status == "complete" and provider == "local" and text.strip()
        assert '<span class="sw-badge">local model</span>' in header
        assert "SmolLM2-135M running on this machine (no OPENAI_API_KEY is set for openai)" in header
        pid = kernel.value("__import__('streamwidgets.server', fromlist=['x']).local_model().pid")
        assert parent_of(pid) == kernel_pid  # started by the first stream, beside the kernel
        demo = kernel.value(
            "[(d := await sw.show('What is a closure?', model='demo-fast', demo={'tokens_per_second': 0})).origin,"
            " d.provider]"
        )
        assert demo == ["offline demo", "demo"]  # a scenario model stays the scripted demo
    finally:
        kernels.close()
    assert gone(pid)
