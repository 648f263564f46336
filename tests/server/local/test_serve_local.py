"""`streamwidgets serve-local` ends with its model server, however it is ended.

A real `serve-local` with the 135M model on a loopback port; each signal a hub's culler, a process
manager, a closed terminal or Ctrl+C sends (and SIGKILL, which no process can catch) must end
the model server within seconds, leave no process behind (read from /proc) and, where the parent
can speak, say so in one line with no traceback. Refusals come before anything starts.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from streamwidgets.server.local import base_url

pytestmark = pytest.mark.local

ROOT = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_local(scratch: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STREAMWIDGETS_LOCAL_STATE": str(scratch / "state")}
    return subprocess.Popen(
        [sys.executable, "-m", "streamwidgets", "serve-local", "--model", "smollm2-135m", *args],
        cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def running(pid: int) -> bool:
    """Whether /proc shows the process, and not as a zombie (which has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(") ", 1)[1][0] != "Z"


def root(port: int) -> str:
    return base_url(port).removesuffix("/v1")


def wait_for_server(scratch: Path, port: int, process: subprocess.Popen[str]) -> int:
    """The model server's PID, once it answers."""
    state = scratch / "state" / f"serve-local-{port}.json"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        if state.exists():
            pid, key = int(json.loads(state.read_text())["pid"]), json.loads(state.read_text())["key"]
            if httpx.get(f"{root(port)}/health", headers={"Authorization": f"Bearer {key}"}).status_code == 200:
                return pid
        time.sleep(0.2)
    raise AssertionError("serve-local's model server did not answer within 90 s")


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT", "SIGKILL"])
def test_every_way_serve_local_ends_ends_its_model_server(scratch: Path, sig: str) -> None:
    port = free_port()
    process = serve_local(scratch, "--port", str(port), "--slots", "1", "--key-file", str(scratch / "class.key"))
    try:
        child = wait_for_server(scratch, port, process)
        assert running(child)
        process.send_signal(getattr(signal, sig))
        status = process.wait(30)
        deadline = time.monotonic() + 15
        while running(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not running(child), f"the model server outlived serve-local's {sig}"
        err = process.communicate()[1]
        if sig == "SIGKILL":
            assert status == -signal.SIGKILL
        else:
            assert status == 0, err
            assert "Traceback" not in err, err
            words = {"SIGTERM": "SIGTERM", "SIGHUP": "SIGHUP (its terminal closed)", "SIGINT": "Ctrl+C"}[sig]
            assert err.strip().splitlines()[-1] == (
                f"streamwidgets serve-local: stopped by {words}, and the model server with it"
            ), err
            assert not (scratch / "state" / f"serve-local-{port}.json").exists()
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{root(port)}/health")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_serve_local_keeps_its_state_out_of_the_class_folder(scratch: Path) -> None:
    """The key file is where the teacher says; the state (with the key) is in the private folder."""
    port = free_port()
    process = serve_local(scratch, "--port", str(port), "--slots", "1")
    try:
        wait_for_server(scratch, port, process)
        assert sorted(p.name for p in scratch.iterdir()) == ["class-model.key", "state"]
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--slots", "100000"], "100,000 slots need at least "),
        (["--key-file", "world.key"], "world.key (the class key) can be read by others (mode 0644; chmod 600 it)"),
        (["--key-file", "link.key"], "link.key (the class key) is a symbolic link"),
    ],
)
def test_serve_local_refuses_in_one_line_before_it_starts(scratch: Path, args: list[str], said: str) -> None:
    (scratch / "world.key").write_text("Zq8-kW3nR5tY7uI9oP1aS2dF4gH6jK0l\n")
    os.chmod(scratch / "world.key", 0o644)
    (scratch / "link.key").symlink_to(scratch / "world.key")
    process = serve_local(scratch, "--port", str(free_port()), *args)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    assert out == "" and len(err.strip().splitlines()) == 1 and said in err, err
    assert not (scratch / "state").exists() or not list((scratch / "state").glob("serve-local-*"))
