"""What the server remembers about each streamed response, so that a test can prove a Cancel.

The server's thread writes records; a test thread (or another process, through
`GET /_demo/connections`) reads copies. `closed_at` is taken the moment the server learns that
the stream ended: for a client that leaves, when its socket reports end-of-file.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, replace
from typing import Any, Optional

__all__ = ["ConnectionRecord", "Registry"]

_KEPT = 10_000


@dataclass
class ConnectionRecord:
    """One streamed response.

    `outcome` is `finished` (the server wrote the whole scripted stream, including a scripted
    cut-off or error), `client_disconnected` (the peer closed mid-stream), `client_not_reading`
    (the peer read nothing for `ServerLimits.write_timeout` seconds and was dropped),
    `server_stopped`, or `open`. `bytes_sent` counts the SSE body bytes (not HTTP framing); `tokens_sent` the
    completion tokens delivered. Times are `time.time()` and, in `*_mono`, `time.monotonic()`.
    """

    id: int
    path: str
    api: str
    flavor: str
    model: str
    scenario: str
    opened_at: float
    opened_at_mono: float
    closed_at: Optional[float] = None
    closed_at_mono: Optional[float] = None
    outcome: str = "open"
    bytes_sent: int = 0
    tokens_sent: int = 0

    @property
    def duration(self) -> Optional[float]:
        return None if self.closed_at_mono is None else self.closed_at_mono - self.opened_at_mono

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Registry:
    """The records of one server, safe to read from any thread; keeps the latest 10,000."""

    def __init__(self) -> None:
        self._records: deque[ConnectionRecord] = deque(maxlen=_KEPT)
        self._by_id: dict[int, ConnectionRecord] = {}
        self._next_id = 1
        self._changed = threading.Condition()

    def open(self, *, path: str, api: str, flavor: str, model: str, scenario: str) -> int:
        with self._changed:
            record = ConnectionRecord(
                id=self._next_id,
                path=path,
                api=api,
                flavor=flavor,
                model=model,
                scenario=scenario,
                opened_at=time.time(),
                opened_at_mono=time.monotonic(),
            )
            self._next_id += 1
            if len(self._records) == self._records.maxlen:
                self._by_id.pop(self._records[0].id, None)
            self._records.append(record)
            self._by_id[record.id] = record
            self._changed.notify_all()
            return record.id

    def progress(self, record_id: int, *, data: int, tokens: int) -> None:
        with self._changed:
            record = self._by_id.get(record_id)
            # A write that was under way when the client left is not part of the stream: the
            # record ended with the disconnect, and its counts with it.
            if record is not None and record.outcome == "open":
                record.bytes_sent += data
                record.tokens_sent += tokens

    def close(self, record_id: int, outcome: str) -> None:
        """End a record; the first call wins, later ones (echoes of the same end) are ignored."""
        mono, wall = time.monotonic(), time.time()
        with self._changed:
            record = self._by_id.get(record_id)
            if record is None or record.outcome != "open":
                return
            record.outcome = outcome
            record.closed_at = wall
            record.closed_at_mono = mono
            self._changed.notify_all()

    def snapshot(self, after: int = 0) -> list[ConnectionRecord]:
        """Copies of the records with an id greater than `after`, oldest first."""
        with self._changed:
            return [replace(r) for r in self._records if r.id > after]

    def wait_for(self, outcome: str, timeout: float, after: int = 0) -> Optional[ConnectionRecord]:
        """The first record after `after` that ended with `outcome`, waiting up to `timeout` s."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for record in self._records:
                    if record.id > after and record.outcome == outcome:
                        return replace(record)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._changed.wait(remaining)
