"""A real kernel for the classroom tests (the magic, compare, retry, the class log): the harness
of `test_kernel.py`, with `streamwidgets` imported as `sw` and the demo server's URL as `BASE`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from test_kernel import Kernel
from test_kernel import running_kernel as kernel_with

from streamwidgets.server import DemoServer

__all__ = ["Kernel", "running_kernel", "sent_values"]


def running_kernel(home: Path, demo_server: DemoServer, setup: str = "") -> Iterator[Kernel]:
    yield from kernel_with(home, f"import streamwidgets as sw\nBASE = {demo_server.base_url!r}\n{setup}")


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
