"""Math-heavy answers: widget bytes and kernel CPU, side by side with plain answers of equal length.

A generated answer where about one sentence in three carries inline math (`\\(…\\)` or `$…$`) and
every section has display formulas (`$$…$$`, `\\[…\\]`, an `align` environment), each formula
distinct, streamed 50 tokens per update through `MarkdownPane` (healed tail, MathML typeset in the
kernel). Next to it, the plain answer of `bench_markdown.py` with as many tokens. Bytes are counted
as in `bench_markdown.py` (JSON of each comm message + 500 bytes of envelope); CPU is all the
pane's work for the whole stream (median of 3 runs, process time), per 1,000 tokens.

Run: .venv/bin/python benchmarks/bench_math.py   (prints a markdown table, ~2 minutes)
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_markdown import _WORDS, _sentence, _Wire, generate_answer, prefixes, tokenize

from streamwidgets.markdown import render_markdown
from streamwidgets.markdown._math import render_tex

_INLINE = [
    "x_{{{a}}}^{{{b}}} + y_{{{b}}}",
    "\\frac{{{a}}}{{{b}}}",
    "e^{{i\\pi {a}}} + {b} = 0",
    "\\sqrt{{{a} + x^{{{b}}}}}",
    "\\alpha_{{{a}}} \\le \\beta^{{{b}}}",
    "\\sum_{{k=1}}^{{{a}}} k^{{{b}}}",
    "O(n^{{{a}}} \\log n)",
]
_DISPLAY = [
    "$$\n\\int_0^{{{a}}} x^{{{b}}}\\,dx = \\frac{{{a}^{{{c}}}}}{{{c}}}\n$$",
    "\\[\n\\sum_{{n=1}}^{{\\infty}} \\frac{{{a}}}{{n^{{{b}}}}} = \\frac{{\\pi^{{{b}}}}}{{{c}}}\n\\]",
    "\\begin{{align}}\nf(x) &= {a}x^2 + {b}x + {c} \\\\\nf'(x) &= {d}x + {b}\n\\end{{align}}",
    "$$\n\\begin{{pmatrix}} {a} & {b} \\\\ {c} & {d} \\end{{pmatrix}}\n\\begin{{pmatrix}} x \\\\ y \\end{{pmatrix}}\n$$",
    "$$\n\\lim_{{h \\to 0}} \\frac{{f(x + {a}h) - f(x)}}{{{b}h}} = \\frac{{{a}}}{{{b}}} f'(x)\n$$",
]


def _numbers(rnd: random.Random) -> dict[str, int]:
    return {k: rnd.randint(2, 99) for k in "abcd"}


def _math_sentence(rnd: random.Random) -> str:
    sentence = _sentence(rnd)
    if rnd.random() < 0.35:
        tex = rnd.choice(_INLINE).format(**_numbers(rnd))
        formula = f"\\({tex}\\)" if rnd.random() < 0.5 else f"${tex}$"
        words = sentence.split(" ")
        words.insert(rnd.randrange(1, len(words)), formula)
        sentence = " ".join(words)
    return sentence


def generate_math_answer(tokens: int, seed: int = 11) -> str:
    """A tutoring answer of about `tokens` tokens, dense with distinct formulas."""
    rnd = random.Random(seed)
    parts: list[str] = [" ".join(_math_sentence(rnd) for _ in range(3))]
    count = len(tokenize(parts[0]))
    section = 0
    while count < tokens:
        before = len(parts)
        section += 1
        parts.append(f"## {section}. {rnd.choice(_WORDS).capitalize()} and {rnd.choice(_WORDS)}")
        for _ in range(rnd.randint(3, 6)):
            kind = rnd.random()
            if kind < 0.5:
                parts.append(" ".join(_math_sentence(rnd) for _ in range(rnd.randint(2, 5))))
            elif kind < 0.8:
                parts.append(rnd.choice(_DISPLAY).format(**_numbers(rnd)))
            else:
                parts.append("\n".join(f"- {_math_sentence(rnd)}" for _ in range(rnd.randint(3, 6))))
        count += sum(len(tokenize(part)) + 1 for part in parts[before:])
    return "\n\n".join(parts) + "\n"


def _run(text: str) -> tuple[int, int, int]:
    """Stream `text` through a pane: (bytes, messages, updates)."""
    from streamwidgets.widgets._markdown_pane import MarkdownPane

    wire = _Wire()
    try:
        frames = list(prefixes(text, 50))
        pane = MarkdownPane()
        for frame in frames[:-1]:
            pane.update(frame)
        pane.finish(text)
        assert pane.html == render_markdown(text)
        return wire.bytes, wire.messages, len(frames)
    finally:
        wire.restore()


def _cpu(text: str, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        render_tex.cache_clear()  # every run converts its formulas afresh
        start = time.process_time()
        _run(text)
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    started = time.perf_counter()
    rows = [
        "Math-heavy vs plain answers through `MarkdownPane` (healed tail, MathML typeset in the kernel),",
        "50 tokens per update; bytes as JSON of each comm message + 500 bytes envelope; CPU = all the",
        "pane's work for the stream, median of 3 runs:",
        "",
        "| answer | tokens | formulas | markdown | HTML / md | updates | pane bytes | pane / md "
        "| bytes / update | CPU s | CPU ms / 1k tokens |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for tokens in (2_000, 20_000, 100_000):
        for kind, text in (("math", generate_math_answer(tokens)), ("plain", generate_answer(tokens))):
            md = len(text.encode())
            html_ratio = len(render_markdown(text).encode()) / md
            formulas = render_markdown(text).count("<math ")
            sent, _messages, updates = _run(text)
            cpu = _cpu(text, repeat=3 if tokens < 100_000 else 1)
            count = len(tokenize(text))
            rows.append(
                f"| {kind} | {count:,} | {formulas:,} | {md / 1000:.0f} kB | {html_ratio:.2f} | {updates:,} "
                f"| {sent / 1e6:.2f} MB | {sent / md:.1f}x | {sent / updates:,.0f} | {cpu:.2f} "
                f"| {1000 * cpu / count * 1000:.1f} |"
            )
    print("\n".join(rows))
    print(f"\n(run time {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
