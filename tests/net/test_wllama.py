"""The model in the browser tab (`net/_wllama.py`, `server/local/_site.py`) on CPython, against a
fake `js` module: what the browser gives the kernel (its address, a synchronous request for the
site's manifest, `AbortController`, `JSON`) and what wllama gives it (a loaded model whose
`createChatCompletion(stream=True)` is an async iterator of OpenAI chunks, stopped by the abort
signal) — the shapes of wllama 3.8.1, as `tests/browser/test_lite_model.py` meets them in
Chromium. Everything else is the real path: `make_request`, `Live`, the client's transport
choice, the chat dialect, the feed loop, the state.
"""

from __future__ import annotations

import json
import sys
import time
import types
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

import anyio
import pytest

import streamwidgets as sw
from streamwidgets.net import Live, as_source, make_request
from streamwidgets.net._wllama import TAB_MODEL_BASE, TabModelTransport
from streamwidgets.server.local import site_model

ROOT = "https://teacher.example.edu/course/"
WORKER = ROOT + "extensions/@jupyterlite/pyodide-kernel-extension/static/worker.js"
SMALL = {
    "title": "SmolLM2-135M-Instruct",
    "alias": "smollm2-135m",
    "file": "model/SmolLM2-135M-Instruct-Q8_0.gguf",
    "size": 145_000_000,
    "sha256": "0" * 64,
    "class_quality": False,
    "wllama": {"version": "3.8.1", "module": "wllama/index.js", "wasm": "wllama/wasm/wllama.wasm"},
}


def site_files(manifest: Optional[dict[str, Any]]) -> dict[str, str]:
    """The files a site serves: its `jupyter-lite.json`, naming the model's manifest when it has one."""
    config: dict[str, Any] = {"jupyter-config-data": {"appName": "a course"}}
    if manifest is None:
        return {ROOT + "jupyter-lite.json": json.dumps(config)}
    config["jupyter-config-data"]["streamwidgetsModel"] = "model/model.json"
    return {ROOT + "jupyter-lite.json": json.dumps(config), ROOT + "model/model.json": json.dumps(manifest)}


WORDS = ["The", " sky", " is", " blue", " because", " air", " scatters", " blue", " light", "."]


class JsException(Exception):
    """pyodide.ffi.JsException: a JavaScript error, with its `name` and `message`."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


class Signal:
    def __init__(self) -> None:
        self.aborted_at: Optional[float] = None

    @property
    def aborted(self) -> bool:
        return self.aborted_at is not None


class AbortController:
    def __init__(self) -> None:
        self.signal = Signal()

    @classmethod
    def new(cls) -> AbortController:
        return cls()

    def abort(self) -> None:
        if self.signal.aborted_at is None:
            self.signal.aborted_at = time.monotonic()


@dataclass
class Wllama:
    """A loaded model: each token a chunk after `delay` seconds, as llama.cpp's server writes them."""

    words: list[str]
    delay: float = 0.0
    calls: list[dict[str, Any]] = field(default_factory=list)
    running: int = 0
    most_at_once: int = 0

    async def createChatCompletion(self, options: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        self.calls.append(options)
        return self._chunks(options)

    async def _chunks(self, options: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        signal: Signal = options["abortSignal"]
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            base = {"id": "chatcmpl-tab", "object": "chat.completion.chunk", "created": 1, "model": "gpt-3.5-turbo"}
            yield {
                **base,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}],
            }
            n = min(len(self.words), options.get("max_tokens") or len(self.words))
            for word in self.words[:n]:
                await anyio.sleep(self.delay)
                if signal.aborted:
                    raise JsException("AbortError", "signal is aborted without reason")
                choice: dict[str, Any] = {"index": 0, "delta": {"content": word}, "finish_reason": None}
                if options.get("logprobs"):
                    top = [
                        {"token": word, "logprob": -0.1, "bytes": None},
                        {"token": " maybe", "logprob": -2.5, "bytes": None},
                    ]
                    k = options.get("top_logprobs") or 0
                    choice["logprobs"] = {
                        "content": [{"token": word, "logprob": -0.1, "bytes": None, "top_logprobs": top[:k]}]
                    }
                yield {**base, "choices": [choice]}
            finish = "length" if n < len(self.words) else "stop"
            yield {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
            if (options.get("stream_options") or {}).get("include_usage"):  # as llama.cpp's server
                usage = {"prompt_tokens": 20, "completion_tokens": n, "total_tokens": 20 + n}
                yield {**base, "choices": [], "usage": usage, "timings": {"predicted_per_second": 12.0}}
        finally:
            self.running -= 1


class XMLHttpRequest:
    """A synchronous GET of the site's files: the manifest when the site has one."""

    files: ClassVar[dict[str, str]] = {}
    asked: ClassVar[list[str]] = []

    def __init__(self) -> None:
        self.status = 0
        self.responseText = ""
        self.url = ""

    @classmethod
    def new(cls) -> XMLHttpRequest:
        return cls()

    def open(self, method: str, url: str, sync: bool) -> None:
        assert method == "GET" and sync is False  # False: not async
        self.url = url

    def send(self) -> None:
        XMLHttpRequest.asked.append(self.url)
        text = self.files.get(self.url)
        self.status, self.responseText = (200, text) if text is not None else (404, "Not Found")


@dataclass
class Browser:
    js: types.ModuleType
    model: Wllama
    loads: list[Any]


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Browser]:
    """A fake `js` and `pyodide.ffi` in `sys.modules`, a site with the 135M model, and the model
    it loads; the tab's loaded model is forgotten after the test."""
    model = Wllama(WORDS)
    loads: list[Any] = []
    js = types.ModuleType("js")
    js.AbortController = AbortController  # type: ignore[attr-defined]
    js.JSON = types.SimpleNamespace(stringify=lambda chunk: json.dumps(chunk, separators=(",", ":")))  # type: ignore[attr-defined]
    js.Object = types.SimpleNamespace(fromEntries=dict)  # type: ignore[attr-defined]
    js.location = types.SimpleNamespace(href=WORKER)  # type: ignore[attr-defined]
    js.XMLHttpRequest = XMLHttpRequest  # type: ignore[attr-defined]
    js.crossOriginIsolated = False  # type: ignore[attr-defined]
    ffi = types.ModuleType("pyodide.ffi")
    ffi.JsException = JsException  # type: ignore[attr-defined]
    ffi.to_js = lambda value, dict_converter=None: value  # type: ignore[attr-defined]
    pyodide = types.ModuleType("pyodide")
    pyodide.ffi = ffi  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "js", js)
    monkeypatch.setitem(sys.modules, "pyodide", pyodide)
    monkeypatch.setitem(sys.modules, "pyodide.ffi", ffi)
    monkeypatch.setattr(XMLHttpRequest, "files", site_files(SMALL))
    monkeypatch.setattr(XMLHttpRequest, "asked", [])

    async def load(site: Any) -> Wllama:
        loads.append(site)
        return model

    monkeypatch.setattr("streamwidgets.net._wllama.load_wllama", load)
    site_model.cache_clear()
    TabModelTransport.forget()
    yield Browser(js, model, loads)
    site_model.cache_clear()
    TabModelTransport.forget()


def _tab_request(prompt: str = "Why is the sky blue?", **options: Any) -> Any:
    return make_request(prompt, base_url=TAB_MODEL_BASE, model="smollm2-135m", retries=0, **options)


def test_the_tab_model_streams_through_live_as_any_provider(browser: Browser) -> None:
    state = sw.run(_tab_request(max_tokens=64, temperature=0.2, logprobs=2))
    assert state.status == "complete" and state.text == "".join(WORDS)
    assert state.usage is not None and state.usage.completion_tokens == len(WORDS)
    # The chat request's own fields reach wllama; the transport adds the stream and its abort signal.
    (call,) = browser.model.calls
    assert call["messages"][-1] == {"role": "user", "content": "Why is the sky blue?"}
    assert call["max_tokens"] == 64 and call["temperature"] == 0.2 and call["stream"] is True
    assert call["logprobs"] is True and call["top_logprobs"] == 2
    assert isinstance(call["abortSignal"], Signal) and "model" not in call
    # The token view: each token with its alternatives, read by the chat dialect from wllama's fields.
    assert [t.text for t in state.tokens][:3] == WORDS[:3]
    assert [text for text, _ in state.tokens[1].top] == [" sky", " maybe"]
    # The model loads once, from the site's files, on one thread.
    (site,) = browser.loads
    assert site.model_url == ROOT + SMALL["file"] and site.module_url == ROOT + "wllama/index.js"
    assert site.wasm_url == ROOT + "wllama/wasm/wllama.wasm" and site.threads == 1
    assert sw.run(_tab_request("And at sunset?")).status == "complete"
    assert len(browser.loads) == 1


def test_a_recording_of_the_tab_model_replays_the_same_answer(browser: Browser, tmp_path: Any) -> None:
    path = tmp_path / "tab.jsonl"
    state = sw.run(_tab_request(), record=str(path))
    again = sw.run(sw.replay(str(path), speed=0))
    assert again.text == state.text == "".join(WORDS) and again.status == "complete"


def test_leaving_the_stream_aborts_the_generation_and_the_model_answers_again(browser: Browser) -> None:
    browser.model.words = [f" w{i}" for i in range(400)]
    browser.model.delay = 0.02

    async def main() -> tuple[sw.StreamState, float]:
        state = await sw.arun(_tab_request(deadline=0.5))
        return state, time.monotonic()

    state, ended = anyio.run(main)
    assert state.status == "incomplete" and 0 < len(state.text) < len("".join(browser.model.words))
    aborted = browser.model.calls[0]["abortSignal"].aborted_at
    assert aborted is not None and aborted - ended < 0.5
    assert browser.model.running == 0  # wllama's generation stopped
    browser.model.words, browser.model.delay = WORDS, 0.0
    assert sw.run(_tab_request()).text == "".join(WORDS)


def test_a_cancelled_task_aborts_within_half_a_second(browser: Browser) -> None:
    browser.model.words = [f" w{i}" for i in range(400)]
    browser.model.delay = 0.02

    async def main() -> float:
        with anyio.move_on_after(0.4):
            await sw.arun(_tab_request())
        return time.monotonic()

    cancelled = anyio.run(main)
    aborted = browser.model.calls[0]["abortSignal"].aborted_at
    assert aborted is not None and aborted - cancelled < 0.5
    browser.model.words, browser.model.delay = WORDS, 0.0
    assert sw.run(_tab_request()).status == "complete"


def test_one_generation_at_a_time(browser: Browser) -> None:
    browser.model.delay = 0.01

    async def main() -> list[sw.StreamState]:
        states: list[sw.StreamState] = []
        async with anyio.create_task_group() as tg:
            for prompt in ("one", "two"):
                tg.start_soon(lambda p=prompt: _append(states, p))
        return states

    async def _append(states: list[sw.StreamState], prompt: str) -> None:
        states.append(await sw.arun(_tab_request(prompt)))

    states = anyio.run(main)
    assert [s.status for s in states] == ["complete", "complete"]
    assert browser.model.most_at_once == 1


def test_a_model_that_fails_to_load_is_an_error_in_words(browser: Browser, monkeypatch: pytest.MonkeyPatch) -> None:
    async def fails(site: Any) -> Any:
        raise JsException("CompileError", "WebAssembly.instantiate(): Memory64 is not supported")

    monkeypatch.setattr("streamwidgets.net._wllama.load_wllama", fails)
    state = sw.run(_tab_request())
    assert state.status == "error" and state.error is not None and state.error.http_status == 500
    assert "the model in this tab failed: CompileError: WebAssembly.instantiate(): Memory64" in state.message


def test_a_stream_that_breaks_keeps_its_partial_answer(browser: Browser) -> None:
    class Broken(Wllama):
        async def _chunks(self, options: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
            base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
            yield {**base, "choices": [{"index": 0, "delta": {"content": "Half an"}, "finish_reason": None}]}
            raise JsException("RuntimeError", "memory access out of bounds")

    browser.model.__class__ = Broken
    state = sw.run(_tab_request())
    assert state.status == "incomplete" and state.text == "Half an"
    assert "memory access out of bounds" in state.message and "partial answer" in state.message


# --------------------------------------------------------------------------- who answers in the tab


@pytest.fixture
def in_the_tab(browser: Browser, monkeypatch: pytest.MonkeyPatch) -> Browser:
    """Python in the browser (`sys.platform == "emscripten"`), with the fake browser above."""
    monkeypatch.setattr(sys, "platform", "emscripten")
    monkeypatch.delenv("STREAMWIDGETS_OFFLINE", raising=False)
    monkeypatch.delenv("STREAMWIDGETS_LOCAL_MODEL", raising=False)
    return browser


def test_provider_local_in_the_tab_is_the_sites_model(in_the_tab: Browser) -> None:
    source = as_source("Why is the sky blue?", provider="local")
    labels = source.labels()
    assert labels.badge == "local model" and labels.provider == "local"
    assert labels.note == (
        "SmolLM2-135M-Instruct (145 MB, from this site) running in this browser tab: "
        "a very small model, its answers are often wrong."
    )
    state = sw.run(source)
    assert state.status == "complete" and state.text == "".join(WORDS) and state.provider == "local"
    assert in_the_tab.model.calls[0]["messages"][0]["role"] == "system"  # the local model's short system prompt


def test_the_135m_model_never_stands_in_unasked_but_a_larger_one_does(in_the_tab: Browser) -> None:
    assert not make_request("Why is the sky blue?").local  # the scripted demo answers
    larger = {
        **SMALL,
        "title": "Qwen2.5-0.5B-Instruct",
        "alias": "qwen2.5-0.5b",
        "size": 491_000_000,
        "class_quality": True,
    }
    XMLHttpRequest.files = site_files(larger)
    site_model.cache_clear()
    request = make_request("Why is the sky blue?")
    assert request.local and request.weights is not None and request.weights.title == "Qwen2.5-0.5B-Instruct"
    assert "running in this browser tab" in (request.offline_note or "")
    assert sw.run(request).text == "".join(WORDS)


def test_a_site_without_a_model_says_so_in_one_line_without_badge_or_retry(in_the_tab: Browser) -> None:
    XMLHttpRequest.files = site_files(None)
    site_model.cache_clear()
    source = as_source("hi", provider="local")
    labels = source.labels()
    assert labels.badge is None and labels.note is None
    state = sw.run(source)
    assert state.status == "error" and state.error is not None and state.error.code == "local_model_missing"
    assert state.message == (
        "This JupyterLite site ships no model, so the local model cannot answer here; "
        "a site built with `scripts/lite --model smollm2-135m` runs one in the browser tab."
    )
    assert not state.can_continue  # no Retry: a second request would not get past it
    assert not make_request("hi").local  # with no provider named, the scripted demo answers
    assert XMLHttpRequest.asked == [ROOT + "jupyter-lite.json"]  # nothing the site lacks (no 404)


def test_two_threads_only_on_an_isolated_page_of_a_machine_with_four_cores(browser: Browser) -> None:
    browser.js.crossOriginIsolated = True  # type: ignore[attr-defined]
    browser.js.navigator = types.SimpleNamespace(hardwareConcurrency=2)  # type: ignore[attr-defined]
    assert site_model() is not None and site_model().threads == 1  # type: ignore[union-attr]
    site_model.cache_clear()
    browser.js.navigator.hardwareConcurrency = 8  # type: ignore[attr-defined]
    assert site_model().threads == 2  # type: ignore[union-attr]
    site_model.cache_clear()
    browser.js.crossOriginIsolated = False  # type: ignore[attr-defined]
    assert site_model().threads == 1  # type: ignore[union-attr]


def test_a_manifest_that_names_a_file_outside_the_site_is_no_model(in_the_tab: Browser) -> None:
    outside = {**SMALL, "file": "https://elsewhere.example/model.gguf"}
    XMLHttpRequest.files = site_files(outside)
    site_model.cache_clear()
    assert site_model() is None
    assert Live(make_request("hi", provider="local")).labels().badge is None
