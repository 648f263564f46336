"""A chat completions request to the local model, read and checked the way OpenAI checks it.

Pure: a body in, a `ChatRequest` out, or a `Rejection` (HTTP 400 with `param` and `code`, in
OpenAI's error envelope) that says in plain words what is wrong. What the local model cannot do
(tools, images, `n` > 1, JSON mode) is refused too, rather than silently ignored: a student
should learn that the request asked for something this model does not have.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from ._errors import Rejection, json_kind

__all__ = ["ChatRequest", "parse_chat", "DEFAULT_TEMPERATURE", "DEFAULT_TOP_P", "MAX_TOP_LOGPROBS"]

#: Sampling defaults for a request that names none: SmolLM2's model card suggests these (OpenAI's
#: own defaults, 1.0 and 1.0, make a 135M model ramble).
DEFAULT_TEMPERATURE = 0.2
DEFAULT_TOP_P = 0.9
MAX_TOP_LOGPROBS = 20
_MAX_STOPS = 4
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
#: Fields that ask for something the local model does not do, and why it is refused.
_UNSUPPORTED = {
    "tools": "The local model does not call tools.",
    "functions": "The local model does not call functions.",
    "audio": "The local model does not produce audio.",
    "prediction": "The local model does not take predicted outputs.",
}


@dataclass(frozen=True)
class ChatRequest:
    """What one request asks of the model; `messages` are (role, text) pairs, roles as the chat
    template knows them (`developer` becomes `system`)."""

    messages: tuple[tuple[str, str], ...]
    model: str = ""
    stream: bool = False
    include_usage: bool = False
    max_tokens: Optional[int] = None
    temperature: float = DEFAULT_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    seed: Optional[int] = None
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    logit_bias: Mapping[int, float] = field(default_factory=dict)


def parse_chat(body: bytes) -> ChatRequest:
    """The request in `body`, or raise `Rejection` (400) naming the offending parameter."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise Rejection(400, "The body is not valid JSON.", code="invalid_json") from None
    if not isinstance(data, dict):
        raise Rejection(400, "The body must be a JSON object.", code="invalid_type")
    for name, why in _UNSUPPORTED.items():
        if data.get(name):
            raise Rejection(400, why, param=name, code="unsupported_parameter")
    stream = _bool(data, "stream", False)
    options = data.get("stream_options")
    include_usage = False
    if options is not None:
        if not stream:
            raise Rejection(
                400,
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                param="stream_options",
                code="invalid_value",
            )
        if not isinstance(options, dict):
            raise _wrong_type("stream_options", "an object", options)
        include_usage = _bool(options, "include_usage", False, param="stream_options.include_usage")
    n = _int(data, "n", 1, low=1)
    if n != 1:
        raise Rejection(
            400, "The local model answers one choice per request ('n' must be 1).", param="n", code="invalid_value"
        )
    fmt = data.get("response_format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
        raise Rejection(
            400,
            "The local model writes text only ('response_format' must be text).",
            param="response_format",
            code="unsupported_value",
        )
    max_tokens = _int(data, "max_completion_tokens", None, low=1)
    if max_tokens is None:
        max_tokens = _int(data, "max_tokens", None, low=1)
    logprobs = _bool(data, "logprobs", False)
    top = _int(data, "top_logprobs", 0, low=0, high=MAX_TOP_LOGPROBS) or 0
    if top and not logprobs:
        raise Rejection(400, "'top_logprobs' needs 'logprobs' to be true.", param="top_logprobs", code="invalid_value")
    model = data.get("model", "")
    if not isinstance(model, str):
        raise _wrong_type("model", "a string", model)
    seed = _int(data, "seed", None)
    return ChatRequest(
        messages=_messages(data.get("messages")),
        model=model,
        stream=stream,
        include_usage=include_usage,
        max_tokens=max_tokens,
        temperature=_number(data, "temperature", DEFAULT_TEMPERATURE, 0.0, 2.0),
        top_p=_number(data, "top_p", DEFAULT_TOP_P, 0.0, 1.0),
        seed=seed,
        stop=_stops(data.get("stop")),
        logprobs=logprobs,
        top_logprobs=top,
        frequency_penalty=_number(data, "frequency_penalty", 0.0, -2.0, 2.0),
        presence_penalty=_number(data, "presence_penalty", 0.0, -2.0, 2.0),
        logit_bias=_logit_bias(data.get("logit_bias")),
    )


def _messages(value: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        raise Rejection(
            400, "Missing required parameter: 'messages'.", param="messages", code="missing_required_parameter"
        )
    if not isinstance(value, list):
        raise _wrong_type("messages", "an array", value)
    if not value:
        raise Rejection(400, "'messages' must hold at least one message.", param="messages", code="empty_array")
    out = []
    for i, message in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise _wrong_type(where, "an object", message)
        role = message.get("role")
        if role == "tool" or message.get("tool_calls"):
            raise Rejection(400, "The local model does not call tools.", param=where, code="unsupported_value")
        if role not in _ROLES:
            raise Rejection(
                400,
                f"Invalid value for '{where}.role': {_show(role)}. Supported: system, developer, user, assistant.",
                param=f"{where}.role",
                code="invalid_value",
            )
        out.append((_ROLES[role], _content(message.get("content"), f"{where}.content")))
    return tuple(out)


def _content(value: Any, where: str) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for j, part in enumerate(value):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                kind = part.get("type") if isinstance(part, dict) else None
                raise Rejection(
                    400,
                    f"The local model reads text only; '{where}[{j}]' is {_show(kind)}.",
                    param=f"{where}[{j}]",
                    code="unsupported_value",
                )
            texts.append(part["text"])
        return "".join(texts)
    raise _wrong_type(where, "a string or an array of text parts", value)


def _stops(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise _wrong_type("stop", "a string or an array of strings", value)
    if len(stops) > _MAX_STOPS:
        raise Rejection(400, f"'stop' holds at most {_MAX_STOPS} sequences.", param="stop", code="invalid_value")
    return tuple(s for s in stops if s)


def _logit_bias(value: Any) -> dict[int, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _wrong_type("logit_bias", "an object of token ids to numbers", value)
    bias = {}
    for key, number in value.items():
        if not (isinstance(key, str) and key.isdigit()):
            raise Rejection(
                400,
                f"Invalid key in 'logit_bias': {_show(key)} is not a token id.",
                param="logit_bias",
                code="invalid_value",
            )
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not -100 <= number <= 100:
            raise Rejection(
                400,
                f"Invalid value in 'logit_bias' for {key}: a number from -100 to 100.",
                param="logit_bias",
                code="invalid_value",
            )
        bias[int(key)] = float(number)
    return bias


def _bool(data: Mapping[str, Any], name: str, default: bool, *, param: Optional[str] = None) -> bool:
    value = data.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _wrong_type(param or name, "a boolean", value)
    return value


def _int(
    data: Mapping[str, Any], name: str, default: Optional[int], *, low: Optional[int] = None, high: Optional[int] = None
) -> Optional[int]:
    value = data.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong_type(name, "an integer", value)
    _check_range(name, value, low, high)
    return value


def _number(data: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = data.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _wrong_type(name, "a number", value)
    _check_range(name, value, low, high)
    return float(value)


def _check_range(name: str, value: float, low: Optional[float], high: Optional[float]) -> None:
    if low is not None and value < low:
        raise Rejection(
            400, f"Invalid '{name}': {value} is below the minimum, {low:g}.", param=name, code="below_min_value"
        )
    if high is not None and value > high:
        raise Rejection(
            400, f"Invalid '{name}': {value} is above the maximum, {high:g}.", param=name, code="above_max_value"
        )


def _wrong_type(name: str, expected: str, value: Any) -> Rejection:
    return Rejection(
        400, f"Invalid type for '{name}': expected {expected}, got {json_kind(value)}.", param=name, code="invalid_type"
    )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."
