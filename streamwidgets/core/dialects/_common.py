"""Small readers shared by the dialects: counts, sources, and the `<think>` splitter."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional, Union

from .._events import Citation, Event, Problem, ReasoningDelta, TextDelta
from .._json import TooDeep, loads

__all__ = [
    "count",
    "number",
    "string",
    "source",
    "citations_from",
    "sub",
    "ThinkSplitter",
    "parse_object",
    "remember",
    "KEYS",
]

#: The most ids or indexes a dialect remembers of one stream (its content blocks, its calls): far
#: more than any answer has; a flood of new ones forgets the oldest instead of growing without end.
KEYS = 10_000


#: The largest token count believed: a million times a long context. A larger one (`1e308`), or a
#: negative one, is no count, and is read as unreported.
MOST_TOKENS = 10**12


def count(value: Any) -> Optional[int]:
    """A token count as sent: an int from 0 to `MOST_TOKENS` (a float that is whole counts too);
    anything else is unreported."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MOST_TOKENS:
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return value


def number(value: Any) -> Optional[float]:
    """A cost as sent: a number from 0 on (the JSON reader gives no NaN or infinity); else unreported."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return value


def string(value: Any) -> Optional[str]:
    """A non-empty string, or None."""
    return value if isinstance(value, str) and value else None


def remember(memory: dict[Any, Any], key: Any, value: Any) -> None:
    """`memory[key] = value`, forgetting the oldest key past `KEYS` (dicts keep insertion order)."""
    memory[key] = value
    if len(memory) > KEYS:
        del memory[next(iter(memory))]


def sub(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """`obj[key]` when it is an object, else an empty mapping (null and wrong shapes read as absent)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def source(url: Any, title: Any = None) -> Optional[Citation]:
    if not isinstance(url, str) or not url:
        return None
    return Citation(url, title if isinstance(title, str) and title else None)


def parse_object(data: str, notes: Optional[set[str]] = None) -> Union[dict[str, Any], Problem]:
    """One event's data as a JSON object, or the `Problem` that says what was wrong with it;
    `notes` collects what the JSON edge had to mend (`_json.loads`)."""
    try:
        obj = loads(data, notes)
    except TooDeep:
        return Problem("an event's data was nested too deeply to read and was skipped")
    except ValueError:
        preview = data if len(data) <= 80 else data[:77] + "..."
        return Problem(f"an event's data was not valid JSON and was skipped: {preview!r}")
    if not isinstance(obj, dict):
        return Problem(f"an event's data was JSON but not an object ({type(obj).__name__}) and was skipped")
    return obj


class ThinkSplitter:
    """Split inline `<think>…</think>` out of streamed answer text into reasoning.

    Tags may be cut across deltas, so a suffix that could start a tag is held back until the
    next delta decides it (or `flush()` at the end releases it as what it was).
    """

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._inside = False
        self._held = ""

    def feed(self, text: str) -> list[Event]:
        text = self._held + text
        self._held = ""
        out: list[Event] = []
        while text:
            tag = self.CLOSE if self._inside else self.OPEN
            at = text.find(tag)
            if at >= 0:
                self._emit(out, text[:at])
                text = text[at + len(tag) :]
                self._inside = not self._inside
                continue
            keep = _partial_suffix(text, tag)
            self._emit(out, text[: len(text) - keep])
            self._held = text[len(text) - keep :]
            break
        return out

    def flush(self) -> list[Event]:
        out: list[Event] = []
        self._emit(out, self._held)
        self._held = ""
        return out

    def _emit(self, out: list[Event], text: str) -> None:
        if text:
            out.append(ReasoningDelta(text) if self._inside else TextDelta(text))


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


def citations_from(items: Iterable[Any]) -> list[Citation]:
    out = []
    for item in items:
        if isinstance(item, dict):
            s = source(item.get("url"), item.get("title"))
        else:
            s = source(item)
        if s is not None:
            out.append(s)
    return out
