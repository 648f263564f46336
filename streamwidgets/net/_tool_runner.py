"""Running the tools a model asked for: each call checked, run, timed and turned into a result.

The feed loop (`_pipeline.Stream`) calls `run_calls` when a part ends asking for tools. Nothing
the model sends can crash it: a tool name it made up, arguments that are not JSON or do not fit
the schema (the field is named), a tool that raises (its words, redacted of the key), one that
outlasts `tool_timeout`, returns what JSON cannot hold (sent as `str()`) or far too much (cut to
`MAX_RESULT_CHARS`, with a note) — each becomes an error result the model reads and can recover
from, and the view shows. Parallel calls run concurrently; async tools are awaited on the loop,
plain functions run in a worker thread so that the kernel stays responsive.

A cancel (the view's button, `cancel_all()`) stops an async tool at its next `await` and stops
waiting for a thread. A thread itself cannot be stopped in Python: a plain function that was
cancelled or timed out runs on to its end in the background, and its result is dropped. In the
browser (Pyodide) there are no threads: a plain function runs on the loop, so the page waits for
it and `tool_timeout` is checked only when it returns.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional

import anyio
import anyio.from_thread
import anyio.lowlevel

from ..core import DECLINED, MAX_ARGUMENT_CHARS, Tool, ToolCall, ToolInputError, ToolResult, encode_result, scrub
from ..core.dialects import CallResult

__all__ = ["ToolLoop", "run_calls", "DEFAULT_MAX_STEPS", "DEFAULT_TOOL_TIMEOUT", "Confirm"]

#: Requests to the model in one answer, tool steps included; then the loop stops and says so.
DEFAULT_MAX_STEPS = 8
#: Seconds one call may run before it counts as failed (its result says it timed out).
DEFAULT_TOOL_TIMEOUT = 30.0

#: Asks the person whether to run a call: True to run it, False to skip it.
Confirm = Callable[[ToolCall], Awaitable[bool]]


@dataclass(frozen=True)
class ToolLoop:
    """How a stream runs the tools its request offers: at most `max_steps` requests to the model,
    `timeout` seconds per call, and `confirm` (a view's Run / Skip) before each call, if set."""

    max_steps: int = DEFAULT_MAX_STEPS
    timeout: float = DEFAULT_TOOL_TIMEOUT
    confirm: Optional[Confirm] = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_steps, int) or self.max_steps < 1:
            raise ValueError("max_steps is how many requests an answer may make in all, tool steps included: 1 or more")
        if not self.timeout > 0:
            raise ValueError("tool_timeout is seconds per tool call: more than 0")

    def asking(self, ask: Optional[Confirm]) -> ToolLoop:
        """This loop, asking `ask` (a view's Run / Skip) before each call: `confirm=True`.

        It needs someone to click: a sink with no view has nothing to ask (None), and asking for
        it there is an error rather than a silent yes or no.
        """
        if ask is None:
            raise ValueError(
                "confirm=True shows Run / Skip buttons, so it needs a notebook's view: use show() in a "
                "notebook (in a script, a terminal or headless, the tools run without asking; leave confirm off)"
            )
        return replace(self, confirm=ask)


async def run_calls(
    calls: Sequence[ToolCall],
    tools: Sequence[Tool],
    loop: ToolLoop,
    *,
    changed: Callable[[], None],
    redact: Callable[[str], str],
) -> list[CallResult]:
    """Run `calls` concurrently; each call's `result` says how it stands as it goes (`changed()`
    is called after each change); return what each dialect sends back, in the calls' order."""
    index = {tool.name: tool for tool in tools}
    for call in calls:
        call.result = ToolResult("waiting" if loop.confirm else "running")
    changed()
    async with anyio.create_task_group() as group:
        for call in calls:
            group.start_soon(_run_one, call, index, loop, changed, redact)
    out = []
    for i, call in enumerate(calls):
        result = call.result
        assert result is not None
        content = f"Error: {result.error}" if result.is_error else result.content
        arguments = call.arguments if call.arguments_length <= MAX_ARGUMENT_CHARS else "{}"
        out.append(CallResult(call.id or f"call_{i + 1}", call.name or "", arguments, content, result.is_error))
    return out


async def _run_one(
    call: ToolCall,
    index: Mapping[str, Tool],
    loop: ToolLoop,
    changed: Callable[[], None],
    redact: Callable[[str], str],
) -> None:
    result = call.result
    assert result is not None

    def fail(words: str) -> None:
        result.status, result.error = "error", words
        changed()

    tool = index.get(call.name or "")
    if tool is None:
        offered = ", ".join(sorted(index)) or "none"
        return fail(f"there is no tool named {call.name!r} (the tools are: {offered})")
    if call.arguments_length > MAX_ARGUMENT_CHARS:
        return fail(
            f"the arguments are {call.arguments_length:,} characters long, more than the {MAX_ARGUMENT_CHARS:,} "
            "a tool takes; they were not read"
        )
    try:
        kwargs = tool.validate(call.arguments)
    except ToolInputError as exc:
        return fail(str(exc))
    except (RecursionError, MemoryError):
        return fail("the arguments are nested too deeply to read")
    result.received = kwargs
    try:
        if loop.confirm is not None:
            result.status = "waiting"
            changed()
            if not await loop.confirm(call):
                result.status, result.content = "declined", DECLINED
                changed()
                return
            result.status = "running"
            changed()
        started = time.monotonic()
        try:
            with anyio.fail_after(loop.timeout):
                value = await _call(tool, kwargs)
        except TimeoutError:
            result.seconds = time.monotonic() - started
            return fail(f"the tool did not finish within {loop.timeout:g} s (tool_timeout=)")
        except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):
            raise  # an interrupt and a cancel keep their meaning
        except BaseException as exc:  # SystemExit too (argparse exits on bad arguments): never the kernel's end
            result.seconds = time.monotonic() - started
            return fail(scrub(redact(_words(exc))))
        result.seconds = time.monotonic() - started
        try:
            result.content, result.note = encode_result(value)
        except Exception as exc:  # a result too deep to encode, or whose __str__ raises
            return fail(scrub(redact(f"its result could not be read ({_words(exc)})")))
        result.content = scrub(redact(result.content))
        result.status = "done"
        changed()
    except anyio.get_cancelled_exc_class():
        result.status, result.error = "cancelled", "cancelled before it finished"
        changed()
        raise


async def _in_thread(function: Callable[[], Any], name: str) -> Any:
    """`function()` in a thread of its own, started now: `tool_timeout` counts the tool's own time,
    never a wait for a pool's free thread, and a call abandoned at its timeout (a thread cannot be
    stopped) holds no pool's place for the calls after it."""
    done = anyio.Event()
    token = anyio.lowlevel.current_token()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = function()
        except BaseException as exc:  # handed to the awaiting task, which decides
            box["error"] = exc
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=work, name=f"streamwidgets tool {name}", daemon=True).start()
    await done.wait()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _words(exc: BaseException) -> str:
    """What a tool's exception says, whatever it is made of (a `__str__` may raise, or recurse)."""
    name = type(exc).__name__
    if isinstance(exc, SystemExit):
        return (
            f"the tool tried to exit the program (SystemExit {exc.code!r}); a tool returns a value or raises an error"
        )
    try:
        text = str(exc)
    except Exception:
        text = "(its message could not be read)"
    return f"{name}: {text}" if text else name


async def _call(tool: Tool, kwargs: dict[str, Any]) -> Any:
    """An async tool awaited here; a plain one in a thread of its own (a cancel stops the wait)."""
    if tool.is_async:
        return await tool.function(**kwargs)
    if sys.platform == "emscripten":  # no threads in the browser
        value = tool.function(**kwargs)
        await anyio.lowlevel.checkpoint()  # where an outlasted `tool_timeout` is said
    else:
        value = await _in_thread(functools.partial(tool.function, **kwargs), tool.name)
    if inspect.isawaitable(value):  # a plain function that hands back a coroutine (a partial of an async def)
        value = await value
    return value
