"""The demo's routes: which reply a request gets. Pure; the edge (`.._edge`) carries it out.

Routes are `/v1/<endpoint>` for the default `demo` flavor and `/<flavor>/v1/<endpoint>` for the
seed providers' flavors; each endpoint is an API's (`apis.APIS`: its spec reads the request and
writes the answer), plus `models`. `/_demo/health` and `/_demo/connections` serve tests and
tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Optional
from urllib.parse import parse_qs, urlsplit

from .._edge import ConnectionRecord, JsonReply, Rejection, Reply, SilentReply, StreamReply
from ._errors import SCRIPTED_HTTP_ERRORS, error_headers
from ._flavors import FLAVORS, Flavor
from ._frames import ident
from ._models import demo_models, unknown_model
from ._requests import parse_request
from ._scenarios import Script, TryCounter, build_script
from .apis import DEFAULT_API, VERSIONS, ApiSpec, Endpoint, api_for_path, find_api

__all__ = ["DemoRouter"]

_MODELS_CREATED = 1_700_000_000
_JSON = ("content-type", "application/json")


class DemoRouter:
    """Turns one parsed HTTP request into a reply (the edge's `Router`). `records` lists the
    connection records."""

    def __init__(self, records: Callable[[int], list[ConnectionRecord]]) -> None:
        self._records = records
        self._tries = TryCounter()  # the turned-away scenarios (demo-ratelimit) count tries

    def route(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes, *, now: float, nonce: str
    ) -> Reply:
        url = urlsplit(target)
        path = url.path
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["_demo"]:
            return self._demo(method, path, parts[1:], parse_qs(url.query), nonce)
        if not parts:
            return _json(200, _about())
        place = _place(parts)
        if place is None:
            return self.refuse(target, _unknown(method, path), nonce)
        flavor, version, rest = place
        if rest == "models":
            if method != "GET":
                return _not_allowed(method, path, "GET", nonce)
            return _json(200, _models(anthropic="anthropic-version" in headers))
        found = find_api(rest, version, url.query)
        if found is None or not found[0].served_on(flavor):
            return self.refuse(target, _unknown(method, path), nonce)
        spec, endpoint = found
        if method != "POST":
            return _not_allowed(method, path, "POST", nonce, spec)
        try:
            request = parse_request(spec.name, body, headers, flavor=flavor.name, endpoint=endpoint)
            unknown = unknown_model(request.model, flavor.name, spec.name)
            if unknown is not None:
                raise unknown
            spec.check_stream(request.stream)
            script = build_script(request, now=now, nonce=nonce, tries=self._tries.try_of(request))
            if script.rejection is not None:
                raise script.rejection
        except Rejection as rejection:
            return _rejected(rejection, spec, nonce)
        request_id = (spec.request_id_header, ident("req_", script.nonce))
        if request.stream:
            return self._stream(path, spec, endpoint, flavor, script, request_id)
        return self._whole(spec, flavor, script, request_id)

    # -------------------------------------------------------------- replies

    def _stream(
        self, path: str, spec: ApiSpec, endpoint: Endpoint, flavor: Flavor, script: Script, request_id: tuple[str, str]
    ) -> StreamReply:
        return StreamReply(
            path=path,
            api=spec.name,
            flavor=flavor.name,
            model=script.model,
            scenario=script.scenario,
            steps=spec.stream(script, flavor, endpoint),
            pacing=script.pacing,
            heartbeat=spec.heartbeat(flavor),
            heartbeat_mode=flavor.heartbeat_mode,
            # A scripted cut-off closes the connection afterwards: say so up front.
            headers=(
                ("content-type", endpoint.content_type),
                ("cache-control", "no-cache"),
                request_id,
                _script_header(script),
                *([("connection", "close")] if script.ending == "cutoff" else []),
            ),
        )

    def _whole(self, spec: ApiSpec, flavor: Flavor, script: Script, request_id: tuple[str, str]) -> Reply:
        if script.ending == "cutoff":
            return SilentReply("drop")
        if script.ending == "stall":
            return SilentReply("hang")
        if script.ending == "error":
            assert script.error is not None
            status = 500 if script.error.kind == "server_error" else 402
            type_, code, anthropic_type, _, _ = SCRIPTED_HTTP_ERRORS[status]
            return _rejected(
                Rejection(status, script.error.message, type_, code, None, anthropic_type), spec, script.nonce
            )
        body = spec.whole(script, flavor)
        pacing = script.pacing
        generation = script.usage.completion_tokens / pacing.tokens_per_second if pacing.tokens_per_second else 0.0
        return JsonReply(
            200,
            json.dumps(body, ensure_ascii=False).encode(),
            (_JSON, request_id, _script_header(script)),
            pacing.first_token_delay + generation,
        )

    def refuse(self, target: str, rejection: Rejection, nonce: str) -> JsonReply:
        """The reply to a refused request, in the error envelope of the route it was sent to."""
        return _rejected(rejection, api_for_path(urlsplit(target).path), nonce)

    def _demo(self, method: str, path: str, rest: list[str], query: dict[str, list[str]], nonce: str) -> Reply:
        if rest not in (["health"], ["connections"]):
            return _rejected(_unknown(method, path), DEFAULT_API, nonce)
        if method != "GET":
            return _not_allowed(method, path, "GET", nonce)
        if rest == ["health"]:
            return _json(200, {"status": "ok"})
        try:
            after = int(query.get("after", ["0"])[0])
        except ValueError:
            after = 0
        return _json(200, [record.to_json() for record in self._records(after)])


def _script_header(script: Script) -> tuple[str, str]:
    """What answered (a lesson's title, `none`, or the scenario), so a client can say so."""
    return ("x-demo-script", script.label)


def _unknown(method: str, path: str) -> Rejection:
    return Rejection(
        404, f"Unknown request URL: {method} {path}.", code="unknown_url", anthropic_type="not_found_error"
    )


def _json(status: int, payload: object, headers: tuple[tuple[str, str], ...] = ()) -> JsonReply:
    return JsonReply(status, json.dumps(payload, ensure_ascii=False).encode(), (_JSON, *headers))


def _rejected(rejection: Rejection, spec: ApiSpec, nonce: str) -> JsonReply:
    request_id = ident("req_", nonce)
    return JsonReply(
        rejection.status,
        spec.error_body(rejection, request_id),
        (_JSON, (spec.request_id_header, request_id), *error_headers(rejection)),
    )


def _place(parts: list[str]) -> Optional[tuple[Flavor, str, str]]:
    """(the flavor, the version segment, the rest of the path) of an API path, or None:
    `/v1/...` is the default flavor's, `/<flavor>/v1/...` a seed provider's."""
    if parts and parts[0] in VERSIONS:
        return FLAVORS["demo"], parts[0], "/".join(parts[1:])
    if len(parts) > 1 and parts[0] in FLAVORS and parts[1] in VERSIONS:
        return FLAVORS[parts[0]], parts[1], "/".join(parts[2:])
    return None


def _not_allowed(method: str, path: str, allowed: str, nonce: str, spec: ApiSpec = DEFAULT_API) -> JsonReply:
    rejection = Rejection(405, f"Method {method} is not allowed on {path}; use {allowed}.", code="method_not_allowed")
    reply = _rejected(rejection, spec, nonce)
    return JsonReply(reply.status, reply.body, (*reply.headers, ("allow", allowed)))


def _models(*, anthropic: bool) -> dict[str, object]:
    names = demo_models()
    if anthropic:
        data = [
            {"type": "model", "id": name, "display_name": name, "created_at": "2023-11-14T22:13:20Z"} for name in names
        ]
        return {"data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]}
    return {
        "object": "list",
        "data": [
            {"id": name, "object": "model", "created": _MODELS_CREATED, "owned_by": "streamwidgets-demo"}
            for name in names
        ],
    }


def _about() -> dict[str, object]:
    return {
        "name": "streamwidgets demo server",
        "flavors": {name: f"/{name}/v1" if name != "demo" else "/v1" for name in FLAVORS},
        "models": demo_models(),
    }
