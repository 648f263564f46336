"""TLS failures and timeouts, against real servers on 127.0.0.1, in words that name the fix.

The HTTPS server has a self-signed certificate made for the test with `openssl`; the silent
server accepts nothing (its backlog is full), so connecting really times out.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
from collections.abc import Iterator

import pytest
from support.hostile import DONE, HostileServer, Reply

import streamwidgets as sw
from streamwidgets.net import _transport as transport


@pytest.fixture(scope="module")
def https_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An event-stream server on https://127.0.0.1 with a self-signed certificate."""
    home = tmp_path_factory.mktemp("tls")
    key, cert = home / "key.pem", home / "cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert)),
            *("-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    answer = Reply((b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n', DONE))
    with HostileServer({"/tls/v1/chat/completions": answer}, tls=context) as server:
        yield server.url("tls")


def test_a_self_signed_certificate_is_named_with_the_fix(https_url: str):
    state = sw.run("hi", base_url=https_url, model="m", api_key="sk-test")
    assert state.status == "error" and state.error is not None and state.error.code == "connect_error"
    message = state.message
    assert message.startswith("A secure (TLS) connection to 127.0.0.1 failed: its certificate is not signed")
    assert "self-signed" in message and "SSL_CERT_FILE" in message and "http://" in message
    assert "provider reported" not in message


def test_https_to_a_plain_http_server_says_to_use_http(demo_server):
    url = demo_server.base_url.replace("http://", "https://")
    state = sw.run("hi", base_url=url, model="demo", demo={"tokens_per_second": 0})
    assert state.status == "error"
    assert "the server does not speak TLS. If it serves plain HTTP, use http:// in the base_url." in state.message


def test_a_connect_timeout_names_what_to_check(monkeypatch: pytest.MonkeyPatch):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    # Fill the accept queue: with nobody accepting, the kernel drops further SYNs, so connecting hangs.
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    monkeypatch.setattr(transport, "_CONNECT_TIMEOUT", 0.5)
    try:
        state = sw.run("hi", base_url=f"http://127.0.0.1:{port}/v1", model="m")
    finally:
        for sock in (*fillers, listener):
            sock.close()
    assert state.status == "error" and state.error is not None and state.error.code == "connect_timeout"
    assert state.message.startswith(f"http://127.0.0.1:{port} did not answer within 0.5 s: the server may be down")
    assert "Check the base_url" in state.message and "offline=True" in state.message


def test_a_stall_says_what_to_do(demo_server):
    state = sw.run("hi", base_url=demo_server.base_url, model="demo-stall", stall_timeout=0.5)
    assert state.status == "incomplete" and state.text
    assert "stalled" in state.message and "a larger `stall_timeout=` waits longer" in state.message
