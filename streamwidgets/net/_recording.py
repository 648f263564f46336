"""Recording a stream as it arrives, and replaying a recording (or a raw SSE body) at its pace.

A classroom with no network replays yesterday's answer at its original pace (or faster) through
the very same pipeline. The format is in `core._recordings`; every part of a continued answer
goes into the same file.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Optional, Union

from ..core._feed import Item
from ..core._recordings import PathLike, Recording, as_recording, recording_items
from ..core._redact import ByteRedactor, Redactor
from ..core._state import StreamState

__all__ = ["Recorder", "timed_items", "paced"]


class Recorder:
    """Writes one part of a recording while it streams (one line per network read, flushed).

    Part 1 starts the file with its header (`meta`: provider, API, model, base URL — never the
    key); a later part (a Continue) is appended to the same file after a part line. A recording
    never holds the key: every read goes through the `redactor` (a key cut in two by a read is
    found too: the end of a read waits for the next), and an error body is redacted after
    decoding, as its message is.
    """

    def __init__(
        self,
        path: PathLike,
        meta: Mapping[str, Any],
        *,
        part: int = 1,
        carried: int = 0,
        redactor: Optional[Redactor] = None,
    ) -> None:
        self._redactor = redactor
        self._bytes = ByteRedactor(redactor) if redactor else None
        self._file = open(path, "w" if part == 1 else "a", encoding="utf-8")  # noqa: SIM115 (closed by close())
        self._start = time.monotonic()
        if part == 1:
            header = {"streamwidgets_recording": 1, **meta}
            header["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self._write(header)
        else:
            self._write({"streamwidgets_part": part, "carried": carried})
        self._header_end = self._file.tell()

    def restart(self) -> None:
        """Forget what came after the header: a try the provider turned away and that was
        retried (`retry.py`) is not part of the answer."""
        if self._bytes is not None:
            self._bytes.flush()
        self._file.seek(self._header_end)
        self._file.truncate()
        self._start = time.monotonic()

    def chunk(self, data: bytes) -> None:
        if self._bytes is not None:
            data = self._bytes.feed(data)
        if data:
            self._write({"t": self._elapsed(), "data": base64.b64encode(data).decode("ascii")})

    def response(self, status: int, body: bytes) -> None:
        if self._redactor:
            body = self._redactor.text(body.decode("utf-8", "replace")).encode("utf-8")
        self._write({"t": self._elapsed(), "status": status, "data": base64.b64encode(body).decode("ascii")})

    def close(self, state: StreamState) -> None:
        if not self._file.closed:
            rest = self._bytes.flush() if self._bytes is not None else b""
            if rest:
                self._write({"t": self._elapsed(), "data": base64.b64encode(rest).decode("ascii")})
            self._write({"t": self._elapsed(), "end": state.status})
            self._file.close()

    def _elapsed(self) -> float:
        return round(time.monotonic() - self._start, 4)

    def _write(self, obj: dict[str, Any]) -> None:
        self._file.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._file.flush()


def timed_items(
    source: Union[PathLike, bytes, Recording], tokens_per_second: float
) -> tuple[Optional[Recording], Iterator[tuple[float, Item]]]:
    """(recording or None, (time, item) pairs). A raw SSE body gets one event per 1/rate seconds."""
    recording = as_recording(source)
    if recording is not None:
        return recording, recording_items(recording)
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            source = f.read()
    data = bytes(source)  # type: ignore[arg-type]  # a Recording went the other way
    events = re.split(rb"(?<=\n\n)|(?<=\r\n\r\n)|(?<=\r\r)", data)
    step = 1.0 / tokens_per_second if tokens_per_second > 0 else 0.0
    return None, ((i * step, piece) for i, piece in enumerate(p for p in events if p))


async def paced(items: Iterator[tuple[float, Item]], speed: float) -> AsyncIterator[Item]:
    """The items at their recorded times, sped up by `speed` (0: no waiting)."""
    import anyio

    start = time.monotonic()
    for at, item in items:
        if speed > 0:
            delay = start + at / speed - time.monotonic()
            if delay > 0:
                await anyio.sleep(delay)
        yield item
