"""Provider presets: where each provider lives, which APIs it serves, how it authenticates, and
its few provider-only rules — all as data.

This table is the one place that knows providers by name. The dialects read `think_tags` and
`citation_markers` from it; the request side reads `apis`, `auth` and `stream_options`. The
facts behind each row are in `docs/wire-formats.md`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Literal, Optional
from urllib.parse import urljoin

__all__ = [
    "Api",
    "APIS",
    "Auth",
    "BEARER",
    "X_API_KEY",
    "X_GOOG_API_KEY",
    "NO_AUTH",
    "COMPATIBLE",
    "Provider",
    "PROVIDERS",
    "CUSTOM",
    "get_provider",
    "DEMO_FLAVORS",
]

#: The wire dialects; every "OpenAI-compatible" provider speaks a variant of the first. Each has
#: one module in `core/dialects/` (and one in the embedded provider's `server/demo/apis/`).
Api = Literal["chat", "responses", "messages", "gemini"]
APIS: tuple[Api, ...] = ("chat", "responses", "messages", "gemini")
#: The three APIs the OpenAI-and-Anthropic-compatible servers serve (llama.cpp's, LiteLLM, Engy).
COMPATIBLE: tuple[Api, ...] = ("chat", "responses", "messages")

#: The seed providers the embedded server imitates under `/<flavor>/v1`.
DEMO_FLAVORS = ("venym", "engy", "everyais", "vultr")


@dataclass(frozen=True)
class Auth:
    """How a key is sent: in which header, after which prefix. `header=None` sends no key."""

    header: Optional[str]
    prefix: str = ""

    def headers(self, key: Optional[str]) -> dict[str, str]:
        if not key or self.header is None:
            return {}
        return {self.header: self.prefix + key}


BEARER = Auth("Authorization", "Bearer ")
X_API_KEY = Auth("x-api-key")
X_GOOG_API_KEY = Auth("x-goog-api-key")
NO_AUTH = Auth(None)


@dataclass(frozen=True)
class Provider:
    """A provider preset. `key_env` names the environment variable that holds the key (never the key)."""

    name: str
    base_url: Optional[str]
    key_env: Optional[str] = None
    #: The APIs this provider serves; the first is the default.
    apis: tuple[Api, ...] = ("chat",)
    default_model: Optional[str] = None
    model_env: Optional[str] = None
    #: How the key is sent; None: each dialect's own style (bearer, or `x-api-key` for messages).
    auth: Optional[Auth] = None
    #: The server accepts `stream_options` (so usage can be asked for); some reject unknown fields.
    stream_options: bool = True
    #: Split `<think>…</think>` out of the answer text into the reasoning (servers without a reasoning parser).
    think_tags: bool = False
    #: The answer's `[n]` markers index the sources (Perplexity).
    citation_markers: bool = False
    #: The key is optional (local servers).
    key_optional: bool = False
    #: The APIs on which the server continues a final assistant turn (a prefill) instead of
    #: answering it anew: Continue then sends the partial answer alone (Messages always does).
    prefill: tuple[Api, ...] = ()
    #: The server a user runs on their own machine (a local preset), named when nothing answers.
    local_server: Optional[str] = None
    #: Extra HTTP headers (never the key).
    headers: tuple[tuple[str, str], ...] = field(default=())
    note: str = ""
    #: The environment variable that can hold the base URL (a gateway the teacher runs).
    base_url_env: Optional[str] = None
    #: An API this provider serves under another base URL than `base_url`: a whole URL (Gemini's
    #: chat), or one relative to the base (LiteLLM's Google route, `../v1beta`).
    bases: tuple[tuple[str, str], ...] = field(default=())

    def base_for(self, api: str, base_url: Optional[str] = None) -> Optional[str]:
        """Where `api` lives at this provider, whose base URL is `base_url` (else its own)."""
        base = base_url or self.base_url
        other = dict(self.bases).get(api)
        if other is None or base is None:
            return base if other is None else other
        return urljoin(base.rstrip("/") + "/", other)

    @property
    def default_api(self) -> Api:
        return self.apis[0]

    def check_api(self, api: str) -> Api:
        """`api` if this provider serves it, else a `ValueError` that lists the ones it does."""
        if api not in APIS:
            raise ValueError(f"unknown api {api!r}; expected one of: {', '.join(APIS)}")
        if api not in self.apis:
            served = ", ".join(repr(a) for a in self.apis)
            raise ValueError(
                f"provider {self.name!r} has no {api!r} API; it serves {served} "
                "(pass base_url= to reach another server)"
            )
        return api


#: A server reached by `base_url=` with no preset: any dialect, each with its own auth style.
CUSTOM = Provider("custom", None, apis=APIS, key_optional=True)

PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in [
        Provider(
            "demo",
            None,
            apis=APIS,
            default_model="demo",
            auth=NO_AUTH,
            key_optional=True,
            prefill=APIS,
            citation_markers=True,
            note="embedded offline provider on 127.0.0.1; no key, no network",
        ),
        Provider(
            "local",
            None,
            apis=COMPATIBLE,  # llama.cpp's server speaks no Gemini
            default_model="local",
            key_optional=True,
            prefill=COMPATIBLE,  # llama.cpp's server continues a final assistant message
            note="a real model on this machine: llama.cpp's own server (the [local] extra), shared by your kernels; no network",
        ),
        Provider(
            "venym",
            "https://venym.io/v1",
            "VENYM_API_KEY",
            ("chat",),
            "venym/qwen-27b",
            note="usage always on; ':online' models search the web and send a leading sources event",
        ),
        Provider(
            "engy",
            "https://api.engy.ai/v1",
            "ENGY_API_KEY",
            COMPATIBLE,
            "glm-5.2",
            note="reasoning_content; usage + x_engy on the finish chunk; errors inside the stream",
        ),
        Provider(
            "everyais",
            "https://api.everyais.com/v1",
            "EVERYAIS_API_KEY",
            COMPATIBLE,
            model_env="EVERYAIS_MODEL",
            note="': ok' keep-alives; error events after a 200",
        ),
        Provider(
            "vultr",
            "https://api.vultrinference.com/v1",
            "VULTR_INFERENCE_API_KEY",
            COMPATIBLE,
            "deepseek-v4.1-flash",
            note="reasoning field; usage always on the last chunk",
        ),
        Provider("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", ("chat", "responses"), "gpt-4.1-mini"),
        Provider(
            "anthropic",
            "https://api.anthropic.com/v1",
            "ANTHROPIC_API_KEY",
            ("messages",),
            "claude-sonnet-4-5",
            auth=X_API_KEY,
            stream_options=False,
        ),
        Provider(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
            ("chat",),
            "openai/gpt-4o-mini",
            note="cost in usage; ':online' for web search",
        ),
        Provider("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", ("chat",), "deepseek-chat"),
        Provider("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", ("chat",), "llama-3.3-70b-versatile"),
        Provider(
            "mistral",
            "https://api.mistral.ai/v1",
            "MISTRAL_API_KEY",
            ("chat",),
            "mistral-small-latest",
            stream_options=False,
            note="usage without `stream_options`",
        ),
        Provider(
            "perplexity",
            "https://api.perplexity.ai",
            "PERPLEXITY_API_KEY",
            ("chat",),
            "sonar",
            stream_options=False,
            think_tags=True,
            citation_markers=True,
            note="`<think>` split into reasoning; `[n]` markers link to sources; usage without `stream_options`",
        ),
        Provider(
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta",
            "GEMINI_API_KEY",
            ("gemini", "chat"),
            "gemini-2.5-flash",
            bases=(("chat", "https://generativelanguage.googleapis.com/v1beta/openai"),),
            note="native streamGenerateContent: thought summaries, Google Search sources; api='chat' for its OpenAI route",
        ),
        Provider(
            "ollama",
            "http://127.0.0.1:11434/v1",
            "OLLAMA_API_KEY",
            ("chat", "responses"),
            "llama3.2",
            key_optional=True,
            local_server="Ollama",
        ),
        Provider(
            "llamacpp",
            "http://127.0.0.1:8080/v1",
            "LLAMACPP_API_KEY",
            ("chat",),
            "default",
            key_optional=True,
            prefill=("chat",),
            think_tags=True,
            local_server="llama.cpp's llama-server",
            note="`<think>` split into reasoning",
        ),
        Provider(
            "vllm",
            "http://127.0.0.1:8000/v1",
            "VLLM_API_KEY",
            ("chat", "responses"),
            None,
            key_optional=True,
            local_server="vLLM (`vllm serve`)",
        ),
        Provider(
            "litellm",
            "http://127.0.0.1:4000/v1",
            "LITELLM_API_KEY",
            APIS,
            None,
            model_env="LITELLM_MODEL",
            auth=BEARER,  # a virtual key is a bearer token on every route, /v1/messages too
            bases=(("gemini", "../v1beta"),),  # Google's route: /v1beta/models/{model}:streamGenerateContent
            local_server="the LiteLLM proxy (`litellm --config config.yaml`)",
            note="a class gateway: the teacher's proxy, a virtual key per student (`LITELLM_BASE_URL`)",
            base_url_env="LITELLM_BASE_URL",
        ),
    ]
}


def get_provider(name: Optional[str]) -> Provider:
    """Look a preset up by name (case-insensitive); `None` is the embedded demo provider."""
    key = (name or "demo").lower()
    if key == CUSTOM.name:
        return CUSTOM
    try:
        return PROVIDERS[key]
    except KeyError:
        known = ", ".join(sorted(PROVIDERS))
        close = difflib.get_close_matches(key, list(PROVIDERS), n=1, cutoff=0.6)
        meant = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"unknown provider {name!r}; {meant}known providers: {known} (or pass base_url=)") from None
