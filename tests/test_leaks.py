"""A sentinel key, and every place it could leak to: it must be in none of them.

For each way a key leaks in the hardening issue — a provider that quotes it back (14), a key
read from a file with its newline (15), a conversation's options (16), a key written into the
base URL (17) — the key is looked for in every form it can take (as sent, URL-encoded,
JSON-escaped, base64, with its newline) in: the state's fields, its repr and its pickle, the
text and traceback of the exception `raise_on_error=True` raises, every log record at DEBUG
(httpx and httpcore included), the recording (decoded), and — in a real kernel — the widget
state of a `show()` view and a `ChatPanel`, and the notebook saved after running them.
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
from hostile_server import JSON, HostileServer, Reply

from streamwidgets.client import Chat, arun, make_request
from streamwidgets.errors import StreamError
from streamwidgets.state import StreamState

#: A key with the characters that change under URL-encoding, JSON-escaping and base64.
KEY = "sk-leak/SENTINEL+0123456789=abcdef"
HEADER = {"chat": "authorization", "responses": "authorization", "messages": "x-api-key"}
PATH = {"chat": "chat/completions", "responses": "responses", "messages": "messages"}
APIS = tuple(PATH)


def forms(key: str = KEY) -> set[str]:
    raw = key + "\n"
    return {
        key,
        quote(key, safe=""),
        json.dumps(key)[1:-1],
        base64.b64encode(key.encode()).decode(),
        base64.b64encode(f"Bearer {key}".encode()).decode(),
        repr(raw.encode()),  # how the HTTP library quotes a header it refuses: b'...\n'
        json.dumps(raw)[1:-1],
    }


def assert_nowhere(texts: dict[str, str]) -> None:
    for where, text in texts.items():
        for form in forms():
            assert form not in text, f"the key ({form!r}) leaked into {where}"


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileServer]:
    # Each API's server quotes the key header it was sent in its 401 body, as many do.
    replies = {
        f"/echo/{api}/v1/{PATH[api]}": Reply(status="401 Unauthorized", headers=JSON, echo=HEADER[api]) for api in APIS
    }
    server = HostileServer(replies).start()
    try:
        yield server
    finally:
        server.stop()


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
    ],
    ids=["userinfo", "userinfo-raw", "no-scheme", "query"],
)
def test_a_key_in_base_url_is_refused_and_not_repeated(debug_logs, api, base_url):
    with pytest.raises(ValueError) as refused:
        make_request("hi", base_url=base_url, api=api, model="m")
    assert "api_key=" in str(refused.value)
    tb = "".join(traceback.format_exception(refused.value))
    assert_nowhere({"exception": str(refused.value), "traceback": tb, **{"logs": debug_logs.text}})


# --------------------------------------------------------------------------- in a real kernel


@pytest.mark.kernel
def test_widget_state_and_the_saved_notebook_hold_no_key(hostile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A notebook runs `show()`, a `ChatPanel`, a raising `arun()` and a key in `base_url` for
    real (nbclient, a real kernel); the key reaches the kernel in the environment, as a real one
    does, so no cell's code holds it. Then every widget's state and the saved notebook are searched."""
    import nbformat
    from nbclient import NotebookClient
    from test_kernel import kernel_env, kernel_manager

    for name, value in kernel_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SW_LEAK_KEY", KEY)
    state_file = tmp_path / "widget-state.json"
    url = hostile.url("echo/chat")
    cells = [
        "import os\nimport streamwidgets.widgets as sw\n"
        f"h = sw.show('hi', base_url={url!r}, model='m', api_key=os.environ['SW_LEAK_KEY'] + '\\n')\n"
        "state = await h\nprint(state.status, state.error.http_status)",
        f"panel = sw.ChatPanel(base_url={hostile.url('echo/messages')!r}, api='messages', model='m',\n"
        "                      api_key=os.environ['SW_LEAK_KEY'])\n"
        "display(panel)\nanswer = await panel.send('hi')\nprint(answer.status, repr(panel.chat.options))",
        "import streamwidgets\n"
        f"await streamwidgets.arun('hi', base_url={url!r}, model='m', api_key=os.environ['SW_LEAK_KEY'],\n"
        "                         raise_on_error=True)",
        "streamwidgets.make_request('hi', base_url='http://u:' + os.environ['SW_LEAK_KEY'] + '@127.0.0.1:9/v1')",
        "import ipywidgets, json\n"
        "states = json.dumps(ipywidgets.Widget.get_manager_state(drop_defaults=False))\n"
        f"n = open({str(state_file)!r}, 'w').write(states)\nprint(len(ipywidgets.Widget.widgets) > 5)",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    NotebookClient(nb, km=kernel_manager(tmp_path), timeout=120, allow_errors=True).execute()
    saved = nbformat.writes(nb)
    outputs = [o for cell in nb.cells for o in cell.outputs]
    printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "error 401" in printed and "Secret('***')" in printed and "True" in printed, printed
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert [e["ename"] for e in errors] == ["HTTPStatusError", "ValueError"], errors
    widget_state = state_file.read_text()
    assert "Bad key: ***" in widget_state  # the problem box shows the provider's words, redacted
    assert_nowhere({"saved notebook": saved, "widget state": widget_state})
