"""OpenAI Chat Completions (`/chat/completions`): the request reader and the writers.

The request: `messages` (a `role: "tool"` message answers a call of the assistant message
before its run of tool messages, by `tool_call_id`), tools nested as `{"type": "function",
"function": {"name", "description", "parameters"}}`, `logprobs` with `top_logprobs`. On the
default route it also accepts the documented extras of the presets it stands in for.

The stream: one writer serves every flavor, the differences (prefix, envelope, where the finish
reason and the usage go, how sources and errors travel) read from the flavor's `ChatStyle`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar, Optional, Union

from ..._edge import Rejection
from .._fields import BOOLEAN, STAND_IN_EXTRAS, Bound
from .._flavors import ChatStyle, Flavor
from .._frames import (
    Frame,
    Steps,
    comment,
    dumps,
    group_tokens,
    ident,
    sse,
)
from .._logprobs import simulated_logprobs
from .._script import Script, ScriptError, ended
from .._tokens import count_tokens
from .._tools import PastCall, Rounds, Tool, ToolResult, ToolUse, plain_text
from ._openai import (
    PENALTIES,
    SAMPLING,
    OpenAIApi,
    openai_choice,
    openai_list,
    openai_missing,
    openai_name,
    openai_tool,
    openai_type,
    openai_values,
)
from ._spec import Endpoint, Turn, text_of

__all__ = ["Chat", "CHAT", "chat_stream", "chat_completion", "chat_usage", "FINISH_REASONS"]


class Chat(OpenAIApi):
    name = "chat"
    path = "chat/completions"
    title = "Chat Completions API (/v1/chat/completions)"
    bounds: ClassVar[Mapping[str, Bound]] = {
        **SAMPLING,
        **PENALTIES,
        "max_tokens": Bound("integer", 1),
        "max_completion_tokens": Bound("integer", 1),
        "n": Bound("integer", 1, 128),
        "top_logprobs": Bound("integer", 0, 20),
        "stream": BOOLEAN,
        "logprobs": BOOLEAN,
        "parallel_tool_calls": BOOLEAN,
        "store": BOOLEAN,
    }

    def fields(self, flavor: str) -> frozenset[str]:
        """On the default route, also the extras of the presets it stands in for."""
        fields = self.documented()
        return fields.union(*STAND_IN_EXTRAS.values()) if flavor == "demo" else fields

    def turns(self, data: Mapping[str, Any]) -> list[Turn]:
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Rejection(400, "'messages' must be a non-empty array.", param="messages", code="invalid_value")
        turns: list[Turn] = []
        for message in messages:
            if not isinstance(message, Mapping):
                raise Rejection(400, "Each message must be an object.", param="messages", code="invalid_type")
            role = str(message.get("role", "user"))
            text, tokens = text_of(message.get("content"))
            if message.get("tool_calls"):
                tokens += count_tokens(json.dumps(message["tool_calls"]))
            turns.append((role, text, tokens))
        return turns

    def tool_use(self, data: Mapping[str, Any]) -> ToolUse:
        tools = _tools(data.get("tools"))
        choice = openai_choice(data, tools, nested=True)
        results, failed = _results(data.get("messages"))
        return ToolUse(tools, choice, results, failed)

    def logprobs(self, data: Mapping[str, Any]) -> Optional[int]:
        """`logprobs: true` with `top_logprobs` alternatives; OpenAI refuses `top_logprobs` alone."""
        top = data.get("top_logprobs")
        if top is not None and data.get("logprobs") is not True:
            raise Rejection(
                400, "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled.", param="top_logprobs"
            )
        return (top or 0) if data.get("logprobs") is True else None

    def stream(self, script: Script, flavor: Flavor, endpoint: Endpoint) -> Steps:
        return chat_stream(script, flavor)

    def whole(self, script: Script, flavor: Flavor) -> dict[str, Any]:
        return chat_completion(script, flavor)


CHAT = Chat()


# ---------------------------------------------------------------------------- tools


def _tools(value: Any) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for index, tool in enumerate(openai_list(value)):
        kind = tool["type"]
        if kind not in ("function", "custom"):
            raise openai_values(f"tools[{index}].type", kind, ("function", "custom"))
        spec = tool.get(kind)
        if spec is None:
            raise openai_missing(f"tools[{index}].{kind}")
        if not isinstance(spec, Mapping):
            raise openai_type(f"tools[{index}].{kind}", "an object", spec)
        if kind == "function":
            tools.append(openai_tool(f"tools[{index}].function", spec))
        else:  # a free-form custom tool: accepted, never called by the demo model
            openai_name(f"tools[{index}].custom.name", spec.get("name"))
    return tuple(tools)


def _results(messages: Any) -> tuple[tuple[ToolResult, ...], frozenset[str]]:
    """The tool messages that end a chat conversation; every tool message must answer a call
    of the assistant message just before the run of tool messages it belongs to, and every
    call must be answered before the conversation goes on."""
    rounds = Rounds()
    if not isinstance(messages, list):
        return rounds.done()
    pending: dict[str, PastCall] = {}
    asked_at = -1
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id is None:
                raise openai_missing(f"messages[{index}].tool_call_id")
            if not isinstance(call_id, str):
                raise openai_type(f"messages[{index}].tool_call_id", "a string", call_id)
            call = pending.pop(call_id, None)
            if call is None:
                raise Rejection(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                    param=f"messages.[{index}].role",
                    code=None,
                )
            rounds.add(ToolResult(call, plain_text(message.get("content"))))
            continue
        if pending:
            raise _unanswered(asked_at, pending)
        rounds.close(question=role == "user")
        calls = message.get("tool_calls") if role == "assistant" else None
        if isinstance(calls, list):
            asked_at = index
            for number, call in enumerate(calls):
                past = _call(f"messages[{index}].tool_calls[{number}]", call)
                pending[past.id] = past
    if pending:
        raise _unanswered(asked_at, pending)
    return rounds.done()


def _call(param: str, call: Any) -> PastCall:
    if not isinstance(call, Mapping):
        raise openai_type(param, "an object", call)
    call_id = call.get("id")
    if not isinstance(call_id, str):
        raise openai_missing(f"{param}.id") if call_id is None else openai_type(f"{param}.id", "a string", call_id)
    function = call.get("function")
    if not isinstance(function, Mapping):
        raise openai_missing(f"{param}.function")
    arguments = function.get("arguments", "")
    return PastCall(call_id, str(function.get("name", "")), arguments if isinstance(arguments, str) else "")


def _unanswered(index: int, pending: Mapping[str, PastCall]) -> Rejection:
    return Rejection(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
        param=f"messages.[{index}].role",
        code=None,
    )


# ---------------------------------------------------------------------------- the stream

FINISH_REASONS = {"stop": "stop", "length": "length", "tool_calls": "tool_calls"}

# Engy's published example (14 prompt + 18 completion tokens cost 37 micro-dollars) fits these prices.
_PRICE_INPUT = 0.60e-6
_PRICE_CACHED = 0.15e-6
_PRICE_OUTPUT = 1.60e-6

_Part = Union[dict[str, Any], bytes]  # a delta, or raw bytes written as they are
#: The key a text delta carries its tokens' logprob entries under until its chunk is written.
_LOGPROBS = "\0logprobs"


def chat_stream(script: Script, flavor: Flavor) -> Steps:
    """The steps of a chat stream for `script` as `flavor` writes it."""
    style = flavor.chat
    out = _Chunks(script, style)
    if flavor.greeting is not None:
        yield Frame(comment(flavor.greeting))
    if script.sources and style.sources == "leading_event":
        sources = [{"title": s.title, "url": s.url} for s in script.sources]
        yield Frame(out.raw({"object": "venym.sources", "sources": sources}), on_clock=True)
    yield Frame(out.chunk(dict(style.role_delta)))
    finish = FINISH_REASONS.get(script.ending)
    on_last = finish if style.finish == "with_last_delta" else None
    # The finish reason may ride on the last delta: hold each delta (and the raw bytes after it)
    # until the next one shows it was not the last.
    held: Optional[tuple[dict[str, Any], int]] = None
    after: list[tuple[bytes, int]] = []
    for part, tokens in _parts(script, style, out):
        if isinstance(part, bytes):
            if held is None:
                yield Frame(part, tokens)
            else:
                after.append((part, tokens))
            continue
        if held is not None:
            yield Frame(out.chunk(held[0]), held[1])
            yield from (Frame(data, count) for data, count in after)
            after.clear()
        held = (part, tokens)
    if held is not None:
        yield Frame(out.chunk(held[0], on_last), held[1])
        yield from (Frame(data, count) for data, count in after)
    yield from ended(
        script, lambda error: [Frame(out.error(error))], lambda: (Frame(data) for data in out.ending(finish))
    )


def chat_completion(script: Script, flavor: Flavor) -> dict[str, Any]:
    """The non-streaming `chat.completion` object for `script`."""
    style = flavor.chat
    out = _Chunks(script, style)
    message: dict[str, Any] = {"role": "assistant", "content": script.text or None}
    if style.choice_extras:  # OpenAI's full shape spells out the empty fields
        message["refusal"] = None
    if script.reasoning_tokens:
        message[style.reasoning_field] = script.reasoning
    if script.logprobs is not None:
        choice_logprobs: Any = {"content": list(_entries(script, script.text_tokens, 0)), "refusal": None}
    if script.tool_calls:
        message["tool_calls"] = [
            {"id": out.call_id(i), "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for i, call in enumerate(script.tool_calls)
        ]
    if script.sources and style.sources == "annotations":
        message["annotations"] = out.annotations()
    if message["content"] is None and style.finish == "with_last_delta":
        del message["content"]  # Vultr never writes a null
    choice: dict[str, Any] = {"index": 0, "message": message, **dict(style.choice_extras)}
    if script.logprobs is not None:
        choice["logprobs"] = choice_logprobs
    choice["finish_reason"] = FINISH_REASONS.get(script.ending, "stop")
    body = out.envelope("chat.completion")
    body["choices"] = [choice]
    body["usage"] = chat_usage(script, style.usage_shape)
    if style.billing_extension:
        body["x_engy"] = out.billing()
    if script.sources and style.sources != "annotations":
        body.update(out.source_fields())
    return body


def chat_usage(script: Script, shape: str) -> dict[str, Any]:
    """The usage object of a chat response in one of the shapes `ChatStyle.usage_shape` names."""
    usage = script.usage
    body: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    if shape == "plain":
        return body
    body["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    body["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    if shape == "openai":
        body["prompt_tokens_details"]["audio_tokens"] = 0
        body["completion_tokens_details"].update(
            audio_tokens=0, accepted_prediction_tokens=0, rejected_prediction_tokens=0
        )
    elif shape == "engy":
        body["cost"] = _cost(script)
    return body


def _cost(script: Script) -> float:
    usage = script.usage
    fresh = usage.prompt_tokens - usage.cached_tokens
    dollars = fresh * _PRICE_INPUT + usage.cached_tokens * _PRICE_CACHED + usage.completion_tokens * _PRICE_OUTPUT
    return round(dollars, 9)


def _parts(script: Script, style: ChatStyle, out: _Chunks) -> Iterator[tuple[_Part, int]]:
    """The content deltas in order (reasoning, text, sources, tool calls) with their token counts."""
    sizes = style.tokens_per_chunk
    for text, count in group_tokens(script.reasoning_tokens, sizes):
        yield {style.reasoning_field: text}, count
    text_pieces = iter(script.text_tokens)
    written = 0
    if script.malformed_after is not None:  # the same iterator goes on after the broken event
        for delta, count in _text_deltas(script, itertools.islice(text_pieces, script.malformed_after), sizes, 0):
            written += count
            yield delta, count
        yield out.malformed(), 0
    yield from _text_deltas(script, text_pieces, sizes, written)
    if script.sources and style.sources == "annotations" and script.ending in FINISH_REASONS:
        yield {"annotations": out.annotations()}, 0
    calls = script.tool_calls
    headers = [
        {
            "tool_calls": [
                {"index": i, "id": out.call_id(i), "type": "function", "function": {"name": call.name, "arguments": ""}}
            ]
        }
        for i, call in enumerate(calls)
    ]
    arguments = [_argument_deltas(i, call.argument_tokens, sizes) for i, call in enumerate(calls)]
    if style.tool_order == "headers_first":
        for header in headers:
            yield header, 0
        for row in itertools.zip_longest(*arguments):
            yield from (piece for piece in row if piece is not None)
    else:
        for header, pieces in zip(headers, arguments, strict=True):
            yield header, 0
            yield from pieces


def _text_deltas(
    script: Script, tokens: Iterable[str], sizes: tuple[int, ...], position: int
) -> Iterator[tuple[_Part, int]]:
    """Text deltas of `sizes` tokens each, with their tokens' simulated logprobs when asked for."""
    if script.logprobs is None:
        for text, count in group_tokens(tokens, sizes):
            yield {"content": text}, count
        return
    pieces = iter(tokens)
    for size in itertools.cycle(sizes):
        group = list(itertools.islice(pieces, size))
        if not group:
            return
        yield {"content": "".join(group), _LOGPROBS: list(_entries(script, group, position))}, len(group)
        position += len(group)


def _entries(script: Script, tokens: Iterable[str], position: int) -> Iterator[dict[str, Any]]:
    top = script.logprobs or 0
    for offset, token in enumerate(tokens):
        yield simulated_logprobs(token, position + offset, top, script.temperature)


def _argument_deltas(index: int, tokens: Iterable[str], sizes: tuple[int, ...]) -> Iterator[tuple[_Part, int]]:
    for text, count in group_tokens(tokens, sizes):
        yield {"tool_calls": [{"index": index, "function": {"arguments": text}}]}, count


class _Chunks:
    """Serializes the chunks of one response: the fixed envelope fields and the flavor's spelling."""

    def __init__(self, script: Script, style: ChatStyle) -> None:
        self.script = script
        self.style = style
        self.id = ident("chatcmpl-", script.nonce)

    def envelope(self, kind: str = "chat.completion.chunk") -> dict[str, Any]:
        fields = {
            "id": self.id,
            "object": kind,
            "created": self.script.created,
            "model": self.script.model,
            "system_fingerprint": "fp_demo",
        }
        return {key: fields[key] for key in self.style.envelope}

    def raw(self, payload: dict[str, Any]) -> bytes:
        return sse(dumps(payload, ascii_only=self.style.ascii_json), prefix=self.style.data_prefix)

    def chunk(self, delta: Optional[dict[str, Any]], finish: Optional[str] = None, **extra: Any) -> bytes:
        """One chunk; `delta=None` makes the `choices: []` kind that carries only usage."""
        payload = self.envelope()
        if delta is None:
            payload["choices"] = []
        else:
            logprobs = None
            if _LOGPROBS in delta:
                delta = dict(delta)
                logprobs = {"content": delta.pop(_LOGPROBS), "refusal": None}
            choice: dict[str, Any] = {"index": 0, "delta": delta, **dict(self.style.choice_extras)}
            if logprobs is not None:
                choice["logprobs"] = logprobs
            choice["finish_reason"] = finish
            payload["choices"] = [choice]
        if self.script.include_usage and self.style.usage_null_when_asked and self.style.usage == "if_asked":
            payload["usage"] = None
        payload.update(extra)
        return self.raw(payload)

    def ending(self, finish: Optional[str]) -> list[bytes]:
        """The finish chunk, the usage chunk(s) and `[DONE]`, as the flavor orders them."""
        style = self.style
        usage = chat_usage(self.script, style.usage_shape)
        frames: list[bytes] = []
        if style.finish != "never":
            extra: dict[str, Any] = {}
            if style.usage in ("on_finish_chunk", "final_one_choice"):
                extra["usage"] = usage
            if style.billing_extension:
                extra["x_engy"] = self.billing()
            if self.script.sources and style.sources == "trailing_fields":
                extra.update(self.source_fields())
            frames.append(self.chunk({}, finish, **extra))
        if style.usage == "final_empty_choices" or (
            style.usage in ("if_asked", "on_finish_chunk") and self.script.include_usage
        ):
            frames.append(self.chunk(None, usage=usage))
        frames.append(sse("[DONE]", prefix=style.data_prefix))
        return frames

    def error(self, error: ScriptError) -> bytes:
        fields = {
            "message": error.message,
            "type": "server_error" if error.kind == "server_error" else "insufficient_quota",
            "param": None,
            "code": None if error.kind == "server_error" else "insufficient_balance",
        }
        payload = {"error": {key: fields[key] for key in self.style.error_fields}}
        data = dumps(payload, ascii_only=self.style.ascii_json, spaced=self.style.error_spaced)
        if self.style.error == "event":
            return sse(data, event="error", prefix=self.style.data_prefix)
        return sse(data, prefix=self.style.data_prefix)

    def malformed(self) -> bytes:
        """A chunk cut off inside a JSON string: the one event a client cannot parse."""
        head = dumps(self.envelope(), ascii_only=self.style.ascii_json)[:-1]
        return (f'{self.style.data_prefix}{head},"choices":[{{"index":0,"delta":{{"content":"\\u00\n\n').encode()

    def call_id(self, index: int) -> str:
        return ident("call_", self.script.nonce, f"call{index}")

    def annotations(self) -> list[dict[str, Any]]:
        sources = self.script.sources
        return [
            {
                "type": "url_citation",
                "url_citation": {
                    "url": sources[c.source].url,
                    "title": sources[c.source].title,
                    "start_index": c.start,
                    "end_index": c.end,
                    "content": c.cited_text,
                },
            }
            for block in self.script.blocks
            for c in block.citations
        ]

    def source_fields(self) -> dict[str, Any]:
        sources = self.script.sources
        return {
            "citations": [s.url for s in sources],
            "search_results": [{"title": s.title, "url": s.url} for s in sources],
            "num_search_queries": 1,
        }

    def billing(self) -> dict[str, Any]:
        return {
            "request_id": ident("req_", self.script.nonce, "engy"),
            "charged_micro": round(_cost(self.script) * 1_000_000),
        }
