"""Who may talk to the embedded provider: checks on a request's headers, before its body is read.

The server listens on loopback inside the user's kernel, and the user's browser is on the same
machine: any web page they open could send requests to it. Three rules keep pages out, as
Jupyter Server does for itself:

- `Host` must name this server (a loopback name or the address the connection came in on, with
  the server's port). A page on `evil.example` that DNS-rebinds its name to 127.0.0.1 sends
  `Host: evil.example`, and so can read nothing (`/_demo/connections` included).
- A request with an `Origin` header must come from the server's own origin; browsers send
  `Origin` with every cross-origin request, scripts and SDKs send none.
- A request with a body must say `Content-Type: application/json`. A page may POST `text/plain`
  without asking first; `application/json` makes the browser send a CORS preflight, which this
  server refuses (it sends no `Access-Control-Allow-*` header at all).

Every local user of a shared machine (a JupyterHub host) reaches loopback too, so the request's
framing is checked as strictly: an absolute-form target (`GET http://evil.example/...`) must name
this server as `Host` must, a request may carry one `Origin` only (with two, which one would a
browser have meant?), and a request that frames its body both by `Content-Length` and by
`Transfer-Encoding` is refused and its connection closed, since the two readings disagree on
where a second, smuggled request begins. A `Content-Length` beyond the body limit is refused here
too, before a byte of the body is read. Pure: headers in, a `Rejection` or None out.

A page may be let in by name (`allow_origins`, e.g. a JupyterLite course served on this machine,
whose kernel has no sockets and asks through the browser's `fetch`): requests from exactly those
origins pass the Origin rule, and their answers carry the CORS headers that let that page read
them (`cors_headers`), a preflight included. No origin is allowed unless it is named; there is no
wildcard. A name is written as a browser writes the `Origin` header (`allowed_origins`: lower case, no
default port, no slash), so that it matches; `null` (the origin of every sandboxed frame and `data:`
document, which any page can make) and `*` are refused.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Optional
from urllib.parse import urlsplit

from ._replies import Rejection

__all__ = ["allowed_origins", "cors_headers", "refusal", "too_large", "LOOPBACK_NAMES"]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_QUOTED = 80  # characters of a foreign header value quoted back in a message
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: A host as a browser writes it in an `Origin`: a name in ASCII (punycode), an IPv4 or IPv6 address.
_HOST = re.compile(r"[a-z0-9._-]+|[0-9a-f:.]+")


def allowed_origins(origins: Optional[Iterable[str]]) -> tuple[str, ...]:
    """The pages let in by name, each written as a browser writes its `Origin` header (scheme and
    host in lower case, no default port, no trailing slash: `HTTP://Site:80/` is
    `http://site`), or a `ValueError` that says which one cannot be allowed and why. None: none."""
    if origins is None:
        return ()
    if isinstance(origins, (str, bytes)):
        raise ValueError(f"allow_origins is a list of origins, not one string: write [{_quote(str(origins))}]")
    return tuple(dict.fromkeys(_origin(origin) for origin in origins))


def _origin(text: str) -> str:
    named = text.strip() if isinstance(text, str) else ""
    if named.lower() == "null":
        raise ValueError(
            "the origin null cannot be allowed: every sandboxed frame and data: document has it, so any web "
            "page could read the answers; serve the page from an http(s) address and allow that"
        )
    if named == "*":
        raise ValueError(
            "there is no wildcard origin: name each page that may read the answers, e.g. http://127.0.0.1:8000"
        )
    try:
        parts = urlsplit(named.rstrip("/"))
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or parts.scheme.lower() not in _DEFAULT_PORTS
        or not parts.hostname
        or not _HOST.fullmatch(parts.hostname)
        or parts.username is not None
        or parts.password is not None
        or any((parts.path, parts.query, parts.fragment))
        or "?" in named
        or "#" in named
    ):
        raise ValueError(
            f"{_quote(str(text))} is not an origin a page has: write it as http(s)://HOST[:PORT], "
            "e.g. http://127.0.0.1:8000"
        )
    scheme, host = parts.scheme.lower(), parts.hostname  # hostname is lower case, without brackets
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != _DEFAULT_PORTS[scheme] else "")


def refusal(
    method: str,
    target: str,
    headers: Sequence[tuple[str, str]],
    *,
    local: tuple[str, int],
    max_body: int,
    server: str = "demo server",
    allow_origins: Collection[str] = (),
) -> Optional[Rejection]:
    """Why this request must be refused, or None. `local` is the (address, port) the connection
    came in on; `headers` are the request's (name, value) pairs, names in lower case, repeats kept;
    `server` names the server in the messages (the local model's server applies the same rules);
    `allow_origins` are the pages let in by name."""
    address, port = local
    names = {*LOOPBACK_NAMES, _bracketed(address)}
    fields = dict(headers)
    host = fields.get("host", "")
    authority = _authority(target)
    for claimed in (host,) if authority is None else (host, authority):
        if _host_name(claimed, port) not in names:
            return Rejection(
                403,
                f"This {server} answers only requests addressed to it (Host {LOOPBACK_NAMES[0]}:{port} or "
                f"localhost:{port}), not to {_quote(claimed)}.",
                type="permission_error",
                code="host_not_allowed",
                anthropic_type="permission_error",
            )
    origins = [value for name, value in headers if name == "origin"]
    if len(origins) > 1:
        return Rejection(
            403,
            f"A request may carry one Origin header, not {len(origins)}: the {server} cannot tell which page "
            "sent it, so it refuses it.",
            type="permission_error",
            code="origin_not_allowed",
            anthropic_type="permission_error",
        )
    origin = origins[0] if origins else None
    if (
        origin is not None
        and origin not in allow_origins
        and _host_name(origin.lower().removeprefix("http://"), port) not in names
    ):
        return Rejection(
            403,
            f"Cross-origin requests are refused: the {server} answers scripts and SDKs, not web pages "
            f"(Origin {_quote(origin)}).",
            type="permission_error",
            code="origin_not_allowed",
            anthropic_type="permission_error",
        )
    length = fields.get("content-length", "")
    if length and "transfer-encoding" in fields:
        return Rejection(
            400,
            "A request may not carry both Content-Length and Transfer-Encoding: the two disagree on where its "
            "body ends. The connection is closed.",
            code="ambiguous_framing",
            close=True,
        )
    if length.isdigit() and int(length) > max_body:
        return too_large(max_body, server)
    if method == "POST" or length not in ("", "0") or "transfer-encoding" in fields:
        media = fields.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            return Rejection(
                415,
                f"The body must be JSON sent with Content-Type: application/json, not {_quote(media or 'none')}.",
                code="unsupported_media_type",
            )
    return None


def cors_headers(method: str, headers: Mapping[str, str], allow_origins: Collection[str]) -> list[tuple[str, str]]:
    """The CORS headers of the answer to a request from a page let in by name (none for any other
    request); for a preflight (`OPTIONS` asking for a method), what it may send too."""
    origin = headers.get("origin")
    if origin is None or origin not in allow_origins:
        return []
    found = [("access-control-allow-origin", origin), ("vary", "origin"), ("access-control-expose-headers", "*")]
    if method == "OPTIONS" and "access-control-request-method" in headers:
        asked = headers.get("access-control-request-headers", "")
        found += [
            ("access-control-allow-methods", "GET, POST"),
            ("access-control-allow-headers", asked or "content-type"),
            ("access-control-max-age", "600"),
        ]
        if headers.get("access-control-request-private-network") == "true":  # a public page asks for loopback
            found.append(("access-control-allow-private-network", "true"))
    return found


def too_large(max_body: int, server: str = "demo server") -> Rejection:
    """The rejection of a body found too large while it is read (a chunked body has no length)."""
    return Rejection(
        413,
        f"The request body is larger than this {server} accepts ({max_body:,} bytes).",
        code="request_too_large",
        anthropic_type="request_too_large",
    )


def _authority(target: str) -> Optional[str]:
    """The `host[:port]` of an absolute-form target (`http://host:port/path`), None for a path."""
    scheme, separator, rest = target.partition("://")
    if not separator or not scheme.isalpha():
        return None
    return rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]


def _host_name(host: str, port: int) -> Optional[str]:
    """The name in a `Host` value if its port is `port` (80 when it names none), else None."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host.partition("]")
        name += "]"
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else None)
    else:
        name, _, port_text = host.partition(":")
    if port_text is None or (port_text and not port_text.isdigit()):
        return None
    return name if int(port_text or 80) == port else None


def _bracketed(address: str) -> str:
    """An address as it appears in a `Host` header: IPv6 in brackets."""
    try:
        return f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
    except ValueError:
        return address.lower()


def _quote(value: str) -> str:
    value = value if len(value) <= _QUOTED else value[:_QUOTED] + "..."
    return repr(value)
