"""Scenarios: what the demo model does for a request, decided before a single byte is written.

The model name picks a scenario (see the table in the package docstring); the scenario and the
prompt give a `Script`: the reasoning, text and tool-call token pieces to stream, the sources,
how the stream ends and what usage it reports. Scripts are dialect-free data; the writers in
`_chat`, `_responses` and `_messages` turn one into the bytes of each API. Everything here is
pure: the same request, clock value and nonce always give the same script.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Optional, TypeVar, Union

from . import _answers as answers
from ._errors import SCRIPTED_HTTP_ERRORS, Rejection, scripted_rejection
from ._long import long_answer_tokens
from ._requests import DemoOptions, DemoRequest
from ._tokens import tokenize

__all__ = [
    "SCENARIOS",
    "Scenario",
    "Script",
    "ScriptError",
    "ScriptUsage",
    "TextBlock",
    "Citation",
    "WebSource",
    "ScriptedToolCall",
    "Pacing",
    "build_script",
    "resolve_model",
    "TryCounter",
]


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    tokens_per_second: float = 80.0
    first_token_delay: float = 0.3


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("demo", "a markdown answer chosen from the prompt"),
        Scenario("demo-markdown", "every markdown block: headings, lists, table, two code languages, quote, task list"),
        Scenario("demo-reasoning", "reasoning first, then the answer"),
        Scenario(
            "demo-search",
            "web search: 4-5 sources, [n] markers, citations in each dialect's shape",
            first_token_delay=0.8,
        ),
        Scenario(
            "demo-tools", "two parallel get_weather calls (or a summary when the last message holds tool results)"
        ),
        Scenario("demo-long", "tens of thousands of tokens of generated markdown, fast", tokens_per_second=4000.0),
        Scenario("demo-slow", "first token after 3 s, with keep-alive comments meanwhile", first_token_delay=3.0),
        Scenario("demo-error", "an error inside the stream after some text"),
        Scenario("demo-error-early", "an error as the very first event of a 200 stream (insufficient balance)"),
        Scenario("demo-cutoff", "the connection closes after some text, without the terminator"),
        Scenario("demo-stall", "some text, then silence until the client leaves"),
        Scenario("demo-malformed", "one event with invalid JSON in the middle; the stream then ends properly"),
        Scenario("demo-xss", "hostile HTML and URLs in the text, reasoning, sources and a tool call"),
        Scenario("demo-length", "cut by the token limit: length / max_tokens / response.incomplete"),
        # Three models that differ in pace and style, for `sw.compare` in class.
        Scenario(
            "demo-fast",
            "a small, quick model: the short version of the answer, 250 tokens/s, first token at 0.1 s",
            tokens_per_second=250.0,
            first_token_delay=0.1,
        ),
        Scenario(
            "demo-deep",
            "a large, careful model: reasoning, the full answer and a summary, 30 tokens/s, first token at 1.2 s",
            tokens_per_second=30.0,
            first_token_delay=1.2,
        ),
        # Turned away before any stream, then answered: what `retries=` is for.
        Scenario(
            "demo-ratelimit",
            "HTTP 429 with Retry-After: 2 for the first try of a prompt, then the demo answer",
            first_token_delay=0.2,
        ),
        Scenario(
            "demo-overloaded",
            "HTTP 503 with Retry-After: 1 for the first 2 tries of a prompt, then the demo answer",
            first_token_delay=0.2,
        ),
    )
}

#: Turned-away scenarios: (HTTP status, tries turned away, Retry-After seconds). The server counts
#: the tries of each prompt (`TryCounter`); the cycle starts over after an answer, so that running
#: the cell again shows the wait again.
_TURNED_AWAY = {"demo-ratelimit": (429, 1, 2), "demo-overloaded": (503, 2, 1)}

_DEFAULT_LONG_TOKENS = 20_000
_DEFAULT_LENGTH_LIMIT = 60
_DEFAULT_KEEPALIVE = 1.0
_FIXED_CREATED = 1_700_000_000


@dataclass(frozen=True)
class WebSource:
    title: str
    url: str


@dataclass(frozen=True)
class Citation:
    """A `[n]` marker in the text: which source, where the marker is, what passage it backs."""

    source: int
    start: int
    end: int
    cited_text: str


@dataclass(frozen=True)
class TextBlock:
    """A run of answer text; searched answers have one block per cited passage."""

    tokens: tuple[str, ...]
    citations: tuple[Citation, ...] = ()

    @property
    def text(self) -> str:
        return "".join(self.tokens)


@dataclass(frozen=True)
class ScriptedToolCall:
    name: str
    argument_tokens: tuple[str, ...]

    @property
    def arguments(self) -> str:
        return "".join(self.argument_tokens)


@dataclass(frozen=True)
class ScriptError:
    """An error that arrives inside a 200 stream; `kind` is `server_error` or `insufficient_balance`."""

    kind: str
    message: str


@dataclass(frozen=True)
class ScriptUsage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Pacing:
    """Seconds and rates; `tokens_per_second == 0` means as fast as possible, `keepalive_interval == 0` none."""

    tokens_per_second: float
    first_token_delay: float
    keepalive_interval: float


@dataclass(frozen=True)
class Script:
    """Everything the server will stream for one request, in no particular dialect.

    `ending` is how the stream ends: `stop`, `length` or `tool_calls` (proper ends), `error`
    (an error event), `cutoff` (the connection closes without a terminator) or `stall`
    (silence until the client leaves). `text` and `reasoning` are exactly what is streamed.
    """

    scenario: str
    model: str
    reasoning_tokens: tuple[str, ...] = ()
    blocks: tuple[TextBlock, ...] = ()
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    sources: tuple[WebSource, ...] = ()
    search_query: Optional[str] = None
    ending: str = "stop"
    error: Optional[ScriptError] = None
    malformed_after: Optional[int] = None
    usage: ScriptUsage = ScriptUsage(0, 0, 0, 0)
    pacing: Pacing = Pacing(80.0, 0.3, _DEFAULT_KEEPALIVE)
    nonce: str = "0"
    created: int = _FIXED_CREATED
    include_usage: bool = False
    cutoff_abort: bool = False
    rejection: Optional[Rejection] = field(default=None, compare=False)

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.blocks)

    @property
    def reasoning(self) -> str:
        return "".join(self.reasoning_tokens)

    @property
    def text_tokens(self) -> tuple[str, ...]:
        return tuple(token for block in self.blocks for token in block.tokens)


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
        turned_away = _TURNED_AWAY.get(name)
        if turned_away is None:
            return 1
        key = (name, request.prompt, request.options.seed or "")
        tries = self._seen.get(key, 0) % (turned_away[1] + 1) + 1
        self._seen[key] = tries
        if len(self._seen) > 10_000:  # a long-running server forgets the oldest prompts
            self._seen.pop(next(iter(self._seen)))
        return tries


def build_script(request: DemoRequest, *, now: float, nonce: str, tries: int = 1) -> Script:
    """The script for `request`. `now` (wall clock) and `nonce` make ids and timestamps;
    `tries` is which try of its prompt this is (`TryCounter`: the turned-away scenarios).

    With a `demo.seed` both are ignored, so that the same request gives the same bytes.
    """
    scenario_name, online = resolve_model(request.model)
    options = request.options
    if options.seed is not None:
        nonce = _digest(f"{options.seed}|{request.api}|{request.model}|{request.prompt}")[:24]
        created = _FIXED_CREATED
    else:
        created = int(now)
    base = Script(
        scenario=scenario_name,
        model=request.model,
        nonce=nonce,
        created=created,
        include_usage=request.include_usage,
        cutoff_abort=options.cutoff == "abort",
    )
    if scenario_name.startswith("demo-http-"):
        rejection = scripted_rejection(int(scenario_name.rsplit("-", 1)[1]))
        return _replace(base, rejection=rejection)
    if scenario_name in _TURNED_AWAY:
        status, turned_away, retry_after = _TURNED_AWAY[scenario_name]
        if tries <= turned_away:
            rejection = scripted_rejection(status)
            rejection.retry_after = retry_after
            rejection.message = (
                f"{rejection.message.split(' (')[0]} (The demo server turns away the first {turned_away} "
                f"tries of each prompt for {scenario_name}; this was try {tries}.)"
            )
            return _replace(base, rejection=rejection)
    scenario = SCENARIOS[scenario_name]
    seed = request.prompt if options.seed is None else f"{options.seed}|{request.prompt}"
    script = _SCRIPTERS[scenario_name](base, request, seed)
    if request.continuation:
        script = _continued(script, request, seed)
    if request.thinking_disabled:  # Anthropic's `thinking: {"type": "disabled"}`
        script = _replace(script, reasoning_tokens=())
    if online and not script.sources:
        searched = _search_script(base, request, seed)
        script = _replace(script, sources=searched.sources, search_query=searched.search_query)
    limit = request.max_tokens
    if scenario_name == "demo-length" and not request.continuation:  # always cut, even under Messages' max_tokens
        limit = min(limit or _DEFAULT_LENGTH_LIMIT, _DEFAULT_LENGTH_LIMIT)
    script = _limit(script, limit)
    if script.malformed_after is not None:  # still in the middle of what the limit left
        script = _replace(script, malformed_after=len(script.text_tokens) // 2)
    return _replace(script, pacing=_pacing(scenario, options), usage=_usage(script, request))


# ---------------------------------------------------------------------------- scenario scripts


_Candidate = TypeVar("_Candidate", bound=Union[answers.Answer, answers.SearchAnswer])


def _answer(prompt: str) -> answers.Answer:
    return _pick(prompt, answers.ANSWERS)


def _pick(prompt: str, candidates: Sequence[_Candidate]) -> _Candidate:
    """The candidate whose keywords the prompt mentions most; a stable hash breaks a blank."""
    lowered = prompt.lower()
    best: Optional[_Candidate] = None
    best_score = 0
    for candidate in candidates:
        score = sum(1 for keyword in candidate.keywords if _mentions(lowered, keyword))
        if score > best_score:
            best, best_score = candidate, score
    if best is None:
        best = candidates[int(_digest(prompt.strip())[:8], 16) % len(candidates)]
    return best


def _mentions(text: str, keyword: str) -> bool:
    # Keywords match at the start of a word ("recurs" finds "recursion"); two-letter ones whole.
    pattern = r"(?<![\w-])" + re.escape(keyword) + (r"(?!\w)" if len(keyword) <= 2 else "")
    return re.search(pattern, text) is not None


def _plain(base: Script, request: DemoRequest, seed: str) -> Script:
    return _replace(base, blocks=(TextBlock(tuple(tokenize(_answer(request.prompt).text))),))


def _fast(base: Script, request: DemoRequest, seed: str) -> Script:
    """The short version: the answer up to its first heading (a quick model says less)."""
    text = _answer(request.prompt).text
    short = re.split(r"\n#+ ", text, maxsplit=1)[0].rstrip() + "\n"
    return _replace(base, blocks=(TextBlock(tuple(tokenize(short))),))


def _deep(base: Script, request: DemoRequest, seed: str) -> Script:
    """Reasoning, the whole answer, and a closing summary (a careful model says more)."""
    answer = _answer(request.prompt)
    first = re.split(r"(?<=[.!?])\s", answer.text.strip(), maxsplit=1)[0]
    summary = f"\n\n**In short:** {re.sub(r'[*`]', '', first)}\n"
    return _replace(
        base,
        reasoning_tokens=tuple(tokenize(answer.reasoning)),
        blocks=(TextBlock(tuple(tokenize(answer.text.rstrip() + summary))),),
    )


def _markdown(base: Script, request: DemoRequest, seed: str) -> Script:
    return _replace(base, blocks=(TextBlock(tuple(tokenize(answers.MARKDOWN_SHOWCASE))),))


def _reasoning(base: Script, request: DemoRequest, seed: str) -> Script:
    answer = _answer(request.prompt)
    return _replace(
        base,
        reasoning_tokens=tuple(tokenize(answer.reasoning)),
        blocks=(TextBlock(tuple(tokenize(answer.text))),),
    )


def _search_script(base: Script, request: DemoRequest, seed: str) -> Script:
    found = _pick(request.prompt, answers.SEARCH_ANSWERS)
    sources = tuple(WebSource(title, url) for title, url in found.sources)
    blocks = _cited_blocks([(p.text, p.cites) for p in found.passages])
    return _replace(base, blocks=blocks, sources=sources, search_query=found.query)


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
        blocks.append(TextBlock(tuple(tokenize(text)), citations))
        offset += len(text)
    return tuple(blocks)


def _tools(base: Script, request: DemoRequest, seed: str) -> Script:
    if request.tool_results:
        lines = "\n".join(f"- {result.strip()[:300]}" for result in request.tool_results)
        text = f"Here is what the tools returned:\n\n{lines}\n\nWould you like a forecast for the next few days too?"
        return _replace(base, blocks=(TextBlock(tuple(tokenize(text))),))
    first, second = _two_cities(request.prompt)
    name = request.tool_names[0] if request.tool_names else "get_weather"
    key = request.tool_properties[0] if request.tool_properties else "city"
    calls = []
    for city in (first, second):
        arguments: dict[str, str] = {key: city}
        if not request.tool_names or "unit" in request.tool_properties:
            arguments["unit"] = "celsius"
        calls.append(ScriptedToolCall(name, tuple(tokenize(json.dumps(arguments, ensure_ascii=False)))))
    return _replace(
        base,
        reasoning_tokens=tuple(tokenize(answers.TOOL_REASONING.format(first=first, second=second))),
        blocks=(TextBlock(tuple(tokenize(answers.TOOL_INTRO.format(first=first, second=second)))),),
        tool_calls=tuple(calls),
        ending="tool_calls",
    )


def _two_cities(prompt: str) -> tuple[str, str]:
    lowered = prompt.lower()
    found = sorted((lowered.find(city.lower()), city) for city in answers.CITIES if _mentions(lowered, city.lower()))
    names = [city for _, city in found]
    for fallback in ("Paris", "Tokyo"):
        if len(names) < 2 and fallback not in names:
            names.append(fallback)
    return names[0], names[1]


def _long(base: Script, request: DemoRequest, seed: str) -> Script:
    count = request.options.tokens if request.options.tokens is not None else _DEFAULT_LONG_TOKENS
    return _replace(base, blocks=(TextBlock(tuple(long_answer_tokens(request.prompt, count, seed))),))


def _partial(request: DemoRequest, keep: float, limit: int) -> tuple[str, ...]:
    tokens = tokenize(_answer(request.prompt).text)
    return tuple(tokens[: max(1, min(limit, int(len(tokens) * keep)))])


def _error(base: Script, request: DemoRequest, seed: str) -> Script:
    tokens = _partial(request, 0.33, 40)
    message = f"The model stopped unexpectedly after {len(tokens)} tokens (scripted by the demo-error model)."
    return _replace(base, blocks=(TextBlock(tokens),), ending="error", error=ScriptError("server_error", message))


def _error_early(base: Script, request: DemoRequest, seed: str) -> Script:
    message = "Insufficient balance: add credit to continue (scripted by the demo-error-early model)."
    return _replace(base, ending="error", error=ScriptError("insufficient_balance", message))


def _cutoff(base: Script, request: DemoRequest, seed: str) -> Script:
    return _replace(base, blocks=(TextBlock(_partial(request, 0.5, 60)),), ending="cutoff")


def _stall(base: Script, request: DemoRequest, seed: str) -> Script:
    return _replace(base, blocks=(TextBlock(_partial(request, 0.25, 30)),), ending="stall")


def _malformed(base: Script, request: DemoRequest, seed: str) -> Script:
    return _replace(_plain(base, request, seed), malformed_after=0)  # placed once the length is final


def _xss(base: Script, request: DemoRequest, seed: str) -> Script:
    text = answers.XSS_TEXT
    cut = text.index("If you can read")
    return _replace(
        base,
        reasoning_tokens=tuple(tokenize(answers.XSS_REASONING)),
        blocks=_cited_blocks([(text[:cut], ()), (text[cut:], (0, 1, 2))]),
        sources=tuple(WebSource(title, url) for title, url in answers.XSS_SOURCES),
        search_query='"><img src=x onerror="window.__xss=1">',
        tool_calls=(ScriptedToolCall(answers.XSS_TOOL_NAME, tuple(tokenize(answers.XSS_TOOL_ARGUMENTS))),),
        ending="tool_calls",
    )


#: Scenarios whose answer is the plain one, cut short by a scripted fault.
_FAULTS = frozenset({"demo-error", "demo-error-early", "demo-cutoff", "demo-stall", "demo-malformed", "demo-length"})


def _continued(script: Script, request: DemoRequest, seed: str) -> Script:
    """A Continue: stream the rest of the answer that the partial text is the start of.

    The fault already happened, so the rest arrives whole; a partial that is not the start of
    this prompt's answer gets the ordinary answer, as a real model would improvise one.
    """
    whole = script
    if script.scenario in _FAULTS:
        whole = _plain(_replace(script, ending="stop", error=None), request, seed)
    done = request.continuation
    if not whole.text.startswith(done) or len(whole.text) == len(done):
        return script
    rest = tuple(tokenize(whole.text[len(done) :]))
    return _replace(
        whole, reasoning_tokens=(), blocks=(TextBlock(rest),), ending="stop", error=None, malformed_after=None
    )


_SCRIPTERS = {
    "demo": _plain,
    "demo-markdown": _markdown,
    "demo-reasoning": _reasoning,
    "demo-search": _search_script,
    "demo-tools": _tools,
    "demo-long": _long,
    "demo-slow": _plain,
    "demo-error": _error,
    "demo-error-early": _error_early,
    "demo-cutoff": _cutoff,
    "demo-stall": _stall,
    "demo-malformed": _malformed,
    "demo-xss": _xss,
    "demo-length": _plain,
    "demo-fast": _fast,
    "demo-deep": _deep,
    "demo-ratelimit": _plain,
    "demo-overloaded": _plain,
}


# ---------------------------------------------------------------------------- shared steps


def _limit(script: Script, limit: Optional[int]) -> Script:
    """Cut the script at `limit` completion tokens (reasoning, then text, then tool arguments)."""
    if limit is None or script.ending not in ("stop", "tool_calls"):
        return script
    total = (
        len(script.reasoning_tokens) + len(script.text_tokens) + sum(len(c.argument_tokens) for c in script.tool_calls)
    )
    if total <= limit:
        return script
    budget = limit
    reasoning = script.reasoning_tokens[:budget]
    budget -= len(reasoning)
    blocks: list[TextBlock] = []
    kept_chars = 0
    for block in script.blocks:
        if budget <= 0:
            break
        tokens = block.tokens[:budget]
        budget -= len(tokens)
        kept_chars += len("".join(tokens))
        blocks.append(TextBlock(tokens, tuple(c for c in block.citations if c.end <= kept_chars)))
    calls: list[ScriptedToolCall] = []
    for call in script.tool_calls:
        if budget <= 0:
            break
        tokens = call.argument_tokens[:budget]
        budget -= len(tokens)
        calls.append(ScriptedToolCall(call.name, tokens))
    return _replace(script, reasoning_tokens=reasoning, blocks=tuple(blocks), tool_calls=tuple(calls), ending="length")


def _usage(script: Script, request: DemoRequest) -> ScriptUsage:
    completion = (
        len(script.reasoning_tokens) + len(script.text_tokens) + sum(len(c.argument_tokens) for c in script.tool_calls)
    )
    # Providers cache a long shared prefix in 128-token steps once it passes 1,024 tokens.
    cached = request.history_tokens // 128 * 128 if request.history_tokens >= 1024 else 0
    return ScriptUsage(
        prompt_tokens=request.prompt_tokens,
        completion_tokens=completion,
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
        keepalive_interval=_DEFAULT_KEEPALIVE if options.keepalive_interval is None else options.keepalive_interval,
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _replace(script: Script, **changes: Any) -> Script:
    return replace(script, **changes)
