"""Wire dialects: each owns its API in both directions, as an h11 connection owns its reader and
its writer. The request side (path, auth style, body, the continuation of a partial answer) is
declared on the dialect class; an instance is the reader, a translator from Server-Sent Events to
normalized events.

`Normalizer` is the pipeline's middle: bytes in (through `SSEDecoder`), normalized events out.
It detects the dialect from the first event that tells, unless the caller names it, and turns
the decoder's side channels (comments, an unterminated last block, llama.cpp's legacy `error:`
field line) into events too. A body that turns out to be no event stream at all (a whole JSON
answer, an HTML page, plain text) says so, and a whole answer is read (`read_whole_body`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, NamedTuple, Optional, Protocol, Union

from .._errors import error_from_object, summarize_body
from .._events import ErrorEvent, Event, Heartbeat, Problem, Terminator
from .._json import loads
from .._providers import APIS, Auth, Provider, get_provider
from .._sse import ServerSentEvent, SSEDecoder
from ._chat import ChatDialect
from ._gemini import GeminiDialect
from ._messages import MessagesDialect
from ._request import CallResult, Messages, ToolSpecs
from ._responses import ResponsesDialect

__all__ = [
    "Dialect",
    "ChatDialect",
    "ResponsesDialect",
    "MessagesDialect",
    "GeminiDialect",
    "Normalizer",
    "WholeBody",
    "detect_dialect",
    "dialect_class",
    "DIALECTS",
    "WHOLE_BODY_LIMIT",
    "WAITING_LIMIT",
    "WAITING_EVENTS",
]

DIALECTS = APIS


class Dialect(Protocol):
    """What every dialect declares (the request side) and does (read events): one module per
    API, and one row in `_CLASSES`."""

    name: ClassVar[str]
    #: The API's name in a sentence ("Anthropic Messages").
    title: ClassVar[str]
    auth: ClassVar[Auth]
    headers: ClassVar[tuple[tuple[str, str], ...]]
    #: The body fields a request may carry as plain keywords (`core/_options.py` checks them).
    fields: ClassVar[frozenset[str]]
    #: The API can send token log-probabilities (`logprobs=N`).
    logprobs: ClassVar[bool]
    #: A lone `data: [DONE]` at the end of the body, without its blank line, is the terminator.
    lone_done: ClassVar[bool]

    @staticmethod
    def url(base_url: str, model: str) -> str: ...

    @staticmethod
    def tells(event: str, obj: Optional[Mapping[str, Any]], data: str) -> bool: ...

    @staticmethod
    def holds_answer(obj: Mapping[str, Any]) -> bool: ...

    @classmethod
    def reader(cls, think_tags: bool, alternatives: Optional[int]) -> Dialect: ...

    @staticmethod
    def build_body(
        model: str, messages: Messages, params: Mapping[str, Any], *, include_usage: bool
    ) -> dict[str, Any]: ...

    @staticmethod
    def continuation(partial: str, prefill: bool) -> tuple[str, list[dict[str, Any]]]: ...

    #: What the JSON edge mended while reading (`_json.loads`), taken by the normalizer.
    notes: set[str]

    @staticmethod
    def tools_field(tools: ToolSpecs) -> list[dict[str, Any]]: ...

    @staticmethod
    def tool_turns(text: str, calls: Sequence[CallResult]) -> list[dict[str, Any]]: ...

    def translate(self, sse: ServerSentEvent) -> list[Event]: ...

    def finish(self) -> list[Event]: ...

    def answer(self, data: str) -> list[Event]: ...


#: The dialects, one row each, in the order an event is asked which one it belongs to.
_CLASSES: dict[str, Any] = {cls.name: cls for cls in (ResponsesDialect, MessagesDialect, ChatDialect, GeminiDialect)}


def dialect_class(name: str) -> type[Dialect]:
    """The dialect class of an API name (its request side is on the class)."""
    try:
        return _CLASSES[name]
    except KeyError:
        raise ValueError(f"unknown dialect {name!r}; expected one of: {', '.join(DIALECTS)}") from None


def detect_dialect(sse: ServerSentEvent) -> Optional[str]:
    """The dialect an event belongs to, or None when it does not tell (an `error`, a bad line)."""
    data = sse.data.lstrip()
    obj: Optional[Mapping[str, Any]] = None
    if data.startswith("{"):
        try:
            parsed = loads(data)
        except ValueError:
            parsed = None
        obj = parsed if isinstance(parsed, dict) else None
    for cls in _CLASSES.values():
        if cls.tells(sse.event, obj, data):
            return str(cls.name)
    return None


def _answer_dialect(obj: Mapping[str, Any]) -> Optional[str]:
    """The dialect of a whole, non-streamed answer object, or None when it is none of theirs."""
    for cls in _CLASSES.values():
        if cls.holds_answer(obj):
            return str(cls.name)
    return None


#: The most of a body kept to read it whole when it is no event stream (a long JSON answer fits).
WHOLE_BODY_LIMIT = 1 << 22
#: The most characters (and events) kept while no event has told the dialect: then it is chat.
WAITING_LIMIT = 1 << 22
WAITING_EVENTS = 10_000
_TOO_DEEP = "an event was nested too deeply to read and was skipped"
_NOT_TOLD = (
    f"the first {WAITING_EVENTS:,} events (or {WAITING_LIMIT:,} characters) did not tell which API the stream "
    "speaks, so it is read as chat from here on"
)
_RETRY_IGNORED = "a retry: line of {:,} digits (no reconnection time) was ignored"


def _unreadable(exc: Exception) -> Problem:
    """An event a dialect's reader failed on (a field of a shape no reader foresaw), in words:
    the stream goes on without it. Only the exception's type is said: its text may quote the event."""
    return Problem(f"an event could not be read ({type(exc).__name__}) and was skipped")


class WholeBody(NamedTuple):
    """What a body that is no event stream looks like, in words, and the events of the whole
    answer or error it holds ([] when it holds neither)."""

    looks_like: str
    events: list[Event]


def make_dialect(name: str, provider: Provider, alternatives: Optional[int] = None) -> Dialect:
    """A reader for one stream; the chat reader splits `<think>` tags for the presets that ask.
    `alternatives`: the most alternatives per token kept (what the request asked for)."""
    return dialect_class(name).reader(provider.think_tags, alternatives)


class Normalizer:
    """Bytes of one `text/event-stream` body in, normalized events out. Sans-IO.

    `alternatives` is how many alternatives per token the request asked for (`logprobs=N`):
    no more are kept, whatever the server sends (None: up to `MAX_TOP_LOGPROBS`)."""

    def __init__(
        self,
        dialect: Optional[str] = None,
        provider: Union[str, Provider, None] = None,
        *,
        think_tags: Optional[bool] = None,
        alternatives: Optional[int] = None,
    ) -> None:
        self.provider = provider if isinstance(provider, Provider) else get_provider(provider)
        if think_tags is not None:
            self.provider = replace(self.provider, think_tags=think_tags)
        self.alternatives = alternatives
        self.decoder = SSEDecoder()
        self.dialect: Optional[Dialect] = make_dialect(dialect, self.provider, alternatives) if dialect else None
        self._waiting: list[ServerSentEvent] = []  # events seen before the dialect was known
        self._waiting_chars = 0
        self._said: set[str] = set()  # the warnings said once per stream (what JSON mended, a retry: ignored)
        # The body's first bytes, kept until an event or a comment shows it is an event stream:
        # a JSON answer or an HTML page decodes to no event at all, silently, and must not.
        self._head: Optional[bytearray] = bytearray()

    @property
    def dialect_name(self) -> Optional[str]:
        return self.dialect.name if self.dialect is not None else None

    def feed(self, data: bytes) -> list[Event]:
        decoder = self.decoder
        events = decoder.feed(data)
        if self._head is not None:
            self._keep_head(data, events)
        if events or decoder.comments or decoder.unknown_fields:
            return self._events(events)
        return []

    def close(self) -> list[Event]:
        decoder = self.decoder
        events = decoder.close()
        if not events and self._is_no_stream():
            assert self._head is not None
            whole = self.read_whole_body(bytes(self._head))
            return [Problem(f"this is not an event stream: it looks like {whole.looks_like}"), *whole.events]
        out = self._events(events)
        if self.dialect is None and self._waiting:
            out += self._translate_waiting("chat")
        tail = decoder.unterminated
        if tail is not None and tail.data:
            if tail.data.strip() == "[DONE]" and (self.dialect is None or self.dialect.lone_done):
                out.append(Terminator())  # llama.cpp: `data: [DONE]\n` without its blank line
            else:
                out.append(Problem("the stream ended in the middle of an event; that event was discarded"))
        if self.dialect is not None:
            out += self.dialect.finish()
        return out

    def read_whole_body(self, body: bytes) -> WholeBody:
        """Read a body that is no event stream: a whole JSON answer (the server ignored `stream`)
        or error object becomes its events; anything else is described. The client reads a 2xx
        body of another content type here, and `close()` a body that held no event."""
        text = body.decode("utf-8", "replace").lstrip("\ufeff").strip()
        if text[:1] not in ("{", "["):
            page = "an HTML page" if text[:1] == "<" else "plain text"
            return WholeBody(f"{page}: {summarize_body(text) or 'nothing readable'}", [])
        try:
            obj = loads(text)
        except ValueError:
            return WholeBody(f"JSON that could not be read: {summarize_body(text, 80)}", [])
        dialect = self.dialect
        if isinstance(obj, list) and obj and isinstance(obj[0], dict) and dialect is None:
            told = _answer_dialect(obj[0])  # Gemini's chunks as one JSON array
            dialect = make_dialect(told, self.provider, self.alternatives) if told else None
        if not isinstance(obj, dict) and dialect is None:
            return WholeBody(f"JSON but no answer ({type(obj).__name__})", [])
        if dialect is None:
            dialect = make_dialect(_answer_dialect(obj) or "chat", self.provider, self.alternatives)
        try:
            events = dialect.answer(text)
        except RecursionError:  # as in `_translate`: a deep answer is malformed, never an exception
            return WholeBody("JSON nested too deeply to read", [])
        except Exception as exc:  # a shape no reader foresaw
            return WholeBody(f"JSON that could not be read as an answer ({type(exc).__name__})", [])
        if not events and isinstance(obj, dict) and obj.get("error") is not None:
            events = [error_from_object(obj)]
        if dialect.notes and events:
            self._say(dialect.notes, events)
        if any(type(e) is ErrorEvent for e in events):
            return WholeBody("a JSON error", events)
        if events:
            return WholeBody("a whole JSON answer (the server did not stream), read as one", events)
        return WholeBody(f"JSON but no answer: {summarize_body(text, 80)}", [])

    def _keep_head(self, data: bytes, events: list[ServerSentEvent]) -> None:
        """Keep the first bytes until the body proves to be an event stream (then, never again)."""
        head = self._head
        assert head is not None
        if events or self.decoder.comment_count:
            self._head = None  # an event stream after all: nothing more to keep
        elif len(head) < WHOLE_BODY_LIMIT:
            head += data[: WHOLE_BODY_LIMIT - len(head)]

    def _is_no_stream(self) -> bool:
        """At the close: nothing of an event stream came (no event, comment, field, or error
        line), but something did."""
        decoder = self.decoder
        return (
            self._head is not None
            and not decoder.comment_count
            and decoder.unterminated is None
            and decoder.last_event_id is None
            and decoder.retry is None
            and bool(self._head.strip())
        )

    def _events(self, events: list[ServerSentEvent]) -> list[Event]:
        decoder = self.decoder
        out: list[Event] = []
        if decoder.comments:
            out.extend(Heartbeat(c.strip()) for c in decoder.take_comments())
        if decoder.unknown_fields:
            errors = self._legacy_fields(decoder.take_unknown_fields())
            if errors:
                self._head = None  # llama.cpp's `error:` line: an event stream after all
                out += errors
        if not events:
            return out
        dialect = self.dialect
        if dialect is None:
            for i, sse in enumerate(events):
                name = detect_dialect(sse)
                if name is not None:
                    self._waiting.extend(events[:i])
                    out += self._translate_waiting(name)
                    events = events[i:]
                    dialect = self.dialect
                    break
            else:
                return self._wait(events, out)
        assert dialect is not None  # known now, or the events waited above
        translate = dialect.translate
        for sse in events:  # the hot loop: a `try` costs nothing until something is raised
            try:
                out += translate(sse)
            except RecursionError:  # JSON is guarded in `_json`; this is for any other reader a deep event trips
                out.append(Problem(_TOO_DEEP))
            except Exception as exc:  # a shape no reader foresaw: that event is lost, never the others
                out.append(_unreadable(exc))
        if dialect.notes:
            self._say(dialect.notes, out)
        return out

    def _wait(self, events: list[ServerSentEvent], out: list[Event]) -> list[Event]:
        """Keep events that do not tell their dialect until one does — but not without end: past
        `WAITING_LIMIT` characters (or `WAITING_EVENTS` events) the stream is read as chat, as it
        is when it ends before telling, and says so."""
        self._waiting.extend(events)
        self._waiting_chars += sum(len(sse.data) for sse in events)
        if self._waiting_chars > WAITING_LIMIT or len(self._waiting) > WAITING_EVENTS:
            out.append(Problem(_NOT_TOLD))
            out += self._translate_waiting("chat")
        return out

    def _say(self, notes: set[str], out: list[Event]) -> None:
        """What the JSON edge mended (`_json.loads`), as one warning each per stream — first in
        the batch, since a terminator in it ends the answer and nothing after it is folded."""
        out[:0] = [Problem(note) for note in sorted(notes - self._said)]
        self._said |= notes
        notes.clear()

    def _translate_waiting(self, name: str) -> list[Event]:
        self.dialect = make_dialect(name, self.provider, self.alternatives)
        waiting, self._waiting = self._waiting, []
        self._waiting_chars = 0
        out: list[Event] = []
        for sse in waiting:
            try:
                out += self.dialect.translate(sse)
            except RecursionError:
                out.append(Problem(_TOO_DEEP))
            except Exception as exc:
                out.append(_unreadable(exc))
        if self.dialect.notes:
            self._say(self.dialect.notes, out)
        return out

    def _legacy_fields(self, fields: list[tuple[str, str]]) -> list[Event]:
        """llama.cpp before PR #16109 sent errors as a non-standard `error:` field line. A `retry:`
        too long to be a time is here too (the decoder ignored it): said once."""
        out: list[Event] = []
        for name, value in fields:
            if name == "retry":
                if _RETRY_IGNORED not in self._said:
                    self._said.add(_RETRY_IGNORED)
                    out.append(Problem(_RETRY_IGNORED.format(len(value))))
                continue
            if name != "error":
                continue
            try:
                obj = loads(value)
            except ValueError:
                obj = {"message": value}
            out.append(error_from_object(obj if isinstance(obj, dict) else {"message": value}))
        return out
