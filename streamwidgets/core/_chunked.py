"""HTTP/1.1 chunked transfer coding, undone a whole network read at a time (sans-IO).

Providers send every Server-Sent Event as its own HTTP chunk, so a body of 20,000 tokens is
20,000 chunks, and h11, httpcore and httpx each handle every one of them in Python: most of a
stream's client CPU. `Reframer` watches the bytes of one connection on their way to h11 and
merges the chunks of each read into one: a read that brought 300 events hands h11 one chunk of
their data, so everything above it does one step per read, not per event.

h11 stays the judge of HTTP: the heads, the trailers, the errors and keep-alive are its. The
reframer only merges chunks it understood completely; whenever it is unsure — a bad chunk size,
a missing CRLF, a head it does not read, a body framed any other way — it hands h11 the raw
bytes from that point on, unchanged, and never reframes that connection again. Since every
merged chunk it emits is whole, h11 is then at a chunk boundary and says what is wrong itself.
Chunk extensions (`;name=value`) are dropped, as h11 drops them.
"""

from __future__ import annotations

import re
from itertools import repeat
from typing import Optional

__all__ = ["Dechunker", "Reframer"]

#: The longest chunk-size line (or trailer section, or response head) waited for across reads.
LINE_LIMIT = 16 * 1024

#: A chunk-size line as h11 takes it (its own pattern): the size, extensions unread, trailing blanks.
_SIZE_LINE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;[^\n]*)?[ \t]*")
_HEX = b"0123456789abcdefABCDEF"
_BLANK_LINE = re.compile(rb"\n\r?\n")


class Dechunker:
    """The chunked coding of one body, undone incrementally: `feed(data)` returns the payload
    those bytes carry and how many of them belong to the body. Once `done` (the last chunk and
    its trailer section were read), the bytes after them are not the body's; `trailer` holds the
    raw trailer section (the bytes after `0\\r\\n`, through the blank line). Where the framing
    breaks, `feed` stops: `broken` then holds the raw bytes it had kept back of an unfinished
    line (they come before the unused rest of `data`)."""

    def __init__(self) -> None:
        self._left = 0  # payload bytes still to come in the current chunk
        self._crlf = 0  # bytes of the CRLF after a chunk's payload still to come
        self._line = b""  # a size line (or the trailer section) not complete yet
        self._last = False  # the size-0 chunk was read: the trailer section follows
        self.done = False
        self.trailer = b""
        self.broken: Optional[bytes] = None

    def feed(self, data: bytes) -> tuple[bytes, int]:
        """(payload, bytes of `data` used)."""
        out: list[bytes] = []
        i, n = 0, len(data)
        split = True  # until the CRLFs of these bytes proved not to frame their chunks alone
        while i < n and not self.done and self.broken is None:
            if not (self._left or self._crlf or self._line or self._last):
                whole = self._split_chunks(data, i, out) if split else i
                if whole == i:
                    split = False  # tried once per read at most: never again over the same bytes
                    whole = self._whole_chunks(data, i, out)
                if whole > i:
                    i = whole
                    continue
            if self._left:
                take = min(self._left, n - i)
                out.append(data if take == n else data[i : i + take])
                self._left -= take
                i += take
                if not self._left:
                    self._crlf = 2
            elif self._crlf:
                expected = b"\r\n"[2 - self._crlf :]
                got = data[i : i + len(expected)]
                if not expected.startswith(got):
                    self.broken = b""
                    break
                self._crlf -= len(got)
                i += len(got)
            elif self._last:
                i = self._trailer(data, i)
            else:
                i = self._size_line(data, i)
        return b"".join(out), i

    @staticmethod
    def _split_chunks(data: bytes, i: int, out: list[bytes]) -> int:
        """The hot path: all the chunks that lie whole in `data` from `i`, in a few C calls for
        all of them; where to go on from. The bytes are split at every CRLF: when no chunk's data
        holds one, the pieces alternate size line, data, size line, data… and every size is its
        data's length, which proves the framing (a CRLF inside a chunk's data makes a piece
        shorter than its size). If anything does not prove out — an extension, a blank, the last
        chunk (size 0), a CRLF in the data — nothing is taken here."""
        pieces = (data[i:] if i else data).split(b"\r\n")
        whole = (len(pieces) - 1) // 2  # a chunk is whole when the CRLF after its data came
        if not whole:
            return i
        sizes, chunks = pieces[0 : 2 * whole : 2], pieces[1 : 2 * whole : 2]
        try:
            numbers = list(map(int, sizes, repeat(16)))
        except ValueError:
            return i
        if (
            numbers != list(map(len, chunks))
            or 0 in numbers
            or max(map(len, sizes)) > 20
            or b"".join(sizes).translate(None, _HEX)  # int() would take blanks, _, + and 0x too
        ):
            return i
        out.append(b"".join(chunks))
        return i + sum(numbers) + sum(map(len, sizes)) + 4 * whole

    def _whole_chunks(self, data: bytes, i: int, out: list[bytes]) -> int:
        """The chunks that lie whole in `data` from `i` when `_split_chunks` could not take
        them, a few C calls each (a plain hex size, its data, its CRLF); where to go on from
        (the first chunk that is not whole, or has an extension, is left to the general loop)."""
        n = len(data)
        find, append = data.find, out.append
        while True:
            end = find(b"\r\n", i)
            if end < 0:
                return i
            line = data[i:end]
            if not 0 < len(line) <= 20 or line.translate(None, _HEX):
                return i
            size = int(line, 16)
            start = end + 2
            stop = start + size
            if not size or stop + 2 > n or data[stop : stop + 2] != b"\r\n":
                return i
            append(data[start:stop])
            i = stop + 2

    def _size_line(self, data: bytes, i: int) -> int:
        if self._line.endswith(b"\r") and data[i : i + 1] == b"\n":
            line, after = self._line[:-1], i + 1
        else:
            end = data.find(b"\r\n", i)
            if end < 0:
                rest = data[i:]
                if len(self._line) + len(rest) > LINE_LIMIT or b"\n" in rest:
                    self.broken = self._line
                    return i
                self._line += rest
                return len(data)
            line, after = self._line + data[i:end], end + 2
        size = _chunk_size(line)
        if size is None:
            self.broken = self._line
            return i
        self._line = b""
        if size:
            self._left = size
        else:
            self._last = True
        return after

    def _trailer(self, data: bytes, i: int) -> int:
        """The trailer section: the lines after the last chunk, through a blank line."""
        section = self._line + data[i:]
        if section[:1] == b"\n" or section[:2] == b"\r\n":
            end = 1 if section[:1] == b"\n" else 2
        else:
            match = _BLANK_LINE.search(section)
            if match is None:
                if len(section) > LINE_LIMIT:
                    self.broken = b"0\r\n" + self._line
                    return i
                self._line = section
                return len(data)
            end = match.end()
        used = end - len(self._line)
        self.trailer, self._line, self.done = section[:end], b"", True
        return i + used


def _chunk_size(line: bytes) -> Optional[int]:
    """The size of a chunk-size line (without its CRLF), or None if h11 would not take it."""
    match = _SIZE_LINE.fullmatch(line)
    return None if match is None else int(match.group(1), 16)


class Reframer:
    """The bytes one HTTP/1.1 connection reads, with each read's chunks merged into one.

    It follows the responses as h11 will: a head (passed on as it is), then a body framed by
    `Transfer-Encoding: chunked` (reframed), by `Content-Length` (passed on, counted), or by
    nothing (a 1xx, 204 or 304: the next head follows). Anything else — a body read to the close,
    a response to HEAD or CONNECT (`sent()` sees the requests), a head it cannot read — turns it
    into a pass-through for the rest of the connection, as does any framing it finds broken.
    """

    def __init__(self) -> None:
        self._head = b""  # a response head not complete yet
        self._body: Optional[Dechunker] = None  # reading a chunked body
        self._fixed = 0  # bytes of a Content-Length body still to pass on
        self.passing = False  # given up: every byte passes through as it is

    def sent(self, data: bytes) -> None:
        """A write on the connection: a HEAD or CONNECT request's response is h11's alone."""
        if data.startswith((b"HEAD ", b"CONNECT ")):
            self.passing = True

    def received(self, data: bytes) -> bytes:
        """What h11 is to see of the bytes just read."""
        if self.passing:
            return data
        out: list[bytes] = []
        i = 0
        while i < len(data) and not self.passing:
            if self._body is not None:
                i = self._chunked(data, i, out)
            elif self._fixed:
                take = min(self._fixed, len(data) - i)
                out.append(data[i : i + take])
                self._fixed -= take
                i += take
            else:
                i = self._read_head(data, i, out)
        if self.passing and i < len(data):
            out.append(data[i:])
        return b"".join(out)

    def _chunked(self, data: bytes, i: int, out: list[bytes]) -> int:
        body = self._body
        assert body is not None
        payload, used = body.feed(data[i:] if i else data)
        if payload:
            out.append(b"%x\r\n%s\r\n" % (len(payload), payload))
        if body.broken is not None:  # h11 gets the raw bytes from there on, and says what is wrong
            out.append(body.broken)
            self.passing = True
        elif body.done:
            out.append(b"0\r\n" + body.trailer)
            self._body = None
        return i + used

    def _read_head(self, data: bytes, i: int, out: list[bytes]) -> int:
        if not self._head and data[i : i + 1] in (b"\r", b"\n"):
            self.passing = True  # h11 skips blank lines before a head; this is rare enough to leave to it
            return i
        head = self._head + data[i:]
        match = _BLANK_LINE.search(head)
        if match is None:
            if len(head) > LINE_LIMIT:
                self.passing = True
                return i
            self._head = head
            out.append(data[i:])
            return len(data)
        used = match.end() - len(self._head)
        out.append(data[i : i + used])
        self._framing(head[: match.end()])
        self._head = b""
        return i + used

    def _framing(self, head: bytes) -> None:
        """How the body after this head is framed, as h11 reads it."""
        lines = head.replace(b"\r\n", b"\n").split(b"\n")
        status = lines[0].split(b" ", 2)
        if len(status) < 2 or not status[0].startswith(b"HTTP/1.") or not status[1].isdigit():
            self.passing = True
            return
        code = int(status[1])
        if (100 <= code < 200 and code != 101) or code in (204, 304):
            return  # no body: the next head follows
        codings: list[bytes] = []
        lengths: list[bytes] = []
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon:
                continue
            name = name.strip().lower()
            if name == b"transfer-encoding":
                codings += [c.strip().lower() for c in value.split(b",")]
            elif name == b"content-length":
                lengths.append(value.strip())
        if code == 101:
            self.passing = True
        elif codings == [b"chunked"]:
            self._body = Dechunker()
        elif not codings and len(set(lengths)) == 1 and lengths[0].isdigit():
            self._fixed = int(lengths[0])
            if not self._fixed:
                return
        else:
            self.passing = True  # read to the close, or framed in a way h11 alone should judge
