"""What the browser transport (`net/_jsfetch.py`) decides without a browser: the headers a page
may send, and the words of a CORS refusal. Its streaming, Cancel and errors run in Chromium, in
JupyterLite (`tests/browser/test_lite.py`)."""

from __future__ import annotations

import httpx

from streamwidgets.core import Where, cors_refused
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
