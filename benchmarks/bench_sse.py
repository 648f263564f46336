"""SSE decoding and the whole parse pipeline, side by side with the decoders a user would pick instead.

All contenders run in one process on the same ~20 MB chat-completions stream, alternating, and
each figure is the median CPU time (`time.process_time`) of several runs. Ratios compare
medians from this one run, so the machine's noise cancels out as far as it can.

    python benchmarks/bench_sse.py            # full size (~20 MB), 7 runs
    python benchmarks/bench_sse.py --quick    # ~2 MB, 3 runs (a smoke test)
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable

from streamwidgets.core._sse import SSEDecoder
from streamwidgets.core._state import StreamState
from streamwidgets.core.dialects import Normalizer

WORDS = [
    "the",
    "stream",
    "of",
    "tokens",
    "arrives",
    "as",
    "server",
    "sent",
    "events",
    "and",
    "each",
    "event",
    "carries",
    "a",
    "small",
    "JSON",
    "chunk",
    "with",
    "a",
    "delta",
    "that",
    "the",
    "client",
    "appends",
    "—",
    "données,",
    "naïve",
    "café,",
    "数据流,",
    "emoji",
    "🌊",
    "and",
    "code",
    "`x",
    "=",
    "f(y)`",
]


def make_stream(target_bytes: int, seed: int = 7) -> tuple[bytes, str]:
    """A realistic OpenAI chat-completions stream (one token per chunk) and its answer text."""
    rng = random.Random(seed)
    head = '{"id":"chatcmpl-B9zQ3x7Kp2","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4.1-mini-2025-04-14","system_fingerprint":"fp_6f2dcd5d0b","choices":[{"index":0,"delta":{"content":'
    tail = '},"logprobs":null,"finish_reason":null}]}'
    out: list[str] = []
    text: list[str] = []
    size = 0
    while size < target_bytes:
        token = (" " if rng.random() < 0.8 else "") + rng.choice(WORDS)
        if rng.random() < 0.05:
            token += "\n\n"
        text.append(token)
        line = "data: " + head + json.dumps(token) + tail + "\n\n"
        out.append(line)
        size += len(line.encode())
    out.append(
        'data: {"id":"chatcmpl-B9zQ3x7Kp2","object":"chat.completion.chunk","created":1733011200,"model":"gpt-4.1-mini-2025-04-14","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    )
    out.append("data: [DONE]\n\n")
    return "".join(out).encode(), "".join(text)


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# ---------------------------------------------------------------- decoders only


def ours(chunks: Iterable[bytes]) -> int:
    d = SSEDecoder()
    n = 0
    for chunk in chunks:
        n += len(d.feed(chunk))
    return n + len(d.close())


def httpx_sse(chunks: Iterable[bytes]) -> int:
    """What `EventSource.iter_sse()` does: httpx's text decoder, httpx-sse's line and event decoders."""
    from httpx._decoders import TextDecoder
    from httpx_sse._decoders import SSEDecoder as Dec
    from httpx_sse._decoders import SSELineDecoder

    text_decoder, lines, dec = TextDecoder("utf-8"), SSELineDecoder(), Dec()
    n = 0
    for chunk in chunks:
        for line in lines.decode(text_decoder.decode(chunk)):
            if dec.decode(line.rstrip("\n")) is not None:
                n += 1
    for line in lines.flush():
        if dec.decode(line.rstrip("\n")) is not None:
            n += 1
    return n


def openai_sdk(chunks: Iterable[bytes]) -> int:
    from openai._streaming import SSEDecoder as Dec

    return sum(1 for _ in Dec().iter_bytes(iter(chunks)))


def sseclient_py(chunks: Iterable[bytes]) -> int:
    import sseclient

    return sum(1 for _ in sseclient.SSEClient(iter(chunks)).events())


# ---------------------------------------------------------------- whole pipeline


def ours_pipeline(chunks: Iterable[bytes]) -> str:
    normalizer = Normalizer("chat")
    state = StreamState()
    for chunk in chunks:
        state.extend(normalizer.feed(chunk))
    state.extend(normalizer.close())
    state.close()
    return state.text


def hand_written(chunks: Iterable[bytes]) -> str:
    """The loop people write: httpx-sse events, `json.loads`, concatenate `delta.content`."""
    from httpx._decoders import TextDecoder
    from httpx_sse._decoders import SSEDecoder as Dec
    from httpx_sse._decoders import SSELineDecoder

    text_decoder, lines, dec = TextDecoder("utf-8"), SSELineDecoder(), Dec()
    parts: list[str] = []

    def handle(line: str) -> None:
        sse = dec.decode(line.rstrip("\n"))
        if sse is None or sse.data == "[DONE]":
            return
        chunk = json.loads(sse.data)
        for choice in chunk.get("choices") or ():
            content = choice.get("delta", {}).get("content")
            if content:
                parts.append(content)

    for chunk in chunks:
        for line in lines.decode(text_decoder.decode(chunk)):
            handle(line)
    for line in lines.flush():
        handle(line)
    return "".join(parts)


def cpu(fn: Callable[[list[bytes]], object], chunks: list[bytes]) -> float:
    start = time.process_time()
    fn(chunks)
    return time.process_time() - start


def measure(contenders: dict[str, Callable], chunks: list[bytes], runs: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, fn in contenders.items():  # alternate, so drift hits everyone alike
            times[name].append(cpu(fn, chunks))
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="~2 MB and 3 runs")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--stdlib-json", action="store_true", help="measure streamwidgets without orjson")
    args = parser.parse_args(argv)
    if args.stdlib_json:
        import streamwidgets.core._json

        streamwidgets.core._json.orjson = None
    size = 2_000_000 if args.quick else 20_000_000
    runs = args.runs or (3 if args.quick else 7)
    data, text = make_stream(size)
    expected_events = data.count(b"\n\n")

    # Correctness first: every contender must see the same stream.
    sample = chunked(data, 16384)
    assert ours(sample) == httpx_sse(sample) == openai_sdk(sample) == sseclient_py(sample) == expected_events
    assert ours_pipeline(sample) == hand_written(sample) == text

    mb = len(data) / 1e6
    json_lib = "json (stdlib)" if args.stdlib_json else "orjson if installed"
    print(
        f"stream: {mb:.1f} MB, {expected_events} events; CPU seconds, median of {runs} runs; "
        f"python {sys.version.split()[0]}; streamwidgets JSON: {json_lib}"
    )
    print()
    print("| chunking | contender | median CPU s | MB/s | streamwidgets is faster by |")
    print("|---|---|---:|---:|---:|")
    decoders = {
        "streamwidgets SSEDecoder": ours,
        "httpx-sse": httpx_sse,
        "openai SDK SSEDecoder": openai_sdk,
        "sseclient-py": sseclient_py,
    }
    pipelines = {"streamwidgets parse pipeline": ours_pipeline, "httpx-sse + json.loads loop": hand_written}
    for label, size in (("16 KiB", 16384), ("~100 B (token-sized)", 100)):
        chunks = chunked(data, size)
        for group in (decoders, pipelines):
            result = measure(group, chunks, runs)
            base = next(iter(result.values()))
            for name, seconds in result.items():
                ratio = "—" if seconds is base else f"{seconds / base:.2f}x"
                print(f"| {label} | {name} | {seconds:.3f} | {mb / seconds:.1f} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
