"""`show()` in a real ipykernel, driven over ZMQ like a frontend, against the embedded provider.

The kernel is started with `jupyter_client`; buttons are clicked the way the ipywidgets 8
frontend does it (a `custom` comm message); the provider on 127.0.0.1 records when the client
disconnected, which proves that Cancel closed the connection — and how fast.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kernels import SENTINEL, WIDGET_MIMETYPE, Kernel, kernel_env, kernel_manager

from streamwidgets.server import DemoServer

pytestmark = pytest.mark.kernel


def widget_messages(kernel: Kernel, since: float) -> list[dict[str, Any]]:
    return [m for t, m in kernel.log if t >= since and m["msg_type"] in ("comm_open", "comm_msg")]


# ----------------------------------------------------------------------------- the cell never blocks


def test_show_returns_at_once_and_other_cells_run_while_it_streams(kernel: Kernel):
    _, outputs, _ = kernel.execute(
        "h = sw.show('Explain Python collections', model='demo-markdown', base_url=BASE,"
        " demo={'tokens_per_second': 150, 'tokens': 450})\n"
        "returned_first = not h.done"
    )
    assert kernel.value("returned_first") is True  # show() returned before its stream ended
    displays = [m for m in outputs if m["msg_type"] == "display_data"]
    assert len(displays) == 1 and WIDGET_MIMETYPE in displays[0]["content"]["data"]
    assert "display_id" in displays[0]["content"]["transient"]
    assert not [m for m in outputs if m["msg_type"] == "execute_result"]  # the handle does not repeat the view

    deadline = time.monotonic() + 10  # the first tokens (a 450-token answer at 150/s takes 3 s)
    while kernel.value("h.state.text_length") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    live = kernel.value("[h.state.status, h.state.text_length, h.done]")
    assert live[0] == "streaming" and live[1] > 0 and live[2] is False  # another cell ran mid-stream
    final = kernel.value("[(await h).status, h.state.text_length, 'done' in h.view.header.widget.value]")
    assert final[0] == "complete" and final[1] > live[1] and final[2]


def test_the_saved_output_carries_the_answer_and_never_the_key(kernel: Kernel):
    since = time.monotonic()
    kernel.execute(
        """
        import os
        ok = sw.show('Explain recursion', model='demo', base_url=BASE, api_key=os.environ['SW_TEST_KEY'],
                     demo={'tokens_per_second': 0})
        bad = sw.show('Explain recursion', model='demo-http-401', base_url=BASE, api_key=os.environ['SW_TEST_KEY'])
        """
    )
    states = kernel.value("[(await ok).status, (await bad).status, ok.state.text, repr(ok), repr(ok.request)]")
    assert states[:2] == ["complete", "error"]
    time.sleep(0.3)
    while kernel.pump(0.1):
        pass
    wire = [m for t, m in kernel.log if t >= since]
    assert wire and not [m for m in wire if SENTINEL in json.dumps(m, default=str)]
    assert SENTINEL not in json.dumps(states)
    updates = [m["content"] for m in wire if m["msg_type"] == "update_display_data"]
    assert len(updates) == 2
    [answer] = [u["data"] for u in updates if u["data"]["text/markdown"].startswith(states[2])]
    assert WIDGET_MIMETYPE in answer and "<p>" in answer["text/html"]
    assert answer["text/markdown"][len(states[2]) :].startswith("\n\n*demo · done · ")


def test_views_placed_by_hand_with_display_false(kernel: Kernel):
    _, outputs, _ = kernel.execute(
        """
        import ipywidgets
        from IPython.display import display
        pair = [sw.show('Explain recursion', model=m, base_url=BASE, display=False,
                        demo={'tokens_per_second': 300}) for m in ('demo', 'demo-reasoning')]
        display(ipywidgets.HBox([h.view.widget for h in pair]))
        returned_first = not any(h.done for h in pair)
        """
    )
    assert kernel.value("returned_first") is True
    shown = [m for m in outputs if m["msg_type"] in ("display_data", "update_display_data")]
    assert [m["msg_type"] for m in shown] == ["display_data"]  # only the HBox the user displayed
    final = kernel.value("[[(await h).status for h in pair], [bool(h.state.reasoning) for h in pair]]")
    assert final == [["complete", "complete"], [False, True]]
    time.sleep(0.3)
    while kernel.pump(0.1):
        pass
    assert not [
        m
        for t, m in kernel.log
        if m["msg_type"] == "update_display_data"
        and m["parent_header"].get("msg_id") == outputs[0]["parent_header"].get("msg_id")
    ]


# ----------------------------------------------------------------------------- cancel


def test_a_click_on_cancel_closes_the_connection_and_keeps_the_partial_answer(kernel: Kernel, demo_server: DemoServer):
    last = max((c.id for c in demo_server.connections), default=0)
    kernel.execute(
        "c = sw.show('Write a long tutorial', model='demo-long', base_url=BASE, demo={'tokens_per_second': 100})"
    )
    button = kernel.value("c.view.cancel_button.model_id")
    deadline = time.monotonic() + 10
    while kernel.value("c.state.text_length") == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    clicked = kernel.click(button)
    # A demo-long answer at 100 tokens/s runs for minutes: the server saw the client leave, after
    # the click. How fast is benchmarks/bench_kernel.py's to measure (`--parts cancel`).
    record = demo_server.wait_for_disconnect(timeout=10.0, after=last)
    assert record is not None and record.outcome == "client_disconnected"
    assert record.closed_at_mono >= clicked
    state = kernel.value(
        "[(await c).status, c.state.text_length, c.view.answer.text == c.state.text,"
        " c.view.cancel_button.disabled, 'Cancelled by you' in c.view.problems.widget.value,"
        " 'sw-hidden' in c.view.continue_button._dom_classes, c.view.continue_button.description]"
    )
    assert state[0] == "cancelled" and state[1] > 0 and all(state[2:5])
    assert state[5] is False and state[6] == "Continue"


def test_cancel_all_stops_every_running_stream(kernel: Kernel):
    kernel.execute(
        """
        many = [sw.show(f'Question {i}', model='demo-long', base_url=BASE,
                        demo={'tokens_per_second': 50, 'first_token_delay': 0})
                for i in range(3)]
        import asyncio
        while not all(h.state.text for h in many):
            await asyncio.sleep(0.05)
        stopped = sw.cancel_all()
        """
    )
    result = kernel.value("[stopped] + [(await h).status for h in many] + [bool(h.state.text) for h in many]")
    assert result == [3, "cancelled", "cancelled", "cancelled", True, True, True]


def test_running_a_cell_again_cancels_the_answers_its_last_run_left_streaming(kernel: Kernel):
    """The cell id of the request's metadata (as JupyterLab sends it): running cell A again
    cancels the answers A's first run left streaming, not cell B's, and not the new ones."""
    slow = "model='demo-long', base_url=BASE, demo={'tokens_per_second': 40, 'first_token_delay': 0}"
    kernel.execute(f"first = [sw.show('A one', {slow}), sw.show('A two', {slow})]", cell_id="cell-a")
    kernel.execute(f"other = sw.show('B', {slow})", cell_id="cell-b")
    kernel.execute(
        f"""
        second = sw.show('A again', {slow})
        import asyncio
        while not second.state.text:
            await asyncio.sleep(0.05)
        """,
        cell_id="cell-a",
    )
    result = kernel.value(
        "[[(await h).status for h in first], [w for w in first[0].state.warnings if 'ran again' in w],"
        " other.done, second.done, sw.cancel_all()]"
    )
    statuses, said, other_done, second_done, stopped = result
    assert statuses == ["cancelled", "cancelled"]
    assert said == ["Cancelled: its cell ran again."]
    assert other_done is False and second_done is False  # another cell's answer and the new one go on
    assert stopped == 2
    kernel.execute("for h in (other, second):\n    await h")  # their last frames go out in this cell


# ----------------------------------------------------------------------------- faults


FAULTS = {
    "demo-error": ("error", True),
    "demo-error-early": ("error", False),
    "demo-cutoff": ("incomplete", True),
    "demo-stall": ("incomplete", True),
    "demo-malformed": ("complete", True),
    "demo-length": ("complete", True),
    "demo-http-401": ("error", False),
    "demo-http-429": ("error", False),
    "demo-http-503": ("error", False),
}


def test_faults_end_with_the_right_status_a_readable_message_and_the_partial_answer(kernel: Kernel):
    kernel.execute(
        f"""
        faults = {{m: sw.show('Explain asyncio', model=m, base_url=BASE, stall_timeout=1.5,
                             demo={{'tokens_per_second': 400}}) for m in {list(FAULTS)!r}}}
        """
    )
    report = kernel.value(
        """{m: {"status": (await h).status, "text": h.state.text_length,
               "kept": h.view.answer.text == h.state.text,
               "box": h.view.problems.widget.value, "shown": "sw-hidden" not in h.view.problems.widget._dom_classes,
               "header": h.view.header.widget.value, "message": h.state.message}
           for m, h in faults.items()}""",
        timeout=60,
    )
    for model, (status, partial) in FAULTS.items():
        row = report[model]
        assert row["status"] == status, (model, row["message"])
        assert bool(row["text"]) is partial, model
        assert row["kept"], model
        assert f"sw-status-{status}" in row["header"], model
        if model != "demo-malformed" and model != "demo-length":
            assert row["shown"] and row["message"].split(":")[0] in row["box"], model
    assert "HTTP 429" in report["demo-http-429"]["box"] and "retry after" in report["demo-http-429"]["box"]
    assert "could not be read" in report["demo-malformed"]["box"]
    assert "stalled" in report["demo-stall"]["box"]
    assert "token limit" in report["demo-length"]["box"]


# ----------------------------------------------------------------------------- continue and chat


def test_continue_goes_on_in_the_same_view(kernel: Kernel):
    kernel.execute(
        "short = sw.show('Explain asyncio', model='demo', base_url=BASE, max_tokens=30, demo={'tokens_per_second': 0})"
    )
    first = kernel.value("[(await short).status, short.state.finish, short.text, short.view.continue_button.model_id]")
    assert first[:2] == ["complete", "length"]
    kernel.click(first[3])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        after = kernel.value("[len(short.state.parts), short.done]")
        if after == [2, True]:
            break
        time.sleep(0.1)
    second = kernel.value("[(await short).status, short.text, 'part 2' in short.view.header.widget.value]")
    assert second[1].startswith(first[2]) and len(second[1]) > len(first[2])
    assert second[2]


def test_the_chat_panel_sends_on_enter_and_keeps_the_history(kernel: Kernel):
    kernel.execute(
        """
        panel = sw.ChatPanel(model='demo', base_url=BASE, demo={'tokens_per_second': 0})
        panel
        """
    )
    text_box = kernel.value("panel.input.model_id")
    kernel.set_value(text_box, value="How does binary search work?")  # Enter in the text box
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and kernel.value("len(panel.handles) == 1 and panel.handles[0].done") is not True:
        time.sleep(0.1)
    history = kernel.value("[m['role'] for m in panel.messages] + [panel.input.value, panel.send_button.disabled]")
    assert history == ["user", "assistant", "", False]
    kernel.execute("second = panel.send('And in Python?')")
    roles = kernel.value(
        "[(await second).status] + [m['role'] for m in panel.messages] + [len(second.request.messages)]"
    )
    assert roles == ["complete", "user", "assistant", "user", "assistant", 3]


# ----------------------------------------------------------------------------- replay


def test_a_recording_replays_in_the_same_view_at_its_pace(kernel: Kernel, tmp_path: Path):
    recording = tmp_path / "answer.jsonl"
    kernel.execute(
        f"""
        rec = sw.show('Explain binary search', model='demo-reasoning', base_url=BASE,
                      record={str(recording)!r}, demo={{'tokens_per_second': 300}})
        original = await rec
        import time
        t0 = time.monotonic()
        again = sw.show(sw.replay({str(recording)!r}, speed=2))
        """
    )
    took = kernel.value(
        "[(await again).status, again.state.text == original.text, again.state.reasoning == original.reasoning,"
        " time.monotonic() - t0, (original.ended_at - original.started_at) / 2,"
        " 'sw-status-complete' in again.view.header.widget.value, again.view.answer.text == original.text,"
        " again.view.reasoning is not None, again.request is None]"
    )
    assert took[:3] == ["complete", True, True]
    assert took[3] >= took[4] * 0.8  # at the recorded pace (halved), not all at once
    assert all(took[5:])
    kernel.execute(
        f"""
        stopped = sw.show(sw.replay({str(recording)!r}, speed=0.5))
        import asyncio
        while not stopped.state.text:
            await asyncio.sleep(0.05)
        """
    )
    assert kernel.value("[stopped.cancel(), (await stopped).status, bool(stopped.state.text)]") == [
        True,
        "cancelled",
        True,
    ]


# ----------------------------------------------------------------------------- outside a kernel


def test_outside_a_kernel_show_prints_plain_text_and_returns_a_finished_handle(demo_server: DemoServer):
    import asyncio
    import io

    import streamwidgets as sw

    out = io.StringIO()
    handle = sw.show(
        "Explain the water cycle", model="demo", base_url=demo_server.base_url, out=out, demo={"tokens_per_second": 0}
    )
    assert isinstance(handle, sw.StreamHandle) and handle.done and handle.view is None
    state = handle.state
    assert state.status == "complete" and asyncio.run(_awaited(handle)) is state
    printed = out.getvalue()
    assert printed.startswith(state.text[:50])
    last = printed.splitlines()[-1]
    assert " tokens" in last and last.endswith("]")


async def _awaited(handle):
    return await handle


# ----------------------------------------------------------------------------- a saved notebook


def test_a_saved_notebook_shows_the_answer_in_nbconvert_html_and_never_the_key(
    tmp_path: Path, demo_server: DemoServer, monkeypatch: pytest.MonkeyPatch
):
    """Run a notebook for real, save it without widget state — as GitHub and nbconvert see most
    notebooks — and convert it to HTML.

    nbclient applies an `update_display_data` only while the cell that displayed it runs (it
    drops later messages of a finished cell; JupyterLab applies them, which was checked in a real
    browser), so this notebook awaits the stream in the same cell.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    for name, value in kernel_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import os\nimport streamwidgets as sw\n"
            f"h = sw.show('Explain Big-O notation', model='demo-markdown', base_url={demo_server.base_url!r},\n"
            "            api_key=os.environ['SW_TEST_KEY'], demo={'tokens_per_second': 0})\n"
            "state = await h\nprint(state.status)"
        ),
    ]
    NotebookClient(nb, km=kernel_manager(tmp_path), timeout=120).execute()
    saved = nbformat.writes(nb)
    assert SENTINEL not in saved
    output, printed = nb.cells[0].outputs
    assert output["output_type"] == "display_data"
    assert {"text/plain", "text/markdown", "text/html"} <= set(output["data"])
    assert WIDGET_MIMETYPE not in output["data"]  # a runner saves the answer alone (`keeps_widget`)
    assert printed["text"] == "complete\n"
    markdown = output["data"]["text/markdown"]
    with_state = nbformat.reads(saved, as_version=4)
    assert "widgets" in with_state.metadata  # nbclient saves widget state, as Lab can
    html, _ = HTMLExporter().from_notebook_node(with_state)
    assert SENTINEL not in html
    without_state = nbformat.reads(saved, as_version=4)
    del without_state.metadata["widgets"]  # what GitHub and most saved notebooks have
    html, _ = HTMLExporter().from_notebook_node(without_state)
    heading = next(line for line in markdown.splitlines() if line.startswith("#")).lstrip("# ").strip()
    assert heading and heading in html  # the answer itself, not an empty widget placeholder
    assert "demo-markdown · done" in html


def test_with_a_running_loop_but_no_kernel_show_returns_a_handle_that_prints(demo_server: DemoServer):
    import asyncio
    import io

    import streamwidgets as sw

    out = io.StringIO()

    async def main() -> tuple[object, str]:
        handle = sw.show(
            "Explain Unicode", model="demo", base_url=demo_server.base_url, out=out, demo={"tokens_per_second": 0}
        )
        assert isinstance(handle, sw.StreamHandle) and handle.view is None
        state = await handle
        return state, out.getvalue()

    state, printed = asyncio.run(main())
    assert state.status == "complete" and printed.startswith(state.text[:50])


# ----------------------------------------------------------------------------- whose messages


def test_a_background_stream_speaks_as_the_cell_running_now(kernel: Kernel):
    """A notebook runner keeps only the messages of the cell it runs: the frames and the final
    answer of a stream shown in one cell and awaited in the next must be the next cell's."""
    _, first, _ = kernel.execute(
        "late = sw.show('Explain recursion', model='demo', base_url=BASE, demo={'tokens_per_second': 300})"
    )
    first_id = first[0]["parent_header"]["msg_id"]
    _, second, _ = kernel.execute("s = await late\nprint(s.status)")
    kinds = [m["msg_type"] for m in second]
    assert "comm_msg" in kinds and "update_display_data" in kinds
    [update] = [m for m in second if m["msg_type"] == "update_display_data"]
    assert "done" in update["content"]["data"]["text/plain"]
    time.sleep(0.3)
    while kernel.pump(0.1):
        pass
    late = [m for _, m in kernel.log if m["parent_header"].get("msg_id") == first_id and m["msg_type"] == "comm_msg"]
    sent_after = [m for m in late if m["header"]["date"] > second[0]["header"]["date"]]
    assert not sent_after  # nothing went out in the name of the finished cell
