"""Recordings: a live stream saved byte for byte with arrival times, and replayed later.

A classroom with no network replays yesterday's answer at its original pace (or faster) through
the very same pipeline. The file is JSON Lines so that it diffs and survives any editor:

    {"streamwidgets_recording": 1, "provider": "demo", "api": "chat", "model": "demo", ...}
    {"t": 0.412, "data": "<base64 of the bytes of one network read>"}
    {"t": 0.003, "status": 429, "data": "<base64 of an error body>"}      (a non-2xx answer)
    {"t": 3.981, "end": "complete"}

The request's key is never written (only the provider name, API, model and base URL).
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from .dialects import Normalizer
from .errors import error_from_http
from .feed import Feed, Item, drain
from .state import StreamState

if TYPE_CHECKING:
    from .client import StreamRequest

__all__ = [
    "Recording",
    "Recorder",
    "as_recording",
    "load_recording",
    "recording_meta",
    "recording_items",
    "is_recording",
    "replay_into",
]

MAGIC = b'{"streamwidgets_recording"'
RECORDING_ENDED = "the recording ended before the stream's terminator."
PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class Recording:
    """A loaded recording: its header and its network reads as (seconds since start, bytes)."""

    meta: dict[str, Any]
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    status: Optional[int] = None  # an HTTP error status instead of a stream
    error_body: bytes = b""

    @property
    def dialect(self) -> Optional[str]:
        return self.meta.get("api")

    @property
    def provider(self) -> Optional[str]:
        return self.meta.get("provider")


class Recorder:
    """Writes a recording while `stream_into` streams (one line per network read, flushed)."""

    def __init__(self, path: PathLike, request: StreamRequest) -> None:
        self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed by close())
        self._start = time.monotonic()
        self._write(
            {
                "streamwidgets_recording": 1,
                "provider": request.provider.name,
                "api": request.api,
                "model": request.model,
                "base_url": request.base_url,
                "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
        self._header_end = self._file.tell()

    def restart(self) -> None:
        """Forget what came after the header: a try the provider turned away and that was
        retried (`retry.py`) is not part of the answer."""
        self._file.seek(self._header_end)
        self._file.truncate()
        self._start = time.monotonic()

    def chunk(self, data: bytes) -> None:
        self._write({"t": self._elapsed(), "data": base64.b64encode(data).decode("ascii")})

    def response(self, status: int, body: bytes) -> None:
        self._write({"t": self._elapsed(), "status": status, "data": base64.b64encode(body).decode("ascii")})

    def close(self, state: StreamState) -> None:
        if not self._file.closed:
            self._write({"t": self._elapsed(), "end": state.status})
            self._file.close()

    def _elapsed(self) -> float:
        return round(time.monotonic() - self._start, 4)

    def _write(self, obj: dict[str, Any]) -> None:
        self._file.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._file.flush()


def is_recording(head: bytes) -> bool:
    return head.lstrip()[: len(MAGIC)] == MAGIC


def recording_meta(source: Any) -> dict[str, Any]:
    """The header of a recording (provider, api, model, ...), or {} for anything else."""
    if isinstance(source, Recording):
        return source.meta
    if not isinstance(source, (str, os.PathLike)):
        return {}
    with open(source, "rb") as f:
        head = f.readline()
    if not is_recording(head):
        return {}
    try:
        meta = json.loads(head)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def load_recording(path: PathLike) -> Recording:
    recording: Optional[Recording] = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                raise ValueError(f"{os.fspath(path)}, line {number}: not a streamwidgets recording line") from None
            if recording is None:
                if not isinstance(obj, dict) or "streamwidgets_recording" not in obj:
                    raise ValueError(f"{os.fspath(path)} is not a streamwidgets recording")
                recording = Recording(obj)
            elif "status" in obj:
                recording.status = int(obj["status"])
                recording.error_body = base64.b64decode(obj.get("data", ""))
            elif "data" in obj:
                recording.chunks.append((float(obj.get("t", 0.0)), base64.b64decode(obj["data"])))
    if recording is None:
        raise ValueError(f"{os.fspath(path)} is empty")
    return recording


def as_recording(source: Any) -> Optional[Recording]:
    """`source` as a recording: itself, or loaded from a path to one; None for anything else."""
    if isinstance(source, Recording):
        return source
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            if is_recording(f.read(64)):
                return load_recording(source)
    return None


def recording_items(recording: Recording) -> Iterator[tuple[float, Item]]:
    """A recording's network reads as (seconds since start, bytes) — or its HTTP error, as events."""
    if recording.status is not None:
        yield 0.0, [error_from_http(recording.status, recording.error_body)]
        return
    yield from recording.chunks


def _timed_items(source: Any, tokens_per_second: float) -> tuple[Optional[Recording], Iterator[tuple[float, Item]]]:
    """(recording or None, (time, item) pairs). A raw SSE body gets one event per 1/rate seconds."""
    recording = as_recording(source)
    if recording is not None:
        return recording, recording_items(recording)
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            source = f.read()
    data = bytes(source)
    events = re.split(rb"(?<=\n\n)|(?<=\r\n\r\n)|(?<=\r\r)", data)
    step = 1.0 / tokens_per_second if tokens_per_second > 0 else 0.0
    return None, ((i * step, piece) for i, piece in enumerate(p for p in events if p))


async def replay_into(
    source: Union[PathLike, bytes, Recording],
    state: StreamState,
    *,
    speed: float = 1.0,
    tokens_per_second: float = 40.0,
    notify: Optional[Callable[[], None]] = None,
    dialect: Optional[str] = None,
    provider: Optional[str] = None,
) -> StreamState:
    """Replay a recording (at its original pace times `speed`; `speed=0` for no waiting) or a raw
    SSE body (one event per 1/`tokens_per_second` s) into `state`, as a live stream would arrive."""
    recording, items = _timed_items(source, tokens_per_second)
    state.source = "replay"
    if recording is not None:
        dialect = dialect or recording.dialect
        provider = provider or recording.provider
        state.model = state.model or recording.meta.get("model")
    state.provider = state.provider or provider or "replay"
    feed = Feed(state, Normalizer(dialect, provider), notify=notify)
    feed.begin()
    return await drain(_paced(items, speed), feed, ended=RECORDING_ENDED)


async def _paced(items: Iterator[tuple[float, Item]], speed: float) -> AsyncIterator[Item]:
    """The items at their recorded times, sped up by `speed` (0: no waiting)."""
    import anyio

    start = time.monotonic()
    for at, item in items:
        if speed > 0:
            delay = start + at / speed - time.monotonic()
            if delay > 0:
                await anyio.sleep(delay)
        yield item
