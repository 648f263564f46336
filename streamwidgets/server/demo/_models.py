"""Which model names the demo server answers, and the 404 that every other name gets.

An unknown name used to be answered like `demo`, because workshop users type anything. But then
a typo (`demo-reasonig`, `gpt-4.1-mnii`) streamed an answer with no warning, and a teacher
demonstrated the wrong model without knowing. So an unknown name now gets the 404 a real
provider sends (`model_not_found`), in the route's own envelope, with the closest known name and
the list of the demo models.

The demo server also stands in for the presets when no key is set (`show(provider="openai")`
streams from here), so each route accepts the documented model names of the providers it
stands in for: the default route those of every preset without a flavor of its own, a seed
provider's flavor route that provider's names. everyais has no model names of its own (its
users set `EVERYAIS_MODEL` to a model they chose), so its route accepts any name.

A name is matched after the decorations providers allow: a `provider/` prefix (`venym/qwen-27b`,
`openai/gpt-4o-mini`, `models/gemini-2.5-flash`), one `:tag` suffix (`:online` turns web search on;
OpenRouter's `:free`, Ollama's `:8b`), and, for the presets' names, a dated snapshot or `-latest`
(`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`, `mistral-large-2411`). The tables are this
server's own (it imports nothing else of the package); a test checks that they hold every
preset's default model.
"""

from __future__ import annotations

import difflib
import re
from typing import Optional

from .._edge import Rejection
from ._errors import SCRIPTED_HTTP_ERRORS
from ._scenarios import SCENARIOS
from .apis import APIS

__all__ = ["PRESET_MODELS", "ANY_MODEL_FLAVORS", "demo_models", "unknown_model"]


def _names(text: str) -> tuple[str, ...]:
    return tuple(text.lower().split())  # matched as lowercase, as the names a request sends are


#: The documented model names of each preset (dated snapshots and `-latest` aliases need not be
#: listed: they are matched by their stem). From each provider's model page, as of this release.
PRESET_MODELS: dict[str, tuple[str, ...]] = {
    "openai": _names(
        "gpt-5.5 gpt-5.5-pro gpt-5.4 gpt-5.4-mini gpt-5.4-nano gpt-5.3-chat-latest gpt-5.2 gpt-5.2-pro "
        "gpt-5.2-chat-latest gpt-5.1 gpt-5.1-codex gpt-5.1-codex-max gpt-5.1-chat-latest gpt-5 gpt-5-mini "
        "gpt-5-nano gpt-5-pro gpt-5-codex gpt-5-chat-latest gpt-4.1 gpt-4.1-mini gpt-4.1-nano gpt-4o "
        "gpt-4o-mini gpt-4o-search-preview gpt-4o-mini-search-preview gpt-4o-audio-preview "
        "gpt-4o-mini-audio-preview gpt-audio-mini chatgpt-4o-latest codex-mini-latest o4-mini "
        "o4-mini-deep-research o3 o3-mini o3-pro o3-deep-research o1 o1-mini o1-pro gpt-4-turbo "
        "gpt-4-turbo-preview gpt-4 gpt-4-32k gpt-3.5-turbo gpt-3.5-turbo-16k computer-use-preview "
        "gpt-oss-120b gpt-oss-20b"
    ),
    "anthropic": _names(
        "claude-opus-4-8 claude-opus-4-7 claude-opus-4-6 claude-sonnet-4-6 claude-opus-4-5 "
        "claude-sonnet-4-5 claude-haiku-4-5 claude-opus-4-1 claude-opus-4-0 claude-sonnet-4-0 "
        "claude-3-7-sonnet claude-3-5-haiku claude-3-haiku"
    ),
    "groq": _names(
        "llama-3.3-70b-versatile llama-3.1-8b-instant openai/gpt-oss-120b openai/gpt-oss-20b "
        "meta-llama/llama-4-scout-17b-16e-instruct meta-llama/llama-4-maverick-17b-128e-instruct "
        "qwen/qwen3-32b moonshotai/kimi-k2-instruct groq/compound groq/compound-mini gemma2-9b-it"
    ),
    "mistral": _names(
        "mistral-large-latest mistral-medium-latest mistral-small-latest magistral-medium-latest "
        "magistral-small-latest ministral-8b-latest ministral-3b-latest codestral-latest "
        "devstral-medium-latest devstral-small-latest pixtral-large-latest open-mistral-nemo "
        "mistral-saba-latest"
    ),
    "deepseek": _names("deepseek-chat deepseek-reasoner"),
    "gemini": _names(
        "gemini-3-pro-preview gemini-3-flash-preview gemini-2.5-pro gemini-2.5-flash "
        "gemini-2.5-flash-lite gemini-2.0-flash gemini-2.0-flash-lite gemini-flash-latest "
        "gemini-flash-lite-latest gemini-pro-latest"
    ),
    # vLLM serves a Hugging Face model by its id; these are the ones its quickstart and the
    # notebooks name (a teacher's own model is theirs to choose: on their server, not this one).
    "vllm": _names(
        "Qwen/Qwen3-8B Qwen/Qwen3-4B Qwen/Qwen2.5-7B-Instruct Qwen/Qwen2.5-1.5B-Instruct "
        "meta-llama/Llama-3.1-8B-Instruct mistralai/Mistral-7B-Instruct-v0.3 google/gemma-3-4b-it "
        "facebook/opt-125m"
    ),
    "perplexity": _names("sonar sonar-pro sonar-reasoning sonar-reasoning-pro sonar-deep-research"),
    "openrouter": _names(
        "openrouter/auto openai/gpt-4o-mini openai/gpt-4.1-mini openai/gpt-5-mini "
        "anthropic/claude-sonnet-4.5 anthropic/claude-haiku-4.5 google/gemini-2.5-flash "
        "google/gemini-2.5-pro meta-llama/llama-3.3-70b-instruct deepseek/deepseek-chat "
        "deepseek/deepseek-r1 mistralai/mistral-small-3.2-24b-instruct qwen/qwen3-235b-a22b x-ai/grok-4"
    ),
    # Local servers answer the names of the models their user pulled; these are their presets'
    # defaults and the best-known names of the Ollama library.
    "ollama": _names("llama3.2 llama3.1 llama3.3 qwen3 qwen2.5 gemma3 mistral phi4 deepseek-r1"),
    "llamacpp": _names("default"),
    # The seed providers, from their pages (which name one or two models each).
    "venym": _names("venym/qwen-27b venym/glm-flash"),
    "engy": _names("glm-5.2"),
    "vultr": _names("deepseek-v4.1-flash"),
}

#: Flavors whose models are their users' own choice: any name is answered.
ANY_MODEL_FLAVORS = frozenset({"everyais"})
#: The presets a flavor route stands in for; every other preset is served on the default route.
_FLAVOR_PRESETS = {"venym": ("venym",), "engy": ("engy",), "vultr": ("vultr",)}

_TAG = re.compile(r":[\w.\-]+$")
_SNAPSHOT = re.compile(r"-(?:latest|\d{8}|\d{4}-\d{2}-\d{2}|\d{4})$")


def demo_models() -> list[str]:
    """The demo server's own models: the scenarios, then `demo-http-<status>`."""
    return [*SCENARIOS, *(f"demo-http-{status}" for status in SCRIPTED_HTTP_ERRORS)]


def unknown_model(model: str, flavor: str, api: str) -> Optional[Rejection]:
    """The 404 for a model name `flavor`'s route does not answer (in `api`'s words), or None
    when it does."""
    if flavor in ANY_MODEL_FLAVORS:
        return None
    name = _TAG.sub("", model.strip().lower())
    base = name.rsplit("/", 1)[-1]
    demo = set(demo_models())
    if base in demo:
        return None
    presets = _FLAVOR_PRESETS.get(flavor) or tuple(p for p in PRESET_MODELS if p not in _all_flavor_presets())
    known = [name for preset in presets for name in PRESET_MODELS[preset]]
    stems = {_stem(known_name) for known_name in known} | {_stem(n.rsplit("/", 1)[-1]) for n in known}
    if _stem(name) in stems or _stem(base) in stems:
        return None
    return _not_found(model, api, _closest(name, base, [*demo, *known]))


def _all_flavor_presets() -> set[str]:
    return {preset for presets in _FLAVOR_PRESETS.values() for preset in presets}


def _stem(name: str) -> str:
    return _SNAPSHOT.sub("", name)


def _closest(name: str, base: str, candidates: list[str]) -> Optional[str]:
    for text in dict.fromkeys((name, base)):
        found = difflib.get_close_matches(text, candidates, n=1, cutoff=0.6)
        if found:
            return found[0]
    return None


def _not_found(model: str, api: str, closest: Optional[str]) -> Rejection:
    """In the API's words (OpenAI's `model_not_found` sentence, Anthropic's `model: x`...),
    with the closest name and the demo models."""
    quoted = model if len(model) <= 80 else model[:80] + "..."
    statuses = ", ".join(str(status) for status in SCRIPTED_HTTP_ERRORS)
    hint = (f"Did you mean {closest}? " if closest else "") + (
        f"The demo server's models are {', '.join(SCENARIOS)} and demo-http-<status> ({statuses}); standing in "
        "for a provider, it also answers that provider's documented model names."
    )
    message = APIS[api].model_not_found(quoted, hint)
    return Rejection(404, message, code="model_not_found", anthropic_type="not_found_error")
