"""Google Gemini's native stream: `streamGenerateContent?alt=sse`.

Every event is a whole `GenerateContentResponse`: candidates whose `content.parts` are answer
text, thought summaries (`thought: true`, the reasoning), or whole function calls (the arguments
arrive as an object, never in fragments); grounding metadata lists the web pages Google Search
found; `usageMetadata` is cumulative, the last chunk's is the total. There is no terminator: the
stream ends with the body, and the last chunk carries `finishReason`. So a finish reason seen
before the body ended is this dialect's proper end, and a body that ends without one was cut off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Optional
from urllib.parse import quote

from .._errors import CODE_CHARS, error_from_object
from .._events import (
    CitationsFound,
    Event,
    Finish,
    Problem,
    ReasoningDelta,
    Started,
    Terminator,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from .._formatting import one_line
from .._json import dumps, loads
from .._providers import Auth
from .._sse import ServerSentEvent
from ._common import count, parse_object, source, string, sub
from ._logprobs import LogprobReader, logprob_params
from ._request import (
    CallResult,
    Messages,
    ToolSpecs,
    arguments_object,
    ask_to_continue,
    assistant_turn,
    fields,
    rename_token_limit,
)

__all__ = ["GeminiDialect", "gemini_usage"]

#: The package's keywords and their place in `generationConfig` (Google's names).
_GENERATION = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_output_tokens": "maxOutputTokens",
    "seed": "seed",
    "stop": "stopSequences",
    "candidate_count": "candidateCount",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "response_mime_type": "responseMimeType",
    "response_schema": "responseSchema",
    "thinking_config": "thinkingConfig",
}
#: Top-level body fields, as the package's keywords write them and as Google names them.
_TOP = {
    "tool_config": "toolConfig",
    "safety_settings": "safetySettings",
    "cached_content": "cachedContent",
    "system_instruction": "systemInstruction",
    "generation_config": "generationConfig",
}
#: The prefix of a call id this side made up (older models send calls without one): never sent back.
_MADE_UP = "gemini-call-"


def gemini_usage(usage: Mapping[str, Any]) -> Usage:
    """`usageMetadata`: the thought tokens are output the answer does not show, so the completion
    counts them (as OpenAI's `completion_tokens` does its reasoning tokens)."""
    prompt = count(usage.get("promptTokenCount"))
    answer = count(usage.get("candidatesTokenCount"))
    thoughts = count(usage.get("thoughtsTokenCount"))
    completion = None if answer is None and thoughts is None else (answer or 0) + (thoughts or 0)
    total = count(usage.get("totalTokenCount"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return Usage(prompt, completion, total, count(usage.get("cachedContentTokenCount")), thoughts, None)


def _write_logprobs(params: dict[str, Any], alternatives: int) -> None:
    """`logprobs=N` in Google's words (`generationConfig`, written by `build_body`)."""
    params["response_logprobs"] = True
    params["logprobs_count"] = alternatives


def _contents(messages: Messages) -> tuple[list[dict[str, Any]], str]:
    """(the conversation as `contents`, the system turns joined): `assistant` is `model`; a turn
    already in Google's shape (`parts`, from `tool_turns`) passes as it is."""
    contents: list[dict[str, Any]] = []
    system: list[str] = []
    for message in messages:
        role = message.get("role")
        if "parts" in message:
            contents.append(dict(message))
            continue
        content = message.get("content")
        if isinstance(content, list):  # OpenAI-style content parts: their texts
            text = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        else:
            text = "" if content is None else str(content)
        if role in ("system", "developer"):
            system.append(text)
        else:
            contents.append({"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]})
    return contents, "\n\n".join(system)


class GeminiDialect:
    """Translate `GenerateContentResponse` chunks. Stateful only where the wire is: whether a
    finish reason came (the end), and a count for the ids of calls sent without one."""

    name: ClassVar[str] = "gemini"
    title: ClassVar[str] = "Google Gemini"

    # ------------------------------------------------------------------ the request side

    auth: ClassVar[Auth] = Auth("x-goog-api-key")
    headers: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: Google's body fields (and the package's snake-case keywords for them); `demo` is the
    #: embedded provider's. `generationConfig=` may carry any of Google's own settings.
    fields: ClassVar[frozenset[str]] = fields(
        "contents systemInstruction generationConfig tools toolConfig safetySettings cachedContent labels demo "
        "max_tokens logprobs " + " ".join(_GENERATION) + " " + " ".join(_TOP)
    )
    logprobs: ClassVar[bool] = True

    @staticmethod
    def url(base_url: str, model: str) -> str:
        """The model is in the path; `alt=sse` asks for Server-Sent Events (else one JSON array)."""
        return f"{base_url.rstrip('/')}/models/{quote(model, safe='')}:streamGenerateContent?alt=sse"

    @staticmethod
    def build_body(model: str, messages: Messages, params: Mapping[str, Any], *, include_usage: bool) -> dict[str, Any]:
        """A Gemini body: `contents`, the system turns as `systemInstruction`, the sampling settings
        in `generationConfig`, thought summaries asked for (`includeThoughts`). Usage always comes."""
        contents, system = _contents(messages)
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        config: dict[str, Any] = {"thinkingConfig": {"includeThoughts": True}}
        rest = rename_token_limit(logprob_params(params, _write_logprobs), "max_output_tokens")
        for key, value in rest.items():
            if key in _GENERATION:
                config[_GENERATION[key]] = [value] if key == "stop" and isinstance(value, str) else value
            elif key == "response_logprobs":
                config["responseLogprobs"] = value
            elif key == "logprobs_count":
                config["logprobs"] = value
            elif key in ("generationConfig", "generation_config") and isinstance(value, Mapping):
                config.update(value)
            else:
                body[_TOP.get(key, key)] = value
        body["generationConfig"] = config
        return body

    @staticmethod
    def continuation(partial: str, prefill: bool) -> tuple[str, list[dict[str, Any]]]:
        return ask_to_continue(partial, prefill, assistant_turn)

    @staticmethod
    def tools_field(tools: ToolSpecs) -> list[dict[str, Any]]:
        """`tools`: one entry of `functionDeclarations` (name, description, parameters)."""
        return [{"functionDeclarations": [dict(tool) for tool in tools]}]

    @staticmethod
    def tool_turns(text: str, calls: Sequence[CallResult]) -> list[dict[str, Any]]:
        """The model turn with its text and `functionCall` parts, then a user turn of
        `functionResponse` parts (`{"result": ...}`, or `{"error": ...}` for a failed call)."""

        def named(c: CallResult) -> dict[str, Any]:
            return {"name": c.name} if c.id.startswith(_MADE_UP) else {"id": c.id, "name": c.name}

        said = [{"text": text}] if text else []
        asked = [{"functionCall": {**named(c), "args": arguments_object(c.arguments)}} for c in calls]
        answered = [
            {"functionResponse": {**named(c), "response": {"error" if c.is_error else "result": c.content}}}
            for c in calls
        ]
        return [{"role": "model", "parts": [*said, *asked]}, {"role": "user", "parts": answered}]

    # ------------------------------------------------------------------ the reader

    @staticmethod
    def tells(event: str, obj: Optional[Mapping[str, Any]], data: str) -> bool:
        """Whether an event (its name, its JSON object if it is one, its data) is this API's."""
        return obj is not None and ("candidates" in obj or "usageMetadata" in obj or "promptFeedback" in obj)

    @staticmethod
    def holds_answer(obj: Mapping[str, Any]) -> bool:
        """Whether a whole (non-streamed) JSON body is this API's answer."""
        return "candidates" in obj or "promptFeedback" in obj

    lone_done: ClassVar[bool] = False

    @classmethod
    def reader(cls, think_tags: bool, alternatives: Optional[int]) -> GeminiDialect:
        return cls(alternatives=alternatives)

    def __init__(self, *, alternatives: Optional[int] = None) -> None:
        self._started = False
        self._finished = False
        self._calls = 0
        #: What the JSON edge mended in this stream (`_json.loads`); the normalizer says it once.
        self.notes: set[str] = set()
        self._logprobs = LogprobReader(alternatives)

    def translate(self, sse: ServerSentEvent) -> list[Event]:
        obj = parse_object(sse.data, self.notes)
        if isinstance(obj, Problem):
            return [obj]
        return self._chunk(obj)

    def finish(self) -> list[Event]:
        """The body ended: after a finish reason that is the proper end, else it was cut off."""
        return [Terminator()] if self._finished else []

    def answer(self, data: str) -> list[Event]:
        """A whole answer instead of a stream: `generateContent`'s one response, or the JSON array
        of chunks `streamGenerateContent` sends without `alt=sse`. [] when `data` is neither."""
        obj = parse_object(data, self.notes) if data.lstrip()[:1] == "{" else None
        if obj is None:
            try:
                chunks = loads(data, self.notes)
            except ValueError:
                return []
            if not isinstance(chunks, list):
                return []
        elif isinstance(obj, Problem):
            return []
        else:
            chunks = [obj]
        out: list[Event] = []
        for chunk in chunks:
            if isinstance(chunk, dict):
                out += self._chunk(chunk)
        return out + self.finish() if out else []

    # ------------------------------------------------------------------ parts

    def _chunk(self, obj: Mapping[str, Any]) -> list[Event]:
        out: list[Event] = []
        if obj.get("error") is not None:
            return [error_from_object(obj)]
        if not self._started and (obj.get("modelVersion") or obj.get("responseId")):
            self._started = True
            out.append(Started(string(obj.get("modelVersion")), string(obj.get("responseId"))))
        candidates = obj.get("candidates")
        if isinstance(candidates, list) and candidates:
            candidate = candidates[0]
            if isinstance(candidate, dict):
                self._candidate(candidate, out)
            else:
                out.append(Problem("a chunk's candidate was not an object and was skipped"))
        blocked = sub(obj, "promptFeedback").get("blockReason")
        if isinstance(blocked, str) and blocked:
            blocked = one_line(blocked, CODE_CHARS)  # a word such as SAFETY, cut as any provider's code is
            out.append(error_from_object({"message": f"the prompt was blocked ({blocked})", "code": blocked}))
            out.append(Finish(blocked))
            self._finished = True
        usage = obj.get("usageMetadata")
        if isinstance(usage, dict):
            out.append(UsageReport(gemini_usage(usage)))
        return out

    def _candidate(self, candidate: Mapping[str, Any], out: list[Event]) -> None:
        parts = sub(candidate, "content").get("parts")
        texts: list[str] = []
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, dict):
                continue
            text = part.get("text")
            if isinstance(text, str) and text:
                if part.get("thought") is True:
                    out.append(ReasoningDelta(text))
                else:
                    out.append(TextDelta(text))
                    texts.append(text)
            call = part.get("functionCall")
            if isinstance(call, dict):
                self._call(call, out)
        result = candidate.get("logprobsResult")
        if isinstance(result, dict) and texts:
            out.extend(self._logprobs.read(_entries(result), "".join(texts)))
        grounding = candidate.get("groundingMetadata")
        if isinstance(grounding, dict):
            chunks = grounding.get("groundingChunks")
            found = [
                s
                for s in (
                    source(sub(c, "web").get("uri"), sub(c, "web").get("title"))
                    for c in (chunks if isinstance(chunks, list) else ())
                    if isinstance(c, dict)
                )
                if s is not None
            ]
            if found:
                out.append(CitationsFound(tuple(found)))
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason and reason != "FINISH_REASON_UNSPECIFIED":
            out.append(Finish(reason))
            self._finished = True
            message = candidate.get("finishMessage")
            if reason == "MALFORMED_FUNCTION_CALL":
                said = f": {message}" if isinstance(message, str) and message else ""
                out.append(error_from_object({"message": f"the model wrote a malformed function call{said}"}))

    def _call(self, call: Mapping[str, Any], out: list[Event]) -> None:
        """A whole function call: its name, and its `args` object as the arguments' JSON text."""
        self._calls += 1
        call_id = string(call.get("id")) or f"{_MADE_UP}{self._calls}"
        args = call.get("args")
        try:
            arguments = dumps(args if isinstance(args, dict) else {})
        except ValueError:
            out.append(Problem("a function call's arguments were nested too deeply to read and were skipped"))
            return
        out.append(ToolCallDelta(("call", self._calls), call_id, string(call.get("name")), arguments))


def _entries(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`logprobsResult` as OpenAI's entries (`token`, `logprob`, `top_logprobs`), which the shared
    reader reads: each chosen token, with the top candidates of the same step."""
    chosen = result.get("chosenCandidates")
    tops = result.get("topCandidates")
    tops = tops if isinstance(tops, list) else []
    entries = []
    for i, pick in enumerate(chosen if isinstance(chosen, list) else ()):
        if not isinstance(pick, dict):
            continue
        alternatives = tops[i].get("candidates") if i < len(tops) and isinstance(tops[i], dict) else None
        entries.append(
            {
                "token": pick.get("token"),
                "logprob": pick.get("logProbability"),
                "top_logprobs": [
                    {"token": c.get("token"), "logprob": c.get("logProbability")}
                    for c in (alternatives if isinstance(alternatives, list) else ())
                    if isinstance(c, dict)
                ],
            }
        )
    return entries
