"""An incremental Server-Sent Events decoder, exact to the WHATWG HTML parsing rules.

Sans-IO: bytes in, events out. `feed()` returns the events that the bytes complete, so an event
is never held back waiting for more input; `close()` ends the stream. Total work is linear in
the input however it is split (a partial line is kept as a list of pieces, joined once).

Beyond the standard it keeps what higher layers need: the comment lines (heartbeats such as
`: keep-alive`), and at close what an unterminated final block held, so that a chat stream ending
in `data: [DONE]\\n` without its blank line can still count as complete.

One event (or one line, a comment too) is kept up to `max_event_chars`: past it, the event is
discarded as its bytes arrive, in constant memory (a 200 MB comment line is never buffered), and
`dropped` counts it.

Spec: https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
"""

from __future__ import annotations

import codecs
from typing import NamedTuple, Optional

__all__ = ["ServerSentEvent", "SSEDecoder", "is_event_stream", "MAX_EVENT_CHARS", "RETRY_DIGITS"]

#: The default most characters of one event (see `_limits.Limits.max_event_chars`).
MAX_EVENT_CHARS = 16 * 1024 * 1024
#: The most digits of a `retry:` time in ms (ten digits are four months); a longer one is ignored.
RETRY_DIGITS = 10


def is_event_stream(content_type: str) -> bool:
    """Whether a Content-Type names an event stream. Media types are case-insensitive
    (`Text/Event-Stream; charset=utf-8` is one), and parameters do not change the type."""
    return content_type.partition(";")[0].strip().lower() == "text/event-stream"


class ServerSentEvent(NamedTuple):
    """One dispatched event. `id` is the last event ID (None until one was set)."""

    event: str = "message"
    data: str = ""
    id: Optional[str] = None
    retry: Optional[int] = None


_new_event = tuple.__new__


class SSEDecoder:
    """Decode a `text/event-stream` body incrementally.

    >>> d = SSEDecoder()
    >>> d.feed(b"data: he") + d.feed(b"llo\\n\\n")
    [ServerSentEvent(event='message', data='hello', id=None, retry=None)]
    """

    def __init__(self, max_event_chars: int = MAX_EVENT_CHARS) -> None:
        self.max_event_chars = max_event_chars
        #: Events (or lines) discarded for passing `max_event_chars`.
        self.dropped = 0
        self._size = 0  # characters of the block being built, counted per chunk
        self._drop_line = False  # discarding the rest of a line that grew too long
        self._drop_block = False  # discarding the lines of a block that grew too long
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._utf8_pending = False  # the incremental decoder holds part of a character
        self._started = False  # a BOM is only stripped at the very start of the stream
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF completes CRLF
        self._partial: list[str] = []  # pieces of the line not yet ended
        # The block being built (reset at each blank line, except the last event id).
        self._data: list[str] = []
        self._event = ""
        self._retry: Optional[int] = None
        self._last_id: Optional[str] = None
        #: Comment lines (heartbeats) seen and not yet taken, without the leading colon.
        self.comments: list[str] = []
        #: Field lines the spec ignores, as (name, value), not yet taken — llama.cpp once sent `error:` —
        #: and a `retry:` too long to be a time (`RETRY_DIGITS`), which is ignored too.
        self.unknown_fields: list[tuple[str, str]] = []
        self.comment_count = 0
        #: The reconnection time the stream asked for (last valid `retry:`), in ms.
        self.retry: Optional[int] = None
        #: Set by `close()`: what an unterminated final block held (it is never dispatched).
        self.unterminated: Optional[ServerSentEvent] = None
        self.closed = False

    @property
    def last_event_id(self) -> Optional[str]:
        return self._last_id

    def take_comments(self) -> list[str]:
        """The comment lines seen since the last call (without the leading colon)."""
        comments, self.comments = self.comments, []
        return comments

    def take_unknown_fields(self) -> list[tuple[str, str]]:
        fields, self.unknown_fields = self.unknown_fields, []
        return fields

    def feed(self, data: bytes) -> list[ServerSentEvent]:
        """Decode more bytes; return the events they complete."""
        if self._utf8_pending or self.closed:
            if self.closed:
                raise RuntimeError("feed() after close()")
            return self._text(self._decode(data))
        try:
            text = data.decode("utf-8")  # fast: most chunks hold whole characters
        except UnicodeDecodeError:
            text = self._decode(data)
        if self._partial and "\n" not in text and "\r" not in text and text:
            self._partial.append(text)  # the middle of a long line: nothing can complete
            self._size += len(text)
            if self._size > self.max_event_chars:
                self._overflow()
            return []
        return self._text(text)

    def _decode(self, data: bytes, final: bool = False) -> str:
        """The incremental decoder: a character cut between chunks, or invalid bytes (U+FFFD)."""
        text = self._utf8.decode(data, final)
        self._utf8_pending = bool(self._utf8.getstate()[0])
        return text

    def close(self) -> list[ServerSentEvent]:
        """End of stream: return what the last bytes complete; keep an unfinished block in `unterminated`."""
        if self.closed:
            return []
        events = self._text(self._decode(b"", True))
        self.closed = True
        tail = "".join(self._partial)
        self._partial = []
        if self._drop_block:
            self._data = []
            self._event = ""
        elif tail:  # record the unended line into the block buffers; the block is not dispatched
            if tail[:6] == "data: ":
                self._data.append(tail[6:])
            else:
                self._line(tail, events)
        if self._data or self._event:
            self.unterminated = _new_event(
                ServerSentEvent, (self._event or "message", "\n".join(self._data), self._last_id, self._retry)
            )
        self._data = []
        self._event = ""
        return events

    # ------------------------------------------------------------------ internals

    def _text(self, text: str) -> list[ServerSentEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
        if self._skip_lf:
            self._skip_lf = False
            if text[:1] == "\n":
                text = text[1:]
        if "\r" in text:
            self._skip_lf = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if self._drop_line:  # the rest of a line too long to keep, up to its end
            end = text.find("\n")
            if end < 0:
                return []
            self._drop_line = False
            text = text[end + 1 :]
        if "\n" not in text:
            if text:
                self._partial.append(text)
                self._size += len(text)
                if self._size > self.max_event_chars:
                    self._overflow()
            return []
        chunk = text
        if self._partial:
            self._partial.append(text)
            text = "".join(self._partial)
        lines = text.split("\n")
        last = lines.pop()
        self._partial = [last] if last else []
        events: list[ServerSentEvent] = []
        data = self._data
        line_handler = self._line
        dropping = self._drop_block
        blank = False
        for line in lines:
            # The hot path: `data: ...` lines and the blank line that ends a block.
            if line[:6] == "data: ":
                data.append(line[6:])
            elif not line:
                blank = True
                if data:
                    events.append(
                        _new_event(
                            ServerSentEvent, (self._event or "message", "\n".join(data), self._last_id, self._retry)
                        )
                    )
                    data.clear()
                self._event = ""
                self._retry = None
            else:
                line_handler(line, events)
        if dropping and blank:  # the first blank line ended the block being dropped: not its event
            events.pop(0)
            self._drop_block = False
        # The size of the block (or line) that goes on past this chunk, after its last blank line.
        if last and blank and not data:  # the common case: a new line has begun, no more
            self._size = len(last)
        elif data or last:
            if blank:  # after the last blank line (at the very start when no "\n\n" is in the text)
                cut = text.rfind("\n\n")
                self._size = len(text) - (cut + 2 if cut >= 0 else 1)
            else:
                self._size += len(chunk)
        elif self._size:
            self._size = 0
        if self._size > self.max_event_chars:
            self._overflow()
        return events

    def _overflow(self) -> None:
        """The open block (or line) passed the limit: forget it, and skip the rest of it as it arrives."""
        if not self._drop_block:
            self.dropped += 1
        # A comment line is no part of an event: only it is skipped, not the block around it.
        if not (self._partial and self._partial[0][:1] == ":"):
            self._drop_block = True
            self._data.clear()
            self._data.append("")  # so that the block's blank line makes one event, which is dropped
        self._drop_line = bool(self._partial)
        self._partial = []
        self._size = 0

    def _line(self, line: str, events: list[ServerSentEvent]) -> None:
        """Any line other than `data: ...` and the blank line."""
        if self._drop_block and line[0] != ":":
            return
        if line[0] == ":":
            self.comment_count += 1
            self.comments.append(line[1:])
            return
        field, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self._last_id = value
        elif field == "retry":
            if value and value.isascii() and value.isdigit():
                if len(value) <= RETRY_DIGITS:
                    self.retry = self._retry = int(value)
                else:  # no time, and past 4,300 digits `int()` raises: ignored, and kept aside to be said
                    self.unknown_fields.append((field, value))
        else:  # ignored, as the spec says; kept aside for the dialects that need it
            self.unknown_fields.append((field, value))
