"""JSON decoding for the hot path: orjson when installed (optional), the standard library otherwise.

This is the JSON edge: whatever a stream says in JSON is read here, so what Python itself cannot
use is made safe here, once, in every field:

- a lone UTF-16 surrogate (an unpaired `"\\ud800"` escape) becomes U+FFFD: a string holding one
  cannot be printed, encoded to UTF-8, sent to the browser or written to a log — each raises;
- a number no float can hold becomes None: an integer too large for any float (past 4,300 digits
  Python refuses to read it at all, and the whole event would be lost), `NaN`, `Infinity`, or a
  float that overflows (`1e999`). A count or a cost of that size means nothing, and formatting one
  raises `OverflowError`.

What was changed is added to `notes` (the messages below), so that the stream says so once
(`dialects.Normalizer`). Neither costs the hot path much: orjson refuses all of these, so only
what it refuses is read the careful way. Without orjson (Pyodide in JupyterLite has none), the
standard library reads with number hooks that give up at a long integer, a float no float holds
or a constant, and substring tests look for surrogates first: about a third of the one regular
expression over the whole text that did it before (8 µs an event, three times `json.loads`).
"""

from __future__ import annotations

import importlib
import json
import re
from types import ModuleType
from typing import Any, Optional

__all__ = ["loads", "dumps", "TooDeep", "SURROGATE_REPLACED", "NUMBER_IGNORED"]


def _optional_orjson() -> Optional[ModuleType]:
    """orjson if it is installed. Imported by name, so that the type checker sees the same thing
    with orjson and without it (a plain import would need a `type: ignore` that only one of the
    two uses, and `warn_unused_ignores` fails the other)."""
    try:
        return importlib.import_module("orjson")
    except ImportError:  # pragma: no cover - exercised where orjson is absent
        return None


orjson = _optional_orjson()

#: The notes `loads` adds, in the words the stream's warning says.
SURROGATE_REPLACED = (
    "a lone UTF-16 surrogate (an unpaired \\ud800–\\udfff escape) in the stream's JSON was replaced by U+FFFD (�)"
)
NUMBER_IGNORED = (
    "a number Python cannot use (an integer too large for a float, NaN or an infinity) in the stream's JSON "
    "was ignored (read as null)"
)

#: The integers orjson reads as integers; past them it reads a float, and so does `_int`.
_INT_RANGE = range(-(1 << 63), 1 << 64)
#: An escaped surrogate, in text that holds a `\\u` at all.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE = re.compile("[\ud800-\udfff]")


class TooDeep(ValueError):
    """JSON nested deeper than the parser's recursion allows: malformed for our purposes."""


def loads(text: str, notes: Optional[set[str]] = None) -> Any:
    """Parse JSON; raise ValueError when it is not JSON — or nested too deeply to read.

    orjson is stricter than the standard library (NaN, huge integers, lone surrogates): what it
    refuses is read the careful way before it counts as malformed, so results never depend on
    orjson. A hostile event such as `[[[[…` 100,000 deep makes `json.loads` raise RecursionError;
    that is one malformed event like any other, so it becomes a ValueError (`TooDeep`) here, the
    one place JSON is parsed. The hot path does not pay for it: orjson answers first, and a try
    costs nothing when nothing is raised.
    """
    if orjson is not None:
        try:
            return orjson.loads(text)
        except ValueError:
            pass
    elif ("\\u" not in text or _ESCAPED_SURROGATE.search(text) is None) and (
        text.isascii() or _LONE.search(text) is None
    ):
        try:
            return _PLAIN.decode(text)
        except _Careful:
            pass
        except RecursionError:
            raise TooDeep("JSON nested too deeply to read") from None
    return _careful(text, notes)


def dumps(obj: Any) -> str:
    """Serialize what `loads` gave back (an object where a string belongs); raise ValueError when
    it is nested too deeply (orjson reads 1,024 levels, `json.dumps` writes fewer): `TooDeep`."""
    try:
        return json.dumps(obj, ensure_ascii=False)
    except RecursionError:
        raise TooDeep("JSON nested too deeply to write") from None


# --------------------------------------------------------------------------- the careful read


class _Unusable:
    """Where a number no float can hold stood; `_mend` makes it None and notes it."""

    __slots__ = ()


_UNUSABLE = _Unusable()


def _int(digits: str) -> Any:
    """As orjson reads it: an integer within 64 bits, else a float (`float()` of the text has no
    digit limit, `int()` refuses 4,300 digits), unusable if no float holds it."""
    if len(digits) <= 20:
        value = int(digits)
        if value in _INT_RANGE:
            return value
    return _float(digits)


def _float(text: str) -> Any:
    value = float(text)
    return value if value - value == 0.0 else _UNUSABLE  # inf - inf and nan - nan are nan


def _constant(name: str) -> Any:
    return _UNUSABLE  # NaN, Infinity, -Infinity


_CAREFUL = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant)


class _Careful(Exception):
    """A number the plain read leaves to the careful one."""


def _plain_int(digits: str) -> int:
    if len(digits) > 18:  # 10**18 < 2**63: shorter ones are ints to orjson too
        raise _Careful
    return int(digits)


def _plain_float(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # an overflow (1e999)
        raise _Careful
    return value


def _plain_constant(name: str) -> Any:
    raise _Careful


#: The standard library's read when the text holds no surrogate: any number it cannot use as
#: orjson would raises `_Careful`, and the careful read takes over.
_PLAIN = json.JSONDecoder(parse_int=_plain_int, parse_float=_plain_float, parse_constant=_plain_constant)


def _careful(text: str, notes: Optional[set[str]]) -> Any:
    """The standard library with every number checked, then the strings mended: still a
    ValueError when the text is no JSON."""
    try:
        value = _CAREFUL.decode(text)
    except RecursionError:
        raise TooDeep("JSON nested too deeply to read") from None
    found: set[str] = set()
    value = _mend(value, found)
    if notes is not None:
        notes |= found
    return value


def _fix(value: Any, found: set[str]) -> Any:
    """One scalar, made usable (containers are walked by `_mend`)."""
    if value is _UNUSABLE:
        found.add(NUMBER_IGNORED)
        return None
    if type(value) is str and _LONE.search(value) is not None:
        found.add(SURROGATE_REPLACED)
        return _LONE.sub("\ufffd", value)
    return value


def _mend(value: Any, found: set[str]) -> Any:
    """`value` with every unusable number None and every lone surrogate U+FFFD, keys included.
    Iterative: the parser reads nesting deeper than Python's recursion allows a walk."""
    if type(value) is not dict and type(value) is not list:
        return _fix(value, found)
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if type(node) is list:
            for i, item in enumerate(node):
                if type(item) is dict or type(item) is list:
                    stack.append(item)
                else:
                    node[i] = _fix(item, found)
        else:
            for key in [k for k in node if _LONE.search(k) is not None]:
                found.add(SURROGATE_REPLACED)
                node[_LONE.sub("\ufffd", key)] = node.pop(key)
            for key, item in node.items():
                if type(item) is dict or type(item) is list:
                    stack.append(item)
                else:
                    node[key] = _fix(item, found)
    return value
