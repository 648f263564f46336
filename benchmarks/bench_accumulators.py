"""Accumulators in `StreamState`: one-byte tool-call fragments against one-byte answer text.

Tool-call arguments and refusal text used to grow by `str +=`, which copies the whole string on
every fragment: a million one-byte tool fragments took ~92 s against ~6 s for a million text
deltas. Every accumulator now keeps its pieces in a list and joins them when read, so both cost
the same order of work. This measures that, side by side in one run, alternating: CPU seconds
(`time.process_time`) to apply the events with a clock value, as the live client does, then read
the result once. Target: tool / text <= 1.5.

`--pipeline` also measures the whole way from wire bytes (`parse()`), per dialect. There a tool
fragment's chunk is bigger JSON than a text delta's, so part of the ratio is the wire's, not the
accumulator's.

    python benchmarks/bench_accumulators.py               # 1,000,000 deltas, median of 3 runs
    python benchmarks/bench_accumulators.py --pipeline    # and from the wire, per dialect
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

from streamwidgets import parse
from streamwidgets.core._events import Event, RefusalDelta, TextDelta, ToolCallDelta
from streamwidgets.core._state import StreamState

Run = Callable[[], str]


def state_contenders(n: int) -> dict[str, Run]:
    """The events made up front; each run applies them to a fresh state and reads the result."""
    first = ToolCallDelta(0, "call_1", "get_weather", "x")
    made: dict[str, tuple[list[Event], Callable[[StreamState], str]]] = {
        "text deltas": ([TextDelta("x") for _ in range(n)], lambda s: s.text),
        "tool-call deltas": (
            [first] + [ToolCallDelta(0, arguments="x") for _ in range(n - 1)],
            lambda s: s.tool_calls[0].arguments,
        ),
        "refusal deltas": ([RefusalDelta("x") for _ in range(n)], lambda s: s.refusal or ""),
    }

    def runner(events: list[Event], read: Callable[[StreamState], str]) -> Run:
        def run() -> str:
            state = StreamState()
            apply = state.apply
            for event in events:
                apply(event, 1.0)
            return read(state)

        return run

    return {name: runner(events, read) for name, (events, read) in made.items()}


def _sse(obj: dict, name: str = "") -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(obj, separators=(',', ':'))}\n\n".encode()


def _chat(delta: dict) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
    return _sse({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]})


def _typed(kind: str, **fields: object) -> bytes:
    return _sse({"type": kind, **fields}, kind)


def wire_contenders(n: int) -> dict[str, Run]:
    """Each dialect's own one-byte text and tool fragments, as network reads of one event each."""
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "x"}}
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    bodies = {
        "chat text": [_chat({"content": "x"})] * n,
        "chat tool": [_chat({"tool_calls": [call]})]
        + [_chat({"tool_calls": [{"index": 0, "function": {"arguments": "x"}}]})] * (n - 1),
        "responses text": [
            _typed("response.output_text.delta", item_id="msg_1", output_index=0, content_index=0, delta="x")
        ]
        * n,
        "responses tool": [_typed("response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta="x")]
        * n,
        "messages text": [_typed("content_block_delta", index=0, delta={"type": "text_delta", "text": "x"})] * n,
        "messages tool": [_typed("content_block_start", index=0, content_block=tool_use)]
        + [_typed("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": "x"})] * n,
    }

    def runner(name: str, body: list[bytes]) -> Run:
        dialect = name.split()[0]

        def run() -> str:
            state = parse(body, api=dialect)
            return state.tool_calls[0].arguments if name.endswith("tool") else state.text

        return run

    return {name: runner(name, body) for name, body in bodies.items()}


def measure(contenders: dict[str, Run], n: int, runs: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, run in contenders.items():  # alternate, so drift hits everyone alike
            start = time.process_time()
            result = run()
            times[name].append(time.process_time() - start)
            assert result == "x" * n, name
    return {name: statistics.median(values) for name, values in times.items()}


def table(medians: dict[str, float], n: int, base: Callable[[str], str]) -> None:
    print("| deltas | median CPU s | µs per delta | ratio to text |")
    print("|---|---:|---:|---:|")
    for name, seconds in medians.items():
        print(f"| {name} | {seconds:.3f} | {seconds / n * 1e6:.2f} | {seconds / medians[base(name)]:.2f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="deltas per contender")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pipeline", action="store_true", help="also from wire bytes, per dialect (slow)")
    args = parser.parse_args(argv)
    n = args.n
    print(f"{n:,} one-byte deltas; CPU seconds, median of {args.runs} runs; python {sys.version.split()[0]}")
    print()
    medians = measure(state_contenders(n), n, args.runs)
    print("StreamState.apply (the accumulators):")
    print()
    table(medians, n, lambda name: "text deltas")
    ratio = medians["tool-call deltas"] / medians["text deltas"]
    if args.pipeline:
        print()
        print("parse() from wire bytes, one event per read:")
        print()
        table(measure(wire_contenders(n), n, args.runs), n, lambda name: name.split()[0] + " text")
    print()
    print(f"tool / text through StreamState.apply = {ratio:.2f} (target <= 1.5)")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
