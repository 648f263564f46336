"""A server's state file: what `_host` writes once llama.cpp listens, and what a kernel needs to
trust before it sends the key, a prompt or a signal.

A state names a server by its PID, the PID's start time and uid (so a later process that reused
the PID is not it), its port and key. It is read strictly: a file that is not JSON, or a field
of the wrong type or out of range, makes the whole state stale, to be replaced by a new start.

A server is *ours* only when the system proves it (`proven`): the PID runs as this user, started
when the state says, and holds the socket listening on the port. Only then is the key sent (and
the server must answer it), and only then may a kernel signal the PID.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from typing import Any, Optional

from ._pids import PROC, listens_on, owner, pid_alive, start_time

__all__ = ["ServerState", "proven"]

_KEY = re.compile(r"[\x21-\x7e]{16,256}")  # printable, no space: a bearer token
_PID_MAX = 2**22  # Linux's largest pid_max


@dataclass(frozen=True)
class ServerState:
    pid: int
    #: /proc/PID/stat's start time (clock ticks since boot); 0 where the system has no /proc.
    start: int
    uid: int
    port: int
    key: str
    weights: str
    alias: str
    threads: int
    slots: int
    ctx: int
    supports_tools: bool
    load_seconds: float = 0.0

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode("utf-8")

    @classmethod
    def parse(cls, data: Optional[bytes]) -> Optional[ServerState]:
        """The state in `data`, or None when it is missing or does not validate."""
        try:
            raw: Any = json.loads(data) if data else None
        except ValueError:
            return None
        if not isinstance(raw, dict):
            return None
        ints = {"pid": (1, _PID_MAX), "start": (0, 2**62), "uid": (0, 2**32), "port": (1, 65535),
                "threads": (1, 1024), "slots": (1, 4096), "ctx": (1, 2**24)}  # fmt: skip
        for name, (low, high) in ints.items():
            value = raw.get(name)
            if type(value) is not int or not low <= value <= high:
                return None
        if not all(type(raw.get(name)) is str for name in ("key", "weights", "alias")):
            return None
        if not _KEY.fullmatch(raw["key"]) or type(raw.get("supports_tools")) is not bool:
            return None
        load = raw.get("load_seconds", 0.0)
        if type(load) not in (int, float) or not 0 <= load < 1e6:
            return None
        return cls(
            **{name: raw[name] for name in (*ints, "key", "weights", "alias", "supports_tools")},
            load_seconds=float(load),
        )


def this_process(port: int, **fields: Any) -> ServerState:
    """The state of the calling process, a server listening on `port`."""
    pid = os.getpid()
    return ServerState(pid=pid, start=start_time(pid) or 0, uid=_uid(), port=port, **fields)


def proven(state: ServerState, *, listening: bool = True) -> bool:
    """Whether the system proves `state` names a server of this user's: the PID lives, runs as this
    user, started when the state says, and holds the socket listening on the port. `listening=False`
    skips the socket (reading the socket tables costs milliseconds): for a server proven before,
    whose process, the same by its start time, never lets its port go. Without /proc (macOS,
    Windows) the PID's life is all the system tells; the key then decides."""
    if not pid_alive(state.pid) or state.uid != _uid():
        return False
    if not PROC:  # pragma: no cover
        return True
    return (
        owner(state.pid) == state.uid
        and start_time(state.pid) == state.start
        and (not listening or listens_on(state.pid, state.port))
    )


def _uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else 0
