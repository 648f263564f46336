"""The one hostile HTTP/1.1 server on loopback, and the wire pieces its scripted replies are made of.

It writes raw HTTP by hand, as a bad server does: a body kept open after the terminator, a
connection cut in the middle of a chunked body, a body trickled a piece at a time (each piece in
a TCP segment of its own, the client watched for leaving between them), a body framed by hand,
an answer over TLS with a self-signed certificate, an error or an answer that quotes back the key
it was sent. Every test that needs a provider to misbehave, or to behave in one exact way on the
wire, scripts this server: `replies` maps a path to a `Reply`, `expect()` queues one for the next
request to a path, and each request is kept as a `Visit` (what was sent, when each piece went
out, when the client left).

`hostile_fixture(replies)` makes a module's fixture of it: `hostile = hostile_fixture(_replies)`.
"""

from __future__ import annotations

import json
import select
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import pytest

from .http import ENDPOINT

SSE = (("Content-Type", "text/event-stream"),)
JSON = (("Content-Type", "application/json"),)
HTML = (("Content-Type", "text/html; charset=utf-8"),)
#: How long the server keeps a body open after its last byte: far beyond any test's patience, so
#: that a client seen leaving meanwhile (`Visit.left`) did not wait for the end of the body, even
#: on a loaded machine. Below the tests' stall timeout (30 s), so that a client that waited on
#: could not leave by its stall timeout instead.
HOLD = 20.0
#: Where a piece of a `Reply` with `echo` holds this, the key from the echoed header goes (its
#: value without a `Bearer ` scheme, JSON-escaped as the piece is JSON): `chat(ECHO)` streams the
#: key back as text.
ECHO = "{echo}"

# --------------------------------------------------------------------------- wire pieces


def event(obj: dict, name: Optional[str] = None) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(obj)}\n\n".encode()


def chat(content: str = "", finish: Optional[str] = None, **extra) -> bytes:
    delta = {"content": content} if content else {}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return event({"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice], **extra})


def typed(kind: str, **fields) -> bytes:
    """A Responses or Messages event: its type in the event line and in the data."""
    return event({"type": kind, **fields}, kind)


def message_start(output_tokens: int = 1) -> bytes:
    usage = {"input_tokens": 12, "output_tokens": output_tokens}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": usage}
    return typed("message_start", message=message)


def text_block(*pieces: str) -> list[bytes]:
    start = typed("content_block_start", index=0, content_block={"type": "text", "text": ""})
    deltas = [typed("content_block_delta", index=0, delta={"type": "text_delta", "text": p}) for p in pieces]
    return [start, *deltas, typed("content_block_stop", index=0)]


DONE = b"data: [DONE]\n\n"

#: A whole, proper stream per API, each ending with its terminator.
FULL = {
    "chat": [chat("Hello"), chat(" there."), chat(finish="stop"), DONE],
    "perplexity": [
        chat("Hello"),
        chat(" there."),
        event(
            {
                "id": "c1",
                "object": "chat.completion.done",
                "model": "sonar",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
        ),
    ],
    "responses": [
        typed("response.created", response={"id": "resp_1", "model": "m", "status": "in_progress"}),
        typed("response.output_text.delta", item_id="msg_1", delta="Hello"),
        typed("response.output_text.delta", item_id="msg_1", delta=" there."),
        typed(
            "response.completed",
            response={"id": "resp_1", "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 3}},
        ),
    ],
    "messages": [
        message_start(),
        *text_block("Hello", " there."),
        typed("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 3}),
        typed("message_stop"),
    ],
}
API_OF = {"chat": "chat", "perplexity": "chat", "responses": "responses", "messages": "messages"}
#: The path of each API under a base URL (`support.http.ENDPOINT`).
PATH_OF = ENDPOINT

# --------------------------------------------------------------------------- the hostile server


@dataclass(frozen=True)
class Reply:
    """What the server writes for one path. `end`: "finish" (a proper end of the body), "cut" (the
    connection closes in the middle of a chunked body) or "hold" (the body stays open, and the
    server waits to see the client leave). `pace`: seconds between pieces (a trickle), also
    between repeats of `loop` (pieces sent over and over until the client leaves); `gaps`, one
    per piece of `body`, say it piece by piece instead. The client is watched while the server
    waits: one that leaves is seen leaving at once. `echo`: the name of a request header whose
    value the body quotes: the key alone where a piece holds `ECHO`, or, with no body, the value
    as sent, as in `{"error": {"message": "Bad key: <value>"}}` (401 bodies that quote the key). `raw`: the pieces are the
    body as written, framing included (chunk sizes by hand): the head carries `headers` only."""

    body: tuple[bytes, ...] = ()
    status: str = "200 OK"
    headers: tuple[tuple[str, str], ...] = SSE
    end: str = "finish"
    pace: float = 0.0
    loop: tuple[bytes, ...] = ()
    echo: Optional[str] = None
    gaps: tuple[float, ...] = ()
    raw: bool = False

    def __post_init__(self) -> None:
        if self.gaps and len(self.gaps) != len(self.body):
            raise ValueError(f"{len(self.gaps)} gaps for {len(self.body)} pieces")


@dataclass
class Visit:
    """One request as the server saw it; `left` is set when the client closed the connection
    (`left_at` is then its `time.monotonic()`), `done` when the server is done with it."""

    path: str
    headers: dict[str, str] = field(default_factory=dict)
    left: threading.Event = field(default_factory=threading.Event)
    #: The request body as sent (a tool loop's second request carries the results).
    body: bytes = b""
    #: `time.monotonic()` after each piece of the body was written.
    sent_at: list[float] = field(default_factory=list)
    left_at: Optional[float] = None
    done: threading.Event = field(default_factory=threading.Event)

    def json(self) -> dict:
        return json.loads(self.body)

    def leave(self) -> None:
        if self.left_at is None:
            self.left_at = time.monotonic()
        self.left.set()


_NOT_FOUND = Reply((b"no such path",), "404 Not Found", (("Content-Type", "text/plain"),))


class _Handler(socketserver.BaseRequestHandler):
    server: HostileServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # one segment per piece, as providers do
        path, headers, request_body = self._read_request(sock)
        reply, visit = self.server._arrived(path, headers, request_body)
        try:
            self._play(sock, reply, visit)
        finally:
            visit.done.set()

    def _play(self, sock: socket.socket, reply: Reply, visit: Visit) -> None:
        body = reply.body
        if reply.echo is not None:
            quoted = visit.headers.get(reply.echo.lower(), "")
            if body:
                escaped = json.dumps(quoted.removeprefix("Bearer "))[1:-1].encode()
                body = tuple(piece.replace(ECHO.encode(), escaped) for piece in body)
            else:
                error = {"error": {"message": f"Bad key: {quoted}", "code": "invalid_api_key"}}
                body = (json.dumps(error).encode(),)
        chunked = reply.end != "finish" and not reply.raw
        head = [f"HTTP/1.1 {reply.status}", *(f"{k}: {v}" for k, v in reply.headers)]
        if chunked:
            head.append("Transfer-Encoding: chunked")
        elif not reply.raw:
            head += [f"Content-Length: {sum(map(len, body))}", "Connection: close"]
        gaps = reply.gaps or (reply.pace,) * len(body)
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            for gap, piece in zip(gaps, body, strict=True):  # one write per event, as real providers do
                if not self._send(sock, piece, chunked, gap, visit):
                    return
            while reply.loop and not self.server.stopping.is_set():
                for piece in reply.loop:
                    if not self._send(sock, piece, chunked, reply.pace, visit):
                        return
        except OSError:  # the client left
            visit.leave()
            return
        if reply.end == "hold":
            self._hold(sock, visit)
        # "cut" and "finish" simply close: a chunked body without its last chunk is cut short.

    def _send(self, sock: socket.socket, piece: bytes, chunked: bool, gap: float, visit: Visit) -> bool:
        """Write one piece `gap` seconds from now; False if the client left meanwhile (or the
        server is stopping)."""
        if gap and self._left_within(sock, gap):
            visit.leave()
            return False
        if self.server.stopping.is_set():
            return False
        sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        visit.sent_at.append(time.monotonic())
        return True

    def _left_within(self, sock: socket.socket, wait: float) -> bool:
        """Wait `wait` seconds (less if the server stops), watching the connection: True as soon
        as the client closes it."""
        deadline = time.monotonic() + wait
        while True:
            remaining = deadline - time.monotonic()
            if self.server.stopping.is_set():
                return False
            readable, _, _ = select.select([sock], [], [], min(max(remaining, 0), 0.05))
            if readable:
                try:
                    if sock.recv(4096) == b"":
                        return True
                except OSError:
                    return True
            if remaining <= 0:
                return False

    @staticmethod
    def _read_request(sock: socket.socket) -> tuple[str, dict[str, str], bytes]:
        """The request's path, headers and body, after reading its head and body (unread bytes
        would make close() a reset)."""
        data = b""
        while b"\r\n\r\n" not in data and (more := sock.recv(65536)):
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next((int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")), 0)
        while len(body) < length and (more := sock.recv(65536)):
            body += more
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        return (lines[0].split()[1] if lines[0] else ""), headers, body

    def _hold(self, sock: socket.socket, visit: Visit) -> None:
        wrote = time.monotonic()
        sock.settimeout(0.02)
        while time.monotonic() - wrote < HOLD and not self.server.stopping.is_set():
            try:
                gone = sock.recv(4096) == b""
            except TimeoutError:
                continue
            except OSError:
                gone = True
            if gone:
                visit.leave()
                return


Replies = Mapping[str, Union[Reply, list[Reply]]]


class HostileServer(socketserver.ThreadingTCPServer):
    """An HTTP/1.1 server on 127.0.0.1 that plays scripted raw replies, one thread per connection.

    `replies[path]` is the reply to every request for `path`, or a list of replies served in turn
    (the last one again and again); a path with none gets a 404. `tls`: a server-side context,
    to speak HTTPS. Start and stop it with `with HostileServer(replies) as server:`.
    """

    allow_reuse_address = True
    daemon_threads = False
    block_on_close = True  # server_close() joins the handlers, which end as soon as `stopping` is set

    def __init__(self, replies: Optional[Replies] = None, *, tls: Optional[ssl.SSLContext] = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        if tls is not None:  # the handshake happens at accept(); one that fails drops that connection only
            self.socket = tls.wrap_socket(self.socket, server_side=True)
        self.scheme = "http" if tls is None else "https"
        self.replies: dict[str, Union[Reply, list[Reply]]] = dict(replies or {})
        self.visits: list[Visit] = []
        self.stopping = threading.Event()
        self._expected: dict[str, list[tuple[Reply, Visit]]] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def root(self) -> str:
        """`http://127.0.0.1:<port>` (or `https://`)."""
        return f"{self.scheme}://127.0.0.1:{self.server_address[1]}"

    def url(self, case: str) -> str:
        """The base URL of one case: requests to `<url>/chat/completions` go to `/<case>/v1/chat/completions`."""
        return f"{self.root}/{case}/v1"

    def visit(self, path: str) -> Visit:
        return next(v for v in reversed(self.visits) if v.path == path)

    def expect(self, path: str, reply: Reply) -> Visit:
        """Serve `reply` to the next request for `path` that no earlier `expect` is waiting for,
        before anything in `replies`; the returned visit fills in as that request is served."""
        visit = Visit(path)
        with self._lock:
            self._expected.setdefault(path, []).append((reply, visit))
        return visit

    def _arrived(self, path: str, headers: dict[str, str], body: bytes) -> tuple[Reply, Visit]:
        with self._lock:
            queued = self._expected.get(path)
            if queued:
                reply, visit = queued.pop(0)
                visit.headers, visit.body = headers, body
            else:
                earlier = sum(v.path == path for v in self.visits)
                visit = Visit(path, headers, body=body)
                found = self.replies.get(path, _NOT_FOUND)
                reply = found[min(earlier, len(found) - 1)] if isinstance(found, list) else found
            self.visits.append(visit)
        return reply, visit

    def start(self) -> HostileServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()
        self._thread.join(5)

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def hostile_fixture(
    replies: Union[Replies, Callable[[], Replies], None] = None, *, scope: Any = "module", **options: Any
) -> Any:
    """A fixture that serves `replies` (or what calling it returns, when the fixture starts) for
    one module (or `scope`): `hostile = hostile_fixture(_replies)` at a test module's top level;
    the fixture's name is the name it is given there. `options` go to `HostileServer`."""

    @pytest.fixture(scope=scope)
    def serving() -> Iterator[HostileServer]:
        with HostileServer(replies() if callable(replies) else replies, **options) as server:
            yield server

    return serving
