"""The HTTP transport: the one place that opens a connection (httpx + anyio).

`response_items()` sends one request and hands the feed loop what came back: the body's bytes,
decoded, per network read (in gulps, `_reads.py`), or the events that stand for a failed request —
a non-2xx status becomes a readable error before any SSE is parsed, a 2xx that is not an event
stream is read whole. It raises `StreamBroke` when the stream breaks; leaving it (the terminator,
a cancel) closes the response, and with it the connection, at once. It knows no provider's own
headers: the headers of a stream go to the source that asked (`heard`), which says what they mean.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import ssl
import sys
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Optional

import anyio
import httpcore
import httpx

from ..core import (
    ErrorEvent,
    Event,
    Item,
    Problem,
    Redactor,
    StreamBroke,
    Where,
    connect_failed,
    connect_timed_out,
    connection_closed,
    cors_refused,
    error_from_http,
    is_event_stream,
    redirected,
    stalled,
    summarize_body,
)
from ..core.dialects import WHOLE_BODY_LIMIT
from ._decode import UndecodableBody, decoded
from ._hosts import is_loopback
from ._inprocess import IN_PROCESS_HOST, InProcessTransport
from ._jsfetch import CorsRefused, FetchTransport, Redirected
from ._reads import GulpBackend, gulps
from ._request import StreamRequest
from ._retry import wait_hint
from ._wllama import TAB_MODEL_HOST, TabModelTransport

if TYPE_CHECKING:
    from ._context import SourceContext

__all__ = [
    "ERROR_BODY_LIMIT",
    "GulpTransport",
    "not_a_stream",
    "environment_proxies",
    "gulp_client",
    "http_client",
    "http_error",
    "in_page_transports",
    "is_loopback",
    "response_items",
    "where",
]

_CONNECT_TIMEOUT = 15.0
ERROR_BODY_LIMIT = 64 * 1024
#: The most seconds spent reading an error's body (or the stall timeout, if shorter): the status
#: is known already, and a body that stalls must not turn a 503 into "the stream stalled".
_ERROR_BODY_WAIT = 10.0


@asynccontextmanager
async def http_client(request: StreamRequest) -> AsyncIterator[httpx.AsyncClient]:
    timeout = httpx.Timeout(connect=_CONNECT_TIMEOUT, read=request.stall_timeout, write=30.0, pool=30.0)
    # Loopback never goes through a proxy, whatever HTTP_PROXY / ALL_PROXY say (university networks
    # set them): the embedded demo would break, and a local server's key would travel to the proxy.
    trust_env = not is_loopback(httpx.URL(request.url).host)
    with _keys_out_of_the_logs(request.redactor):
        async with gulp_client(timeout=timeout, trust_env=trust_env) as http:
            yield http


def gulp_client(
    *,
    timeout: Any = None,
    trust_env: bool = True,
    verify: Optional[ssl.SSLContext] = None,
    proxy: Optional[str] = None,
    network_backend: Optional[httpcore.AsyncNetworkBackend] = None,
) -> httpx.AsyncClient:
    """httpx's client whose every connection reads in gulps (`_reads.GulpBackend`), through the two
    libraries' own extension points: httpx takes transports (`GulpTransport`, one per proxy), and
    httpcore's pools take a network backend. With `trust_env`, the proxies come from the
    environment as httpx reads them (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`).
    In the browser (Pyodide) the browser's `fetch` is the connection (`_jsfetch.FetchTransport`).
    A server that lives in this process answers its own host with no connection at all
    (`in_page_transports`). The one place that picks a transport."""
    in_page = in_page_transports()
    if sys.platform == "emscripten":
        return httpx.AsyncClient(
            transport=FetchTransport(), mounts=in_page, timeout=timeout or httpx.Timeout(5.0), trust_env=False
        )
    context = verify if verify is not None else _tls(trust_env)

    def transport(via: Optional[str]) -> GulpTransport:
        return GulpTransport(context, proxy=via, network_backend=network_backend)

    mounts: dict[str, Optional[httpx.AsyncBaseTransport]] = {}
    if proxy is None and trust_env:
        mounts = {pattern: None if via is None else transport(via) for pattern, via in environment_proxies().items()}
    mounts.update(in_page)
    return httpx.AsyncClient(
        transport=transport(proxy),
        mounts=mounts,
        timeout=timeout if timeout is not None else httpx.Timeout(5.0),
        trust_env=False,  # what it would read is read here: the proxies, and the CAs in `verify`
    )


def in_page_transports() -> dict[str, Optional[httpx.AsyncBaseTransport]]:
    """The servers that live in this process, by the host their requests are addressed to (a
    name under `.invalid`, which no resolver answers): each a transport that answers in its API's
    own bytes, so that a client reads them as it reads any provider."""
    return {f"all://{IN_PROCESS_HOST}": InProcessTransport(), f"all://{TAB_MODEL_HOST}": TabModelTransport()}


class GulpTransport(httpx.AsyncBaseTransport):
    """httpx's transport interface over an httpcore connection pool (or proxy) whose connections
    are `GulpStream`s; httpcore's errors become httpx's, as httpx's own transport maps them."""

    def __init__(
        self,
        ssl_context: ssl.SSLContext,
        *,
        proxy: Optional[str] = None,
        network_backend: Optional[httpcore.AsyncNetworkBackend] = None,
    ) -> None:
        options: dict[str, Any] = {
            "ssl_context": ssl_context,
            "network_backend": GulpBackend(network_backend),
            "max_connections": 100,  # httpx's default limits
            "max_keepalive_connections": 20,
            "keepalive_expiry": 5.0,
        }
        self._pool: httpcore.AsyncConnectionPool
        if proxy is None:
            self._pool = httpcore.AsyncConnectionPool(**options)
            return
        url = httpx.URL(proxy)
        where = httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path)
        auth = (url.username, url.password) if url.username else None
        if url.scheme in ("http", "https"):
            proxy_tls = ssl_context if url.scheme == "https" else None
            self._pool = httpcore.AsyncHTTPProxy(
                proxy_url=where, proxy_auth=auth, proxy_ssl_context=proxy_tls, **options
            )
        elif url.scheme in ("socks5", "socks5h"):
            self._pool = httpcore.AsyncSOCKSProxy(proxy_url=where, proxy_auth=auth, **options)  # needs socksio
        else:
            raise ValueError(f"a proxy URL must be http://, https://, socks5:// or socks5h://, not {url.scheme}://")

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = await self._pool.handle_async_request(core)
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


@contextmanager
def _httpx_errors() -> Iterator[None]:
    """httpcore's exceptions as httpx's: httpx names each of its transport errors as httpcore
    does (`ReadTimeout`, `ConnectError`, `RemoteProtocolError`, …), so the most specific class of
    the same name stands for it."""
    try:
        yield
    except Exception as exc:
        for kind in type(exc).__mro__:
            mapped = getattr(httpx, kind.__name__, None) if kind.__module__.startswith("httpcore") else None
            if isinstance(mapped, type) and issubclass(mapped, httpx.TransportError):
                raise mapped(str(exc)) from exc
        raise


def environment_proxies() -> dict[str, Optional[str]]:
    """The proxies the environment names, as httpx mounts them: `scheme://` → the proxy's URL,
    and a pattern → None for each host `NO_PROXY` exempts (`*` exempts all)."""
    found = urllib.request.getproxies_environment()
    mounts: dict[str, Optional[str]] = {}
    for scheme in ("http", "https", "all"):
        if found.get(scheme):
            via = found[scheme]
            mounts[f"{scheme}://"] = via if "://" in via else f"http://{via}"
    for host in (h.strip() for h in found.get("no", "").split(",")):
        if host == "*":
            return {}
        if not host:
            continue
        if "://" in host:
            mounts[host] = None
        elif _is_address(host, 4) or host.lower() == "localhost":
            mounts[f"all://{host}"] = None
        elif _is_address(host, 6):
            mounts[f"all://[{host}]"] = None
        else:
            mounts[f"all://*{host}"] = None
    return mounts


def _is_address(host: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(host.split("/")[0]).version == version
    except ValueError:
        return False


#: The loggers of httpx and httpcore: at DEBUG they write every response header (a peer may echo
#: the key in one, or in a redirect's `Location`). A logger's filter sees only its own records, so
#: each one gets the filter.
_HTTP_LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)


class _KeyFilter(logging.Filter):
    """Removes the keys of the streams open now from every record of the HTTP loggers."""

    def __init__(self) -> None:
        super().__init__("streamwidgets")
        self.redactors: list[Redactor] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if self.redactors:
            message = record.getMessage()
            clean = message
            for redactor in self.redactors:
                clean = redactor.text(clean)
            if clean != message:
                record.msg, record.args = clean, ()
        return True


_KEY_FILTER = _KeyFilter()


@contextmanager
def _keys_out_of_the_logs(redactor: Redactor) -> Iterator[None]:
    """While a stream with a key is open, the HTTP loggers' records go through its redactor."""
    if not redactor:
        yield
        return
    if not _KEY_FILTER.redactors:
        for name in _HTTP_LOGGERS:
            logging.getLogger(name).addFilter(_KEY_FILTER)
    _KEY_FILTER.redactors.append(redactor)
    try:
        yield
    finally:
        _KEY_FILTER.redactors.remove(redactor)
        if not _KEY_FILTER.redactors:
            for name in _HTTP_LOGGERS:
                logging.getLogger(name).removeFilter(_KEY_FILTER)


@functools.lru_cache(maxsize=2)
def _tls(trust_env: bool) -> ssl.SSLContext:
    """The TLS context, made once: httpx loads every CA certificate for each new client (~30 ms of CPU)."""
    return httpx.create_ssl_context(trust_env=trust_env)


def where(request: StreamRequest) -> Where:
    """The server of a (resolved) request, as the words about a network failure name it."""
    url = httpx.URL(request.url)
    return Where(url.scheme, url.host, url.port, request.provider.local_server)


async def response_items(
    http: httpx.AsyncClient,
    request: StreamRequest,
    context: SourceContext,
    *,
    heard: Optional[Callable[[httpx.Headers], None]] = None,
) -> AsyncGenerator[Item, None]:
    """The body's bytes per network read (paced by the run's pause, `context.pause`, `_reads.Pacer`),
    or the events that stand for a failed request; raise `StreamBroke` when the stream breaks.
    `heard(headers)` is told the headers of a 2xx answer before its body is read; a non-2xx
    answer goes to a recording of the stream (`context.record_response`)."""
    try:
        async with http.stream("POST", request.url, json=request.body(), headers=request.headers()) as response:
            if not response.is_success:
                body, cut = await _read_limited(response, request, ERROR_BODY_LIMIT)
                error = http_error(context, request, response.status_code, body, response.headers)
                yield [replace(error, message=f"{error.message} ({cut})") if cut else error]
                return
            if heard is not None:
                heard(response.headers)
            content_type = response.headers.get("content-type", "")
            if not is_event_stream(content_type):
                body, _ = await _read_limited(response, request, WHOLE_BODY_LIMIT)
                yield not_a_stream(context, request.redact_bytes(body), content_type)
                return
            async for chunk in decoded(gulps(response, pause=context.pause), response.headers.get("content-encoding")):
                yield chunk
    except UndecodableBody as exc:
        raise StreamBroke(f"the body could not be read: {exc}.") from None
    except httpx.TimeoutException as exc:
        if isinstance(exc, httpx.ConnectTimeout):
            yield [ErrorEvent(connect_timed_out(where(request), _CONNECT_TIMEOUT), "connect_timeout")]
            return
        raise StreamBroke(stalled(request.stall_timeout)) from None
    except CorsRefused as exc:
        yield [ErrorEvent(cors_refused(where(request), exc.origin, exc.headers), "cors_refused")]
    except Redirected:
        yield [ErrorEvent(redirected(None), "redirect")]
    except httpx.ConnectError as exc:
        yield [ErrorEvent(request.redact(connect_failed(exc, where(request))), "connect_error")]
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.NetworkError) as exc:
        raise StreamBroke(request.redact(connection_closed(exc))) from None


def http_error(
    context: SourceContext, request: StreamRequest, status: int, body: bytes, headers: httpx.Headers
) -> ErrorEvent:
    """A non-2xx answer as the error it stands for: its body redacted and recorded with the
    stream, and when to try again from the provider's own reset headers or error fields when the
    error itself does not say."""
    body = request.redact_bytes(body)
    context.record_response(status, body)
    error = error_from_http(status, body, headers)
    if error.retry_after is None:
        error.retry_after = wait_hint(headers, body)
    return error


def not_a_stream(context: SourceContext, body: bytes, content_type: str) -> list[Event]:
    """A 2xx that is not an event stream: a whole JSON answer or error (read as `parse()` reads
    one, by the stream's dialect reader) — or a page, which is an error that names what arrived."""
    what = content_type or "no content type"
    whole = context.read_whole_body(body)
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
