"""JSON decoding for the hot path: orjson when installed (optional), the standard library otherwise."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["loads", "dumps", "TooDeep"]

try:
    import orjson
except ImportError:  # pragma: no cover - exercised where orjson is absent
    orjson = None  # type: ignore[assignment]


class TooDeep(ValueError):
    """JSON nested deeper than the parser's recursion allows: malformed for our purposes."""


def loads(text: str) -> Any:
    """Parse JSON; raise ValueError when it is not JSON — or nested too deeply to read.

    orjson is stricter than the standard library (NaN, huge integers): what it refuses is
    given to `json.loads` before it counts as malformed, so results never depend on orjson.
    A hostile event such as `[[[[…` 100,000 deep makes `json.loads` raise RecursionError; that
    is one malformed event like any other, so it becomes a ValueError (`TooDeep`) here, the one
    place JSON is parsed. The hot path does not pay for it: orjson answers first, and a try costs nothing
    when nothing is raised.
    """
    if orjson is not None:
        try:
            return orjson.loads(text)
        except ValueError:
            pass
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep("JSON nested too deeply to read") from None


def dumps(obj: Any) -> str:
    """Serialize what `loads` gave back (an object where a string belongs); raise ValueError when
    it is nested too deeply (orjson reads 1,024 levels, `json.dumps` writes fewer): `TooDeep`."""
    try:
        return json.dumps(obj, ensure_ascii=False)
    except RecursionError:
        raise TooDeep("JSON nested too deeply to write") from None
