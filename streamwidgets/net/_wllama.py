"""`TabModelTransport`: the model in the browser tab (wllama) behind httpx's transport interface.

A JupyterLite site built with a model (`scripts/lite --model ...`) ships a GGUF file and
`@wllama/wllama` (llama.cpp compiled to WebAssembly, from npm) beside its pages. A request for
the local model there is addressed to a host that names no machine (`TAB_MODEL_BASE`, under the
reserved `.invalid` domain); the client's transport for it (`_transport.gulp_client`, the one
place that picks a transport) answers a chat-completions request in the API's own bytes: it
imports wllama's ES module into the kernel's Web Worker, loads the model once (from the site,
which wllama keeps in the origin's private file system: a reload does not download it again),
and turns each chunk of `createChatCompletion(stream=True)` — OpenAI's chunk shape, llama.cpp's
own server code — into a `data:` line of an event stream, then `data: [DONE]`. So the chat
dialect, retry, recording, the token view (wllama's `logprobs`/`top_logprobs`) and the limits
read it as they read any provider.

Closing the body (Cancel, a limit, a deadline, the reader leaving) aborts the generation
(`AbortController`): wllama stops within a token or two and answers the next request. One
generation runs at a time in a tab (a second waits for the first to end): wllama's worker runs
one. Its timeouts are the client's `read`, between two chunks; loading the model has none (a
first visit downloads it). What wllama cannot do is an error with its words, as a server's 500.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Optional

import anyio
import httpx

if TYPE_CHECKING:
    from ..server.local import SiteModel

__all__ = ["TAB_MODEL_BASE", "TAB_MODEL_HOST", "TabModelTransport", "load_wllama"]

#: Where a request for the model in the tab is addressed: a name no resolver answers (RFC 2606).
TAB_MODEL_HOST = "model.in-tab.invalid"
TAB_MODEL_BASE = f"http://{TAB_MODEL_HOST}/v1"
#: The chat request's fields wllama takes as they are (`ChatCompletionParams`; `stream_options`
#: asks for the usage chunk, as llama.cpp's server reads it); the rest of the body (`model`,
#: `stream`, tools: no site's template takes them) is the transport's to answer.
_PASSED = (
    "messages",
    "stream_options",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "stop",
    "logprobs",
    "top_logprobs",
    "logit_bias",
    "response_format",
    "presence_penalty",
    "frequency_penalty",
)
#: Context a generation gets (the prompt and the answer): llama.cpp's default for a small model.
CONTEXT = 2048


def _obj(value: Any) -> Any:
    """A Python dict as a plain JavaScript object (nested dicts too)."""
    import js
    from pyodide.ffi import to_js

    return to_js(value, dict_converter=js.Object.fromEntries)


async def load_wllama(model: SiteModel) -> Any:
    """wllama's module imported into this worker, and the model loaded into it."""
    from pyodide.code import run_js

    module = await run_js(f"import({json.dumps(model.module_url)})")
    wllama = module.Wllama.new(_obj({"default": model.wasm_url}), _obj({"suppressNativeLog": True}))
    options = {"n_ctx": CONTEXT, "n_gpu_layers": 0, "n_threads": model.threads}
    await wllama.loadModelFromUrl(model.model_url, _obj(options))
    return wllama


class TabModelTransport(httpx.AsyncBaseTransport):
    """Answers `POST .../chat/completions` from the model in this tab, as an event stream.

    `site` says what the site ships (default: `server.local.site_model()`, None when it ships no
    model); `load` loads it (default: `load_wllama`, wllama's
    `loadModelFromUrl`), once per kernel: the loaded model is kept on the class, for every
    client that the kernel makes."""

    _loaded: Optional[Any] = None
    _loading: Optional[anyio.Lock] = None
    #: One generation at a time; a semaphore, not a lock: the body that releases it may be closed
    #: by another task than the one that sent the request.
    _busy: Optional[anyio.Semaphore] = None

    def __init__(
        self,
        site: Optional[Callable[[], Optional[SiteModel]]] = None,
        load: Optional[Callable[[SiteModel], Awaitable[Any]]] = None,
    ) -> None:
        self._site = site
        self._load = load

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        from pyodide.ffi import JsException

        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return _error(
                request, 404, f"the model in this tab answers POST /v1/chat/completions, not {request.url.path}"
            )
        try:
            body = json.loads(await request.aread())
        except ValueError:
            return _error(request, 400, "the request's body is not JSON")
        site = self._site() if self._site is not None else _site_model()
        if site is None:
            return _error(request, 404, "this site ships no model")
        if body.get("stream") is not True:
            return _error(request, 400, "the model in this tab answers streams only (stream: true)")
        params = {name: body[name] for name in _PASSED if name in body}
        if "max_tokens" not in params and isinstance(body.get("max_completion_tokens"), int):
            params["max_tokens"] = body["max_completion_tokens"]
        busy = type(self)._busy = type(self)._busy or anyio.Semaphore(1)
        await busy.acquire()
        try:
            wllama = await self._model(site)
            import js

            controller = js.AbortController.new()
            options = _obj({**params, "stream": True, "abortSignal": controller.signal})
            chunks = await wllama.createChatCompletion(options)
        except JsException as exc:
            busy.release()
            return _error(request, 500, f"the model in this tab failed: {_words(exc)}")
        except BaseException:
            busy.release()
            raise
        return httpx.Response(
            200,
            headers=[("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-store")],
            stream=_Generation(chunks, controller, busy, request.extensions.get("timeout", {}).get("read")),
            extensions={"http_version": b"HTTP/1.1"},
            request=request,
        )

    async def _model(self, site: SiteModel) -> Any:
        cls = type(self)
        cls._loading = cls._loading or anyio.Lock()
        async with cls._loading:
            if cls._loaded is None:
                cls._loaded = await (self._load or load_wllama)(site)
            return cls._loaded

    @classmethod
    def forget(cls) -> None:
        """Forget the loaded model (a test's fake, or a kernel that wants it loaded again)."""
        cls._loaded = cls._loading = cls._busy = None


class _Generation(httpx.AsyncByteStream):
    """wllama's chunks as `data:` lines, then `data: [DONE]`; closing it aborts the generation."""

    def __init__(self, chunks: Any, controller: Any, busy: anyio.Semaphore, read_timeout: Optional[float]) -> None:
        self._chunks = chunks
        self._controller = controller
        self._busy: Optional[anyio.Semaphore] = busy
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import js
        from pyodide.ffi import JsException

        chunks = self._chunks.__aiter__()
        while True:
            try:
                with anyio.fail_after(self._read_timeout):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                self._controller.abort()
                raise httpx.ReadTimeout("the model in this tab sent no token in time") from None
            except JsException as exc:
                raise httpx.ReadError(f"the model in this tab stopped: {_words(exc)}") from None
            yield b"data: " + str(js.JSON.stringify(chunk)).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"
        self._release()

    async def aclose(self) -> None:
        self._controller.abort()
        self._release()

    def _release(self) -> None:
        if self._busy is not None:
            self._busy.release()
            self._busy = None


def _site_model() -> Optional[SiteModel]:
    """The model the site ships (`server.local.site_model`), looked up when a request comes."""
    from ..server.local import site_model

    return site_model()


def _error(request: httpx.Request, status: int, message: str) -> httpx.Response:
    """An OpenAI-shaped error, as llama.cpp's server writes one."""
    body = {
        "error": {
            "code": status,
            "message": message,
            "type": "server_error" if status >= 500 else "invalid_request_error",
        }
    }
    content = json.dumps(body).encode()
    headers = [("content-type", "application/json"), ("content-length", str(len(content)))]
    return httpx.Response(status, headers=headers, stream=httpx.ByteStream(content), request=request)


def _words(exc: Exception) -> str:
    name = str(getattr(exc, "name", "") or type(exc).__name__)
    message = str(getattr(exc, "message", "") or exc)
    return f"{name}: {message}" if message else name
