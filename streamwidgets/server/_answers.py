"""The texts the demo model says: short, correct answers to what a notebook tutorial asks.

A teaching demo shows these to a room, so they are written to be worth reading: each one answers
its question properly, uses the markdown a chat model would use, and some carry accented letters
and emoji so that every client's UTF-8 handling is exercised. The reasoning texts are what a
model would plausibly think before writing the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Answer",
    "SearchAnswer",
    "CitedPassage",
    "ANSWERS",
    "SEARCH_ANSWERS",
    "MARKDOWN_SHOWCASE",
    "XSS_TEXT",
    "XSS_REASONING",
    "XSS_SOURCES",
    "XSS_TOOL_NAME",
    "XSS_TOOL_ARGUMENTS",
    "TOOL_INTRO",
    "TOOL_REASONING",
    "CITIES",
]


@dataclass(frozen=True)
class Answer:
    """One scripted answer; `keywords` are matched against the last user message."""

    key: str
    keywords: tuple[str, ...]
    text: str
    reasoning: str


@dataclass(frozen=True)
class CitedPassage:
    """A stretch of a searched answer and the sources (indices into `sources`) it cites."""

    text: str
    cites: tuple[int, ...] = ()


@dataclass(frozen=True)
class SearchAnswer:
    """An answer written from web results: `[n]` markers in the text point at `sources[n-1]`."""

    key: str
    keywords: tuple[str, ...]
    query: str
    sources: tuple[tuple[str, str], ...]  # (title, url)
    passages: tuple[CitedPassage, ...]


ANSWERS: tuple[Answer, ...] = (
    Answer(
        key="sse",
        keywords=("server-sent", "server sent", "sse", "eventsource", "event stream", "event-stream"),
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
    Answer(
        key="streaming",
        keywords=("stream", "token", "chunk", "llm", "latency", "time to first", "typing"),
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
    Answer(
        key="asyncio",
        keywords=("async", "await", "asyncio", "coroutine", "event loop", "concurren"),
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
    Answer(
        key="binary_search",
        keywords=("binary search", "bisect", "sorted list", "sorted array", "search algorithm"),
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
    Answer(
        key="water_cycle",
        keywords=("water cycle", "rain", "evaporat", "condens", "precipitation", "cloud"),
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
    Answer(
        key="collections",
        keywords=(
            "tuple",
            "dict",
            "list vs",
            "lists and",
            "compare",
            "comparison",
            "difference between",
            "data structure",
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
    Answer(
        key="photosynthesis",
        keywords=("photosynth", "chlorophyll", "plant", "leaf", "leaves", "sunlight"),
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
    Answer(
        key="big_o",
        keywords=("big-o", "big o", "complexity", "o(n", "o(1", "o(log", "asymptotic", "algorithm"),
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
    Answer(
        key="recursion",
        keywords=("recurs", "fibonacci", "factorial", "base case"),
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
    Answer(
        key="jupyter",
        keywords=("jupyter", "notebook", "kernel", "widget", "ipywidgets", "cell"),
        text="""A few habits make Jupyter notebooks much more pleasant to work with. 📓

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
        reasoning="""The user asks about Jupyter. The most valuable advice is about hidden state and run order, so I will lead with Restart and Run All. Then a short shortcut table, a few magics including %pip, and a small ipywidgets example because widgets are often the next thing people want. Finish with the note about background tasks keeping the UI responsive.""",
    ),
    Answer(
        key="unicode",
        keywords=("unicode", "utf-8", "utf8", "emoji", "encoding", "character", "accent"),
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
    Answer(
        key="hello",
        keywords=("hello", "hi", "hey", "who are you", "what are you", "good morning", "bonjour", "hola"),
        text="""Hello! 👋 I'm **demo**, the offline model built into streamwidgets.

I don't call any real AI service: everything I say is scripted and streamed from a small server running on your own machine, so this notebook works without an API key or an internet connection — handy for classes, workshops and Binder.

Here are some things you can try:

- Ask me about *server-sent events*, *Python async*, *binary search*, *Big-O*, *photosynthesis* or *the water cycle*.
- Pick a different model to see other behaviour:
  - `demo-reasoning` — thinks out loud before answering
  - `demo-search` — cites web sources
  - `demo-tools` — calls two tools in parallel
  - `demo-markdown` — shows off tables, code and task lists
  - `demo-slow`, `demo-stall`, `demo-error` — what a bad day looks like
- Press **Cancel** while I'm writing: the connection closes and I stop immediately.

Bonne découverte ! ✨
""",
        reasoning="""This is a greeting. I should introduce myself honestly as the offline demo model, explain that the answers are scripted and local, and suggest what to try next: topics I know and the other demo models with their behaviours. Keep it friendly and short.""",
    ),
)


MARKDOWN_SHOWCASE = """# Markdown showcase ✨

This answer uses every common piece of chat-model markdown, so you can check that it all renders while it streams.

## Lists

- A bullet with **bold**, *italic*, ***both***, `inline code` and ~~strikethrough~~
- A [link to the Python docs](https://docs.python.org/3/)
  - A nested bullet
  - Another one, with a footnote-style marker [1]

1. First step
2. Second step
3. Third step

### Task list

- [x] Stream the answer
- [x] Render markdown incrementally
- [ ] Click *Cancel* to see the connection close

## A table

| Language | Typing | First released | Known for |
|---|---|:---:|---|
| Python | dynamic | 1991 | readability |
| Rust | static | 2015 | memory safety |
| JavaScript | dynamic | 1995 | the browser |
| Haskell | static | 1990 | purity |

## Code in two languages

```python
from dataclasses import dataclass

@dataclass
class Point:
    x: float
    y: float

    def norm(self) -> float:
        return (self.x ** 2 + self.y ** 2) ** 0.5

print(Point(3, 4).norm())  # 5.0
```

```javascript
const points = [{ x: 3, y: 4 }, { x: 6, y: 8 }];
const norms = points.map(({ x, y }) => Math.hypot(x, y));
console.log(norms); // [5, 10]
```

## A blockquote

> Simple things should be simple, complex things should be possible.
>
> — Alan Kay

---

Unicode check: naïve café, smörgåsbord, 東京, Ελληνικά, emoji 🚀🎉 and math: x² + y² = r², ∑ᵢ aᵢ ≤ ∞.
"""


# Every payload below would set `window.__xss = 1` if a renderer executed it, so that a
# browser test can check the marker after rendering this answer.
XSS_TEXT = """Here are some strings that a careless renderer would execute. None of them should run.

1. A script tag: <script>window.__xss = 1</script>
2. An image with an error handler: <img src=x onerror="window.__xss=1">
3. An SVG with an onload handler: <svg onload="window.__xss=1"></svg>
4. A markdown link to a script URL: [click me](javascript:window.__xss=1)
5. An entity-encoded script URL: [innocent link](&#106;avascript:window.__xss=1)
6. A tab inside the scheme: <a href="jav&#x09;ascript:window.__xss=1">tab trick</a>
7. An autolink: <javascript:window.__xss=1>
8. An image whose URL breaks out of its attribute: ![x](x" onerror="window.__xss=1)
9. An iframe: <iframe src="javascript:window.__xss=1"></iframe>
10. A details element that toggles itself: <details open ontoggle="window.__xss=1"><summary>open me</summary></details>
11. Nested markup that some sanitizers re-parse: <math><mtext><table><mglyph><style><img src=x onerror="window.__xss=1">
12. Already-escaped text must stay text: &lt;script&gt;window.__xss=1&lt;/script&gt;
13. Inside code it is just text: `<img src=x onerror="window.__xss=1">`

```html
<script>window.__xss = 1</script>
```

If you can read all thirteen lines above as plain text, the renderer is safe. ✅ [1][2][3]
"""

XSS_REASONING = """Checking the renderer with hostile input: <img src=x onerror="window.__xss=1"> and <script>window.__xss=1</script> must appear as text in the reasoning pane too."""

XSS_SOURCES: tuple[tuple[str, str], ...] = (
    ('"><img src=x onerror="window.__xss=1">', "javascript:window.__xss=1"),
    ("<script>window.__xss=1</script>", 'https://example.com/"><script>window.__xss=1</script>'),
    ("data URL <svg onload=window.__xss=1>", "data:text/html,<script>window.__xss=1</script>"),
)

XSS_TOOL_NAME = '<img src=x onerror="window.__xss=1">'
XSS_TOOL_ARGUMENTS = (
    '{"html": "<script>window.__xss=1</script>", "url": "javascript:window.__xss=1", '
    '"note": "\\"><svg onload=window.__xss=1>"}'
)


TOOL_INTRO = "I'll check the current weather in {first} and {second} at the same time."
TOOL_REASONING = """The user wants the weather in two places. I have a weather tool, and the two lookups are independent, so I can call it twice in parallel: once for {first} and once for {second}. I'll ask for Celsius."""

CITIES = (
    "Paris",
    "Tokyo",
    "London",
    "Berlin",
    "Madrid",
    "Rome",
    "Lisbon",
    "Amsterdam",
    "Vienna",
    "Prague",
    "Stockholm",
    "Oslo",
    "Helsinki",
    "Dublin",
    "Zurich",
    "New York",
    "Chicago",
    "San Francisco",
    "Toronto",
    "Montréal",
    "Mexico City",
    "São Paulo",
    "Buenos Aires",
    "Sydney",
    "Melbourne",
    "Auckland",
    "Singapore",
    "Seoul",
    "Beijing",
    "Mumbai",
    "Delhi",
    "Cairo",
    "Nairobi",
    "Lagos",
    "Cape Town",
    "Istanbul",
    "Athens",
    "Warsaw",
    "Kyiv",
    "Reykjavík",
)


SEARCH_ANSWERS: tuple[SearchAnswer, ...] = (
    SearchAnswer(
        key="sse",
        keywords=("server-sent", "sse", "eventsource", "event stream", "stream", "browser"),
        query="server-sent events EventSource browser support",
        sources=(
            (
                "HTML Standard — 9.2 Server-sent events",
                "https://html.spec.whatwg.org/multipage/server-sent-events.html",
            ),
            (
                "Using server-sent events - Web APIs | MDN",
                "https://developer.mozilla.org/en-US/docs/Web/API/Server-sent_events/Using_server-sent_events",
            ),
            ("Server-sent events - Wikipedia", "https://en.wikipedia.org/wiki/Server-sent_events"),
            ("Server Sent Events — javascript.info", "https://javascript.info/server-sent-events"),
        ),
        passages=(
            CitedPassage(
                "Server-sent events are a web standard for pushing messages from a server to a browser over a single long-lived HTTP response. "
            ),
            CitedPassage(
                "The format and the parsing rules are defined in the HTML Living Standard, which also specifies the `EventSource` interface that browsers expose [1]. ",
                (0,),
            ),
            CitedPassage(
                "A stream is served as `text/event-stream`; each event is a group of `data:` lines (optionally with `event:` and `id:`) ended by a blank line, and lines starting with a colon are comments [2]. ",
                (1,),
            ),
            CitedPassage(
                "Every current major browser supports `EventSource`, and the browser reconnects automatically after a dropped connection, sending the last event id back in a `Last-Event-ID` header [3][4]. ",
                (2, 3),
            ),
            CitedPassage(
                "\n\nFor LLM APIs the same wire format is read with a streaming HTTP client instead of `EventSource`, because `EventSource` can only send GET requests without a body [2]."
            ),
        ),
    ),
    SearchAnswer(
        key="photosynthesis",
        keywords=("photosynth", "plant", "chlorophyll", "oxygen", "biology", "leaf", "water", "rain", "climate"),
        query="how does photosynthesis work light reactions Calvin cycle",
        sources=(
            ("Photosynthesis - Wikipedia", "https://en.wikipedia.org/wiki/Photosynthesis"),
            (
                "photosynthesis | Definition, Formula, Process, Diagram | Britannica",
                "https://www.britannica.com/science/photosynthesis",
            ),
            (
                "Photosynthesis (article) | Khan Academy",
                "https://www.khanacademy.org/science/biology/photosynthesis-in-plants",
            ),
            (
                "Photosynthesis - National Geographic Education",
                "https://education.nationalgeographic.org/resource/photosynthesis/",
            ),
            (
                "The Calvin cycle (article) | Khan Academy",
                "https://www.khanacademy.org/science/biology/photosynthesis-in-plants/the-calvin-cycle-reactions/a/calvin-cycle",
            ),
        ),
        passages=(
            CitedPassage(
                "Photosynthesis is the process by which plants, algae and cyanobacteria convert light energy into chemical energy stored in sugars [1]. ",
                (0,),
            ),
            CitedPassage(
                "It takes place in chloroplasts and runs in two stages: the light-dependent reactions, which split water and release oxygen, and the light-independent Calvin cycle, which fixes carbon dioxide [2][3]. ",
                (1, 2),
            ),
            CitedPassage(
                "In the Calvin cycle the enzyme RuBisCO attaches CO₂ to a five-carbon sugar, and the ATP and NADPH made in the light reactions power the steps that produce glucose precursors [5]. ",
                (4,),
            ),
            CitedPassage(
                "Almost all of the oxygen in Earth's atmosphere was produced this way, and photosynthesis is the base of nearly every food chain [4]. ",
                (3,),
            ),
        ),
    ),
    SearchAnswer(
        key="asyncio",
        keywords=("async", "await", "asyncio", "python", "coroutine", "code", "programming"),
        query="python asyncio tutorial async await event loop",
        sources=(
            ("asyncio — Asynchronous I/O — Python 3 documentation", "https://docs.python.org/3/library/asyncio.html"),
            ("PEP 492 – Coroutines with async and await syntax", "https://peps.python.org/pep-0492/"),
            ("Coroutines and Tasks — Python 3 documentation", "https://docs.python.org/3/library/asyncio-task.html"),
            ("Python's asyncio: A Hands-On Walkthrough – Real Python", "https://realpython.com/async-io-python/"),
        ),
        passages=(
            CitedPassage(
                "`asyncio` is Python's standard library for writing concurrent code with the `async`/`await` syntax; it is used for network servers, database drivers and other I/O-bound work [1]. ",
                (0,),
            ),
            CitedPassage(
                "The `async def` and `await` keywords were introduced by PEP 492 in Python 3.5 to make coroutines a first-class language feature [2]. ",
                (1,),
            ),
            CitedPassage(
                "To run coroutines concurrently you wrap them in tasks, for example with `asyncio.create_task()` or `asyncio.gather()`, and the event loop switches between them whenever one of them awaits [3]. ",
                (2,),
            ),
            CitedPassage(
                "A common beginner mistake is calling blocking functions such as `time.sleep()` inside a coroutine, which stalls every task on the loop [4].",
                (3,),
            ),
        ),
    ),
)
