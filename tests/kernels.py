"""The one kernel helper: a real ipykernel of this Python, driven over ZMQ as a frontend drives it.

`running_kernel(home, demo_server, setup)` starts one with its own Jupyter dirs, imports
`streamwidgets as sw` and sets `BASE` to the embedded provider's URL (when one is given), runs
`setup`, and shuts it down after. Buttons are clicked the way the ipywidgets 8 frontend does it (a
`custom` comm message); every iopub message is kept with its arrival time.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from streamwidgets.server import DemoServer

#: The helper every real-kernel test uses; whatever imports it starts a kernel.
pytestmark = pytest.mark.kernel

__all__ = ["SENTINEL", "WIDGET_MIMETYPE", "Kernel", "kernel_env", "kernel_manager", "running_kernel", "sent_values"]

SENTINEL = "sk-test-SENTINEL-0123456789abcdef"
WIDGET_MIMETYPE = "application/vnd.jupyter.widget-view+json"


@dataclass
class Kernel:
    """A real kernel and a client that keeps every iopub message with its arrival time."""

    manager: KernelManager
    client: Any
    log: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    def pump(self, timeout: float = 0.05) -> Optional[dict[str, Any]]:
        try:
            msg = self.client.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            return None
        self.log.append((time.monotonic(), msg))
        return msg

    def execute(
        self, code: str, timeout: float = 60.0, cell_id: Optional[str] = None
    ) -> tuple[str, list[dict[str, Any]], float]:
        """Run a cell; return its stdout, its iopub messages and how long until the reply.
        `cell_id` goes in the request's metadata as `cellId`, as JupyterLab sends it."""
        started = time.monotonic()
        if cell_id is None:
            msg_id = self.client.execute(textwrap.dedent(code), allow_stdin=True)  # as JupyterLab sends it
        else:
            content = {
                "code": textwrap.dedent(code),
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": True,
                "stop_on_error": True,
            }
            msg = self.client.session.msg("execute_request", content, metadata={"cellId": cell_id})
            self.client.shell_channel.send(msg)
            msg_id = msg["header"]["msg_id"]
        reply = self.client.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.client.get_shell_msg(timeout=timeout)
        took = time.monotonic() - started
        mine: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = self.pump(0.1)
            if msg is None or msg["parent_header"].get("msg_id") != msg_id:
                continue
            mine.append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        if reply["content"]["status"] != "ok":
            raise AssertionError("\n".join(reply["content"].get("traceback", [])) or str(reply["content"]))
        stdout = "".join(m["content"]["text"] for m in mine if m["msg_type"] == "stream")
        return stdout, mine, took

    def value(self, expression: str, timeout: float = 60.0) -> Any:
        """The JSON value of an expression evaluated in the kernel (awaits allowed)."""
        stdout, _, _ = self.execute(f"import json as _j; print(_j.dumps({expression}))", timeout)
        return json.loads(stdout.strip().splitlines()[-1])

    def click(self, comm_id: str) -> float:
        """Click a Button exactly as the ipywidgets 8 frontend does; return when it was sent."""
        content = {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}}
        msg = self.client.session.msg("comm_msg", content)
        self.client.shell_channel.send(msg)
        return time.monotonic()

    def set_value(self, comm_id: str, **state: Any) -> None:
        """Change a widget's state as the frontend does when the user types."""
        content = {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}}
        self.client.shell_channel.send(self.client.session.msg("comm_msg", content))


def kernel_manager(home: Path) -> KernelManager:
    """A manager for a kernel of this very Python (whatever `python3` kernelspecs say)."""
    spec_dir = home / "kernels" / "sw-test"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "streamwidgets test",
                "language": "python",
            }
        )
    )
    specs = KernelSpecManager(kernel_dirs=[str(home / "kernels")])
    return KernelManager(kernel_name="sw-test", kernel_spec_manager=specs)


def kernel_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "IPYTHONDIR": str(home / "ipython"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        # The key reaches the kernel the way a real one does, so that no cell's code shows it.
        "SW_TEST_KEY": SENTINEL,
    }


def running_kernel(home: Path, demo_server: Optional[DemoServer] = None, setup: str = "") -> Iterator[Kernel]:
    """A real kernel with its own Jupyter dirs under `home`, with `import streamwidgets as sw` and
    `BASE` (the embedded provider's URL) and then `setup` run in it first; shut down after."""
    base = f"BASE = {demo_server.base_url!r}\n" if demo_server is not None else ""
    setup = f"import streamwidgets as sw\n{base}{setup}"
    manager = kernel_manager(home)
    manager.start_kernel(env=kernel_env(home))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=90)
        k = Kernel(manager, client)
        k.execute(setup)
        yield k
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def sent_values(kernel: Kernel, model_id: str, since: float, trait: str = "value") -> list[Any]:
    """What the browser was sent for one widget's trait, update by update."""
    while kernel.pump(0.1):
        pass
    values = []
    for t, msg in kernel.log:
        if t >= since and msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == model_id:
            state = msg["content"]["data"].get("state", {})
            if trait in state:
                values.append(state[trait])
    return values
