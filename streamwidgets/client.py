"""The client: the only module that does network I/O (httpx + anyio).

`stream_into()` is the one way through: it builds the HTTP request for a provider, checks the
status before reading any event (a non-2xx body becomes a readable error), feeds the bytes
through the sans-IO pipeline into a `StreamState`, and closes the connection at once when its
task is cancelled. It never raises for what the provider or the network did: that ends up in
the state, with the partial answer kept. Every other entry point is a thin wrapper around it.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
import socket
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Union
from urllib.parse import quote

import anyio
import httpx

from ._decode import ACCEPT_ENCODING, UndecodableBody, decoded
from ._reads import gulps
from .dialects import WHOLE_BODY_LIMIT, Dialect, Normalizer, dialect_class
from .dialects._request import TOKEN_LIMIT_NAMES
from .errors import HTTPStatusError, IncompleteStreamError, StreamError, error_from_http, summarize_body
from .events import ErrorEvent, Event, Problem, Terminator, TextDelta
from .feed import Feed, Item, StreamBroke, drain
from .limits import DEFAULT_LIMITS, Limits
from .providers import CUSTOM, DEMO_FLAVORS, Api, Provider, get_provider
from .recording import Recorder
from .retry import DEFAULT_RETRIES, RetryPolicy, retrying, wait_hint
from .sse import is_event_stream
from .state import StreamState, joined_text

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
#: The most seconds spent reading an error's body (or the stall timeout, if shorter): the status
#: is known already, and a body that stalls must not turn a 503 into "the stream stalled".
_ERROR_BODY_WAIT = 10.0

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
    """Everything needed to open one stream. Its repr names the key's variable, never the key.

    The wire shape (path, body, auth header) is the dialect's (`dialects.dialect_class(api)`);
    the preset adds where the server is and how it wants the key.
    """

    provider: Provider
    api: Api
    model: str
    messages: list[dict[str, Any]]
    base_url: str
    params: dict[str, Any] = field(default_factory=dict)
    api_key: Optional[Secret] = field(default=None, repr=False)
    stall_timeout: float = DEFAULT_STALL_TIMEOUT
    #: Ask for usage with `stream_options.include_usage` (chat; the other APIs always send it).
    include_usage: bool = True
    #: Set when the embedded provider stands in for a real one (no key was found).
    offline_note: Optional[str] = None
    #: Text the answer continues (a Continue after an incomplete answer); shown before it.
    prefix: str = ""
    #: Tries after the first when the provider turns the request away before any event (429,
    #: 503, 529) or it cannot connect; 0 disables (`retry.py`). Never after the first byte.
    retries: int = DEFAULT_RETRIES
    #: How much of the stream is kept, and for how long it is read (`limits.Limits`).
    limits: Limits = DEFAULT_LIMITS

    @property
    def dialect(self) -> type[Dialect]:
        return dialect_class(self.api)

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + self.dialect.path

    @property
    def max_tokens(self) -> Optional[int]:
        for name in TOKEN_LIMIT_NAMES:
            value = self.params.get(name)
            if isinstance(value, int):
                return value
        return None

    def headers(self) -> dict[str, str]:
        dialect = self.dialect
        auth = self.provider.auth or dialect.auth
        return {
            "Accept": "text/event-stream",
            "Accept-Encoding": ACCEPT_ENCODING,
            "Content-Type": "application/json",
            **dict(dialect.headers),
            **dict(self.provider.headers),
            **auth.headers(self.api_key.reveal() if self.api_key else None),
        }

    def body(self) -> dict[str, Any]:
        return self.dialect.build_body(self.model, self.messages, self.params, include_usage=self.include_usage)

    def redact(self, text: str) -> str:
        """Remove the key from any text that leaves this module (an error message, a log line),
        in every form a provider may echo it back: as sent, URL-encoded, JSON-escaped."""
        for form in self._key_forms():
            text = text.replace(form, "***")
        return text

    def redact_bytes(self, data: bytes) -> bytes:
        """`redact` for a body as it came in, before anything reads or records it (many 401
        bodies quote the key they refused)."""
        for form in self._key_forms():
            data = data.replace(form.encode("utf-8"), b"***")
        return data

    def _key_forms(self) -> list[str]:
        key = self.api_key.reveal() if self.api_key else ""
        if len(key) < 4:
            return []
        forms = {key, quote(key, safe=""), json.dumps(key)[1:-1]}
        return sorted(forms, key=len, reverse=True)


def make_request(
    prompt: Prompt,
    *,
    provider: Union[str, Provider, None] = None,
    model: Optional[str] = None,
    api: Optional[str] = None,
    base_url: Optional[str] = None,
    api_key: Union[str, Secret, None] = None,
    system: Optional[str] = None,
    offline: Optional[bool] = None,
    stall_timeout: float = DEFAULT_STALL_TIMEOUT,
    include_usage: Optional[bool] = None,
    retries: int = DEFAULT_RETRIES,
    deadline: Optional[float] = DEFAULT_LIMITS.deadline,
    max_answer_chars: int = DEFAULT_LIMITS.answer_chars,
    max_event_chars: int = DEFAULT_LIMITS.event_chars,
    max_warnings: int = DEFAULT_LIMITS.warnings,
    **params: Any,
) -> StreamRequest:
    """Build a request from a prompt (or a list of messages) and a provider preset.

    `api=` must be one the preset serves (a `ValueError` lists them); `base_url=` with no
    `provider=` reaches any server in any of the three dialects. The key comes from `api_key=` or
    the preset's environment variable. `offline=True` streams from the embedded provider's
    imitation of the preset; `offline=None` (the default) does so only when no key is found — and
    says so in the view — so that a notebook runs anywhere. `include_usage` asks a chat server
    for its usage chunk (default: the preset's `stream_options`; pass False for a server that
    rejects unknown fields). `retries` bounds the tries after a 429/503/529 or a failed connect
    before the first event (waiting as the provider asks; 0: no retry). The limits
    (`limits.Limits`, each with a default no lesson reaches):
    `deadline=` seconds for the whole answer (default None: none; `stall_timeout=` still ends a
    stream that sends nothing), `max_answer_chars=` (4,000,000) of answer kept and shown,
    `max_event_chars=` (16 MiB) of one SSE event, `max_warnings=` (100) kept. Any other keyword
    (temperature, max_tokens, tools, ...) goes into the request body.
    """
    limits = Limits(
        event_chars=max_event_chars, answer_chars=max_answer_chars, warnings=max_warnings, deadline=deadline
    )
    _check_prompt(prompt, params)
    if base_url is not None:
        _check_base_url(base_url)
    if isinstance(provider, Provider):
        preset = provider
    else:
        preset = CUSTOM if provider is None and base_url is not None else get_provider(provider)
    chosen_api = preset.check_api(api or preset.default_api)
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    key = api_key if api_key is not None else (os.environ.get(preset.key_env) if preset.key_env else None)
    if isinstance(key, Secret):
        key = key.reveal()
    key = key.strip() if key else None  # a key read from a file keeps its newline; HTTP would quote it
    note = None
    if base_url is None:
        needs_demo = preset.name == "demo" or offline or (offline is None and not key and not preset.key_optional)
        if needs_demo:
            base_url, note = _demo_base_url(preset)
        elif preset.base_url is None:
            raise ValueError(f"provider {preset.name!r} has no base URL; pass base_url=")
        else:
            base_url = (os.environ.get(preset.base_url_env) if preset.base_url_env else None) or preset.base_url
            _check_base_url(base_url)
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
        base_url=base_url,
        params=params,
        api_key=Secret(key) if key else None,
        stall_timeout=stall_timeout,
        include_usage=preset.stream_options if include_usage is None else include_usage,
        offline_note=note,
        retries=RetryPolicy(retries).retries,  # checked here, not at the first 429
        limits=limits,
    )


_SECRET_QUERY = re.compile(r"(?:^|&)(?:api[_-]?key|key|token|access[_-]?token|secret)=", re.I)


def _check_base_url(base_url: str) -> None:
    """A base URL is an address: its scheme is needed, and a key never rides in it (it would
    show in a repr, a recording's header and httpx's log). The key check comes first, on the
    text itself, so that no later message (a bad port, a missing scheme) repeats a key."""
    query = base_url.partition("?")[2].partition("#")[0]
    if "@" in base_url or _SECRET_QUERY.search(query):
        raise ValueError(
            "base_url carries a key (in user:password@ or a ?key= parameter); "
            "pass the address alone, and the key as api_key= (or in the preset's environment variable)"
        )
    if not re.match(r"https?://", base_url, re.I):
        raise ValueError(
            f"base_url {base_url!r} needs its scheme: 'http://{base_url}' (or https:// for a remote server)"
        )
    try:
        httpx.URL(base_url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"base_url {base_url!r} is not a valid address: {exc}") from None


def _check_prompt(prompt: Any, params: Mapping[str, Any]) -> None:
    """One documented way in: the prompt is a string, or the conversation as a list of messages."""
    for name in ("messages", "input"):
        if name in params:
            raise ValueError(
                f"pass the conversation as the prompt (a list of {{'role': ..., 'content': ...}} messages), not {name}="
            )
    if isinstance(prompt, str):
        return
    if prompt is None:
        raise TypeError("the prompt is missing: pass the question as a string, or a conversation as a list of messages")
    if isinstance(prompt, Sequence) and not isinstance(prompt, (bytes, bytearray)):
        for item in prompt:
            if not (isinstance(item, Mapping) and "role" in item and "content" in item):
                raise TypeError(
                    "a list prompt is a conversation: each item a message like {'role': 'user', 'content': '...'} "
                    f"(got {type(item).__name__} {item!r:.40}); for one question, pass a string"
                )
        return
    raise TypeError(f"the prompt is a string or a list of messages, not {type(prompt).__name__}")


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
    record: Union[str, os.PathLike[str], None] = None,
) -> StreamState:
    """Stream `request` into `state`, calling `notify()` after each batch of events.

    Returns the closed state. Cancelling the task leaves the `async with` block, which closes
    the connection at once; the state becomes `cancelled`, keeps what arrived, and the
    cancellation propagates. Provider and network failures never raise: they are in the state.
    """
    state.model = state.model or request.model
    state.provider = state.provider or request.provider.name
    state.source = state.source or (
        "offline demo" if request.offline_note or request.provider.name == "demo" else "live"
    )
    if request.prefix and not state.text_length:
        state.apply(TextDelta(request.prefix))
    feed = Feed(state, Normalizer(request.api, request.provider), notify=notify, limits=request.limits)
    feed.begin()
    recorder = Recorder(record, request) if record is not None else None
    try:
        async with _client(client, request) as http:
            items = retrying(
                lambda: _response_items(http, request, feed.normalizer, recorder),
                RetryPolicy(request.retries),
                state,
                notify=feed.notify,
                restart=recorder.restart if recorder is not None else None,
            )
            return await drain(
                items,
                feed,
                ended=None,
                describe=lambda exc: ErrorEvent(request.redact(f"{type(exc).__name__}: {exc}"), "client_error"),
            )
    finally:
        if recorder is not None:
            recorder.close(state)


@asynccontextmanager
async def _client(client: Optional[httpx.AsyncClient], request: StreamRequest) -> AsyncIterator[httpx.AsyncClient]:
    if client is not None:
        yield client
        return
    timeout = httpx.Timeout(connect=_CONNECT_TIMEOUT, read=request.stall_timeout, write=30.0, pool=30.0)
    # Loopback never goes through a proxy, whatever HTTP_PROXY / ALL_PROXY say (university networks
    # set them): the embedded demo would break, and a local server's key would travel to the proxy.
    trust_env = not _is_loopback(request.base_url)
    async with httpx.AsyncClient(timeout=timeout, trust_env=trust_env, verify=_tls(trust_env)) as http:
        yield http


@functools.lru_cache(maxsize=2)
def _tls(trust_env: bool) -> ssl.SSLContext:
    """The TLS context, made once: httpx loads every CA certificate for each new client (~30 ms of CPU)."""
    return httpx.create_ssl_context(trust_env=trust_env)


def _is_loopback(base_url: str) -> bool:
    host = httpx.URL(base_url).host
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _response_items(
    http: httpx.AsyncClient, request: StreamRequest, normalizer: Normalizer, recorder: Optional[Recorder]
) -> AsyncGenerator[Item, None]:
    """The body's bytes per network read, or the events that stand for a failed request; raise
    `StreamBroke` when the stream breaks."""
    try:
        async with http.stream("POST", request.url, json=request.body(), headers=request.headers()) as response:
            if not response.is_success:
                body, cut = await _read_limited(response, request, _ERROR_BODY_LIMIT)
                body = request.redact_bytes(body)
                if recorder is not None:
                    recorder.response(response.status_code, body)
                error = error_from_http(response.status_code, body, response.headers)
                if error.retry_after is None:  # the provider's own reset headers or error fields
                    error.retry_after = wait_hint(response.headers, body)
                yield [replace(error, message=f"{error.message} ({cut})") if cut else error]
                return
            content_type = response.headers.get("content-type", "")
            if not is_event_stream(content_type):
                body, _ = await _read_limited(response, request, WHOLE_BODY_LIMIT)
                yield _not_a_stream(normalizer, request.redact_bytes(body), content_type)
                return
            chunks = gulps(response)
            async for chunk in decoded(chunks, response.headers.get("content-encoding")):
                if recorder is not None:
                    recorder.chunk(chunk)
                yield chunk
    except UndecodableBody as exc:
        raise StreamBroke(f"the body could not be read: {exc}.") from None
    except httpx.TimeoutException as exc:
        if isinstance(exc, httpx.ConnectTimeout):
            message = (
                f"{_where(request)} did not answer within {_CONNECT_TIMEOUT:g} s: the server may be down, or a "
                f"firewall or proxy drops the connection. Check the base_url, or {_OFFLINE_FIX}."
            )
            yield [ErrorEvent(message, "connect_timeout")]
            return
        raise StreamBroke(
            f"no data arrived for {request.stall_timeout:g} s, so streamwidgets stopped waiting (the stream stalled). "
            "The provider may be overloaded: Continue asks for the rest, and a larger `stall_timeout=` waits longer."
        ) from None
    except httpx.ConnectError as exc:
        yield [ErrorEvent(request.redact(connect_failure(request, exc)), "connect_error")]
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.NetworkError) as exc:
        raise StreamBroke(
            request.redact(f"the connection closed before the answer was finished ({_reason(exc)}).")
        ) from None


def _not_a_stream(normalizer: Normalizer, body: bytes, content_type: str) -> list[Event]:
    """A 2xx that is not an event stream: a whole JSON answer or error (read as `parse()` reads
    one, by the normalizer) — or a page, which is an error that names what arrived."""
    what = content_type or "no content type"
    whole = normalizer.read_whole_body(body)
    if whole.events:
        return [Problem(f"expected an event stream but got {what}: {whole.looks_like}"), *whole.events]
    summary = summarize_body(body.decode("utf-8", "replace").strip()) or "an empty body"
    return [ErrorEvent(f"Expected an event stream but got {what}: {summary}", "not_a_stream")]


async def _read_limited(response: httpx.Response, request: StreamRequest, limit: int) -> tuple[bytes, str]:
    """Up to `limit` bytes of a body that is read whole (an error, a JSON answer), decoded, and
    what cut it short in words ("" when nothing did): its status is known already, so a body
    that stalls or breaks gives what arrived of it, not "the stream stalled"."""
    body = bytearray()
    cut = ""
    with anyio.move_on_after(min(request.stall_timeout, _ERROR_BODY_WAIT)) as scope:
        try:
            async for chunk in decoded(response.aiter_raw(), response.headers.get("content-encoding")):
                body += chunk
                if len(body) >= limit:
                    break
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError):
            cut = "the rest of its body never arrived"
        except UndecodableBody as exc:
            cut = f"its body could not be read: {exc}"
    if scope.cancelled_caught:
        cut = "the rest of its body never arrived"
    return bytes(body[:limit]), cut


_OFFLINE_FIX = "`offline=True` streams the built-in demo instead, or `show_replay()` plays a recording"


def connect_failure(request: StreamRequest, exc: BaseException) -> str:
    """What the network did, in words that name the fix: no name resolution (offline), nothing
    listening (is the local server running?), a TLS problem — never "the provider said"."""
    url = httpx.URL(request.base_url)
    causes = _causes(exc)
    text = _reason(exc)
    if any(isinstance(c, socket.gaierror) for c in causes) or re.search(_NO_NAME, text, re.I):
        return f"Can't reach {url.host}: its name does not resolve, so this machine seems offline. {_OFFLINE_FIX}."
    if any(isinstance(c, ConnectionRefusedError) for c in causes) or "refused" in text.lower():
        where = f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
        server = request.provider.local_server
        if server:
            return f"Nothing answers on {where} — is {server} running? ({_OFFLINE_FIX}.)"
        return f"Nothing answers on {where}: check the base_url and that the server is running."
    if any(isinstance(c, ssl.SSLError) for c in causes) or "certificate" in text.lower():
        return f"A secure (TLS) connection to {url.host} failed: {_tls_words(text, url)}"
    return f"Could not connect to {_where(request)}: {text}."


def _tls_words(text: str, url: httpx.URL) -> str:
    """What a TLS failure means and what fixes it; the library's own words come last."""
    lowered = text.lower()
    if "wrong version number" in lowered or "record layer failure" in lowered or "http request" in lowered:
        why = "the server does not speak TLS. If it serves plain HTTP, use http:// in the base_url."
    elif "self-signed" in lowered or "unable to get local issuer" in lowered or "unknown ca" in lowered:
        why = (
            "its certificate is not signed by an authority this machine trusts (a self-signed certificate, or a "
            "network that inspects TLS). Point SSL_CERT_FILE at the certificate you trust, or serve plain http:// "
            "on 127.0.0.1 for a server of your own."
        )
    elif "expired" in lowered or "not yet valid" in lowered:
        why = "its certificate has expired or is not valid yet: check this machine's clock, then the server's certificate."
    elif "hostname mismatch" in lowered or "doesn't match" in lowered or "not valid for" in lowered:
        why = f"its certificate is for another name than {url.host}: check the host in the base_url."
    else:
        why = "check the base_url; a proxy that inspects TLS, or a clock far off, can also cause this."
    return f"{why} ({text})"


_NO_NAME = r"name or service not known|nodename nor servname|getaddrinfo failed|temporary failure in name resolution"


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and what it was raised from (httpx → httpcore → anyio → the OS error)."""
    chain: list[BaseException] = []
    current: Optional[BaseException] = exc
    while current is not None and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _where(request: StreamRequest) -> str:
    url = httpx.URL(request.base_url)
    return f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port else "")


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.rstrip(".")


# --------------------------------------------------------------------------- entry points


async def astream(prompt: Union[Prompt, StreamRequest], **options: Any) -> AsyncIterator[Event]:
    """Yield the normalized events of one stream as they arrive (closing the connection if you stop)."""
    request = prompt if isinstance(prompt, StreamRequest) else make_request(prompt, **options)
    normalizer = Normalizer(request.api, request.provider)
    async with _client(None, request) as http:
        items = _response_items(http, request, normalizer, None)
        try:
            async for item in items:
                for event in normalizer.feed(item) if isinstance(item, bytes) else item:
                    yield event
                    if type(event) is Terminator:
                        return  # the answer is complete, even if the server keeps the body open
        except StreamBroke:
            pass
        finally:
            await items.aclose()  # closes the response, and so the connection
        for event in normalizer.close():
            yield event


async def arun(
    prompt: Union[Prompt, StreamRequest],
    *,
    raise_on_error: bool = False,
    notify: Optional[Notify] = None,
    record: Union[str, os.PathLike[str], None] = None,
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

    The dialect says how (`Dialect.continuation`): Messages sends the partial answer as an
    assistant prefill, which the model continues; Chat and Responses send it as an assistant
    turn with a short instruction. The new request's `prefix` makes the new state start with
    the whole partial answer.
    """
    dialect = request.dialect
    base = request.messages
    if request.prefix:  # continuing a continuation: replace the turns the last one added
        base = base[: -len(dialect.continuation("")[1])]
    prefix, turns = dialect.continuation(joined_text(request.prefix, state.text))
    return replace(request, messages=[dict(m) for m in base] + turns, prefix=prefix)


class Chat:
    """A multi-turn conversation: each answer, complete or partial, is appended to the history."""

    def __init__(self, *, system: Optional[str] = None, **options: Any) -> None:
        if isinstance(options.get("api_key"), str):  # kept only as a Secret: no repr, vars() or pickle shows it
            options["api_key"] = Secret(options["api_key"])
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
