"""What OpenAI's APIs share (Chat Completions, Responses, the legacy completions): the words of
their 400s and 404s, their error envelope, and the readers of their function tools.

`OpenAIApi` is the base of those three specs. OpenAI names a value's type as "a string", "an
integer", "a decimal" (`json_kind`), quotes a parameter's path (`tools[0].function.name`), and
answers every refusal as `{"error": {"message", "type", "param", "code"}}`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..._edge import Rejection
from .._fields import FIELDS, Bound, Unknown, number_text
from .._tools import NO_SCHEMA, Tool, ToolChoice
from ._spec import ApiSpec

__all__ = [
    "OpenAIApi",
    "json_kind",
    "SAMPLING",
    "PENALTIES",
    "openai_type",
    "openai_missing",
    "openai_values",
    "openai_name",
    "openai_tool",
    "openai_list",
    "openai_choice",
]

SAMPLING = {"temperature": Bound("decimal", 0, 2), "top_p": Bound("decimal", 0, 1)}
PENALTIES = {"frequency_penalty": Bound("decimal", -2, 2), "presence_penalty": Bound("decimal", -2, 2)}

_OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]+")
_OPENAI_NAME_CHARS = 64


def json_kind(value: Any) -> str:
    """A JSON value's type as OpenAI's errors name it: "a string", "an integer", "a decimal", "null"…"""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, Mapping) else "null"


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


class OpenAIApi(ApiSpec):
    """An API in OpenAI's words and envelope."""

    def documented(self) -> frozenset[str]:
        return FIELDS[self.name]

    def unrecognized(self, unknown: Unknown) -> Rejection:
        listed = ", ".join(field + hint for field, hint in unknown.parts) + unknown.more
        return Rejection(400, f"Unrecognized request argument{'s' if unknown.count > 1 else ''} supplied: {listed}")

    def missing(self, name: str) -> Rejection:
        return Rejection(400, "You must provide a model parameter.", param=name, code="missing_required_parameter")

    def wrong_type(self, name: str, kind: str, value: Any) -> Rejection:
        message = f"Invalid type for '{name}': expected {_a(kind)}, but got {json_kind(value)} instead."
        return Rejection(400, message, param=name, code="invalid_type")

    def out_of_range(self, name: str, bound: Bound, value: Any, *, above: bool) -> Rejection:
        limit = bound.high if above else bound.low
        side, relation, short = ("above maximum", "<=", "above_max") if above else ("below minimum", ">=", "below_min")
        message = (
            f"Invalid '{name}': {bound.kind} {side} value. Expected a value {relation} {number_text(limit)}, "
            f"but got {number_text(value)} instead."
        )
        return Rejection(400, message, param=name, code=f"{bound.kind}_{short}_value")

    def model_not_found(self, model: str, hint: str) -> str:
        return f"The model '{model}' does not exist or you do not have access to it. {hint}"

    def error_body(self, rejection: Rejection, request_id: str) -> bytes:
        envelope = {
            "error": {
                "message": rejection.message,
                "type": rejection.type,
                "param": rejection.param,
                "code": rejection.code,
            }
        }
        return json.dumps(envelope).encode()


# ---------------------------------------------------------------------------- function tools


def openai_type(param: str, expected: str, value: Any) -> Rejection:
    return Rejection(
        400,
        f"Invalid type for '{param}': expected {expected}, but got {json_kind(value)} instead.",
        param=param,
        code="invalid_type",
    )


def openai_missing(param: str) -> Rejection:
    return Rejection(400, f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter")


def openai_values(param: str, value: Any, allowed: tuple[str, ...]) -> Rejection:
    quoted = [f"'{v}'" for v in allowed]
    listed = " and ".join(quoted) if len(quoted) == 2 else ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    shown = value if isinstance(value, str) else json.dumps(value)
    return Rejection(
        400,
        f"Invalid value: '{str(shown)[:60]}'. Supported values are: {listed}.",
        param=param,
        code="invalid_value",
    )


def openai_name(param: str, name: Any) -> str:
    if name is None:
        raise openai_missing(param)
    if not isinstance(name, str):
        raise openai_type(param, "a string", name)
    if len(name) > _OPENAI_NAME_CHARS:
        raise Rejection(
            400,
            f"Invalid '{param}': string too long. Expected a string with maximum length {_OPENAI_NAME_CHARS}, "
            f"but got a string with length {len(name)} instead.",
            param=param,
            code="string_above_max_length",
        )
    if not _OPENAI_NAME.fullmatch(name):
        raise Rejection(
            400,
            f"Invalid '{param}': string does not match pattern. Expected a string that matches the pattern "
            "'^[a-zA-Z0-9_-]+$'.",
            param=param,
            code="invalid_value",
        )
    return name


def openai_tool(param: str, spec: Mapping[str, Any]) -> Tool:
    name = openai_name(f"{param}.name", spec.get("name"))
    description = spec.get("description", "")
    if description is not None and not isinstance(description, str):
        raise openai_type(f"{param}.description", "a string", description)
    parameters = spec.get("parameters")
    if parameters is not None and not isinstance(parameters, Mapping):
        raise openai_type(f"{param}.parameters", "an object", parameters)
    return Tool(name, description or "", parameters or NO_SCHEMA)


def openai_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise openai_type("tools", "an array", value)
    for index, tool in enumerate(value):
        if not isinstance(tool, Mapping):
            raise openai_type(f"tools[{index}]", "an object", tool)
        if "type" not in tool:
            raise openai_missing(f"tools[{index}].type")
    return value


def openai_choice(data: Mapping[str, Any], tools: tuple[Tool, ...], *, nested: bool) -> ToolChoice:
    parallel = data.get("parallel_tool_calls") is not False
    value = data.get("tool_choice")
    if value is None:
        return ToolChoice(parallel=parallel)
    if isinstance(value, str):
        if value not in ("none", "auto", "required"):
            raise openai_values("tool_choice", value, ("none", "auto", "required"))
        if value == "required" and not tools:
            raise _choice_without_tools()
        return ToolChoice(value, parallel=parallel)
    if not isinstance(value, Mapping):
        raise openai_type("tool_choice", "an object", value)
    kind = value.get("type")
    if kind != "function":  # a built-in tool (Responses) or `allowed_tools`: the model decides
        return ToolChoice(parallel=parallel)
    if not tools:
        raise _choice_without_tools()
    spec = value.get("function") if nested else value
    if nested and not isinstance(spec, Mapping):
        raise openai_missing("tool_choice.function")
    assert isinstance(spec, Mapping)
    param = "tool_choice.function.name" if nested else "tool_choice.name"
    name = openai_name(param, spec.get("name"))
    if name not in {tool.name for tool in tools}:
        raise Rejection(
            400,
            f"Invalid value for '{param}': no function named '{name}' was specified in the 'tools' parameter.",
            param=param,
            code="invalid_value",
        )
    return ToolChoice("named", name, parallel)


def _choice_without_tools() -> Rejection:
    return Rejection(
        400,
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
        param="tool_choice",
        code=None,
    )
