"""The tool-calls pane: a card per call — its name, its arguments, and, when the stream runs its
tools (`tools=`), what became of it — and the Run / Skip questions of `confirm=True`.

While a call streams its arguments are shown raw, as they arrive (half a JSON object does not
parse). Once the call is complete they are pretty-printed — or, when they are not valid JSON (the
stream was cut, or the model wrote bad JSON), shown exactly as received with a note saying so.
A call that ran shows its result (pretty JSON when it is JSON, cut for the page when long) and
the time it took, or its error; the cards of every tool step stay, so the pane is the timeline of
the calls above the answer they led to. Everything in a card came from the model or a tool, and
is escaped.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import ipywidgets as w

from ..core import StreamState, ToolCall, ToolResult, formatting
from ..markdown import escape_html
from ._sync import Parts, closed, opened, set_traits, visible_classes
from ._traffic import NOTHING, Cost

__all__ = [
    "ToolCallsPane",
    "tool_calls_html",
    "tool_calls_text",
    "format_arguments",
    "shown_calls",
    "RESULT_SHOWN_CHARS",
    "CSS",
]

#: The pane's rules in the view's stylesheet (`_sheet.stylesheet`), with why in comments.
CSS = """
.sw-tool { margin: 2px 0 6px 0; }
.sw-tool-name { font-family: var(--jp-code-font-family, monospace); font-weight: 600; }
.sw-tool-args, .sw-tool-result, .sw-tool-failure { margin: 2px 0; white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere; max-height: 20em; overflow-y: auto; }
/* A call's result under its arguments: the status word coloured as the header's, the result
   marked by a rule on its left (an error in the error colour). */
.sw-tool-status { font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: var(--sw-ui-size); font-weight: 600; margin-top: 4px; }
.sw-tool-done { color: var(--sw-ok); }
.sw-tool-running, .sw-tool-waiting { color: var(--sw-live); }
.sw-tool-error, .sw-tool-cancelled, .sw-tool-declined { color: var(--sw-warn); }
.sw-view .sw-tool-result { border-left: 3px solid var(--sw-ok); }
.sw-view .sw-tool-failure { border-left: 3px solid var(--sw-error); color: var(--jp-content-font-color1, inherit); }
.sw-tool-ask { align-items: center; gap: 6px; }
"""

_MAX_NAME = 120
#: The most characters of a result a card shows (the model is sent up to `MAX_RESULT_CHARS`).
RESULT_SHOWN_CHARS = 2_000

_STATUS_WORDS = {
    "waiting": "waiting for you: Run or Skip",
    "running": "running…",
    "done": "done",
    "error": "failed",
    "declined": "skipped: you declined",
    "cancelled": "cancelled",
}


def format_arguments(arguments: str, *, complete: bool) -> tuple[str, str]:
    """(text to show, note): pretty JSON once complete and valid, else the raw string."""
    if not complete:
        return arguments, "receiving arguments…"
    if not arguments.strip():
        return "", "no arguments"
    try:
        parsed = (json.loads(arguments),)
    except RecursionError:
        return arguments, "the arguments are nested too deeply to lay out; shown exactly as received"
    except ValueError:
        return arguments, "the arguments are not valid JSON; shown exactly as received"
    return json.dumps(parsed[0], indent=2, ensure_ascii=False), ""


def _json_or_none(text: str) -> tuple[object] | None:
    try:
        return (json.loads(text),)
    except (ValueError, RecursionError):
        return None


def shown_calls(state: StreamState) -> list[ToolCall]:
    """The calls the pane shows: those of earlier parts that ran (the tool steps' timeline), then
    the current part's. A Continue's earlier part with calls nobody ran shows none of them."""
    ran = [call for part in state.earlier for call in part.tool_calls if call.result is not None]
    return [*ran, *state.tool_calls]


def _result_html(result: ToolResult) -> str:
    status = result.status
    took = f" in {formatting.seconds(result.seconds)}" if result.seconds is not None and result.done else ""
    head = f'<div class="sw-tool-status sw-tool-{status}">{escape_html(_STATUS_WORDS[status])}{escape_html(took)}</div>'
    if status == "error" or status == "cancelled":
        return f'{head}<pre class="sw-tool-failure">{escape_html(result.error or "")}</pre>'
    if status != "done" and status != "declined":
        return head
    text = result.content
    parsed = _json_or_none(text) if text[:1] in "[{" else None
    if parsed is not None:
        text = json.dumps(parsed[0], indent=2, ensure_ascii=False)
    cut = ""
    if len(text) > RESULT_SHOWN_CHARS:
        cut = f"showing {RESULT_SHOWN_CHARS:,} of {len(text):,} characters"
        text = text[:RESULT_SHOWN_CHARS] + "…"
    notes = "; ".join(n for n in (result.note, cut) if n)
    note_html = f'<div class="sw-note">{escape_html(notes)}</div>' if notes else ""
    return f'{head}<pre class="sw-tool-result">{escape_html(text)}</pre>{note_html}'


#: Characters that reorder or hide text (bidi overrides and isolates, zero-width marks): a card
#: shows each as its escape, so that `evil\u202etxt.exe` cannot pose as `evilexe.txt`.
_INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def visible(text: str) -> str:
    """`text` with every reordering or invisible character shown as its escape (`\u202e`)."""
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def received_text(received: dict[str, Any]) -> str:
    """The arguments as the function receives them, as JSON where they are JSON (repr otherwise)."""
    try:
        return json.dumps(received, indent=2, ensure_ascii=False, default=repr)
    except (ValueError, RecursionError):
        return repr(received)


def call_summary(call: ToolCall, limit: int = 120) -> str:
    """`name(a=1, b=True)`: the call in one line, with the arguments the function receives."""
    name = formatting.shorten(call.name or "(unnamed tool)", _MAX_NAME)
    received = call.result.received if call.result is not None else None
    if received is not None:
        args = ", ".join(f"{key}={value!r}" for key, value in received.items())
    else:
        args = call.arguments
    return visible(f"{name}({formatting.shorten(args, limit)})")


def _call_html(call: ToolCall, complete: bool) -> str:
    name = escape_html(visible(formatting.shorten(call.name or "(unnamed tool)", _MAX_NAME)))
    ident = (
        f' <span class="sw-tool-id">{escape_html(visible(formatting.shorten(call.id, 80)))}</span>' if call.id else ""
    )
    received = call.result.received if call.result is not None else None
    if received is not None:  # checked against the signature: exactly what the function gets
        text, note = received_text(received), "the arguments as the function receives them"
    else:
        text, note = format_arguments(call.arguments, complete=complete)
    args = f'<pre class="sw-tool-args">{escape_html(visible(text))}</pre>' if text else ""
    note_html = f'<div class="sw-note">{escape_html(note)}</div>' if note else ""
    result = _result_html(call.result) if call.result is not None else ""
    return f'<div class="sw-tool"><div class="sw-tool-name">{name}(){ident}</div>{args}{note_html}{result}</div>'


def tool_calls_html(calls: Sequence[ToolCall], *, done: bool) -> str:
    """A call is complete when the stream ended, when it ran (or waits to), or when a later call
    started and its arguments parse.

    Parallel calls may interleave (chat `index`), so a later call alone does not prove an earlier
    one finished; valid JSON with a successor does.
    """
    last = len(calls) - 1

    def complete(i: int, call: ToolCall) -> bool:
        return done or call.result is not None or (i < last and _json_or_none(call.arguments) is not None)

    body = "".join(_call_html(call, complete(i, call)) for i, call in enumerate(calls))
    title = "Tool call" if len(calls) == 1 else f"Tool calls ({len(calls)})"
    return f'<div class="sw-section-title">{title}</div>{body}'


def tool_calls_text(calls: Sequence[ToolCall]) -> str:
    """The calls as plain lines, for the saved notebook's text forms: one line per call, its
    arguments and what became of it, shortened."""
    lines = []
    for call in calls:
        line = f"{call.name or '(unnamed tool)'}({formatting.shorten(call.arguments, 120)})"
        result = call.result
        if result is not None:
            took = f" in {formatting.seconds(result.seconds)}" if result.seconds is not None else ""
            said = result.error if result.is_error else result.content
            line += f" → {_STATUS_WORDS[result.status]}{took}: {formatting.shorten(said or '', 160)}"
        lines.append(f"[tool] {line}")
    return "\n".join(lines)


class ToolCallsPane:
    """Re-rendered whole when a call grows or its result changes; tool arguments are short next
    to an answer.

    The widget is made when the first call arrives, with it already in place (most answers call
    no tool: None until then). It hides again when a Continue starts a part without calls nobody
    ran. `questions` holds the Run / Skip rows of `confirm=True` (None until the first question):
    `ask` only records a question and waits for its click, and `draw` makes, places and closes
    the rows like every other change of the pane (a call waits, or stops waiting, in a change of
    the state, so a frame follows each).
    """

    def __init__(self, parts: Parts) -> None:
        self._parts = parts
        self.widget: Optional[w.HTML] = None
        self.questions: Optional[w.VBox] = None
        self._shown = _key((), False)
        self._asking: list[_Question] = []  # the questions waiting for a click, in the order asked
        self._rows: dict[int, w.HBox] = {}  # the rows drawn, by the question's id

    def draw(self, state: StreamState, now: float, final: bool) -> Cost:
        return self._draw_cards(shown_calls(state), final) + self._draw_questions()

    def saved_html(self, state: StreamState) -> str:
        """The cards in a saved notebook, framed ("" when the pane shows none): a card's own look
        is the view's stylesheet, which a saved output does not carry."""
        cards = self.widget.value if self.widget is not None and shown_calls(state) else ""
        if not cards:
            return ""
        return (
            '<div class="sw-static-tools" style="border:1px solid rgba(127,127,127,0.35);border-radius:4px;'
            f'padding:0.3em 0.8em;margin-bottom:0.8em">{cards}</div>'
        )

    def _draw_cards(self, calls: Sequence[ToolCall], final: bool) -> Cost:
        key = _key(calls, final)
        if key == self._shown or (self.widget is None and not calls):
            return NOTHING
        self._shown = key
        html = tool_calls_html(calls, done=final) if calls else ""
        if self.widget is None:
            self.widget = self._parts.html("sw-tools", value=html)
            return opened(self.widget)
        return set_traits(self.widget, value=html, _dom_classes=visible_classes(self.widget, bool(calls)))

    def _draw_questions(self) -> Cost:
        """A row for each question asked since the last frame, none for those answered (their
        widgets closed once out of the box)."""
        asked = {id(question): question for question in self._asking}
        if asked.keys() == self._rows.keys():
            return NOTHING
        sent = NOTHING
        gone = [row for key, row in self._rows.items() if key not in asked]
        for key, question in asked.items():
            if key not in self._rows:
                self._rows[key] = row = self._row(question)
                sent += opened(*row.children, row)
        self._rows = {key: self._rows[key] for key in asked}
        children = tuple(self._rows.values())
        if self.questions is None:
            self.questions = self._parts.box(w.VBox, list(children), "sw-tool-questions")
            sent += opened(self.questions)
        else:
            sent += set_traits(self.questions, children=children)
        for row in gone:
            sent += closed(*row.children, row)
        return sent

    def _row(self, question: _Question) -> w.HBox:
        call = question.call
        which = f" (card {question.card}" + (
            f", id {escape_html(visible(formatting.shorten(call.id, 40)))})" if call.id else ")"
        )
        label = self._parts.html(
            "sw-tool-question", value=f"Run <code>{escape_html(call_summary(call))}</code>?{which}"
        )
        run = self._parts.button("sw-tool-run", description="Run", icon="play", tooltip="Run this call now")
        skip = self._parts.button(
            "sw-tool-skip", description="Skip", icon="ban", tooltip="Do not run it; the model is told you declined"
        )
        run.on_click(lambda _button: question.choose(True))
        skip.on_click(lambda _button: question.choose(False))
        return self._parts.box(w.HBox, [label, run, skip], "sw-tool-ask")

    async def ask(self, call: ToolCall, card: int = 0) -> bool:
        """Ask whether to run `call` and wait for the click: True for Run. The row names the call
        with the arguments it will receive, and its card (`card`, counted from 1 in the pane). The
        next frame shows the question; a cancel while waiting takes it away (in the frame after)."""
        question = _Question(call, asyncio.get_running_loop().create_future(), card)
        self._asking.append(question)
        try:
            return await question.answer
        finally:
            self._asking.remove(question)


@dataclass(eq=False)
class _Question:
    """One Run / Skip question: the call it is about and the click's answer (True for Run)."""

    call: ToolCall
    answer: asyncio.Future[bool]
    card: int = 0

    def choose(self, run: bool) -> None:
        if not self.answer.done():
            self.answer.set_result(run)


def _key(calls: Sequence[ToolCall], done: bool) -> tuple[object, ...]:
    """What decides whether the cards must be redrawn: how many calls, how much of them, what
    became of them, and the end."""
    size = sum(c.arguments_length + len(c.name or "") + len(c.id or "") for c in calls)
    results = tuple((c.result.status, c.result.seconds) if c.result is not None else None for c in calls)
    return len(calls), size, results, done
