"""Incremental markdown: rendering work and widget-message bytes, side by side with the naive way.

(1) CPU: a ~100k-token generated answer with a 2,000-line code block, streamed 50 tokens per
    update: all `IncrementalMarkdown` work vs one `render_markdown` of the final text, and vs
    re-rendering the whole text on every update (median of 5 runs each).
(2) Bytes: the widget messages `MarkdownPane` sends for a 2k / 20k / 100k-token answer at 50 tokens
    per update (1,000 tokens/s at 20 updates/s), vs setting `HTML.value = render(all)` per update.
    A message is counted as the JSON of its content (what ipykernel's Comm serializes) plus a fixed
    500 bytes for the Jupyter envelope (header, parent header, signature, delimiters).

Run: .venv/bin/python benchmarks/bench_markdown.py   (prints a markdown table, ~1 minute)
"""

from __future__ import annotations

import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamwidgets.markdown import IncrementalMarkdown, render_markdown  # noqa: E402

_WORDS = (
    "the model stream token answer notebook widget render markdown block list table code "
    "value state event client server provider latency budget bytes browser kernel cancel "
    "reasoning source citation usage cost prompt completion response message chunk buffer "
    "parser decoder dialect quirk frame update throttle linear quadratic segment tail"
).split()
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
    while sum(len(tokenize(p)) for p in parts[-40:]) >= 0 and len(tokenize("\n\n".join(parts))) < tokens:
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
                    "| " + " | ".join(rnd.choice(_WORDS) for _ in range(cols)) + " |"
                    for _ in range(rnd.randint(3, 8))
                ]
                parts.append("\n".join([rows[0], "|" + "---|" * cols, *rows[1:]]))
            else:
                parts.append("> " + _sentence(rnd) + "\n> " + _sentence(rnd))
        if not big_done and len(tokenize("\n\n".join(parts))) > tokens // 3:
            parts.append(f"```python\n{_code(rnd, big_code_lines)}\n```")
            big_done = True
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


def bench_cpu() -> None:
    text = generate_answer(100_000, big_code_lines=2000)
    frames = list(prefixes(text, 50))

    def incremental() -> None:
        im = IncrementalMarkdown()
        for frame in frames[:-1]:
            im.update(frame)
        im.finish(text)
        assert im.html == reference

    reference = render_markdown(text)
    one = _median_seconds(lambda: render_markdown(text))
    inc = _median_seconds(incremental)
    print(f"text {len(text)} chars, {len(tokenize(text))} tokens, {len(frames)} updates")
    print(f"one render {one:.3f}s, incremental {inc:.3f}s, ratio {inc / one:.2f}x")


if __name__ == "__main__":
    bench_cpu()
