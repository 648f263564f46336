"""Plain text for a terminal: what `show()` does outside a kernel.

Model output is untrusted here too: escape sequences in it could rewrite the terminal (move the
cursor, change the title, hide text), so control characters other than newline and tab are
dropped before anything is written. Output is throttled like the widgets, not written per token.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Optional, TextIO

from ..core import StreamState, formatting
from ..net import script_note

__all__ = ["TerminalPrinter", "printable"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` made safe for a terminal: without control characters other than newline and tab
    (so an escape sequence — OSC 52 writing the clipboard, a cursor move, a title — loses its
    ESC, BEL or C1 introducer and is shown as the harmless text it is) and without the bidi
    overrides that disguise text. Everything a recording, a log, a model or a server said goes
    through it on its way to a terminal (this printer, the CLI)."""
    return _CONTROL.sub("", text)


class TerminalPrinter:
    """Writes the answer as it grows, at most every `interval` seconds, then a short summary."""

    def __init__(
        self,
        state: StreamState,
        out: TextIO,
        *,
        interval: float = 0.05,
        redact: Callable[[str], str] = lambda text: text,
        clock: Callable[[], float] = time.monotonic,
        status: Optional[TextIO] = None,
    ) -> None:
        self._state = state
        self._out = out
        #: Where the wait before a retry is said (the CLI: stderr, so stdout stays the answer).
        self._status = status if status is not None else out
        self._interval = interval
        self._redact = redact
        self._clock = clock
        self._written = 0
        self._last = float("-inf")
        self._thinking_said = False
        self._retry_said = 0
        self._warned = 0

    def attach(self, state: StreamState) -> None:
        """Print `state` from now on: the next part of the answer printed so far (Continue)."""
        self._state = state
        self._warned = 0

    def notify(self) -> None:
        warnings = self._state.warnings
        if len(warnings) > self._warned:  # an offline stand-in, a malformed event: said as they come
            for warning in warnings[self._warned :]:
                self._status.write(f"({printable(self._redact(warning))})\n")
            self._warned = len(warnings)
            self._status.flush()
        retry = self._state.retry
        if retry is not None and retry.until is not None and retry.tries > self._retry_said:
            self._retry_said = retry.tries  # a countdown has no frames here: say it once per wait
            wait = max(0.0, retry.until - self._clock())
            self._status.write(
                printable(f"({retry.reason} — retrying in {wait:.0f} s, try {retry.tries + 1} of {retry.retries + 1})")
                + "\n"
            )
            self._status.flush()
        now = self._clock()
        if now - self._last >= self._interval:
            self._last = now
            self._write_new()

    def finish(self) -> None:
        """The rest of the answer, then how it ended, the sources and the usage."""
        state = self._state
        self._write_new()
        if self._written:
            self._out.write("\n")
        lines = []
        if state.status != "complete" or state.finish not in (None, "stop", "tool_calls"):
            lines.append(f"[{self._redact(state.message)}]")
        for call in state.tool_calls:
            lines.append(f"[tool call] {call.name or '(unnamed)'}({call.arguments})")
        for n, source in enumerate(state.citations, 1):
            lines.append(f"[{n}] {source.title or formatting.domain(source.url) or ''} {source.url}".rstrip())
        said = script_note(state)
        if said:  # after what happened, before the figures: where the answer came from
            lines.append(f"[{said}]")
        tokens, estimated = state.completion_tokens
        if tokens:
            about = "about " if estimated else ""
            parts = [formatting.STATUS_WORDS.get(state.phase, state.phase), f"{about}{formatting.count(tokens)} tokens"]
            if state.usage is not None and state.usage.prompt_tokens is not None:
                parts.append(f"prompt {formatting.count(state.usage.prompt_tokens)}")
            if state.usage is not None and state.usage.cost is not None:
                parts.append(formatting.cost(state.usage.cost))
            if state.tokens_per_second:
                parts.append(formatting.rate(state.tokens_per_second))
            if state.retry is not None and state.retry.tries > 1:
                took = state.retry.took(state)
                parts.append(f"after {state.retry.tries} tries" + (f" over {formatting.seconds(took)}" if took else ""))
            lines.append(f"[{' · '.join(parts)}]")
        for line in lines:
            self._out.write(printable(line) + "\n")
        self._out.flush()

    def _write_new(self) -> None:
        state = self._state
        if not state.text_length and state.reasoning_length and not self._thinking_said:
            self._thinking_said = True
            self._out.write("(thinking…)\n")
            self._out.flush()
        if state.text_length > self._written:
            self._out.write(printable(state.text[self._written :]))
            self._written = state.text_length
            self._out.flush()
