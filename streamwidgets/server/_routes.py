"""Routing: which reply a request gets. Pure; the network edge in `_http` carries it out.

Routes are `/v1/<endpoint>` for the default `demo` flavor and `/<flavor>/v1/<endpoint>` for the
seed providers' flavors; endpoints are `chat/completions`, `responses`, `messages`, `models`
(and `completions` where the flavor has it). `/_demo/health` and `/_demo/connections` serve
tests and tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Optional, Union
from urllib.parse import parse_qs, urlsplit

from ._chat import chat_completion, chat_stream, text_completion
from ._errors import SCRIPTED_HTTP_ERRORS, Rejection, error_body, error_headers
from ._flavors import FLAVORS, Flavor
from ._frames import Steps, comment, dumps, ident, sse
from ._messages import message_object, messages_stream
from ._models import demo_models, unknown_model
from ._records import ConnectionRecord
from ._requests import parse_request
from ._responses import response_object, responses_stream
from ._scenarios import Pacing, Script, TryCounter, build_script

__all__ = ["Router", "JsonReply", "StreamReply", "SilentReply", "Reply"]

_ENDPOINTS = {
    "chat/completions": "chat",
    "responses": "responses",
    "messages": "messages",
    "completions": "completions",
    "models": "models",
}
_MODELS_CREATED = 1_700_000_000
_STREAM_HEADERS = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]
_JSON = ("content-type", "application/json")


@dataclass(frozen=True)
class JsonReply:
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    #: Seconds to wait before answering (a non-streamed answer takes as long to generate).
    delay: float = 0.0


@dataclass(frozen=True)
class StreamReply:
    """A 200 event stream: the writer's steps, paced by `pacing`, with the flavor's heartbeat."""

    path: str
    api: str
    flavor: str
    script: Script
    steps: Steps
    pacing: Pacing
    heartbeat: bytes
    heartbeat_mode: str
    headers: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SilentReply:
    """No answer at all: `drop` closes the connection, `hang` waits until the client leaves."""

    action: str


Reply = Union[JsonReply, StreamReply, SilentReply]


class Router:
    """Turns one parsed HTTP request into a reply. `records` lists the connection records."""

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
        flavor: Optional[Flavor] = None
        if parts[0] == "v1":
            flavor, rest = FLAVORS["demo"], parts[1:]
        elif parts[0] in FLAVORS and parts[1:2] == ["v1"]:
            flavor, rest = FLAVORS[parts[0]], parts[2:]
        api = _ENDPOINTS.get("/".join(rest)) if flavor is not None else None
        if flavor is None or api is None or (api == "completions" and not flavor.legacy_completions):
            return self.refuse(target, _unknown(method, path), nonce)
        if api == "models":
            if method != "GET":
                return _not_allowed(method, path, "GET", nonce)
            return _json(200, _models(anthropic="anthropic-version" in headers))
        if method != "POST":
            return _not_allowed(method, path, "POST", nonce, api)
        try:
            request = parse_request(api, body, headers, flavor=flavor.name)
            unknown = unknown_model(request.model, flavor.name, api)
            if unknown is not None:
                raise unknown
            if api == "completions" and request.stream:
                raise Rejection(
                    400,
                    "The /v1/completions endpoint does not support streaming.",
                    param="stream",
                    code="stream_not_supported",
                )
            script = build_script(request, now=now, nonce=nonce, tries=self._tries.try_of(request))
            if script.rejection is not None:
                raise script.rejection
        except Rejection as rejection:
            return _rejected(rejection, api, nonce)
        request_id = ("request-id" if api == "messages" else "x-request-id", ident("req_", script.nonce))
        if request.stream:
            return self._stream(path, api, flavor, script, request_id)
        return self._whole(api, flavor, script, request_id)

    # -------------------------------------------------------------- replies

    def _stream(self, path: str, api: str, flavor: Flavor, script: Script, request_id: tuple[str, str]) -> StreamReply:
        writers = {"chat": chat_stream, "responses": responses_stream, "messages": messages_stream}
        beat = sse(dumps({"type": "ping"}), event="ping") if api == "messages" else comment(flavor.heartbeat)
        return StreamReply(
            path=path,
            api=api,
            flavor=flavor.name,
            script=script,
            steps=writers[api](script, flavor),
            pacing=script.pacing,
            heartbeat=beat,
            heartbeat_mode=flavor.heartbeat_mode,
            # A scripted cut-off closes the connection afterwards: say so up front.
            headers=(
                *_STREAM_HEADERS,
                request_id,
                _script_header(script),
                *([("connection", "close")] if script.ending == "cutoff" else []),
            ),
        )

    def _whole(self, api: str, flavor: Flavor, script: Script, request_id: tuple[str, str]) -> Reply:
        if script.ending == "cutoff":
            return SilentReply("drop")
        if script.ending == "stall":
            return SilentReply("hang")
        if script.ending == "error":
            assert script.error is not None
            status = 500 if script.error.kind == "server_error" else 402
            type_, code, anthropic_type, _, _ = SCRIPTED_HTTP_ERRORS[status]
            return _rejected(
                Rejection(status, script.error.message, type_, code, None, anthropic_type), api, script.nonce
            )
        if api == "chat":
            body = chat_completion(script, flavor)
        elif api == "responses":
            body = response_object(script, flavor)
        elif api == "messages":
            body = message_object(script, flavor)
        else:
            body = text_completion(script)
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
        return _rejected(rejection, "messages" if urlsplit(target).path.endswith("/messages") else "chat", nonce)

    def _demo(self, method: str, path: str, rest: list[str], query: dict[str, list[str]], nonce: str) -> Reply:
        if rest not in (["health"], ["connections"]):
            return _rejected(_unknown(method, path), "chat", nonce)
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


def _rejected(rejection: Rejection, api: str, nonce: str) -> JsonReply:
    request_id = ident("req_", nonce)
    return JsonReply(
        rejection.status,
        error_body(rejection, api, request_id),
        (_JSON, ("request-id" if api == "messages" else "x-request-id", request_id), *error_headers(rejection)),
    )


def _not_allowed(method: str, path: str, allowed: str, nonce: str, api: str = "chat") -> JsonReply:
    rejection = Rejection(405, f"Method {method} is not allowed on {path}; use {allowed}.", code="method_not_allowed")
    reply = _rejected(rejection, api, nonce)
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
