"""`FetchTransport`: httpx's transport interface over the browser's `fetch`, for Python in the browser.

In Pyodide (JupyterLite) there are no sockets: httpcore cannot connect. The browser can, and
this transport asks it to: `fetch()` sends the request, the response's `ReadableStream` reader
hands over the body as it arrives, and closing the response aborts the fetch (`AbortController`)
so that the server sees the connection close, as a Cancel closes it on CPython. Everything above
it — the client, the reads, the feed loop, the words — is the CPython path unchanged.

No maintained package does this for httpx's async interface (Pyodide's own `pyfetch` reads a body
whole; `pyodide-http` patches `requests` and `urllib`; `httpx2-jsfetch` is an empty name on the
index). `docs/design.md` ("Python in the browser") says what the browser changes:

- It decodes the body (gzip, br) itself: the response handed on has no `content-encoding`.
- It sets some headers itself (`host`, `content-length`, `accept-encoding`, `user-agent`...):
  those are left out of the request.
- It hands a page only what the server's CORS headers allow. A refusal and "nothing answers" are
  the same error to a page (`TypeError: Failed to fetch`); a second, opaque request (`no-cors`,
  which a CORS rule cannot refuse) tells them apart, so that a refusal says what the server must
  allow (`core.cors_refused`).
- Headers a server does not expose (`Access-Control-Expose-Headers`) are unreadable, such as
  `retry-after` from another origin; a wait is then the retry's own backoff.
- It would follow a redirect, and send the key (`x-api-key`, `x-goog-api-key`) along to wherever it
  points. httpx on CPython follows none: here `redirect: "manual"` keeps the browser from following,
  and the redirect it hands back (`opaqueredirect`, which does not say where it points) is an error
  worded as on CPython (`Redirected`, `core.redirected`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Optional

import anyio
import httpx

__all__ = ["CorsRefused", "FetchTransport", "Redirected", "sent_headers"]

#: Headers a page may not set (the browser sets them, or refuses the request), in lower case.
_BROWSER_SETS = frozenset(
    [
        "accept-charset",
        "accept-encoding",
        "access-control-request-headers",
        "access-control-request-method",
        "connection",
        "content-length",
        "cookie",
        "date",
        "dnt",
        "expect",
        "host",
        "keep-alive",
        "origin",
        "referer",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "via",
    ]
)
#: Request headers that never need the server's CORS permission (with a simple value).
_SAFELISTED = frozenset(("accept", "accept-language", "content-language"))
#: Seconds the opaque second request may take to tell a refusal from "nothing answers".
_PROBE_WAIT = 5.0


class CorsRefused(httpx.ConnectError):
    """The server answered, but the browser kept its answer from this page (CORS)."""

    def __init__(self, origin: str, headers: list[str]) -> None:
        super().__init__(f"the browser refused the answer for {origin} (CORS)")
        self.origin = origin
        self.headers = headers


class Redirected(httpx.TransportError):
    """The server answered with a redirect, which the browser was told not to follow."""


def sent_headers(headers: httpx.Headers) -> list[tuple[str, str]]:
    """The request's headers a page may send; the browser adds the rest itself."""
    return [(name, value) for name, value in headers.multi_items() if name.lower() not in _BROWSER_SETS]


class FetchTransport(httpx.AsyncBaseTransport):
    """Each request through `fetch()`; its timeouts (`connect`: until the headers, `read`: between
    two parts of the body) are httpx's, and raise httpx's exceptions."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import js
        from pyodide.ffi import JsException, to_js

        timeout = request.extensions.get("timeout", {})
        body = await request.aread()
        headers = sent_headers(request.headers)
        controller = js.AbortController.new()
        init: dict[str, Any] = {
            "method": request.method,
            "headers": to_js([[name, value] for name, value in headers]),
            "signal": controller.signal,
            "credentials": "omit",  # a key travels in a header, never in the browser's cookies
            "cache": "no-store",
            "redirect": "manual",  # never follow: the key would go along (httpx on CPython follows none)
        }
        if body:
            init["body"] = to_js(body)
        options = to_js(init, dict_converter=js.Object.fromEntries)
        try:
            with anyio.fail_after(timeout.get("connect")):
                response = await js.fetch(str(request.url), options)
        except TimeoutError:
            controller.abort()
            raise httpx.ConnectTimeout("the browser had no answer in time", request=request) from None
        except JsException as exc:
            controller.abort()
            raise await _refusal(request, headers, exc) from None
        except BaseException:
            controller.abort()
            raise
        if str(response.type) == "opaqueredirect":
            controller.abort()
            raise Redirected("the server redirects this request", request=request)
        answered = [(str(pair[0]), str(pair[1])) for pair in response.headers.entries()]
        return httpx.Response(
            status_code=int(response.status),
            headers=[(k, v) for k, v in answered if k.lower() not in ("content-encoding", "content-length")],
            stream=_FetchBody(response, controller, timeout.get("read")),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": str(response.statusText).encode()},
            request=request,
        )


class _FetchBody(httpx.AsyncByteStream):
    """The body, part by part as the browser hands it over; closing it aborts the fetch."""

    def __init__(self, response: Any, controller: Any, read_timeout: Optional[float]) -> None:
        self._reader = response.body.getReader() if response.body else None
        self._controller = controller
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        from pyodide.ffi import JsException

        if self._reader is None:
            return
        while True:
            try:
                with anyio.fail_after(self._read_timeout):
                    part = await self._reader.read()
            except TimeoutError:
                raise httpx.ReadTimeout("no part of the body arrived in time") from None
            except JsException as exc:
                raise httpx.ReadError(f"the browser's connection broke: {_words(exc)}") from None
            if part.done:
                return
            yield part.value.to_bytes()

    async def aclose(self) -> None:
        self._controller.abort()


async def _refusal(request: httpx.Request, headers: list[tuple[str, str]], exc: Exception) -> httpx.TransportError:
    """What a failed `fetch()` was: a CORS refusal when an opaque request to the same URL is
    answered, else no answer at all (said as a refused connection for a server on this machine)."""
    import js

    from ._hosts import is_loopback

    words = _words(exc)
    if await _answers_opaquely(str(request.url)):
        asked = sorted({name.lower() for name, _ in headers} - _SAFELISTED)
        return CorsRefused(str(js.location.origin), asked)
    url = request.url
    if str(js.location.protocol) == "https:" and url.scheme == "http" and not is_loopback(url.host):
        return httpx.ConnectError(
            f"the browser does not let a page served over https reach an http:// address ({words}); "
            "the server must be reached over https"
        )
    page = str(js.location.origin)
    if bool(getattr(js, "crossOriginIsolated", False)) and f"{url.scheme}://{url.netloc.decode()}" != page:
        # Under `Cross-Origin-Embedder-Policy` the opaque probe fails at any server that sends no
        # `Cross-Origin-Resource-Policy`, up or not: a refusal and a dead server look the same.
        return httpx.ConnectError(
            f"the browser's request failed ({words}): the server refuses this page or cannot be reached, and on "
            "this site the browser does not say which (its pages are cross-origin isolated: COOP/COEP headers); "
            f"a server that is up must allow the origin {page} (CORS)"
        )
    if is_loopback(url.host):
        return httpx.ConnectError(f"connection refused: the browser's request failed ({words})")
    return httpx.ConnectError(
        f"the browser's request failed ({words}): the server may be down, the address wrong, or this machine offline"
    )


async def _answers_opaquely(url: str) -> bool:
    import js
    from pyodide.ffi import JsException, to_js

    controller = js.AbortController.new()
    options = to_js(
        {"mode": "no-cors", "credentials": "omit", "cache": "no-store", "signal": controller.signal},
        dict_converter=js.Object.fromEntries,
    )
    try:
        with anyio.fail_after(_PROBE_WAIT):
            await js.fetch(url, options)
        return True
    except (JsException, TimeoutError):
        return False
    finally:
        controller.abort()


def _words(exc: Exception) -> str:
    name = str(getattr(exc, "name", "") or type(exc).__name__)
    message = str(getattr(exc, "message", "") or exc)
    return f"{name}: {message}" if message else name
