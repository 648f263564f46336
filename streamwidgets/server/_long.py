"""The `demo-long` answer: tens of thousands of tokens of varied markdown, made up on the spot.

A long answer is what shows whether a client's parsing and rendering stay linear, so the text
mixes every block a renderer meets (headings, paragraphs, lists, tables, quotes and long fenced
code blocks) and is generated from a seeded random generator: the same prompt and seed always
give the same text, and the length is exact, not approximate.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from ._tokens import tokenize

__all__ = ["long_answer_tokens"]

_SECTIONS = (
    "Background",
    "Core ideas",
    "A worked example",
    "Performance",
    "Common pitfalls",
    "Testing it",
    "Edge cases",
    "Measuring",
    "Design notes",
    "Going further",
    "Trade-offs",
    "A second example",
    "Under the hood",
    "Debugging",
    "Checklist",
)
_CONCEPTS = (
    "the event loop",
    "a ring buffer",
    "the parser",
    "back-pressure",
    "an incremental decoder",
    "the cache",
    "a binary heap",
    "the scheduler",
    "a hash table",
    "the tokenizer",
    "a state machine",
    "the renderer",
    "a bloom filter",
    "the write-ahead log",
    "a trie",
)
_VERBS = (
    "keeps",
    "bounds",
    "reuses",
    "batches",
    "streams",
    "validates",
    "measures",
    "splits",
    "merges",
    "defers",
    "caches",
    "checks",
    "rewrites",
    "tracks",
    "coalesces",
)
_OBJECTS = (
    "every partial line",
    "the hot path",
    "each request",
    "the slowest consumer",
    "memory use",
    "the last complete block",
    "the worst case",
    "small inputs",
    "the tail",
    "network reads",
    "user-visible latency",
    "each frame",
    "the final result",
)
_ADVERBS = ("quietly", "predictably", "cheaply", "early", "carefully", "in linear time", "once")
_OPENERS = (
    "In practice,",
    "Notice that",
    "A useful rule:",
    "Surprisingly,",
    "As a result,",
    "On the other hand,",
    "For example,",
    "More precisely,",
    "In short,",
    "Crucially,",
)
_TAILS = (
    "which is what keeps the total work linear.",
    "so the result does not depend on how the input was split.",
    "and that is easy to check with a benchmark.",
    "which matters most when the input is large.",
    "so nothing already received is ever lost.",
    "and the same idea applies to ~~every~~ almost every streaming system.",
    "which is why the tests feed the input one byte at a time. 🧪",
)
_FILLER = (
    "data",
    "stream",
    "token",
    "window",
    "buffer",
    "frame",
    "block",
    "value",
    "signal",
    "answer",
    "result",
    "cursor",
    "record",
    "budget",
    "output",
    "reader",
    "writer",
    "event",
)
_CLOSING = (
    "That is all for now and we hope this long answer helps you test how a reader copes with "
    "many more tokens than a usual chat reply so thank you for reading it all the way to the "
    "very end of the stream"
)
_LANGUAGES = ("python", "javascript", "sql", "bash", "rust")


def long_answer_tokens(subject: str, tokens: int, seed: str) -> list[str]:
    """Exactly `tokens` token pieces of markdown about `subject`, the same for the same seed."""
    rng = random.Random(f"demo-long:{seed}")
    pieces: list[str] = []
    blocks = _blocks(rng, subject)
    while True:
        block = tokenize(next(blocks))
        if len(pieces) + len(block) > tokens:
            break
        pieces.extend(block)
    # Top up with sentences, then land on the exact count with one-piece words.
    while True:
        sentence = tokenize(_sentence(rng) + " ")
        if len(pieces) + len(sentence) > tokens - 2:
            break
        pieces.extend(sentence)
    pieces.extend(_closing(tokens - len(pieces)))
    return pieces


def _closing(count: int) -> list[str]:
    """A last sentence of exactly `count` pieces: every word in it is one piece."""
    if count <= 0:
        return []
    words = _CLOSING.split()
    out = [words[0]] + [" " + words[1 + i % (len(words) - 1)] for i in range(count - 2)]
    return [*out, "."][:count]


def _blocks(rng: random.Random, subject: str) -> Iterator[str]:
    subject = " ".join(subject.split()[:8]) or "streaming text"
    yield f"# A long answer about {subject}\n\n"
    yield _paragraph(rng, 4)
    section = 0
    while True:
        section += 1
        yield f"## {section}. {rng.choice(_SECTIONS)}\n\n"
        for _ in range(rng.randint(3, 6)):
            kind = rng.random()
            if kind < 0.40:
                yield _paragraph(rng, rng.randint(2, 6))
            elif kind < 0.55:
                yield _bullets(rng)
            elif kind < 0.80:
                yield _code(rng)
            elif kind < 0.90:
                yield _table(rng)
            else:
                yield _quote(rng)
        if rng.random() < 0.5:
            yield f"### {rng.choice(_SECTIONS)}, in detail\n\n"
            yield _paragraph(rng, rng.randint(3, 5))


def _sentence(rng: random.Random) -> str:
    concept = rng.choice(_CONCEPTS)
    text = (
        f"{rng.choice(_OPENERS)} {concept} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} "
        f"{rng.choice(_ADVERBS)}, {rng.choice(_TAILS)}"
    )
    if rng.random() < 0.2:
        text = text.replace(concept, f"**{concept}**", 1)
    elif rng.random() < 0.2:
        text += f" See `{rng.choice(_FILLER)}_{rng.randint(1, 99)}()` for details."
    return text


def _paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences)) + "\n\n"


def _bullets(rng: random.Random) -> str:
    ordered = rng.random() < 0.4
    lines = []
    for i in range(rng.randint(3, 7)):
        marker = f"{i + 1}." if ordered else "-"
        lines.append(f"{marker} {_sentence(rng)}")
        if rng.random() < 0.2:
            lines.append(f"   - {rng.choice(_CONCEPTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}")
    return "\n".join(lines) + "\n\n"


def _table(rng: random.Random) -> str:
    rows = ["| Approach | Time | Memory | Notes |", "|---|---:|---:|---|"]
    for _ in range(rng.randint(3, 8)):
        rows.append(
            f"| {rng.choice(_CONCEPTS)} | {rng.randint(1, 999)} µs | {rng.randint(1, 64)} MB "
            f"| {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} |"
        )
    return "\n".join(rows) + "\n\n"


def _quote(rng: random.Random) -> str:
    return f"> {_sentence(rng)}\n>\n> {_sentence(rng)}\n\n"


def _code(rng: random.Random) -> str:
    language = rng.choice(_LANGUAGES)
    body = {
        "python": _python,
        "javascript": _javascript,
        "sql": _sql,
        "bash": _bash,
        "rust": _rust,
    }[language](rng)
    return f"```{language}\n{body}```\n\n"


def _python(rng: random.Random) -> str:
    name = rng.choice(_FILLER).capitalize() + rng.choice(("Buffer", "Reader", "Index", "Queue"))
    lines = [
        "from __future__ import annotations",
        "",
        "",
        f"class {name}:",
        f'    """Keeps {rng.choice(_OBJECTS)} without copying it."""',
        "",
        f"    def __init__(self, limit: int = {rng.randint(16, 4096)}) -> None:",
        "        self.limit = limit",
        "        self.items: list[bytes] = []",
        "        self.size = 0",
    ]
    for _ in range(rng.randint(2, 6)):
        method = f"{rng.choice(_VERBS)}_{rng.choice(_FILLER)}"
        lines += [
            "",
            f"    def {method}(self, chunk: bytes) -> int:",
            f"        # {rng.choice(_OPENERS).lower()} {rng.choice(_CONCEPTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}",
            "        if self.size + len(chunk) > self.limit:",
            "            self.items.clear()",
            "            self.size = 0",
            "        self.items.append(chunk)",
            "        self.size += len(chunk)",
            f"        return self.size * {rng.randint(2, 9)} // {rng.randint(2, 9)}",
        ]
    return "\n".join(lines) + "\n"


def _javascript(rng: random.Random) -> str:
    name = rng.choice(_VERBS) + rng.choice(_FILLER).capitalize()
    lines = [
        f"export async function {name}(url, {{ signal }} = {{}}) {{",
        "  const response = await fetch(url, { signal });",
        "  const reader = response.body.getReader();",
        "  const decoder = new TextDecoder();",
        '  let buffer = "";',
    ]
    lines += [
        "  while (true) {",
        "    const { done, value } = await reader.read();",
        "    if (done) break;",
        "    buffer += decoder.decode(value, { stream: true });",
    ]
    for _ in range(rng.randint(1, 4)):
        lines += [
            f"    // {rng.choice(_CONCEPTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}",
            f"    if (buffer.length > {rng.randint(100, 9999)}) buffer = buffer.slice(-{rng.randint(10, 99)});",
        ]
    lines += ["  }", "  return buffer;", "}"]
    return "\n".join(lines) + "\n"


def _sql(rng: random.Random) -> str:
    table = rng.choice(_FILLER) + "s"
    columns = rng.sample(_FILLER, rng.randint(2, 5))
    lines = [
        f"SELECT {', '.join(columns)}, COUNT(*) AS n",
        f"FROM {table}",
        f"WHERE {columns[0]} IS NOT NULL",
        f"GROUP BY {', '.join(columns)}",
        "ORDER BY n DESC",
        f"LIMIT {rng.randint(5, 500)};",
    ]
    return "\n".join(lines) + "\n"


def _bash(rng: random.Random) -> str:
    lines = ["set -euo pipefail"]
    for _ in range(rng.randint(2, 5)):
        lines.append(
            f"curl -sN http://127.0.0.1:{rng.randint(1024, 65535)}/v1/{rng.choice(_FILLER)}s | head -n {rng.randint(1, 50)}"
        )
    return "\n".join(lines) + "\n"


def _rust(rng: random.Random) -> str:
    name = rng.choice(_FILLER)
    lines = [
        f"pub fn {name}_len(input: &[u8]) -> usize {{",
        "    let mut total = 0;",
        f"    for chunk in input.chunks({rng.randint(2, 64)}) {{",
        "        total += chunk.iter().filter(|b| **b == b'\\n').count();",
        "    }",
        "    total",
        "}",
    ]
    return "\n".join(lines) + "\n"
