"""Wire dialects: each owns its API in both directions, as an h11 connection owns its reader and
its writer. The request side (path, auth style, body, the continuation of a partial answer) is
declared on the dialect class; an instance is the reader, a translator from Server-Sent Events to
normalized events.

`Normalizer` is the pipeline's middle: bytes in (through `SSEDecoder`), normalized events out.
It detects the dialect from the first event that tells, unless the caller names it, and turns
the decoder's side channels (comments, an unterminated last block, llama.cpp's legacy `error:`
field line) into events too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar, Optional, Protocol, Union

from .._json import loads
from ..errors import error_from_object
from ..events import Event, Heartbeat, Problem, Terminator
from ..providers import APIS, Auth, Provider, get_provider
from ..sse import ServerSentEvent, SSEDecoder
from ._request import Messages
from .chat import ChatDialect
from .messages import MessagesDialect
from .responses import ResponsesDialect

__all__ = [
    "Dialect",
    "ChatDialect",
    "ResponsesDialect",
    "MessagesDialect",
    "Normalizer",
    "detect_dialect",
    "dialect_class",
    "DIALECTS",
]

DIALECTS = APIS

_MESSAGES_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)


class Dialect(Protocol):
    """What every dialect declares (the request side) and does (read events)."""

    name: ClassVar[str]
    path: ClassVar[str]
    auth: ClassVar[Auth]
    headers: ClassVar[tuple[tuple[str, str], ...]]

    @staticmethod
    def build_body(
        model: str, messages: Messages, params: Mapping[str, Any], *, include_usage: bool
    ) -> dict[str, Any]: ...

    @staticmethod
    def continuation(partial: str) -> tuple[str, list[dict[str, Any]]]: ...

    def translate(self, sse: ServerSentEvent) -> list[Event]: ...

    def finish(self) -> list[Event]: ...


_CLASSES: dict[str, Any] = {"chat": ChatDialect, "responses": ResponsesDialect, "messages": MessagesDialect}


def dialect_class(name: str) -> type[Dialect]:
    """The dialect class of an API name (its request side is on the class)."""
    try:
        return _CLASSES[name]
    except KeyError:
        raise ValueError(f"unknown dialect {name!r}; expected one of: {', '.join(DIALECTS)}") from None


def detect_dialect(sse: ServerSentEvent) -> Optional[str]:
    """The dialect an event belongs to, or None when it does not tell (an `error`, a bad line)."""
    name = sse.event
    if name.startswith("response."):
        return "responses"
    if name in _MESSAGES_EVENTS:
        return "messages"
    data = sse.data.lstrip()
    if data.startswith("[DONE]"):
        return "chat"
    if not data.startswith("{"):
        return None
    try:
        obj = loads(data)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if isinstance(kind, str):
        if kind.startswith("response."):
            return "responses"
        if kind in _MESSAGES_EVENTS:
            return "messages"
    if "choices" in obj or str(obj.get("object", "")).startswith(("chat.completion", "venym.")):
        return "chat"
    return None


def make_dialect(name: str, provider: Provider) -> Dialect:
    """A reader for one stream; the chat reader splits `<think>` tags for the presets that ask."""
    if name == ChatDialect.name:
        return ChatDialect(think_tags=provider.think_tags)
    return dialect_class(name)()


class Normalizer:
    """Bytes of one `text/event-stream` body in, normalized events out. Sans-IO."""

    def __init__(
        self,
        dialect: Optional[str] = None,
        provider: Union[str, Provider, None] = None,
        *,
        think_tags: Optional[bool] = None,
    ) -> None:
        self.provider = provider if isinstance(provider, Provider) else get_provider(provider)
        if think_tags is not None:
            self.provider = replace(self.provider, think_tags=think_tags)
        self.decoder = SSEDecoder()
        self.dialect: Optional[Dialect] = make_dialect(dialect, self.provider) if dialect else None
        self._waiting: list[ServerSentEvent] = []  # events seen before the dialect was known

    @property
    def dialect_name(self) -> Optional[str]:
        return self.dialect.name if self.dialect is not None else None

    def feed(self, data: bytes) -> list[Event]:
        decoder = self.decoder
        events = decoder.feed(data)
        if events or decoder.comments or decoder.unknown_fields:
            return self._events(events)
        return []

    def close(self) -> list[Event]:
        decoder = self.decoder
        out = self._events(decoder.close())
        if self.dialect is None and self._waiting:
            out += self._translate_waiting("chat")
        tail = decoder.unterminated
        if tail is not None and tail.data:
            if tail.data.strip() == "[DONE]" and self.dialect_name in (None, "chat"):
                out.append(Terminator())  # llama.cpp: `data: [DONE]\n` without its blank line
            else:
                out.append(Problem("the stream ended in the middle of an event; that event was discarded"))
        if self.dialect is not None:
            out += self.dialect.finish()
        return out

    def _events(self, events: list[ServerSentEvent]) -> list[Event]:
        decoder = self.decoder
        out: list[Event] = []
        if decoder.comments:
            out.extend(Heartbeat(c.strip()) for c in decoder.take_comments())
        if decoder.unknown_fields:
            out.extend(self._legacy_fields(decoder.take_unknown_fields()))
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
                self._waiting.extend(events)
                return out
        assert dialect is not None  # known now, or the events waited above
        translate = dialect.translate
        for sse in events:
            out += translate(sse)
        return out

    def _translate_waiting(self, name: str) -> list[Event]:
        self.dialect = make_dialect(name, self.provider)
        waiting, self._waiting = self._waiting, []
        out: list[Event] = []
        for sse in waiting:
            out += self.dialect.translate(sse)
        return out

    @staticmethod
    def _legacy_fields(fields: list[tuple[str, str]]) -> list[Event]:
        """llama.cpp before PR #16109 sent errors as a non-standard `error:` field line."""
        out: list[Event] = []
        for name, value in fields:
            if name != "error":
                continue
            try:
                obj = loads(value)
            except ValueError:
                obj = {"message": value}
            out.append(error_from_object(obj if isinstance(obj, dict) else {"message": value}))
        return out
