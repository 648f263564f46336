"""The comm messages widgets would send, counted as ipykernel's Comm sends them: the JSON of each
message's content (data, comm_id, target) and metadata, its binary buffers, and 500 bytes of
Jupyter envelope (header, parent header, signature). One recording comm for the benchmarks that
count widget bytes (`bench_tokens.py`, and `_pyodide_workload.py`, which `bench_pyodide.py` ships
into Pyodide beside this file), installed through the hook a kernel sets, `comm.create_comm`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import comm
from comm.base_comm import BaseComm

#: Bytes of Jupyter envelope counted per comm message.
ENVELOPE = 500


class Wire:
    """`with Wire() as wire:` counts every comm message the widgets send meanwhile."""

    def __init__(self) -> None:
        self.messages = 0
        self.bytes = 0
        self._saved: Callable[..., Any] = comm.create_comm

    def __enter__(self) -> Wire:
        wire = self

        class RecordingComm(BaseComm):
            def publish_msg(
                self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
            ) -> None:
                content = {"data": data or {}, "comm_id": self.comm_id, **keys}
                wire.messages += 1
                wire.bytes += len(json.dumps(content, ensure_ascii=False).encode()) + ENVELOPE
                wire.bytes += len(json.dumps(metadata or {}).encode())
                wire.bytes += sum(len(memoryview(b).cast("B")) for b in buffers or ())

        self._saved = comm.create_comm
        comm.create_comm = RecordingComm
        return self

    def __exit__(self, *exc: object) -> None:
        comm.create_comm = self._saved
