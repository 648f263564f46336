"""The client: the only module that does network I/O (httpx + anyio).

`stream_into()` is the one way through: it builds the HTTP request for a provider, checks the
status before reading any event (a non-2xx body becomes a readable error), feeds the bytes
through the sans-IO pipeline into a `StreamState`, and closes the connection at once when its
task is cancelled. It never raises for what the provider or the network did: that ends up in
the state, with the partial answer kept. Every other entry point is a thin wrapper around it.
"""

from __future__ import annotations

import os
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, AsyncIterator, Callable, Mapping, Optional, Sequence, Union

import anyio
import httpx

from ._json import loads
from .dialects import Normalizer
from .errors import HTTPStatusError, IncompleteStreamError, StreamError, error_from_http, summarize_body
from .events import ErrorEvent, Event, Terminator, TextDelta
from .providers import DEMO_FLAVORS, Provider, get_provider
from .recording import Recorder
from .sse import ServerSentEvent
from .state import StreamState

__all__ = [
    "StreamRequest",
    "Secret",
    "make_request",
    "stream_into",
    "astream",
    "arun",
    "run",
    "continue_request",
    "Chat",
    "DEFAULT_STALL_TIMEOUT",
]

#: Seconds without a single byte (keep-alive comments count) before a stream counts as stalled.
#: Generous: providers send keep-alives every 15 s, and queues can hold the first token for long.
DEFAULT_STALL_TIMEOUT = 120.0
_CONNECT_TIMEOUT = 15.0
_ERROR_BODY_LIMIT = 64 * 1024

Notify = Callable[[], None]
Prompt = Union[str, Sequence[Mapping[str, Any]]]


class Secret:
    """An API key that never shows itself: not in a repr, a str, an f-string, pickle or JSON."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __reduce__(self) -> Any:
        raise TypeError("an API key is not pickled")

    def __bool__(self) -> bool:
        return bool(self._value)


@dataclass
class StreamRequest:
    """Everything needed to open one stream. Its repr names the key's variable, never the key."""

    provider: Provider
    api: str
    model: str
    messages: list[dict[str, Any]]
    base_url: str
    params: dict[str, Any] = field(default_factory=dict)
    api_key: Optional[Secret] = field(default=None, repr=False)
    stall_timeout: float = DEFAULT_STALL_TIMEOUT
    #: Set when the embedded provider stands in for a real one (no key was found).
    offline_note: Optional[str] = None
    #: Text the answer continues (a Continue after an incomplete answer); shown before it.
    prefix: str = ""

    @property
    def url(self) -> str:
        path = {"chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}[self.api]
        return self.base_url.rstrip("/") + path

    @property
    def max_tokens(self) -> Optional[int]:
        for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            value = self.params.get(name)
            if isinstance(value, int):
                return value
        return None

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json", **dict(self.provider.headers)}
        key = self.api_key.reveal() if self.api_key else None
        if key:
            if self.api == "messages":
                headers["x-api-key"] = key
                headers.setdefault("anthropic-version", "2023-06-01")
            if self.provider.name != "anthropic":
                headers["Authorization"] = f"Bearer {key}"
        return headers

    def body(self) -> dict[str, Any]:
        params = dict(self.params)
        if self.api == "chat":
            body: dict[str, Any] = {"model": self.model, "messages": self.messages, "stream": True}
            if self.provider.stream_usage:
                body["stream_options"] = {"include_usage": True}
        elif self.api == "responses":
            body = {"model": self.model, "input": self.messages, "stream": True}
            if "max_tokens" in params:
                params["max_output_tokens"] = params.pop("max_tokens")
        else:
            system = [m["content"] for m in self.messages if m.get("role") == "system"]
            body = {
                "model": self.model,
                "messages": [m for m in self.messages if m.get("role") != "system"],
                "max_tokens": 4096,
                "stream": True,
            }
            if system:
                body["system"] = "\n\n".join(str(s) for s in system)
        body.update(params)
        return body

    def redact(self, text: str) -> str:
        """Remove the key from any text that leaves this module (an error message, a log line)."""
        key = self.api_key.reveal() if self.api_key else ""
        return text.replace(key, "***") if len(key) >= 4 else text


def make_request(
    prompt: Prompt,
    *,
    provider: Union[str, Provider, None] = None,
    model: Optional[str] = None,
    api: Optional[str] = None,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    system: Optional[str] = None,
    offline: Optional[bool] = None,
    stall_timeout: float = DEFAULT_STALL_TIMEOUT,
    **params: Any,
) -> StreamRequest:
    """Build a request from a prompt (or a list of messages) and a provider preset.

    The key comes from `api_key=` or the preset's environment variable. `offline=True` streams
    from the embedded provider's imitation of the preset; `offline=None` (the default) does so
    only when no key is found — and says so in the view — so that a notebook runs anywhere.
    Any other keyword (temperature, max_tokens, tools, ...) goes into the request body.
    """
    preset = provider if isinstance(provider, Provider) else get_provider(provider)
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    key = api_key if api_key is not None else (os.environ.get(preset.key_env) if preset.key_env else None)
    chosen_api = api or preset.default_api
    if chosen_api not in ("chat", "responses", "messages"):
        raise ValueError(f"unknown api {chosen_api!r}; expected 'chat', 'responses' or 'messages'")
    note = None
    if base_url is None:
        needs_demo = preset.name == "demo" or offline or (offline is None and not key and not preset.key_optional)
        if needs_demo:
            base_url, note = _demo_base_url(preset)
        else:
            base_url = preset.base_url
    model = model or (os.environ.get(preset.model_env) if preset.model_env else None) or preset.default_model
    if not model and note is not None:
        model = "demo"  # offline, any name will do: the embedded provider answers them all
    if not model:
        raise ValueError(f"provider {preset.name!r} has no default model; pass model=")
    return StreamRequest(
        provider=preset,
        api=chosen_api,
        model=model,
        messages=messages,
        base_url=base_url,  # type: ignore[arg-type]
        params=params,
        api_key=Secret(key) if key else None,
        stall_timeout=stall_timeout,
        offline_note=note,
    )


def _demo_base_url(preset: Provider) -> tuple[str, Optional[str]]:
    from .server import start_server  # the embedded provider starts on first use

    server = start_server()
    if preset.name == "demo":
        return server.base_url, None
    if preset.name in DEMO_FLAVORS:
        where, flavor = server.flavor_url(preset.name), f"its {preset.name} flavor"
    else:
        where, flavor = server.base_url, "its generic OpenAI-compatible route"
    reason = f"no {preset.key_env} is set" if preset.key_env else "offline"
    return where, f"Offline demo: {reason}, so the embedded provider answers with {flavor}."


# --------------------------------------------------------------------------- the one way through


async def stream_into(
    request: StreamRequest,
    state: StreamState,
    *,
    notify: Optional[Notify] = None,
    client: Optional[httpx.AsyncClient] = None,
    record: Union[str, "os.PathLike[str]", None] = None,
) -> StreamState:
    """Stream `request` into `state`, calling `notify()` after each batch of events.

    Returns the closed state. Cancelling the task leaves the `async with` block, which closes
    the connection at once; the state becomes `cancelled`, keeps what arrived, and the
    cancellation propagates. Provider and network failures never raise: they are in the state.
    """
    state.model = state.model or request.model
    state.provider = state.provider or request.provider.name
    if request.prefix and not state.text_length:
        state.apply(TextDelta(request.prefix))
    state.begin(time.monotonic())
    recorder = Recorder(record, request) if record is not None else None
    _notify = notify or _nothing
    try:
        async with _client(client, request) as http:
            async for events in _event_batches(http, request, recorder):
                now = time.monotonic()
                for event in events:
                    state.apply(event, now)
                _notify()
            state.close(now=time.monotonic())
    except anyio.get_cancelled_exc_class():
        state.close(cancelled=True, now=time.monotonic())
        _notify()
        raise
    except _Incomplete as why:
        state.close(reason=str(why), now=time.monotonic())
    except Exception as exc:  # a bug or a surprise must still end up in the view, redacted
        state.apply(ErrorEvent(request.redact(f"{type(exc).__name__}: {exc}"), "client_error"))
        state.close(now=time.monotonic())
    finally:
        if recorder is not None:
            recorder.close(state)
    _notify()
    return state


class _Incomplete(Exception):
    """The stream stopped before its terminator; the message says why, in plain words."""


@asynccontextmanager
async def _client(client: Optional[httpx.AsyncClient], request: StreamRequest) -> AsyncIterator[httpx.AsyncClient]:
    if client is not None:
        yield client
        return
    timeout = httpx.Timeout(connect=_CONNECT_TIMEOUT, read=request.stall_timeout, write=30.0, pool=30.0)
    async with httpx.AsyncClient(timeout=timeout, trust_env=True) as http:
        yield http


async def _event_batches(
    http: httpx.AsyncClient, request: StreamRequest, recorder: Optional[Recorder]
) -> AsyncIterator[list[Event]]:
    """Yield normalized events per network read; raise `_Incomplete` when the stream breaks."""
    normalizer = Normalizer(request.api, request.provider)
    try:
        async with http.stream("POST", request.url, json=request.body(), headers=request.headers()) as response:
            if not response.is_success:
                body = await _read_limited(response)
                if recorder is not None:
                    recorder.response(response.status_code, body)
                yield [error_from_http(response.status_code, body, response.headers)]
                return
            content_type = response.headers.get("content-type", "")
            if "text/event-stream" not in content_type:
                body = await _read_limited(response)
                yield _not_a_stream(normalizer, body, content_type)
                return
            async for chunk in response.aiter_raw():
                if recorder is not None:
                    recorder.chunk(chunk)
                events = normalizer.feed(chunk)
                if events:
                    yield events
            tail = normalizer.close()
            if tail:
                yield tail
    except httpx.TimeoutException as exc:
        if isinstance(exc, httpx.ConnectTimeout):
            yield [ErrorEvent(f"Could not connect to {_where(request)} within {_CONNECT_TIMEOUT:g} s.", "connect_timeout")]
            return
        yield normalizer.close()
        raise _Incomplete(
            f"no data arrived for {request.stall_timeout:g} s, so streamwidgets stopped waiting (the stream stalled)."
        ) from None
    except httpx.ConnectError as exc:
        yield [ErrorEvent(request.redact(f"Could not connect to {_where(request)}: {_reason(exc)}."), "connect_error")]
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.NetworkError) as exc:
        yield normalizer.close()
        raise _Incomplete(
            request.redact(f"the connection closed before the answer was finished ({_reason(exc)}).")
        ) from None


def _not_a_stream(normalizer: Normalizer, body: bytes, content_type: str) -> list[Event]:
    """A 2xx that is not an event stream: a whole JSON answer (stream ignored) or an error page."""
    try:
        obj = loads(body.decode("utf-8", "replace")) if body.strip()[:1] == b"{" else None
    except ValueError:
        obj = None
    if isinstance(obj, dict) and normalizer.dialect is not None:
        events = normalizer.dialect.translate(ServerSentEvent("message", body.decode("utf-8", "replace")))
        if obj.get("error") is None:
            events.append(Terminator())
        return events
    summary = summarize_body(body.decode("utf-8", "replace").strip()) or "an empty body"
    return [ErrorEvent(f"Expected an event stream but got {content_type or 'no content type'}: {summary}", "not_a_stream")]


async def _read_limited(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_raw():
        body += chunk
        if len(body) >= _ERROR_BODY_LIMIT:
            break
    return bytes(body)


def _where(request: StreamRequest) -> str:
    url = httpx.URL(request.base_url)
    return f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port else "")


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.rstrip(".")


def _nothing() -> None:
    pass


# --------------------------------------------------------------------------- entry points


async def astream(prompt: Union[Prompt, StreamRequest], **options: Any) -> AsyncIterator[Event]:
    """Yield the normalized events of one stream as they arrive (closing the connection if you stop)."""
    request = prompt if isinstance(prompt, StreamRequest) else make_request(prompt, **options)
    async with _client(None, request) as http:
        try:
            async for events in _event_batches(http, request, None):
                for event in events:
                    yield event
        except _Incomplete:
            return


async def arun(
    prompt: Union[Prompt, StreamRequest],
    *,
    raise_on_error: bool = False,
    notify: Optional[Notify] = None,
    record: Union[str, "os.PathLike[str]", None] = None,
    **options: Any,
) -> StreamState:
    """Stream one answer and return its final state (scripts, tests, headless use).

    With `raise_on_error=True`, an error raises `HTTPStatusError` (non-2xx) or `StreamError`,
    and an incomplete stream `IncompleteStreamError`; each carries the state with the partial answer.
    """
    request = prompt if isinstance(prompt, StreamRequest) else make_request(prompt, **options)
    state = await stream_into(request, StreamState(), notify=notify, record=record)
    if raise_on_error:
        _raise_for(state)
    return state


def run(prompt: Union[Prompt, StreamRequest], **options: Any) -> StreamState:
    """The blocking form of `arun()`, for scripts. In a notebook use `show()` or `await arun()`."""
    try:
        import asyncio

        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(lambda: arun(prompt, **options))
    raise RuntimeError("run() blocks, and an event loop is already running here: use `await arun(...)` or `show(...)`")


def _raise_for(state: StreamState) -> None:
    if state.status == "error":
        if state.error is not None and state.error.http_status is not None:
            raise HTTPStatusError(state)
        raise StreamError(state)
    if state.status == "incomplete":
        raise IncompleteStreamError(state)


def continue_request(request: StreamRequest, state: StreamState) -> StreamRequest:
    """Ask again so that the model carries on from a partial answer (as the Venym page advises).

    Messages API: the partial answer is an assistant prefill, which the model continues.
    Chat and Responses: the partial answer goes in as an assistant turn with a short instruction.
    The new request's `prefix` makes the new state start with the whole partial answer.
    """
    partial = state.text if state.text.startswith(request.prefix) else request.prefix + state.text
    if request.api == "messages":
        partial = partial.rstrip()  # a prefill may not end in white space; the model adds it back
    base = request.messages
    if request.prefix:  # continuing a continuation: replace the turns the last one added
        base = base[: -len(_continuation(request.api, ""))]
    return replace(request, messages=[dict(m) for m in base] + _continuation(request.api, partial), prefix=partial)


def _continuation(api: str, partial: str) -> list[dict[str, Any]]:
    if api == "messages":
        return [{"role": "assistant", "content": partial}]
    return [
        {"role": "assistant", "content": partial},
        {"role": "user", "content": "Continue exactly where you stopped, without repeating anything."},
    ]


class Chat:
    """A multi-turn conversation: each answer, complete or partial, is appended to the history."""

    def __init__(self, *, system: Optional[str] = None, **options: Any) -> None:
        self.options = options
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []

    def request(self, text: str) -> StreamRequest:
        """Add the user's turn and build the request for the answer."""
        self.messages.append({"role": "user", "content": text})
        return make_request(list(self.messages), **self.options)

    def record(self, state: StreamState) -> None:
        """Add the answer (what arrived of it) to the history."""
        if state.text:
            self.messages.append({"role": "assistant", "content": state.text})

    async def send(self, text: str, *, notify: Optional[Notify] = None) -> StreamState:
        state = StreamState()
        try:
            await stream_into(self.request(text), state, notify=notify)
        finally:
            self.record(state)
        return state

    def __repr__(self) -> str:
        return f"<Chat {len(self.messages)} messages, options={sorted(self.options)}>"
