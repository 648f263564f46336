"""A hostile HTTP/1.1 server on loopback, and the wire pieces its scripted replies are made of.

It writes raw HTTP by hand, as a bad server does: a body kept open after the terminator, a
connection cut in the middle of a chunked body, a body trickled a piece at a time, an error that
quotes back the key it was sent. Shared by `test_hostile.py` and `test_faults.py`.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field
from typing import Optional, Union

SSE = (("Content-Type", "text/event-stream"),)
JSON = (("Content-Type", "application/json"),)
HTML = (("Content-Type", "text/html; charset=utf-8"),)
#: How long the server keeps a body open after its last byte: far beyond any test's patience, so
#: that a client seen leaving meanwhile (`Visit.left`) did not wait for the end of the body, even
#: on a loaded machine. Below the tests' stall timeout (30 s), so that a client that waited on
#: could not leave by its stall timeout instead.
HOLD = 20.0


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
PATH_OF = {"chat": "chat/completions", "responses": "responses", "messages": "messages"}

# --------------------------------------------------------------------------- the hostile server


@dataclass(frozen=True)
class Reply:
    """What the server writes for one path. `end`: "finish" (a proper end of the body), "cut" (the
    connection closes in the middle of a chunked body) or "hold" (the body stays open, and the
    server waits to see the client leave). `pace`: seconds between pieces (a trickle), also
    between repeats of `loop` (pieces sent over and over until the client leaves). `echo`: the
    name of a request header whose value the body quotes, as in `{"error": {"message": "Bad key:
    <value>"}}` (401 bodies that quote the key)."""

    body: tuple[bytes, ...] = ()
    status: str = "200 OK"
    headers: tuple[tuple[str, str], ...] = SSE
    end: str = "finish"
    pace: float = 0.0
    loop: tuple[bytes, ...] = ()
    echo: Optional[str] = None


@dataclass
class Visit:
    """One request as the server saw it; `left` is set when the client closed the connection."""

    path: str
    headers: dict[str, str] = field(default_factory=dict)
    left: threading.Event = field(default_factory=threading.Event)
    #: The request body as sent (a tool loop's second request carries the results).
    body: bytes = b""

    def json(self) -> dict:
        return json.loads(self.body)


class _Handler(socketserver.BaseRequestHandler):
    server: HostileServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        path, headers, request_body = self._read_request(sock)
        visit = Visit(path, headers, body=request_body)
        earlier = sum(v.path == path for v in self.server.visits)
        self.server.visits.append(visit)
        reply = self.server.replies.get(
            path, Reply((b"no such path",), "404 Not Found", (("Content-Type", "text/plain"),))
        )
        if isinstance(reply, list):  # replies served in turn, the last one again and again
            reply = reply[min(earlier, len(reply) - 1)]
        body = reply.body
        if reply.echo is not None:
            quoted = headers.get(reply.echo.lower(), "")
            body = (json.dumps({"error": {"message": f"Bad key: {quoted}", "code": "invalid_api_key"}}).encode(),)
        chunked = reply.end != "finish"
        head = [f"HTTP/1.1 {reply.status}", *(f"{k}: {v}" for k, v in reply.headers)]
        if chunked:
            head.append("Transfer-Encoding: chunked")
        else:
            head += [f"Content-Length: {sum(map(len, body))}", "Connection: close"]
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            for piece in body:  # one write per event, as real providers do
                self._send(sock, piece, chunked, reply.pace)
            while reply.loop and not self.server.stopping.is_set():
                for piece in reply.loop:
                    self._send(sock, piece, chunked, reply.pace)
        except OSError:  # the client left
            visit.left.set()
            return
        if reply.end == "hold":
            self._hold(sock, visit)
        # "cut" and "finish" simply close: a chunked body without its last chunk is cut short.

    def _send(self, sock: socket.socket, piece: bytes, chunked: bool, pace: float) -> None:
        if pace:
            time.sleep(pace)
        sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)

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
                visit.left.set()
                return


class HostileServer(socketserver.ThreadingTCPServer):
    """An HTTP/1.1 server on 127.0.0.1 that plays scripted raw replies, one thread per connection."""

    allow_reuse_address = True
    daemon_threads = False
    block_on_close = True  # server_close() joins the handlers, which end as soon as `stopping` is set

    def __init__(self, replies: dict[str, Union[Reply, list[Reply]]]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.replies = replies
        self.visits: list[Visit] = []
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, case: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{case}/v1"

    def visit(self, path: str) -> Visit:
        return next(v for v in reversed(self.visits) if v.path == path)

    def start(self) -> HostileServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()
        self._thread.join(5)
