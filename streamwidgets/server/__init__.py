"""An embedded, offline LLM provider that streams realistic answers on loopback.

Teachers and Binder workshops often have no API key; tests need a real peer. `start_server()`
starts an OpenAI-compatible HTTP/1.1 server on 127.0.0.1 in a background thread (no key, no
network) that speaks all three wire dialects and each seed provider's quirks:

    from streamwidgets.server import start_server
    server = start_server()
    client = openai.OpenAI(base_url=server.base_url, api_key="demo")
    client.chat.completions.create(model="demo-reasoning", messages=[...], stream=True)

Routes: `/v1/chat/completions`, `/v1/responses`, `/v1/messages`, `/v1/models` (the default,
plain OpenAI/Anthropic flavor), the same under `/<flavor>/v1/` for `venym`, `engy`, `everyais`
and `vultr` (see `_flavors.py` for their quirks), plus `GET /_demo/health` and
`GET /_demo/connections[?after=<id>]` (the connection records as JSON).

Scenarios are chosen by the model name (a `provider/` prefix is ignored; `:online` turns web
search on; an unknown name is answered like `demo` instead of a 404, because workshop users
type anything):

=================== ==========================================================================
model               what the stream does
=================== ==========================================================================
demo                a markdown answer picked by keywords of the last user message (else a
                    stable hash of it): SSE, streaming, asyncio, binary search, the water
                    cycle, Python collections, photosynthesis, Big-O, recursion, Jupyter,
                    Unicode, a greeting
demo-markdown       headings, lists, a task list, a table, Python and JavaScript code, a quote
demo-reasoning      reasoning first (reasoning_content / reasoning / summary / thinking), then
                    the answer; reasoning tokens are reported in usage
demo-search         a web search (4-5 sources) and an answer with [n] markers; sources travel as
                    each dialect/flavor carries them (annotations, venym.sources, citations...)
demo-tools          two parallel calls of the first declared tool (default get_weather) for two
                    cities found in the prompt; if the last message holds tool results, a text
                    answer that uses them
demo-fast           a small, quick model: the short version of the answer, 250 tokens/s
demo-deep           a large, careful model: reasoning, the full answer and a summary, 30 tokens/s
demo-ratelimit      HTTP 429 with Retry-After: 2 for the first try of a prompt, then the answer
demo-overloaded     HTTP 503 with Retry-After: 1 for the first 2 tries of a prompt, then the answer
demo-long           20,000 tokens (`demo.tokens`) of a real tutorial on asyncio at 4,000 tokens/s
demo-slow           the first token after 3 s, with heartbeat comments (ping events) meanwhile
demo-error          some text, then an error inside the 200 stream in the route's own shape
demo-error-early    the error is the very first event (insufficient balance)
demo-cutoff         some text, then the connection closes without the dialect's terminator
                    (the HTTP body ends properly; `"demo": {"cutoff": "abort"}` breaks it
                    off mid-body instead)
demo-stall          some text, then silence until the client leaves (Engy keeps sending its
                    `: keepalive` comments, as its page says it does after silence)
demo-malformed      one event with invalid JSON in the middle; the stream then ends properly
demo-xss            script-running payloads in the text, reasoning, sources and a tool call;
                    each would set `window.__xss = 1` if executed
demo-length         cut by the token limit (the request's max_tokens, else 60): finish_reason
                    length / stop_reason max_tokens / response.incomplete
demo-http-<status>  an HTTP error with the route's JSON envelope before any stream, for 400,
                    401, 402, 403, 404, 408, 413, 422, 429, 500, 502, 503, 504, 529 (429, 503
                    and 529 send Retry-After)
=================== ==========================================================================

Any request also honours `max_tokens` / `max_completion_tokens` / `max_output_tokens` (the
answer is cut and ends with the length reason), `stream_options.include_usage`, and a
`"demo": {"tokens_per_second", "first_token_delay", "tokens", "seed", "keepalive_interval",
"cutoff"}`
body object (pass it with the SDKs' `extra_body`); the headers `X-Demo-Tokens-Per-Second` and
`X-Demo-First-Token-Delay` set the first two when the body does not. A `tokens_per_second` of 0
streams as fast as possible. With a `seed`, ids and timestamps are fixed too, so the same
request gives the same bytes. A request with `stream` false gets the same answer as one JSON
object of its API (an error scenario then answers with an HTTP error).

No web page can drive it: `Host` must name the server, a foreign `Origin` is refused, bodies
must be `application/json`, and no CORS header is ever sent. Every connection is bounded
(`ServerLimits`: header, body and idle timeouts, body size, connections at once), and every bad
request gets a 4xx JSON error in its route's envelope; docs/embedded-server.md has the details.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from ._flavors import FLAVORS
from ._records import ConnectionRecord
from ._requests import parse_request
from ._scenarios import SCENARIOS, Script, build_script
from ._server import DemoServer, ServerLimits, start_server

__all__ = [
    "DemoServer",
    "ServerLimits",
    "ConnectionRecord",
    "Script",
    "start_server",
    "scripted_answer",
    "script_for_request",
    "SCENARIOS",
    "FLAVORS",
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
