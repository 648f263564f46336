"""Scenarios: what the demo model does for a request, decided before a single byte is written.

The model name picks a scenario; the scenario and the prompt give a `Script` (`_script`): the
reasoning, text and tool-call token pieces to stream, the sources, how the stream ends and what
usage it reports. Each scenario is declared once, as one row of `SCENARIOS`: its summary, pace,
first-token delay, the script builder, how it breaks its answer (`Fault`) and whether it turns
the first tries away (`TurnedAway`). Everything else is derived from the rows: `/v1/models`,
the try counter, Continue after a fault, the `X-Demo-Script` header, and the scenario tables of
the package docstring and of the README (`scenarios_table`, which a test holds them to).

`build_script` is pure: the same request, clock value and nonce always give the same script,
and it changes none of its inputs.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Optional

from .._edge import Pacing, Rejection
from . import _answers as answers
from ._calling import answer_results, failure_sentence, plan_calls, plan_retry
from ._errors import SCRIPTED_HTTP_ERRORS, scripted_rejection
from ._lessons import choose_lesson, lesson_titles, score
from ._long import long_answer_tokens
from ._requests import DemoOptions, DemoRequest
from ._script import (
    DEFAULT_KEEPALIVE,
    FIXED_CREATED,
    Citation,
    Script,
    ScriptedToolCall,
    ScriptError,
    ScriptUsage,
    TextBlock,
    WebSource,
)
from ._tokens import NO_PIECES, TextPieces

__all__ = [
    "SCENARIOS",
    "Scenario",
    "Fault",
    "TurnedAway",
    "Script",
    "build_script",
    "resolve_model",
    "scenarios_table",
    "TryCounter",
]

_DEFAULT_PACE = 80.0
_DEFAULT_FIRST_TOKEN = 0.3
_DEFAULT_LONG_TOKENS = 20_000
_DEFAULT_LENGTH_LIMIT = 60

#: A builder makes a scenario's whole answer from the base script (ids, model), the request and
#: the seed; a `Fault` breaks it afterwards.
Builder = Callable[[Script, DemoRequest, str], Script]


# ---------------------------------------------------------------------------- script builders


def _plain(base: Script, request: DemoRequest, seed: str) -> Script:
    """The lesson for the question (or the reply that says there is none)."""
    lesson = choose_lesson(request.prompt)
    return replace(base, label=lesson.title, blocks=(TextBlock.of(lesson.text),))


def _fast(base: Script, request: DemoRequest, seed: str) -> Script:
    """The short version: the lesson up to its first heading (a quick model says less)."""
    lesson = choose_lesson(request.prompt)
    short = re.split(r"\n#+ ", lesson.text, maxsplit=1)[0].rstrip() + "\n"
    return replace(base, label=lesson.title, blocks=(TextBlock.of(short),))


def _deep(base: Script, request: DemoRequest, seed: str) -> Script:
    """Reasoning, the whole lesson, and a closing summary (a careful model says more)."""
    lesson = choose_lesson(request.prompt)
    first = re.split(r"(?<=[.!?])\s", lesson.text.strip(), maxsplit=1)[0]
    summary = f"\n\n**In short:** {re.sub(r'[*`]', '', first)}\n"
    return replace(
        base,
        label=lesson.title,
        reasoning_tokens=TextPieces(lesson.reasoning),
        blocks=(TextBlock.of(lesson.text.rstrip() + summary),),
    )


def _reasoning(base: Script, request: DemoRequest, seed: str) -> Script:
    lesson = choose_lesson(request.prompt)
    return replace(
        base,
        label=lesson.title,
        reasoning_tokens=TextPieces(lesson.reasoning),
        blocks=(TextBlock.of(lesson.text),),
    )


def _markdown(base: Script, request: DemoRequest, seed: str) -> Script:
    return replace(base, blocks=(TextBlock.of(answers.MARKDOWN_SHOWCASE),))


def _search(base: Script, request: DemoRequest, seed: str) -> Script:
    """An answer written from scripted web results: the best keyword match, else a short reply
    that names the topics the scripted search has results for (never another topic's answer)."""
    text = request.prompt.lower()
    points = [score(text, found.keywords) for found in answers.SEARCH_ANSWERS]
    if max(points) == 0:
        topics = ", ".join(found.title.removesuffix(" (web search)") for found in answers.SEARCH_ANSWERS)
        reply = (
            "This is the scripted offline demo: its web search has results only about "
            f"{topics}, and none about your question, so it cites nothing. Ask about one of those "
            "to see an answer with its sources."
        )
        return replace(base, label="none", blocks=(TextBlock.of(reply),), search_query=request.prompt[:200])
    found = answers.SEARCH_ANSWERS[points.index(max(points))]
    sources = tuple(WebSource(title, url) for title, url in found.sources)
    blocks = _cited_blocks([(p.text, p.cites) for p in found.passages])
    return replace(base, label=found.title, blocks=blocks, sources=sources, search_query=found.query)


def _cited_blocks(passages: list[tuple[str, tuple[int, ...]]]) -> tuple[TextBlock, ...]:
    """One block per passage; each `[n]` marker in it becomes a citation of source n-1."""
    blocks: list[TextBlock] = []
    offset = 0
    for text, cites in passages:
        cited_text = re.sub(r"\s*\[\d+\]", "", text).strip()
        citations = tuple(
            Citation(int(m.group(1)) - 1, offset + m.start(), offset + m.end(), cited_text)
            for m in re.finditer(r"\[(\d+)\]", text)
            if int(m.group(1)) - 1 in cites
        )
        blocks.append(TextBlock.of(text, citations))
        offset += len(text)
    return tuple(blocks)


def _tools(base: Script, request: DemoRequest, seed: str) -> Script:
    """A function-calling model (`_calling`): it tries a failed call once more when the error
    suggests other arguments, else answers from the tool results that end the conversation,
    else calls the declared tools that fit the question, else (no tools, or `tool_choice:
    none`) answers in text and says why it called nothing."""
    use = request.tool_use
    retry = plan_retry(use) if use.results else None
    if retry is not None:
        call, failed = retry
        intro = f"{failure_sentence(failed)} I'll call it again with other arguments."
        return replace(
            base,
            blocks=(TextBlock.of(intro),),
            tool_calls=(ScriptedToolCall(call.tool.name, TextPieces(call.arguments)),),
            ending="tool_calls",
        )
    if use.results:
        return replace(base, blocks=(TextBlock.of(answer_results(use.results)),))
    calls = plan_calls(request.prompt, use.tools, use.choice)
    if not calls:
        why = answers.TOOLS_NONE if not use.tools else answers.TOOLS_DECLINED
        lesson = choose_lesson(request.prompt)
        return replace(base, blocks=(TextBlock.of(f"{why}\n\n{lesson.text}"),))
    names = [call.tool.name for call in calls]
    if len(calls) == 2 and names[0] == names[1]:
        first, second = (call.parsed for call in calls)
        key = next((k for k in first if first[k] != second.get(k)), None)
        what = f"for {str(first[key])[:60]} and {str(second[key])[:60]}" if key else "twice"
        intro = f"I'll call `{names[0]}` {what} at the same time."
    elif len(calls) == 2:
        intro = f"I'll call `{names[0]}` and `{names[1]}` at the same time."
    else:
        intro = f"I'll call `{names[0]}`."
    question = " ".join(request.prompt.split())[:160] or "(nothing)"
    offered = ", ".join(f"`{tool.name}`" for tool in use.tools[:8])
    offered += f" and {len(use.tools) - 8} more" if len(use.tools) > 8 else ""
    reasoning = answers.TOOLS_REASONING.format(
        question=question, count=len(use.tools), s="s" if len(use.tools) != 1 else "", offered=offered
    )
    return replace(
        base,
        reasoning_tokens=TextPieces(reasoning),
        blocks=(TextBlock.of(intro),),
        tool_calls=tuple(ScriptedToolCall(call.tool.name, TextPieces(call.arguments)) for call in calls),
        ending="tool_calls",
    )


def _long(base: Script, request: DemoRequest, seed: str) -> Script:
    count = request.options.tokens if request.options.tokens is not None else _DEFAULT_LONG_TOKENS
    return replace(base, blocks=(TextBlock(long_answer_tokens(request.prompt, count, seed)),))


def _xss(base: Script, request: DemoRequest, seed: str) -> Script:
    text = answers.XSS_TEXT
    cut = text.index("If you can read")
    return replace(
        base,
        reasoning_tokens=TextPieces(answers.XSS_REASONING),
        blocks=_cited_blocks([(text[:cut], ()), (text[cut:], (0, 1, 2))]),
        sources=tuple(WebSource(title, url) for title, url in answers.XSS_SOURCES),
        search_query='"><img src=x onerror="window.__xss=1">',
        tool_calls=(ScriptedToolCall(answers.XSS_TOOL_NAME, TextPieces(answers.XSS_TOOL_ARGUMENTS)),),
        ending="tool_calls",
    )


# ---------------------------------------------------------------------------- the rows


@dataclass(frozen=True)
class Fault:
    """How a scenario breaks its answer.

    The first `keep` of the answer's text is streamed (at least one token, at most `at_most`;
    `keep=0`: none), then the stream ends as `ending` says (`error`, with `error`, whose message
    may name the `{tokens}` sent; `cutoff`; `stall`). Or the answer comes whole with one invalid
    event in its middle (`malformed`), or cut at `token_limit` tokens. A Continue after the fault
    gets the rest of the whole answer.
    """

    ending: Optional[str] = None
    keep: float = 1.0
    at_most: Optional[int] = None
    error: Optional[ScriptError] = None
    malformed: bool = False
    token_limit: Optional[int] = None


@dataclass(frozen=True)
class TurnedAway:
    """Refused with HTTP `status` (and `Retry-After: retry_after`) for the first `tries` tries of
    each prompt, then answered. The server counts the tries (`TryCounter`); the cycle starts over
    after an answer, so that running the cell again shows the wait again."""

    status: int
    tries: int
    retry_after: int

    def rejection(self, scenario: str, tries: int) -> Rejection:
        scripted = scripted_rejection(self.status)
        message = (
            f"{scripted.message.split(' (')[0]} (The demo server turns away the first {self.tries} "
            f"tries of each prompt for {scenario}; this was try {tries}.)"
        )
        return replace(scripted, message=message, retry_after=self.retry_after)

    def describe(self) -> str:
        first = "try" if self.tries == 1 else f"{self.tries} tries"
        return f"HTTP {self.status} with `Retry-After: {self.retry_after}` for the first {first} of a prompt, then"


@dataclass(frozen=True)
class Scenario:
    """One model name of the demo provider and everything it does."""

    name: str
    summary: str
    build: Builder
    tokens_per_second: float = _DEFAULT_PACE
    first_token_delay: float = _DEFAULT_FIRST_TOKEN
    fault: Optional[Fault] = None
    turned_away: Optional[TurnedAway] = None

    @property
    def description(self) -> str:
        """What the stream does, as the scenario tables say it: the summary, and the pace where
        it is not the default."""
        text = self.summary
        if self.turned_away is not None:
            text = f"{self.turned_away.describe()} {text}"
        pace = []
        if self.tokens_per_second != _DEFAULT_PACE:
            pace.append(f"{self.tokens_per_second:,g} tokens/s")
        if self.first_token_delay != _DEFAULT_FIRST_TOKEN:
            pace.append(f"first token at {self.first_token_delay:g} s")
        return f"{text}; {', '.join(pace)}" if pace else text


def _table(*rows: Scenario) -> dict[str, Scenario]:
    return {row.name: row for row in rows}


SCENARIOS: dict[str, Scenario] = _table(
    Scenario(
        "demo",
        "a lesson on the question's topic, chosen by its words (" + ", ".join(lesson_titles()) + "), or a small "
        "sum worked out; a greeting for a greeting; else a short reply that says it has no lesson. The "
        "`X-Demo-Script` header names the lesson",
        _plain,
    ),
    Scenario(
        "demo-markdown", "every markdown block: headings, lists, table, two code languages, quote, task list", _markdown
    ),
    Scenario(
        "demo-reasoning",
        "reasoning first (reasoning_content / reasoning / summary / thinking), then the lesson; reasoning tokens "
        "are reported in usage",
        _reasoning,
    ),
    Scenario(
        "demo-search",
        "a web search (4-5 sources) and an answer with [n] markers; sources travel as each dialect and flavor "
        "carries them (annotations, venym.sources, citations...)",
        _search,
        first_token_delay=0.8,
    ),
    Scenario(
        "demo-tools",
        "a function-calling model: calls the declared `tools` that fit the question (two at once when two fit, "
        "or one tool for two cities) with arguments that fit their schemas; answers from the tool results "
        "that end the conversation and says when one failed (retried once when the error suggests other "
        "arguments); without tools, a plain answer",
        _tools,
    ),
    Scenario("demo-fast", "a small, quick model: the short version of the lesson", _fast, 250.0, first_token_delay=0.1),
    Scenario(
        "demo-deep",
        "a large, careful model: reasoning, the whole lesson and a summary",
        _deep,
        30.0,
        first_token_delay=1.2,
    ),
    Scenario(
        "demo-long",
        f"{_DEFAULT_LONG_TOKENS:,} tokens (`demo.tokens`) of a real tutorial on asyncio, whatever the question",
        _long,
        4000.0,
    ),
    Scenario(
        "demo-slow", "the lesson, with heartbeat comments (ping events) until it starts", _plain, first_token_delay=3.0
    ),
    Scenario(
        "demo-error",
        "some text, then an error inside the 200 stream in the route's own shape",
        _plain,
        fault=Fault(
            "error",
            keep=0.33,
            at_most=40,
            error=ScriptError(
                "server_error",
                "The model stopped unexpectedly after {tokens} tokens (scripted by the demo-error model).",
            ),
        ),
    ),
    Scenario(
        "demo-error-early",
        "the error is the very first event of a 200 stream (insufficient balance)",
        _plain,
        fault=Fault(
            "error",
            keep=0.0,
            error=ScriptError(
                "insufficient_balance",
                "Insufficient balance: add credit to continue (scripted by the demo-error-early model).",
            ),
        ),
    ),
    Scenario(
        "demo-cutoff",
        "some text, then the connection closes without the dialect's terminator (the HTTP body ends properly; "
        '`"demo": {"cutoff": "abort"}` breaks it off mid-body instead)',
        _plain,
        fault=Fault("cutoff", keep=0.5, at_most=60),
    ),
    Scenario(
        "demo-stall",
        "some text, then silence until the client leaves (Engy keeps sending its `: keepalive` comments)",
        _plain,
        fault=Fault("stall", keep=0.25, at_most=30),
    ),
    Scenario(
        "demo-malformed",
        "one event with invalid JSON in the middle; the stream then ends properly",
        _plain,
        fault=Fault(malformed=True),
    ),
    Scenario(
        "demo-xss",
        "script-running payloads in the text, reasoning, sources and a tool call; each would set "
        "`window.__xss = 1` if executed",
        _xss,
    ),
    Scenario(
        "demo-length",
        f"cut by the token limit (the request's max_tokens, else {_DEFAULT_LENGTH_LIMIT}): finish_reason length / "
        "stop_reason max_tokens / response.incomplete",
        _plain,
        fault=Fault(token_limit=_DEFAULT_LENGTH_LIMIT),
    ),
    Scenario(
        "demo-ratelimit",
        "the lesson (`retries=` waits and tries again)",
        _plain,
        first_token_delay=0.2,
        turned_away=TurnedAway(429, tries=1, retry_after=2),
    ),
    Scenario(
        "demo-overloaded",
        "the lesson",
        _plain,
        first_token_delay=0.2,
        turned_away=TurnedAway(503, tries=2, retry_after=1),
    ),
)

#: The family of `demo-http-<status>` models, one per scripted status (`_errors`).
HTTP_ERRORS_SUMMARY = (
    "an HTTP error with the route's JSON envelope before any stream, for "
    + ", ".join(str(status) for status in SCRIPTED_HTTP_ERRORS)
    + " ("
    + ", ".join(str(s) for s, row in SCRIPTED_HTTP_ERRORS.items() if row[4] is not None)
    + " send Retry-After)"
)


def scenarios_table(style: str = "markdown") -> str:
    """The scenario table, from the rows: `markdown` (the README's), or `text` (the package
    docstring's). `python -m streamwidgets.server --scenarios-table` prints it."""
    rows = [(name, row.description) for name, row in SCENARIOS.items()]
    rows.append(("demo-http-NNN", HTTP_ERRORS_SUMMARY))
    if style == "markdown":
        lines = ["| model | what the stream does |", "|---|---|"]
        lines += [f"| `{name}` | {text} |" for name, text in rows]
        return "\n".join(lines) + "\n"
    if style != "text":
        raise ValueError(f"unknown table style {style!r}: use 'markdown' or 'text'")
    first, second = 19, 74
    rule = "=" * first + " " + "=" * second
    lines = [rule, f"{'model':<{first}} what the stream does", rule]
    for name, text in rows:
        # Never wrap inside a code span: its spaces are held together while the text is wrapped.
        held = re.sub(r"`[^`]*`", lambda m: m.group().replace(" ", "\0"), text)
        wrapped = [line.replace("\0", " ") for line in textwrap.wrap(held, second, break_on_hyphens=False)]
        lines.append(f"{name:<{first}} {wrapped[0]}")
        lines += [" " * (first + 1) + more for more in wrapped[1:]]
    lines.append(rule)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- choosing and building


def resolve_model(model: str) -> tuple[str, bool]:
    """The scenario a model name asks for, and whether web search is on.

    A provider prefix (`venym/demo-tools`) is ignored and a `:online` suffix turns web search on
    (it selects `demo-search` unless the name picks another scenario). Unknown names fall back
    to `demo`: a real server would answer 404, but people in a workshop type anything.
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    online = name.endswith(":online")
    if online:
        name = name[: -len(":online")]
    match = re.fullmatch(r"demo-http-(\d{3})", name)
    if match and int(match.group(1)) in SCRIPTED_HTTP_ERRORS:
        return name, online
    if name not in SCENARIOS or (online and name == "demo"):
        name = "demo-search" if online else "demo"
    return name, online


class TryCounter:
    """Which try of its prompt a request is, for the scenarios that turn the first ones away.

    The one piece of memory the demo model has (per server): counted by model and prompt, and
    only for those scenarios. `try_of(request)` is 1 for the first try, and starts over once a
    try got through.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], int] = {}

    def try_of(self, request: DemoRequest) -> int:
        name, _online = resolve_model(request.model)
        scenario = SCENARIOS.get(name)
        if scenario is None or scenario.turned_away is None:
            return 1
        key = (name, request.prompt, request.options.seed or "")
        tries = self._seen.get(key, 0) % (scenario.turned_away.tries + 1) + 1
        self._seen[key] = tries
        if len(self._seen) > 10_000:  # a long-running server forgets the oldest prompts
            self._seen.pop(next(iter(self._seen)))
        return tries


def build_script(request: DemoRequest, *, now: float, nonce: str, tries: int = 1) -> Script:
    """The script for `request`. `now` (wall clock) and `nonce` make ids and timestamps;
    `tries` is which try of its prompt this is (`TryCounter`: the turned-away scenarios).

    With a `demo.seed` both are ignored, so that the same request gives the same bytes.
    """
    name, online = resolve_model(request.model)
    options = request.options
    if options.seed is not None:
        nonce = _digest(f"{options.seed}|{request.api}|{request.model}|{request.prompt}")[:24]
        created = FIXED_CREATED
    else:
        created = int(now)
    base = Script(
        scenario=name,
        model=request.model,
        label=name,
        nonce=nonce,
        created=created,
        include_usage=request.include_usage,
        cutoff_abort=options.cutoff == "abort",
        logprobs=request.logprobs,
        temperature=request.temperature,
        reasoning_hidden=request.reasoning_hidden,
    )
    if name.startswith("demo-http-"):
        return replace(base, rejection=scripted_rejection(int(name.rsplit("-", 1)[1])))
    scenario = SCENARIOS[name]
    if scenario.turned_away is not None and tries <= scenario.turned_away.tries:
        return replace(base, rejection=scenario.turned_away.rejection(name, tries))
    seed = request.prompt if options.seed is None else f"{options.seed}|{request.prompt}"
    whole = scenario.build(base, request, seed)
    script = _faulted(whole, scenario.fault)
    if request.continuation:
        script = _continued(script, whole, request.continuation)
    if request.thinking_disabled:  # Anthropic's `thinking: {"type": "disabled"}`
        script = replace(script, reasoning_tokens=NO_PIECES)
    if online and not script.sources:
        searched = _search(base, request, seed)
        script = replace(script, sources=searched.sources, search_query=searched.search_query)
    limit = request.max_tokens
    fault = scenario.fault
    if fault is not None and fault.token_limit is not None and not request.continuation:
        limit = min(limit or fault.token_limit, fault.token_limit)  # always cut, even under Messages' max_tokens
    script = _limit(script, limit)
    if script.malformed_after is not None:  # in the middle of what the limit left
        script = replace(script, malformed_after=len(script.text_tokens) // 2)
    return replace(script, pacing=_pacing(scenario, options), usage=_usage(script, request))


# ---------------------------------------------------------------------------- shared steps


def _faulted(script: Script, fault: Optional[Fault]) -> Script:
    """`script` broken as `fault` says (see `Fault`)."""
    if fault is None:
        return script
    if fault.malformed:
        return replace(script, malformed_after=0)  # placed once the length is final
    if fault.ending is None:
        return script
    tokens = script.text_tokens
    if fault.keep <= 0:
        blocks: tuple[TextBlock, ...] = ()
        sent = 0
    else:
        sent = max(1, min(fault.at_most or len(tokens), int(len(tokens) * fault.keep)))
        blocks = (TextBlock(tokens.take(sent)),)
    error = fault.error and replace(fault.error, message=fault.error.message.format(tokens=sent))
    return replace(
        script,
        label=script.label if blocks else script.scenario,
        reasoning_tokens=NO_PIECES,
        blocks=blocks,
        tool_calls=(),
        ending=fault.ending,
        error=error,
    )


def _continued(script: Script, whole: Script, done: str) -> Script:
    """A Continue: stream the rest of the answer that the partial text `done` is the start of.

    The fault already happened, so the rest arrives whole; a partial that is not the start of
    this prompt's answer gets the ordinary answer, as a real model would improvise one.
    """
    text = whole.text
    if not text.startswith(done) or len(text) == len(done):
        return script
    return replace(
        whole,
        reasoning_tokens=NO_PIECES,
        blocks=(TextBlock.of(text[len(done) :]),),
        ending="stop",
        error=None,
        malformed_after=None,
    )


def _limit(script: Script, limit: Optional[int]) -> Script:
    """Cut the script at `limit` completion tokens (reasoning, then text, then tool arguments)."""
    if limit is None or script.ending not in ("stop", "tool_calls") or script.completion_tokens <= limit:
        return script
    budget = limit
    reasoning = script.reasoning_tokens.take(budget)
    budget -= len(reasoning)
    cited = any(block.citations for block in script.blocks)
    blocks: list[TextBlock] = []
    kept_chars = 0
    for block in script.blocks:
        if budget <= 0:
            break
        tokens = block.tokens.take(budget)
        budget -= len(tokens)
        kept_chars += len(tokens.text) if cited else 0
        blocks.append(TextBlock(tokens, tuple(c for c in block.citations if c.end <= kept_chars)))
    calls: list[ScriptedToolCall] = []
    for call in script.tool_calls:
        if budget <= 0:
            break
        tokens = call.argument_tokens.take(budget)
        budget -= len(tokens)
        calls.append(ScriptedToolCall(call.name, tokens))
    return replace(script, reasoning_tokens=reasoning, blocks=tuple(blocks), tool_calls=tuple(calls), ending="length")


def _usage(script: Script, request: DemoRequest) -> ScriptUsage:
    # Providers cache a long shared prefix in 128-token steps once it passes 1,024 tokens.
    cached = request.history_tokens // 128 * 128 if request.history_tokens >= 1024 else 0
    return ScriptUsage(
        prompt_tokens=request.prompt_tokens,
        completion_tokens=script.completion_tokens,
        cached_tokens=min(cached, request.prompt_tokens),
        reasoning_tokens=len(script.reasoning_tokens),
    )


def _pacing(scenario: Scenario, options: DemoOptions) -> Pacing:
    return Pacing(
        tokens_per_second=scenario.tokens_per_second
        if options.tokens_per_second is None
        else options.tokens_per_second,
        first_token_delay=scenario.first_token_delay
        if options.first_token_delay is None
        else options.first_token_delay,
        keepalive_interval=DEFAULT_KEEPALIVE if options.keepalive_interval is None else options.keepalive_interval,
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
