"""The recording format: a live stream saved byte for byte with arrival times, as JSON Lines.

    {"streamwidgets_recording": 1, "provider": "demo", "api": "chat", "model": "demo", ...}
    {"t": 0.412, "data": "<base64 of the bytes of one network read>"}
    {"t": 0.003, "status": 429, "data": "<base64 of an error body>"}      (a non-2xx answer)
    {"t": 3.981, "end": "complete"}
    {"streamwidgets_part": 2, "carried": 1234}        (a Continue: the next part, from 1234 characters;
                                                       `"joins": true`: a new text, joined at a word boundary)
    {"t": 0.390, "data": "..."}
    ...

This module reads the format (`parse()` and replay use it); the network edge writes it
(`net._recording.Recorder`). The request's key is never written.

A recording is a file a person may have edited, or one made to hurt: whatever a line holds, it is
read line by line, and a line that does not fit (not UTF-8, not JSON, a field of the wrong type,
base64 that is not) is skipped with a warning naming it (`Recording.problems`, which `parse()`
and replay put in the state), never an exception. So is a header field of the wrong type.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ._errors import error_from_http
from ._events import Problem
from ._feed import Item
from ._providers import APIS, PROVIDERS
from .dialects._logprobs import MAX_TOP_LOGPROBS

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
#: The problems of one part kept in words; past them, one line counts the rest.
MAX_PROBLEMS = 20
#: The header fields read as text; any other type is dropped with a warning.
_TEXT_FIELDS = ("provider", "api", "model", "base_url", "recorded_at")


@dataclass
class Recording:
    """A loaded recording: its header and its network reads as (seconds since the part began,
    bytes). An answer that was continued has its next part in `following` (same header).

    The header is checked when the recording is made: a field of the wrong type, an API or a
    provider streamwidgets does not know is dropped, and said in `problems`."""

    meta: dict[str, Any]
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    status: Optional[int] = None  # an HTTP error status instead of a stream
    error_body: bytes = b""
    following: Optional[Recording] = None
    part: int = 1
    #: How many characters of the answer so far this part starts from (None: all of it).
    carried: Optional[int] = None
    #: This part is a new text joined to the answer so far at a word boundary (`next_part(joins=)`).
    joins: bool = False
    #: What could not be read of this part (its lines, and for part 1 the header), in words.
    problems: list[str] = field(default_factory=list)
    #: The file it was read from (None: made in memory).
    path: Optional[str] = None

    def __post_init__(self) -> None:
        if self.part == 1:
            self.meta, said = clean_meta(self.meta)
            self.problems[:0] = said

    @property
    def dialect(self) -> Optional[str]:
        api = self.meta.get("api")
        return api if api in APIS else None

    @property
    def provider(self) -> Optional[str]:
        provider = self.meta.get("provider")
        return provider if isinstance(provider, str) and _known_provider(provider) else None

    @property
    def alternatives(self) -> Optional[int]:
        """How many alternatives per token the answer asked for (`logprobs=N`), None when unsaid."""
        value = self.meta.get("logprobs")
        return value if _whole(value) else None

    @property
    def model(self) -> Optional[str]:
        model = self.meta.get("model")
        return model if isinstance(model, str) and model else None


def _known_provider(name: str) -> bool:
    return name.lower() in PROVIDERS or name.lower() == "custom"


def clean_meta(meta: Any) -> tuple[dict[str, Any], list[str]]:
    """A header as streamwidgets reads it: its text fields text, its API and provider known ones;
    and what was dropped, in words."""
    if not isinstance(meta, Mapping):
        return {}, [f"the recording's header is not a JSON object ({type(meta).__name__}); it was ignored"]
    out = dict(meta)
    said = []
    for name in _TEXT_FIELDS:
        value = out.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            del out[name]
            said.append(f"the recording's header field {name!r} is not text ({type(value).__name__}); it was ignored")
        elif name == "api" and value not in APIS:
            del out[name]
            said.append(
                f"the recording's header names an API streamwidgets does not know ({_quoted(value)}; it reads "
                f"{', '.join(APIS)}); the API is told from the events instead"
            )
        elif name == "provider" and not _known_provider(value):
            del out[name]
            said.append(
                f"the recording's header names a provider streamwidgets does not know ({_quoted(value)}); "
                "it is read without that provider's own rules"
            )
    value = out.get("logprobs")
    if value is not None and not (_whole(value) and value <= MAX_TOP_LOGPROBS):
        del out["logprobs"]
        said.append(
            f"the recording's header field 'logprobs' is not a number of alternatives from 0 to {MAX_TOP_LOGPROBS}; it was ignored"
        )
    return out, said


def _quoted(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[: limit - 1] + "…")


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
    except (ValueError, RecursionError):
        return {}
    return clean_meta(meta)[0] if isinstance(meta, dict) else {}


class _Reader:
    """Reads a recording's lines into its parts; a line that does not fit is a problem of the
    part it is in (at most `MAX_PROBLEMS` kept in words, the rest counted)."""

    def __init__(self) -> None:
        self.first: Optional[Recording] = None
        self.current: Optional[Recording] = None
        self._unsaid = 0
        self._last_t = 0.0

    def problem(self, number: int, what: str, *, skipped: bool = True) -> None:
        assert self.current is not None
        problems = self.current.problems
        if len(problems) < MAX_PROBLEMS:
            problems.append(f"line {number:,} of the recording {what}" + ("; it was skipped" if skipped else ""))
            return
        self._unsaid += 1
        summary = f"… and {self._unsaid:,} more lines of the recording that did not fit"
        if self._unsaid == 1:
            problems.append(summary)
        else:
            problems[-1] = summary

    def header(self, number: int, raw: bytes) -> None:
        said = []
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            said.append("the recording's header is not UTF-8 text: what could not be read shows as \ufffd")
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = {}
            said.append(f"line {number:,} of the recording (its header) is not JSON; it was read without it")
        self.first = self.current = Recording(obj if isinstance(obj, dict) else {})
        self.current.problems[:0] = said

    def line(self, number: int, raw: bytes) -> None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return self.problem(number, "is not UTF-8 text")
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            return self.problem(number, "is not JSON")
        if not isinstance(obj, dict):
            return self.problem(number, f"is JSON but not an object ({type(obj).__name__})")
        recording = self.current
        assert recording is not None
        if "streamwidgets_part" in obj:
            carried = obj.get("carried")
            following = Recording(
                recording.meta,
                part=recording.part + 1,
                carried=carried if _whole(carried) else None,
                joins=obj.get("joins") is True,
                path=recording.path,
            )
            recording.following = self.current = following
            self._last_t = 0.0
            self._unsaid = 0
            if carried is not None and not _whole(carried):
                self.problem(
                    number,
                    "says where a part starts, but not in characters (a whole number); it starts after "
                    "the whole answer so far",
                    skipped=False,
                )
        elif "status" in obj:
            status, body = obj["status"], _base64(obj.get("data", ""))
            if not (_whole(status) and 100 <= status <= 599):
                return self.problem(number, "has a status that is no HTTP status")
            if body is None:
                return self.problem(number, "has an error body that is not base64")
            recording.status, recording.error_body = status, body
        elif "data" in obj:
            data = _base64(obj["data"])
            if data is None:
                return self.problem(number, "has data that is not base64")
            t = obj.get("t", self._last_t)
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
                self.problem(number, "has a time that is not a number of seconds; its data is kept", skipped=False)
                t = self._last_t
            self._last_t = float(t)
            recording.chunks.append((float(t), data))


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _base64(value: Any) -> Optional[bytes]:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def load_recording(path: PathLike) -> Recording:
    """Read a recording, line by line: what does not fit is skipped and said in the part's
    `problems`. Raises ValueError only for a file that is empty or no recording at all."""
    reader = _Reader()
    name = os.fspath(path)
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            if reader.current is None:
                if not is_recording(raw):
                    raise ValueError(f"{name} is not a streamwidgets recording")
                reader.header(number, raw)
                continue
            reader.line(number, raw)
    if reader.first is None:
        raise ValueError(f"{name} is empty")
    part: Optional[Recording] = reader.first
    while part is not None:
        part.path = name
        part = part.following
    return reader.first


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
    """A recording's network reads as (seconds since start, bytes) — or its HTTP error, as events.
    What could not be read of the part comes first, as warnings."""
    if recording.problems:
        yield 0.0, [Problem(problem) for problem in recording.problems]
    if recording.status is not None:
        yield 0.0, [error_from_http(recording.status, recording.error_body)]
        return
    yield from recording.chunks
