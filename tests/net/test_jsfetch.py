"""What the browser transport (`net/_jsfetch.py`) decides without a browser: the headers a page
may send, the words of a CORS refusal, and a redirect that is not followed (with a stand-in for
the browser's `fetch` that sends real requests). Its streaming, Cancel and errors run in Chromium,
in JupyterLite (`tests/browser/test_lite.py`)."""

from __future__ import annotations

import asyncio
import sys
import types
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from support.hostile import JSON, HostileServer, Reply

import streamwidgets as sw
from streamwidgets.core import Where, cors_refused, redirected
from streamwidgets.net._jsfetch import CorsRefused, sent_headers
from streamwidgets.net._request import make_request


def test_the_headers_the_browser_sets_itself_are_not_sent():
    request = make_request("hi", provider="openai", api_key="sk-test", model="gpt-4.1-mini")
    headers = httpx.Headers({**request.headers(), "Host": "x", "Content-Length": "3", "User-Agent": "python-httpx"})
    sent = dict(sent_headers(headers))
    assert "accept-encoding" not in sent and "host" not in sent and "content-length" not in sent
    assert "user-agent" not in sent
    assert sent["authorization"] == "Bearer sk-test" and sent["content-type"] == "application/json"
    assert sent["accept"] == "text/event-stream"


def test_a_refusal_is_a_connect_error_that_names_what_the_server_must_allow():
    refused = CorsRefused("https://teacher.github.io", ["authorization", "content-type"])
    assert isinstance(refused, httpx.ConnectError)
    words = cors_refused(Where("https", "llm.example.edu"), refused.origin, refused.headers)
    assert words.startswith("The browser blocked the answer from https://llm.example.edu: the server answered")
    assert "`Access-Control-Allow-Origin: https://teacher.github.io` or `*`" in words
    assert "`authorization, content-type`" in words and "POST" in words
    # Anthropic's Messages send two more headers a server must allow.
    messages = make_request("hi", provider="anthropic", api_key="k", model="claude-sonnet-4-5")
    asked = sorted({n.lower() for n, _ in sent_headers(httpx.Headers(messages.headers()))} - {"accept"})
    assert "anthropic-version" in asked and "x-api-key" in asked


# --------------------------------------------------------------------------- redirects


class _Browser:
    """The little of a browser the fetch transport uses (`js`, `pyodide.ffi`), with real requests:
    each hop is sent to the loopback server by httpx, and a redirect is handled as `fetch()`
    handles it (the Fetch standard): `redirect: "follow"`, the default, sends the request again,
    its headers included, to wherever the redirect points; `"manual"` hands the page an opaque
    redirect (status 0, no headers, no body: not even where it points); `"error"` fails."""

    class JsException(Exception):
        def __init__(self, name: str, message: str) -> None:
            super().__init__(message)
            self.name, self.message = name, message

    def __init__(self, origin: str) -> None:
        self.location = SimpleNamespace(origin=origin, protocol="http:")
        self.Object = SimpleNamespace(fromEntries=dict)
        self.AbortController = SimpleNamespace(new=lambda: SimpleNamespace(signal=None, abort=lambda: None))

    @staticmethod
    def to_js(value: Any, dict_converter: Any = None) -> Any:
        return dict_converter(value.items()) if dict_converter is not None else value

    async def fetch(self, url: str, init: dict[str, Any]) -> Any:
        headers = dict(init.get("headers", []))
        async with httpx.AsyncClient(follow_redirects=False) as http:
            for _ in range(20):
                answer = await http.request(init["method"], url, headers=headers, content=bytes(init.get("body", b"")))
                if not answer.is_redirect:
                    break
                mode = init.get("redirect", "follow")
                if mode == "manual":
                    return SimpleNamespace(type="opaqueredirect", status=0, statusText="", headers={}, body=None)
                if mode == "error":
                    raise self.JsException("TypeError", "Failed to fetch")
                url = str(answer.next_request.url)  # type: ignore[union-attr]
        chunks = iter([answer.content])

        async def read() -> Any:
            part = next(chunks, None)
            return SimpleNamespace(done=part is None, value=SimpleNamespace(to_bytes=lambda: part))

        return SimpleNamespace(
            type="cors",
            status=answer.status_code,
            statusText=answer.reason_phrase,
            headers=SimpleNamespace(entries=lambda: list(answer.headers.items())),
            body=SimpleNamespace(getReader=lambda: SimpleNamespace(read=read)),
        )


@pytest.fixture
def in_the_browser(monkeypatch: pytest.MonkeyPatch) -> _Browser:
    """The process as Pyodide: `sys.platform` is "emscripten", and `js` is the browser above."""
    browser = _Browser("http://127.0.0.1:8000")
    ffi = types.ModuleType("pyodide.ffi")
    ffi.JsException = _Browser.JsException  # type: ignore[attr-defined]
    ffi.to_js = _Browser.to_js  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "js", browser)
    monkeypatch.setitem(sys.modules, "pyodide", types.ModuleType("pyodide"))
    monkeypatch.setitem(sys.modules, "pyodide.ffi", ffi)
    monkeypatch.setattr(sys, "platform", "emscripten")
    return browser


def test_a_redirect_in_the_browser_keeps_the_key_home_and_is_worded_as_on_cpython(in_the_browser):
    """A provider that redirects to another origin: in the browser the request stops there, as
    httpx stops on CPython, and the key (`x-api-key`, which a browser keeps on a redirect to
    another origin) never reaches it; the words are CPython's, save where it points (hidden)."""
    key = "sk-ant-class-key-0123456789"
    with HostileServer({"/v1/messages": Reply((b"{}",), headers=JSON)}) as stranger:
        moved = Reply((b"Moved",), "307 Temporary Redirect", (("Location", f"{stranger.root}/v1/messages"),))
        with HostileServer({"/moved/v1/messages": moved}) as provider:
            base = f"{provider.root}/moved/v1"
            ask = {"provider": "anthropic", "base_url": base, "api_key": key, "model": "claude", "retries": 0}
            # The browser follows a fetch that does not say otherwise, key and all.
            followed = asyncio.run(
                in_the_browser.fetch(f"{base}/messages", {"method": "POST", "headers": [["x-api-key", key]]})
            )
            assert followed.status == 200 and stranger.visits[-1].headers["x-api-key"] == key
            stranger.visits.clear()
            browser = sw.run("hi", **ask)
            with pytest.MonkeyPatch.context() as cpython:
                cpython.setattr(sys, "platform", "linux")
                native = sw.run("hi", **ask)
    assert stranger.visits == [] and [v.path for v in provider.visits] == ["/moved/v1/messages"] * 3
    assert browser.status == native.status == "error" and browser.error.code == native.error.code == "redirect"
    assert browser.error.message == redirected(None) and native.error.message == redirected(
        f"{stranger.root}/v1/messages"
    )
    assert browser.error.message.startswith("The server redirects this request to another address")
    same = "streamwidgets does not follow redirects (your key would go along): if that address is right, use it as the base_url."
    assert browser.error.message.endswith(same) and native.error.message.endswith(same)
    assert key not in browser.message


class _FailingBrowser(_Browser):
    """A browser whose every `fetch` fails as a CORS refusal and a dead server both do (the page
    is told only "Failed to fetch")."""

    async def fetch(self, url: str, init: dict[str, Any]) -> Any:
        raise self.JsException("TypeError", "Failed to fetch")


@pytest.mark.parametrize("isolated", [False, True])
def test_a_failed_fetch_is_worded_for_what_the_page_can_know(in_the_browser, monkeypatch, isolated: bool):
    """Where the page is cross-origin isolated (COOP/COEP, which two threads of the tab's model
    need), the opaque probe fails at a server that is up as at one that is down: the words say
    that either may be the case and what a server that is up must allow, instead of "down"."""
    browser = _FailingBrowser("https://course.example.edu")
    browser.crossOriginIsolated = isolated  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "js", browser)
    ask = {"provider": "openai", "base_url": "https://llm.example.edu/v1", "api_key": "sk-x", "model": "m"}
    state = sw.run("hi", retries=0, **ask)
    assert state.status == "error"
    message = state.error.message
    if isolated:
        assert "refuses this page or cannot be reached" in message and "cross-origin isolated" in message
        assert "allow the origin https://course.example.edu (CORS)" in message and "may be down" not in message
    else:
        assert "may be down" in message and "isolated" not in message
    assert "sk-x" not in message
