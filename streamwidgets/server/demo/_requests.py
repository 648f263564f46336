"""Reading a request body of any API into what the demo model needs to know.

The APIs spell a conversation differently (chat `messages`, Responses `input` items, Anthropic
`messages` with content blocks and a separate `system`...); each API's spec (`apis/`) reads its
own spelling, and this module reduces them all to the same few facts: the last thing the user
asked, the tools and the tool results that end the conversation, the token budget, how big the
prompt is, and the `demo` options. Pure: bytes and headers in, a dataclass out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from .._edge import Rejection
from ._fields import unknown_fields
from ._tools import ToolUse
from .apis import APIS, ApiSpec, Endpoint, Turn, field_home

__all__ = ["DemoOptions", "DemoRequest", "parse_request"]

_PER_MESSAGE_TOKENS = 4  # role and separators, as chat templates add them
#: Characters of the question the demo model reads (its start and its end): enough to find what
#: it is about, and a bound on every scenario's work whatever was pasted. Tokens count it all.
_READ_CHARS = 4000
_PRIMING_TOKENS = 3


@dataclass(frozen=True)
class DemoOptions:
    """Per-request knobs: the body's `"demo": {...}` object, then `X-Demo-*` headers.

    `None` means "the scenario's default". A `tokens_per_second` of 0 streams as fast as possible.
    """

    tokens_per_second: Optional[float] = None
    first_token_delay: Optional[float] = None
    tokens: Optional[int] = None
    seed: Optional[str] = None
    keepalive_interval: Optional[float] = None
    #: How `demo-cutoff` ends: `clean` (the HTTP body ends properly, without the dialect's
    #: terminator) or `abort` (the socket closes mid-body: a broken connection).
    cutoff: str = "clean"


@dataclass(frozen=True)
class DemoRequest:
    """What the demo model reads from a request, whatever API it came through. `prompt` is the
    last question, or its start and end when it is longer than the model reads."""

    api: str
    model: str
    stream: bool
    prompt: str
    prompt_tokens: int
    history_tokens: int
    include_usage: bool = False
    max_tokens: Optional[int] = None
    #: The tools declared, the tool choice, and the tool results that end the conversation.
    tool_use: ToolUse = field(default_factory=ToolUse)
    thinking_disabled: bool = False
    #: The reasoning is spent and counted but not sent (Gemini without `includeThoughts`).
    reasoning_hidden: bool = False
    #: A partial answer to carry on from: an assistant prefill (Messages), or an assistant turn
    #: followed by a "Continue…" instruction (what `StreamRequest.continued()` sends).
    continuation: str = ""
    options: DemoOptions = DemoOptions()
    #: Alternatives per token when the request asked for log-probabilities (chat `logprobs`,
    #: Responses' `include`), else None: the demo then simulates them (`_logprobs`).
    logprobs: Optional[int] = None
    #: The sampling temperature asked for (None: the API's default); the simulated
    #: probabilities spread out as it rises, although the scripted text stays the same.
    temperature: Optional[float] = None


def parse_request(
    api: str,
    body: bytes | Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
    *,
    flavor: str = "demo",
    endpoint: Optional[Endpoint] = None,
) -> DemoRequest:
    """Read `body` as a request to `api` on `flavor`'s route (`endpoint`: what its path said);
    raise `Rejection` (HTTP 400) when a real provider would refuse it or it makes no sense."""
    spec = APIS[api]
    endpoint = endpoint or Endpoint()
    data = _load(body)
    accepted = spec.fields(flavor)
    unknown = [name for name in data if name not in accepted]
    if unknown:
        raise spec.unrecognized(unknown_fields(unknown, accepted, home=lambda name: field_home(name, spec)))
    spec.check(data, endpoint)
    model = spec.model(data, endpoint)
    stream = spec.streaming(data, endpoint)
    turns = spec.turns(data)
    continuation, asked = _continuation(turns)
    prompt, history = _last_user_text(turns[:asked])
    prompt_tokens = _PRIMING_TOKENS + sum(n + _PER_MESSAGE_TOKENS for _, _, n in turns)
    tool_use = spec.tool_use(data)
    tool_tokens = spec.tool_tokens(data)
    return DemoRequest(
        api=api,
        model=model.strip(),
        stream=stream,
        prompt=_read_window(prompt),
        prompt_tokens=prompt_tokens + tool_tokens,
        history_tokens=history + tool_tokens,
        include_usage=spec.include_usage(data),
        max_tokens=spec.max_tokens(data),
        tool_use=tool_use,
        thinking_disabled=spec.thinking_disabled(data),
        reasoning_hidden=spec.reasoning_hidden(data),
        continuation=continuation,
        options=_options(spec, data.get("demo"), headers or {}),
        logprobs=spec.logprobs(data),
        temperature=spec.temperature(data),
    )


def _load(body: bytes | Mapping[str, Any]) -> Mapping[str, Any]:
    """The body as a JSON object. Bodies are untrusted: nesting is bounded (everything after
    may recurse), numbers are bounded in digits, and `NaN`/`Infinity` are not JSON."""
    if isinstance(body, Mapping):
        return body
    try:
        text = body.decode("utf-8")
        data = json.loads(text, parse_int=_integer, parse_constant=_constant) if text.strip() else None
    except UnicodeDecodeError:
        raise Rejection(400, "The body is not valid JSON: it is not UTF-8 text.", code="invalid_json") from None
    except RecursionError:
        raise _too_deep() from None
    except json.JSONDecodeError as exc:
        raise Rejection(400, f"The body is not valid JSON: {exc}.", code="invalid_json") from None
    if _deeper_than(data, _MAX_DEPTH):
        raise _too_deep()
    if not isinstance(data, dict):
        raise Rejection(400, "The body must be a JSON object.", code="invalid_json")
    return data


#: Levels of lists and objects in a body (tool schemas use a handful).
_MAX_DEPTH = 64
#: Digits of an integer in a body (Python's own limit, 4,300, is slow to reach and version-bound).
_MAX_DIGITS = 64


def _too_deep() -> Rejection:
    return Rejection(400, f"The body is nested more than {_MAX_DEPTH} levels deep.", code="invalid_json")


def _integer(digits: str) -> int:
    if len(digits.lstrip("-")) > _MAX_DIGITS:
        raise Rejection(
            400,
            f"The body holds a number of {len(digits):,} digits; at most {_MAX_DIGITS} are accepted.",
            code="invalid_json",
        )
    return int(digits)


def _constant(name: str) -> float:
    raise Rejection(400, f"The body is not valid JSON: {name} is not a JSON value.", code="invalid_json")


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether `data` nests lists and objects more than `limit` levels (without recursing)."""
    level: list[Any] = [data] if isinstance(data, (dict, list)) else []
    for _ in range(limit):
        level = [
            child
            for value in level
            for child in (value.values() if isinstance(value, dict) else value)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return False
    return bool(level)


def _continuation(turns: list[Turn]) -> tuple[str, int]:
    """(the partial answer to continue, how many turns hold the original question)."""
    if turns and turns[-1][0] == "assistant" and turns[-1][1].strip():
        return turns[-1][1], len(turns) - 1
    if (
        len(turns) >= 2
        and turns[-1][0] == "user"
        and turns[-1][1].lstrip().lower().startswith("continue")
        and turns[-2][0] == "assistant"
        and turns[-2][1].strip()
    ):
        return turns[-2][1], len(turns) - 2
    return "", len(turns)


def _read_window(text: str) -> str:
    """`text`, or its first and last `_READ_CHARS / 2` characters when it is longer."""
    if len(text) <= _READ_CHARS:
        return text
    half = _READ_CHARS // 2
    return f"{text[:half]}\n…\n{text[-half:]}"


def _last_user_text(turns: list[Turn]) -> tuple[str, int]:
    """The last user text, and the tokens of everything before it (the cacheable history)."""
    for index in range(len(turns) - 1, -1, -1):
        role, text, _ = turns[index]
        if role == "user" and text.strip():
            history = _PRIMING_TOKENS + sum(n + _PER_MESSAGE_TOKENS for _, _, n in turns[:index])
            return text, history
    return "", 0


@dataclass(frozen=True)
class _Knob:
    """A bound on one `demo` option. The server runs in the user's kernel and every local user of a
    shared machine can reach it, so no option may make one small request cost much: `tokens`
    bounds the memory of a script, `keepalive_interval` the wake-ups of a stream, and the others
    how long a stream holds a connection."""

    low: float
    high: float
    #: The bound in words, for the 400 that names it.
    rule: str
    #: A value that is always allowed besides the range (0: none / as fast as possible).
    off: Optional[float] = None


_KNOBS = {
    "tokens": _Knob(0, 100_000, "a number of tokens from 0 to 100,000"),
    "tokens_per_second": _Knob(1, 100_000, "0 (as fast as possible) or from 1 to 100,000 tokens per second", off=0),
    "first_token_delay": _Knob(0, 600, "from 0 to 600 seconds"),
    "keepalive_interval": _Knob(0.05, 600, "0 (no heartbeats) or from 0.05 to 600 seconds", off=0),
}
_HEADERS = {"tokens_per_second": "x-demo-tokens-per-second", "first_token_delay": "x-demo-first-token-delay"}
_DEMO_OPTIONS = (*_KNOBS, "seed", "cutoff")
#: Characters of a `demo.seed` (it keys the memory of the turned-away scenarios).
_SEED_CHARS = 64


def _options(spec: ApiSpec, demo: Any, headers: Mapping[str, str]) -> DemoOptions:
    if demo is not None and not isinstance(demo, Mapping):
        raise Rejection(400, "'demo' must be an object.", param="demo", code="invalid_type")
    demo = demo or {}
    unknown = [name for name in demo if name not in _DEMO_OPTIONS]
    if unknown:
        raise spec.unrecognized(unknown_fields(unknown, _DEMO_OPTIONS, prefix="demo."))
    lowered = {k.lower(): v for k, v in headers.items()}

    def number(key: str) -> Optional[float]:
        value: Any = demo.get(key)
        if value is None and key in _HEADERS:
            value = lowered.get(_HEADERS[key])
        if value is None:
            return None
        knob = _KNOBS[key]
        try:
            result = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            result = math.nan
        if not (knob.low <= result <= knob.high or result == knob.off):
            raise Rejection(
                400,
                f"'demo.{key}' must be {knob.rule}, not {_shown(value)}.",
                param=f"demo.{key}",
                code="invalid_value",
            )
        return result

    tokens = number("tokens")
    seed = demo.get("seed")
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, (str, int, float)) or len(str(seed)) > _SEED_CHARS
    ):
        raise Rejection(
            400,
            f"'demo.seed' must be a string or a number of at most {_SEED_CHARS} characters.",
            param="demo.seed",
            code="invalid_value",
        )
    cutoff = demo.get("cutoff", "clean")
    if cutoff not in ("clean", "abort"):
        raise Rejection(400, "'demo.cutoff' must be 'clean' or 'abort'.", param="demo.cutoff", code="invalid_value")
    return DemoOptions(
        tokens_per_second=number("tokens_per_second"),
        first_token_delay=number("first_token_delay"),
        tokens=None if tokens is None else int(tokens),
        seed=None if seed is None else str(seed),
        keepalive_interval=number("keepalive_interval"),
        cutoff=cutoff,
    )


def _shown(value: Any) -> str:
    """A rejected value, quoted briefly (a header or a body may hold anything)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"
    text = repr(value) if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 40 else text[:40] + "..."
