"""`parse()`: a recorded stream through the same pipeline as a live one.

Replay, tests and users' own recordings all come through here, so that a transcript gives
exactly the state the live stream gave.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Optional, Union

from ._feed import Feed, Item, slices
from ._providers import Provider
from ._recordings import RECORDING_ENDED, Recording, as_recording, recording_items
from ._state import StreamState
from .dialects import Normalizer

__all__ = ["parse", "StreamSource"]

StreamSource = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", Iterable[bytes]]

_READ_SIZE = 1 << 16


def parse(
    source: StreamSource,
    *,
    provider: Union[str, Provider, None] = None,
    api: Optional[str] = None,
    think_tags: Optional[bool] = None,
) -> StreamState:
    """Parse a whole recorded `text/event-stream` body into its final `StreamState`.

    `source` is the bytes, an iterable of byte chunks, or a file path (a `str` is a path) to a
    raw `text/event-stream` body or to a streamwidgets recording (see `core/_recordings.py`, written by `net/_recording.py`).
    `api` (chat / responses / messages) is detected from the first event when not given;
    `provider` switches on that provider's few own rules. Malformed input never raises: it
    ends up in `state.warnings`, and everything readable is kept. A body that is no event stream
    at all says so in a warning ("this is not an event stream: it looks like an HTML page: …");
    a whole JSON answer (a server that ignored `stream`) is read as the client reads one.
    """
    recording = as_recording(source)
    alternatives = None
    if recording is not None:
        api = api or recording.dialect
        provider = provider or recording.provider
        alternatives = recording.alternatives  # as many alternatives per token as the answer kept
    normalizer = Normalizer(api, provider, think_tags=think_tags, alternatives=alternatives)
    state = StreamState(provider=normalizer.provider.name if provider is not None else None)
    if recording is None:
        items: Iterable[Item]
        if isinstance(source, (bytes, bytearray, memoryview)):
            items = slices(bytes(source))  # a bounded batch of events at a time
        elif isinstance(source, (str, os.PathLike)):
            items = _read_file(source)
        else:
            items = source
        return _fold(items, state, normalizer)
    state.model = recording.model
    part: Optional[Recording] = recording
    while part is not None:  # an answer that was continued: one state per part, the last one returned
        state = _fold((item for _, item in recording_items(part)), state, normalizer)
        part = part.following
        if part is not None:
            state = state.next_part(keep=part.carried, joins=part.joins)
            normalizer = Normalizer(api, provider, think_tags=think_tags, alternatives=alternatives)
    return state


def _fold(items: Iterable[Item], state: StreamState, normalizer: Normalizer) -> StreamState:
    feed = Feed(state, normalizer, clock=None)
    for item in items:
        feed.push(item)
    feed.end(RECORDING_ENDED)
    return state


def _read_file(path: Union[str, os.PathLike[str]]) -> Iterable[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(_READ_SIZE):
            yield chunk
