"""`parse()`: a recorded stream through the same pipeline as a live one.

Replay, tests and users' own recordings all come through here, so that a transcript gives
exactly the state the live stream gave.
"""

from __future__ import annotations

import os
from typing import Iterable, Optional, Union

from .dialects import Normalizer
from .providers import Provider
from .state import StreamState

__all__ = ["parse", "Recording"]

Recording = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", Iterable[bytes]]

_READ_SIZE = 1 << 16


def parse(
    source: Recording,
    *,
    provider: Union[str, Provider, None] = None,
    dialect: Optional[str] = None,
    think_tags: Optional[bool] = None,
) -> StreamState:
    """Parse a whole recorded `text/event-stream` body into its final `StreamState`.

    `source` is the bytes, an iterable of byte chunks, or a file path (a `str` is a path).
    `dialect` (chat / responses / messages) is detected from the first event when not given;
    `provider` switches on that provider's few own rules. Malformed input never raises: it
    ends up in `state.warnings`, and everything readable is kept.
    """
    normalizer = Normalizer(dialect, provider, think_tags=think_tags)
    state = StreamState(provider=normalizer.provider.name if provider is not None else None)
    for chunk in _chunks(source):
        state.extend(normalizer.feed(chunk))
    state.extend(normalizer.close())
    state.close(reason="the recording ended before the stream's terminator.")
    return state


def _chunks(source: Recording) -> Iterable[bytes]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return (bytes(source),)
    if isinstance(source, (str, os.PathLike)):
        return _read_file(source)
    return source


def _read_file(path: Union[str, "os.PathLike[str]"]) -> Iterable[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(_READ_SIZE):
            yield chunk
