"""Content-Encoding: the gzip and deflate bodies that httpx asks for, decoded as they arrive.

A transform of the raw chunks (`decoded()`), before anything reads or records them. Each chunk
is inflated in pieces of at most `PIECE` bytes, one piece at a time as the reader asks for it, so
a decompression bomb (a few kB that inflate to gigabytes) never sits in memory whole: the pieces
go on to the SSE decoder and the state, whose limits (`core.Limits`) discard an event too long
to keep and end an answer too long to keep, and to the error-body readers, which stop at their
own limit. Inflating never waits for the network, so the feed loop (`_pipeline.pump`) is what
hands the event loop back between pieces.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Optional

__all__ = ["ACCEPT_ENCODING", "BodyDecoder", "UndecodableBody", "decoded"]

#: What the client asks for: exactly what it can decode.
ACCEPT_ENCODING = "gzip, deflate"
#: The most bytes one inflate step makes (one piece handed on).
PIECE = 1 << 16


class UndecodableBody(Exception):
    """The body's encoding is unknown, or its compressed bytes are broken; the message says which."""


class _Inflate:
    """One zlib stream. `deflate` is zlib-wrapped by the standard, but some servers send it raw."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if encoding == "gzip" else zlib.MAX_WBITS)
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                piece = self._zlib.decompress(data, PIECE)
            except zlib.error as exc:
                if self.encoding == "deflate" and not self._started:
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate
                    self._started = True
                    continue
                raise UndecodableBody(f"its {self.encoding} bytes are broken ({exc})") from None
            self._started = True
            data = self._zlib.unconsumed_tail
            if self._zlib.eof and self._zlib.unused_data:  # a second gzip member follows
                data = self._zlib.unused_data
                self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)
            if piece:
                yield piece

    def flush(self) -> bytes:
        tail = self._zlib.flush()
        if not self._zlib.eof:
            raise UndecodableBody(f"its {self.encoding} bytes end before the compressed stream does")
        return tail


class BodyDecoder:
    """Undo a Content-Encoding header's codings (applied in order, so undone in reverse)."""

    def __init__(self, content_encoding: Optional[str]) -> None:
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        unknown = [c for c in codings if c not in ("gzip", "x-gzip", "deflate")]
        if unknown:
            raise UndecodableBody(
                f"it is compressed as {', '.join(unknown)}, which streamwidgets does not decode "
                f"(it asks for {ACCEPT_ENCODING} only)"
            )
        self._stages = [_Inflate("gzip" if c == "x-gzip" else c) for c in reversed(codings)]

    @property
    def identity(self) -> bool:
        return not self._stages

    def feed(self, data: bytes) -> Iterator[bytes]:
        pieces: Iterator[bytes] = iter((data,))
        for stage in self._stages:
            pieces = _through(stage, pieces)
        return pieces

    def flush(self) -> Iterator[bytes]:
        """The end of the body: what each stage still holds, through the stages after it — as
        lazily as `feed`, so that a coding stacked on a bomb is never inflated whole here either."""
        pieces: Iterator[bytes] = iter(())
        for stage in self._stages:
            pieces = _ended(stage, pieces)
        return pieces


def _through(stage: _Inflate, pieces: Iterator[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        yield from stage.feed(piece)


def _ended(stage: _Inflate, pieces: Iterator[bytes]) -> Iterator[bytes]:
    yield from _through(stage, pieces)
    tail = stage.flush()
    if tail:
        yield tail


async def decoded(chunks: AsyncIterator[bytes], content_encoding: Optional[str]) -> AsyncIterator[bytes]:
    """The chunks of a body, its Content-Encoding undone, in pieces of at most `PIECE` bytes."""
    decoder = BodyDecoder(content_encoding)
    if decoder.identity:
        async for chunk in chunks:
            yield chunk
        return
    async for chunk in chunks:
        for piece in decoder.feed(chunk):
            yield piece
    for piece in decoder.flush():
        yield piece
