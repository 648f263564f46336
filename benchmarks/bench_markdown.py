"""Incremental markdown: rendering work and widget-message bytes, side by side with the naive way.

(1) CPU: a ~100k-token generated answer with a 2,000-line code block, streamed 50 tokens per
    update: all `IncrementalMarkdown` work vs one `render_markdown` of the final text, and vs
    re-rendering the whole text on every update (median of 5 runs each).
(2) Bytes: the widget messages `MarkdownPane` sends for a 2k / 20k / 100k-token answer at 50 tokens
    per update (1,000 tokens/s at 20 updates/s), vs setting `HTML.value = render(all)` per update.
    A message is counted as the JSON of its content (what ipykernel's Comm serializes) plus a fixed
    500 bytes for the Jupyter envelope (header, parent header, signature, delimiters).
(3) Code: a 2,000-line Python block streamed one token per update and 50 tokens per update (and,
    for scale, the 20,083-token `demo-long` answer, whose 45 fences are short), CPU seconds of
    all `IncrementalMarkdown` work (healed, as in the pane), median of 5: sealed code lines (each
    complete line lexed once) vs unsealed (each chunk lexed on its own and the whole block again
    when it closes: what a lexer that cannot be resumed still gets), and with `--before REV` the
    renderer of that revision. Each run is a child process of its own; the contenders alternate.

Run: .venv/bin/python benchmarks/bench_markdown.py   (prints markdown tables, ~2 minutes)
     .venv/bin/python benchmarks/bench_markdown.py --code --before 8a1e19e   (only (3), with the
     renderer before sealed code lines)
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import comm
from comm.base_comm import BaseComm

# A child process of the code case measures the tree it was given; everything else, this one.
sys.path.insert(0, sys.argv[sys.argv.index("--child") + 1] if "--child" in sys.argv else str(Path(__file__).parents[1]))

from streamwidgets.markdown import IncrementalMarkdown, render_markdown

HERE = Path(__file__).resolve().parent

_WORDS = [
    "the",
    "model",
    "stream",
    "token",
    "answer",
    "notebook",
    "widget",
    "render",
    "markdown",
    "block",
    "list",
    "table",
    "code",
    "value",
    "state",
    "event",
    "client",
    "server",
    "provider",
    "latency",
    "budget",
    "bytes",
    "browser",
    "kernel",
    "cancel",
    "reasoning",
    "source",
    "citation",
    "usage",
    "cost",
    "prompt",
    "completion",
    "response",
    "message",
    "chunk",
    "buffer",
    "parser",
    "decoder",
    "dialect",
    "quirk",
    "frame",
    "update",
    "throttle",
    "linear",
    "quadratic",
    "segment",
    "tail",
]
_CODE_LINES = [
    "def {w}_{n}(items: list[int], limit: int = {n}) -> dict[str, int]:",
    '    """Return the {w} of each item, capped at {n}."""',
    "    result = {{}}",
    "    for index, item in enumerate(items):",
    "        if item > limit:  # {w} overflow",
    "            continue",
    '        result[f"{w}-{{index}}"] = min(item * {n}, limit)',
    "    return result",
    "",
    "class {W}Handler:",
    "    rate = {n}.5",
    "    def handle(self, event):",
    '        return self.{w}(event, retries={n}, label="{w}")',
    "",
]


def _sentence(rnd: random.Random) -> str:
    words = [rnd.choice(_WORDS) for _ in range(rnd.randint(6, 18))]
    if rnd.random() < 0.3:
        i = rnd.randrange(len(words))
        words[i] = rnd.choice(["**", "*", "`"]).join(["", words[i], ""])
    if rnd.random() < 0.1:
        words.append(f"[{rnd.randint(1, 5)}]")
    return " ".join(words).capitalize() + "."


def _code(rnd: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        w = rnd.choice(_WORDS)
        template = _CODE_LINES[i % len(_CODE_LINES)]
        out.append(template.format(w=w, W=w.capitalize(), n=rnd.randint(1, 999)))
    return "\n".join(out)


def generate_answer(tokens: int, seed: int = 7, big_code_lines: int = 0) -> str:
    """A realistic markdown answer of about `tokens` tokens (see `tokenize`)."""
    rnd = random.Random(seed)
    parts: list[str] = [" ".join(_sentence(rnd) for _ in range(3))]
    section = 0
    big_done = big_code_lines == 0
    count = len(tokenize(parts[0]))
    while count < tokens:
        before = len(parts)
        section += 1
        parts.append(f"## {section}. {rnd.choice(_WORDS).capitalize()} and {rnd.choice(_WORDS)}")
        for _ in range(rnd.randint(3, 6)):
            kind = rnd.random()
            if kind < 0.4:
                parts.append(" ".join(_sentence(rnd) for _ in range(rnd.randint(2, 5))))
            elif kind < 0.55:
                parts.append("\n".join(f"- {_sentence(rnd)}" for _ in range(rnd.randint(3, 7))))
            elif kind < 0.65:
                parts.append(
                    "\n".join(f"{i}. **{rnd.choice(_WORDS)}**: {_sentence(rnd)}" for i in range(1, rnd.randint(3, 7)))
                )
            elif kind < 0.78:
                lang = rnd.choice(["python", "python", "bash", "json", "text"])
                parts.append(f"```{lang}\n{_code(rnd, rnd.randint(4, 24))}\n```")
            elif kind < 0.88:
                cols = rnd.randint(2, 4)
                rows = [
                    "| " + " | ".join(rnd.choice(_WORDS) for _ in range(cols)) + " |" for _ in range(rnd.randint(3, 8))
                ]
                parts.append("\n".join([rows[0], "|" + "---|" * cols, *rows[1:]]))
            else:
                parts.append("> " + _sentence(rnd) + "\n> " + _sentence(rnd))
        if not big_done and count > tokens // 3:
            parts.append(f"```python\n{_code(rnd, big_code_lines)}\n```")
            big_done = True
        count += sum(len(tokenize(part)) + 1 for part in parts[before:])
    return "\n\n".join(parts) + "\n"


_TOKEN_RE = re.compile(r"\s*\S{1,8}|\s+")


def tokenize(text: str) -> list[str]:
    """Word-ish pieces (at most 8 visible characters), about the size of an LLM token."""
    return _TOKEN_RE.findall(text)


def prefixes(text: str, per_update: int) -> Iterator[str]:
    pieces = tokenize(text)
    end = 0
    for i in range(0, len(pieces), per_update):
        end += sum(len(p) for p in pieces[i : i + per_update])
        yield text[:end]


def _median_seconds(run: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def bench_cpu() -> list[str]:
    """CPU seconds: one render of the final text, all incremental work, naive re-render per update."""
    text = generate_answer(100_000, big_code_lines=2000)
    frames = list(prefixes(text, 50))
    reference = render_markdown(text)

    def incremental() -> None:
        im = IncrementalMarkdown()
        for frame in frames[:-1]:
            im.update(frame)
        im.finish(text)
        assert im.html == reference

    one = _median_seconds(lambda: render_markdown(text))
    inc = _median_seconds(incremental)
    # Naive re-renders the whole text every update: far too slow to run in full (minutes), so
    # time 40 evenly spaced updates and scale up (render time is linear in the text length).
    sample = frames[:: max(1, len(frames) // 40)]
    start = time.process_time()
    for frame in sample:
        render_markdown(frame)
    naive = (time.process_time() - start) * len(frames) / len(sample)
    return [
        (
            f"Rendering work, {len(tokenize(text)):,}-token answer ({len(text) / 1000:.0f} kB of markdown, "
            f"a 2,000-line code block), {len(frames):,} updates of 50 tokens, CPU seconds "
            "(median of 5 runs; naive estimated from 40 sampled updates):"
        ),
        "",
        "| | CPU s | vs one render |",
        "|---|---:|---:|",
        f"| one `render_markdown` of the final text | {one:.3f} | 1.00x |",
        f"| `IncrementalMarkdown`, all updates + finish | {inc:.3f} | {inc / one:.2f}x |",
        f"| naive `render_markdown(text so far)` per update | {naive:.1f} | {naive / one:.0f}x |",
    ]


class _Wire:
    """Records what widgets would publish, sized as ipykernel's Comm sends it: the JSON of the
    message content (data, comm_id, target) and metadata, plus 500 bytes of Jupyter envelope."""

    ENVELOPE = 500

    def __init__(self) -> None:
        self.bytes = 0
        self.messages = 0
        self._saved = comm.create_comm
        wire = self

        class RecordingComm(BaseComm):
            def publish_msg(
                self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
            ) -> None:
                content = {"data": data or {}, "comm_id": self.comm_id, **keys}
                wire.messages += 1
                wire.bytes += len(json.dumps(content, ensure_ascii=False).encode()) + wire.ENVELOPE
                wire.bytes += len(json.dumps(metadata or {}).encode())

        comm.create_comm = RecordingComm

    def restore(self) -> None:
        comm.create_comm = self._saved

    def reset(self) -> None:
        self.bytes = self.messages = 0


def _naive_message_bytes(frame: str) -> int:
    value = json.dumps(render_markdown(frame), ensure_ascii=False)
    return len(value.encode()) + 100 + _Wire.ENVELOPE  # {"data": {"method": "update", ...}}


def bench_bytes() -> list[str]:
    """Widget-message bytes per markdown byte: the pane vs `HTML.value = render(all)` per update."""
    import ipywidgets as w

    from streamwidgets.widgets._markdown_pane import MarkdownPane

    rows = [
        "Widget-message bytes for an answer streamed at 50 tokens per update (1,000 tokens/s at",
        "20 updates/s), per byte of markdown; naive = `HTML.value = render_markdown(text so far)`",
        "every update (measured at 2k and 20k tokens, estimated from 50 sampled updates at 100k):",
        "",
        "| tokens | markdown | HTML / md | updates | pane messages | pane bytes | pane / md | naive / md | naive / pane |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    wire = _Wire()
    try:
        for tokens in (2_000, 20_000, 100_000):
            text = generate_answer(tokens, big_code_lines=2000 if tokens == 100_000 else 0)
            frames = list(prefixes(text, 50))
            md = len(text.encode())
            wire.reset()
            pane = MarkdownPane()
            for frame in frames[:-1]:
                pane.update(frame)
            pane.finish(text)
            assert pane.html == render_markdown(text)
            pane_bytes, pane_messages = wire.bytes, wire.messages
            if tokens <= 20_000:
                wire.reset()
                naive = w.HTML()
                for frame in frames:
                    naive.value = render_markdown(frame)
                naive_bytes = wire.bytes
            else:
                sample = frames[:: max(1, len(frames) // 50)]
                naive_bytes = int(statistics.mean(_naive_message_bytes(f) for f in sample) * len(frames))
            html_ratio = len(render_markdown(text).encode()) / md
            rows.append(
                f"| {tokens:,} | {md / 1000:.0f} kB | {html_ratio:.2f} | {len(frames):,} | {pane_messages:,} "
                f"| {pane_bytes / 1e6:.2f} MB | {pane_bytes / md:.1f}x | {naive_bytes / md:.0f}x "
                f"| {naive_bytes / pane_bytes:.0f}x |"
            )
    finally:
        wire.restore()
    return rows


def code_block_text(lines: int = 2000) -> str:
    """An answer that is mostly one long Python block (docstrings, comments, strings)."""
    return "A long listing:\n\n```python\n" + _code(random.Random(11), lines) + "\n```\n\nThat is all.\n"


def _demo_long_frames(per_update: int) -> list[str]:
    """The `demo-long` answer the kernel benchmark streams, cut at its own token pieces."""
    from streamwidgets.server.demo._long import long_answer_tokens

    pieces = list(long_answer_tokens("How does asyncio work?", 20_083, "1"))
    text, ends, end = "".join(pieces), [], 0
    for i in range(0, len(pieces), per_update):
        end += sum(len(p) for p in pieces[i : i + per_update])
        ends.append(end)
    return [text[:end] for end in ends]


def _child(mode: str, per_update: int, answer: str) -> None:
    """In a child process: stream the answer once (after a warm-up) and print CPU seconds."""
    if mode == "unsealed":
        from streamwidgets.markdown import _lexing

        _lexing.Resumable.of = staticmethod(lambda lexer: None)  # type: ignore[method-assign]
    frames = list(prefixes(code_block_text(), per_update)) if answer == "code" else _demo_long_frames(per_update)
    text = frames[-1]
    warm = IncrementalMarkdown(heal=True)
    for frame in frames[:50]:
        warm.update(frame)
    start = time.process_time()
    im = IncrementalMarkdown(heal=True)
    for frame in frames[:-1]:
        im.update(frame)
    im.finish(text)
    seconds = time.process_time() - start
    assert im.html == render_markdown(text)
    print(json.dumps({"seconds": seconds, "updates": len(frames)}))


def _tree_of(rev: str, into: Path) -> Path:
    """The package as it was at `rev` (from git), unpacked under `into`."""
    archive = subprocess.run(["git", "archive", rev, "streamwidgets"], cwd=HERE.parent, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def bench_code(before: str | None = None, repeat: int = 5) -> list[str]:
    """CPU seconds to stream code: sealed vs unsealed (vs `before`), alternating."""
    with tempfile.TemporaryDirectory() as tmp:
        contenders = {"unsealed": (str(HERE.parent), "unsealed"), "sealed": (str(HERE.parent), "sealed")}
        if before:
            contenders = {f"before ({before})": (str(_tree_of(before, Path(tmp))), "sealed"), **contenders}
        first = next(iter(contenders))
        rows = [
            "Streaming code: CPU seconds of all `IncrementalMarkdown` work, healed as in the pane,",
            "median of 5 runs, contenders alternating:",
            "",
            "| answer | tokens per update | updates | " + " | ".join(contenders) + f" | sealed vs {first} |",
            "|---|---:|---:|" + "---:|" * (len(contenders) + 1),
        ]
        cases = [("code", 1, "a 2,000-line Python block"), ("code", 50, "a 2,000-line Python block")]
        cases.append(("demo-long", 50, "`demo-long`, 20,083 tokens"))
        for answer, per_update, title in cases:
            seconds: dict[str, list[float]] = {name: [] for name in contenders}
            updates = 0
            for _ in range(repeat):
                for name, (tree, mode) in contenders.items():
                    command = [sys.executable, __file__, "--child", tree, mode, str(per_update), answer]
                    run = subprocess.run(command, capture_output=True, text=True, check=True)
                    result = json.loads(run.stdout)
                    seconds[name].append(result["seconds"])
                    updates = result["updates"]
            medians = {name: statistics.median(values) for name, values in seconds.items()}
            ratio = medians["sealed"] / medians[first]
            cells = " | ".join(f"{medians[name]:.2f}" for name in contenders)
            rows.append(f"| {title} | {per_update} | {updates:,} | {cells} | {ratio:.2f}x |")
    return rows


def main() -> None:
    if "--child" in sys.argv:
        _tree, mode, per_update, answer = sys.argv[sys.argv.index("--child") + 1 :][:4]
        _child(mode, int(per_update), answer)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code", action="store_true", help="only the code block case (3)")
    parser.add_argument("--before", help="a git revision whose renderer to measure beside, in (3)")
    args = parser.parse_args()
    started = time.perf_counter()
    lines = bench_code(args.before) if args.code else [*bench_cpu(), "", *bench_bytes(), "", *bench_code(args.before)]
    print("\n".join(lines))
    print(f"\n(run time {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
