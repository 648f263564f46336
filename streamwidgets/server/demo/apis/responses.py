"""OpenAI Responses (`/responses`): the request reader and the writers.

The request: `input` (a string, or items: messages, `function_call` and `function_call_output`
items joined by `call_id`) with `instructions`, tools flat (`{"type": "function", "name", ...}`)
beside the built-in ones, log-probabilities asked for by `include`.

The stream: typed events numbered by `sequence_number`, in OpenAI's order: `response.created`,
`response.in_progress`, then one output item at a time (web search call, reasoning with its
summary, the message with its text and `url_citation` annotations, function calls), each opened
with `output_item.added` and closed with `output_item.done`, and a terminal `response.completed` /
`incomplete` / `failed`. The official SDK's stream helper checks item identities and ordering, so
the ids stay consistent.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, ClassVar, Optional

from ..._edge import Rejection
from .._fields import BOOLEAN, Bound
from .._flavors import Flavor
from .._frames import Frame, Steps, dumps, ident, sse
from .._logprobs import simulated_logprobs
from .._script import Script, ScriptError, ended
from .._tokens import count_tokens
from .._tools import PastCall, Rounds, Tool, ToolResult, ToolUse, plain_text
from ._openai import SAMPLING, OpenAIApi, openai_choice, openai_list, openai_tool, openai_values
from ._spec import Endpoint, Turn, text_of

__all__ = ["Responses", "RESPONSES", "responses_stream", "response_object", "LOGPROBS_INCLUDE", "INCLUDABLE"]

#: The `include` value that adds log-probabilities to the text deltas.
LOGPROBS_INCLUDE = "message.output_text.logprobs"


class Responses(OpenAIApi):
    name = "responses"
    path = "responses"
    title = "Responses API (/v1/responses)"
    bounds: ClassVar[Mapping[str, Bound]] = {
        **SAMPLING,
        "max_output_tokens": Bound("integer", 16),
        "max_tool_calls": Bound("integer", 1),
        "top_logprobs": Bound("integer", 0, 20),
        "stream": BOOLEAN,
        "background": BOOLEAN,
        "parallel_tool_calls": BOOLEAN,
        "store": BOOLEAN,
    }

    def check(self, data: Mapping[str, Any], endpoint: Endpoint) -> None:
        super().check(data, endpoint)
        if data.get("include") is not None:
            _check_include(data["include"])

    def turns(self, data: Mapping[str, Any]) -> list[Turn]:
        turns: list[Turn] = []
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
                    text, tokens = text_of(output) if not isinstance(output, str) else (output, count_tokens(output))
                    turns.append(("tool", text, tokens))
                elif kind == "function_call":
                    arguments = str(item.get("arguments", ""))
                    turns.append(("assistant", "", count_tokens(arguments)))
                else:
                    text, tokens = text_of(item.get("content"))
                    turns.append((str(item.get("role", "user")), text, tokens))
        else:
            raise Rejection(400, "'input' must be a string or a non-empty array.", param="input", code="invalid_value")
        return turns

    def tool_use(self, data: Mapping[str, Any]) -> ToolUse:
        tools = _tools(data.get("tools"))
        choice = openai_choice(data, tools, nested=False)
        results, failed = _results(data.get("input"), checked=data.get("previous_response_id") is None)
        return ToolUse(tools, choice, results, failed)

    def logprobs(self, data: Mapping[str, Any]) -> Optional[int]:
        """`include: ["message.output_text.logprobs"]`, with `top_logprobs` alternatives."""
        return (data.get("top_logprobs") or 0) if LOGPROBS_INCLUDE in (data.get("include") or ()) else None

    def stream(self, script: Script, flavor: Flavor, endpoint: Endpoint) -> Steps:
        return responses_stream(script, flavor)

    def whole(self, script: Script, flavor: Flavor) -> dict[str, Any]:
        return response_object(script, flavor)


RESPONSES = Responses()


# ---------------------------------------------------------------------------- reading

#: What a Responses `include` may list (its API reference).
INCLUDABLE = (
    "code_interpreter_call.outputs",
    "computer_call_output.output.image_url",
    "file_search_call.results",
    "message.input_image.image_url",
    "message.output_text.logprobs",
    "reasoning.encrypted_content",
    "web_search_call.action.sources",
)


def _check_include(include: Any) -> None:
    """OpenAI's 400s for `include`: an array of the values it lists, each named when wrong."""
    if not isinstance(include, list):
        raise RESPONSES.wrong_type("include", "array", include)
    for index, value in enumerate(include):
        if not isinstance(value, str):
            raise RESPONSES.wrong_type(f"include[{index}]", "string", value)
        if value not in INCLUDABLE:
            shown = value if len(value) <= 60 else value[:60] + "..."
            listed = ", ".join(f"'{v}'" for v in INCLUDABLE[:-1]) + f", and '{INCLUDABLE[-1]}'"
            raise Rejection(
                400,
                f"Invalid value: '{shown}'. Supported values are: {listed}.",
                param=f"include[{index}]",
                code="invalid_value",
            )


#: Responses tools the model may be offered but never calls itself (the provider runs them).
_BUILT_IN = (
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


def _tools(value: Any) -> tuple[Tool, ...]:
    tools: list[Tool] = []
    for index, tool in enumerate(openai_list(value)):
        kind = tool["type"]
        if kind == "function":
            tools.append(openai_tool(f"tools[{index}]", tool))
        elif kind not in _BUILT_IN:
            raise openai_values(f"tools[{index}].type", kind, ("function", *_BUILT_IN))
    return tuple(tools)


def _results(items: Any, *, checked: bool) -> tuple[tuple[ToolResult, ...], frozenset[str]]:
    """The `function_call_output` items that end a Responses input; each must answer a
    `function_call` item of the same input (unless the calls live in a previous response), and
    each call must get its output."""
    rounds = Rounds()
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
            rounds.add(ToolResult(call, plain_text(item.get("output"))))
        else:
            rounds.close(question=kind == "message" and item.get("role", "user") == "user")
    for call_id in calls:
        if call_id not in answered:
            raise Rejection(400, f"No tool output found for function call {call_id}.", param="input", code=None)
    return rounds.done()


# ---------------------------------------------------------------------------- the stream


def responses_stream(script: Script, flavor: Flavor) -> Steps:
    """The steps of a Responses stream for `script`."""
    out = _Events(script, flavor)
    yield Frame(out.event("response.created", response=out.response("in_progress")))
    yield Frame(out.event("response.in_progress", response=out.response("in_progress")))
    if script.ending == "error" and not script.text_tokens:
        yield from out.failure(script.error)
        return
    if script.search_query is not None:
        yield from out.web_search()
    if script.reasoning_tokens:
        yield from out.reasoning()
    if script.blocks:
        yield from out.message()
    for index in range(len(script.tool_calls)):
        yield from out.function_call(index)
    status = "incomplete" if script.ending == "length" else "completed"
    yield from ended(
        script, out.failure, lambda: [Frame(out.event(f"response.{status}", response=out.response(status)))]
    )


def response_object(script: Script, flavor: Flavor) -> dict[str, Any]:
    """The non-streaming Response object for `script`."""
    out = _Events(script, flavor)
    out.items = out.all_items()
    return out.response("incomplete" if script.ending == "length" else "completed")


class _Events:
    """Numbers the events of one response and remembers its finished output items."""

    def __init__(self, script: Script, flavor: Flavor) -> None:
        self.script = script
        self.flavor = flavor
        self.sequence = 0
        self.id = ident("resp_", script.nonce)
        self.items: list[dict[str, Any]] = []

    @cached_property
    def text(self) -> str:
        """The whole answer text, joined once (the `done` events and the final response repeat it)."""
        return self.script.text

    @cached_property
    def logprobs(self) -> list[dict[str, Any]]:
        """Every text token's simulated logprob entry, when asked for (the `done` events repeat them)."""
        if self.script.logprobs is None:
            return []
        return [self._logprob(token, i) for i, token in enumerate(self.script.text_tokens)]

    def _logprob(self, token: str, position: int) -> dict[str, Any]:
        return simulated_logprobs(token, position, self.script.logprobs or 0, self.script.temperature)

    # -------------------------------------------------------------- building blocks

    def event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return sse(dumps(payload), event=kind)

    def response(self, status: str, error: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        final = status in ("completed", "incomplete")
        usage = self.script.usage
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.script.created,
            "status": status,
            "background": False,
            "error": error,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "instructions": None,
            "max_output_tokens": None,
            "model": self.script.model,
            "output": list(self.items) if final or status == "failed" else [],
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "store": False,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": {
                "input_tokens": usage.prompt_tokens,
                "input_tokens_details": {"cached_tokens": usage.cached_tokens},
                "output_tokens": usage.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
                "total_tokens": usage.total_tokens,
            }
            if final
            else None,
            "metadata": {},
        }

    def all_items(self) -> list[dict[str, Any]]:
        """Every finished output item, for the non-streaming response."""
        items: list[dict[str, Any]] = []
        if self.script.search_query is not None:
            items.append(self._search_item("completed"))
        if self.script.reasoning_tokens:
            items.append(self._reasoning_item(self.flavor.responses_reasoning))
        if self.script.blocks:
            items.append(self._message_item("incomplete" if self.script.ending == "length" else "completed", True))
        items.extend(self._call_item(i, "completed") for i in range(len(self.script.tool_calls)))
        return items

    # -------------------------------------------------------------- output items

    def _search_item(self, status: str) -> dict[str, Any]:
        item: dict[str, Any] = {
            "id": ident("ws_", self.script.nonce, "search"),
            "type": "web_search_call",
            "status": status,
        }
        if status == "completed":
            item["action"] = {
                "type": "search",
                "query": self.script.search_query,
                "sources": [{"type": "url", "url": s.url} for s in self.script.sources],
            }
        return item

    def web_search(self) -> Steps:
        index = len(self.items)
        item_id = self._search_item("in_progress")["id"]
        yield Frame(self.event("response.output_item.added", output_index=index, item=self._search_item("in_progress")))
        yield Frame(self.event("response.web_search_call.in_progress", output_index=index, item_id=item_id))
        yield Frame(self.event("response.web_search_call.searching", output_index=index, item_id=item_id))
        # The search takes the first-token delay: its results come on the clock, not at once.
        yield Frame(
            self.event("response.web_search_call.completed", output_index=index, item_id=item_id), on_clock=True
        )
        done = self._search_item("completed")
        self.items.append(done)
        yield Frame(self.event("response.output_item.done", output_index=index, item=done))

    def _reasoning_item(self, with_summary: bool) -> dict[str, Any]:
        summary = [{"type": "summary_text", "text": self.script.reasoning}] if with_summary else []
        return {"id": ident("rs_", self.script.nonce, "reasoning"), "type": "reasoning", "summary": summary}

    def reasoning(self) -> Steps:
        index = len(self.items)
        item = self._reasoning_item(False)
        tokens = self.script.reasoning_tokens
        if not self.flavor.responses_reasoning:
            # Engy: "on /v1/responses, reasoning is not returned" - the model still spends the time.
            yield Frame(b"", len(tokens))
            return
        yield Frame(self.event("response.output_item.added", output_index=index, item=item))
        place = {"item_id": item["id"], "output_index": index, "summary_index": 0}
        yield Frame(
            self.event("response.reasoning_summary_part.added", **place, part={"type": "summary_text", "text": ""})
        )
        for token in tokens:
            yield Frame(self.event("response.reasoning_summary_text.delta", **place, delta=token), 1)
        text = self.script.reasoning
        yield Frame(self.event("response.reasoning_summary_text.done", **place, text=text))
        yield Frame(
            self.event("response.reasoning_summary_part.done", **place, part={"type": "summary_text", "text": text})
        )
        done = self._reasoning_item(True)
        self.items.append(done)
        yield Frame(self.event("response.output_item.done", output_index=index, item=done))

    def _annotations(self, upto: Optional[int] = None) -> list[dict[str, Any]]:
        sources = self.script.sources
        return [
            {
                "type": "url_citation",
                "title": sources[c.source].title,
                "url": sources[c.source].url,
                "start_index": c.start,
                "end_index": c.end,
            }
            for block in self.script.blocks
            for c in block.citations
            if upto is None or c.end <= upto
        ]

    def _message_item(self, status: str, full: bool) -> dict[str, Any]:
        content = (
            [{"type": "output_text", "text": self.text, "annotations": self._annotations(), "logprobs": self.logprobs}]
            if full
            else []
        )
        return {
            "id": ident("msg_", self.script.nonce, "message"),
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": content,
        }

    def message(self) -> Steps:
        index = len(self.items)
        item = self._message_item("in_progress", False)
        place = {"item_id": item["id"], "output_index": index, "content_index": 0}
        yield Frame(self.event("response.output_item.added", output_index=index, item=item))
        yield Frame(
            self.event(
                "response.content_part.added",
                **place,
                part={"type": "output_text", "text": "", "annotations": [], "logprobs": []},
            )
        )
        citations = [c for block in self.script.blocks for c in block.citations]
        written = 0
        announced = 0
        asked = self.script.logprobs is not None
        for count, token in enumerate(self.script.text_tokens, 1):
            logprobs = [self._logprob(token, count - 1)] if asked else []
            yield Frame(self.event("response.output_text.delta", **place, delta=token, logprobs=logprobs), 1)
            written += len(token)
            if count == self.script.malformed_after:
                yield Frame(self.malformed(place))
            while announced < len(citations) and citations[announced].end <= written:
                annotation = self._annotations(written)[announced]
                yield Frame(
                    self.event(
                        "response.output_text.annotation.added",
                        **place,
                        annotation_index=announced,
                        annotation=annotation,
                    )
                )
                announced += 1
        if self.script.ending not in ("stop", "length", "tool_calls"):
            return
        text = self.text
        yield Frame(self.event("response.output_text.done", **place, text=text, logprobs=self.logprobs))
        part = {"type": "output_text", "text": text, "annotations": self._annotations(), "logprobs": self.logprobs}
        yield Frame(self.event("response.content_part.done", **place, part=part))
        done = self._message_item("incomplete" if self.script.ending == "length" else "completed", True)
        self.items.append(done)
        yield Frame(self.event("response.output_item.done", output_index=index, item=done))

    def _call_item(self, index: int, status: str) -> dict[str, Any]:
        call = self.script.tool_calls[index]
        return {
            "id": ident("fc_", self.script.nonce, f"call{index}"),
            "type": "function_call",
            "status": status,
            "arguments": call.arguments if status == "completed" else "",
            "call_id": ident("call_", self.script.nonce, f"call{index}"),
            "name": call.name,
        }

    def function_call(self, index: int) -> Steps:
        output_index = len(self.items)
        item = self._call_item(index, "in_progress")
        yield Frame(self.event("response.output_item.added", output_index=output_index, item=item))
        for token in self.script.tool_calls[index].argument_tokens:
            yield Frame(
                self.event(
                    "response.function_call_arguments.delta", item_id=item["id"], output_index=output_index, delta=token
                ),
                1,
            )
        if self.script.ending not in ("stop", "length", "tool_calls"):
            return
        done = self._call_item(index, "completed")
        yield Frame(
            self.event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=output_index,
                name=done["name"],
                arguments=done["arguments"],
            )
        )
        self.items.append(done)
        yield Frame(self.event("response.output_item.done", output_index=output_index, item=done))

    # -------------------------------------------------------------- failures

    def malformed(self, place: dict[str, Any]) -> bytes:
        """An event cut off inside its JSON; it takes no sequence number."""
        head = dumps({"type": "response.output_text.delta", "sequence_number": self.sequence, **place})[:-1]
        return f'event: response.output_text.delta\ndata: {head},"delta":"\\u00\n\n'.encode()

    def failure(self, error: Optional[ScriptError]) -> Steps:
        assert error is not None
        code = "server_error" if error.kind == "server_error" else "insufficient_quota"
        if self.flavor.responses_error_event:
            yield Frame(self.event("error", code=code, message=error.message, param=None))
        failed = self.response("failed", error={"code": code, "message": error.message})
        yield Frame(self.event("response.failed", response=failed))
