"""Provider presets: where each provider lives, how it authenticates, and its few provider-only rules.

This table is the one place that knows providers by name. The dialects read `rules` from it
(data, not `if provider == ...` branches); the client reads the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

__all__ = ["Provider", "PROVIDERS", "get_provider", "DEMO_FLAVORS"]

#: The seed providers the embedded server imitates under `/<flavor>/v1`.
DEMO_FLAVORS = ("venym", "engy", "everyais", "vultr")


@dataclass(frozen=True)
class Provider:
    """A provider preset. `key_env` names the environment variable that holds the key (never the key)."""

    name: str
    base_url: Optional[str]
    key_env: Optional[str] = None
    default_api: str = "chat"
    apis: tuple[str, ...] = ("chat",)
    default_model: Optional[str] = None
    model_env: Optional[str] = None
    #: Send `stream_options.include_usage` (some APIs reject unknown fields, some force usage on).
    stream_usage: bool = True
    #: Split `<think>…</think>` out of the answer text into the reasoning (servers without a reasoning parser).
    think_tags: bool = False
    #: The answer's `[n]` markers index the sources (Perplexity).
    citation_markers: bool = False
    #: The key is optional (local servers).
    key_optional: bool = False
    #: Extra HTTP headers (never the key).
    headers: tuple[tuple[str, str], ...] = field(default=())
    note: str = ""


_ALL = ("chat", "responses", "messages")

PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in [
        Provider("demo", None, None, "chat", _ALL, "demo", key_optional=True, citation_markers=True,
                 note="embedded offline provider on 127.0.0.1; no key, no network"),
        Provider("venym", "https://venym.io/v1", "VENYM_API_KEY", "chat", ("chat",), "venym/qwen-27b",
                 note="usage always on; ':online' models search the web and send a leading sources event"),
        Provider("engy", "https://api.engy.ai/v1", "ENGY_API_KEY", "chat", _ALL, "glm-5.2",
                 note="reasoning_content; usage + x_engy on the finish chunk; errors inside the stream"),
        Provider("everyais", "https://api.everyais.com/v1", "EVERYAIS_API_KEY", "chat", _ALL,
                 model_env="EVERYAIS_MODEL", note="': ok' keep-alives; error events after a 200"),
        Provider("vultr", "https://api.vultrinference.com/v1", "VULTR_INFERENCE_API_KEY", "chat", _ALL,
                 "deepseek-v4.1-flash", note="reasoning field; usage always on the last chunk"),
        Provider("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "chat", ("chat", "responses"),
                 "gpt-4.1-mini"),
        Provider("anthropic", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY", "messages", ("messages",),
                 "claude-sonnet-4-5", stream_usage=False, headers=(("anthropic-version", "2023-06-01"),)),
        Provider("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "chat", ("chat",),
                 "openai/gpt-4o-mini", note="cost in usage; ':online' for web search"),
        Provider("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", "chat", ("chat",), "deepseek-chat"),
        Provider("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", "chat", ("chat",),
                 "llama-3.3-70b-versatile"),
        Provider("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", "chat", ("chat",),
                 "mistral-small-latest", stream_usage=False),
        Provider("perplexity", "https://api.perplexity.ai", "PERPLEXITY_API_KEY", "chat", ("chat",), "sonar",
                 stream_usage=False, think_tags=True, citation_markers=True),
        Provider("gemini", "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY", "chat",
                 ("chat",), "gemini-2.5-flash"),
        Provider("ollama", "http://127.0.0.1:11434/v1", "OLLAMA_API_KEY", "chat", ("chat", "responses"),
                 "llama3.2", key_optional=True),
        Provider("llamacpp", "http://127.0.0.1:8080/v1", "LLAMACPP_API_KEY", "chat", ("chat",), "default",
                 key_optional=True, think_tags=True),
        Provider("vllm", "http://127.0.0.1:8000/v1", "VLLM_API_KEY", "chat", ("chat", "responses"), None,
                 key_optional=True),
    ]
}


def get_provider(name: Optional[str]) -> Provider:
    """Look a preset up by name (case-insensitive); `None` is the embedded demo provider."""
    key = (name or "demo").lower()
    try:
        return PROVIDERS[key]
    except KeyError:
        known = ", ".join(sorted(PROVIDERS))
        raise ValueError(f"unknown provider {name!r}; known providers: {known} (or pass base_url=)") from None
