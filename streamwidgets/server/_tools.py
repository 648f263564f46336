"""Reading the tools of a request: the tools declared, the tool choice, and the calls and results
of the conversation, checked as the real APIs check them.

Each API spells function calling its own way. Chat nests a tool as `{"type": "function",
"function": {"name", "description", "parameters"}}` and answers a call with a `role: "tool"`
message naming its `tool_call_id`; Responses flattens the tool (`{"type": "function", "name",
...}`) and carries calls and results as `function_call` / `function_call_output` input items
joined by `call_id`; Messages declares `{"name", "description", "input_schema"}` and answers an
assistant's `tool_use` blocks with `tool_result` blocks (`tool_use_id`, `is_error`) in the very
next user turn. This module reduces the three to the same facts (`ToolUse`) and refuses, with the
provider's own 400 wording, what the provider refuses: a tool without a name, a schema that is
not an object, a tool choice naming no declared tool, a result answering no call, a call left
without its result. Pure: a parsed body in, a dataclass out or a `Rejection` raised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from ._errors import Rejection, json_kind

__all__ = ["Tool", "ToolChoice", "PastCall", "ToolResult", "ToolUse", "read_tool_use"]


@dataclass(frozen=True)
class Tool:
    """A function the client declared: its name, what it is for, and the JSON schema of its
    arguments (an empty object schema when none was given)."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class ToolChoice:
    """How the request lets the model call: `auto`, `none`, `required` (Anthropic's `any`) or
    `named` (then `name`); `parallel` is False under `parallel_tool_calls: false` or Anthropic's
    `disable_parallel_tool_use`."""

    mode: str = "auto"
    name: Optional[str] = None
    parallel: bool = True


@dataclass(frozen=True)
class PastCall:
    """A call the assistant made earlier in the conversation, as the client sent it back."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolResult:
    """What the client's tool returned for `call`; `is_error` as Anthropic's flag says it."""

    call: PastCall
    content: str
    is_error: bool = False

    @property
    def failed(self) -> bool:
        """Whether the call failed: Anthropic's `is_error`, or a result that says it is an error
        (its text starts with "Error", or it is an `{"error": ...}` object)."""
        head = self.content.lstrip()[:16].lower()  # a result may be megabytes: read only its start
        return self.is_error or head.startswith("error") or re.match(r'\{\s*"error"', head) is not None


@dataclass(frozen=True)
class ToolUse:
    """The tool facts of one request: what may be called, how, and the results that end the
    conversation (the model is expected to use them now; empty when a person spoke last)."""

    tools: tuple[Tool, ...] = ()
    choice: ToolChoice = ToolChoice()
    results: tuple[ToolResult, ...] = ()
    #: The tools whose calls failed in an earlier round of tool calls since the last question
    #: (a model retries a failed call once, not forever).
    failed_before: frozenset[str] = frozenset()


class _Rounds:
    """The rounds of tool results since the last question, as a conversation is walked."""

    def __init__(self) -> None:
        self.results: list[ToolResult] = []
        self.failed: set[str] = set()

    def add(self, result: ToolResult) -> None:
        self.results.append(result)

    def close(self, *, question: bool) -> None:
        """A turn that is not a tool result: the current round is over (and with a new
        question, everything before it)."""
        self.failed.update(r.call.name for r in self.results if r.failed)
        self.results = []
        if question:
            self.failed.clear()

    def done(self) -> tuple[tuple[ToolResult, ...], frozenset[str]]:
        return tuple(self.results), frozenset(self.failed)


_NO_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}
_OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]+")
_ANTHROPIC_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_OPENAI_NAME_CHARS = 64
#: Responses tools the model may be offered but never calls itself (the provider runs them).
_RESPONSES_BUILT_IN = (
    "file_search",
    "computer_use_preview",
    "web_search",
    "web_search_preview",
    "web_search_preview_2025_03_11",
    "web_search_2025_08_26",
    "mcp",
    "code_interpreter",
    "image_generation",
    "local_shell",
    "shell",
    "custom",
    "apply_patch",
)
#: Anthropic's server and client tools with a versioned type (`web_search_20250305`...).
_ANTHROPIC_TYPED = re.compile(r"(web_search|web_fetch|code_execution|bash|text_editor|computer|memory)_\d{8}")


def read_tool_use(api: str, data: Mapping[str, Any]) -> ToolUse:
    """The tools, tool choice and trailing tool results of a request body to `api`."""
    if api == "chat":
        tools = _chat_tools(data.get("tools"))
        choice = _openai_choice(data, tools, nested=True)
        results, failed = _chat_results(data.get("messages"))
    elif api == "responses":
        tools = _responses_tools(data.get("tools"))
        choice = _openai_choice(data, tools, nested=False)
        results, failed = _responses_results(data.get("input"), checked=data.get("previous_response_id") is None)
    elif api == "messages":
        tools = _anthropic_tools(data.get("tools"))
        choice = _anthropic_choice(data.get("tool_choice"), tools)
        results, failed = _anthropic_results(data.get("messages"))
    else:
        return ToolUse()
    return ToolUse(tools, choice, results, failed)


# ---------------------------------------------------------------------------- OpenAI's words


def _openai_type(param: str, expected: str, value: Any) -> Rejection:
    return Rejection(
        400,
        f"Invalid type for '{param}': expected {expected}, but got {json_kind(value)} instead.",
        param=param,
        code="invalid_type",
    )


def _openai_missing(param: str) -> Rejection:
    return Rejection(400, f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter")


def _openai_values(param: str, value: Any, allowed: tuple[str, ...]) -> Rejection:
    quoted = [f"'{v}'" for v in allowed]
    listed = " and ".join(quoted) if len(quoted) == 2 else ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    shown = value if isinstance(value, str) else json.dumps(value)
    return Rejection(
        400,
        f"Invalid value: '{str(shown)[:60]}'. Supported values are: {listed}.",
        param=param,
        code="invalid_value",
    )


def _openai_name(param: str, name: Any) -> str:
    if name is None:
        raise _openai_missing(param)
    if not isinstance(name, str):
        raise _openai_type(param, "a string", name)
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


def _openai_tool(param: str, spec: Mapping[str, Any]) -> Tool:
    name = _openai_name(f"{param}.name", spec.get("name"))
    description = spec.get("description", "")
    if description is not None and not isinstance(description, str):
        raise _openai_type(f"{param}.description", "a string", description)
    parameters = spec.get("parameters")
    if parameters is not None and not isinstance(parameters, Mapping):
        raise _openai_type(f"{param}.parameters", "an object", parameters)
    return Tool(name, description or "", parameters or _NO_SCHEMA)


def _openai_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _openai_type("tools", "an array", value)
    for index, tool in enumerate(value):
        if not isinstance(tool, Mapping):
            raise _openai_type(f"tools[{index}]", "an object", tool)
        if "type" not in tool:
            raise _openai_missing(f"tools[{index}].type")
    return value


def _chat_tools(value: Any) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for index, tool in enumerate(_openai_list(value)):
        kind = tool["type"]
        if kind not in ("function", "custom"):
            raise _openai_values(f"tools[{index}].type", kind, ("function", "custom"))
        spec = tool.get(kind)
        if spec is None:
            raise _openai_missing(f"tools[{index}].{kind}")
        if not isinstance(spec, Mapping):
            raise _openai_type(f"tools[{index}].{kind}", "an object", spec)
        if kind == "function":
            tools.append(_openai_tool(f"tools[{index}].function", spec))
        else:  # a free-form custom tool: accepted, never called by the demo model
            _openai_name(f"tools[{index}].custom.name", spec.get("name"))
    return tuple(tools)


def _responses_tools(value: Any) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for index, tool in enumerate(_openai_list(value)):
        kind = tool["type"]
        if kind == "function":
            tools.append(_openai_tool(f"tools[{index}]", tool))
        elif kind not in _RESPONSES_BUILT_IN:
            raise _openai_values(f"tools[{index}].type", kind, ("function", *_RESPONSES_BUILT_IN))
    return tuple(tools)


def _openai_choice(data: Mapping[str, Any], tools: tuple[Tool, ...], *, nested: bool) -> ToolChoice:
    parallel = data.get("parallel_tool_calls") is not False
    value = data.get("tool_choice")
    if value is None:
        return ToolChoice(parallel=parallel)
    if isinstance(value, str):
        if value not in ("none", "auto", "required"):
            raise _openai_values("tool_choice", value, ("none", "auto", "required"))
        if value == "required" and not tools:
            raise _choice_without_tools()
        return ToolChoice(value, parallel=parallel)
    if not isinstance(value, Mapping):
        raise _openai_type("tool_choice", "an object", value)
    kind = value.get("type")
    if kind != "function":  # a built-in tool (Responses) or `allowed_tools`: the model decides
        return ToolChoice(parallel=parallel)
    if not tools:
        raise _choice_without_tools()
    spec = value.get("function") if nested else value
    if nested and not isinstance(spec, Mapping):
        raise _openai_missing("tool_choice.function")
    assert isinstance(spec, Mapping)
    param = "tool_choice.function.name" if nested else "tool_choice.name"
    name = _openai_name(param, spec.get("name"))
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


def _chat_results(messages: Any) -> tuple[tuple[ToolResult, ...], frozenset[str]]:
    """The tool messages that end a chat conversation; every tool message must answer a call
    of the assistant message just before the run of tool messages it belongs to, and every
    call must be answered before the conversation goes on."""
    rounds = _Rounds()
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
                raise _openai_missing(f"messages[{index}].tool_call_id")
            if not isinstance(call_id, str):
                raise _openai_type(f"messages[{index}].tool_call_id", "a string", call_id)
            call = pending.pop(call_id, None)
            if call is None:
                raise Rejection(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                    param=f"messages.[{index}].role",
                    code=None,
                )
            rounds.add(ToolResult(call, _plain_text(message.get("content"))))
            continue
        if pending:
            raise _unanswered_chat(asked_at, pending)
        rounds.close(question=role == "user")
        calls = message.get("tool_calls") if role == "assistant" else None
        if isinstance(calls, list):
            asked_at = index
            for number, call in enumerate(calls):
                past = _chat_call(f"messages[{index}].tool_calls[{number}]", call)
                pending[past.id] = past
    if pending:
        raise _unanswered_chat(asked_at, pending)
    return rounds.done()


def _chat_call(param: str, call: Any) -> PastCall:
    if not isinstance(call, Mapping):
        raise _openai_type(param, "an object", call)
    call_id = call.get("id")
    if not isinstance(call_id, str):
        raise _openai_missing(f"{param}.id") if call_id is None else _openai_type(f"{param}.id", "a string", call_id)
    function = call.get("function")
    if not isinstance(function, Mapping):
        raise _openai_missing(f"{param}.function")
    arguments = function.get("arguments", "")
    return PastCall(call_id, str(function.get("name", "")), arguments if isinstance(arguments, str) else "")


def _unanswered_chat(index: int, pending: Mapping[str, PastCall]) -> Rejection:
    return Rejection(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
        param=f"messages.[{index}].role",
        code=None,
    )


def _responses_results(items: Any, *, checked: bool) -> tuple[tuple[ToolResult, ...], frozenset[str]]:
    """The `function_call_output` items that end a Responses input; each must answer a
    `function_call` item of the same input (unless the calls live in a previous response), and
    each call must get its output."""
    rounds = _Rounds()
    if not isinstance(items, list):
        return rounds.done()
    calls: dict[str, PastCall] = {}
    answered: set[str] = set()
    for item in items:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            call_id = str(item.get("call_id", ""))
            arguments = item.get("arguments", "")
            calls[call_id] = PastCall(
                call_id, str(item.get("name", "")), arguments if isinstance(arguments, str) else ""
            )
        elif kind == "function_call_output":
            call_id = str(item.get("call_id", ""))
            call = calls.get(call_id)
            if call is None:
                if checked:
                    raise Rejection(
                        400,
                        f"No tool call found for function call output with call_id {call_id}.",
                        param="input",
                        code=None,
                    )
                call = PastCall(call_id, "", "")
            answered.add(call_id)
            rounds.add(ToolResult(call, _plain_text(item.get("output"))))
        else:
            rounds.close(question=kind == "message" and item.get("role", "user") == "user")
    for call_id in calls:
        if call_id not in answered:
            raise Rejection(400, f"No tool output found for function call {call_id}.", param="input", code=None)
    return rounds.done()


# ---------------------------------------------------------------------------- Anthropic's words


def _anthropic(message: str, param: Optional[str] = None) -> Rejection:
    return Rejection(400, message, param=param, code="invalid_value")


def _anthropic_tools(value: Any) -> tuple[Tool, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _anthropic("tools: Input should be a valid list", "tools")
    tools: list[Tool] = []
    names: set[str] = set()
    for index, tool in enumerate(value):
        where = f"tools.{index}"
        if not isinstance(tool, Mapping):
            raise _anthropic(f"{where}: Input should be a valid dictionary", where)
        kind = tool.get("type", "custom")
        if kind is None or kind == "custom":
            tools.append(_anthropic_tool(f"{where}.custom", tool))
            name = tools[-1].name
        elif isinstance(kind, str) and _ANTHROPIC_TYPED.fullmatch(kind):
            name = str(tool.get("name", ""))
        else:
            raise _anthropic(
                f"{where}: Input tag '{str(kind)[:60]}' found using 'type' does not match any of the expected tags: "
                "'custom', 'bash_20250124', 'code_execution_20250825', 'text_editor_20250728', "
                "'web_fetch_20250910', 'web_search_20250305'",
                where,
            )
        if name in names:
            raise _anthropic("tools: Tool names must be unique.", "tools")
        names.add(name)
    return tuple(tools)


def _anthropic_tool(where: str, tool: Mapping[str, Any]) -> Tool:
    name = tool.get("name")
    if name is None:
        raise _anthropic(f"{where}.name: Field required", f"{where}.name")
    if not isinstance(name, str):
        raise _anthropic(f"{where}.name: Input should be a valid string", f"{where}.name")
    if not _ANTHROPIC_NAME.fullmatch(name):
        raise _anthropic(f"{where}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'", f"{where}.name")
    description = tool.get("description", "")
    if description is not None and not isinstance(description, str):
        raise _anthropic(f"{where}.description: Input should be a valid string", f"{where}.description")
    schema = tool.get("input_schema")
    if schema is None:
        raise _anthropic(f"{where}.input_schema: Field required", f"{where}.input_schema")
    if not isinstance(schema, Mapping):
        raise _anthropic(f"{where}.input_schema: Input should be a valid dictionary", f"{where}.input_schema")
    if schema.get("type") != "object":
        raise _anthropic(f"{where}.input_schema.type: Input should be 'object'", f"{where}.input_schema.type")
    return Tool(name, description or "", schema)


def _anthropic_choice(value: Any, tools: tuple[Tool, ...]) -> ToolChoice:
    if value is None:
        return ToolChoice()
    if not isinstance(value, Mapping):
        raise _anthropic("tool_choice: Input should be a valid dictionary", "tool_choice")
    kind = value.get("type")
    if kind not in ("auto", "any", "tool", "none"):
        raise _anthropic(
            f"tool_choice: Input tag '{str(kind)[:60]}' found using 'type' does not match any of the expected tags: "
            "'auto', 'any', 'tool', 'none'",
            "tool_choice",
        )
    parallel = value.get("disable_parallel_tool_use") is not True
    if kind in ("any", "tool") and not tools:
        raise _anthropic("tool_choice may only be specified while providing tools.", "tool_choice")
    if kind != "tool":
        return ToolChoice("required" if kind == "any" else str(kind), parallel=parallel)
    name = value.get("name")
    if not isinstance(name, str):
        raise _anthropic("tool_choice.tool.name: Field required", "tool_choice.tool.name")
    if name not in {tool.name for tool in tools}:
        raise _anthropic(f"Tool '{name[:64]}' not found in the provided tools.", "tool_choice.tool.name")
    return ToolChoice("named", name, parallel)


def _anthropic_results(messages: Any) -> tuple[tuple[ToolResult, ...], frozenset[str]]:
    """The `tool_result` blocks of a last user turn; every `tool_use` of an assistant turn must
    be answered in the very next turn, and every `tool_result` must answer one of them."""
    rounds = _Rounds()
    if not isinstance(messages, list):
        return rounds.done()
    pending: dict[str, PastCall] = {}
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
        answers = any(block.get("type") == "tool_result" for block in blocks)
        rounds.close(question=message.get("role") == "user" and not answers)
        for number, block in enumerate(blocks):
            if block.get("type") != "tool_result":
                continue
            use_id = block.get("tool_use_id")
            call = pending.pop(use_id, None) if isinstance(use_id, str) else None
            if call is None:
                raise _anthropic(
                    f"messages.{index}.content.{number}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{str(use_id)[:80]}. Each `tool_result` block must have a corresponding `tool_use` block in "
                    "the previous message."
                )
            rounds.add(ToolResult(call, _plain_text(block.get("content")), block.get("is_error") is True))
        if pending:
            raise _anthropic(
                f"messages.{index - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(pending)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
                "next message."
            )
        if message.get("role") == "assistant":
            for block in blocks:
                if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
                    pending[block["id"]] = PastCall(block["id"], str(block.get("name", "")), arguments)
    return rounds.done()


def _plain_text(content: Any) -> str:
    """The text of a tool result: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str) or (isinstance(part, Mapping) and isinstance(part.get("text"), str))
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)
