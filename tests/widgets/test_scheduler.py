"""The shared frame scheduler, measured on the messages widgets really send (a recording comm).

Many views streaming at once must stay under the kernel-wide message budget and still each be
drawn; a first token is drawn at once; the final state is always drawn. They run on virtual
time (`virtual_time.run_virtual`): a "three-second" stream takes milliseconds, and the frame
rates measured are exact, not at the mercy of a busy machine.
"""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from virtual_time import run_virtual
from widget_harness import Played, Wire

from streamwidgets.core._events import Heartbeat, Terminator, TextDelta
from streamwidgets.core._state import RetryNote, StreamState
from streamwidgets.net._reads import PAUSE, UNWATCHED_PAUSE
from streamwidgets.widgets import FrameScheduler, StreamHandle, StreamView, scheduler_for
from streamwidgets.widgets._handle import READ_AHEAD
from streamwidgets.widgets._scheduler import Pace
from streamwidgets.widgets._traffic import ENVELOPE_BYTES, Cost


class CountingView(StreamView):
    """A view that remembers when it was drawn, what each frame sent, and which were slow."""

    def __init__(self, *args, **kwargs) -> None:
        self.frames: list[tuple[float, int]] = []
        self.slow_frames: list[float] = []
        super().__init__(*args, **kwargs)

    def draw(self, now: float, *, final: bool = False) -> Cost:
        sent = super().draw(now, final=final)
        if sent.messages:
            self.frames.append((time.monotonic(), sent.messages))
        return sent

    def draw_slow(self, now: float, *, final: bool = False) -> Cost:
        self.slow_frames.append(now)
        return super().draw_slow(now, final=final)


def tokens(n: int, paragraph: int = 12) -> list:
    return [TextDelta(f"w{i}" + ("\n\n" if i % paragraph == paragraph - 1 else " ")) for i in range(n)] + [Terminator()]


def test_twenty_views_share_the_budget_and_each_is_drawn(monkeypatch):
    wire = Wire().install(monkeypatch)

    async def main() -> tuple[list[CountingView], list[StreamHandle], float]:
        scheduler = scheduler_for()
        views = [CountingView(model=f"m{i}", clock=time.monotonic) for i in range(20)]
        wire.messages.clear()  # making the views is not streaming (and takes no virtual time)
        started = time.monotonic()
        handles = [StreamHandle(Played(tokens(600), delay=0.003), view=view, scheduler=scheduler) for view in views]
        for handle in handles:
            await handle
        assert scheduler.idle
        return views, handles, started

    views, handles, started = run_virtual(monkeypatch, main())
    duration = time.monotonic() - started
    assert duration > 1.5  # long enough for the per-second budget to matter
    peak = wire.max_in_window(1.0, since=started)
    assert peak <= 210, f"{peak} messages in one second"
    total = len([m for m in wire.messages if m.at >= started])
    assert total / duration <= 200
    for view, handle in zip(views, handles, strict=True):
        assert handle.state.status == "complete"
        assert "w599" in view.answer.html  # the final frame always comes
        live = [t for t, _ in view.frames if t < view.frames[-1][0]]
        assert len(live) >= duration  # each view drawn about once a second or more, while streaming
    per_view = [len(v.frames) for v in views]
    assert max(per_view) <= 2.5 * min(per_view)  # round-robin: nobody starves


def test_a_view_alone_keeps_its_frame_rate_and_slow_parts_go_slower(monkeypatch):
    Wire().install(monkeypatch)

    async def main() -> tuple[CountingView, float]:
        view = CountingView(model="m", max_fps=20, slow_fps=2, clock=time.monotonic)
        header_values: list[str] = []
        view.header.widget.observe(lambda change: header_values.append(change["new"]), "value")
        started = time.monotonic()
        handle = StreamHandle(Played(tokens(1000), delay=0.001), view=view, scheduler=scheduler_for())
        await handle
        duration = time.monotonic() - started
        assert len(header_values) <= duration * 2 + 4  # phases + the slow rate
        return view, duration

    view, duration = run_virtual(monkeypatch, main())
    assert duration > 1.0
    assert len(view.frames) <= duration * 20 + 3
    assert len(view.frames) >= duration * 3  # and it does use its frames (a new paragraph every 12 ms)
    gaps = [b[0] - a[0] for a, b in zip(view.frames[1:], view.frames[2:-1], strict=False)]
    assert min(gaps) >= 0.045


def test_a_slow_stream_gets_many_frames_and_a_fast_one_pays_for_few(monkeypatch):
    """The overhead budget: a word at a time (20 tokens/s) is drawn near `max_fps`; a fast stream
    is drawn less often, each frame carrying more of the answer, within the budget."""
    wire = Wire().install(monkeypatch)

    async def main(rate: float, n: int) -> tuple[CountingView, float, int]:
        view = CountingView(model="m", max_fps=10, clock=time.monotonic)
        wire.messages.clear()
        started = time.monotonic()
        await StreamHandle(Played(tokens(n), delay=1 / rate), view=view, scheduler=scheduler_for())
        return view, time.monotonic() - started, sum(m.size for m in wire.messages)

    slow, slow_seconds, _ = run_virtual(monkeypatch, main(20, 60))
    fast, fast_seconds, fast_bytes = run_virtual(monkeypatch, main(2000, 6000))
    assert len(slow.frames) >= slow_seconds * 8  # near its 10 frames a second
    assert len(fast.frames) <= fast_seconds * 5
    overhead = fast_bytes - len(fast.answer.html)
    assert overhead <= fast_seconds * (fast.pace.overhead_bytes_per_second + 650 * 10 + 2500) + 20_000


def test_the_header_and_usage_wait_for_their_slow_rate_and_news_is_drawn_at_once(monkeypatch):
    """The scheduler alone decides when: the answer every frame, the header and usage at the slow
    rate — but a new phase (the first token, the end) and a retry's countdown at once."""
    Wire().install(monkeypatch)

    async def main() -> None:
        scheduler = scheduler_for()
        state = StreamState(model="m")
        state.begin(time.monotonic())
        view = CountingView(state, max_fps=20, slow_fps=2, clock=time.monotonic)
        scheduler.add(view)
        started = view.slow_frames[-1]
        state.apply(TextDelta("Hello"), time.monotonic())
        scheduler.notify(view)  # the first token: news, drawn at once, header and all
        assert "sw-status-answering" in view.header.widget.value and len(view.slow_frames) == 2
        header, usage = view.header.widget.value, view.usage.widget.value
        for _ in range(6):  # 0.3 s of tokens: frames for the answer, none slow
            await asyncio.sleep(0.05)
            state.apply(TextDelta(" more"), time.monotonic())
            scheduler.notify(view)
        assert "more more" in view.answer.html
        assert view.header.widget.value == header and view.usage.widget.value == usage
        await asyncio.sleep(0.25)
        state.apply(TextDelta(" and more"), time.monotonic())
        scheduler.notify(view)
        await asyncio.sleep(0.06)
        assert view.usage.widget.value != usage  # half a second on, the slow parts follow
        slow = [t - started for t in view.slow_frames]
        assert all(b - a >= 0.5 - 1e-9 for a, b in itertools.pairwise(slow[1:])), slow
        state.retrying(RetryNote(tries=1, reason="rate limited by the provider", until=time.monotonic() + 1.5))
        scheduler.notify(view)  # a countdown starts: its first number at once, not a second later
        assert "retrying in 2 s" in view.header.widget.value
        state.close(now=time.monotonic())
        await scheduler.finish(view)

    run_virtual(monkeypatch, main())


def test_the_first_token_is_drawn_at_once(monkeypatch):
    async def main() -> None:
        scheduler = scheduler_for()
        state = StreamState()
        view = StreamView(state, clock=time.monotonic)
        scheduler.add(view)
        state.apply(Heartbeat())
        scheduler.notify(view)  # a keep-alive right after the first frame waits its turn...
        state.apply(TextDelta("First"))
        scheduler.notify(view)
        assert "First" in view.answer.html  # ...but the first token does not
        state.apply(TextDelta(" second"))
        scheduler.notify(view)
        assert "second" not in view.answer.html  # within the frame interval: coalesced
        await asyncio.sleep(view.pace.frame_interval * 1.5)
        assert "second" in view.answer.html  # and drawn by the next frame
        state.close()
        await scheduler.finish(view)

    run_virtual(monkeypatch, main())


def test_the_final_state_is_always_drawn_even_without_budget(monkeypatch):
    async def main() -> None:
        scheduler = FrameScheduler(asyncio.get_running_loop(), max_messages_per_second=30, burst=5)
        views = [StreamView(clock=time.monotonic) for _ in range(10)]
        for view in views:
            scheduler.add(view)
            view.state.apply(TextDelta("partial"))
            scheduler.notify(view)
        for view in views:
            view.state.apply(TextDelta(" and the end"))
            view.state.apply(Terminator())
            view.state.close()
            scheduler.notify(view)
        await asyncio.gather(*(scheduler.finish(view) for view in views))
        for view in views:
            assert "the end" in view.answer.html and "done" in view.header.widget.value
        assert scheduler.idle

    run_virtual(monkeypatch, main())


def test_the_live_clock_ticks_without_events_and_stops_when_idle(monkeypatch):
    async def main() -> None:
        scheduler = scheduler_for()
        state = StreamState(model="m")
        state.begin(time.monotonic())
        view = StreamView(state, clock=time.monotonic)
        scheduler.add(view)
        assert "0 s" in view.header.widget.value
        await asyncio.sleep(2.1)
        assert "2 s" in view.header.widget.value  # no event came, but the clock moved
        state.close(now=time.monotonic())
        await scheduler.finish(view)
        assert scheduler.idle and scheduler._timer is None

    run_virtual(monkeypatch, main())


def test_one_scheduler_per_loop():
    async def get() -> FrameScheduler:
        return scheduler_for()

    async def twice() -> tuple[FrameScheduler, FrameScheduler]:
        return scheduler_for(), await get()

    first, second = asyncio.run(twice())
    assert first is second
    assert asyncio.run(get()) is not first
    with pytest.raises(ValueError):
        FrameScheduler(asyncio.new_event_loop(), max_messages_per_second=10, burst=10)


class _Still:
    """A drawable whose frames cost what the test says, on a clock the test moves."""

    def __init__(self, overhead: int = 0) -> None:
        self.pace = Pace(max_fps=20, overhead_bytes_per_second=5_000)
        self.dirty = False
        self.news = False
        self.live = True
        self.overhead = overhead

    def draw(self, now: float, *, final: bool = False) -> Cost:
        self.dirty = False
        return Cost(messages=1, bytes=self.overhead + ENVELOPE_BYTES)

    def draw_slow(self, now: float, *, final: bool = False) -> Cost:
        return Cost()


def test_a_views_reads_wait_for_the_frame_that_can_show_them():
    """`next_frame_in`: what a read brings now shows at the view's next frame; once that frame
    waits to show what was read before, at the one after it (one frame interval later)."""

    async def main() -> list[float]:
        now = [100.0]
        scheduler = FrameScheduler(asyncio.get_running_loop(), clock=lambda: now[0])
        view = _Still(overhead=2_500)  # its frames are 2,500 / 5,000 = 0.5 s apart, not 1/20 s
        seen = [scheduler.next_frame_in(view)]  # never drawn: a read now is drawn at once
        view.dirty = True
        scheduler.notify(view)  # drawn at once
        seen.append(scheduler.next_frame_in(view))
        now[0] += 0.1
        view.dirty = True
        scheduler.notify(view)  # waits for its turn, 0.4 s from now: the next read is for the frame after
        seen.append(scheduler.next_frame_in(view))
        scheduler.remove(view)
        return seen

    seen = asyncio.run(main())
    assert seen[0] == 0.0
    assert seen[1] == pytest.approx(0.5)
    assert seen[2] == pytest.approx(0.4 + 0.5)


def test_a_views_stream_pauses_until_just_before_its_next_frame_in_steps_of_at_most_the_unwatched_pause(monkeypatch):
    """`frame_pause`, the pause a view's stream's reads take (its handle's run carries it): reads
    in between would be wake-ups that nobody sees; but a pause is never longer than an unwatched
    one (the end of the stream and its errors are read as soon as that), nor shorter than `PAUSE`."""
    Wire().install(monkeypatch)

    async def main() -> tuple[list[float], float, list[float]]:
        now = [100.0]
        frame_at = [100.5]
        scheduler = FrameScheduler(asyncio.get_running_loop(), clock=lambda: now[0])
        scheduler.next_frame_in = lambda view: max(0.0, frame_at[0] - now[0])  # type: ignore[method-assign]
        handle = StreamHandle(Played(tokens(3), delay=10.0), view=StreamView(model="m"), scheduler=scheduler)
        pause = handle.stream.run_options.pause
        assert callable(pause)
        pauses = []
        while not pauses or pauses[-1] > PAUSE:
            pauses.append(pause())
            now[0] += pauses[-1]
        ended = now[0] - pauses[-1]  # where the last pause reaching for the frame ended
        near = []
        for ahead in (0.0, 0.03, READ_AHEAD + PAUSE, 0.2, 0.21):
            frame_at[0] = now[0] + ahead
            near.append(pause())
        handle.cancel()
        await asyncio.gather(handle._task, return_exceptions=True)
        unwatched = StreamHandle(Played(tokens(3), delay=10.0))
        alone = unwatched.stream.run_options.pause
        unwatched.cancel()
        await asyncio.gather(unwatched._task, return_exceptions=True)
        return pauses, ended, [*near, alone]

    pauses, ended, near = asyncio.run(main())
    # 0.495 s to the frame's read: three equal pauses (each <= 0.2 s), ending 5 ms before the frame.
    assert pauses[:3] == pytest.approx([0.165] * 3) and pauses[3] == PAUSE
    assert ended == pytest.approx(100.5 - READ_AHEAD)
    assert near == pytest.approx([PAUSE, PAUSE, PAUSE, 0.195, 0.205 / 2, PAUSE])
    assert all(pause <= UNWATCHED_PAUSE for pause in pauses + near)
