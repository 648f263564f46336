"""Google Gemini's native API (`models/{model}:streamGenerateContent`, `:generateContent`).

The request: the model and the method are in the path (under `/v1/` or `/v1beta/`), the key in
`x-goog-api-key` (the demo needs none). The body holds `contents` (`user` and `model` turns of
`parts`: `text`, `functionCall`, `functionResponse`), `systemInstruction`, `generationConfig`
(the sampling values, `maxOutputTokens`, `responseLogprobs` and `logprobs`, `thinkingConfig`),
`tools` (`functionDeclarations`, `googleSearch`...), `toolConfig`, `safetySettings`; Google's
JSON also takes each field's snake-case name. Refusals are Google's: `{"error": {"code",
"message", "status"}}` with `INVALID_ARGUMENT`, `NOT_FOUND`, `RESOURCE_EXHAUSTED` (and a
`RetryInfo` detail)...

The stream: with `alt=sse`, one `data: <GenerateContentResponse>` event per chunk, CRLF-framed,
with no terminator: the last chunk carries the `finishReason` (`STOP`, also after function
calls; `MAX_TOKENS`), the usage totals and the search's `groundingMetadata`; `usageMetadata` is
cumulative on every chunk. Reasoning goes as `thought: true` parts when `includeThoughts` asks
for them (else it is only counted, in `thoughtsTokenCount`); function calls are whole
`functionCall` parts (several in one chunk are parallel calls). An error inside the stream is an
event holding Google's error object, after which the stream ends; a cut-off simply stops.
Without `alt=sse`, `streamGenerateContent` sends the same chunks as one JSON array, written as
they come.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar, Optional
from urllib.parse import unquote

from ..._edge import Rejection
from .._fields import BOOLEAN, Bound, Unknown, check_values, number_text, unknown_fields
from .._flavors import Flavor
from .._frames import Frame, Steps, dumps, ident
from .._logprobs import simulated_logprobs
from .._script import Script, ScriptError, ended
from .._tokens import count_tokens
from .._tools import NO_SCHEMA, PastCall, Rounds, Tool, ToolChoice, ToolResult, ToolUse
from ._spec import SSE, ApiSpec, Endpoint, Turn

__all__ = ["Gemini", "GEMINI", "gemini_stream", "gemini_response", "FINISH_REASONS"]

#: The content type of `streamGenerateContent` without `alt=sse`: one JSON array of chunks.
ARRAY = "application/json; charset=UTF-8"
FINISH_REASONS = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}

#: Google's status name for each HTTP status the server answers with.
_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    402: "RESOURCE_EXHAUSTED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
    529: "UNAVAILABLE",
}
_TYPES = "type.googleapis.com/google.rpc."
_PROTO = "type.googleapis.com/google.ai.generativelanguage.v1beta."

#: The body's fields (Google's JSON also takes their snake-case names), and the embedded
#: provider's own `demo` object. `model` repeats the path's (`models/...`), as proxies send it.
_TOP = frozenset(
    [
        "model",
        "contents",
        "systemInstruction",
        "generationConfig",
        "tools",
        "toolConfig",
        "safetySettings",
        "cachedContent",
        "labels",
        "demo",
    ]
)
#: The values of `generationConfig` that are checked.
_BOUNDS: Mapping[str, Bound] = {
    "temperature": Bound("decimal", 0, 2),
    "topP": Bound("decimal", 0, 1),
    "topK": Bound("integer", 1),
    "maxOutputTokens": Bound("integer", 1),
    "candidateCount": Bound("integer", 1, 8),
    "seed": Bound("integer"),
    "presencePenalty": Bound("decimal", -2, 2),
    "frequencyPenalty": Bound("decimal", -2, 2),
    "responseLogprobs": BOOLEAN,
    "logprobs": Bound("integer", 0, 20),
    "enableEnhancedCivicAnswers": BOOLEAN,
}
#: Every field of `generationConfig` (its reference).
_GENERATION = frozenset(_BOUNDS) | frozenset(
    [
        "stopSequences",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "responseModalities",
        "speechConfig",
        "thinkingConfig",
        "imageConfig",
        "mediaResolution",
    ]
)
_THINKING: Mapping[str, Bound] = {"includeThoughts": BOOLEAN, "thinkingBudget": Bound("integer", -1, 32768)}
_THINKING_FIELDS = frozenset((*_THINKING, "thinkingLevel"))
#: What one entry of `tools` may hold.
_TOOL_KINDS = frozenset(
    [
        "functionDeclarations",
        "googleSearch",
        "googleSearchRetrieval",
        "codeExecution",
        "urlContext",
        "fileSearch",
        "googleMaps",
        "computerUse",
        "retrieval",
    ]
)
_MODES = ("MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED")
#: What a part holds (Google's `data` oneof, and the flags beside it).
_PART_DATA = frozenset(
    ["text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"]
)
_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}")
_ROLES = ("user", "model", "function")
_MEDIA_TOKENS = 258  # what Gemini counts for an image
_STOP_SEQUENCES = 5
#: Tokens of the answer in each streamed chunk (Gemini sends a few words at a time).
_CHUNK_TOKENS = (6,)
_JSON_NAMES = {"decimal": "TYPE_FLOAT", "integer": "TYPE_INT32", "boolean": "TYPE_BOOL", "string": "TYPE_STRING"}


def _camel(name: str) -> str:
    """`max_output_tokens` → `maxOutputTokens` (a camel-case name stays as it is)."""
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _snake(path: str) -> str:
    """`generationConfig.maxOutputTokens` → `generation_config.max_output_tokens`, as Google's
    messages name a field."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), path)


def _get(data: Mapping[str, Any], name: str) -> Any:
    """A field by its camel-case name, or by its snake-case one."""
    return data[name] if name in data else data.get(_snake(name))


def _spellings(names: frozenset[str]) -> frozenset[str]:
    """`names`, and their snake-case spellings."""
    return names | {_snake(name) for name in names}


def _camel_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    return {_camel(key): value for key, value in data.items()}


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 60 else text[:60] + "..."


def _bad(message: str, param: Optional[str] = None) -> Rejection:
    return Rejection(400, message, param=param, code="invalid_argument")


def _invalid(path: str, kind: str, value: Any) -> Rejection:
    """Google's words for a value of the wrong JSON type at `path`."""
    return _bad(f"Invalid value at '{_snake(path)}' ({kind}), {_shown(value)}", path)


def _violation(path: str, what: str) -> Rejection:
    """Google's words for a field whose value breaks a rule."""
    return _bad(f"* GenerateContentRequest.{_snake(path)}: {what}", path)


def _unknown_names(unknown: Unknown, at: str = "") -> Rejection:
    where = f" at '{_snake(at)}'" if at else ""
    lines = [
        f'Invalid JSON payload received. Unknown name "{name}"{where}: Cannot find field.{hint}'
        for name, hint in unknown.parts
    ]
    return _bad("\n".join(lines) + unknown.more)


class Gemini(ApiSpec):
    name = "gemini"
    path = r"models/(?P<model>[^/:]+):(?P<method>streamGenerateContent|generateContent)"
    versions = ("v1", "v1beta")
    title = "Gemini API (/v1beta/models/{model}:generateContent)"
    required: ClassVar[tuple[str, ...]] = ()

    def endpoint(self, match: re.Match[str], query: Mapping[str, list[str]]) -> Endpoint:
        stream = match["method"] == "streamGenerateContent"
        sse = query.get("alt", [""])[-1] == "sse"
        return Endpoint(model=unquote(match["model"]), stream=stream, content_type=SSE if sse or not stream else ARRAY)

    # ------------------------------------------------------------------ reading

    def documented(self) -> frozenset[str]:
        return _spellings(_TOP)

    def check(self, data: Mapping[str, Any], endpoint: Endpoint) -> None:
        for name, kind, proto in (
            ("systemInstruction", Mapping, "Content"),
            ("generationConfig", Mapping, "GenerationConfig"),
            ("toolConfig", Mapping, "ToolConfig"),
            ("safetySettings", list, "SafetySetting"),
        ):
            value = _get(data, name)
            if value is not None and not isinstance(value, kind):
                raise _invalid(name, _PROTO + proto, value)
        config = _get(data, "generationConfig") or {}
        unknown = [key for key in config if _camel(key) not in _GENERATION]
        if unknown:
            raise _unknown_names(unknown_fields(unknown, _spellings(_GENERATION)), "generationConfig")
        config = _camel_keys(config)
        check_values(self, config, _BOUNDS, "generationConfig.")
        stops = config.get("stopSequences")
        if stops is not None and (
            not isinstance(stops, list) or len(stops) > _STOP_SEQUENCES or not all(isinstance(s, str) for s in stops)
        ):
            raise _violation(
                "generationConfig.stopSequences", f"stop_sequences must be a list of at most {_STOP_SEQUENCES} strings."
            )
        if config.get("logprobs") is not None and config.get("responseLogprobs") is not True:
            raise _violation("generationConfig.logprobs", "logprobs may only be set when response_logprobs is true.")
        thinking = config.get("thinkingConfig")
        if thinking is not None:
            if not isinstance(thinking, Mapping):
                raise _invalid("generationConfig.thinkingConfig", _PROTO + "ThinkingConfig", thinking)
            unknown = [key for key in thinking if _camel(key) not in _THINKING_FIELDS]
            if unknown:
                raise _unknown_names(
                    unknown_fields(unknown, _spellings(_THINKING_FIELDS)), "generationConfig.thinkingConfig"
                )
            check_values(self, _camel_keys(thinking), _THINKING, "generationConfig.thinkingConfig.")

    def model(self, data: Mapping[str, Any], endpoint: Endpoint) -> str:
        return endpoint.model or ""

    def streaming(self, data: Mapping[str, Any], endpoint: Endpoint) -> bool:
        return endpoint.stream is True

    def turns(self, data: Mapping[str, Any]) -> list[Turn]:
        turns: list[Turn] = []
        system = _get(data, "systemInstruction")
        if isinstance(system, Mapping):
            text, tokens = _text(system.get("parts"), "systemInstruction")
            turns.append(("system", text, tokens))
        contents = _get(data, "contents")
        if contents is None or contents == []:
            raise _violation("contents", "contents is not specified")
        if not isinstance(contents, list):
            raise _invalid("contents", _PROTO + "Content", contents)
        for index, content in enumerate(contents):
            where = f"contents[{index}]"
            if not isinstance(content, Mapping):
                raise _invalid(where, _PROTO + "Content", content)
            role = content.get("role", "user")
            if role not in _ROLES:
                raise _bad("Please use a valid role: user, model.", f"{where}.role")
            text, tokens = _text(content.get("parts"), where)
            answers = any(isinstance(_get(part, "functionResponse"), Mapping) for part in content["parts"])
            turns.append(("assistant" if role == "model" else "tool" if answers else "user", text, tokens))
        return turns

    def tool_use(self, data: Mapping[str, Any]) -> ToolUse:
        tools = _declarations(_get(data, "tools"))
        choice, tools = _choice(_get(data, "toolConfig"), tools)
        results, failed = _results(_get(data, "contents"))
        return ToolUse(tools, choice, results, failed)

    def max_tokens(self, data: Mapping[str, Any]) -> Optional[int]:
        value = _config(data).get("maxOutputTokens")
        return value if isinstance(value, int) else None

    def include_usage(self, data: Mapping[str, Any]) -> bool:
        return False  # Gemini always sends it

    def thinking_disabled(self, data: Mapping[str, Any]) -> bool:
        """`thinkingBudget: 0` turns thinking off."""
        return _thinking(data).get("thinkingBudget") == 0

    def reasoning_hidden(self, data: Mapping[str, Any]) -> bool:
        """Thought summaries are sent only under `thinkingConfig.includeThoughts`."""
        return _thinking(data).get("includeThoughts") is not True

    def logprobs(self, data: Mapping[str, Any]) -> Optional[int]:
        """`responseLogprobs: true`, with `logprobs` alternatives per token."""
        config = _config(data)
        return (config.get("logprobs") or 0) if config.get("responseLogprobs") is True else None

    def temperature(self, data: Mapping[str, Any]) -> Optional[float]:
        value = _config(data).get("temperature")
        return float(value) if isinstance(value, (int, float)) else None

    # ------------------------------------------------------------------ Google's words

    def unrecognized(self, unknown: Unknown) -> Rejection:
        return _unknown_names(unknown)

    def missing(self, name: str) -> Rejection:
        return _violation(name, f"{_snake(name)} is not specified")

    def wrong_type(self, name: str, kind: str, value: Any) -> Rejection:
        return _invalid(name, _JSON_NAMES.get(kind, kind), value)

    def out_of_range(self, name: str, bound: Bound, value: Any, *, above: bool) -> Rejection:
        if bound.low is not None and bound.high is not None:
            rule = f"between {number_text(bound.low)} and {number_text(bound.high)}"
        elif above:
            rule = f"at most {number_text(bound.high)}"
        else:
            rule = f"at least {number_text(bound.low)}"
        return _violation(name, f"{_snake(name).rsplit('.', 1)[-1]} must be {rule}, not {number_text(value)}.")

    def model_not_found(self, model: str, hint: str) -> str:
        return f"models/{model} is not found for API version v1beta, or is not supported for generateContent. {hint}"

    def error_body(self, rejection: Rejection, request_id: str) -> bytes:
        return json.dumps({"error": _error(rejection.status, rejection.message, rejection)}).encode()

    # ------------------------------------------------------------------ writing

    def stream(self, script: Script, flavor: Flavor, endpoint: Endpoint) -> Steps:
        return gemini_stream(script, array=endpoint.content_type == ARRAY)

    def whole(self, script: Script, flavor: Flavor) -> dict[str, Any]:
        return gemini_response(script)

    def heartbeat(self, flavor: Flavor) -> bytes:
        """A blank line: nothing to an SSE reader, white space between the elements of a JSON array."""
        return b"\r\n"


GEMINI = Gemini()


def _error(code: int, message: str, rejection: Optional[Rejection] = None) -> dict[str, Any]:
    """Google's error object: the code, the message, the status name, and the details that say
    when to retry (`RetryInfo`) or which field is wrong (`BadRequest`)."""
    error: dict[str, Any] = {"code": code, "message": message, "status": _STATUSES.get(code, "UNKNOWN")}
    details: list[dict[str, Any]] = []
    if rejection is not None and rejection.retry_after is not None:
        details.append({"@type": _TYPES + "RetryInfo", "retryDelay": f"{rejection.retry_after}s"})
    if rejection is not None and code == 400:
        violation = (
            {"description": message} if rejection.param is None else {"field": rejection.param, "description": message}
        )
        details.append({"@type": _TYPES + "BadRequest", "fieldViolations": [violation]})
    if details:
        error["details"] = details
    return error


# ---------------------------------------------------------------------------- reading


def _config(data: Mapping[str, Any]) -> dict[str, Any]:
    config = _get(data, "generationConfig")
    return _camel_keys(config) if isinstance(config, Mapping) else {}


def _thinking(data: Mapping[str, Any]) -> dict[str, Any]:
    thinking = _config(data).get("thinkingConfig")
    return _camel_keys(thinking) if isinstance(thinking, Mapping) else {}


def _text(parts: Any, where: str) -> tuple[str, int]:
    """The text of a turn's parts (thought summaries left out) and the tokens the turn bills;
    refusing parts that are not a non-empty list of parts holding one datum each."""
    if not isinstance(parts, list) or not parts:
        raise _violation(f"{where}.parts", "contents.parts must not be empty.")
    texts: list[str] = []
    tokens = 0
    for number, part in enumerate(parts):
        if not isinstance(part, Mapping):
            raise _invalid(f"{where}.parts[{number}]", _PROTO + "Part", part)
        held = [key for key in part if _camel(key) in _PART_DATA]
        if not held:
            raise _violation(
                f"{where}.parts[{number}].data", "required oneof field 'data' must have one initialized field"
            )
        text = part.get("text")
        if isinstance(text, str) and part.get("thought") is not True:
            texts.append(text)
        for key in held:
            if _camel(key) in ("functionCall", "functionResponse", "executableCode", "codeExecutionResult"):
                tokens += count_tokens(json.dumps(part[key], ensure_ascii=False))
            elif _camel(key) in ("inlineData", "fileData"):
                tokens += _MEDIA_TOKENS
    text = "\n".join(texts)
    return text, tokens + count_tokens(text)


def _declarations(value: Any) -> tuple[Tool, ...]:
    """The functions of `tools` (the other tools are Google's own: accepted, never called)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _invalid("tools", _PROTO + "Tool", value)
    tools: list[Tool] = []
    for index, entry in enumerate(value):
        where = f"tools[{index}]"
        if not isinstance(entry, Mapping):
            raise _invalid(where, _PROTO + "Tool", entry)
        unknown = [key for key in entry if _camel(key) not in _TOOL_KINDS]
        if unknown:
            raise _unknown_names(unknown_fields(unknown, _spellings(_TOOL_KINDS)), where)
        declared = _get(entry, "functionDeclarations")
        if declared is None:
            continue
        if not isinstance(declared, list):
            raise _invalid(f"{where}.functionDeclarations", _PROTO + "FunctionDeclaration", declared)
        for number, spec in enumerate(declared):
            tools.append(_declaration(f"{where}.functionDeclarations[{number}]", spec, tools))
    return tuple(tools)


def _declaration(where: str, spec: Any, before: list[Tool]) -> Tool:
    if not isinstance(spec, Mapping):
        raise _invalid(where, _PROTO + "FunctionDeclaration", spec)
    name = spec.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _violation(
            f"{where}.name",
            "Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, "
            "0-9), underscores (_), dots (.), colons (:) or dashes (-), with a maximum length of 64.",
        )
    if any(tool.name == name for tool in before):
        raise _violation(f"{where}.name", f"Duplicate function declaration found: {name}")
    description = spec.get("description", "")
    if description is not None and not isinstance(description, str):
        raise _invalid(f"{where}.description", "TYPE_STRING", description)
    schema = _get(spec, "parameters")
    if schema is None:
        schema = _get(spec, "parametersJsonSchema")
    if schema is not None and not isinstance(schema, Mapping):
        raise _invalid(f"{where}.parameters", _PROTO + "Schema", schema)
    return Tool(name, description or "", _lowered(schema) if schema else NO_SCHEMA)


def _lowered(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A schema with Google's type names (`OBJECT`, `STRING`) as JSON Schema spells them."""

    def walk(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {
                key: item.lower() if key == "type" and isinstance(item, str) else walk(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    lowered: dict[str, Any] = walk(schema)  # bodies nest at most 64 levels (`_requests`)
    return lowered


def _choice(value: Any, tools: tuple[Tool, ...]) -> tuple[ToolChoice, tuple[Tool, ...]]:
    """`toolConfig.functionCallingConfig`: `AUTO`, `NONE`, or `ANY` (one of the functions, of
    `allowedFunctionNames` when given: only those are offered)."""
    config = _get(value, "functionCallingConfig") if isinstance(value, Mapping) else None
    if config is None:
        return ToolChoice(), tools
    where = "toolConfig.functionCallingConfig"
    if not isinstance(config, Mapping):
        raise _invalid(where, _PROTO + "FunctionCallingConfig", config)
    mode = config.get("mode", "AUTO")
    if mode not in _MODES:
        raise _invalid(f"{where}.mode", _PROTO + "FunctionCallingConfig.Mode", mode)
    allowed = _get(config, "allowedFunctionNames")
    if allowed is not None and (not isinstance(allowed, list) or not all(isinstance(n, str) for n in allowed)):
        raise _invalid(f"{where}.allowedFunctionNames", "TYPE_STRING", allowed)
    if mode in ("ANY", "VALIDATED") or allowed:
        if not tools:
            raise _violation(where, "Function calling config is set without function_declarations.")
        if allowed and mode not in ("ANY", "VALIDATED"):
            raise _violation(
                f"{where}.allowedFunctionNames", "allowed_function_names may only be set when mode is ANY."
            )
        declared = {tool.name for tool in tools}
        for name in allowed or ():
            if name not in declared:
                raise _violation(
                    f"{where}.allowedFunctionNames", f"{name[:64]} is not one of the function_declarations."
                )
    if mode == "NONE":
        return ToolChoice("none"), tools
    if mode != "ANY":
        return ToolChoice(), tools
    if allowed:
        tools = tuple(tool for tool in tools if tool.name in allowed)
        if len(allowed) == 1:
            return ToolChoice("named", allowed[0]), tools
    return ToolChoice("required"), tools


def _results(contents: Any) -> tuple[tuple[ToolResult, ...], frozenset[str]]:
    """The `functionResponse` parts that end the conversation. A turn of function responses
    must come right after the model turn of the calls it answers (by `id`, else by name), and
    every call of that turn must be answered there."""
    rounds = Rounds()
    if not isinstance(contents, list):
        return rounds.done()
    pending: list[PastCall] = []
    for index, content in enumerate(contents):
        if not isinstance(content, Mapping):
            continue
        raw = content.get("parts")
        parts = [part for part in raw if isinstance(part, Mapping)] if isinstance(raw, list) else []
        found = ((number, _get(part, "functionResponse")) for number, part in enumerate(parts))
        answers = [(number, answer) for number, answer in found if isinstance(answer, Mapping)]
        if answers:
            if not pending:
                raise _bad(
                    "Please ensure that function response turn comes immediately after a function call turn.",
                    f"contents[{index}]",
                )
            for number, answer in answers:
                call = _answered(pending, answer)
                if call is None:
                    named = f"'{str(answer.get('name'))[:64]}'"
                    if answer.get("id"):
                        named += f" with id '{str(answer['id'])[:64]}'"
                    raise _bad(
                        "Please ensure that the function response parts answer the function call parts of the "
                        f"function call turn: contents[{index}].parts[{number}] answers no call named {named}.",
                        f"contents[{index}].parts[{number}]",
                    )
                rounds.add(_result(call, answer.get("response")))
            if pending:
                raise _unanswered(index - 1, pending)
            continue
        if pending:
            raise _unanswered(index - 1, pending)
        rounds.close(question=content.get("role", "user") == "user")
        if content.get("role") == "model":
            for number, part in enumerate(parts):
                asked = _get(part, "functionCall")
                if isinstance(asked, Mapping):
                    name = str(asked.get("name", ""))
                    call_id = asked.get("id")
                    args = asked.get("args")
                    pending.append(
                        PastCall(
                            call_id if isinstance(call_id, str) and call_id else f"{name}#{number}",
                            name,
                            json.dumps(args if isinstance(args, Mapping) else {}, ensure_ascii=False),
                        )
                    )
    if pending:
        raise _unanswered(len(contents) - 1, pending)
    return rounds.done()


def _answered(pending: list[PastCall], answer: Mapping[str, Any]) -> Optional[PastCall]:
    """The pending call `answer` answers (by its id, else the first of its name), taken off the list."""
    answer_id = answer.get("id")
    by_id = isinstance(answer_id, str) and answer_id != ""
    for call in pending:
        if (call.id == answer_id) if by_id else (call.name == answer.get("name")):
            pending.remove(call)
            return call
    return None


def _result(call: PastCall, response: Any) -> ToolResult:
    """A function's response: `{"result": ...}` (or `output`, `content`) as its text, `{"error": ...}`
    as a failure, anything else as its JSON."""
    if isinstance(response, Mapping) and "error" in response:
        error = response["error"]
        return ToolResult(call, error if isinstance(error, str) else json.dumps(error, ensure_ascii=False), True)
    if isinstance(response, Mapping) and len(response) == 1:
        ((key, value),) = response.items()
        if key in ("result", "output", "content"):
            response = value
    text = response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)
    return ToolResult(call, text)


def _unanswered(index: int, pending: list[PastCall]) -> Rejection:
    calls = ", ".join(f"{call.name} ({call.id})" for call in pending)
    return _bad(
        "Please ensure that the number of function response parts is equal to the number of function call parts "
        f"of the function call turn. Not answered in the turn after contents[{index}]: {calls}.",
        f"contents[{index}]",
    )


# ---------------------------------------------------------------------------- writing


def gemini_stream(script: Script, *, array: bool = False) -> Steps:
    """The steps of `script` as `streamGenerateContent` sends it: SSE events, or (`array`) the
    elements of one JSON array."""
    out = _Chunks(script, array)
    if script.reasoning_tokens:
        if script.reasoning_hidden:
            out.thoughts += len(script.reasoning_tokens)
            yield Frame(b"", len(script.reasoning_tokens))  # thought, and counted, but not sent
        else:
            for text, count in _groups(script.reasoning_tokens):
                out.thoughts += count
                yield Frame(out.chunk([{"text": text, "thought": True}]), count)
    pieces = iter(script.text_tokens)
    position = 0
    if script.malformed_after is not None:  # the same iterator goes on after the broken event
        for group in _token_groups(itertools.islice(pieces, script.malformed_after)):
            yield out.text(group, position)
            position += len(group)
        yield Frame(out.malformed())
    for group in _token_groups(pieces):
        yield out.text(group, position)
        position += len(group)
    if script.tool_calls:
        count = sum(len(call.argument_tokens) for call in script.tool_calls)
        out.answer += count
        yield Frame(out.chunk(out.calls()), count)
    yield from ended(
        script,
        lambda error: [Frame(out.error(error))],
        lambda: [Frame(out.chunk([{"text": ""}], final=True) + out.close())],
    )


def gemini_response(script: Script) -> dict[str, Any]:
    """`generateContent`'s one `GenerateContentResponse` for `script`."""
    out = _Chunks(script, False)
    parts: list[dict[str, Any]] = []
    if script.reasoning_tokens and not script.reasoning_hidden:
        parts.append({"text": script.reasoning, "thought": True})
    if script.blocks:
        parts.append({"text": script.text})
    parts += out.calls()
    return out.payload(parts, final=True, logprobs=out.logprobs(script.text_tokens, 0))


def _groups(tokens: Iterable[str]) -> Iterator[tuple[str, int]]:
    for group in _token_groups(tokens):
        yield "".join(group), len(group)


def _token_groups(tokens: Iterable[str]) -> Iterator[list[str]]:
    pieces = iter(tokens)
    for size in itertools.cycle(_CHUNK_TOKENS):
        group = list(itertools.islice(pieces, size))
        if not group:
            return
        yield group


class _Chunks:
    """Spells the chunks of one answer: the envelope, the usage so far, the framing."""

    def __init__(self, script: Script, array: bool) -> None:
        self.script = script
        self.array = array
        self.first = True
        self.id = ident("", script.nonce, "gemini")
        #: Tokens sent so far: of the answer (text and calls), of the thoughts.
        self.answer = 0
        self.thoughts = 0

    def frame(self, payload: Mapping[str, Any]) -> bytes:
        return self.element(dumps(payload))

    def element(self, data: str) -> bytes:
        """An event (`data: ...` and a blank line, CRLF), or an element of the array."""
        if not self.array:
            return b"data: " + data.encode() + b"\r\n\r\n"
        lead = "[" if self.first else ",\r\n"
        self.first = False
        return (lead + data).encode()

    def close(self) -> bytes:
        return b"]" if self.array else b""

    def usage(self, final: bool) -> dict[str, Any]:
        usage = self.script.usage
        answer = usage.completion_tokens - usage.reasoning_tokens if final else self.answer
        thoughts = usage.reasoning_tokens if final else self.thoughts
        body: dict[str, Any] = {"promptTokenCount": usage.prompt_tokens}
        if answer or final:
            body["candidatesTokenCount"] = answer
        body["totalTokenCount"] = usage.prompt_tokens + answer + thoughts
        if thoughts:
            body["thoughtsTokenCount"] = thoughts
        if usage.cached_tokens:
            body["cachedContentTokenCount"] = usage.cached_tokens
        return body

    def payload(
        self, parts: list[dict[str, Any]], *, final: bool = False, logprobs: Optional[dict[str, Any]] = None
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if logprobs is not None:
            candidate["logprobsResult"] = logprobs
        if final:
            candidate["finishReason"] = FINISH_REASONS.get(self.script.ending, "STOP")
            if self.script.search_query is not None:
                candidate["groundingMetadata"] = self.grounding()
        return {
            "candidates": [candidate],
            "usageMetadata": self.usage(final),
            "modelVersion": self.script.model,
            "responseId": self.id,
        }

    def chunk(self, parts: list[dict[str, Any]], *, final: bool = False, logprobs: Any = None) -> bytes:
        return self.frame(self.payload(parts, final=final, logprobs=logprobs))

    def text(self, group: list[str], position: int) -> Frame:
        self.answer += len(group)
        data = self.chunk([{"text": "".join(group)}], logprobs=self.logprobs(group, position))
        return Frame(data, len(group))

    def logprobs(self, tokens: Iterable[str], position: int) -> Optional[dict[str, Any]]:
        """`logprobsResult` for `tokens` (from `position` of the text), when they were asked for:
        the chosen token of each step and, with alternatives asked for, the top ones."""
        top = self.script.logprobs
        if top is None:
            return None
        chosen: list[dict[str, Any]] = []
        tops: list[dict[str, Any]] = []
        for offset, token in enumerate(tokens):
            entry = simulated_logprobs(token, position + offset, top, self.script.temperature)
            chosen.append({"token": entry["token"], "logProbability": entry["logprob"]})
            tops.append(
                {"candidates": [{"token": t["token"], "logProbability": t["logprob"]} for t in entry["top_logprobs"]]}
            )
        return {"topCandidates": tops, "chosenCandidates": chosen} if top else {"chosenCandidates": chosen}

    def calls(self) -> list[dict[str, Any]]:
        """Every tool call as a whole `functionCall` part."""
        return [
            {
                "functionCall": {
                    "name": call.name,
                    "args": _parsed(call.arguments),
                    "id": ident("call_", self.script.nonce, f"call{i}"),
                }
            }
            for i, call in enumerate(self.script.tool_calls)
        ]

    def grounding(self) -> dict[str, Any]:
        """The search's `groundingMetadata`: the queries, the pages (`groundingChunks`), and which
        part of the answer each page supports (`groundingSupports`, in UTF-8 byte offsets)."""
        script = self.script
        text = script.text
        supports = []
        offset = 0
        for block in script.blocks:
            for citation in block.citations:
                passage = text[offset : citation.start].rstrip()
                start = len(text[:offset].encode())
                supports.append(
                    {
                        "segment": {"startIndex": start, "endIndex": start + len(passage.encode()), "text": passage},
                        "groundingChunkIndices": [citation.source],
                    }
                )
            offset += len(block.text)
        return {
            "webSearchQueries": [script.search_query],
            "groundingChunks": [{"web": {"uri": source.url, "title": source.title}} for source in script.sources],
            "groundingSupports": supports,
        }

    def error(self, error: ScriptError) -> bytes:
        """Google's error object as the stream's last event (the array's last element)."""
        code = 500 if error.kind == "server_error" else 429
        return self.frame({"error": _error(code, error.message)}) + self.close()

    def malformed(self) -> bytes:
        """A chunk cut off inside a JSON string: the one event a client cannot parse."""
        return self.element('{"candidates":[{"content":{"role":"model","parts":[{"text":"\\u00')


def _parsed(arguments: str) -> Any:
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
