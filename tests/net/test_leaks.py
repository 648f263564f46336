"""A sentinel key, and every place it could leak to: it must be in none of them.

For each way a key leaks in the hardening issue — a provider that quotes it back (14), a key
read from a file with its newline (15), a conversation's options (16), a key written into the
base URL (17) — the key is looked for in every form it can take (as sent, URL-encoded,
JSON-escaped, base64, with its newline) in: the state's fields, its repr and its pickle, the
text and traceback of the exception `raise_on_error=True` raises, every log record at DEBUG
(httpx and httpcore included), the recording (decoded), and — in a real kernel, in
`tests/kernel/test_key_leaks.py` — the widget state of a `show()` view and a `ChatPanel`, and the
notebook saved after running them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import pickle
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from key_forms import APIS, HEADER, KEY, PATH, assert_nowhere, echo_replies, forms
from support.hostile import HTML, JSON, Reply, hostile_fixture

from streamwidgets import Chat, arun, make_request
from streamwidgets.core._errors import StreamError
from streamwidgets.core._state import StreamState

hostile = hostile_fixture(echo_replies)


def surfaces(state: StreamState) -> dict[str, str]:
    return {
        "state fields": repr(vars(state)),
        "repr": repr(state),
        "message": state.message,
        "error": str(state.error),
        "warnings": "\n".join(state.warnings),
        "pickle": pickle.dumps(state).decode("latin-1"),
    }


def recording(path: Path) -> dict[str, str]:
    text = path.read_text()
    decoded = b"".join(base64.b64decode(json.loads(line).get("data", "")) for line in text.splitlines())
    return {"recording file": text, "recording decoded": decoded.decode("utf-8", "replace")}


def run_raising(request: Any, record: Path) -> tuple[StreamState, dict[str, str]]:
    try:
        asyncio.run(arun(request, raise_on_error=True, record=record))
    except StreamError as exc:
        tb = "".join(traceback.format_exception(exc))
        return exc.state, {"exception": str(exc), "exception repr": repr(exc), "traceback": tb}
    raise AssertionError("the 401 did not raise")


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    for name in ("", "httpx", "httpcore", "streamwidgets"):
        caplog.set_level(logging.DEBUG, logger=name)
    yield caplog


def logged(caplog: pytest.LogCaptureFixture) -> dict[str, str]:
    records = caplog.records
    assert any(r.name.startswith(("httpx", "httpcore")) for r in records), "the HTTP loggers were not captured"
    text = "\n".join(f"{r.getMessage()} {r.args!r} {r.__dict__!r}" for r in records)
    return {"log records at DEBUG": text}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("item", ["14-echoed", "15-newline"])
def test_a_key_the_server_quotes_back_is_nowhere(hostile, debug_logs, tmp_path, api, item):
    key = KEY + "\n" if item == "15-newline" else KEY
    request = make_request("hi", base_url=hostile.url(f"echo/{api}"), api=api, model="m", api_key=key)
    state, raised = run_raising(request, tmp_path / "rec.jsonl")
    sent = hostile.visit(f"/echo/{api}/v1/{PATH[api]}").headers[HEADER[api]]
    assert sent.endswith(KEY), "the key went out (stripped): the server had it to quote back"
    assert state.status == "error" and state.error.http_status == 401 and "Bad key: " in state.message
    assert "***" in state.message  # redacted, not dropped
    assert_nowhere({**surfaces(state), **raised, **recording(tmp_path / "rec.jsonl"), **logged(debug_logs)})
    assert_nowhere({"request repr": repr(request), "request vars": repr(vars(request))})


@pytest.mark.parametrize("api", APIS)
def test_a_conversations_options_keep_the_key_as_a_secret(hostile, debug_logs, api):
    chat = Chat(base_url=hostile.url(f"echo/{api}"), api=api, model="m", api_key=KEY)
    state = asyncio.run(chat.send("hi"))
    assert state.status == "error" and "***" in state.message
    texts = {"chat repr": repr(chat), "options": repr(chat.options), "vars": repr(vars(chat))}
    with pytest.raises(TypeError) as refused:
        pickle.dumps(chat)
    texts["pickle refusal"] = "".join(traceback.format_exception(refused.value))
    assert_nowhere({**texts, **surfaces(state), **logged(debug_logs)})


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    "base_url",
    [
        f"http://user:{quote(KEY, safe='')}@127.0.0.1:9/v1",
        f"http://user:{KEY}@127.0.0.1:9/v1",  # unquoted: its "/" once made the URL parser quote part of it
        f"user:{KEY}@127.0.0.1:9/v1",  # no scheme: the message about the scheme once repeated it
        f"http://127.0.0.1:9/v1?key={quote(KEY, safe='')}",
        f"http://127.0.0.1:9/v1?key={KEY}",
        f"http://127.0.0.1:9/v1?api_key={KEY}",
        f"https://user:{KEY}@llm.example.edu/v1",
        f"https://generativelanguage.googleapis.com/v1beta/openai?key={KEY}",
        f"https://llm.example.edu/v1?api_key={KEY}",
    ],
    ids=[
        "userinfo",
        "userinfo-raw",
        "no-scheme",
        "query",
        "query-raw",
        "api_key",
        "https-userinfo",
        "gemini",
        "https-api_key",
    ],
)
def test_a_key_in_base_url_is_refused_and_not_repeated(debug_logs, api, base_url):
    with pytest.raises(ValueError) as refused:
        make_request("hi", base_url=base_url, api=api, model="m")
    assert "api_key=" in str(refused.value)
    tb = "".join(traceback.format_exception(refused.value))
    assert_nowhere({"exception": str(refused.value), "traceback": tb, **{"logs": debug_logs.text}})


# --------------------------------------------------------------------------- every form, every path


def _b64_at(offset: int, key: str = KEY, alphabet: bytes = b"+/") -> str:
    """The key inside a longer base64 text, at one of its three alignments."""
    return base64.b64encode(b"ab"[:offset] + key.encode() + b"!", altchars=alphabet).decode()


def _u_escaped(key: str = KEY) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in key)


#: HTML5 has named entities for these (none for the hyphen-minus or letters).
_NAMED = {"/": "&sol;", "+": "&plus;", "=": "&equals;", "_": "&lowbar;"}
#: Every way a peer was seen to echo a key back, each a reply of its own: (status, headers, body).
ECHOES: dict[str, tuple[str, tuple[tuple[str, str], ...], bytes]] = {
    "json-u-escaped": ("401 Unauthorized", JSON, b'{"error": {"message": "Bad key: ' + _u_escaped().encode() + b'"}}'),
    "html-named": ("401 Unauthorized", HTML, f"<p>Bad key {''.join(_NAMED.get(c, c) for c in KEY)}</p>".encode()),
    "html-decimal": ("401 Unauthorized", HTML, f"<p>Bad key {''.join(f'&#{ord(c)};' for c in KEY)}</p>".encode()),
    "html-hex": ("401 Unauthorized", HTML, f"<p>Bad key {''.join(f'&#x{ord(c):x};' for c in KEY)}</p>".encode()),
    **{
        f"base64-{n}": (
            "401 Unauthorized",
            JSON,
            json.dumps({"error": {"message": f"Bad token {_b64_at(n)}"}}).encode(),
        )
        for n in range(3)
    },
    **{
        f"base64url-{n}": (
            "401 Unauthorized",
            JSON,
            json.dumps({"error": {"message": f"Bad token {_b64_at(n, alphabet=b'-_')}"}}).encode(),
        )
        for n in range(3)
    },
    "basic": (
        "401 Unauthorized",
        JSON,
        json.dumps({"error": {"message": f"Basic {base64.b64encode(f'user:{KEY}'.encode()).decode()}"}}).encode(),
    ),
    "percent": (
        "401 Unauthorized",
        JSON,
        json.dumps({"error": {"message": "".join(f"%{b:02X}" for b in KEY.encode())}}).encode(),
    ),
    "bearer-semicolon": (
        "401 Unauthorized",
        JSON,
        json.dumps({"error": {"message": f"got Bearer {KEY}; realm=api"}}).encode(),
    ),
    "redirect": ("302 Found", (*JSON, ("Location", f"https://elsewhere.example/v1?k={KEY}")), b"{}"),
    "header": ("401 Unauthorized", (*JSON, ("X-Echo", KEY)), b'{"error": {"message": "no"}}'),
    "stream-error": (
        "200 OK",
        (("Content-Type", "text/event-stream"),),
        b'data: {"choices":[{"index":0,"delta":{"content":"Partial "}}]}\n\n'
        + b'data: {"error": {"message": "key '
        + KEY.encode()
        + b' is revoked", "code": "revoked"}}\n\n',
    ),
    "stream-bad-json": (
        "200 OK",
        (("Content-Type", "text/event-stream"),),
        b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
        + b'data: {"oops": "'
        + KEY.encode()
        + b'" broken\n\n'
        + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
    ),
}


def every_form(key: str = KEY) -> set[str]:
    """`forms()`, and every encoding of ECHOES: what must be nowhere."""
    encoded = {_u_escaped(key), "".join(f"%{b:02X}" for b in key.encode())}
    encoded |= {"".join(f"&#{ord(c)};" for c in key), "".join(_NAMED.get(c, c) for c in key)}
    for n in range(3):  # the part of each base64 text that is the key's own
        for alphabet in (b"+/", b"-_"):
            encoded.add(_b64_at(n, key, alphabet)[3:-4])
    encoded.add(base64.b64encode(f"user:{key}".encode()).decode()[8:-4])
    return forms(key) | encoded


echoing = hostile_fixture(
    {
        f"/{case}/v1/chat/completions": Reply(body=(body,), status=status, headers=headers)
        for case, (status, headers, body) in ECHOES.items()
    }
)


@pytest.mark.parametrize("case", list(ECHOES))
def test_a_sentinel_key_in_every_form_reaches_no_path(echoing, debug_logs, tmp_path, case):
    """One key, echoed back in one form per case; then looked for, in every form, on every path:
    the state (fields, repr, pickle, message, warnings), the exception `raise_on_error=True`
    raises, the terminal printer, the class log, the recording (file and decoded), and every
    DEBUG record of httpx and httpcore."""
    import io

    import streamwidgets as sw

    url = echoing.url(case)
    record, log, printed = tmp_path / "rec.jsonl", tmp_path / "log.jsonl", io.StringIO()
    raised: dict[str, str] = {}
    try:
        state = asyncio.run(
            arun("hi", base_url=url, model="m", api_key=KEY, record=record, log=log, raise_on_error=True)
        )
    except Exception as exc:  # an error or an incomplete stream raises: its text is a path too
        raised = {"exception": str(exc), "traceback": "".join(traceback.format_exception(exc))}
        state = exc.state  # type: ignore[attr-defined]
    if case == "stream-bad-json":  # a malformed event is a warning; the stream goes on and completes
        assert state.status == "complete" and any("***" in w for w in state.warnings), state.warnings
    else:
        assert raised and state.status in ("error", "incomplete"), case
    handle = sw.show("hi", base_url=url, model="m", api_key=KEY, out=printed)  # outside a kernel: the terminal
    assert handle.done and printed.getvalue()
    if case.startswith("stream"):
        assert state.text, "the partial answer is kept"
    if case == "bearer-semicolon":
        assert "Bearer ***; realm" in state.message  # the key goes, the character after it stays
    texts = {
        **surfaces(state),
        **raised,
        "terminal": printed.getvalue(),
        "class log": log.read_text(),
        **recording(record),
        **logged(debug_logs),
    }
    for where, text in texts.items():
        for form in every_form():
            assert form not in text, f"{case}: the key ({form!r}) leaked into {where}"
    assert sw.parse(record).status == state.status  # the redacted recording still replays


def test_the_redactor_finds_a_key_cut_in_two_by_a_network_read():
    from streamwidgets.core._redact import ByteRedactor, Redactor

    body = b'data: {"error": {"message": "key ' + KEY.encode() + b' revoked"}}\n\n'
    for cut in range(1, len(body)):
        stream = ByteRedactor(Redactor(KEY))
        out = stream.feed(body[:cut]) + stream.feed(body[cut:]) + stream.flush()
        assert KEY.encode() not in out and b"***" in out, cut
