"""Which keyword options a request takes, checked before anything is sent.

A misspelled keyword used to pass silently: `temprature=0.2` went into the body as an unknown
field, which llama.cpp, vLLM and Ollama ignore, so a class saw the default temperature and nobody
knew. Now every keyword of `show`, `run`, `make_request`... is one of the package's own options
or a body field the chosen API (or the preset's server) documents; a near miss of either fails at
once and names the option meant (`sytem` → `system`), and a deliberate provider-specific field
goes through `extra_body={...}`, as the OpenAI SDK does. Pure: names in, a `ValueError` or nothing.

The field lists are the providers' API references (and their SDKs' parameters), plus the embedded
provider's own `demo` object; the embedded provider checks bodies against the same lists.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from ._providers import APIS, PROVIDERS
from .dialects import dialect_class

__all__ = [
    "FIELDS",
    "STAND_IN_EXTRAS",
    "LOCAL_SERVER_FIELDS",
    "PACKAGE_OPTIONS",
    "check_options",
    "closest",
    "accepted",
]


def _fields(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The body fields of each API, from its reference (each dialect lists its own), and OpenAI's
#: legacy completions (Engy's `/completions`, which only the embedded provider reads).
FIELDS: dict[str, frozenset[str]] = {
    **{name: dialect_class(name).fields for name in APIS},
    "completions": _fields(
        "model prompt best_of echo frequency_penalty logit_bias logprobs max_tokens n presence_penalty seed "
        "stop stream stream_options suffix temperature top_p user demo"
    ),
}

#: Chat fields of the presets the default route stands in for, beyond OpenAI's (their API pages).
STAND_IN_EXTRAS: dict[str, frozenset[str]] = {
    "perplexity": _fields(
        "search_mode search_domain_filter search_recency_filter search_after_date_filter "
        "search_before_date_filter last_updated_after_filter last_updated_before_filter return_images "
        "return_related_questions image_domain_filter image_format_filter disable_search "
        "enable_search_classifier top_k"
    ),
    "mistral": _fields("safe_prompt random_seed prompt_mode"),
    "groq": _fields(
        "reasoning_format include_reasoning search_settings documents citation_options compound_custom "
        "disable_tool_validation"
    ),
    "openrouter": _fields(
        "models route provider transforms plugins reasoning usage top_k min_p top_a repetition_penalty debug"
    ),
    "deepseek": _fields("thinking"),
    "gemini": _fields("extra_body"),  # Gemini's own options ride in a nested `extra_body` object
    "local servers": _fields("top_k min_p repetition_penalty chat_template_kwargs"),  # vLLM, llama.cpp
}

#: What llama.cpp's server reads beyond OpenAI's fields (its README; the `local` and `llamacpp`
#: presets), and what vLLM and Ollama add.
LOCAL_SERVER_FIELDS = _fields(
    "top_k min_p typical_p repeat_penalty repeat_last_n repetition_penalty dry_multiplier dry_base "
    "dry_allowed_length dry_penalty_last_n dry_sequence_breakers xtc_probability xtc_threshold mirostat "
    "mirostat_tau mirostat_eta ignore_eos grammar json_schema n_probs n_predict samplers cache_prompt "
    "id_slot chat_template_kwargs reasoning_format min_tokens best_of use_beam_search length_penalty "
    "stop_token_ids skip_special_tokens guided_json guided_regex guided_choice options keep_alive think"
)

#: The package's own keywords, across every entry point (they never reach a body): a near miss of
#: one of them is named as well.
PACKAGE_OPTIONS = _fields(
    "provider model api base_url api_key system offline stall_timeout include_usage retries deadline "
    "max_answer_chars max_event_chars max_tool_calls max_citations max_warnings local_model logprobs tools "
    "extra_body record log parts max_fps scale display out notify raise_on_error max_steps tool_timeout "
    "confirm"
)

#: Presets whose servers read the local servers' fields.
_LOCAL_SERVERS = {"local", "llamacpp", "vllm", "ollama", "custom", "litellm"}
#: Every API's token limit is written `max_tokens` by the package (each dialect renames it).
_ALWAYS = _fields("max_tokens max_completion_tokens max_output_tokens")


def accepted(api: str, preset: str) -> frozenset[str]:
    """The body fields a request to `preset` on `api` may carry as plain keywords."""
    fields = FIELDS.get(api, frozenset()) | _ALWAYS
    if preset in STAND_IN_EXTRAS:
        fields |= STAND_IN_EXTRAS[preset]
    if preset in _LOCAL_SERVERS:
        fields |= LOCAL_SERVER_FIELDS | STAND_IN_EXTRAS["local servers"]
    if preset in ("custom", "litellm"):  # any server: every API's fields and every preset's extras
        fields = fields.union(*FIELDS.values(), *STAND_IN_EXTRAS.values())
    return fields


def check_options(names: Iterable[str], api: str, preset: str) -> None:
    """Raise a `ValueError` for the first keyword that is neither a body field `preset` takes on
    `api` nor one of the package's options: naming the option meant when it is a near miss,
    else saying how to send a field of the provider's own (`extra_body=`)."""
    fields = accepted(api, preset)
    for name in names:
        if name in fields or name in PACKAGE_OPTIONS:
            continue
        others = [each for each in APIS if name in FIELDS[each]]
        if others:  # a field of another API (`seed=` over Messages): say so, and which has it
            title = dialect_class(api).title
            has = " and ".join(dialect_class(each).title for each in others)
            served = [each for each in others if each in _served(preset)]
            switch = f": api={served[0]!r} sends it to {preset}" if served else ""
            raise ValueError(
                f"{name}= is not a field of the {title} API (it has no such field); the {has} API"
                f"{'s have' if len(others) > 1 else ' has'} it{switch}"
            )
        known = sorted(fields.union(PACKAGE_OPTIONS, *(FIELDS[each] for each in APIS)))
        meant = closest(name, known)
        if meant is not None:
            raise ValueError(f"unknown option {name}=: did you mean {meant}=?")
        raise ValueError(
            f"unknown option {name}= for {preset}'s {api} API; a field of the provider's own goes in "
            f"extra_body={{{name!r}: ...}}"
        )


def _served(preset: str) -> tuple[str, ...]:
    """The APIs a preset serves (every API for a name no preset has: a custom server)."""
    found = PROVIDERS.get(preset)
    return found.apis if found is not None else APIS


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name `name` most likely misspells: close by letters (difflib), ties broken by a
    shared first letter and a close length (so that `sytem` is `system`, not `stream`)."""
    candidates = difflib.get_close_matches(name, list(known), n=6, cutoff=0.72)
    if not candidates:
        return None

    def rank(candidate: str) -> tuple[float, int, int]:
        ratio = difflib.SequenceMatcher(None, name, candidate).ratio()
        return (-round(ratio, 2), candidate[:1] != name[:1], abs(len(candidate) - len(name)))

    return min(candidates, key=rank)
