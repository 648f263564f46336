"""The recording format: a live stream saved byte for byte with arrival times, as JSON Lines.

    {"streamwidgets_recording": 1, "provider": "demo", "api": "chat", "model": "demo", ...}
    {"t": 0.412, "data": "<base64 of the bytes of one network read>"}
    {"t": 0.003, "status": 429, "data": "<base64 of an error body>"}      (a non-2xx answer)
    {"t": 3.981, "end": "complete"}
    {"streamwidgets_part": 2, "carried": 1234}        (a Continue: the next part, from 1234 characters)
    {"t": 0.390, "data": "..."}
    ...

This module reads the format (`parse()` and replay use it); the network edge writes it
(`net._recording.Recorder`). The request's key is never written.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ._errors import error_from_http
from ._feed import Item

__all__ = [
    "Recording",
    "MAGIC",
    "RECORDING_ENDED",
    "as_recording",
    "load_recording",
    "recording_meta",
    "recording_items",
    "is_recording",
]

MAGIC = b'{"streamwidgets_recording"'
RECORDING_ENDED = "the recording ended before the stream's terminator."
PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class Recording:
    """A loaded recording: its header and its network reads as (seconds since the part began,
    bytes). An answer that was continued has its next part in `following` (same header)."""

    meta: dict[str, Any]
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    status: Optional[int] = None  # an HTTP error status instead of a stream
    error_body: bytes = b""
    following: Optional[Recording] = None
    part: int = 1
    #: How many characters of the answer so far this part starts from (None: all of it).
    carried: Optional[int] = None

    @property
    def dialect(self) -> Optional[str]:
        return self.meta.get("api")

    @property
    def provider(self) -> Optional[str]:
        return self.meta.get("provider")


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
    first: Optional[Recording] = None
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
                first = recording = Recording(obj)
                continue
            assert recording is not None
            if "streamwidgets_part" in obj:
                carried = obj.get("carried")
                recording.following = Recording(
                    recording.meta, part=recording.part + 1, carried=carried if isinstance(carried, int) else None
                )
                recording = recording.following
            elif "status" in obj:
                recording.status = int(obj["status"])
                recording.error_body = base64.b64decode(obj.get("data", ""))
            elif "data" in obj:
                recording.chunks.append((float(obj.get("t", 0.0)), base64.b64decode(obj["data"])))
    if first is None:
        raise ValueError(f"{os.fspath(path)} is empty")
    return first


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
