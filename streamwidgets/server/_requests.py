"""Reading a request body of any of the three APIs into what the demo model needs to know.

The three APIs spell a conversation differently (chat `messages`, Responses `input` items,
Anthropic `messages` with content blocks and a separate `system`); this module reduces each to
the same few facts: the last thing the user asked, whether the conversation ends with tool
results, the token budget, and how big the prompt is. Pure: bytes and headers in, a dataclass out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from ._errors import Rejection
from ._tokens import count_tokens

__all__ = ["DemoOptions", "DemoRequest", "parse_request"]

_PER_MESSAGE_TOKENS = 4  # role and separators, as chat templates add them
#: Characters of the question the demo model reads (its start and its end): enough to find what
#: it is about, and a bound on every scenario's work whatever was pasted. Tokens count it all.
_READ_CHARS = 4000
_PRIMING_TOKENS = 3
_IMAGE_TOKENS = 85


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
    tool_names: tuple[str, ...] = ()
    tool_properties: tuple[str, ...] = ()
    tool_results: tuple[str, ...] = ()
    thinking_disabled: bool = False
    #: A partial answer to carry on from: an assistant prefill (Messages), or an assistant turn
    #: followed by a "Continue…" instruction (what `streamwidgets.continue_request` sends).
    continuation: str = ""
    options: DemoOptions = DemoOptions()


def parse_request(api: str, body: bytes | Mapping[str, Any], headers: Mapping[str, str] | None = None) -> DemoRequest:
    """Read `body` as a request to `api`; raise `Rejection` (HTTP 400) when it makes no sense."""
    data = _load(body)
    model = data.get("model")
    if not isinstance(model, str) or not model.strip():
        raise Rejection(400, "You must provide a model parameter.", param="model", code="missing_required_parameter")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise Rejection(400, "'stream' must be a boolean.", param="stream", code="invalid_type")
    if api == "chat":
        turns, tail_results, tools = _chat(data)
    elif api == "responses":
        turns, tail_results, tools = _responses(data)
    elif api == "messages":
        turns, tail_results, tools = _messages(data)
    elif api == "completions":
        turns, tail_results, tools = _completions(data)
    else:  # pragma: no cover - the router only passes known APIs
        raise ValueError(api)
    continuation, asked = _continuation(turns)
    prompt, history = _last_user_text(turns[:asked])
    prompt_tokens = _PRIMING_TOKENS + sum(n + _PER_MESSAGE_TOKENS for _, _, n in turns)
    tool_names, tool_properties, tool_tokens = tools
    stream_options = data.get("stream_options")
    include_usage = isinstance(stream_options, Mapping) and stream_options.get("include_usage") is True
    thinking = data.get("thinking")
    return DemoRequest(
        api=api,
        model=model.strip(),
        stream=stream,
        prompt=_read_window(prompt),
        prompt_tokens=prompt_tokens + tool_tokens,
        history_tokens=history + tool_tokens,
        include_usage=include_usage,
        max_tokens=_max_tokens(data),
        tool_names=tool_names,
        tool_properties=tool_properties,
        tool_results=tail_results,
        thinking_disabled=isinstance(thinking, Mapping) and thinking.get("type") == "disabled",
        continuation=continuation,
        options=_options(data.get("demo"), headers or {}),
    )


# A turn is (role, text, tokens); the text is what the demo model reads, the tokens what it bills.
_Turn = tuple[str, str, int]
_Tools = tuple[tuple[str, ...], tuple[str, ...], int]


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


def _text_of(content: Any) -> tuple[str, int]:
    """The readable text of a content value (a string or a list of parts) and its token count."""
    if isinstance(content, str):
        return content, count_tokens(content)
    texts: list[str] = []
    tokens = 0
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping):
                kind = part.get("type")
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif kind == "tool_result":
                    inner, inner_tokens = _text_of(part.get("content", ""))
                    texts.append(inner)
                    tokens += inner_tokens - count_tokens(inner)
                elif kind in ("image", "image_url", "input_image", "document", "input_file"):
                    tokens += _IMAGE_TOKENS
    text = "\n".join(texts)
    return text, tokens + count_tokens(text)


def _chat(data: Mapping[str, Any]) -> tuple[list[_Turn], tuple[str, ...], _Tools]:
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Rejection(400, "'messages' must be a non-empty array.", param="messages", code="invalid_value")
    turns: list[_Turn] = []
    for message in messages:
        if not isinstance(message, Mapping):
            raise Rejection(400, "Each message must be an object.", param="messages", code="invalid_type")
        role = str(message.get("role", "user"))
        text, tokens = _text_of(message.get("content"))
        if message.get("tool_calls"):
            tokens += count_tokens(json.dumps(message["tool_calls"]))
        turns.append((role, text, tokens))
    tail = tuple(text for role, text, _ in _tail(turns, ("tool", "function")))
    return turns, tail, _function_tools(data.get("tools"))


def _responses(data: Mapping[str, Any]) -> tuple[list[_Turn], tuple[str, ...], _Tools]:
    turns: list[_Turn] = []
    instructions = data.get("instructions")
    if isinstance(instructions, str):
        turns.append(("system", instructions, count_tokens(instructions)))
    items = data.get("input")
    if isinstance(items, str):
        turns.append(("user", items, count_tokens(items)))
    elif isinstance(items, list) and items:
        for item in items:
            if not isinstance(item, Mapping):
                raise Rejection(400, "Each input item must be an object.", param="input", code="invalid_type")
            kind = item.get("type", "message")
            if kind == "function_call_output":
                output = item.get("output", "")
                text, tokens = _text_of(output) if not isinstance(output, str) else (output, count_tokens(output))
                turns.append(("tool", text, tokens))
            elif kind == "function_call":
                arguments = str(item.get("arguments", ""))
                turns.append(("assistant", "", count_tokens(arguments)))
            else:
                text, tokens = _text_of(item.get("content"))
                turns.append((str(item.get("role", "user")), text, tokens))
    else:
        raise Rejection(400, "'input' must be a string or a non-empty array.", param="input", code="invalid_value")
    tail = tuple(text for role, text, _ in _tail(turns, ("tool",)))
    return turns, tail, _function_tools(data.get("tools"))


def _messages(data: Mapping[str, Any]) -> tuple[list[_Turn], tuple[str, ...], _Tools]:
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Rejection(400, "messages: at least one message is required", param="messages", code="invalid_value")
    turns: list[_Turn] = []
    system = data.get("system")
    if system is not None:
        text, tokens = _text_of(system)
        turns.append(("system", text, tokens))
    tail: tuple[str, ...] = ()
    for message in messages:
        if not isinstance(message, Mapping):
            raise Rejection(400, "messages: each message must be an object", param="messages", code="invalid_type")
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_result"]
        tail = tuple(_text_of(block.get("content", ""))[0] for block in results)
        text, tokens = _text_of(content)
        turns.append(("tool" if results else str(message.get("role", "user")), text, tokens))
    tools = data.get("tools")
    names: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    tool_tokens = 0
    if isinstance(tools, list) and tools:
        first = tools[0] if isinstance(tools[0], Mapping) else {}
        names = tuple(
            str(t.get("name")) for t in tools if isinstance(t, Mapping) and "name" in t and "input_schema" in t
        )
        properties = _properties(first.get("input_schema"))
        tool_tokens = count_tokens(json.dumps(tools))
    return turns, tail, (names, properties, tool_tokens)


def _completions(data: Mapping[str, Any]) -> tuple[list[_Turn], tuple[str, ...], _Tools]:
    prompt = data.get("prompt")
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise Rejection(400, "'prompt' must be a string.", param="prompt", code="invalid_value")
    return [("user", prompt, count_tokens(prompt))], (), ((), (), 0)


def _tail(turns: list[_Turn], roles: tuple[str, ...]) -> list[_Turn]:
    """The tool results that end the conversation (the model is expected to use them now)."""
    tail: list[_Turn] = []
    for turn in reversed(turns):
        if turn[0] not in roles:
            break
        tail.append(turn)
    return tail[::-1]


def _continuation(turns: list[_Turn]) -> tuple[str, int]:
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


def _last_user_text(turns: list[_Turn]) -> tuple[str, int]:
    """The last user text, and the tokens of everything before it (the cacheable history)."""
    for index in range(len(turns) - 1, -1, -1):
        role, text, _ = turns[index]
        if role == "user" and text.strip():
            history = _PRIMING_TOKENS + sum(n + _PER_MESSAGE_TOKENS for _, _, n in turns[:index])
            return text, history
    return "", 0


def _function_tools(tools: Any) -> _Tools:
    """Names and the first tool's parameter names, from chat (nested) or Responses (flat) tools."""
    if not isinstance(tools, list) or not tools:
        return (), (), 0
    names: list[str] = []
    properties: tuple[str, ...] = ()
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        nested = tool.get("function")
        spec: Mapping[str, Any] = nested if isinstance(nested, Mapping) else tool
        if tool.get("type", "function") != "function" or not isinstance(spec.get("name"), str):
            continue
        if not names:
            properties = _properties(spec.get("parameters"))
        names.append(spec["name"])
    return tuple(names), properties, count_tokens(json.dumps(tools))


def _properties(schema: Any) -> tuple[str, ...]:
    if isinstance(schema, Mapping) and isinstance(schema.get("properties"), Mapping):
        return tuple(str(name) for name in schema["properties"])
    return ()


def _max_tokens(data: Mapping[str, Any]) -> Optional[int]:
    for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise Rejection(400, f"'{key}' must be a positive integer.", param=key, code="invalid_value")
        return value
    return None


def _options(demo: Any, headers: Mapping[str, str]) -> DemoOptions:
    if demo is not None and not isinstance(demo, Mapping):
        raise Rejection(400, "'demo' must be an object.", param="demo", code="invalid_type")
    demo = demo or {}
    lowered = {k.lower(): v for k, v in headers.items()}

    def number(key: str, header: str | None = None) -> Optional[float]:
        value: Any = demo.get(key)
        if value is None and header is not None:
            value = lowered.get(header)
        if value is None:
            return None
        try:
            result = float(value)
        except (TypeError, ValueError):
            raise Rejection(400, f"'demo.{key}' must be a number.", param=f"demo.{key}", code="invalid_value") from None
        if not result >= 0 or result == float("inf"):
            raise Rejection(
                400, f"'demo.{key}' must be a finite number >= 0.", param=f"demo.{key}", code="invalid_value"
            )
        return result

    tokens = number("tokens")
    seed = demo.get("seed")
    cutoff = demo.get("cutoff", "clean")
    if cutoff not in ("clean", "abort"):
        raise Rejection(400, "'demo.cutoff' must be 'clean' or 'abort'.", param="demo.cutoff", code="invalid_value")
    return DemoOptions(
        tokens_per_second=number("tokens_per_second", "x-demo-tokens-per-second"),
        first_token_delay=number("first_token_delay", "x-demo-first-token-delay"),
        tokens=None if tokens is None else min(int(tokens), 1_000_000),
        seed=None if seed is None else str(seed),
        keepalive_interval=number("keepalive_interval"),
        cutoff=cutoff,
    )
