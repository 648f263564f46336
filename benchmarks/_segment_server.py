"""A loopback chat-completions server that sends what real providers send: one SSE event per TCP
segment (`TCP_NODELAY`, one `send` per event, chunked transfer encoding), at a steady rate.

It is independent of the embedded provider (plain sockets and one thread per connection), and
runs in its own process so that its CPU never mixes with what a benchmark measures. The stream
is chosen by the path, so any client (streamwidgets, httpx, Panel's callback) asks for it alike:

    POST /<text>/<tokens>/<rate>/v1/chat/completions     text: long | math | cycle | wide; rate: tokens/s

(`cycle` repeats the 20,083 tokens of `long` as often as asked, `wide` too with every token
padded so that each event is ~250 bytes; a rate of 0 sends as fast as the socket takes it.)

`GET /records` answers the log of every stream as JSON: when it opened, when the first token
and the last byte were sent, when the client went away (the socket is watched while waiting
between sends, so a disconnect is seen at once), all on the machine's monotonic clock.

    python benchmarks/_segment_server.py        # prints the port, serves until stdin closes
"""

from __future__ import annotations

import json
import os
import random
import re
import select
import socket
import subprocess
import sys
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

import httpx

__all__ = ["SegmentServer", "answer_tokens", "serve"]

_WORD = re.compile(r"\s*\S+")


@lru_cache(maxsize=8)
def answer_tokens(text: str, tokens: int) -> tuple[str, ...]:
    """`tokens` word-tokens (a word with the whitespace before it) of a long markdown answer:
    `long` is the demo's tutorial (headings, lists, tables, code), `math` is prose dense with
    `$..$` and `$$..$$` formulas. Both begin with the word `Here`. `cycle` and `wide`: `long`'s
    first 20,083 tokens over and over (`wide` with each padded to ~100 characters)."""
    if text in ("cycle", "wide"):
        base = answer_tokens("long", 20_083)
        pad = 100 if text == "wide" else 0
        return tuple(base[i % len(base)].ljust(pad) for i in range(tokens))
    if text == "long":
        from streamwidgets.server.demo._long import long_answer_tokens

        source = "".join(long_answer_tokens("a long tutorial", int(tokens * 2.2) + 400, "bench"))
    elif text == "math":
        source = _math_answer(tokens)
    else:
        raise ValueError(f"unknown text {text!r}: long or math")
    source = "Here it is.\n\n" + source  # a word first: a benchmark spots the first token by it
    words = _WORD.findall(source)
    if len(words) < tokens:
        raise ValueError(f"the {text} answer has only {len(words)} words")
    return tuple(words[:tokens])


_VARS = "abcxyzmnkt"
_GREEK = (r"\alpha", r"\beta", r"\lambda", r"\sigma", r"\theta", r"\mu", r"\omega")
_WORDS = [
    "the",
    "sum",
    "of",
    "each",
    "term",
    "bounds",
    "a",
    "series",
    "where",
    "we",
    "see",
    "that",
    "so",
    "it",
    "follows",
    "and",
    "hence",
    "for",
    "all",
]


def _math_answer(tokens: int) -> str:
    rng = random.Random("math")
    parts: list[str] = ["# Series, integrals and bounds\n\n"]
    count = 0
    while count < tokens * 1.1 + 100:
        if rng.random() < 0.15:
            parts.append(f"## Part {len(parts)}\n\n")
        sentence: list[str] = []
        for _ in range(rng.randint(8, 16)):
            if rng.random() < 0.25:
                sentence.append(f"${_inline(rng)}$")
            else:
                sentence.append(rng.choice(_WORDS))
        block = " ".join(sentence) + ".\n\n"
        if rng.random() < 0.4:
            block += f"$$\n{_display(rng)}\n$$\n\n"
        parts.append(block[0].upper() + block[1:])
        count += len(_WORD.findall(parts[-1]))
    return "".join(parts)


def _inline(rng: random.Random) -> str:
    a, b = rng.choice(_VARS), rng.choice(_VARS)
    return rng.choice(
        (
            f"{a}_{{{rng.randint(1, 9)}}}^{rng.randint(2, 4)}",
            f"\\frac{{{a}}}{{{b}+{rng.randint(1, 9)}}}",
            f"{rng.choice(_GREEK)} \\le {a}",
            f"\\sqrt{{{a}^2 + {b}^2}}",
            f"{a} \\in \\mathbb{{R}}",
        )
    )


def _display(rng: random.Random) -> str:
    a, g = rng.choice(_VARS), rng.choice(_GREEK)
    return rng.choice(
        (
            f"\\sum_{{k=1}}^{{n}} \\frac{{{a}_k}}{{k^{rng.randint(2, 3)}}} \\le {g} \\int_0^1 {a}(t)\\,dt",
            f"\\int_{{-\\infty}}^{{\\infty}} e^{{-{a}^2}}\\,d{a} = \\sqrt{{\\pi}}",
            f"\\lim_{{n \\to \\infty}} \\left(1 + \\frac{{{g}}}{{n}}\\right)^n = e^{{{g}}}",
            f"\\begin{{pmatrix}} {a} & 1 \\\\ 0 & {g} \\end{{pmatrix}}^{{-1}}",
        )
    )


# --------------------------------------------------------------------------- the server


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _event(obj: dict[str, Any]) -> bytes:
    return _chunk(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


@lru_cache(maxsize=8)
def _sends(text: str, tokens: int) -> tuple[bytes, ...]:
    """The body's sends (each one chunk, one event), made once per stream: the first request
    builds them, and a timed one never waits for that."""
    words = answer_tokens(text, tokens)
    envelope = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}

    def choice(delta: dict[str, Any], finish: Optional[str] = None) -> dict[str, Any]:
        return {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    usage = {"prompt_tokens": 12, "completion_tokens": tokens, "total_tokens": tokens + 12}
    sends = [_event(choice({"role": "assistant", "content": ""}))]
    sends += [_event(choice({"content": word})) for word in words]
    sends += [_event(choice({}, "stop")), _event({**envelope, "choices": [], "usage": usage})]
    sends += [_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"]
    return tuple(sends)


class _Server:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def handle(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv(65536)
                if not data:
                    return
                head += data
            header, _, body = head.partition(b"\r\n\r\n")
            lines = header.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = next(
                (int(v) for k, _, v in (h.partition(":") for h in lines[1:]) if k.lower() == "content-length"), 0
            )
            while len(body) < length:
                data = conn.recv(65536)
                if not data:
                    return
                body += data
            if method == "GET" and path == "/records":
                with self.lock:
                    payload = json.dumps(self.records).encode()
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                    b"Connection: close\r\n\r\n%s" % (len(payload), payload)
                )
                return
            text, tokens, rate = path.strip("/").split("/")[:3]
            self.stream(conn, text, int(tokens), float(rate))

    def stream(self, conn: socket.socket, text: str, tokens: int, rate: float) -> None:
        record: dict[str, Any] = {"opened": time.monotonic(), "tokens": tokens, "rate": rate, "text": text}
        record.update(first_token=None, last_byte=None, closed=None, outcome=None, sent=0)
        with self.lock:
            record["id"] = len(self.records) + 1
            self.records.append(record)
        sends = _sends(text, tokens)
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        try:
            conn.sendall(head)
            start = time.monotonic()
            for i, data in enumerate(sends):
                due = start + max(i - 1, 0) / rate if rate else 0.0  # role chunk and first token together, then steady
                while True:
                    wait = due - time.monotonic()
                    readable, _, _ = select.select([conn], [], [], max(wait, 0))
                    if readable and not conn.recv(4096):
                        record["outcome"] = "client_disconnected"
                        return
                    if wait <= 0:
                        break
                conn.sendall(data)
                record["sent"] = i
                if i == 1:
                    record["first_token"] = time.monotonic()
            record["last_byte"] = time.monotonic()
            record["outcome"] = "complete"
            conn.shutdown(socket.SHUT_WR)
            while conn.recv(4096):  # the client closes after the last chunk
                pass
        except OSError:
            record["outcome"] = record["outcome"] or "client_disconnected"
        finally:
            record["closed"] = time.monotonic()


def serve(listener: socket.socket) -> None:
    server = _Server()
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=server.handle, args=(conn,), daemon=True).start()


class SegmentServer:
    """This server in its own process (for a benchmark to start and stop); `records()` is its log."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(
                    [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")]
                ),
            },
        )
        assert self.process.stdout is not None
        self.base = f"http://127.0.0.1:{int(self.process.stdout.readline())}"

    def url(self, text: str, tokens: int, rate: float) -> str:
        return f"{self.base}/{text}/{tokens}/{rate:g}/v1"

    def records(self) -> list[dict[str, Any]]:
        return list(httpx.get(self.base + "/records", timeout=30).json())

    def wait_for_disconnect(self, after: int, timeout: float = 5.0) -> Optional[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            record = next((r for r in self.records() if r["id"] > after and r["closed"] is not None), None)
            if record is not None:
                return record
            time.sleep(0.01)
        return None

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


if __name__ == "__main__":
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    print(listener.getsockname()[1], flush=True)
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    sys.stdin.read()  # serve until the parent closes our stdin (or ends)
