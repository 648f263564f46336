"""Recording a stream as it arrives, and replaying a recording (or a raw SSE body) at its pace.

A classroom with no network replays yesterday's answer at its original pace (or faster) through
the very same pipeline. The format is in `core._recordings`; every part of a continued answer
goes into the same file.

`record=` is a path a person typed, so it must never cost them a file: `RecordTarget` checks it
before anything is sent and refuses (a `ValueError` naming the file) a path that holds something
that is not a recording (`record="essay.txt"`), a symbolic link (never followed), a FIFO, a
device or a folder (never opened for writing, so nothing blocks), or the very recording being
replayed. A recording is written to a temporary file beside it and takes its place only when the
part went well (`Recorder`), so a request that failed never replaces a good recording; what could
not be saved is said in the state's warnings, and the answer streams on.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Optional, TextIO, Union

from ..core import (
    ByteRedactor,
    Item,
    PathLike,
    Recording,
    Redactor,
    StreamState,
    as_recording,
    is_recording,
    recording_items,
)

__all__ = ["Recorder", "RecordTarget", "check_record_path", "timed_items", "paced"]

#: How a file is opened here: never through a symbolic link, never waiting (a FIFO with no
#: reader, a device), never inherited by a child process. 0 where the system has no such flag.
_SAFE = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def check_record_path(path: PathLike, replaying: Optional[PathLike] = None) -> None:
    """Refuse, before anything is sent, a `record=` path whose file would be lost or that could
    block: a symbolic link, anything but a regular file, a file that holds something other than a
    streamwidgets recording (an empty one is fine), the recording being replayed (`replaying`),
    or a folder that does not exist or cannot be written to. Raises ValueError in words."""
    name = os.fspath(path)
    try:
        st: Optional[os.stat_result] = os.lstat(name)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ValueError(f"cannot record to {name}: {exc.strerror or exc}") from None
    if st is None:
        folder = os.path.dirname(os.path.abspath(name))
        shown = os.path.dirname(name) or "."
        if not os.path.isdir(folder):
            raise ValueError(f"cannot record to {name}: there is no folder {shown}")
        if not os.access(folder, os.W_OK):
            raise ValueError(f"cannot record to {name}: the folder {shown} cannot be written to")
        return
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        raise ValueError(
            f"cannot record to {name}: it is a symbolic link, and a recording never writes through one "
            "(it would replace the file it points to); record to another file name"
        )
    if stat.S_ISDIR(mode):
        raise ValueError(f"cannot record to {name}: it is a folder; give a file name, such as {name}/answer.jsonl")
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"cannot record to {name}: it is not a regular file (a FIFO, a device or a socket); give a file name"
        )
    if replaying is not None and _same_file(st, replaying):
        raise ValueError(
            f"cannot record to {name}: it is the recording being replayed, which its own replay would replace; "
            "record to another file name"
        )
    if st.st_size and not _holds_recording(name):
        raise ValueError(
            f"cannot record to {name}: it exists and is not a streamwidgets recording, so it was left as it is; "
            "record to another file name (or delete that file first)"
        )
    if not os.access(os.path.dirname(os.path.abspath(name)), os.W_OK):
        raise ValueError(f"cannot record to {name}: its folder cannot be written to")


def _same_file(st: os.stat_result, other: PathLike) -> bool:
    try:
        return os.path.samestat(st, os.stat(other))
    except OSError:
        return False


def _holds_recording(path: str) -> bool:
    """The regular file at `path` starts as a recording does (read without following a link or
    waiting on a FIFO; anything that cannot be read is no recording)."""
    try:
        fd = os.open(path, os.O_RDONLY | _SAFE)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and is_recording(os.read(fd, 256))
    except OSError:
        return False
    finally:
        os.close(fd)


class RecordTarget:
    """Where one stream's `record=` writes: the path, checked when it is made (`check_record_path`),
    and the recording this stream published there so far (every part goes into the same file).

    `adopt`: a later part's recording may append to the recording already at the path (a caller
    of `pump()` that records part by part); a stream's own target only appends to what it wrote."""

    def __init__(self, path: PathLike, *, replaying: Optional[PathLike] = None, adopt: bool = False) -> None:
        self.path = os.fspath(path)
        check_record_path(self.path, replaying)
        #: (device, inode) of the recording this stream published at `path`; None before one is.
        self.published: Optional[tuple[int, int]] = None
        if adopt:
            try:
                st = os.lstat(self.path)
            except OSError:
                st = None
            if st is not None and stat.S_ISREG(st.st_mode) and _holds_recording(self.path):
                self.published = (st.st_dev, st.st_ino)

    def recorder(
        self,
        meta: Mapping[str, Any],
        *,
        part: int = 1,
        carried: int = 0,
        joins: bool = False,
        redactor: Optional[Redactor] = None,
    ) -> Recorder:
        return Recorder(self, meta, part=part, carried=carried, joins=joins, redactor=redactor)


class Recorder:
    """Writes one part of a recording while it streams (one line per network read, flushed).

    The first part this stream records goes into a temporary file beside the target, with the
    header (`meta`: provider, API, model, base URL — never the key); a later part (a Continue, a
    tool step) is appended to the recording this stream published, after a part line. A recording
    never holds the key: every read goes through the `redactor` (a key cut in two by a read is
    found too: the end of a read waits for the next), and an error body is redacted after
    decoding, as its message is.

    When the part ends (`close`) it is kept if it went well: the server answered 2xx and sent a
    body, and the part did not end in an error before any of the answer came (an answer cut off,
    cancelled or broken after its first words counts: that is what the recording is for). Then
    the temporary file replaces the target. A part that failed (an HTTP error, a connection that
    failed, an error before the first token) is kept only where it loses nothing — the path held
    no file, or an empty one: a recorded 429 is worth replaying in class — and never replaces a
    recording; a failed later part is cut off again, and the parts before it stay. What was not
    kept, and why, is a warning in the state. Writing never ends the answer: a disk that is full
    stops the recording, not the stream.
    """

    def __init__(
        self,
        target: Union[RecordTarget, PathLike],
        meta: Mapping[str, Any],
        *,
        part: int = 1,
        carried: int = 0,
        joins: bool = False,
        redactor: Optional[Redactor] = None,
    ) -> None:
        if not isinstance(target, RecordTarget):
            target = RecordTarget(target, adopt=part > 1)
        self._target = target
        self._redactor = redactor
        self._bytes = ByteRedactor(redactor) if redactor else None
        self._file: Optional[TextIO] = None
        self._temp: Optional[str] = None  # the temporary file, until it takes the target's place
        self._start_offset = 0  # where this part begins in a recording it is appended to
        self._status: Optional[int] = None
        self._reads = 0
        self._trouble: Optional[str] = None  # why this part cannot be recorded, in words
        self._closed = False
        self._header_end = 0
        self._start = time.monotonic()
        try:
            if target.published is not None:
                self._file = self._append()
                line: dict[str, Any] = {"streamwidgets_part": part, "carried": carried}
                if joins:
                    line["joins"] = True
            else:
                self._file = self._create()
                line = {"streamwidgets_recording": 1, **meta}
                line["recorded_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        except OSError as exc:
            self._stop(f"it could not be written ({exc.strerror or exc})")
            return
        self._write(line)
        self._header_end = self._file.tell() if self._file is not None else 0

    # ------------------------------------------------------------------ opening

    def _create(self) -> TextIO:
        """A new temporary file beside the target (created here, never an existing one)."""
        folder, base = os.path.split(os.path.abspath(self._target.path))
        temp = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _SAFE, 0o666)
        self._temp = temp
        return os.fdopen(fd, "w", encoding="utf-8")

    def _append(self) -> TextIO:
        """The recording this stream published, opened to add a part — if it is still the same file."""
        target = self._target
        fd = os.open(target.path, os.O_WRONLY | os.O_APPEND | _SAFE)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != target.published:
            os.close(fd)
            raise OSError(0, "the file there is no longer the recording of the parts before")
        self._start_offset = st.st_size
        return os.fdopen(fd, "a", encoding="utf-8")

    # ------------------------------------------------------------------ writing

    def restart(self) -> None:
        """Forget what came after the header: a try the provider turned away and that was
        retried (`_retry.py`) is not part of the answer."""
        if self._bytes is not None:
            self._bytes.flush()
        self._status = None
        self._reads = 0
        if self._file is None:
            return
        try:
            self._file.seek(self._header_end)
            self._file.truncate()
        except OSError as exc:
            self._stop(f"it could not be written ({exc.strerror or exc})")
        self._start = time.monotonic()

    def chunk(self, data: bytes) -> None:
        self._reads += 1
        if self._bytes is not None:
            data = self._bytes.feed(data)
        if data:
            self._write({"t": self._elapsed(), "data": base64.b64encode(data).decode("ascii")})

    def response(self, status: int, body: bytes) -> None:
        self._status = status
        if self._redactor:
            body = self._redactor.text(body.decode("utf-8", "replace")).encode("utf-8")
        self._write({"t": self._elapsed(), "status": status, "data": base64.b64encode(body).decode("ascii")})

    def close(self, state: StreamState) -> None:
        """End the part: keep it or let it go (see the class), and say in `state` what was not kept."""
        if self._closed:
            return
        self._closed = True
        file = self._file
        if file is not None and not file.closed:
            rest = self._bytes.flush() if self._bytes is not None else b""
            if rest:
                self._write({"t": self._elapsed(), "data": base64.b64encode(rest).decode("ascii")})
            self._write({"t": self._elapsed(), "end": state.status})
        said = self._settle(self._went_well(state))
        if said:
            state.note(f"record=: {said}")

    def _went_well(self, state: StreamState) -> bool:
        return self._status is None and self._reads > 0 and (state.status != "error" or state.output_length > 0)

    def _settle(self, ok: bool) -> Optional[str]:
        """Keep the part or not; what was not kept, in words (None: all of it was)."""
        name = self._target.path
        file, temp = self._file, self._temp
        self._file = None
        if file is None or self._trouble is not None:
            if file is not None and temp is None:  # what was appended of this part goes again
                with contextlib.suppress(OSError, ValueError):
                    file.truncate(self._start_offset)
            self._discard(file, temp)
            return f"{name}: this answer was not recorded: {self._trouble or 'it could not be written'}."
        if temp is None:  # a later part, appended to the recording this stream published
            if not ok:
                with contextlib.suppress(OSError):
                    file.truncate(self._start_offset)
                self._discard(file, None)
                return f"this part failed, so it was not added to {name} (the parts before it are kept)."
            self._discard(file, None)
            return None
        try:
            file.flush()
            st = os.fstat(file.fileno())
            file.close()
        except OSError as exc:
            self._discard(file, temp)
            return f"{name}: this answer was not recorded: it could not be written ({exc.strerror or exc})."
        why = self._in_the_way(ok)
        if why is not None:
            self._discard(None, temp)
            return why
        try:
            os.replace(temp, name)
        except OSError as exc:
            self._discard(None, temp)
            return f"{name}: this answer was not recorded: it could not be saved there ({exc.strerror or exc})."
        self._target.published = (st.st_dev, st.st_ino)
        return None

    def _in_the_way(self, ok: bool) -> Optional[str]:
        """Why the temporary file must not take the target's place now (None: it may)."""
        name = self._target.path
        try:
            st = os.lstat(name)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"{name}: this answer was not recorded: {exc.strerror or exc}."
        if not stat.S_ISREG(st.st_mode):
            return f"{name} is no longer a regular file, so this answer was not recorded there."
        if not st.st_size:
            return None
        if not _holds_recording(name):
            return f"{name} now holds something that is not a recording, so it was left as it is."
        if not ok and (st.st_dev, st.st_ino) != self._target.published:
            return f"the request failed, so {name} keeps the recording it held (this one was not saved)."
        if self._temp is not None:  # the recording it replaces keeps its permissions
            with contextlib.suppress(OSError):
                os.chmod(self._temp, stat.S_IMODE(st.st_mode))
        return None

    def _discard(self, file: Optional[TextIO], temp: Optional[str]) -> None:
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)

    def _stop(self, why: str) -> None:
        """Stop recording this part (the answer streams on); `close` says so."""
        if self._trouble is None:
            self._trouble = why

    def _elapsed(self) -> float:
        return round(time.monotonic() - self._start, 4)

    def _write(self, obj: dict[str, Any]) -> None:
        file = self._file
        if file is None or self._trouble is not None:
            return
        try:
            file.write(json.dumps(obj, separators=(",", ":")) + "\n")
            file.flush()
        except OSError as exc:
            self._stop(f"it could not be written ({exc.strerror or exc})")


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
