"""`%%stream`: the options on the line, the variables in the cell, the handle in `_` — in a real
kernel, against the embedded provider (which reports what it was asked)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from classroom_harness import Kernel, running_kernel
from IPython.core.error import UsageError
from test_kernel import SENTINEL, WIDGET_MIMETYPE

from streamwidgets.magic import fill_variables, parse_options
from streamwidgets.server import DemoServer, scripted_answer


def test_options_are_read_like_a_command_line():
    options = parse_options(
        '--provider openai --model gpt-4.1-mini --api responses --system "Be brief, be kind." '
        "--record answer.jsonl --max-tokens 200 --as reply -p temperature=0.2 --offline"
    )
    assert options == {
        "provider": "openai",
        "model": "gpt-4.1-mini",
        "api": "responses",
        "system": "Be brief, be kind.",
        "record": "answer.jsonl",
        "max_tokens": 200,
        "name": "reply",
        "temperature": 0.2,
        "offline": True,
    }
    assert parse_options("") == {}
    with pytest.raises(UsageError, match="--api"):
        parse_options("--api completions")
    with pytest.raises(UsageError, match="quote"):
        parse_options('--system "unclosed')
    with pytest.raises(UsageError, match="unrecognized arguments: --api-key"):
        parse_options("--api-key sk-123")  # a key on the line would be saved with the notebook


def test_variables_are_filled_and_other_braces_survive():
    namespace = {"topic": "recursion", "n": 3}
    assert fill_variables("Explain {topic} in {n} steps.", namespace) == "Explain recursion in 3 steps."
    code = "Why does `d = {'a': 1}` print {{a}} and f'{x!r}' not?"
    assert fill_variables(code, namespace) == "Why does `d = {'a': 1}` print {a} and f'{x!r}' not?"
    with pytest.raises(UsageError, match="no variable 'missing'"):
        fill_variables("What about {missing}?", namespace)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, demo_server: DemoServer) -> Iterator[Kernel]:
    yield from running_kernel(tmp_path_factory.mktemp("kernel"), demo_server, "%load_ext streamwidgets")


def test_the_magic_streams_the_cell_with_its_options_and_variables(kernel: Kernel, tmp_path: Path):
    record = tmp_path / "answer.jsonl"
    kernel.execute("topic = 'binary search'")
    _, outputs, took = kernel.execute(
        f"""%%stream --base-url {{BASE}} --model demo-reasoning --api messages --system "Answer like a teacher." --record {record}
Explain {{topic}} to a class, please."""
    )
    assert took < 2.0  # the cell does not wait for the answer
    displays = [m for m in outputs if m["msg_type"] == "display_data"]
    assert len(displays) == 1 and WIDGET_MIMETYPE in displays[0]["content"]["data"]
    assert not [m for m in outputs if m["msg_type"] == "execute_result"]
    final = kernel.value(
        "[(await _).status, _.text, _.request.api, _.request.model, _.request.messages, _.view.reasoning is not None]"
    )
    status, text, api, model, messages, reasoning = final
    expected = scripted_answer("demo-reasoning", "Explain binary search to a class, please.")
    assert status == "complete" and text == expected.text and reasoning
    assert (api, model) == ("messages", "demo-reasoning")
    assert messages == [
        {"role": "system", "content": "Answer like a teacher."},
        {"role": "user", "content": "Explain binary search to a class, please."},
    ]
    header = json.loads(record.read_text().splitlines()[0])
    assert header["api"] == "messages" and header["model"] == "demo-reasoning"


def test_defaults_apply_to_the_following_cells_and_as_names_the_handle(kernel: Kernel):
    kernel.execute("%stream_defaults --base-url {BASE} --model demo-fast --max-tokens 10")
    kernel.execute("%%stream --as quick\nWhat is SSE?")
    quick = kernel.value("[(await quick).status, quick.request.model, quick.request.max_tokens, quick.state.finish]")
    assert quick == ["complete", "demo-fast", 10, "length"]
    kernel.execute("%%stream --model demo --as other\nWhat is SSE?")  # the line wins over the defaults
    assert kernel.value("[(await other).status, other.request.model, other.request.max_tokens]") == [
        "complete",
        "demo",
        10,
    ]
    kernel.execute("shown = %stream_defaults")
    assert kernel.value("shown") == {"base_url": kernel.value("BASE"), "model": "demo-fast", "max_tokens": 10}
    kernel.execute("%stream_defaults --reset\nshown = %stream_defaults")
    assert kernel.value("shown") == {}


def test_a_mistake_is_one_plain_line_and_no_key_ever_shows(kernel: Kernel):
    msg_id = kernel.client.execute("%%stream --model demo\nWhat about {undefined_name}?", allow_stdin=False)
    reply = kernel.client.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kernel.client.get_shell_msg(timeout=30)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "UsageError"
    assert "no variable 'undefined_name'" in reply["content"]["evalue"]
    since = time.monotonic()
    kernel.execute("import os\nos.environ['OPENAI_API_KEY'] = os.environ['SW_TEST_KEY']")
    kernel.execute("%%stream --provider openai --base-url {BASE} --model demo-http-401 --as bad\nHello")
    state = kernel.value("[(await bad).status, bad.state.message, repr(bad), repr(bad.request)]")
    assert state[0] == "error" and "Invalid API key" in state[1]
    time.sleep(0.3)
    while kernel.pump(0.1):
        pass
    wire = [m for t, m in kernel.log if t >= since]
    assert wire and SENTINEL not in json.dumps(wire, default=str) and SENTINEL not in json.dumps(state)
