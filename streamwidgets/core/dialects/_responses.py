"""OpenAI Responses API events (`response.*`), with or without `event:` lines.

The event type is read from the JSON `type` (some proxies send bare `data:` lines), falling
back to the SSE event name. Output items are tracked only as far as the wire needs: which items
are function calls, and whether their arguments already arrived as deltas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Optional

from .._errors import error_from_object
from .._events import (
    Citation,
    CitationsFound,
    Event,
    Finish,
    Heartbeat,
    Problem,
    ReasoningDelta,
    RefusalDelta,
    Started,
    Terminator,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from .._providers import BEARER, Auth
from .._sse import ServerSentEvent
from ._common import count, parse_object, remember, source, string, sub
from ._logprobs import LOGPROBS_INCLUDE, LogprobReader, logprob_params
from ._request import CallResult, Messages, ToolSpecs, ask_to_continue, fields, rename_token_limit

__all__ = ["ResponsesDialect", "responses_usage"]


def _write_logprobs(params: dict[str, Any], alternatives: int) -> None:
    """`logprobs=N` in Responses' words: the `include` that adds them, and `top_logprobs: N`."""
    include = list(params.get("include") or ())
    if LOGPROBS_INCLUDE not in include:
        include.append(LOGPROBS_INCLUDE)
    params["include"] = include
    params["top_logprobs"] = alternatives


def responses_usage(usage: Mapping[str, Any]) -> Usage:
    prompt = count(usage.get("input_tokens"))
    completion = count(usage.get("output_tokens"))
    total = count(usage.get("total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return Usage(
        prompt,
        completion,
        total,
        count(sub(usage, "input_tokens_details").get("cached_tokens")),
        count(sub(usage, "output_tokens_details").get("reasoning_tokens")),
        None,
    )


def _citation(note: Any) -> Optional[Citation]:
    """A flat `url_citation` annotation as a source (other annotation types are no web sources)."""
    if not isinstance(note, dict) or note.get("type", "url_citation") != "url_citation":
        return None
    return source(note.get("url"), note.get("title"))


_TEXT: dict[str, Callable[[str], Event]] = {
    "response.output_text.delta": TextDelta,
    "response.reasoning_summary_text.delta": ReasoningDelta,
    "response.reasoning_text.delta": ReasoningDelta,  # raw reasoning (open-weight models via vLLM)
    "response.refusal.delta": RefusalDelta,
}


def said(text: str) -> dict[str, Any]:
    """An assistant turn of text as an input item: a `message` item (llama.cpp's server refuses
    one without its type: "Cannot determine type of 'item'"; OpenAI takes both)."""
    return {"type": "message", "role": "assistant", "content": text}


def _plain_assistant(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "assistant" and "type" not in message and isinstance(message.get("content"), str)


class ResponsesDialect:
    name: ClassVar[str] = "responses"
    title: ClassVar[str] = "OpenAI Responses"

    # ------------------------------------------------------------------ the request side

    auth: ClassVar[Auth] = BEARER
    headers: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: The body fields of OpenAI's Responses reference; `demo` is the embedded provider's.
    fields: ClassVar[frozenset[str]] = fields(
        "model input access_programs background background_options context_management conversation image "
        "include instructions max_output_tokens max_tool_calls metadata moderation parallel_tool_calls "
        "previous_response_id prompt prompt_cache_key prompt_cache_options prompt_cache_retention reasoning "
        "safety_identifier service_tier store stream stream_options temperature text tool_choice tools "
        "top_logprobs top_p truncation user demo"
    )
    logprobs: ClassVar[bool] = True

    @staticmethod
    def url(base_url: str, model: str) -> str:
        return base_url.rstrip("/") + "/responses"

    @staticmethod
    def build_body(model: str, messages: Messages, params: Mapping[str, Any], *, include_usage: bool) -> dict[str, Any]:
        """A Responses body: the conversation is the `input`; usage always comes in the final event."""
        items = [said(m["content"]) if _plain_assistant(m) else dict(m) for m in messages]
        body: dict[str, Any] = {"model": model, "input": items, "stream": True}
        body.update(rename_token_limit(logprob_params(params, _write_logprobs), "max_output_tokens"))
        return body

    @staticmethod
    def continuation(partial: str, prefill: bool) -> tuple[str, list[dict[str, Any]]]:
        return ask_to_continue(partial, prefill, said)

    @staticmethod
    def tools_field(tools: ToolSpecs) -> list[dict[str, Any]]:
        """`tools`: flat `function` entries (name, description, parameters at the top level)."""
        return [{"type": "function", **tool} for tool in tools]

    @staticmethod
    def tool_turns(text: str, calls: Sequence[CallResult]) -> list[dict[str, Any]]:
        """Input items: the answer's text, a `function_call` per call, then its `function_call_output`."""
        asked = [{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]
        answered = [{"type": "function_call_output", "call_id": c.id, "output": c.content} for c in calls]
        return [*([said(text)] if text else []), *asked, *answered]

    # ------------------------------------------------------------------ the reader

    @staticmethod
    def tells(event: str, obj: Optional[Mapping[str, Any]], data: str) -> bool:
        """Whether an event (its name, its JSON object if it is one, its data) is this API's."""
        kind = obj.get("type") if obj is not None else None
        return event.startswith("response.") or (isinstance(kind, str) and kind.startswith("response."))

    @staticmethod
    def holds_answer(obj: Mapping[str, Any]) -> bool:
        """Whether a whole (non-streamed) JSON body is this API's answer."""
        return obj.get("object") == "response"

    lone_done: ClassVar[bool] = False

    @classmethod
    def reader(cls, think_tags: bool, alternatives: Optional[int]) -> ResponsesDialect:
        return cls(alternatives=alternatives)

    def __init__(self, *, alternatives: Optional[int] = None) -> None:
        self._calls: dict[str, bool] = {}  # function-call item id -> arguments seen as deltas
        self._started = False
        #: What the JSON edge mended in this stream (`_json.loads`); the normalizer says it once.
        self.notes: set[str] = set()
        self._logprobs = LogprobReader(alternatives)  # at most as many alternatives as were asked for

    def translate(self, sse: ServerSentEvent) -> list[Event]:
        data = sse.data
        if data.strip() == "[DONE]":
            return []  # some proxies add it after the terminal event; it proves nothing
        obj = parse_object(data, self.notes)
        if isinstance(obj, Problem):
            return [obj]
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = sse.event
        make = _TEXT.get(kind)
        if make is not None:
            delta = obj.get("delta")
            if not isinstance(delta, str) or not delta:
                return []
            if make is TextDelta and obj.get("logprobs"):
                return [TextDelta(delta), *self._logprobs.read(obj["logprobs"], delta)]
            return [make(delta)]
        if kind == "response.function_call_arguments.delta":
            item = string(obj.get("item_id"))
            delta = obj.get("delta")
            if item is None or not isinstance(delta, str):
                return []
            remember(self._calls, item, True)
            return [ToolCallDelta(item, arguments=delta)]
        if kind in ("response.output_item.added", "response.output_item.done"):
            return self._item(obj.get("item"), kind.endswith("added"))
        if kind == "response.function_call_arguments.done":
            item = string(obj.get("item_id"))
            if item is not None and not self._calls.get(item) and isinstance(obj.get("arguments"), str):
                remember(self._calls, item, True)  # no deltas came: the full string is the arguments
                return [ToolCallDelta(item, arguments=obj["arguments"])]
            return []
        if kind == "response.output_text.annotation.added":
            s = _citation(sub(obj, "annotation"))
            return [CitationsFound((s,))] if s is not None else []
        if kind in ("response.created", "response.in_progress"):
            return self._started_event(sub(obj, "response"))
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._terminal(kind, sub(obj, "response"))
        if kind == "error" or obj.get("error") is not None:
            # An `error` event, or another dialect's envelope (`{"error": {...}}` with no type, as
            # proxies send it inside a 200 stream): the provider's words, never dropped.
            return [error_from_object(obj)]
        if kind == "keepalive":
            return [Heartbeat(kind)]
        return []

    def finish(self) -> list[Event]:
        return []

    def answer(self, data: str) -> list[Event]:
        """A whole response object instead of a stream (the server ignored `stream`): its output
        items in order, then its status read as the matching terminal event. A response still
        `in_progress` or `queued` has no proper end yet. [] when `data` is no response."""
        obj = parse_object(data, self.notes)
        if isinstance(obj, Problem):
            return []
        items = obj.get("output")
        if obj.get("object") != "response" or not isinstance(items, list):
            return [error_from_object(obj)] if isinstance(obj.get("error"), dict) else []
        out = self._started_event(obj)
        for item in items:
            if isinstance(item, dict):
                out += self._whole_item(item)
        status = obj.get("status") or "completed"
        if status in ("completed", "incomplete", "failed"):
            out += self._terminal(f"response.{status}", obj)
        return out

    def _whole_item(self, item: Mapping[str, Any]) -> list[Event]:
        """One finished output item: a message's text, refusal and citations, a reasoning item's
        summary, or a function call."""
        kind = item.get("type")
        if kind == "function_call":
            return self._item(item, True)
        out: list[Event] = []
        for key in ("content", "summary"):
            parts = item.get(key)
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, dict):
                    self._whole_part(part, kind == "reasoning", out)
        return out

    def _whole_part(self, part: Mapping[str, Any], reasoning: bool, out: list[Event]) -> None:
        text, refusal, notes = part.get("text"), part.get("refusal"), part.get("annotations")
        if part.get("type") == "refusal" and isinstance(refusal, str) and refusal:
            out.append(RefusalDelta(refusal))
        elif isinstance(text, str) and text:
            out.append(ReasoningDelta(text) if reasoning else TextDelta(text))
            if not reasoning and part.get("logprobs"):
                out.extend(self._logprobs.read(part["logprobs"], text))
        found = [s for s in map(_citation, notes if isinstance(notes, list) else ()) if s is not None]
        if found:
            out.append(CitationsFound(tuple(found)))

    def _started_event(self, response: Mapping[str, Any]) -> list[Event]:
        if self._started:
            return []
        self._started = True
        return [Started(string(response.get("model")), string(response.get("id")))]

    def _item(self, item: Any, added: bool) -> list[Event]:
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return []  # messages, reasoning, web_search_call (provider-executed) are no tool calls
        item_id = string(item.get("id")) or string(item.get("call_id"))
        if item_id is None:
            return []
        known = item_id in self._calls
        if added or not known:
            if not known:
                remember(self._calls, item_id, False)
            arguments = item["arguments"] if isinstance(item.get("arguments"), str) else ""
            if arguments:
                self._calls[item_id] = True
            return [ToolCallDelta(item_id, string(item.get("call_id")), string(item.get("name")), arguments)]
        if not self._calls[item_id] and isinstance(item.get("arguments"), str) and item["arguments"]:
            self._calls[item_id] = True
            return [ToolCallDelta(item_id, arguments=item["arguments"])]
        return []

    def _terminal(self, kind: str, response: Mapping[str, Any]) -> list[Event]:
        out: list[Event] = self._started_event(response)
        if kind == "response.failed":
            error = response.get("error")
            out.append(error_from_object(error if isinstance(error, dict) else {"message": "the response failed"}))
            out.append(Finish("failed"))
        elif kind == "response.incomplete":
            reason = sub(response, "incomplete_details").get("reason")
            out.append(Finish(reason if isinstance(reason, str) and reason else "incomplete"))
        else:
            out.append(Finish("completed"))
        usage = response.get("usage")
        if isinstance(usage, dict):
            out.append(UsageReport(responses_usage(usage)))
        out.append(Terminator())
        return out
