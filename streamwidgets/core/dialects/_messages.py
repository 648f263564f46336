"""Anthropic Messages events: indexed content blocks that are opened, appended to and closed.

The only state is what the wire demands: each block's type (a `partial_json` delta belongs to
a client tool call only inside a `tool_use` block) and the usage so far (`message_delta` usage
replaces the fields it carries).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Optional

from .._errors import error_from_object
from .._events import (
    CitationsFound,
    Event,
    Finish,
    Heartbeat,
    Problem,
    ReasoningDelta,
    Started,
    Terminator,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from .._json import dumps
from .._providers import X_API_KEY, Auth
from .._sse import ServerSentEvent
from ._common import citations_from, count, parse_object, remember, source, string, sub
from ._request import CallResult, Messages, ToolSpecs, arguments_object, fields, rename_token_limit, split_system

__all__ = ["MessagesDialect", "messages_usage"]


def messages_usage(usage: Mapping[str, Any]) -> Usage:
    """Anthropic counts cache reads and writes apart from `input_tokens`; the prompt is their sum."""
    inputs = count(usage.get("input_tokens"))
    created = count(usage.get("cache_creation_input_tokens"))
    read = count(usage.get("cache_read_input_tokens"))
    prompt = (
        None if inputs is None and created is None and read is None else (inputs or 0) + (created or 0) + (read or 0)
    )
    completion = count(usage.get("output_tokens"))
    total = prompt + completion if prompt is not None and completion is not None else None
    return Usage(prompt, completion, total, read, None, None)


#: A block's `index` that is no whole number (a list, an object) cannot say which block it is.
_NO_INDEX = "{} came with a content block index that is not a whole number and was skipped"


def _index(value: Any) -> Optional[int]:
    """A content block's `index` as sent: a whole number, else None (it names no block)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


#: The event types only Messages sends.
_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)

#: Messages requires a token limit; this one is sent when the caller gives none.
DEFAULT_MAX_TOKENS = 4096


class MessagesDialect:
    name: ClassVar[str] = "messages"
    title: ClassVar[str] = "Anthropic Messages"

    # ------------------------------------------------------------------ the request side

    auth: ClassVar[Auth] = X_API_KEY
    headers: ClassVar[tuple[tuple[str, str], ...]] = (("anthropic-version", "2023-06-01"),)
    #: The body fields of Anthropic's reference; `demo` is the embedded provider's.
    fields: ClassVar[frozenset[str]] = fields(
        "model messages max_tokens cache_control container context_management diagnostics inference_geo "
        "mcp_servers metadata output_config service_tier speed stop_sequences stream system temperature "
        "thinking tool_choice tools top_k top_p user_profile_id workspace_id demo"
    )
    #: Messages sends no token log-probabilities.
    logprobs: ClassVar[bool] = False

    @staticmethod
    def url(base_url: str, model: str) -> str:
        return base_url.rstrip("/") + "/messages"

    @staticmethod
    def build_body(model: str, messages: Messages, params: Mapping[str, Any], *, include_usage: bool) -> dict[str, Any]:
        """A Messages body: system turns move to `system`, and `max_tokens` is required."""
        conversation, system = split_system(messages)
        body: dict[str, Any] = {
            "model": model,
            "messages": conversation,
            "max_tokens": DEFAULT_MAX_TOKENS,
            "stream": True,
        }
        if system:
            body["system"] = system
        body.update(rename_token_limit(params, "max_tokens"))
        return body

    @staticmethod
    def continuation(partial: str, prefill: bool) -> tuple[str, list[dict[str, Any]]]:
        """The partial answer becomes an assistant prefill, which the model continues (every
        Messages server does: `prefill` is always so). A prefill may not end in white space (the
        model adds it back), so the next part starts trimmed."""
        partial = partial.rstrip()
        return partial, [{"role": "assistant", "content": partial}]

    @staticmethod
    def tools_field(tools: ToolSpecs) -> list[dict[str, Any]]:
        """`tools`: name, description and the schema as `input_schema`."""
        return [
            {"name": tool["name"], "description": tool.get("description", ""), "input_schema": tool["parameters"]}
            for tool in tools
        ]

    @staticmethod
    def tool_turns(text: str, calls: Sequence[CallResult]) -> list[dict[str, Any]]:
        """The assistant turn with its `tool_use` blocks, then a user turn of `tool_result` blocks
        (`is_error` on a failed call)."""
        said = [{"type": "text", "text": text.rstrip()}] if text.strip() else []
        used = [{"type": "tool_use", "id": c.id, "name": c.name, "input": arguments_object(c.arguments)} for c in calls]
        results = [
            {
                "type": "tool_result",
                "tool_use_id": c.id,
                "content": c.content,
                **({"is_error": True} if c.is_error else {}),
            }
            for c in calls
        ]
        return [{"role": "assistant", "content": [*said, *used]}, {"role": "user", "content": results}]

    # ------------------------------------------------------------------ the reader

    @staticmethod
    def tells(event: str, obj: Optional[Mapping[str, Any]], data: str) -> bool:
        """Whether an event (its name, its JSON object if it is one, its data) is this API's."""
        kind = obj.get("type") if obj is not None else None
        return event in _EVENTS or (isinstance(kind, str) and kind in _EVENTS)

    @staticmethod
    def holds_answer(obj: Mapping[str, Any]) -> bool:
        """Whether a whole (non-streamed) JSON body is this API's answer."""
        return obj.get("type") == "message"

    lone_done: ClassVar[bool] = False

    @classmethod
    def reader(cls, think_tags: bool, alternatives: Optional[int]) -> MessagesDialect:
        return cls()

    def __init__(self) -> None:
        self._blocks: dict[Any, str] = {}
        self._usage: dict[str, Any] = {}
        #: What the JSON edge mended in this stream (`_json.loads`); the normalizer says it once.
        self.notes: set[str] = set()

    def translate(self, sse: ServerSentEvent) -> list[Event]:
        obj = parse_object(sse.data, self.notes)
        if isinstance(obj, Problem):
            return [obj]
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = sse.event
        if kind == "content_block_delta":
            return self._delta(obj.get("index"), sub(obj, "delta"))
        if kind == "content_block_start":
            return self._start(obj.get("index"), sub(obj, "content_block"))
        if kind == "ping":
            return [Heartbeat("ping")]
        if kind == "message_start":
            message = sub(obj, "message")
            out: list[Event] = [Started(string(message.get("model")), string(message.get("id")))]
            return out + self._merge_usage(sub(message, "usage"))
        if kind == "message_delta":
            out = []
            reason = sub(obj, "delta").get("stop_reason")
            if isinstance(reason, str) and reason:
                out.append(Finish(reason))
            return out + self._merge_usage(sub(obj, "usage"))
        if kind == "message_stop":
            return [Terminator()]
        if kind == "error" or obj.get("error") is not None:
            # Also another dialect's envelope with no `type` (a proxy's `{"error": {...}}`).
            return [error_from_object(obj)]
        return []  # content_block_stop, unknown future events

    def finish(self) -> list[Event]:
        return []

    def answer(self, data: str) -> list[Event]:
        """A whole message instead of a stream (the server ignored `stream`): its content blocks in
        order, read as a stream's `content_block_start` would carry them, then how it ended.
        [] when `data` is no message."""
        obj = parse_object(data, self.notes)
        if isinstance(obj, Problem):
            return []
        if obj.get("type") == "error" or isinstance(obj.get("error"), dict):
            return [error_from_object(obj)]
        blocks = obj.get("content")
        if obj.get("type") != "message" or not isinstance(blocks, list):
            return []
        out: list[Event] = [Started(string(obj.get("model")), string(obj.get("id")))]
        for index, block in enumerate(blocks):
            if isinstance(block, dict):
                out += self._start(index, block)
                out += self._whole_block(index, block)
        reason = obj.get("stop_reason")
        if isinstance(reason, str) and reason:
            out.append(Finish(reason))
        out += self._merge_usage(sub(obj, "usage"))
        out.append(Terminator())
        return out

    @staticmethod
    def _whole_block(index: int, block: Mapping[str, Any]) -> list[Event]:
        """What a whole block holds beyond its start: a tool call's real `input`, a text's citations."""
        if block.get("type") == "tool_use" and "input" in block:
            try:
                arguments = dumps(block["input"])
            except ValueError:
                return [Problem("a tool call's input was nested too deeply to read and was skipped")]
            return [ToolCallDelta(("block", index), arguments=arguments)]
        citations = block.get("citations")
        if isinstance(citations, list):
            found = citations_from(c for c in citations if isinstance(c, dict))
            return [CitationsFound(tuple(found))] if found else []
        return []

    def _start(self, index: Any, block: Mapping[str, Any]) -> list[Event]:
        kind = block.get("type")
        index = _index(index)
        if index is not None:
            remember(self._blocks, index, kind if isinstance(kind, str) else "")
        if kind == "tool_use":
            if index is None:
                return [Problem(_NO_INDEX.format("a tool call"))]
            return [ToolCallDelta(("block", index), string(block.get("id")), string(block.get("name")))]
        if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
            return [TextDelta(block["text"])]
        if kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
            return [ReasoningDelta(block["thinking"])]
        return []  # server_tool_use / web_search_tool_result run on the provider's side

    def _delta(self, index: Any, delta: Mapping[str, Any]) -> list[Event]:
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            return [TextDelta(text)] if isinstance(text, str) and text else []
        if kind == "thinking_delta":
            text = delta.get("thinking")
            return [ReasoningDelta(text)] if isinstance(text, str) and text else []
        if kind == "input_json_delta":
            partial = delta.get("partial_json")
            index = _index(index)
            if index is None:
                return [Problem(_NO_INDEX.format("a tool call's arguments"))]
            if self._blocks.get(index) == "tool_use" and isinstance(partial, str) and partial:
                return [ToolCallDelta(("block", index), arguments=partial)]
            return []
        if kind == "citations_delta":
            citation = sub(delta, "citation")
            s = source(citation.get("url"), citation.get("title"))
            return [CitationsFound((s,))] if s is not None else []
        return []  # signature_delta is opaque, never text

    def _merge_usage(self, usage: Mapping[str, Any]) -> list[Event]:
        if not usage:
            return []
        self._usage.update((k, v) for k, v in usage.items() if v is not None)
        return [UsageReport(messages_usage(self._usage))]
