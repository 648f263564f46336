"""What a router hands the edge: the reply to one request, and the refusals the edge itself makes.

The edge (`_http`) knows HTTP, sockets and clocks; a router knows what a request means. They
meet here. A `Router` turns a whole request into a `Reply`: a JSON body (`JsonReply`), a 200
event stream (`StreamReply`: a writer's steps on a token clock) or no answer at all
(`SilentReply`). A `Rejection` is a refused request, raised or handed to `Router.refuse`, which
words it in the envelope of the route it was sent to. Pure data: nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Optional, Protocol, Union

__all__ = [
    "Router",
    "Reply",
    "JsonReply",
    "StreamReply",
    "SilentReply",
    "Rejection",
    "Pacing",
    "Frame",
    "Stall",
    "Cutoff",
    "Step",
    "Steps",
]


@dataclass
class Rejection(Exception):
    """A request the server answers with an error status instead of a stream.

    `type`, `code` and `param` are OpenAI's fields, `anthropic_type` Anthropic's; each route's
    envelope takes what it needs (and reads the rest from `status`). Not frozen: raising an
    exception sets attributes on it (`__traceback__`, `__context__`).
    """

    status: int
    message: str
    type: str = "invalid_request_error"
    code: Optional[str] = None
    param: Optional[str] = None
    anthropic_type: str = "invalid_request_error"
    retry_after: Optional[int] = None
    #: Answer, then close the connection: what follows this request cannot be trusted (a
    #: request that frames its body two ways may hide a second request inside it).
    close: bool = False

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.message}"


@dataclass(frozen=True)
class Pacing:
    """Seconds and rates; `tokens_per_second == 0` means as fast as possible, `keepalive_interval == 0` none."""

    tokens_per_second: float
    first_token_delay: float
    keepalive_interval: float


@dataclass(frozen=True)
class Frame:
    """Bytes to write. `tokens` > 0 paces the frame on the token clock; so does `on_clock`
    for a frame that carries no token but must not come before its time (search results that
    arrive when the search is over)."""

    data: bytes
    tokens: int = 0
    on_clock: bool = False


@dataclass(frozen=True)
class Stall:
    """Write nothing more and keep the connection open until the client leaves."""


@dataclass(frozen=True)
class Cutoff:
    """End the stream now, without the dialect's terminator, and close the connection:
    after a proper end of the HTTP body, or (`abort`) in the middle of it."""

    abort: bool = False


Step = Union[Frame, Stall, Cutoff]
Steps = Iterator[Step]


@dataclass(frozen=True)
class JsonReply:
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    #: Seconds to wait before answering (a non-streamed answer takes as long to generate).
    delay: float = 0.0


@dataclass(frozen=True)
class StreamReply:
    """A 200 stream: the writer's steps, paced by `pacing`, with `heartbeat` while waiting
    (`heartbeat_mode` `waiting`: before the first token only; `silence`: after any silence).
    `path`, `api`, `flavor`, `model` and `scenario` go into the connection's record."""

    path: str
    api: str
    flavor: str
    model: str
    scenario: str
    steps: Steps
    pacing: Pacing
    heartbeat: bytes
    heartbeat_mode: str
    headers: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SilentReply:
    """No answer at all: `drop` closes the connection, `hang` waits until the client leaves."""

    action: str


Reply = Union[JsonReply, StreamReply, SilentReply]


class Router(Protocol):
    """What the edge asks of whatever serves the requests (the demo's routes)."""

    def route(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes, *, now: float, nonce: str
    ) -> Reply:
        """The reply to one whole request; `now` is the wall clock, `nonce` makes its ids.
        Called in a worker thread."""
        ...

    def refuse(self, target: str, rejection: Rejection, nonce: str) -> JsonReply:
        """A refused request's answer, in the envelope of the route `target` names."""
        ...
