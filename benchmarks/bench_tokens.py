"""The token view: widget bytes and CPU at 2k and 20k tokens, side by side with the naive way.

One answer of N tokens (the scripted demo's simulated logprobs for its 20,083-token `demo-long`
tutorial, cut to N) is fed into a real `StreamView` 50 tokens per frame (1,000 tokens/s at 20
frames/s), as the frame scheduler would, and every comm message the widgets send is recorded: its
JSON content and metadata plus 500 bytes of Jupyter envelope (as `bench_markdown.py` counts them).
CPU is this process's time in `view.refresh()` for all frames — the kernel's share of drawing —
median of 5 runs. Contenders, each run in turn within a round:

* the view without logprobs (the answer pane alone: the baseline),
* the view with the token view (`logprobs=5`): sealed, append-only widgets,
* the naive token view: the same token HTML, one `HTML` widget re-sent whole every frame.

The ratio that matters is per token: flat from 2k to 20k tokens means the cost grows with the
answer, not with its square.

Run: .venv/bin/python benchmarks/bench_tokens.py   (prints a markdown table, ~1-2 minutes)
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

import ipywidgets as w
from _wire import Wire

from streamwidgets.core import StreamState, Token
from streamwidgets.core._events import Started, TextDelta, TokenLogprobs
from streamwidgets.server import scripted_answer
from streamwidgets.server.demo._logprobs import simulated_logprobs
from streamwidgets.widgets._tokens import token_html
from streamwidgets.widgets._view import StreamView

PER_FRAME = 50
RUNS = 5


def answer_tokens(count: int) -> list[Token]:
    pieces = list(scripted_answer("demo-long", "Write a long tutorial on Python's asyncio.", tokens=count).text_tokens)
    out = []
    for i, piece in enumerate(pieces[:count]):
        entry = simulated_logprobs(piece, i, 5, None)
        top = tuple((t["token"], t["logprob"]) for t in entry["top_logprobs"])
        out.append(Token(piece, entry["logprob"], top))
    return out


def view_run(tokens: list[Token], with_logprobs: bool) -> tuple[float, int, int]:
    with Wire() as wire:
        state = StreamState()
        state.apply(Started("demo-long"))
        view = StreamView(state, sparkline=False)
        cpu = 0.0
        now = 0.0
        for start in range(0, len(tokens), PER_FRAME):
            batch = tokens[start : start + PER_FRAME]
            state.apply(TextDelta("".join(t.text for t in batch)))
            if with_logprobs:
                state.apply(TokenLogprobs(tuple(batch)))
            now += 0.05
            began = time.process_time()
            view.refresh(now)
            cpu += time.process_time() - began
        state.close()
        began = time.process_time()
        view.refresh(now + 0.05, final=True)
        cpu += time.process_time() - began
        return cpu, wire.messages, wire.bytes


def naive_run(tokens: list[Token]) -> tuple[float, int, int]:
    """Only the token view's own cost, the naive way: one widget, all tokens every frame."""
    with Wire() as wire:
        widget = w.HTML()
        pieces: list[str] = []
        cpu = 0.0
        for start in range(0, len(tokens), PER_FRAME):
            began = time.process_time()
            pieces.extend(token_html(t) for t in tokens[start : start + PER_FRAME])
            widget.value = "".join(pieces)
            cpu += time.process_time() - began
        return cpu, wire.messages, wire.bytes


def medians(contenders: dict[str, Callable[[], tuple[float, int, int]]]) -> dict[str, tuple[float, int, int]]:
    """Each contender once per round, in turn, for `RUNS` rounds: the median CPU, and the
    messages and bytes (the same every run)."""
    results: dict[str, list[tuple[float, int, int]]] = {name: [] for name in contenders}
    for _ in range(RUNS):
        for name, run in contenders.items():
            results[name].append(run())
    return {name: (statistics.median(r[0] for r in runs), runs[0][1], runs[0][2]) for name, runs in results.items()}


def main() -> None:
    rows = []
    for count in (2_000, 20_000):
        tokens = answer_tokens(count)
        contenders = {
            "view, no logprobs (answer pane only)": lambda tokens=tokens: view_run(tokens, False),
            "view with the token view (logprobs=5)": lambda tokens=tokens: view_run(tokens, True),
            "naive token view alone (one widget, all re-sent)": lambda tokens=tokens: naive_run(tokens),
        }
        measured = medians(contenders)
        base = measured["view, no logprobs (answer pane only)"]
        for name, (cpu, messages, sent) in measured.items():
            extra = ""
            if name.startswith("view with"):
                extra = f"{(sent - base[2]) / count:,.0f} B, {(cpu - base[0]) / count * 1e6:,.0f} µs"
            rows.append(
                f"| {count:,} | {name} | {messages:,} | {sent / 1e6:,.2f} | {sent / count:,.0f} | "
                f"{cpu:.2f} | {cpu / count * 1e6:,.0f} | {extra or '—'} |"
            )
    print(
        "| tokens | contender | widget messages | MB sent | bytes / token | CPU s (median of 5) | µs / token |"
        " the token view's own share per token |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
