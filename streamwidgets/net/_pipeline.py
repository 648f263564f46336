"""The one feed loop: every source into every sink.

`Stream` is one answer from one source, part by part; every sink runs one — the view's handle,
`arun()` / `run()`, `astream()`, the terminal — so deadline, retries, limits, recording, the end
rules and Continue are the same whatever the source and whatever the sink. `pump()` runs one part:
it opens the source's items, pushes each into the `Feed`, yields the events the feed folded (the
tap `astream()` hands on), and settles how the part ended — the terminator (the answer is complete
at once: reading stops and the source is let go, even if the server keeps the body open), the end
of the items, a broken stream (`StreamBroke`), a surprise (an exception), the deadline, or a
cancel, which closes the state as cancelled and propagates.

What a run carries besides its source — where to record it, the class log, how many parts it may
have, how its tool loop runs, how long its network reads may pause — is one value, `RunOptions`,
made once by the sink (`apps/`) and read here where it is used. A source sees none of it but its
read pause: it gets a `SourceContext` (`_sources.py`), through which it reports what is no item.

The loop never holds the event loop for long, whatever a body holds: a few kB of gzip can inflate
to a gigabyte, and the inflater hands its pieces on without waiting for the network, so nothing
else would run — not the view, not the Cancel button's click, not the deadline — until the last
piece was parsed. So the feed goes in slices (`core._feed.slices`), and hands control back to
the loop (a checkpoint) whenever `HAND_BACK` seconds passed since it last did: the deadline is
checked after every slice, and a cancel lands at the next checkpoint.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Optional, Union

import anyio
import anyio.lowlevel

from ..core import Event, Feed, Item, Problem, StreamBroke, StreamState, slices
from ._reads import PAUSE, Pause
from ._recording import RecordTarget
from ._sources import TOOL_STEP_BREAK, Live, Replay, Source, SourceContext
from ._tool_runner import ToolLoop, run_calls

__all__ = ["RunOptions", "Stream", "pump", "on_every_part"]

logger = logging.getLogger("streamwidgets")

PathLike = Union[str, "os.PathLike[str]"]
Notify = Callable[[], None]

#: The longest the feed keeps the event loop before handing it back, in seconds.
HAND_BACK = 0.02

#: Called with every stream of the process when one of its parts ends (the class log, `log_to`).
_EVERY_PART: list[Callable[[Stream], None]] = []


@dataclass(frozen=True)
class RunOptions:
    """What one run of a stream carries besides its source, made once by its sink.

    `record` writes every part into one recording (`net._recording`); `log` is the class log the
    sink appends every part to (`apps._classlog`: the sink attaches it); `parts` bounds the parts
    asked for without a click; `tool_loop` says how the calls of a tool step run (`ToolLoop`: the
    steps, the timeout, a view's Run / Skip); `pause` is the longest a network read waits while
    the answer flows (`net._reads.Pacer`): `PAUSE`; a function, asked once before each paced
    read (a view's: until just before its next frame, `widgets._handle.frame_pause`); or
    `UNWATCHED_PAUSE` for a sink that only wants the end — fewer wake-ups, the same bytes (a
    pause never lets the socket's buffer fill), and a cancel or the deadline still ends one at
    once. The limits are the source's (`Source.bounded`): they travel with it from part to part.
    """

    record: Optional[PathLike] = None
    log: Optional[PathLike] = None
    parts: int = 1
    tool_loop: ToolLoop = field(default_factory=ToolLoop)
    pause: Pause = PAUSE

    def __post_init__(self) -> None:
        if not isinstance(self.parts, int) or self.parts < 1:
            raise ValueError("parts is how many parts an answer may have in all: 1 or more")


def on_every_part(callback: Callable[[Stream], None]) -> None:
    """Call `callback(stream)` whenever any stream's part ends, after its own callbacks."""
    if callback not in _EVERY_PART:
        _EVERY_PART.append(callback)


class Stream:
    """One answer from one source, part by part. `state` is the current part's state.

    `parts` bounds the parts asked for without a click: a part that ends cut off (the token
    limit, a cut connection, a stall, a cancel) is continued at once while parts are left. A
    recording of a continued answer plays all its parts. `allow(1)` lets one more part be asked
    for (the view's Continue button), and the next `run()` goes on from there.

    When the request offers tools (`tools=`) and a part ends asking for them, the stream runs the
    calls (the run's `ToolLoop`: the timeout, `confirm`) and the next part is the request with
    the calls and their results — until the model answers or `max_steps` requests were made, when
    the stream stops and says so. Each step is a part: the view shows them in one timeline, the
    usage adds up over them, and the class log and `record=` take every one.

    `run` is what the run carries besides its source (`RunOptions`: the recording, the parts,
    the tool loop, the read pause); `notify` is called after each change of the state, and
    `badge_shown` says a view shows where the answer comes from.
    """

    def __init__(
        self,
        source: Source,
        run: Optional[RunOptions] = None,
        *,
        notify: Optional[Notify] = None,
        badge_shown: bool = False,
    ) -> None:
        self.run_options = run = run if run is not None else RunOptions()
        self.source = source
        self.state = StreamState()
        self.notify = notify
        # Checked now, before anything is sent: a path whose file would be lost is refused.
        replaying = source.recording.path if isinstance(source, Replay) and source.recording is not None else None
        self._target = RecordTarget(run.record, replaying=replaying) if run.record is not None else None
        self._more = run.parts - 1
        self._badge_shown = badge_shown
        self._started = False
        #: Requests made to the model so far (a tool step is one more).
        self.steps = 0
        #: Called with each new part's state before it streams (a view attaches it).
        self.on_part: list[Callable[[StreamState], None]] = []
        #: Called with the stream when each of its parts ends.
        self.on_end: list[Callable[[Stream], None]] = []

    @property
    def next_source(self) -> Optional[Source]:
        """The source of the next part, when the answer ended short and can go on."""
        return self.source.then(self.state) if self._started and self.state.done else None

    def allow(self, parts: int = 1) -> None:
        """Let `parts` more parts be asked for (Continue)."""
        self._more += parts

    async def run(self) -> StreamState:
        """Stream every part this stream may run now; return the last part's state."""
        async for _ in self.events():
            pass
        return self.state

    async def events(self) -> AsyncIterator[Event]:
        """The normalized events of every part this stream may run now, as they arrive. The
        deadline (`deadline=`) counts from here for all of them: tool steps and the parts that
        follow by themselves share it (a Continue clicked later starts it anew)."""
        deadline = self.source.limits.deadline
        until = None if deadline is None else anyio.current_time() + deadline
        while True:
            if self._started:
                if self._asks_for_tools():
                    if self.steps >= self.run_options.tool_loop.max_steps:
                        n = self.run_options.tool_loop.max_steps
                        self.state.note(
                            f"Stopped after {n} requests (max_steps={n}): the model still asked for tools, "
                            "which were not run."
                        )
                        return
                    await self._tool_step()
                else:
                    following = self.source.then(self.state)
                    if following is None or not (following.follows or self._more > 0):
                        return
                    if not following.follows:
                        self._more -= 1
                    self._next_part(following, following.carried(self.state))
            self._started = True
            self.steps += 1
            part = self.state.part_number
            batches = pump(
                self.source,
                self.state,
                self.run_options,
                target=self._target,
                notify=self.notify,
                part=part,
                badge_shown=self._badge_shown,
                until=until,
            )
            try:
                # Closed here when the sink stops reading (`astream` left early), in this task:
                # not later, by the garbage collector's finalizer, in another one.
                async with aclosing(batches):
                    async for batch in batches:
                        for event in batch:
                            yield event
            finally:
                if self.state.done:
                    self._ended()

    def _next_part(self, source: Source, carried: Optional[str]) -> None:
        self.state = self.state.next_part(carried, joins=source.joins())
        self.source = source
        for attach in self.on_part:
            attach(self.state)

    def _asks_for_tools(self) -> bool:
        source = self.source
        return isinstance(source, Live) and bool(source.request.tools) and self.state.finish == "tool_calls"

    async def _tool_step(self) -> None:
        """Run the calls of the part that just ended, then make the next part the request that
        carries their results. The next part's state exists while the tools run, so that a
        cancel then ends it as cancelled (the calls say they were stopped)."""
        source = self.source
        assert isinstance(source, Live)
        asked = self.state
        text = asked.text
        self._next_part(source, text + TOOL_STEP_BREAK if text and not text.endswith("\n") else text)
        waiting = self.state

        def changed() -> None:
            waiting.version += 1  # the view redraws the cards of the calls above
            if self.notify is not None:
                self.notify()

        try:
            results = await run_calls(
                asked.tool_calls,
                source.request.tools,
                self.run_options.tool_loop,
                changed=changed,
                redact=source.redact,
            )
        except anyio.get_cancelled_exc_class():
            waiting.close(cancelled=True, now=time.monotonic())
            self._ended()
            raise
        self.source = Live(source.request.with_tool_results(asked.part_text, results))

    def _ended(self) -> None:
        for callback in [*self.on_end, *_EVERY_PART]:
            try:
                callback(self)
            except Exception:  # a log that cannot be written must not end the answer
                logger.exception("a streamwidgets callback failed at the end of a part")


async def pump(
    source: Source,
    state: StreamState,
    run: Optional[RunOptions] = None,
    *,
    target: Optional[RecordTarget] = None,
    notify: Optional[Notify] = None,
    part: int = 1,
    badge_shown: bool = False,
    until: Optional[float] = None,
) -> AsyncGenerator[Sequence[Event], None]:
    """Stream one part of an answer from `source` into `state`, yielding each batch of events.

    `run` is what the run carries (`RunOptions`): its `record` path gets the part (part 1 starts
    the file, later parts are appended; the path is checked here, unless the stream checked it
    when it was made and hands its `target`: `net._recording`), and its `pause` bounds how often
    a network read wakes while the part flows (the view's frame pace, or longer when nobody
    watches); `badge_shown` says a view shows where the answer comes from, so an offline
    stand-in needs no warning in the state; `until` is when the answer's deadline passes (on the
    loop's clock; default: `deadline=` from now). Provider and network failures never raise:
    they are in the state.
    """
    run = run if run is not None else RunOptions()
    source = source.resolved()  # the embedded provider starts here, when a stream starts
    source.stamp(state)
    redactor = source.redactor()
    feed = Feed(
        state, source.normalizer(), notify=notify, limits=source.limits, redact=redactor.text if redactor else None
    )
    feed.begin()
    if source.stand_in and not badge_shown:
        yield feed.push([Problem(source.stand_in)])
    if target is None and run.record is not None:
        target = RecordTarget(run.record, adopt=part > 1)
    recorder = (
        target.recorder(
            source.recording_meta(), part=part, carried=state.text_length, joins=state.joins, redactor=redactor
        )
        if target is not None
        else None
    )
    context = SourceContext(feed, recorder, run.pause)
    items = source.items(context)
    limits = source.limits
    end = until if until is not None else None if limits.deadline is None else anyio.current_time() + limits.deadline
    if end is not None:
        items = _within(items, end, limits.deadline_passed())
    closing: Sequence[Event] = ()
    handed_back = time.perf_counter()
    try:
        async for item in items:
            if recorder is not None and isinstance(item, bytes):
                recorder.chunk(item)
            for piece in _pieces(context, item):
                events = feed.push(piece)
                if events:
                    yield events
                if state.terminated or state.done:
                    break  # complete (or ended at a limit): nothing after it is part of the answer
                if end is not None and anyio.current_time() >= end:
                    raise StreamBroke(limits.deadline_passed())  # a body that never waits: see above
                if time.perf_counter() - handed_back >= HAND_BACK:
                    await anyio.lowlevel.checkpoint()  # the view, a Cancel click, the deadline
                    handed_back = time.perf_counter()
            if state.terminated or state.done:
                break
        else:  # the items ran out: what the source said last, and the terminator its own end stands for
            for said in context.said():
                events = feed.push(said)
                if events:
                    yield events
            implied = feed.implied_end() if context.reached_end else None
            if implied is not None:
                if recorder is not None:
                    recorder.chunk(implied)  # a replay of the recording ends as the stream did
                events = feed.push(implied)
                if events:
                    yield events
        # The state is closed now, so the view says so, before the source is let go.
        closing = feed.end(source.ended)
    except anyio.get_cancelled_exc_class():
        feed.cancel()
        raise
    except GeneratorExit:  # the sink stopped reading (`astream` left early): as a cancel
        feed.cancel()
        raise
    except StreamBroke as why:
        closing = feed.end(str(why))
    except Exception as exc:  # a bug or a surprise must still end up in the state, with the answer kept
        closing = feed.fail(source.describe(exc), source.ended)
    finally:
        await _let_go(items, feed, source)
        if recorder is not None:
            recorder.close(state)
    if closing:
        yield closing


def _pieces(context: SourceContext, item: Item) -> Iterable[Item]:
    """What the feed takes for one item: the events the source said beside its items since the
    last one (`SourceContext.say`), then the item in slices."""
    yield from context.said()
    yield from slices(item)


async def _let_go(items: AsyncIterator[Item], feed: Feed, source: Source) -> None:
    """Close the source's items, and with them the response and its connection, now — not when
    the server ends the body, nor when the generator is collected. After the terminator a
    failure here is only worth a warning."""
    aclose = getattr(items, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:
        feed.state.note(f"after the stream ended: {source.describe(exc).message}")


async def _within(source: AsyncIterator[Item], end: float, why: str) -> AsyncIterator[Item]:
    """`source`, until `end` (on the loop's clock): then the read under way is cancelled (which
    closes the source, and with it the connection) and the stream breaks with `why`. A read that
    does not wait (an inflater handing on a bomb's pieces) never meets the cancel scope: `pump`
    reads the clock after every slice for that."""
    try:
        while True:
            with anyio.move_on_after(max(0.0, end - anyio.current_time())) as scope:
                try:
                    item = await source.__anext__()
                except StopAsyncIteration:
                    return
            if scope.cancelled_caught:
                raise StreamBroke(why)
            yield item
    finally:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
