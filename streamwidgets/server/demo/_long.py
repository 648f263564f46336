"""The `demo-long` answer: a real tutorial on Python's asyncio, as long as asked for.

A long answer is what shows whether a client's parsing and rendering stay linear, so the text
mixes every block a renderer meets (headings, paragraphs, lists, tables, quotes and fenced code
in several languages). It is also read by people in class, so it is a tutorial worth reading:
written out below, section by section. Longer answers than one pass go on with the sections in a
new order (picked by the seed), each pass under its own heading, and end on whole sentences from
a list of tips; the count of token pieces is exact. The same prompt and seed always give the
same text, made a paragraph at a time as it is streamed.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from ._tokens import MadePieces, Pieces, tokenize

__all__ = ["long_answer_tokens"]

_INTRO = """\
# Python's asyncio, from the first coroutine to a streaming client

*The offline demo answers every long question with this tutorial. You asked: “{subject}”.*

Most programs spend their time waiting: for a server to answer, for a file to arrive, for a user
to click. `asyncio` lets one thread wait for many things at once. Instead of blocking while a
socket is silent, a coroutine says "wake me when there is data" and hands control back to the
**event loop**, which runs something else in the meantime. This tutorial builds that idea up one
step at a time and ends with a client that streams a language model's answer token by token —
the kind of program this very answer was sent by.

"""

_SECTIONS = (
    """\
## Coroutines: functions that can pause

A function defined with `async def` is a *coroutine function*. Calling it does not run its body;
it returns a coroutine object, a paused computation that the event loop can drive. Inside it,
`await` marks the places where it may pause.

```python
import asyncio


async def greet(name: str, delay: float) -> str:
    await asyncio.sleep(delay)  # pause here; the loop runs other work meanwhile
    return f"Hello, {name}!"


async def main() -> None:
    message = await greet("Ada", 0.5)
    print(message)


asyncio.run(main())
```

`asyncio.run()` creates an event loop, runs `main()` until it finishes, and closes the loop. You
call it once, at the top of a script. In a Jupyter notebook a loop is already running, so you
write `await main()` directly in a cell instead.

""",
    """\
## The event loop, in one picture

The loop keeps a queue of things that are ready to run and a list of things that are waiting.
Each turn, it runs every ready callback until that callback pauses at an `await`, then asks the
operating system which sockets and timers have become ready, and moves them to the queue.

1. Run everything that is ready, one at a time, each until its next `await`.
2. Ask the operating system (with `select`, `epoll` or `kqueue`) what happened in the meantime.
3. Wake the coroutines whose data arrived or whose timer expired.
4. Go back to step 1.

> Nothing runs in parallel here. Concurrency comes from taking turns quickly, and it only works
> while every turn is short. One coroutine that computes for a second freezes all the others for
> that second.

This is why a slow loop in a notebook makes every widget feel stuck: the widgets, the kernel's
messages and your streams all share one loop.

""",
    """\
## Running things concurrently with tasks

Awaiting coroutines one after another runs them one after another. To let them overlap, wrap them
in **tasks**. A task starts running at the loop's next turn and keeps going in the background
until it finishes or is cancelled.

```python
import asyncio
import time


async def fetch(name: str, seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"{name} done after {seconds} s"


async def main() -> None:
    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(fetch(f"job {i}", 1.0)) for i in range(3)]
    print([task.result() for task in tasks])
    print(f"took {time.perf_counter() - started:.1f} s")  # about 1 s, not 3


asyncio.run(main())
```

`TaskGroup` (Python 3.11 and later) waits for every task it made, and if one fails it cancels
the others and raises the error. Older code uses `asyncio.gather()`, which does much the same but
leaves the other tasks running when one fails unless you ask it not to.

| Tool | Waits for | When one fails |
|---|---|---|
| `await coro` | that one coroutine | the error is raised right there |
| `asyncio.gather(*coros)` | all of them | raises the first error; the rest keep running |
| `asyncio.TaskGroup()` | all of them | cancels the rest, raises every error together |
| `asyncio.wait(tasks, timeout=…)` | some or all, you choose | nothing is raised; you inspect the tasks |

""",
    """\
## Timeouts and cancellation

Any task can be cancelled. Cancelling raises `asyncio.CancelledError` inside it at the `await`
where it is paused, so `finally` blocks and `async with` exits still run: connections get closed
and files get flushed. That is what makes a **Cancel** button cheap and safe.

```python
import asyncio


async def slow_answer() -> str:
    try:
        await asyncio.sleep(10)
        return "finished"
    finally:
        print("cleaning up")  # runs on cancel too


async def main() -> None:
    try:
        async with asyncio.timeout(1.0):
            print(await slow_answer())
    except TimeoutError:
        print("gave up after 1 s")


asyncio.run(main())
```

A few rules keep cancellation working:

- Do not swallow `CancelledError`. If you catch it to clean up, raise it again.
- Keep a reference to every task you create. The loop only holds a weak reference, and a task
  that nothing refers to can be garbage-collected before it finishes.
- Put timeouts around every network call. A server that stops sending without closing the
  connection is far more common than one that fails loudly.

""",
    """\
## Streaming: reading an answer while it is written

A language model writes its answer one token at a time, and providers send each token as soon as
it exists, as **server-sent events**: a long HTTP response made of small text blocks that each
start with `data:` and end with a blank line. A client reads the response line by line and acts
on each event as it arrives.

```python
import json

import httpx


async def stream_answer(url: str, prompt: str) -> str:
    body = {"model": "demo", "stream": True, "messages": [{"role": "user", "content": prompt}]}
    answer = []
    async with httpx.AsyncClient(timeout=30) as client:
        async with client.stream("POST", url, json=body) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue  # comments, blank lines, other fields
                data = line[len("data:"):].strip()
                if data == "[DONE]":
                    break
                delta = json.loads(data)["choices"][0]["delta"].get("content") or ""
                answer.append(delta)
                print(delta, end="", flush=True)
    return "".join(answer)
```

Each `await` in that loop is a chance for the event loop to do something else: redraw a widget,
handle a click on Cancel, or read another stream. Three answers streamed side by side are three
tasks running this function.

""",
    """\
## What can go wrong, and what to do about it

A stream has more ways to end than "it worked". A careful client tells them apart and keeps the
part of the answer that did arrive.

| What happened | What the client sees | A good reaction |
|---|---|---|
| The model finished | a final event, then `[DONE]` | show the answer as complete |
| The token limit was reached | `finish_reason: "length"` | offer to continue the answer |
| The connection dropped | the body ends without `[DONE]` | keep the text, say it is incomplete |
| The server went silent | no bytes for a long time | time out, keep the text, say why |
| The provider refused the request | an HTTP error with a JSON body | show the provider's own message |
| The user pressed Cancel | `CancelledError` in the task | close the connection, keep the text |

> The most useful habit in streaming code: every way out of the loop keeps what was received
> and says, in plain words, why the stream stopped.

""",
    """\
## Keeping the loop responsive

The event loop can only take turns if every turn is short. Three kinds of work break that rule.

**Blocking calls.** `time.sleep()`, `requests.get()` or a slow database driver stop the whole
loop. Use their async versions (`asyncio.sleep`, `httpx.AsyncClient`), or push them to a thread:

```python
import asyncio
import hashlib


def checksum(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


async def main() -> None:
    digest = await asyncio.to_thread(checksum, "big-file.bin")  # the loop stays free
    print(digest)
```

**Heavy computation.** Rendering a long markdown answer from scratch on every token is quadratic:
the hundredth token re-renders ninety-nine old ones. Render what is new and keep what is done.

**Too many small messages.** Sending a widget update for every token floods the browser. Batch
updates into frames, twenty or so a second, and send only what changed since the last frame.

""",
    """\
## Queues: connecting producers and consumers

When one part of a program produces items and another consumes them, an `asyncio.Queue` sits
between them. A bounded queue also gives you **back-pressure**: a producer that runs ahead waits
at `put()` until the consumer catches up, so memory use stays flat.

```python
import asyncio


async def producer(queue: asyncio.Queue[str]) -> None:
    for word in "streams are easier to reason about with a queue".split():
        await queue.put(word)  # waits while the queue is full
        await asyncio.sleep(0.05)
    await queue.put("")  # an empty string says: no more items


async def consumer(queue: asyncio.Queue[str]) -> None:
    while (word := await queue.get()):
        print(word.upper())


async def main() -> None:
    queue: asyncio.Queue[str] = asyncio.Queue(maxsize=4)
    async with asyncio.TaskGroup() as group:
        group.create_task(producer(queue))
        group.create_task(consumer(queue))


asyncio.run(main())
```

""",
    """\
## Testing asynchronous code

Asynchronous code is ordinary code with pauses in it, and it tests the same way, with two extra
habits.

- **Use a real server on `127.0.0.1`.** A tiny local server that sends a scripted stream exercises
  the real sockets, timeouts and chunking; a mocked client only tests your mock.
- **Feed input in awkward pieces.** Split the same stream into one-byte reads and into large
  reads; the result must be identical. Most parsing bugs live at chunk boundaries.
- **Control time.** Replace `asyncio.sleep` with a fake clock when a test is about timing, so
  that it runs in milliseconds and never depends on how busy the machine is.

```bash
python -m pytest -q tests/test_stream.py
python -X dev -W error::RuntimeWarning -m pytest tests/  # a never-awaited coroutine fails the run
```

The `-X dev` flag turns on asyncio's debug mode, which reports coroutines that were never awaited
and callbacks that took too long.

""",
    """\
## Debugging a stuck program

When an async program hangs, the question is always *which await is it stuck on?*

1. Turn on debug mode (`PYTHONASYNCIODEBUG=1` or `asyncio.run(main(), debug=True)`): the loop
   logs every callback slower than 100 ms, with where it came from.
2. List what is pending: `for task in asyncio.all_tasks(): task.print_stack()` shows the line
   each task is paused on.
3. Look for a missing timeout. A task paused on a read from a silent server waits forever.
4. Look for a missing `await`. Calling `fetch()` without `await` creates a coroutine and drops it;
   Python warns "coroutine was never awaited", and nothing happens.

> If the whole kernel feels frozen, the loop is busy, not waiting. Look for a long computation or
> a blocking call, not for a slow network.

""",
    """\
## Where to go from here

You now have the pieces behind every streaming client: coroutines that pause, an event loop that
takes turns, tasks that run side by side and can be cancelled, timeouts on every network call,
and a parser that reads events as they arrive. A good next exercise is to stream two answers at
once, show them next to each other, and add a Cancel button to each; then pull the network cable
halfway through and check that each answer keeps its text and says why it stopped.

- The standard library documentation of `asyncio` has a page on *developing with asyncio* that is
  worth reading twice.
- The HTTP library `httpx` streams responses with `client.stream()`, as in the example above.
- The server-sent events format is defined in the HTML standard; it fits on one page.

""",
)

#: Whole sentences that close an answer longer than the sections fill, one tip each.
_TIPS = (
    "Give every network call a timeout.",
    "Keep a reference to every task you create.",
    "Never block the event loop with a slow call.",
    "Cancel a task instead of abandoning it.",
    "Keep the partial answer when a stream fails.",
    "Say why a stream stopped, in plain words.",
    "Render only what changed since the last frame.",
    "Test with a real server on your own machine.",
    "Split test input into awkward pieces.",
    "Use a bounded queue to keep memory flat.",
)
_CLOSING = (
    "That is the end of this long answer, and thank you for reading all of it, or for scrolling "
    "this far to see how your notebook copes with a long stream"
)


def long_answer_tokens(subject: str, tokens: int, seed: str) -> Pieces:
    """Exactly `tokens` token pieces of the tutorial, the same for the same subject and seed.

    Lazy: the pieces are made a paragraph at a time while they are written, so a million of
    them cost no more memory than a hundred.
    """
    return MadePieces(lambda: _long_pieces(subject, tokens, seed), max(0, tokens))


def _long_pieces(subject: str, tokens: int, seed: str) -> Iterator[str]:
    rng = random.Random(f"demo-long:{seed}")
    made = 0
    for text in _blocks(rng, subject):
        block = tokenize(text)
        if made + len(block) > tokens:
            break
        made += len(block)
        yield from block
    # Top up with whole tips (again, if need be), then land on the exact count with one-piece words.
    for tip in itertools.cycle(rng.sample(_TIPS, len(_TIPS))):
        sentence = tokenize(tip + " ")
        if made + len(sentence) > tokens - 2:
            break
        made += len(sentence)
        yield from sentence
    yield from _closing(tokens - made)


def _closing(count: int) -> list[str]:
    """A last sentence of exactly `count` pieces: every word in it is one piece."""
    if count <= 0:
        return []
    words = _CLOSING.replace(",", "").split()
    out = [words[0]] + [" " + words[1 + i % (len(words) - 1)] for i in range(count - 2)]
    return [*out, "."][:count]


def _blocks(rng: random.Random, subject: str) -> Iterator[str]:
    """The introduction, then each section, paragraph by paragraph; then the sections again in a
    new order, each pass under a heading of its own."""
    subject = " ".join(subject.split()[:12]) or "asyncio"
    yield from _paragraphs(_INTRO.format(subject=subject.replace("*", "").replace("`", "")))
    order = list(_SECTIONS)
    passes = 1
    while True:
        for section in order:
            yield from _paragraphs(section)
        passes += 1
        rng.shuffle(order)
        yield f"---\n\n# Reading it again, pass {passes}\n\nThe same sections once more, in a new order.\n\n"


def _paragraphs(text: str) -> Iterator[str]:
    """Blocks separated by blank lines outside code fences, each with its blank line."""
    block: list[str] = []
    fenced = False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        block.append(line)
        if not fenced and line == "\n":
            yield "".join(block)
            block = []
    if block:
        yield "".join(block)
