"""A real web page in a real Chromium cannot drive the embedded provider.

The pages are served by Playwright's request interception (only their documents: every request
their scripts make goes over the network to the real server on 127.0.0.1). One page is another
local origin (as Jupyter's own page at another port would be); one is a DNS-rebinding attacker
whose name resolves to 127.0.0.1 (Chromium's `--host-resolver-rules`), so that its requests are
same-origin to the server's port (see `NO_LNA`). Playwright sees each response's status even where the page may
not read it (a "simple" request's, or a same-origin one's), which proves that those requests did
reach the server and were refused there.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import CHROMIUM_ARGS

from streamwidgets.server import DemoServer

pytestmark = pytest.mark.browser

STREAM_BODY = json.dumps(
    {
        "model": "demo-long",
        "stream": True,
        "messages": [{"role": "user", "content": "Tell me a story"}],
        "input": "Tell me a story",
    }
)
PAGE = "<!doctype html><title>a page</title><p>hello</p>"
#: Chromium's own Local Network Access checks would stop these pages before the server sees a
#: byte; they are off here to stand for browsers without them (Firefox, Safari, older Chromes):
#: the server must refuse on its own.
NO_LNA = "LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights"


@pytest.fixture(scope="module")
def chromium(demo_server: DemoServer) -> Iterator[Any]:
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Debian's Chromium is missing: `apt-get install -y chromium`; deselect with -m 'not browser'")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP rebound.test 127.0.0.1", f"--disable-features={NO_LNA}"],
        )
        try:
            yield browser
        finally:
            browser.close()


def open_page(chromium: Any, url: str) -> tuple[Any, dict[str, int]]:
    """A tab showing a page at `url`, and the status of each request it makes, by method and path."""
    tab = chromium.new_page()
    tab.route(url, lambda route: route.fulfill(status=200, content_type="text/html", body=PAGE))
    statuses: dict[str, int] = {}
    tab.on("response", lambda r: statuses.__setitem__(f"{r.request.method} {r.url.split('/', 3)[-1]}", r.status))
    tab.goto(url)
    return tab, statuses


FETCH = """async ([url, options]) => {
    try {
        const response = await fetch(url, options);
        return {status: response.status, type: response.type, text: await response.text()};
    } catch (error) {
        return {error: String(error)};
    }
}"""


def test_another_local_origin_can_neither_post_nor_read(chromium: Any, demo_server: DemoServer) -> None:
    tab, statuses = open_page(chromium, "http://127.0.0.1:8888/lab")  # e.g. Jupyter's own page
    try:
        before = len(demo_server.connections)
        # A "simple" request: no preflight, the page cannot read the answer, but the server would
        # act on it; it is refused for its Origin (and would be for its text/plain body).
        simple = tab.evaluate(
            FETCH,
            [
                f"{demo_server.base_url}/chat/completions",
                {"method": "POST", "mode": "no-cors", "headers": {"Content-Type": "text/plain"}, "body": STREAM_BODY},
            ],
        )
        assert simple.get("type") == "opaque", simple
        # A JSON request needs a preflight, which is refused: the POST itself is never sent.
        preflighted = tab.evaluate(
            FETCH,
            [
                f"{demo_server.base_url}/responses",
                {"method": "POST", "headers": {"Content-Type": "application/json"}, "body": STREAM_BODY},
            ],
        )
        read = tab.evaluate(FETCH, [f"{demo_server.url}/_demo/connections", {}])
        tab.wait_for_timeout(300)
        assert "error" in preflighted and "error" in read, (preflighted, read)
        assert statuses["POST v1/chat/completions"] == 403, statuses
        assert "POST v1/responses" not in statuses, statuses  # the preflight got no CORS grant
        assert len(demo_server.connections) == before, "a web page started a stream"
    finally:
        tab.close()


def test_a_dns_rebinding_page_reads_nothing(chromium: Any, demo_server: DemoServer) -> None:
    # The attacker's page, at its own name and the server's port; its name now points at 127.0.0.1.
    tab, statuses = open_page(chromium, f"http://rebound.test:{demo_server.port}/")
    try:
        before = len(demo_server.connections)
        read = tab.evaluate(FETCH, ["/_demo/connections", {}])
        assert read.get("status") == 403, read  # same-origin for the browser, so the page may read this
        assert "answers only requests addressed to it" in json.loads(read["text"])["error"]["message"]
        assert "opened_at" not in read["text"]
        posted = tab.evaluate(
            FETCH,
            [
                "/v1/chat/completions",
                {"method": "POST", "headers": {"Content-Type": "application/json"}, "body": STREAM_BODY},
            ],
        )
        assert posted["status"] == 403, posted
        assert statuses["GET _demo/connections"] == 403 and statuses["POST v1/chat/completions"] == 403
        assert len(demo_server.connections) == before
    finally:
        tab.close()
