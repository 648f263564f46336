"""An embedded, offline LLM provider that streams realistic answers on loopback.

Teachers and Binder workshops often have no API key; tests need a real peer. `start_server()`
starts an OpenAI-compatible HTTP/1.1 server on 127.0.0.1 in a background thread (no key, no
network) that speaks every wire API (`demo/apis/`) and each seed provider's quirks:

    import openai
    from streamwidgets.server import start_server
    server = start_server()
    client = openai.OpenAI(base_url=server.base_url, api_key="demo")
    client.chat.completions.create(model="demo-reasoning", messages=[...], stream=True)

Routes: `/v1/chat/completions`, `/v1/responses`, `/v1/messages`, Gemini's
`/v1/models/{model}:streamGenerateContent?alt=sse` and `:generateContent` (also under `/v1beta`),
`/v1/models` (the default, plain OpenAI/Anthropic/Google flavor), the same under `/<flavor>/v1/` for `venym`, `engy`, `everyais`
and `vultr` (see `demo/_flavors.py` for their quirks), plus `GET /_demo/health` and
`GET /_demo/connections[?after=<id>]` (the connection records as JSON).

Scenarios are chosen by the model name (a `provider/` prefix is ignored; `:online` turns web
search on). An unknown name is a 404 `model_not_found` that suggests the closest name and lists
the demo models, as a real provider answers it: answered like `demo`, a typo (`demo-reasonig`)
let a teacher demonstrate the wrong model without knowing. Standing in for a preset (no key
set), the server also answers that preset's documented model names, and any name on everyais's
route, whose models are its users' own choice. Each scenario is one row of
`demo._scenarios.SCENARIOS`; this table and the README's are printed from the rows by
`python -m streamwidgets.server --scenarios-table [text]`:

=================== ==========================================================================
model               what the stream does
=================== ==========================================================================
demo                a lesson on the question's topic, chosen by its words (server-sent events,
                    streaming LLM answers, Python asyncio, binary search, the water cycle,
                    Python collections, photosynthesis, Big-O notation, recursion, Jupyter
                    notebooks, Unicode and UTF-8, closures, large language models, weather and
                    tool calls), or a small sum worked out; a greeting for a greeting; else a
                    short reply that says it has no lesson. The `X-Demo-Script` header names
                    the lesson
demo-markdown       every markdown block: headings, lists, table, two code languages, quote,
                    task list
demo-reasoning      reasoning first (reasoning_content / reasoning / summary / thinking), then
                    the lesson; reasoning tokens are reported in usage
demo-search         a web search (4-5 sources) and an answer with [n] markers; sources travel
                    as each dialect and flavor carries them (annotations, venym.sources,
                    citations...); first token at 0.8 s
demo-tools          a function-calling model: calls the declared `tools` that fit the question
                    (two at once when two fit, or one tool for two cities) with arguments that
                    fit their schemas; answers from the tool results that end the conversation
                    and says when one failed (retried once when the error suggests other
                    arguments); without tools, a plain answer
demo-fast           a small, quick model: the short version of the lesson; 250 tokens/s, first
                    token at 0.1 s
demo-deep           a large, careful model: reasoning, the whole lesson and a summary; 30
                    tokens/s, first token at 1.2 s
demo-long           20,000 tokens (`demo.tokens`) of a real tutorial on asyncio, whatever the
                    question; 4,000 tokens/s
demo-slow           the lesson, with heartbeat comments (ping events) until it starts; first
                    token at 3 s
demo-error          some text, then an error inside the 200 stream in the route's own shape
demo-error-early    the error is the very first event of a 200 stream (insufficient balance)
demo-cutoff         some text, then the connection closes without the dialect's terminator
                    (the HTTP body ends properly; `"demo": {"cutoff": "abort"}` breaks it off
                    mid-body instead)
demo-stall          some text, then silence until the client leaves (Engy keeps sending its
                    `: keepalive` comments)
demo-malformed      one event with invalid JSON in the middle; the stream then ends properly
demo-xss            script-running payloads in the text, reasoning, sources and a tool call;
                    each would set `window.__xss = 1` if executed
demo-length         cut by the token limit (the request's max_tokens, else 60): finish_reason
                    length / stop_reason max_tokens / response.incomplete
demo-ratelimit      HTTP 429 with `Retry-After: 2` for the first try of a prompt, then the
                    lesson (`retries=` waits and tries again); first token at 0.2 s
demo-overloaded     HTTP 503 with `Retry-After: 1` for the first 2 tries of a prompt, then the
                    lesson; first token at 0.2 s
demo-http-NNN       an HTTP error with the route's JSON envelope before any stream, for 400,
                    401, 402, 403, 404, 408, 413, 422, 429, 500, 502, 503, 504, 529 (429, 503,
                    529 send Retry-After)
=================== ==========================================================================

Every 200 answer says what answered it in an `X-Demo-Script` header: the lesson's title
(`binary search`), `none` when `demo` has no lesson for the question (it then says so in a short
reply instead of answering another question), or the scenario's name when the answer is not a
lesson (`demo-markdown`, `demo-long`, `demo-xss`, `demo-tools`...). The demo reads the words of a
question, not its meaning; a client can tell its user so.

Any request also honours `max_tokens` / `max_completion_tokens` / `max_output_tokens` (the
answer is cut and ends with the length reason), `stream_options.include_usage`, and a
`"demo": {"tokens_per_second", "first_token_delay", "tokens", "seed", "keepalive_interval",
"cutoff"}` body object (pass it with the SDKs' `extra_body`); the headers
`X-Demo-Tokens-Per-Second` and `X-Demo-First-Token-Delay` set the first two when the body does
not. A `tokens_per_second` of 0 streams as fast as possible. With a `seed`, ids and timestamps
are fixed too, so the same request gives the same bytes. A request with `stream` false gets the same answer as one JSON
object of its API (an error scenario then answers with an HTTP error).

Requests are checked as the real APIs check them: a field the API does not have (`modle`), a
`temperature` of 5, -1 or "hot", a `max_tokens` of 0 get the provider's own 400, in its own words
(OpenAI's on the chat and Responses routes, Anthropic's on `/messages`); every `demo` option has
a bound, named in the 400 past it.

No web page can drive it, and no other user of a shared machine can turn it against its host:
`Host` (and an absolute-form target) must name the server, a foreign or repeated `Origin` is
refused, bodies must be `application/json`, a body framed two ways is refused, and no CORS header
is ever sent. Every connection is bounded (`ServerLimits`: header, body, idle and write timeouts,
header and body size, connections at once, a full server giving the slot of the slowest request
to a newcomer), and every bad request gets a 4xx JSON error in its route's envelope;
docs/embedded-server.md has the details.

Where no socket can be opened (JupyterLite, a hub that forbids binding), `in_process()` answers
the same routes with no socket (`DirectServer`), played by the code that writes a stream to a
socket (`_edge/_play.py`): the same bytes at the same pace; docs/embedded-server.md.

`local_model()` is the other offline provider: a real language model run by llama.cpp's own
server (the `[local]` extra), one per user and model file, shared by their kernels, on loopback
with a key of its own (`local/`); `local_model_missing()` says whether the extra is installed.
docs/local-model.md has the details.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from ._edge import ConnectionRecord, DirectResponse, DirectServer, Dropped
from .demo import (
    FLAVORS,
    SCENARIOS,
    DemoServer,
    Script,
    ServerLimits,
    build_script,
    in_process,
    parse_request,
    start_server,
)
from .local import LocalModel, LocalModelError, local_model, local_model_missing

__all__ = [
    "DemoServer",
    "ServerLimits",
    "ConnectionRecord",
    "Script",
    "start_server",
    "in_process",
    "DirectServer",
    "DirectResponse",
    "Dropped",
    "scripted_answer",
    "script_for_request",
    "SCENARIOS",
    "FLAVORS",
    "LocalModel",
    "LocalModelError",
    "local_model",
    "local_model_missing",
]


def script_for_request(api: str, body: Mapping[str, Any], headers: Optional[Mapping[str, str]] = None) -> Script:
    """What the server streams for this request body on `api` (`chat`, `responses`,
    `messages`): text, reasoning, sources, tool calls, ending and usage. Pure; ids are fixed."""
    return build_script(parse_request(api, body, headers), now=0.0, nonce="0" * 24)


def scripted_answer(model: str, prompt: str, **demo: Any) -> Script:
    """The script for a one-message chat request: `scripted_answer("demo-reasoning", "Hi")`.
    Keyword arguments are `demo` options (`tokens=`, `seed=`...)."""
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    if demo:
        body["demo"] = demo
    return script_for_request("chat", body)
