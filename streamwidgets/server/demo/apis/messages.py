"""Anthropic Messages (`/messages`): the request reader and the writers, in Anthropic's words.

The request: `messages` of content blocks with a separate `system`, a required `max_tokens`,
tools as `{"name", "description", "input_schema"}`, and an assistant's `tool_use` blocks
answered by `tool_result` blocks (`tool_use_id`, `is_error`) in the very next user turn. Its
400s are worded as Anthropic's (`modle: Extra inputs are not permitted`, `temperature: range:
0..1`), its errors are `{"type": "error", "error": {"type", "message"}, "request_id"}` with a
`request-id` header, and its heartbeat is a `ping` event.

The stream: indexed content blocks between `message_start` and `message_stop`, in Anthropic's
order: a `server_tool_use` web search and its `web_search_tool_result` (when searching), a
`thinking` block closed by a `signature_delta`, text blocks (a cited passage opens with
`citations: []` and gets a `citations_delta` before its text), then `tool_use` blocks whose
arguments arrive as `input_json_delta` fragments, the first one empty. A stream cut by
`max_tokens` leaves its last block open, as the API does.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Optional

from ..._edge import Rejection
from .._fields import BOOLEAN, FIELDS, Bound, Unknown, number_text
from .._flavors import Flavor
from .._frames import Frame, Steps, dumps, ident, sse
from .._script import Citation, Script, ScriptError, TextBlock, ended
from .._tools import PastCall, Rounds, Tool, ToolChoice, ToolResult, ToolUse, plain_text
from ._spec import ApiSpec, Endpoint, Turn, text_of

__all__ = ["Messages", "MESSAGES", "messages_stream", "message_object", "STOP_REASONS"]

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}

_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
#: Anthropic's server and client tools with a versioned type (`web_search_20250305`...).
_TYPED = re.compile(r"(web_search|web_fetch|code_execution|bash|text_editor|computer|memory)_\d{8}")


class Messages(ApiSpec):
    name = "messages"
    path = "messages"
    title = "Messages API (/v1/messages)"
    request_id_header = "request-id"
    bounds: ClassVar[Mapping[str, Bound]] = {
        "temperature": Bound("decimal", 0, 1),
        "top_p": Bound("decimal", 0, 1),
        "top_k": Bound("integer", 0),
        "max_tokens": Bound("integer", 1),
        "stream": BOOLEAN,
    }
    required = ("model", "max_tokens")

    def documented(self) -> frozenset[str]:
        return FIELDS["messages"]

    def turns(self, data: Mapping[str, Any]) -> list[Turn]:
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Rejection(400, "messages: at least one message is required", param="messages", code="invalid_value")
        turns: list[Turn] = []
        system = data.get("system")
        if system is not None:
            text, tokens = text_of(system)
            turns.append(("system", text, tokens))
        for message in messages:
            if not isinstance(message, Mapping):
                raise Rejection(400, "messages: each message must be an object", param="messages", code="invalid_type")
            content = message.get("content")
            blocks = content if isinstance(content, list) else []
            results = [b for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_result"]
            text, tokens = text_of(content)
            turns.append(("tool" if results else str(message.get("role", "user")), text, tokens))
        return turns

    def tool_use(self, data: Mapping[str, Any]) -> ToolUse:
        tools = _tools(data.get("tools"))
        choice = _choice(data.get("tool_choice"), tools)
        results, failed = _results(data.get("messages"))
        return ToolUse(tools, choice, results, failed)

    # ------------------------------------------------------------------ Anthropic's words

    def unrecognized(self, unknown: Unknown) -> Rejection:
        return Rejection(
            400,
            "; ".join(f"{field}: Extra inputs are not permitted{hint}" for field, hint in unknown.parts) + unknown.more,
        )

    def missing(self, name: str) -> Rejection:
        return Rejection(400, f"{name}: Field required", param=name, code="missing_required_parameter")

    def wrong_type(self, name: str, kind: str, value: Any) -> Rejection:
        anthropic = {"decimal": "number"}.get(kind, kind)
        return Rejection(400, f"{name}: Input should be a valid {anthropic}", param=name, code="invalid_type")

    def out_of_range(self, name: str, bound: Bound, value: Any, *, above: bool) -> Rejection:
        if bound.low is not None and bound.high is not None:
            message = f"{name}: range: {number_text(bound.low)}..{number_text(bound.high)}"
        else:
            relation = "less than" if above else "greater than"
            message = (
                f"{name}: Input should be {relation} or equal to {number_text(bound.high if above else bound.low)}"
            )
        return Rejection(400, message, param=name, code="invalid_value")

    def model_not_found(self, model: str, hint: str) -> str:
        return f"model: {model}. {hint}"

    def error_body(self, rejection: Rejection, request_id: str) -> bytes:
        envelope = {
            "type": "error",
            "error": {"type": rejection.anthropic_type, "message": rejection.message},
            "request_id": request_id,
        }
        return json.dumps(envelope).encode()

    # ------------------------------------------------------------------ writing

    def stream(self, script: Script, flavor: Flavor, endpoint: Endpoint) -> Steps:
        return messages_stream(script, flavor)

    def whole(self, script: Script, flavor: Flavor) -> dict[str, Any]:
        return message_object(script, flavor)

    def heartbeat(self, flavor: Flavor) -> bytes:
        """Anthropic's `ping` event, whatever the flavor."""
        return sse(dumps({"type": "ping"}), event="ping")


MESSAGES = Messages()


# ---------------------------------------------------------------------------- tools


def _anthropic(message: str, param: Optional[str] = None) -> Rejection:
    return Rejection(400, message, param=param, code="invalid_value")


def _tools(value: Any) -> tuple[Tool, ...]:
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
            tools.append(_tool(f"{where}.custom", tool))
            name = tools[-1].name
        elif isinstance(kind, str) and _TYPED.fullmatch(kind):
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


def _tool(where: str, tool: Mapping[str, Any]) -> Tool:
    name = tool.get("name")
    if name is None:
        raise _anthropic(f"{where}.name: Field required", f"{where}.name")
    if not isinstance(name, str):
        raise _anthropic(f"{where}.name: Input should be a valid string", f"{where}.name")
    if not _NAME.fullmatch(name):
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


def _choice(value: Any, tools: tuple[Tool, ...]) -> ToolChoice:
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


def _results(messages: Any) -> tuple[tuple[ToolResult, ...], frozenset[str]]:
    """The `tool_result` blocks of a last user turn; every `tool_use` of an assistant turn must
    be answered in the very next turn, and every `tool_result` must answer one of them."""
    rounds = Rounds()
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
            rounds.add(ToolResult(call, plain_text(block.get("content")), block.get("is_error") is True))
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


# ---------------------------------------------------------------------------- the stream


def messages_stream(script: Script, flavor: Flavor) -> Steps:
    """The steps of a Messages stream for `script`."""
    out = _Blocks(script)
    if script.ending == "error" and not script.text_tokens:
        assert script.error is not None
        yield Frame(out.error(script.error))
        return
    yield Frame(out.event("message_start", message=out.message([], None, start=True)))
    yield Frame(out.event("ping"))
    yield from out.content()

    def stop() -> Steps:
        delta = {"stop_reason": STOP_REASONS[script.ending], "stop_sequence": None}
        yield Frame(out.event("message_delta", delta=delta, usage=out.usage(final=True)))
        yield Frame(out.event("message_stop"))

    yield from ended(script, lambda error: [Frame(out.error(error))], stop)


def message_object(script: Script, flavor: Flavor) -> dict[str, Any]:
    """The non-streaming Message object for `script`."""
    out = _Blocks(script)
    return out.message(out.final_blocks(), STOP_REASONS.get(script.ending, "end_turn"), start=False)


class _Blocks:
    """Numbers the content blocks of one message and spells its events."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.index = 0

    def event(self, kind: str, **fields: Any) -> bytes:
        return sse(dumps({"type": kind, **fields}), event=kind)

    def usage(self, final: bool) -> dict[str, Any]:
        usage = self.script.usage
        body: dict[str, Any] = {
            "input_tokens": usage.prompt_tokens - usage.cached_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": usage.cached_tokens,
            "output_tokens": usage.completion_tokens if final else 1,
        }
        if self.script.search_query is not None:
            body["server_tool_use"] = {"web_search_requests": 1}
        return body

    def message(self, content: list[dict[str, Any]], stop_reason: Any, *, start: bool) -> dict[str, Any]:
        return {
            "id": ident("msg_", self.script.nonce),
            "type": "message",
            "role": "assistant",
            "model": self.script.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": self.usage(final=not start),
        }

    def error(self, error: ScriptError) -> bytes:
        kind = "overloaded_error" if error.kind == "server_error" else "billing_error"
        return self.event(
            "error",
            error={"type": kind, "message": error.message},
            request_id=ident("req_", self.script.nonce, "error"),
        )

    # -------------------------------------------------------------- blocks

    def _search_blocks(self) -> tuple[dict[str, Any], dict[str, Any]]:
        tool_id = ident("srvtoolu_", self.script.nonce, "search")
        results = [
            {
                "type": "web_search_result",
                "title": source.title,
                "url": source.url,
                "encrypted_content": _opaque(f"{self.script.nonce}:content:{source.url}"),
                "page_age": None,
            }
            for source in self.script.sources
        ]
        use = {
            "type": "server_tool_use",
            "id": tool_id,
            "name": "web_search",
            "input": {"query": self.script.search_query},
        }
        return use, {"type": "web_search_tool_result", "tool_use_id": tool_id, "content": results}

    def _citation(self, citation: Citation) -> dict[str, Any]:
        source = self.script.sources[citation.source]
        return {
            "type": "web_search_result_location",
            "cited_text": citation.cited_text,
            "url": source.url,
            "title": source.title,
            "encrypted_index": _opaque(f"{self.script.nonce}:index:{citation.source}:{citation.start}"),
        }

    def final_blocks(self) -> list[dict[str, Any]]:
        """The content blocks of the finished message (non-streaming)."""
        blocks: list[dict[str, Any]] = []
        if self.script.search_query is not None:
            blocks.extend(self._search_blocks())
        if self.script.reasoning_tokens:
            blocks.append({"type": "thinking", "thinking": self.script.reasoning, "signature": self._signature()})
        for block in self.script.blocks:
            text: dict[str, Any] = {"type": "text", "text": block.text}
            if block.citations:
                text["citations"] = [self._citation(c) for c in block.citations]
            blocks.append(text)
        for i, call in enumerate(self.script.tool_calls):
            blocks.append(
                {"type": "tool_use", "id": self._tool_id(i), "name": call.name, "input": _parsed(call.arguments)}
            )
        return blocks

    def _signature(self) -> str:
        return _opaque(f"{self.script.nonce}:signature:{self.script.reasoning}", 96)

    def _tool_id(self, index: int) -> str:
        return ident("toolu_", self.script.nonce, f"call{index}")

    def _open(self, block: dict[str, Any]) -> bytes:
        return self.event("content_block_start", index=self.index, content_block=block)

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return self.event("content_block_delta", index=self.index, delta=delta)

    def _close(self) -> bytes:
        data = self.event("content_block_stop", index=self.index)
        self.index += 1
        return data

    def content(self) -> Iterator[Frame]:
        script = self.script
        proper = script.ending in STOP_REASONS
        if script.search_query is not None:
            use, result = self._search_blocks()
            yield Frame(self._open({**use, "input": {}}))
            query = json.dumps(use["input"], ensure_ascii=False)
            for fragment in ("", query[: len(query) // 2], query[len(query) // 2 :]):
                yield Frame(self._delta({"type": "input_json_delta", "partial_json": fragment}))
            yield Frame(self._close())
            # The search takes the first-token delay; its results come on the clock.
            yield Frame(self._open(result), on_clock=True)
            yield Frame(self._close())
        if script.reasoning_tokens:
            yield Frame(self._open({"type": "thinking", "thinking": "", "signature": ""}))
            for token in script.reasoning_tokens:
                yield Frame(self._delta({"type": "thinking_delta", "thinking": token}), 1)
            yield Frame(self._delta({"type": "signature_delta", "signature": self._signature()}))
            yield Frame(self._close())
        blocks = script.blocks
        written = 0
        for number, block in enumerate(blocks):
            last = number == len(blocks) - 1 and not script.tool_calls
            yield from self._text_block(block, written)
            written += len(block.tokens)
            if not (last and script.ending == "length") and (proper or not last):
                yield Frame(self._close())
        for i, call in enumerate(script.tool_calls):
            yield Frame(self._open({"type": "tool_use", "id": self._tool_id(i), "name": call.name, "input": {}}))
            yield Frame(self._delta({"type": "input_json_delta", "partial_json": ""}))
            for token in call.argument_tokens:
                yield Frame(self._delta({"type": "input_json_delta", "partial_json": token}), 1)
            if not (i == len(script.tool_calls) - 1 and script.ending == "length"):
                yield Frame(self._close())

    def _text_block(self, block: TextBlock, written: int) -> Iterator[Frame]:
        opening: dict[str, Any] = {"type": "text", "text": ""}
        if block.citations:
            opening["citations"] = []
        yield Frame(self._open(opening))
        for citation in block.citations:
            yield Frame(self._delta({"type": "citations_delta", "citation": self._citation(citation)}))
        for count, token in enumerate(block.tokens, written + 1):
            yield Frame(self._delta({"type": "text_delta", "text": token}), 1)
            if count == self.script.malformed_after:
                yield Frame(self._malformed())

    def _malformed(self) -> bytes:
        """An event cut off inside its JSON."""
        head = dumps({"type": "content_block_delta", "index": self.index})[:-1]
        return f'event: content_block_delta\ndata: {head},"delta":{{"type":"text_delta","text":"\\u00\n\n'.encode()


def _opaque(seed: str, size: int = 48) -> str:
    """A stand-in for Anthropic's encrypted fields: stable, base64, meaningless."""
    digest = b""
    counter = 0
    while len(digest) < size:
        digest += hashlib.sha256(f"{seed}:{counter}".encode("utf-8", "surrogatepass")).digest()
        counter += 1
    return base64.b64encode(digest[:size]).decode()


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return {}
