"""One GET to the local model's server on 127.0.0.1, with its key: what the kernel's health check
and the server's own look at its capabilities share (stdlib only, no event loop)."""

from __future__ import annotations

import http.client
from typing import Optional

__all__ = ["loopback_get"]


def loopback_get(port: int, key: str, path: str, timeout: float) -> Optional[tuple[int, bytes]]:
    """(status, body) of `GET path` with the key as a bearer token, or None when nothing answers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {key}"})
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()
