"""The local model server's address, and one GET to it on 127.0.0.1 with its key: what the kernel's
health check and the server's own look at its capabilities share (stdlib only, no event loop).

Every route of the server is under `API_PREFIX`. llama.cpp's server lets anyone read `/health`
without the key (and takes any `Host`, so a web page that rebinds a name of its own to 127.0.0.1
reaches it); under a prefix no route is exempt from the key, `/local/health` included, and the bare
routes are not there at all. `tests/server/local/test_shared.py` checks it, so a bump of xllamacpp
that changes it fails there."""

from __future__ import annotations

import http.client
from typing import Optional

__all__ = ["API_PREFIX", "loopback_get", "base_url"]

#: The path every route of the local model's server is under (llama.cpp's `api_prefix`).
API_PREFIX = "/local"


def base_url(port: int) -> str:
    """The OpenAI-style base URL of the local model's server on `port`."""
    return f"http://127.0.0.1:{port}{API_PREFIX}/v1"


def loopback_get(port: int, key: str, path: str, timeout: float) -> Optional[tuple[int, bytes]]:
    """(status, body) of `GET path` (under `API_PREFIX`) with the key as a bearer token, or None when
    nothing answers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", API_PREFIX + path, headers={"Authorization": f"Bearer {key}"})
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()
