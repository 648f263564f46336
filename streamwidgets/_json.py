"""JSON decoding for the hot path: orjson when installed (optional), the standard library otherwise."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["loads"]

try:
    import orjson
except ImportError:  # pragma: no cover - exercised where orjson is absent
    orjson = None  # type: ignore[assignment]


def loads(text: str) -> Any:
    """Parse JSON; raise ValueError when it is not JSON.

    orjson is stricter than the standard library (NaN, huge integers): what it refuses is
    given to `json.loads` before it counts as malformed, so results never depend on orjson.
    """
    if orjson is not None:
        try:
            return orjson.loads(text)
        except ValueError:
            pass
    return json.loads(text)
