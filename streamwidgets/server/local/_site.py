"""The model a JupyterLite site ships, read in the browser: the local model of the tab.

`scripts/lite --model NAME` puts a GGUF file, `@wllama/wllama`'s ES module and WebAssembly (from
npm) and their licences into the site, beside `lab/`, and a small manifest (`MANIFEST`) that names
them, relative to the site's root:

    {"title": "SmolLM2-135M-Instruct", "alias": "smollm2-135m", "file": "model/....gguf",
     "size": 101000000, "sha256": "...", "class_quality": false,
     "wllama": {"version": "3.8.1", "module": "wllama/index.js", "wasm": "wllama/wasm/wllama.wasm"}}

The build names the manifest in the site's `jupyter-lite.json` (`jupyter-config-data`,
`CONFIG_KEY`), which every JupyterLite site has. In the kernel (a Web Worker of the page),
`site_model()` reads that file and then the manifest once, with synchronous requests (a worker
may make them), from the site's root: the worker's own address up to `extensions/`, where
JupyterLite serves the kernel from. A site built without `--model` names none (and nothing is
asked for that the site lacks), and the tab has no local model (`local_model_missing()` says how
to build one).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Optional

__all__ = ["CONFIG_KEY", "MANIFEST", "NO_SITE_MODEL", "SITE_SOURCE", "SiteModel", "site_model", "site_root"]

MANIFEST = "model/model.json"
#: Where `jupyter-lite.json` names the manifest (`jupyter-config-data`).
CONFIG_KEY = "streamwidgetsModel"
#: Where a site's model comes from, in the words of `Weights.describe()`.
SITE_SOURCE = "this site"
NO_SITE_MODEL = (
    "this JupyterLite site ships no model, so the local model cannot answer here; "
    "a site built with `scripts/lite --model smollm2-135m` runs one in the browser tab"
)


@dataclass(frozen=True)
class SiteModel:
    """The site's model: what to call it, its size, and the URLs of its file and of wllama."""

    title: str
    alias: str
    size: int
    class_quality: bool
    model_url: str
    module_url: str
    wasm_url: str
    path: PurePosixPath
    #: Threads for llama.cpp: 1, or 2 where the page is cross-origin isolated (COOP/COEP) and the
    #: machine has 4 cores or more (`threads_for`).
    threads: int = 1


def site_root(href: str) -> str:
    """The site's root URL, from the address of the kernel's worker (or of a page of the site)."""
    for marker in ("/extensions/", "/build/", "/lab/", "/notebooks/", "/repl/", "/tree/"):
        if marker in href:
            return href[: href.index(marker) + 1]
    return href.rsplit("/", 1)[0] + "/"


def threads_for(isolated: bool, cores: int) -> int:
    """Threads for the model in the tab: WebAssembly threads need a cross-origin isolated page, and
    on a machine of 2 busy cores two threads were 13 times slower than one (benchmarks/README.md,
    "The model in the JupyterLite tab"): two only from 4 cores up."""
    return 2 if isolated and cores >= 4 else 1


def from_manifest(manifest: dict[str, Any], root: str, *, threads: int = 1) -> SiteModel:
    """The manifest's model, its URLs under `root`; a manifest that is not the build's raises ValueError."""
    try:
        wllama = manifest["wllama"]
        files = (manifest["file"], wllama["module"], wllama["wasm"])
        if any(not isinstance(f, str) or f.startswith("/") or "://" in f or ".." in f.split("/") for f in files):
            raise ValueError(f"the manifest names a file outside the site: {files}")
        return SiteModel(
            title=str(manifest["title"]),
            alias=str(manifest["alias"]),
            size=int(manifest["size"]),
            class_quality=bool(manifest["class_quality"]),
            model_url=root + files[0],
            module_url=root + files[1],
            wasm_url=root + files[2],
            path=PurePosixPath(files[0]),
            threads=threads,
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{MANIFEST} is not the build's manifest ({type(exc).__name__}: {exc})") from None


@functools.lru_cache(maxsize=1)
def site_model() -> Optional[SiteModel]:
    """The model this JupyterLite site ships, or None (no manifest, or not in a browser)."""
    try:
        import js
    except ImportError:
        return None
    root = site_root(str(js.location.href))
    try:
        config = _get_json(js, root + "jupyter-lite.json")
        manifest = config.get("jupyter-config-data", {}).get(CONFIG_KEY) if isinstance(config, dict) else None
        if manifest != MANIFEST:
            return None
        cores = int(getattr(getattr(js, "navigator", None), "hardwareConcurrency", 1) or 1)
        threads = threads_for(bool(js.crossOriginIsolated), cores)
        return from_manifest(_get_json(js, root + MANIFEST), root, threads=threads)
    except (ValueError, AttributeError):
        return None


def _get_json(js: Any, url: str) -> Any:
    """A file of the site, read synchronously (a worker may), as JSON; ValueError when it cannot be."""
    request = js.XMLHttpRequest.new()
    request.open("GET", url, False)
    try:
        request.send()
    except Exception as exc:  # a network error: the site cannot be read
        raise ValueError(f"{url}: {exc}") from None
    if int(request.status) != 200:
        raise ValueError(f"{url}: HTTP {request.status}")
    return json.loads(str(request.responseText))
