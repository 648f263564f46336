"""The classroom features in a real kernel, driven over ZMQ like a frontend, against the embedded
provider: the `%%stream` magic, `compare()` side by side, the retry countdown and Cancel during it,
and the class log (with a loopback server that echoes the key back in its answer).

One kernel serves the whole module (with `%load_ext streamwidgets`); each test names its own
variables and awaits its own streams. The class log's test runs last: `sw.log_to` keeps logging
every later answer of the kernel. Their pure halves stay beside the modules they test
(`tests/apps/test_magic.py`, `test_compare.py`, `test_classlog.py`, `tests/net/test_retry.py`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernels import SENTINEL, WIDGET_MIMETYPE, Kernel, sent_values
from support.hostile import DONE, ECHO, HostileServer, Reply, chat

from streamwidgets.server import scripted_answer

pytestmark = pytest.mark.kernel


# ----------------------------------------------------------------------------- %%stream


def test_the_magic_streams_the_cell_with_its_options_and_variables(kernel: Kernel, tmp_path: Path):
    record = tmp_path / "answer.jsonl"
    kernel.execute("topic = 'binary search'")
    _, outputs, _ = kernel.execute(
        f"""%%stream --base-url {{BASE}} --model demo-reasoning --api messages --system "Answer like a teacher." --record {record}
Explain {{topic}} to a class, please."""
    )
    assert kernel.value("_.done") is False  # the cell did not wait for the answer
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


# ----------------------------------------------------------------------------- compare()


def _rows(html: str) -> list[list[str]]:
    body = html.split("<tbody>", 1)[1]
    return [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def test_compare_streams_all_at_once_updates_its_table_and_ends_with_one_row_per_model(kernel: Kernel):
    since = time.monotonic()
    _, outputs, _ = kernel.execute(
        "cmp = sw.compare('Explain recursion', ['demo-fast', 'demo', 'demo-deep'], base_url=BASE)\n"
        "returned_first = not any(h.done for h in cmp.handles)"
    )
    assert kernel.value("returned_first") is True  # the cell did not wait for the answers
    displays = [m for m in outputs if m["msg_type"] == "display_data"]
    assert len(displays) == 1 and WIDGET_MIMETYPE in displays[0]["content"]["data"]
    deadline = time.monotonic() + 10
    while not kernel.value("any(h.state.text_length for h in cmp.handles)") and time.monotonic() < deadline:
        time.sleep(0.05)
    live = kernel.value("[h.state.status for h in cmp.handles]")
    assert "streaming" in live  # all three run at once: the fast one is well under way
    table = kernel.value("cmp.table.model_id")
    states = kernel.value("[s.status for s in await cmp]")
    assert states == ["complete", "complete", "complete"]
    final = kernel.value(
        "[cmp.table.value, [h.text for h in cmp.handles], [h.view.usage.widget.value for h in cmp.handles],"
        " cmp.row.layout.flex_flow, [c.layout.flex for c in cmp.row.children]]"
    )
    html, texts, meters, flow, flex = final
    rows = _rows(html)
    assert [r[0] for r in rows] == ["demo-fast", "demo", "demo-deep"] and all(r[1] == "done" for r in rows)
    assert all(r[6] == "stop" for r in rows)
    for model, text in zip(["demo-fast", "demo", "demo-deep"], texts, strict=True):
        assert text == scripted_answer(model, "Explain recursion").text
    assert len(texts[0]) < len(texts[1]) < len(texts[2])  # the models differ in style...
    ttft = [float(r[2].split()[0]) / (1000 if r[2].endswith(" ms") else 1) for r in rows]
    assert max(ttft[0], ttft[1]) < ttft[2]  # ...and in pace (deep thinks a second longer)
    assert all('<svg class="sw-sparkline"' in meter for meter in meters)
    assert flow == "row wrap" and flex == ["1 1 240px"] * 3  # side by side, rows on a narrow screen
    sent = sent_values(kernel, table, since)
    assert len(sent) >= 3  # the table was redrawn while they streamed
    midway = [s for s in sent if "answering" in s]
    assert midway and any(len(_rows(s)) == 3 for s in midway)
    updates = [m for t, m in kernel.log if t >= since and m["msg_type"] == "update_display_data"]
    saved = updates[-1]["content"]["data"]["text/markdown"]
    assert saved.count("| demo") == 3 and "done" in saved  # a saved notebook keeps the table


def test_a_rate_limited_model_waits_in_its_own_view_while_the_others_stream(kernel: Kernel):
    kernel.execute(
        "cmp2 = sw.compare('Explain SSE (compare retry)', ['demo-fast', 'demo-ratelimit'], base_url=BASE,"
        " demo={'tokens_per_second': 400})"
    )
    deadline = time.monotonic() + 4
    header = ""
    while time.monotonic() < deadline and "retrying in" not in header:
        header = kernel.value("cmp2.handles[1].view.header.widget.value")
        time.sleep(0.1)
    assert "rate limited by the provider" in header
    rows = _rows(kernel.value("[s.status for s in await cmp2] and cmp2.table.value"))
    assert [r[1] for r in rows] == ["done", "done"] and [r[7] for r in rows] == ["1", "2"]


# ----------------------------------------------------------------------------- the retry countdown


def test_the_view_counts_down_then_succeeds_and_says_how_many_tries(kernel: Kernel):
    since = time.monotonic()
    kernel.execute("r = sw.show('Explain SSE (kernel countdown)', model='demo-ratelimit', base_url=BASE)")
    header = kernel.value("r.view.header.widget.model_id")
    deadline = time.monotonic() + 5
    seen = ""
    while time.monotonic() < deadline and "retrying in" not in seen:
        seen = kernel.value("r.view.header.widget.value")
        time.sleep(0.1)
    # Its first number at once: Retry-After 2 and a little jitter is "3 s" (it showed "2 s" a
    # second late, on the next tick of the clock).
    assert "rate limited by the provider — retrying in 3 s (try 2 of 4)" in seen
    final = kernel.value("[(await r).status, r.state.retry.tries, r.view.header.widget.value]")
    assert final[0] == "complete" and final[1] == 2 and "after 2 tries" in final[2]
    sent = sent_values(kernel, header, since)  # what the browser was sent, frame by frame
    assert "retrying in 3 s" in next(v for v in sent if "retrying in" in v)  # the first number sent
    assert any("retrying in 2 s" in v for v in sent) and any("retrying in 1 s" in v for v in sent)
    assert "after 2 tries" in sent[-1]


def test_cancel_during_the_countdown_ends_it_at_once(kernel: Kernel):
    kernel.execute("c = sw.show('Explain SSE (kernel cancel)', model='demo-ratelimit', base_url=BASE)")
    button = kernel.value("c.view.cancel_button.model_id")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and "retrying in" not in kernel.value("c.view.header.widget.value"):
        time.sleep(0.05)
    until = kernel.value("c.state.retry.until")  # when the next try would begin (the kernel's clock)
    kernel.click(button)
    state = kernel.value("[(await c).status, c.state.text_length, c.view.header.widget.value, c.state.ended_at]")
    assert state[0] == "cancelled" and state[1] == 0
    assert state[3] < until, "cancelled at the end of the 2 s wait, not during it"
    assert "retrying" not in state[2] and "cancelled" in state[2]


# ----------------------------------------------------------------------------- the class log


#: What the echoing provider (model "echo") streams: the key it was sent, in the middle of its answer.
ECHOED = (
    *(chat(piece, model="echo") for piece in ("You sent the key ", ECHO, " — keep it secret.")),
    chat(finish="stop", model="echo"),
    DONE,
)


@pytest.fixture(scope="module")
def echo_server() -> Iterator[str]:
    """A provider that streams the key it was sent back in its answer (some proxies do, in errors)."""
    with HostileServer({"/echo/v1/chat/completions": Reply(ECHOED, echo="authorization")}) as server:
        yield server.url("echo")


def test_the_log_holds_every_answer_of_a_session_and_no_key(kernel: Kernel, tmp_path: Path, echo_server: str):
    log = tmp_path / "class.jsonl"
    mine = tmp_path / "mine.jsonl"
    kernel.execute(f"sw.log_to({str(log)!r})\nECHO = {echo_server!r}\nimport os")
    kernel.execute(
        """
        a = sw.show('Explain recursion', model='demo', base_url=BASE, system='Be brief.', demo={'tokens_per_second': 0})
        b = sw.show('Explain recursion', model='demo-error', base_url=BASE)
        k = sw.show('Echo my key', base_url=ECHO, model='echo', api_key=os.environ['SW_TEST_KEY'])
        """
    )
    kernel.value("[(await h).status for h in (a, b, k)]")
    kernel.execute(f"%%stream --base-url {{BASE}} --model demo-fast --log {mine}\nWhat is SSE?")
    kernel.value("(await _).status")
    kernel.execute("cmp = sw.compare('What is Big-O?', ['demo-fast', 'demo-deep'], base_url=BASE)")
    kernel.value("[s.status for s in await cmp]")
    kernel.execute("panel = sw.ChatPanel(base_url=BASE, model='demo-fast')\nchat = panel.send('What is Jupyter?')")
    kernel.value("(await chat).status")
    time.sleep(0.2)

    raw = log.read_text(encoding="utf-8")
    assert SENTINEL not in raw and "***" in raw  # the echoed key is gone, in every line
    entries = [json.loads(line) for line in raw.splitlines()]
    questions = sorted(e["question"] for e in entries)  # in the order they ended
    assert questions == sorted(
        [
            "Explain recursion",
            "Explain recursion",
            "Echo my key",
            "What is SSE?",
            "What is Big-O?",
            "What is Big-O?",
            "What is Jupyter?",
        ]
    )
    by_model = {(e["question"], e["model"]): e for e in entries}
    first = by_model["Explain recursion", "demo"]
    assert first["system"] == "Be brief." and first["model"] == "demo" and first["api"] == "chat"
    assert first["status"] == "complete" and first["finish"] == "stop"
    assert first["text"] == scripted_answer("demo", "Explain recursion").text
    assert first["usage"]["completion_tokens"] > 0 and first["usage"]["estimated"] is False
    assert first["time_to_first_token"] is not None and first["seconds"] >= first["time_to_first_token"]
    failed = by_model["Explain recursion", "demo-error"]
    assert failed["status"] == "error" and "stopped unexpectedly" in failed["message"] and failed["text"]
    assert by_model["Echo my key", "echo"]["text"] == "You sent the key *** — keep it secret."
    assert ("What is Big-O?", "demo-deep") in by_model and ("What is Big-O?", "demo-fast") in by_model
    # --log adds the one answer to its own file too.
    [own] = [json.loads(line) for line in mine.read_text().splitlines()]
    assert own["question"] == "What is SSE?" and own["model"] == "demo-fast"
    # The chat panel exports its conversation.
    exported = kernel.value("panel.to_markdown()")
    assert exported.startswith("# Conversation") and "> What is Jupyter?" in exported
    assert scripted_answer("demo-fast", "What is Jupyter?").text.strip() in exported
