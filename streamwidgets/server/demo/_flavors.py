"""The seed providers' quirks, declared as data.

Each flavor is served under `/<flavor>/v1/...` and reproduces what its provider's streaming page
says, as summarized in `docs/wire-formats.md`. The quirks are fields of `ChatStyle` read by one
chat writer, not `if provider == ...` branches, so a new provider is a new table entry. The
Responses and Messages routes of every flavor are standard; only the heartbeat spelling, the
Engy "no reasoning on /responses" rule and the way an error ends a stream differ there.

Where a seed page leaves a shape undocumented, the choice made here is written next to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["ChatStyle", "Flavor", "FLAVORS", "DEFAULT_FLAVOR"]


@dataclass(frozen=True)
class ChatStyle:
    """How a provider spells a Chat Completions stream."""

    #: `"data: "` as the SSE spec suggests, or `"data:"` with no space (Venym).
    data_prefix: str = "data: "
    #: Top-level fields of every chunk besides `choices` (and, when sent, `usage`).
    envelope: tuple[str, ...] = ("id", "object", "created", "model", "system_fingerprint")
    #: The delta of the first chunk.
    role_delta: tuple[tuple[str, Any], ...] = (("role", "assistant"), ("content", ""), ("refusal", None))
    #: Extra keys of every choice (OpenAI's `logprobs: null`).
    choice_extras: tuple[tuple[str, Any], ...] = (("logprobs", None),)
    #: Where reasoning goes in a delta: `reasoning_content` (DeepSeek, Engy) or `reasoning` (vLLM, Vultr).
    reasoning_field: str = "reasoning_content"
    #: How many tokens each chunk carries, cycled (Engy merges several).
    tokens_per_chunk: tuple[int, ...] = (1,)
    #: `own_chunk` (an empty delta), `with_last_delta` (on the last content chunk too), or `never`.
    finish: str = "own_chunk"
    #: `if_asked` (stream_options.include_usage), `final_empty_choices` (forced), `on_finish_chunk`
    #: (forced, next to the finish reason, plus the standard chunk if asked), `final_one_choice`.
    usage: str = "if_asked"
    #: OpenAI writes `"usage": null` on every chunk once include_usage is on.
    usage_null_when_asked: bool = True
    #: `openai` (details), `plain` (three counters), `engy` (details and `cost`).
    usage_shape: str = "openai"
    #: Engy's `x_engy {request_id, charged_micro}` next to the usage of the finish chunk.
    billing_extension: bool = False
    #: How web sources travel: `annotations` (delta.annotations url_citation, OpenAI/OpenRouter
    #: shape), `leading_event` (Venym's first event), `trailing_fields` (everyais, see below).
    sources: str = "annotations"
    #: `chunk` (`data: {"error": ...}`) or `event` (`event: error`).
    error: str = "chunk"
    #: The keys of the error object; OpenAI's mid-stream error has only message and type.
    error_fields: tuple[str, ...] = ("message", "type", "param", "code")
    #: OpenAI's captured mid-stream error is Python-style spaced JSON.
    error_spaced: bool = False
    #: Escape non-ASCII as `\\uXXXX` (the others send raw UTF-8).
    ascii_json: bool = False
    #: `sequential` (one call after the other) or `headers_first` (every id+name, then arguments by index).
    tool_order: str = "sequential"


@dataclass(frozen=True)
class Flavor:
    name: str
    summary: str
    chat: ChatStyle
    #: The SSE comment sent while nothing else is (`keep-alive`, `keepalive`, `ok`).
    heartbeat: str = "keep-alive"
    #: `waiting`: only before the first token; `silence`: after any silence, also mid-stream.
    heartbeat_mode: str = "waiting"
    #: A comment written right after the response headers, before anything else.
    greeting: Optional[str] = None
    #: Whether the Responses route streams reasoning summaries (Engy: "reasoning is not returned").
    responses_reasoning: bool = True
    #: Whether a failing Responses stream sends an `error` event before `response.failed`.
    responses_error_event: bool = False
    #: Whether `/completions` (legacy, non-streaming only) exists.
    legacy_completions: bool = False


FLAVORS: dict[str, Flavor] = {
    f.name: f
    for f in (
        Flavor(
            name="demo",
            summary="plain OpenAI: usage only with include_usage (then `usage: null` on every chunk and a final "
            "`choices: []` chunk); reasoning as `reasoning_content` so that a teaching demo can show it",
            chat=ChatStyle(error_fields=("message", "type"), error_spaced=True),
            responses_error_event=True,
        ),
        Flavor(
            name="venym",
            summary="`data:` with no space; leading `venym.sources` event with web search (`:online`); usage "
            "forced on a final `choices: []` chunk; never a non-null finish_reason",
            chat=ChatStyle(
                data_prefix="data:",
                envelope=("id", "object", "model"),
                role_delta=(("role", "assistant"),),
                choice_extras=(),
                finish="never",
                usage="final_empty_choices",
                usage_shape="plain",
                sources="leading_event",
            ),
        ),
        Flavor(
            name="engy",
            summary="first chunk `{role}` only; several tokens per chunk; `reasoning_content`; usage with cost and "
            "`x_engy` on the finish chunk, and again as a standard chunk if asked; `: keepalive` after silence; "
            "errors as a chunk with an `error` field (also first); no reasoning on /responses; /completions "
            "refuses stream=true with 400",
            chat=ChatStyle(
                envelope=("id", "object", "created", "model"),
                role_delta=(("role", "assistant"),),
                choice_extras=(),
                tokens_per_chunk=(2, 3, 1, 4, 2, 3, 3),
                usage="on_finish_chunk",
                usage_shape="engy",
                billing_extension=True,
                ascii_json=True,
            ),
            heartbeat="keepalive",
            heartbeat_mode="silence",
            responses_reasoning=False,
            legacy_completions=True,
        ),
        Flavor(
            name="everyais",
            # Undocumented, chosen here: web sources arrive on the finish chunk as a top-level `citations`
            # URL list plus `search_results` [{title, url}] (Perplexity's names), with `num_search_queries`.
            summary="`: ok` comments; usage only with include_usage; errors as `event: error` after a 200; "
            "citations, search results and the search count on the finish chunk",
            chat=ChatStyle(
                envelope=("id", "object", "created", "model"),
                role_delta=(("role", "assistant"), ("content", "")),
                choice_extras=(),
                usage_null_when_asked=False,
                sources="trailing_fields",
                error="event",
            ),
            heartbeat="ok",
            greeting="ok",
        ),
        Flavor(
            name="vultr",
            summary="deltas hold only what they add (never a null field); `reasoning`; tool calls id+name first, then "
            "arguments by index; finish_reason on the last content chunk and again on a final one-choice chunk "
            "that always carries usage",
            chat=ChatStyle(
                envelope=("id", "object", "created", "model"),
                role_delta=(("role", "assistant"), ("content", "")),
                choice_extras=(),
                reasoning_field="reasoning",
                finish="with_last_delta",
                usage="final_one_choice",
                usage_null_when_asked=False,
                tool_order="headers_first",
            ),
        ),
    )
}

DEFAULT_FLAVOR = FLAVORS["demo"]
