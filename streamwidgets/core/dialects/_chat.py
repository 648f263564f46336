"""OpenAI Chat Completions chunks, with every OpenAI-compatible provider's extras.

One translator reads all variants: the field names differ (`reasoning_content` / `reasoning` /
Mistral's content arrays), but they never conflict, so accepting every common spelling is both
simpler and safer than branching on the provider. Each rule below names who needs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Optional

from .._errors import error_from_object
from .._events import (
    CitationsFound,
    ErrorEvent,
    Event,
    Finish,
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
from .._json import dumps, loads
from .._providers import BEARER, Auth
from .._sse import ServerSentEvent
from ._common import ThinkSplitter, citations_from, count, number, parse_object, source, string, sub
from ._logprobs import LogprobReader, logprob_params
from ._request import CallResult, Messages, ToolSpecs, ask_to_continue, assistant_turn, fields, rename_token_limit

__all__ = ["ChatDialect", "chat_usage"]


def _write_logprobs(params: dict[str, Any], alternatives: int) -> None:
    """`logprobs=N` in chat's words: `logprobs: true, top_logprobs: N`."""
    params["logprobs"] = True
    params["top_logprobs"] = alternatives


def chat_usage(usage: Mapping[str, Any]) -> Usage:
    """The usage table of `docs/wire-formats.md`, chat column (DeepSeek / Perplexity / OpenRouter / Engy fallbacks)."""
    prompt = count(usage.get("prompt_tokens"))
    completion = count(usage.get("completion_tokens"))
    total = count(usage.get("total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    cached = count(sub(usage, "prompt_tokens_details").get("cached_tokens"))
    if cached is None:
        cached = count(usage.get("prompt_cache_hit_tokens"))  # DeepSeek
    reasoning = count(sub(usage, "completion_tokens_details").get("reasoning_tokens"))
    if reasoning is None:
        reasoning = count(usage.get("reasoning_tokens"))  # Perplexity
    raw_cost = usage.get("cost")
    cost = number(raw_cost)  # OpenRouter credits, Engy
    if cost is None and isinstance(raw_cost, dict):
        cost = number(raw_cost.get("total_cost"))  # Perplexity
    return Usage(prompt, completion, total, cached, reasoning, cost)


class ChatDialect:
    """Translate chat-completion chunks. Stateful only where the wire is: index-less tool calls,
    Perplexity's repeated source lists, and the optional `<think>` splitter."""

    name: ClassVar[str] = "chat"
    title: ClassVar[str] = "OpenAI-compatible chat"

    # ------------------------------------------------------------------ the request side

    auth: ClassVar[Auth] = BEARER
    headers: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: The body fields of OpenAI's reference (and its SDK's parameters); `demo` is the embedded provider's.
    fields: ClassVar[frozenset[str]] = fields(
        "model messages audio frequency_penalty function_call functions logit_bias logprobs "
        "max_completion_tokens max_tokens metadata modalities moderation n parallel_tool_calls prediction "
        "presence_penalty prompt_cache_key prompt_cache_options prompt_cache_retention reasoning_effort "
        "response_format safety_identifier seed service_tier stop store stream stream_options temperature "
        "tool_choice tools top_logprobs top_p user verbosity web_search_options demo"
    )
    logprobs: ClassVar[bool] = True

    @staticmethod
    def url(base_url: str, model: str) -> str:
        return base_url.rstrip("/") + "/chat/completions"

    @staticmethod
    def build_body(model: str, messages: Messages, params: Mapping[str, Any], *, include_usage: bool) -> dict[str, Any]:
        """A chat-completions body; `include_usage` asks for the usage chunk (`stream_options`)."""
        body: dict[str, Any] = {"model": model, "messages": [dict(m) for m in messages], "stream": True}
        if include_usage:
            body["stream_options"] = {"include_usage": True}
        params = logprob_params(params, _write_logprobs)
        body.update(rename_token_limit(params, "max_tokens", keep=("max_completion_tokens",)))
        return body

    @staticmethod
    def continuation(partial: str, prefill: bool) -> tuple[str, list[dict[str, Any]]]:
        return ask_to_continue(partial, prefill, assistant_turn)

    @staticmethod
    def tools_field(tools: ToolSpecs) -> list[dict[str, Any]]:
        """`tools`: each a `function` with its name, description and `parameters` schema."""
        return [{"type": "function", "function": dict(tool)} for tool in tools]

    @staticmethod
    def tool_turns(text: str, calls: Sequence[CallResult]) -> list[dict[str, Any]]:
        """The assistant message with its `tool_calls`, then one `tool` message per result."""
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": text or None,
            "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
            ],
        }
        return [assistant, *({"role": "tool", "tool_call_id": c.id, "content": c.content} for c in calls)]

    # ------------------------------------------------------------------ the reader

    @staticmethod
    def tells(event: str, obj: Optional[Mapping[str, Any]], data: str) -> bool:
        """Whether an event (its name, its JSON object if it is one, its data) is this API's."""
        if obj is None:
            return data.startswith("[DONE]")
        kind = obj.get("object")
        return "choices" in obj or (isinstance(kind, str) and kind.startswith(("chat.completion", "venym.")))

    @staticmethod
    def holds_answer(obj: Mapping[str, Any]) -> bool:
        """Whether a whole (non-streamed) JSON body is this API's answer."""
        kind = obj.get("object")
        return "choices" in obj or (isinstance(kind, str) and kind.startswith("chat.completion"))

    #: A lone `data: [DONE]` without its blank line still ends the stream (llama.cpp).
    lone_done: ClassVar[bool] = True

    @classmethod
    def reader(cls, think_tags: bool, alternatives: Optional[int]) -> ChatDialect:
        return cls(think_tags=think_tags, alternatives=alternatives)

    def __init__(self, *, think_tags: bool = False, alternatives: Optional[int] = None) -> None:
        self._think = ThinkSplitter() if think_tags else None
        self._started = False
        self._tool_key: Any = None  # the call index-less fragments extend (Gemini, Mistral)
        self._auto_calls = 0
        self._seen_sources = 0  # Perplexity resends its lists on every chunk
        #: What the JSON edge mended in this stream (`_json.loads`); the normalizer says it once.
        self.notes: set[str] = set()
        self._logprobs = LogprobReader(alternatives)  # at most as many alternatives as were asked for

    def translate(self, sse: ServerSentEvent) -> list[Event]:
        data = sse.data
        if data[:1] == "{":
            try:
                obj = loads(data, self.notes)
            except ValueError:
                obj = None
        else:  # `[DONE]`, or JSON after a newline (multi-line data), or garbage
            if data.strip() == "[DONE]":
                return self._end([Terminator()])
            obj = None
        if type(obj) is not dict:
            obj = parse_object(data, self.notes)
            if isinstance(obj, Problem):
                return [obj]
        out: list[Event] = []
        if not self._started and (obj.get("model") or obj.get("id")):
            self._started = True
            out.append(Started(string(obj.get("model")), string(obj.get("id"))))
        if obj.get("error") is not None or sse.event == "error":
            # OpenAI, vLLM, OpenRouter, Engy, Vultr chunks; everyais `event: error`.
            out.append(error_from_object(obj))
        choices = obj.get("choices")
        if choices and type(choices) is list:
            choice = choices[0]
            if type(choice) is dict:
                delta = choice.get("delta")
                # The hot path: a delta that only adds answer text.
                if type(delta) is dict and len(delta) == 1 and type(delta.get("content")) is str and not self._think:
                    if delta["content"]:
                        out.append(TextDelta(delta["content"]))
                    logprobs = choice.get("logprobs")
                    if logprobs:
                        self._tokens(logprobs, delta["content"], out)
                    if choice.get("finish_reason"):
                        self._finish(choice, out)
                elif type(delta) is dict and len(delta) == 1 and type(delta.get("tool_calls")) is list:
                    self._tool_calls(delta["tool_calls"], out)  # a fragment of arguments, per token
                    self._finish(choice, out)
                else:
                    self._choice(choice, out)
            else:
                out.append(Problem("a chunk's choice was not an object and was skipped"))
        usage = obj.get("usage")
        if type(usage) is dict:
            out.append(UsageReport(chat_usage(usage)))
        kind = obj.get("object")
        if kind == "venym.sources":
            found = citations_from(obj.get("sources") or ())
            if found:
                out.append(CitationsFound(tuple(found)))
        if "search_results" in obj or "citations" in obj:
            self._perplexity_sources(obj, out)
        if kind == "chat.completion.done":  # Perplexity's terminator: no [DONE] follows
            return self._end([*out, Terminator()])
        return out

    def finish(self) -> list[Event]:
        """End of stream: release text held back by the `<think>` splitter."""
        return self._think.flush() if self._think is not None else []

    def answer(self, data: str) -> list[Event]:
        """A whole answer instead of a stream (the server ignored `stream`): `choices[].message`
        reads like one delta, so the chunk reader reads it; complete unless it holds an error.
        [] when `data` is no chat completion."""
        obj = parse_object(data, self.notes)
        if isinstance(obj, Problem) or not (isinstance(obj.get("choices"), list) or obj.get("error") is not None):
            return []
        events = self.translate(ServerSentEvent("message", data)) + self.finish()
        if not any(type(e) is ErrorEvent for e in events):
            events.append(Terminator())
        return events

    # ------------------------------------------------------------------ parts

    def _end(self, out: list[Event]) -> list[Event]:
        return self.finish() + out

    def _choice(self, choice: Mapping[str, Any], out: list[Event]) -> None:
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            delta = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        if delta:
            content = delta.get("content")
            if isinstance(content, str):
                if content:
                    self._text(content, out)
                if self._think is None and choice.get("logprobs"):
                    self._tokens(choice["logprobs"], content, out)
            elif isinstance(content, list):
                self._content_parts(content, out)
            reasoning = delta.get("reasoning_content")
            if not isinstance(reasoning, str):
                reasoning = delta.get("reasoning")
            if isinstance(reasoning, str):
                if reasoning:
                    out.append(ReasoningDelta(reasoning))
            elif isinstance(delta.get("reasoning_details"), list):
                # OpenRouter sends the details array next to the string; alone, it is the reasoning.
                for detail in delta["reasoning_details"]:
                    if isinstance(detail, dict):
                        text = detail.get("text") or detail.get("summary")
                        if isinstance(text, str) and text:
                            out.append(ReasoningDelta(text))
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                out.append(RefusalDelta(refusal))
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                self._tool_calls(calls, out)
            annotations = delta.get("annotations")
            if isinstance(annotations, list):
                found = []
                for note in annotations:
                    if isinstance(note, dict):
                        detail = note.get("url_citation")
                        detail = detail if isinstance(detail, dict) else note
                        s = source(detail.get("url"), detail.get("title"))
                        if s is not None:
                            found.append(s)
                if found:
                    out.append(CitationsFound(tuple(found)))
        self._finish(choice, out)

    def _tokens(self, logprobs: Any, text: str, out: list[Event]) -> None:
        """`choices[0].logprobs.content`: the tokens of `text` (see `_logprobs`)."""
        if type(logprobs) is dict:
            out.extend(self._logprobs.read(logprobs.get("content"), text))

    @staticmethod
    def _finish(choice: Mapping[str, Any], out: list[Event]) -> None:
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            out.append(Finish(reason))

    def _text(self, text: str, out: list[Event]) -> None:
        if self._think is None:
            out.append(TextDelta(text))
        else:
            out.extend(self._think.feed(text))

    def _content_parts(self, parts: list, out: list[Event]) -> None:
        """Mistral Magistral: `{type: text}` parts are answer, `{type: thinking}` parts hold reasoning."""
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str):
                if part["text"]:
                    self._text(part["text"], out)
            elif kind == "thinking":
                inner = part.get("thinking")
                items = inner if isinstance(inner, list) else [{"text": inner}]
                for item in items:
                    text = item.get("text") if isinstance(item, dict) else None
                    if isinstance(text, str) and text:
                        out.append(ReasoningDelta(text))

    def _tool_calls(self, calls: list, out: list[Event]) -> None:
        for call in calls:
            if isinstance(call, dict):
                self._tool_call(call, out)

    def _tool_call(self, call: Mapping[str, Any], out: list[Event]) -> None:
        function = sub(call, "function")
        index = call.get("index")
        call_id = string(call.get("id"))
        if isinstance(index, int) and not isinstance(index, bool):
            key: Any = index
        elif call_id is not None or self._tool_key is None:
            # Gemini / Mistral send no index: a fragment with an id starts a new call.
            self._auto_calls += 1
            key = ("auto", self._auto_calls)
        else:
            key = self._tool_key
        self._tool_key = key
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            try:
                arguments = dumps(arguments)  # an object where a string belongs
            except ValueError:
                out.append(Problem("a tool call's arguments were nested too deeply to read and were skipped"))
                arguments = ""
        out.append(ToolCallDelta(key, call_id, string(function.get("name")), arguments or ""))

    def _perplexity_sources(self, obj: Mapping[str, Any], out: list[Event]) -> None:
        """`search_results` (with titles) win over the bare-URL `citations` list."""
        results = obj.get("search_results")
        items = results if isinstance(results, list) and results else obj.get("citations")
        if not isinstance(items, list) or len(items) <= self._seen_sources:
            return
        found = citations_from(items)
        self._seen_sources = len(items)
        if found:
            out.append(CitationsFound(tuple(found)))
