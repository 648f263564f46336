"""The marimo view (`widgets/_marimo.py`): the frames it sends, read off a recording comm.

Each frame is one custom message with a sequence number (the rest packed in its buffer when that is
smaller); the `snapshot` trait holds everything at once. `Page` reads them as `_marimo.js` does (a frame applies only on top of the one before it; a
gap asks for the snapshot), so these tests check what a page ends up showing: the answer exactly
as `render_markdown` renders it, every sealed block sent once, a late page caught up from the
snapshot, and the final state in the widget's state. The browser runs the real module
(tests/browser/test_marimo_browser.py).

anywidget (the `[marimo]` extra) is imported here on purpose: without it these tests fail.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field
from typing import Any

import anywidget  # noqa: F401  (the [marimo] extra: missing, the module fails to load)
import comm
import pytest
from comm.base_comm import BaseComm
from widget_harness import Played, markup_problems
from xss_payloads import PAYLOADS

from streamwidgets.core import ToolCall
from streamwidgets.core._events import ReasoningDelta, Terminator, TextDelta
from streamwidgets.core._state import StreamState
from streamwidgets.markdown import render_markdown
from streamwidgets.widgets import MarimoView, StreamHandle, cancel_all, scheduler_for
from streamwidgets.widgets._marimo import _FORMS, ENVELOPE_BYTES, ESM, NOT_IN_MARIMO, unpacked
from streamwidgets.widgets._panes import PANES
from streamwidgets.widgets._running import running

LESSON = "".join(
    f"## Part {i}\n\nSome *text* about part {i}, with `code` and a [link](https://example.com/{i}).\n\n"
    f"```python\nprint({i})\n```\n\n"
    for i in range(40)
)


@dataclass
class Recorded:
    """What the widgets sent: (method, data, buffers) in order."""

    sent: list[tuple[str, dict[str, Any], list[bytes]]] = field(default_factory=list)
    #: Every snapshot the widget's state carried (a binary buffer of its open or update message).
    buffers: list[bytes] = field(default_factory=list)

    def frames(self) -> list[dict[str, Any]]:
        """Each frame as the page reads it: its sequence number, and what its buffer packs."""
        return [
            {**(unpacked(buffers[0]) if buffers else {}), **data["content"]}
            for method, data, buffers in self.sent
            if method == "custom"
        ]

    def wire(self) -> int:
        """The frames' size on marimo's websocket: their content, and their buffer in base64."""
        return sum(
            len(json.dumps(data["content"], separators=(",", ":"))) + sum(len(base64.b64encode(b)) for b in buffers)
            for method, data, buffers in self.sent
            if method == "custom"
        )

    def snapshots(self) -> list[dict[str, Any]]:
        return [unpacked(buffer) for buffer in self.buffers]


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    record = Recorded()

    class RecordingComm(BaseComm):
        def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **_: Any):
            if msg_type in ("comm_open", "comm_msg") and isinstance(data, dict):
                paths = data.get("buffer_paths", [])
                if ["snapshot"] in paths:
                    record.buffers.append(bytes(buffers[paths.index(["snapshot"])]))
                method = data.get("method", "open" if msg_type == "comm_open" else "")
                record.sent.append(
                    (method, json.loads(json.dumps(data, default=str)), [bytes(b) for b in buffers or []])
                )

    monkeypatch.setattr(comm, "create_comm", lambda *args, **kwargs: RecordingComm(*args, **kwargs))
    return record


class Page:
    """A page reading the widget as `_marimo.js` does."""

    def __init__(self) -> None:
        self.seq = -1
        self.panes: dict[str, str] = {}
        self.md: dict[str, list[str]] = {}
        self.said = ""
        self.asked = 0

    def snapshot(self, snapshot: dict[str, Any]) -> None:
        if snapshot.get("seq", -1) <= self.seq:  # one it already shows is not drawn again
            return
        self.panes, self.md = {}, {}
        self._apply(snapshot)
        self.seq = snapshot["seq"]

    def frame(self, frame: dict[str, Any]) -> bool:
        """Apply `frame`; False when it does not follow the last one (the page asks for the snapshot)."""
        if frame["seq"] <= self.seq:
            return True
        if frame["seq"] != self.seq + 1:
            self.asked += 1
            return False
        self._apply(frame)
        self.seq = frame["seq"]
        return True

    def _apply(self, frame: dict[str, Any]) -> None:
        self.panes.update(frame.get("panes", {}))
        for name, (start, segments) in frame.get("md", {}).items():
            self.md[name] = self.md.get(name, [])[:start] + list(segments)
        self.said = frame.get("said", self.said)

    def answer(self) -> str:
        return "".join(self.md.get("answer", []))


def stream(view: MarimoView, text: str, step: int = 37, reasoning: str = "") -> StreamState:
    """Feed `text` in `step`-character deltas, a frame after each, then end it."""
    state = view.state
    state.begin(0.0)
    now = 0.0
    for i in range(0, len(reasoning), step):
        now += 0.05
        state.apply(ReasoningDelta(reasoning[i : i + step]), now)
        view.draw(now)
    for i in range(0, len(text), step):
        now += 0.05
        state.apply(TextDelta(text[i : i + step]), now)
        view.draw(now)
        if i % (step * 20) == 0:
            view.draw_slow(now)
    state.apply(Terminator(), now + 0.05)
    state.close(now=now + 0.05)
    view.draw(now + 0.05)
    view.draw_slow(now + 0.05)
    return state


def test_frames_follow_each_other_and_build_the_answer_with_each_sealed_block_sent_once(recorded: Recorded):
    view = MarimoView(model="m", sparkline=False)
    page = Page()
    page.snapshot(unpacked(view.widget.snapshot))
    stream(view, LESSON, reasoning="Let me think about **parts**. " * 5)
    frames = recorded.frames()
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert all(page.frame(f) for f in frames)
    assert page.answer() == render_markdown(LESSON)
    assert "".join(page.md["reasoning"]) == render_markdown("Let me think about **parts**. " * 5)
    # A block sealed in one frame is never sent again: each heading crosses once, but for the
    # frames in which it was still the live tail.
    for i in (5, 20, 39):
        heading = f"<h2>Part {i}</h2>"
        carried = [f for f in frames if heading in json.dumps(f.get("md", {}))]
        assert 1 <= len(carried) <= 3, (i, len(carried))
    # What the view says it sent is what went out (a buffer in base64), with marimo's envelope per
    # message; a frame is packed only when that is smaller than its JSON.
    assert view.sent.messages >= len(frames) and view.sent.bytes >= recorded.wire() + ENVELOPE_BYTES * len(frames)
    assert recorded.wire() <= sum(len(json.dumps(f, separators=(",", ":"))) for f in frames)
    assert 0 < view.sent.fresh < view.sent.bytes  # the answer's share: what the scheduler does not pace
    assert "done" in page.panes["header"] and page.said.startswith("answer complete")


def test_frames_of_a_fast_answer_cross_packed_at_about_half_their_json(recorded: Recorded):
    view = MarimoView(model="m", sparkline=False)
    page = Page()
    page.snapshot(unpacked(view.widget.snapshot))
    stream(view, LESSON, step=700)  # a screenful a frame, as at 1,000 tokens/s
    frames = recorded.frames()
    assert all(page.frame(f) for f in frames) and page.answer() == render_markdown(LESSON)
    packed_frames = [buffers for method, _, buffers in recorded.sent if method == "custom" and buffers]
    assert len(packed_frames) >= len(frames) - 2  # all but the tiny last ones
    assert recorded.wire() < 0.6 * sum(len(json.dumps(f, separators=(",", ":"))) for f in frames)


def test_a_page_that_attaches_late_catches_up_from_the_snapshot(recorded: Recorded):
    view = MarimoView(model="m", sparkline=False)
    state = view.state
    state.begin(0.0)
    for i in range(30):
        state.apply(TextDelta(f"Paragraph {i} of the answer.\n\n"), 0.1 * (i + 1))
        view.draw(0.1 * (i + 1))
    page = Page()  # it missed everything so far, and saw only the widget's state when made
    page.snapshot(recorded.snapshots()[0])
    frames = recorded.frames()
    assert not page.frame(frames[-1]) and page.asked == 1  # a gap: it asks for the snapshot
    view._received(view.widget, {"event": "resync"})
    page.snapshot(recorded.snapshots()[-1])
    assert page.seq == frames[-1]["seq"] and page.answer() == "".join(view.snapshot()["md"]["answer"][1])
    before = len(recorded.frames())
    state.apply(TextDelta("The last words."), 4.0)
    view.draw(4.0)
    assert all(page.frame(f) for f in recorded.frames()[before:])  # and goes on from there
    assert page.answer().endswith("<p>The last words.</p>\n") or "The last words." in page.answer()


def test_the_final_frame_leaves_the_whole_answer_in_the_widgets_state(recorded: Recorded):
    view = MarimoView(model="m", sparkline=False)
    state = stream(view, LESSON[:3000])
    snapshot = unpacked(view.widget.snapshot)
    assert snapshot["seq"] == recorded.frames()[-1]["seq"]
    assert len(recorded.buffers) == 2  # the first look and the end: the whole answer crosses again once, packed
    assert len(recorded.buffers[-1]) < len(json.dumps(snapshot)) / 3
    assert "".join(snapshot["md"]["answer"][1]) == render_markdown(state.text)
    assert "sw-ended" in snapshot["panes"]["answer"] and "done" in snapshot["panes"]["header"]
    assert "sw-hidden" in snapshot["panes"]["controls"]  # nothing left to cancel
    page = Page()  # a saved notebook, or a page opened after the end: the state alone
    page.snapshot(snapshot)
    assert page.answer() == render_markdown(state.text) and page.said.startswith("answer complete")


def test_every_pane_of_the_table_has_its_marimo_form():
    assert {row.name for row in PANES} == set(_FORMS) | NOT_IN_MARIMO


def test_buttons_reach_the_handle_and_hostile_text_stays_text(recorded: Recorded):
    async def main() -> tuple[StreamHandle, MarimoView]:
        view = MarimoView(model="m", sparkline=False)
        events = [TextDelta(p + "\n\n") for p in PAYLOADS] * 3 + [TextDelta("x") for _ in range(400)]
        handle = StreamHandle(Played(events, delay=0.005), view=view, scheduler=scheduler_for())
        await asyncio.sleep(0.3)
        assert (
            handle in running()
            and '<button class="jupyter-button sw-cancel" data-sw-act="cancel"'
            in (view.snapshot()["panes"]["controls"])
        )
        view._received(view.widget, {"event": "cancel"})  # the page's Cancel
        state = await handle
        assert state.status == "cancelled" and handle not in running()
        return handle, view

    _, view = asyncio.run(main())
    snapshot = unpacked(view.widget.snapshot)
    for html in [*snapshot["panes"].values(), *snapshot["md"]["answer"][1]]:
        assert markup_problems(html) == [], html
    assert "cancelled" in snapshot["panes"]["header"]
    assert cancel_all() == 0


def test_run_and_skip_answer_the_tool_question():
    async def main() -> list[bool]:
        view = MarimoView(model="m", sparkline=False)

        answers = []
        for choice in ("run", "skip"):
            call = ToolCall("call_1", "weather", '{"city": "Oslo"}')
            asked = asyncio.ensure_future(view.confirm(call))
            await asyncio.sleep(0)
            view.draw(1.0, final=False)
            tools = view.snapshot()["panes"].get("tools", "")
            assert 'data-sw-act="run"' in tools and "weather" in tools, tools
            ask = int(tools.split('data-sw-ask="')[1].split('"')[0])
            view._received(view.widget, {"event": choice, "ask": ask})
            answers.append(await asyncio.wait_for(asked, 5))
        return answers

    assert asyncio.run(main()) == [True, False]


def test_the_front_end_is_one_small_module_that_never_parses_markdown():
    source = ESM.read_text(encoding="utf-8")
    assert len(source) < 8_000
    assert "export default" in source and "import " not in source  # nothing fetched from anywhere
    assert "markdown" not in source.lower().replace("never parses markdown", "")


def test_cancel_all_reaches_marimo_views(recorded: Recorded):
    async def main() -> list[StreamState]:
        handles = []
        for _ in range(2):
            view = MarimoView(model="m", sparkline=False)
            handles.append(
                StreamHandle(Played([TextDelta("x ")] * 2000, delay=0.005), view=view, scheduler=scheduler_for())
            )
        await asyncio.sleep(0.2)
        assert cancel_all() == 2
        return [await handle for handle in handles]

    assert [state.status for state in asyncio.run(main())] == ["cancelled", "cancelled"]


def test_scale_sizes_the_view_as_in_jupyter(recorded: Recorded):
    view = MarimoView(model="m", scale=1.5)
    assert view.widget.classes == ["sw-view", "sw-scale-150"]
    assert view.widget.css == ".sw-scale-150 { --sw-scale: 1.5; }"
    assert "var(--sw-scale, 1)" in view.widget._esm  # the shared sheet rides with the code
    with pytest.raises(ValueError, match="scale must be between"):
        MarimoView(model="m", scale=9)
