"""The texts of the scenarios that are not lessons: the markdown showcase, the hostile payloads,
the tool calls, and the answers written from (scripted) web search results.

The lessons, what `demo` answers a question with, are in `_lessons`. These texts are shown to a
room too, so they are written to be worth reading; some carry accented letters and emoji so that
every client's UTF-8 handling is exercised.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "SearchAnswer",
    "CitedPassage",
    "SEARCH_ANSWERS",
    "MARKDOWN_SHOWCASE",
    "XSS_TEXT",
    "XSS_REASONING",
    "XSS_SOURCES",
    "XSS_TOOL_NAME",
    "XSS_TOOL_ARGUMENTS",
    "TOOLS_REASONING",
    "TOOLS_NONE",
    "TOOLS_DECLINED",
    "CITIES",
]


@dataclass(frozen=True)
class CitedPassage:
    """A stretch of a searched answer and the sources (indices into `sources`) it cites."""

    text: str
    cites: tuple[int, ...] = ()


@dataclass(frozen=True)
class SearchAnswer:
    """An answer written from web results: `[n]` markers in the text point at `sources[n-1]`.

    `title` is what the `X-Demo-Script` header says; `keywords` are matched as a lesson's are
    (`_lessons.score`), and a question that matches none gets one chosen by a stable hash.
    """

    title: str
    keywords: tuple[str, ...]
    query: str
    sources: tuple[tuple[str, str], ...]  # (title, url)
    passages: tuple[CitedPassage, ...]


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


TOOLS_REASONING = """The user asks: "{question}" I have {count} tool{s} ({offered}). I call the ones that fit, together when they do not depend on each other, with arguments taken from the question's words and kept to each schema."""
TOOLS_NONE = "No tools came with this request, so I have nothing to call: I answer from what I know. (Declare functions in `tools` and I will call them.)"
TOOLS_DECLINED = "The request says `tool_choice: none`, so I call none of the tools and answer from what I know."

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
        title="server-sent events (web search)",
        keywords=("server sent*", "sse", "eventsource*", "event stream*", "stream*", "browser*"),
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
        title="photosynthesis (web search)",
        keywords=(
            "photosynth*",
            "plant*",
            "chlorophyll*",
            "oxygen*",
            "biology*",
            "leaf*",
        ),
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
        title="Python asyncio (web search)",
        keywords=("async*", "await*", "asyncio*", "python*", "coroutine*", "code*", "programming*"),
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
